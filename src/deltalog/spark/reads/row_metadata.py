"""``_metadata`` in Spark reads of Delta tables: the file fields, and ``_metadata.row_id`` /
``_metadata.row_commit_version`` of row-tracking tables.

delta-spark exposes a row-tracking table's stable row ids through the hidden ``_metadata`` column of its
scans. Spark's own parquet scan knows nothing of them, and a hidden column cannot be added from Python,
so deltalog gives the frames it returns for such tables (``spark.read.format("delta").load(p)``,
``DeltaTable.toDF()``, and the frames derived from them, see :mod:`deltalog.spark.reads.skipping`) this
behaviour: when a ``select`` / ``selectExpr`` / ``withColumn(s)`` / ``filter`` / ``where`` argument
mentions ``_metadata``, the frame is rebuilt over the same files with a real ``_metadata`` struct column
carried through its steps, the call applied to it, and the struct dropped again (``select`` keeps only
what it names). SQL queries that name ``_metadata`` read such a table the same way, with a ``*`` over it
spelled out as its own columns (:mod:`deltalog.spark.sql.refs`). The struct holds:

* ``file_path``, ``file_name``, ``file_size``, ``file_modification_time``, ``row_index`` -- as Spark's
  (size and time from the log; ``file_block_start`` / ``file_block_length`` are not offered);
* ``row_id`` -- the row's materialized id, else its file's ``baseRowId`` plus ``row_index``;
* ``base_row_id``, ``default_row_commit_version`` -- the file's;
* ``row_commit_version`` -- the materialized version, else the file's ``defaultRowCommitVersion``.

Tables without row tracking get the same struct without the row-tracking fields: in SQL always (a query's
tables reach Spark as views, through which Spark's own hidden column does not reach), through the DataFrame
API when the table has deletion vectors (their scan hides Spark's column); other DataFrame reads keep
Spark's own ``_metadata``. Rows that a deletion vector deletes are left out, as in every read. After
transformations deltalog does not track (``join``, ``groupBy``, ...) the struct is not there (Spark
reports the missing column).

Example:
    >>> df = spark.read.format("delta").load("/data/tracked")                      # doctest: +SKIP
    >>> df.select("id", "_metadata.row_id").orderBy("id").first()                  # doctest: +SKIP
    Row(id=0, row_id=0)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.protocol.features import writer_features

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["METADATA", "mentions_metadata", "metadata_scan", "needs_metadata_scan", "tracks_rows"]

#: The column name of the struct (Spark's hidden file-metadata column has the same name).
METADATA = "_metadata"
_MENTION = re.compile(r"(?<![\w`.])`?_metadata\b")
_BASE, _VERSION = "__deltalog_meta_base_row_id", "__deltalog_meta_default_row_commit_version"
_SIZE, _MTIME = "__deltalog_meta_file_size", "__deltalog_meta_file_mtime"


def tracks_rows(snapshot: Snapshot) -> bool:
    """Whether the table has the ``rowTracking`` feature (its files carry ``baseRowId``).

    Example:
        >>> tracks_rows(snap)                                                       # doctest: +SKIP
        True
    """
    return "rowTracking" in writer_features(snapshot.protocol)


def mentions_metadata(value: Any) -> bool:
    """Whether a DataFrame-method argument (SQL text, ``Column``, or a list / dict of them) refers to
    ``_metadata``.

    Example:
        >>> mentions_metadata(["id", "_metadata.row_id"]), mentions_metadata("my_metadata > 1")
        (True, False)
    """
    if isinstance(value, (list, tuple)):
        return any(mentions_metadata(v) for v in value)
    if isinstance(value, dict):
        return any(mentions_metadata(k) or mentions_metadata(v) for k, v in value.items())
    if isinstance(value, str) or type(value).__name__ == "Column":
        return _MENTION.search(str(value)) is not None
    return False


def metadata_scan(spark: Any, snapshot: Snapshot, files: pa.Table) -> Any:
    """Every column of the table's live rows in ``files`` plus the :data:`METADATA` struct (see the module
    docstring).

    Example:
        >>> metadata_scan(spark, snap, snap.add_files()).columns                    # doctest: +SKIP
        ['id', 'v', '_metadata']
    """
    from pyspark.sql import functions as F

    from deltalog.spark.common.core import quoted
    from deltalog.spark.reads.row_ids import file_longs, tracked_fields
    from deltalog.spark.reads.target import FILE, ROW, target_scan

    tracking = tracks_rows(snapshot)
    per_file = {_SIZE: file_longs(files, "size"), _MTIME: file_longs(files, "modificationTime")}
    if tracking:
        per_file.update({_BASE: file_longs(files, "baseRowId"),
                         _VERSION: file_longs(files, "defaultRowCommitVersion")})
    rows = target_scan(spark, snapshot, files, row_ids=tracking, file_columns=per_file)  # one join for all
    fields = [
        F.col(FILE).alias("file_path"),
        F.element_at(F.split(F.col(FILE), "/"), -1).alias("file_name"),
        F.col(_SIZE).alias("file_size"),
        F.timestamp_millis(F.col(_MTIME)).alias("file_modification_time"),
        F.col(ROW).alias("row_index"),
    ]
    if tracking:
        tracked = tracked_fields(snapshot)
        if tracked is None:
            row_id, version = F.col(_BASE) + F.col(ROW), F.col(_VERSION)
        else:  # target_scan filled the materialized columns from the same defaults
            row_id, version = F.col(quoted(tracked[0].name)), F.col(quoted(tracked[1].name))
        fields += [row_id.alias("row_id"), F.col(_BASE).alias("base_row_id"),
                   F.col(_VERSION).alias("default_row_commit_version"), version.alias("row_commit_version")]
    return rows.select(*[F.col(quoted(f.name)) for f in snapshot.schema.fields], F.struct(*fields).alias(METADATA))


def needs_metadata_scan(snapshot: Snapshot) -> bool:
    """Whether a DataFrame read of ``snapshot`` needs :func:`metadata_scan` for ``_metadata``: the table
    tracks rows, or has files with deletion vectors (whose scan leaves Spark's own hidden column behind).

    Example:
        >>> needs_metadata_scan(snap)                                               # doctest: +SKIP
        False
    """
    if tracks_rows(snapshot):
        return True
    files = snapshot.add_files()
    return "deletionVector" in files.column_names and files.column("deletionVector").null_count < files.num_rows
