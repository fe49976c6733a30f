"""Change data files of DML commands on tables with ``delta.enableChangeDataFeed=true``.

What each command records (as delta-spark does):

* ``DELETE`` copy-on-write: the deleted rows, ``_change_type = 'delete'``. A delete of whole files
  (no condition, or a condition on partition columns only) and a delete with deletion vectors write
  none: their ``remove`` actions (whole files) and deletion-vector updates (the rows newly in a file's
  deletion vector) already say which rows went, and change data feed readers derive them;
* ``UPDATE``: every updated row twice, ``update_preimage`` (old values) and ``update_postimage``;
* ``MERGE``: ``update_preimage``/``update_postimage`` for updated rows, ``delete`` for deleted target
  rows, ``insert`` for inserted source rows (an insert-only merge is a plain append and writes none).

Once a commit has change data files, readers take its changes from them alone, so a command that
writes any covers every row it changed. Files go to ``_change_data/`` (Hive-style partition directories
below it, partition columns not stored in the files), hold the table's columns (by their physical names
under column mapping, as data files) plus ``_change_type``,
and are committed as ``cdc`` actions with ``dataChange=false``. The table's data files never contain
``_change_type``. The rows are written by one more Spark job (``mapInArrow``, the writer of
:mod:`deltalog.spark.writes.save`), which evaluates the command's scan or join again.

Example:
    >>> rows = change_rows(matched, F.lit("update"), old_columns, new_columns, snap.schema)  # doctest: +SKIP
    >>> files = write_change_files(rows, table, snap.schema, snap.metadata)                  # doctest: +SKIP
    >>> stage_change_files(txn, files)                                                       # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deltalog.data.change_files import CHANGE_DATA_DIR, CHANGE_TYPE, change_schema
from deltalog.feed.changes import cdf_enabled
from deltalog.protocol.actions import AddCDCFile, Metadata
from deltalog.protocol.column_mapping import MODE_KEY, mapping_mode
from deltalog.protocol.schema import StructType
from deltalog.spark.common.core import quoted
from deltalog.storage.locations import StoreRef

if TYPE_CHECKING:
    from deltalog.data.write_files import WrittenFile
    from deltalog.snapshot import Snapshot
    from deltalog.table import Table
    from deltalog.txn.transaction import Transaction

__all__ = [
    "CHANGE_DATA_DIR",
    "change_rows",
    "deleted_rows",
    "records_changes",
    "stage_change_files",
    "updated_rows",
    "write_change_files",
]

DataFrame = Any
Column = Any

_KIND = "__deltalog_change"
_POST = ("update_postimage", "insert")


def records_changes(snapshot: Snapshot) -> bool:
    """Whether DML on this table must write change data files (``delta.enableChangeDataFeed=true``).

    Example:
        >>> records_changes(snap)                                                   # doctest: +SKIP
        True
    """
    return cdf_enabled(snapshot.metadata)


def change_rows(
    frame: DataFrame, kind: Column, old: Sequence[Column], new: Sequence[Column], schema: StructType
) -> DataFrame:
    """The change rows of ``frame``: ``kind`` says per row what happened (``'insert'``, ``'delete'``,
    ``'update'`` or null for an unchanged row); ``old`` / ``new`` are the row's values before / after,
    one column per field of ``schema``. An update becomes two rows (pre- and post-image), a delete
    keeps the old values, an insert the new ones. The result has ``schema``'s columns and
    ``_change_type``.

    Example:
        >>> change_rows(scan.filter(cond), F.lit("delete"), olds, olds, snap.schema).columns[-1]  # doctest: +SKIP
        '_change_type'
    """
    from pyspark.sql import functions as F

    n = len(schema.fields)
    if len(old) != n or len(new) != n:
        raise ValueError(f"change_rows needs {n} old and new columns, got {len(old)} and {len(new)}")
    staged = frame.filter(kind.isNotNull()).select(
        *[c.alias(f"__o{i}") for i, c in enumerate(old)],
        *[c.alias(f"__n{i}") for i, c in enumerate(new)],
        kind.alias(_KIND),
    )
    images = F.when(
        F.col(_KIND) == "update", F.array(F.lit("update_preimage"), F.lit("update_postimage"))
    ).otherwise(F.array(F.col(_KIND)))
    exploded = staged.withColumn(_KIND, F.explode(images))
    post = F.col(_KIND).isin(*_POST)
    values = [
        F.when(post, F.col(f"__n{i}")).otherwise(F.col(f"__o{i}")).alias(f.name) for i, f in enumerate(schema.fields)
    ]
    return exploded.select(*values, F.col(_KIND).alias(CHANGE_TYPE))


def deleted_rows(df: DataFrame, schema: StructType) -> DataFrame:
    """Change rows for deleting every row of ``df`` (which has ``schema``'s columns).

    Example:
        >>> deleted_rows(scan.filter(cond), snap.schema).columns[-1]              # doctest: +SKIP
        '_change_type'
    """
    from pyspark.sql import functions as F

    olds = [F.col(quoted(f.name)) for f in schema.fields]
    return change_rows(df, F.lit("delete"), olds, olds, schema)


def updated_rows(df: DataFrame, schema: StructType, new: Sequence[Column]) -> DataFrame:
    """Change rows for updating every row of ``df`` (``schema``'s columns) to ``new`` (one column per
    field): a pre-image and a post-image each.

    Example:
        >>> updated_rows(scan.filter(cond), snap.schema, new_columns).count()       # doctest: +SKIP
        20
    """
    from pyspark.sql import functions as F

    olds = [F.col(quoted(f.name)) for f in schema.fields]
    return change_rows(df, F.lit("update"), olds, new, schema)


def write_change_files(df: DataFrame, table: Table, schema: StructType, metadata: Metadata) -> list[WrittenFile]:
    """Write ``df`` (``schema``'s columns + ``_change_type``, from :func:`change_rows`) as change data
    files under ``_change_data/`` with one Spark job; returns the files (paths relative to the table
    root), nothing is committed.

    Example:
        >>> [f.path for f in write_change_files(rows, table, snap.schema, snap.metadata)]  # doctest: +SKIP
        ['_change_data/k=1/part-00000-....c000.snappy.parquet']
    """
    from pyspark.sql import functions as F

    from deltalog.data.write_files import WrittenFile
    from deltalog.spark.jobs.staged import spark_error, target_file_size
    from deltalog.spark.jobs.tasks import TaskSpec, run_job

    base = StoreRef.of(table.store)
    cdc_schema = change_schema(schema)
    # Change rows are copies of rows already checked (or being checked by the data write): no
    # constraints, invariants or NOT NULL checks here, only the layout of the table.
    # Column mapping stays: under it change data files hold the physical column names, as data files do.
    mode = mapping_mode(metadata.configuration)
    cdc_metadata = replace(metadata, schemaString=cdc_schema.to_json(),
                           configuration={MODE_KEY: mode} if mode != "none" else {})
    spec = TaskSpec(
        StoreRef(table.store.full_path(CHANGE_DATA_DIR), base.options), table.location, cdc_schema, cdc_metadata, None,
        target_file_size(metadata),
    )
    try:
        files = run_job(df.select(*[F.col(quoted(f.name)) for f in cdc_schema.fields]), spec)
    except Exception as exc:
        raise spark_error(exc, table.location) from None
    return [
        WrittenFile(
            path=f"{CHANGE_DATA_DIR}/{f.path}",
            rel_path=f"{CHANGE_DATA_DIR}/{f.rel_path}",
            partition_values=f.partition_values,
            size=f.size,
            num_records=f.num_records,
            stats=f.stats,
            modification_time=f.modification_time,
        )
        for f in files
    ]


def stage_change_files(txn: Transaction, files: Sequence[WrittenFile]) -> int:
    """Stage a ``cdc`` action (``dataChange=false``) for each change data file; returns the count.

    Example:
        >>> stage_change_files(txn, files)                                        # doctest: +SKIP
        2
    """
    for f in files:
        txn.add_action(
            AddCDCFile(path=f.path, partitionValues=dict(f.partition_values), size=f.size, dataChange=False)
        )
    return len(files)
