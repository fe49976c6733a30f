"""The change data feed as a Spark DataFrame (batch): ``spark.read.format("delta").option("readChangeFeed",
"true").option("startingVersion", a).option("endingVersion", b).load(path)``.

The kernel plans the changes (:mod:`deltalog.feed.changes`: ``cdc`` files where a commit wrote them,
whole ``add``/``remove`` files and deletion-vector updates otherwise); Spark reads the planned files with
its own parquet scan -- no row reaches the driver:

* one scan of the data files (``add``/``remove`` changes) and one of the change data files (which also
  hold ``_change_type``), each with the physical schema of the end version (column mapping resolved as
  in :mod:`deltalog.spark.reads.scan`; columns a file lacks read as null), unioned;
* a small table with one row per planned change -- file, ``_commit_version``, ``_commit_timestamp``, the
  change type of whole-file changes, the log's typed partition values -- is broadcast-joined on
  ``_metadata.file_path`` (a file read for two changes, e.g. added in one commit and removed in a later
  one, yields its rows once per change);
* rows a change does not cover are dropped by broadcast joins on ``(change, _metadata.row_index)``: the
  file's deletion vector, and for deletion-vector updates the rows whose state changed.

The DataFrame has the table's columns (end version's schema), then ``_change_type``, ``_commit_version``
and ``_commit_timestamp``. Options as delta-spark: ``startingVersion`` or ``startingTimestamp`` (required),
``endingVersion`` / ``endingTimestamp`` (default: latest); timestamps are texts Spark casts to a timestamp
(``2024-05-01 12:00:00``: without a zone in the session time zone, as delta-spark reads them) or epoch
milliseconds. A starting timestamp after the latest commit is an error
(``DELTA_TIMESTAMP_GREATER_THAN_COMMIT``) unless the session sets
``spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled=true``: then the read has no rows, as
in delta-spark.

Example:
    >>> df = (spark.read.format("delta").option("readChangeFeed", "true")
    ...       .option("startingVersion", 3).load("/data/events"))                      # doctest: +SKIP
    >>> df.groupBy("_change_type").count().show()                                      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from deltalog.errors import DeltaError, InvalidArgumentError, TableNotFoundError, TimestampAfterLatestError
from deltalog.feed.changes import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    ChangeFile,
    CommitChanges,
    iter_commit_changes,
    resolve_range,
)
from deltalog.protocol.schema import PrimitiveType, StructField, physical_name
from deltalog.spark.common.compat import frame_from_arrow
from deltalog.spark.common.core import (
    needs_cast,
    open_table,
    option_map,
    parse_bool,
    parse_int,
    physical_field,
    quoted,
    session_setting,
    spark_type,
)
from deltalog.spark.common.core import spark_schema as to_spark_schema
from deltalog.spark.common.instants import session_instant
from deltalog.spark.reads.files import FILE, ROW, file_key, parquet_scan

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["CDF_OPTIONS", "is_change_feed_read", "load_changes", "read_changes"]

#: delta-spark's setting under which a starting timestamp after the latest commit reads no changes.
CDF_OUT_OF_RANGE_CONF = "spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled"

#: Options of a change data feed read (case-insensitive), besides ``path``.
CDF_OPTIONS = (
    "readChangeFeed",
    "readChangeData",
    "startingVersion",
    "endingVersion",
    "startingTimestamp",
    "endingTimestamp",
    "path",
)

DataFrame = Any
_FILE = "__deltalog_file"
_ROW = "__deltalog_row"
_ENTRY = "__deltalog_change"
_TYPE = "__deltalog_type"
_SELECTED = "__deltalog_selected"
_HIT = "__deltalog_hit"


def is_change_feed_read(options: Mapping[str, Any]) -> bool:
    """Whether reader options ask for the change data feed (``readChangeFeed`` or its older name
    ``readChangeData`` set to true, case-insensitive keys).

    Example:
        >>> is_change_feed_read({"READCHANGEFEED": "true"}), is_change_feed_read({"versionAsOf": 1})
        (True, False)
    """
    for key, value in options.items():
        if str(key).lower() in ("readchangefeed", "readchangedata") and value is not None:
            return parse_bool(value, str(key))
    return False


def load_changes(spark: Any, path: Any, options: Mapping[str, Any]) -> DataFrame:
    """``load()`` of a ``format("delta")`` reader with ``readChangeFeed=true``: validates the options
    (time travel options are refused) and calls :func:`read_changes`.

    Example:
        >>> load_changes(spark, "/data/events", {"readChangeFeed": "true", "startingVersion": "2"})  # doctest: +SKIP
        DataFrame[id: bigint, _change_type: string, _commit_version: bigint, _commit_timestamp: timestamp]
    """
    from deltalog.spark.reads.scan import READ_OPTIONS

    lowered = {str(k).lower() for k, v in options.items() if v is not None}
    travel = [k for k in READ_OPTIONS if k != "path" and k.lower() in lowered]
    if travel:
        raise InvalidArgumentError(
            f"option(s) {travel} cannot be combined with readChangeFeed: the change data feed reads a version range "
            "(startingVersion/endingVersion or startingTimestamp/endingTimestamp)"
        )
    opts = option_map(options, CDF_OPTIONS, what="Delta change data feed read")
    target = path if path is not None else opts.get("path")
    if not isinstance(target, str):
        raise InvalidArgumentError(f"a Delta read needs exactly one table path, got {target!r}")
    return read_changes(
        spark, target, startingVersion=opts.get("startingVersion"), endingVersion=opts.get("endingVersion"),
        startingTimestamp=opts.get("startingTimestamp"), endingTimestamp=opts.get("endingTimestamp"),
    )


def _timestamp_option(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return value


def read_changes(
    spark: Any,
    path: str,
    *,
    startingVersion: int | str | None = None,
    endingVersion: int | str | None = None,
    startingTimestamp: Any = None,
    endingTimestamp: Any = None,
) -> DataFrame:
    """The change data feed of the Delta table at ``path`` for a version range as a DataFrame (see the
    module docstring); argument names are delta-spark's option names.

    Example:
        >>> read_changes(spark, "/data/events", startingVersion=2, endingVersion=5).count()   # doctest: +SKIP
        14
    """
    table = open_table(path)
    loc = table.location
    try:
        start, end = resolve_range(
            table,
            starting_version=None if startingVersion is None else parse_int(startingVersion, "startingVersion"),
            ending_version=None if endingVersion is None else parse_int(endingVersion, "endingVersion"),
            starting_timestamp=session_instant(spark, _timestamp_option(startingTimestamp), option="startingTimestamp"),
            ending_timestamp=session_instant(spark, _timestamp_option(endingTimestamp), option="endingTimestamp"),
        )
    except TableNotFoundError as exc:
        raise TableNotFoundError(
            f"[DELTA_MISSING_DELTA_TABLE] {loc} is not a Delta table ({exc.message})", table=loc
        ) from None
    except TimestampAfterLatestError:
        # delta-spark's spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled: a starting
        # timestamp after the latest commit reads no changes instead of failing
        if not parse_bool(session_setting(spark, CDF_OUT_OF_RANGE_CONF) or "false", CDF_OUT_OF_RANGE_CONF):
            raise
        return changes_dataframe(spark, table.snapshot(), [])
    end_snap = table.snapshot(end)
    from deltalog.feed.rows import change_schema

    change_schema(end_snap)  # refuses tables whose columns clash with the CDF columns
    plan = list(iter_commit_changes(table, start, end, start_snapshot=end_snap if start == end else None))
    return changes_dataframe(spark, end_snap, plan)


def _output_fields(snapshot: Snapshot) -> list[StructField]:
    return [
        *[StructField(f.name, f.type, True, {}) for f in snapshot.schema.fields],
        StructField(CHANGE_TYPE, PrimitiveType("string"), True, {}),
        StructField(COMMIT_VERSION, PrimitiveType("long"), True, {}),
        StructField(COMMIT_TIMESTAMP, PrimitiveType("timestamp"), True, {}),
    ]


def changes_dataframe(spark: Any, snapshot: Snapshot, plan: list[CommitChanges]) -> DataFrame:
    """The change rows of planned commits (from :func:`~deltalog.feed.changes.iter_commit_changes`) as a
    DataFrame, read with the schema of ``snapshot`` -- the entry point a streaming change feed shares.

    Example:
        >>> changes_dataframe(spark, snap, list(iter_commit_changes(t, 3, 4))).count()   # doctest: +SKIP
        6
    """
    from pyspark.sql import functions as F

    entries = [(c, f) for c in plan for f in c.files]
    if not entries:
        return spark.createDataFrame([], to_spark_schema(_output_fields(snapshot)))
    schema, mode = snapshot.schema, snapshot.column_mapping_mode
    parts = set(snapshot.partition_columns)
    data_fields = [f for f in schema.fields if f.name not in parts]
    physical = [physical_field(f, mode) for f in data_fields]
    uris = [file_key(snapshot, f.path) for _, f in entries]
    log_path = {u: f.path for u, (_, f) in zip(uris, entries)}
    any_dv = any(f.deletion_vector or f.selection_vector for _, f in entries)
    scans = []
    for cdc in (False, True):
        files = sorted({u for u, (_, f) in zip(uris, entries) if (f.kind == "cdc") == cdc})
        if files:
            scans.append(_scan(spark, snapshot, [log_path[u] for u in files], physical, cdc=cdc, rows=any_dv))
    rows = scans[0] if len(scans) == 1 else scans[0].unionByName(scans[1])
    info = _entries(snapshot, entries, uris)
    rows = rows.join(F.broadcast(frame_from_arrow(spark, info, to_spark_schema(_entry_fields(snapshot)))), on=_FILE)
    if any_dv:
        rows = _select_rows(spark, snapshot, rows, entries)
    out = []
    for f in schema.fields:
        if f.name in parts:
            col = F.col(_part_column(snapshot.partition_columns.index(f.name)))
        else:
            col = F.col(quoted(physical_name(f, mode)))
            if needs_cast(f, mode):
                col = col.cast(spark_type(f.type))  # positional: renames nested physical fields
        out.append(col.alias(f.name))
    out += [
        F.coalesce(F.col(CHANGE_TYPE), F.col(_TYPE)).alias(CHANGE_TYPE),
        F.col(COMMIT_VERSION),
        F.col(COMMIT_TIMESTAMP),
    ]
    return rows.select(*out)



def _part_column(i: int) -> str:
    return f"__deltalog_part{i}"


def _scan(
    spark: Any, snapshot: Snapshot, log_paths: list[str], physical: list[StructField], *, cdc: bool, rows: bool
) -> DataFrame:
    from pyspark.sql import functions as F

    fields = [*physical, StructField(CHANGE_TYPE, PrimitiveType("string"), True, {})] if cdc else list(physical)
    raw = parquet_scan(spark, snapshot, log_paths, fields, keys=True)
    cols = [F.col(quoted(f.name)) for f in physical]
    cols.append(F.col(CHANGE_TYPE) if cdc else F.lit(None).cast("string").alias(CHANGE_TYPE))
    cols.append(F.col(FILE).alias(_FILE))
    if rows:
        cols.append(F.col(ROW).alias(_ROW))
    return raw.select(*cols)


def _entry_fields(snapshot: Snapshot) -> list[StructField]:
    schema = snapshot.schema
    return [
        StructField(_FILE, PrimitiveType("string"), False, {}),
        StructField(_ENTRY, PrimitiveType("long"), False, {}),
        StructField(_TYPE, PrimitiveType("string"), True, {}),
        StructField(COMMIT_VERSION, PrimitiveType("long"), False, {}),
        StructField(COMMIT_TIMESTAMP, PrimitiveType("timestamp"), False, {}),
        StructField(_SELECTED, PrimitiveType("boolean"), False, {}),
        *[
            StructField(_part_column(i), schema.field(c).type, True, {})
            for i, c in enumerate(snapshot.partition_columns)
        ],
    ]


def _entries(snapshot: Snapshot, entries: list[tuple[CommitChanges, ChangeFile]], uris: list[str]) -> pa.Table:
    from deltalog.protocol.partitions import partition_array

    schema, mode = snapshot.schema, snapshot.column_mapping_mode
    n = len(entries)
    columns: dict[str, Any] = {
        _FILE: pa.array(uris, pa.string()),
        _ENTRY: pa.array(np.arange(n, dtype=np.int64)),
        _TYPE: pa.array([f.change_type for _, f in entries], pa.string()),
        COMMIT_VERSION: pa.array([c.version for c, _ in entries], pa.int64()),
        COMMIT_TIMESTAMP: pa.array([c.timestamp * 1000 for c, _ in entries], pa.int64()).cast(
            pa.timestamp("us", tz="UTC")
        ),
        _SELECTED: pa.array([f.selection_vector is not None for _, f in entries], pa.bool_()),
    }
    for i, name in enumerate(snapshot.partition_columns):
        field = schema.field(name)
        key = physical_name(field, mode)
        raw = [f.partition_values.get(key, f.partition_values.get(name)) for _, f in entries]
        columns[_part_column(i)] = partition_array(pa.array(raw, pa.string()), field.type)
    return pa.table(columns)


def _dv_rows(snapshot: Snapshot, entries: list[tuple[CommitChanges, ChangeFile]], which: str) -> pa.Table:
    from deltalog.data.read import deleted_rows

    ids: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    for i, (_, f) in enumerate(entries):
        dv = f.deletion_vector if which == "deleted" else f.selection_vector
        if not dv:
            continue
        try:
            idx = deleted_rows(snapshot.store, dv)
        except (DeltaError, OSError) as exc:
            raise DeltaError(
                f"deletion vector of {f.path} cannot be read: {exc}", table=snapshot.table, version=snapshot.version
            ) from None
        ids.append(np.full(idx.size, i, dtype=np.int64))
        rows.append(idx.astype(np.int64))
    return pa.table({
        _ENTRY: pa.array(np.concatenate(ids) if ids else np.zeros(0, np.int64)),
        _ROW: pa.array(np.concatenate(rows) if rows else np.zeros(0, np.int64)),
    })


def _select_rows(
    spark: Any, snapshot: Snapshot, rows: DataFrame, entries: list[tuple[CommitChanges, ChangeFile]]
) -> DataFrame:
    """Keep, per change, the rows it covers: not in its deletion vector, and in its selection when set."""
    from pyspark.sql import functions as F

    key = [StructField(_ENTRY, PrimitiveType("long"), False, {}), StructField(_ROW, PrimitiveType("long"), False, {})]
    deleted = _dv_rows(snapshot, entries, "deleted")
    if deleted.num_rows:
        rows = rows.join(F.broadcast(frame_from_arrow(spark, deleted, to_spark_schema(key))), on=[_ENTRY, _ROW],
                         how="left_anti")
    selected = _dv_rows(snapshot, entries, "selected")
    if selected.num_rows:
        hits = frame_from_arrow(spark, selected, to_spark_schema(key)).withColumn(_HIT, F.lit(True))
        rows = rows.join(F.broadcast(hits), on=[_ENTRY, _ROW], how="left")
        rows = rows.filter(~F.col(_SELECTED) | F.col(_HIT).isNotNull())
    else:
        rows = rows.filter(~F.col(_SELECTED))
    return rows
