"""Row tracking in Spark's DML and OPTIMIZE: rows copied into new files keep their row ids.

On a table with the ``rowTracking`` feature and materialized column names (see
:func:`deltalog.txn.row_tracking.materialized_fields`), :func:`~deltalog.spark.reads.target.target_scan`
with ``row_ids=True`` adds the two materialized columns to the rows it reads, filled in: a row's id is
the value its file materialized, else the file's ``baseRowId`` plus the row's index in the file; its
commit version likewise falls back to the file's ``defaultRowCommitVersion``.
:func:`~deltalog.spark.jobs.staged.write_rows` writes them into the new files when the rows carry them
(an updated row's commit version is set to null first: it changes in the new commit, whose version the
new file's ``defaultRowCommitVersion`` gives it), and the commit is marked ``keeps_row_ids``. Inserted
rows carry nulls and get fresh ids from their new file's ``baseRowId``.

Example:
    >>> tracked_fields(snap) is None                                              # doctest: +SKIP
    False
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.protocol.schema import StructField
from deltalog.spark.common.compat import frame_from_arrow
from deltalog.spark.reads.files import FILE, ROW
from deltalog.txn import row_tracking
from deltalog.txn.row_tracking import materialized_fields

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from deltalog.protocol.actions import Metadata
    from deltalog.snapshot import Snapshot

__all__ = ["file_longs", "fill_row_ids", "tracked_fields", "written_fields"]

_BASE = "__deltalog_base_row_id"
_VERSION = "__deltalog_default_row_commit_version"


def tracked_fields(snapshot: Snapshot) -> tuple[StructField, StructField] | None:
    """The materialized row-id and row-commit-version columns DML keeps on this table, or ``None``.

    Example:
        >>> tracked_fields(snap)[0].name                                          # doctest: +SKIP
        '_row-id-col-6a8e...'
    """
    return row_tracking.tracked_fields(snapshot.protocol, snapshot.metadata)


def written_fields(metadata: Metadata, columns: list[str]) -> tuple[StructField, StructField] | None:
    """The materialized columns to write for rows with ``columns`` (``None`` when the rows do not carry
    them).

    Example:
        >>> written_fields(snap.metadata, ["id"]) is None                          # doctest: +SKIP
        True
    """
    from deltalog.protocol.column_mapping import mapping_mode

    fields = materialized_fields(metadata.configuration, mapping_mode(metadata.configuration))
    if fields is None or not all(f.name in columns for f in fields):
        return None
    return fields


def fill_row_ids(spark: Any, df: DataFrame, files: pa.Table, uris: list[str],
                 fields: tuple[StructField, StructField], *, extra: Mapping[str, pa.Array] | None = None) -> DataFrame:
    """``df`` (rows of ``files`` with :data:`FILE`, :data:`ROW` and the materialized columns as stored)
    with the materialized columns filled from each file's ``baseRowId`` / ``defaultRowCommitVersion``.
    ``extra``: more per-file columns (one value per row of ``files``) joined in the same broadcast join
    and kept.

    Example:
        >>> fill_row_ids(spark, scan, files, uris, fields).columns[-2:]             # doctest: +SKIP
        ['_row-id-col-...', '_row-commit-version-col-...']
    """
    from pyspark.sql import functions as F

    frame = pa.table({FILE: pa.array(uris, pa.string()), _BASE: file_longs(files, "baseRowId"),
                      _VERSION: file_longs(files, "defaultRowCommitVersion"), **(extra or {})})
    row_id, version = (f"`{f.name}`" for f in fields)
    joined = df.join(F.broadcast(frame_from_arrow(spark, frame)), on=FILE, how="inner")
    return (joined.withColumn(fields[0].name, F.coalesce(F.col(row_id), F.col(_BASE) + F.col(ROW)))
            .withColumn(fields[1].name, F.coalesce(F.col(version), F.col(_VERSION)))
            .drop(_BASE, _VERSION))


def file_longs(files: pa.Table, column: str) -> pa.Array:
    """An ``add_files()`` column as ``int64`` (all null when the log has no such field).

    Example:
        >>> file_longs(pa.table({"size": [3]}), "baseRowId").to_pylist()
        [None]
    """
    if column not in files.column_names:
        return pa.nulls(files.num_rows, pa.int64())
    return files.column(column).combine_chunks().cast(pa.int64())
