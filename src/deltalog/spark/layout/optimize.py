"""``OPTIMIZE`` with Spark: compaction and Z-ordering, as delta-spark's ``DeltaTable.optimize()`` builder.

``DeltaTable.forPath(spark, p).optimize().where("day = '2024-01-01'").executeCompaction()`` or
``.executeZOrderBy("x", "y")``; both return delta-spark's one-row metrics DataFrame (``path``,
``metrics``). The kernel plans (:mod:`deltalog.commands.optimize_plan`), Spark moves the rows:

1. **Which files.** ``where`` filters (SQL on partition columns only; any other column is refused) are
   evaluated by Spark over the files' typed partition values. The size limit is
   ``spark.databricks.delta.optimize.maxFileSize`` when set, else the table's ``delta.targetFileSize``,
   else 1 GiB; files below ``spark.databricks.delta.optimize.minFileSize`` (default: the limit) or with
   deletion vectors are compacted. Z-ordering takes every file of the selected partitions.
2. **The rows.** Compaction changes no row, so its rows do not go through Spark's row engine: a task per
   bin reads the bin's files with the kernel's reader (deleted rows purged, row ids kept) and writes them
   as one file, rows in their old order (:mod:`deltalog.spark.layout.bins`). Z-ordering a partition
   of at most 256 MB of parquet (:data:`ZORDER_IN_TASK_BYTES`; the session setting
   ``spark.deltalog.optimize.zorderInTaskBytes`` changes it) is done the same way: its task holds the
   rows, sorts them along the Z-curve as the kernel does (:func:`deltalog.commands.zorder.z_ordered`) and
   cuts them into the planned files. For larger partitions the chosen files are read with the
   deletion-vector-aware scan of :func:`~deltalog.spark.reads.target.target_scan` (deleted rows are
   purged) and tagged with their bin;
   Z-ordering first turns each column into a ``double`` key (numbers, dates, timestamps; the first six
   bytes of strings), gets ``2**b - 1`` quantiles of each key per partition, then the Z-values splitting
   each partition into ``size / maxFileSize`` files -- both from one sample collected to the driver when
   it is small (else ``percentile_approx`` over two sampled passes); the full pass computes each row's
   Z-value (range numbers interleaved bit by bit) and file -- with Spark expressions for an unpartitioned
   table, else in one Arrow task --, hash-partitions so that each file is one task, and sorts each task by
   Z, so every file covers a compact box of the Z-curve: tight min/max on each column. Nothing is cached.
3. **The commit** removes the rewritten files and adds the new ones, all with ``dataChange=false``, as
   ``OPTIMIZE`` (``predicate``, ``zOrderBy``; delta-spark's ``operationMetrics``). It changes no data,
   so it commits under snapshot isolation: concurrent appends do not conflict; a concurrent commit
   removing a rewritten file raises ``ConcurrentDeleteReadException`` and the new files are deleted.

Example:
    >>> from deltalog.spark import DeltaTable
    >>> dt = DeltaTable.forPath(spark, "/data/events")                                  # doctest: +SKIP
    >>> dt.optimize().where("day = '2024-01-01'").executeCompaction().first().metrics.numFilesAdded
    ... # doctest: +SKIP
    1
    >>> dt.optimize().executeZOrderBy("x", "y").select("metrics.numFilesRemoved").first()[0]  # doctest: +SKIP
    48
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from deltalog.arrow.write import WritePlan, write_batches
from deltalog.commands.clustering import CLUSTERING_DOMAIN, PROVIDER, clustering_of
from deltalog.commands.compact import deleted_share, replan_on_data_change
from deltalog.commands.optimize_plan import (
    DEFAULT_MAX_FILE_SIZE,
    Bin,
    compaction_metrics,
    plan_compaction,
    plan_zorder,
    size_summary,
)
from deltalog.data.write_files import WrittenFile
from deltalog.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from deltalog.protocol.actions import Metadata
from deltalog.protocol.column_mapping import mapping_mode
from deltalog.protocol.iceberg_compat import compat_version
from deltalog.protocol.schema import PrimitiveType, StructField, StructType
from deltalog.spark.common.compat import frame_from_arrow
from deltalog.spark.common.core import (
    arrow_frame,
    load_snapshot,
    map_in_arrow,
    open_table,
    parse_size,
    quoted,
    session_setting,
    spark_schema,
)
from deltalog.spark.jobs.staged import Staged, check_can_write
from deltalog.spark.jobs.tasks import FILE_DDL, RunWriter, chunks, delete_written, file_rows, task_error, written_files
from deltalog.spark.layout.bins import compact_bins
from deltalog.spark.layout.zorder import (
    BIN,
    clustering_fields,
    zorder_columns,
    zorder_frame,
)
from deltalog.spark.reads.files import partition_table
from deltalog.spark.reads.row_ids import tracked_fields
from deltalog.spark.reads.scan import scan_rows
from deltalog.spark.reads.target import FILE, file_uris, recorded_partition_predicate, table_probe, target_scan
from deltalog.storage.locations import StoreRef
from deltalog.txn.operations import Optimize, Reorg
from deltalog.txn.row_tracking import tracked_schema
from deltalog.txn.transaction import Transaction

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["DeltaOptimizeBuilder", "OptimizeResult", "optimize"]

log = logging.getLogger(__name__)

DataFrame = Any  # pyspark.sql.DataFrame (classic or Connect)

MAX_FILE_SIZE_CONF = "spark.databricks.delta.optimize.maxFileSize"
MIN_FILE_SIZE_CONF = "spark.databricks.delta.optimize.minFileSize"
#: A Z-ordered bin (a partition) of at most this many bytes of parquet is sorted in one task's memory, unless
#: the session's :data:`ZORDER_IN_TASK_CONF` says otherwise (``0``: every partition through Spark's shuffle).
ZORDER_IN_TASK_BYTES = 256 << 20
ZORDER_IN_TASK_CONF = "spark.deltalog.optimize.zorderInTaskBytes"


_I64, _F64, _STR = pa.int64(), pa.float64(), pa.string()
_SIZES = pa.struct([("min", _I64), ("max", _I64), ("avg", _F64), ("totalFiles", _I64), ("totalSize", _I64)])
_ZFILES = pa.struct([("num", _I64), ("size", _I64)])
_ZSTATS = pa.struct([
    ("strategyName", _STR), ("inputCubeFiles", _ZFILES), ("inputOtherFiles", _ZFILES), ("inputNumCubes", _I64),
    ("mergedFiles", _ZFILES), ("numOutputCubes", _I64), ("mergedNumCubes", _I64),
])
_DVSTATS = pa.struct([("numDeletionVectorsRemoved", _I64), ("numDeletionVectorRowsRemoved", _I64)])
_METRICS = pa.struct([
    ("numFilesAdded", _I64), ("numFilesRemoved", _I64), ("filesAdded", _SIZES), ("filesRemoved", _SIZES),
    ("partitionsOptimized", _I64), ("zOrderStats", _ZSTATS), ("numBins", _I64), ("numBatches", _I64),
    ("totalConsideredFiles", _I64), ("totalFilesSkipped", _I64), ("preserveInsertionOrder", pa.bool_()),
    ("numFilesSkippedToReduceWriteAmplification", _I64), ("numBytesSkippedToReduceWriteAmplification", _I64),
    ("startTimeMs", _I64), ("endTimeMs", _I64), ("totalScheduledTasks", _I64), ("deletionVectorStats", _DVSTATS),
    ("numTableColumns", _I64), ("numTableColumnsWithStats", _I64),
])  # fmt: skip
_RESULT = pa.schema([("path", _STR), ("metrics", _METRICS)])


@dataclass(frozen=True)
class OptimizeResult:
    """What :func:`optimize` did: the committed ``version`` (``None`` when there was nothing to do),
    delta-spark's ``metrics`` struct as a dict, and the commit's ``operationMetrics``.

    Example:
        >>> OptimizeResult("/t", None, {"numFilesAdded": 0}).metrics["numFilesAdded"]
        0
    """

    path: str
    version: int | None
    metrics: Mapping[str, Any]
    operation_metrics: Mapping[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------------------------- options


def _bytes(value: Any, name: str, table: str) -> int:
    """A positive byte count from an int or a text such as ``134217728`` or ``128m``."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        parsed = parse_size(value)
        if parsed is None:
            raise InvalidArgumentError(f"{name} must be a number of bytes (e.g. 134217728 or 128m), got {value!r}",
                                       table=table)
        number = parsed
    if number <= 0:
        raise InvalidArgumentError(f"{name} must be positive, got {value!r}", table=table)
    return number


def _file_sizes(
    spark: Any, snap: Snapshot, max_file_size: int | str | None, min_file_size: int | str | None
) -> tuple[int, int]:
    loc = snap.table
    if max_file_size is not None:
        limit = _bytes(max_file_size, "max_file_size", loc)
    elif (conf := session_setting(spark, MAX_FILE_SIZE_CONF)) is not None:
        limit = _bytes(conf, MAX_FILE_SIZE_CONF, loc)
    elif "delta.targetFileSize" in snap.metadata.configuration:
        limit = _bytes(snap.metadata.configuration["delta.targetFileSize"], "delta.targetFileSize", loc)
    else:
        limit = DEFAULT_MAX_FILE_SIZE
    if min_file_size is not None:
        return limit, _bytes(min_file_size, "min_file_size", loc)
    conf = session_setting(spark, MIN_FILE_SIZE_CONF)
    return limit, (_bytes(conf, MIN_FILE_SIZE_CONF, loc) if conf is not None else limit)


# ------------------------------------------------------------------------------ partition filter


def _referenced_columns(sql: str) -> list[str] | None:
    """First names of the column references of a SQL condition (``None`` when it cannot be parsed)."""
    from deltalog.data.sql_expr import SqlNode, SqlParser, UnsupportedExpressionError

    try:
        root = SqlParser(sql).parse()
    except UnsupportedExpressionError:
        return None
    found: list[str] = []

    def visit(item: Any) -> None:
        if isinstance(item, SqlNode):
            if item.kind == "col":
                found.append(str(item.args[0]))
                return
            for arg in item.args:
                visit(arg)
        elif isinstance(item, (tuple, list)):
            for arg in item:
                visit(arg)

    visit(root)
    return found


def _non_partition_error(column: str, snap: Snapshot, command: str) -> InvalidArgumentError:
    parts = list(snap.partition_columns)
    return InvalidArgumentError(
        f"[DELTA_NON_PARTITION_COLUMN_REFERENCE] the {command} filter references non-partition column "
        f"{column!r}; only the partition columns may be referenced: {parts}",
        table=snap.table, version=snap.version,
    )


def _check_filter(sql: str, snap: Snapshot, command: str) -> None:
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidArgumentError(f"an {command} partition filter must be a non-empty SQL string, got {sql!r}",
                                   table=snap.table)
    parts = {p.lower() for p in snap.partition_columns}
    for name in _referenced_columns(sql) or []:
        if name.lower() not in parts:
            if snap.schema.get(name) is not None or name.lower() in {n.lower() for n in snap.schema.field_names}:
                raise _non_partition_error(name, snap, command)
            raise InvalidArgumentError(
                f"[UNRESOLVED_COLUMN] the {command} filter {sql!r} references unknown column {name!r}; the "
                f"partition columns are {list(snap.partition_columns)}",
                table=snap.table, version=snap.version,
            )


_UNRESOLVED = re.compile(r"name `([^`]+)` cannot be resolved")


def _select_files(spark: Any, snap: Snapshot, filters: Sequence[str], command: str) -> pa.Table:
    """The live files whose partition values satisfy every filter (evaluated by Spark); ``command`` names the
    statement in errors."""
    from pyspark.sql import functions as F

    files = snap.add_files()
    for sql in filters:
        _check_filter(sql, snap, command)
    if not filters or files.num_rows == 0:
        return files
    fields = [snap.schema.field(p) for p in snap.partition_columns]
    ids = [str(i) for i in range(files.num_rows)]
    ptable = partition_table(files, ids, fields, snap.column_mapping_mode)
    key = StructField(FILE, PrimitiveType("string"), False, {})
    df = frame_from_arrow(spark, ptable, spark_schema([key, *fields]))
    for sql in filters:
        try:
            df = df.filter(F.expr(sql))
            _ = df.schema
        except Exception as exc:
            unresolved = _UNRESOLVED.search(str(exc))
            if unresolved and snap.schema.get(unresolved.group(1)) is not None:
                raise _non_partition_error(unresolved.group(1), snap, command) from None
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InvalidArgumentError(f"the {command} partition filter {sql!r} is invalid: {first}",
                                       table=snap.table) from None
    keep = sorted(int(r[0]) for r in df.select(FILE).collect())
    return files.take(pa.array(keep, pa.int64()))


# ------------------------------------------------------------------------------------- Z-order


# ------------------------------------------------------------------------------------- rewrite


@dataclass(frozen=True)
class _RewriteSpec:
    store: StoreRef
    table: str
    schema: StructType
    metadata: Metadata
    target_file_size: int


def _rewrite_task(spec: _RewriteSpec, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Runs in a Spark task over Z-ordered rows sorted by bin: a new file (set) per bin; one row per file."""
    store = spec.store.open()
    plan = WritePlan(None, spec.metadata, spec.schema, False, None)
    names = spec.schema.field_names
    done: list[WrittenFile] = []
    writer: RunWriter | None = None
    current: int | None = None
    try:
        for chunk in chunks(batches):
            bins = chunk.column(chunk.schema.names.index(BIN)).to_numpy(zero_copy_only=False)
            data = pa.Table.from_batches([chunk]).select(names)
            bounds = [0, *(np.flatnonzero(bins[1:] != bins[:-1]) + 1).tolist(), len(bins)]
            for begin, end in itertools.pairwise(bounds):
                if writer is None or int(bins[begin]) != current:
                    if writer is not None:
                        closing, writer = writer, None
                        done.extend(closing.close())
                    writer = RunWriter(store, spec.schema, spec.metadata.partitionColumns,
                                        target_file_size=spec.target_file_size,
                                        column_mapping=mapping_mode(spec.metadata.configuration),
                                        iceberg_compat=compat_version(spec.metadata.configuration))
                    current = int(bins[begin])
                write_batches(writer, iter(data.slice(begin, end - begin).to_batches()), plan, spec.table)
        if writer is not None:
            closing, writer = writer, None
            done.extend(closing.close())
    except BaseException:
        if writer is not None:
            writer.abort()
        delete_written(store, done)
        raise
    if done:
        yield file_rows(done)


def _rewrite(spark: Any, snap: Snapshot, bins: list[Bin], zorder: list[StructField], max_file_size: int
             ) -> tuple[list[WrittenFile], int]:
    """Write the bins' live rows as new files (nothing committed); returns them and the task count."""
    if not zorder:  # compaction changes no row: tasks copy whole bins with Arrow (no rows through Spark)
        return compact_bins(spark, snap, bins, target_file_size=2 * max_file_size)
    # Z-ordering: a bin small enough to hold is sorted in one task's memory, the others by Spark
    limit = _in_task_limit(spark, snap.table)
    small = [b for b in bins if b.size <= limit]
    large = [b for b in bins if b.size > limit]
    files, tasks = compact_bins(spark, snap, small, target_file_size=2 * max_file_size,
                                zorder=[f.name for f in zorder]) if small else ([], 0)
    if large:
        try:
            more, more_tasks = _zorder_rewrite(spark, snap, large, zorder, max_file_size)
        except BaseException:
            delete_written(snap.store, files)  # the small bins' files are not committed either
            raise
        files, tasks = files + more, tasks + more_tasks
    return files, tasks


def _in_task_limit(spark: Any, table: str) -> int:
    """The most bytes of parquet a partition may have to be Z-ordered in one task (see
    :data:`ZORDER_IN_TASK_CONF`)."""
    text = session_setting(spark, ZORDER_IN_TASK_CONF)
    if text is None:
        return ZORDER_IN_TASK_BYTES
    size = parse_size(text.strip())
    if size is None:
        raise InvalidArgumentError(
            f"{ZORDER_IN_TASK_CONF} must be a number of bytes (e.g. 268435456 or 256m; 0 sorts every partition "
            f"with Spark), got {text!r}", table=table)
    return size


def _zorder_rewrite(spark: Any, snap: Snapshot, bins: list[Bin], zorder: list[StructField], max_file_size: int
                    ) -> tuple[list[WrittenFile], int]:
    """Z-order the bins' rows with Spark (sampled range bounds, a shuffle per output file, a sort by Z)."""
    from pyspark.sql import functions as F

    all_files = snap.add_files()
    index = {p: i for i, p in enumerate(all_files.column("path").to_pylist())}
    members = [(b_id, f["path"]) for b_id, b in enumerate(bins) for f in b.files]
    chosen = all_files.take(pa.array([index[p] for _, p in members], pa.int64()))
    tracked = tracked_fields(snap)  # row tracking: the rows keep their ids and commit versions
    schema = tracked_schema(snap.schema, tracked)
    data = [F.col(quoted(n)) for n in schema.field_names]
    if len(bins) == 1 and not tracked:
        # One bin: the plain read scan (no per-row file path, deleted rows dropped), no join to tag rows.
        scan = scan_rows(spark, snap, chosen)
        tagged = scan.select(*data, F.lit(0).cast("long").alias(BIN))
    else:
        binmap = pa.table({FILE: pa.array(file_uris(snap, chosen), _STR),
                           BIN: pa.array([b for b, _ in members], _I64)})
        scan = target_scan(spark, snap, chosen, drop_deleted=True, row_ids=True)
        tagged = scan.join(F.broadcast(frame_from_arrow(spark, binmap)), on=FILE, how="inner")
    ordered = zorder_frame(spark, tagged.select(*data, F.col(BIN)), zorder, bins, snap.table)
    tasks = sum(b.num_output_files for b in bins)
    # Files roll over only at twice the limit: a bin (or a Z-range) becomes one file.
    spec = _RewriteSpec(StoreRef.of(snap.store), snap.table, schema, snap.metadata, 2 * max_file_size)
    job = map_in_arrow(ordered.select(*data, F.col(BIN)), functools.partial(_rewrite_task, spec), FILE_DDL)
    try:
        rows = job.collect()
    except Exception as exc:
        raise task_error(exc, snap.table) from None
    files = written_files(rows)
    return files, tasks


# ------------------------------------------------------------------------------------- command


def _indexed_columns(snap: Snapshot) -> int:
    n = len(snap.schema.fields)
    try:
        limit = int(snap.metadata.configuration.get("delta.dataSkippingNumIndexedCols", "32"))
    except ValueError:
        limit = 32
    return n if limit < 0 else min(limit, n)


def _metrics(snap: Snapshot, *, considered: int, bins: list[Bin], added: list[WrittenFile], zorder: bool,
             tasks: int, started: int) -> dict[str, Any]:
    removed = [f for b in bins for f in b.files]
    removed_sizes = [int(f.get("size") or 0) for f in removed]
    dvs = [f["deletionVector"] for f in removed if f.get("deletionVector")]
    partitions = len({b.partition for b in bins})
    zstats = None
    if zorder:
        merged = {"num": len(removed), "size": sum(removed_sizes)}
        zstats = {"strategyName": "all", "inputCubeFiles": {"num": 0, "size": 0}, "inputOtherFiles": merged,
                  "inputNumCubes": 0, "mergedFiles": merged, "numOutputCubes": partitions, "mergedNumCubes": None}
    return {
        "numFilesAdded": len(added),
        "numFilesRemoved": len(removed),
        "filesAdded": size_summary([f.size for f in added]),
        "filesRemoved": size_summary(removed_sizes),
        "partitionsOptimized": partitions,
        "zOrderStats": zstats,
        "numBins": len(bins),
        "numBatches": len(bins),
        "totalConsideredFiles": considered,
        "totalFilesSkipped": considered - len(removed),
        "preserveInsertionOrder": False,
        "numFilesSkippedToReduceWriteAmplification": 0,
        "numBytesSkippedToReduceWriteAmplification": 0,
        "startTimeMs": started,
        "endTimeMs": int(time.time() * 1000),
        "totalScheduledTasks": tasks,
        "deletionVectorStats": {"numDeletionVectorsRemoved": len(dvs),
                                "numDeletionVectorRowsRemoved": sum(int(d.get("cardinality") or 0) for d in dvs)}
        if dvs else None,
        "numTableColumns": len(snap.schema.fields),
        "numTableColumnsWithStats": _indexed_columns(snap),
    }


def _clustering(snap: Snapshot, zorder_by: Sequence[str], full: bool) -> list[str] | None:
    """The clustering columns OPTIMIZE clusters by (``None``: the table is not clustered)."""
    where: dict[str, Any] = {"table": snap.table, "version": snap.version}
    columns = clustering_of(snap) or None
    if columns and zorder_by:
        raise InvalidArgumentError(
            f"[DELTA_CLUSTERING_WITH_ZORDER_BY] the table is clustered by {columns}: OPTIMIZE clusters it by "
            "them; ZORDER BY is not allowed (change the clustering with ALTER TABLE ... CLUSTER BY)", **where)
    if full and not columns:
        raise InvalidArgumentError("[DELTA_OPTIMIZE_FULL_NOT_SUPPORTED] OPTIMIZE FULL applies to clustered tables "
                                   "only", **where)
    return columns


def optimize(
    spark: Any,
    path: str,
    *,
    where: Sequence[str] = (),
    zorder_by: Sequence[str] = (),
    max_file_size: int | str | None = None,
    min_file_size: int | str | None = None,
    full: bool = False,
    purge: bool = False,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    auto: bool = False,
    min_deleted_share: float = 0.0,
) -> OptimizeResult:
    """Compact the table at ``path`` (or, with ``zorder_by``, Z-order it) in one ``OPTIMIZE`` commit; see
    the module docstring. ``where``: SQL filters on partition columns (AND). ``max_file_size`` /
    ``min_file_size`` (bytes, or text like ``"128m"``) override the session and table settings.

    ``purge=True`` is delta-spark's ``REORG TABLE ... APPLY (PURGE)``: only the files with a deletion vector
    are rewritten (bin-packed toward the size limit, small files without one are left alone), so that the
    deleted rows are gone from the data files; the commit is a ``REORG`` (``applyPurge``), ``dataChange=false``.

    On a liquid-clustered table (:mod:`deltalog.commands.clustering`) OPTIMIZE clusters instead: the files
    not yet clustered (``clusteringProvider`` unset) -- every file with ``full=True`` (``OPTIMIZE t FULL``)
    -- are Z-ordered by the clustering columns and written with ``clusteringProvider = "liquid"``;
    ``zorder_by`` is refused there, as in delta-spark.

    ``partitions`` (partition-value maps as the log writes them) limits the files to those partitions,
    ``min_deleted_share`` limits a purge to the files whose deletion vector deletes at least that share of
    their rows (``deltalog maintain``), and ``auto`` marks the commit as auto compaction (``auto: true``), as
    :mod:`deltalog.spark.layout.auto_optimize` runs it after a write.

    Example:
        >>> optimize(spark, "/data/t", max_file_size="64m").metrics["numFilesRemoved"]       # doctest: +SKIP
        31
        >>> optimize(spark, "/data/t", zorder_by=["x", "y"], where=["day = '2024-01-01'"]).version  # doctest: +SKIP
        9
    """
    started = int(time.time() * 1000)
    if isinstance(where, str) or isinstance(zorder_by, str):
        raise InvalidArgumentError("where and zorder_by take lists of strings", table=str(path))
    if purge and (zorder_by or full):
        raise InvalidArgumentError("a purge (REORG ... APPLY (PURGE)) neither Z-orders nor re-clusters",
                                   table=str(path))
    return replan_on_data_change(
        lambda: _optimize_once(spark, path, where, zorder_by, max_file_size, min_file_size, full, started,
                               purge=purge, partitions=partitions, auto=auto, min_deleted_share=min_deleted_share),
        str(path))


def _optimize_once(
    spark: Any, path: str, where: Sequence[str], zorder_by: Sequence[str], max_file_size: int | str | None,
    min_file_size: int | str | None, full: bool, started: int, *, purge: bool = False,
    partitions: Sequence[Mapping[str, Any]] | None = None, auto: bool = False, min_deleted_share: float = 0.0,
) -> OptimizeResult:
    table = open_table(path)
    snap = load_snapshot(table.location)
    clustering = None if purge else _clustering(snap, zorder_by, full)
    zorder = (zorder_columns(spark, snap, list(zorder_by)) if zorder_by
              else clustering_fields(snap, clustering) if clustering else [])
    limit, small = _file_sizes(spark, snap, max_file_size, min_file_size)
    selected = _select_files(spark, snap, list(where), "REORG" if purge else "OPTIMIZE")
    rows = selected.to_pylist()
    if partitions is not None:  # auto compaction: the partitions the write went into
        wanted = {_partition_key(p) for p in partitions}
        rows = [r for r in rows if _partition_key(dict(r.get("partitionValues") or {})) in wanted]
    if clustering and not full:  # incremental clustering: only the files written since
        rows = [r for r in rows if r.get("clusteringProvider") != PROVIDER]
    if purge:  # the files with deleted rows only; no file is too small to be left alone (size limit 1 byte)
        rows, small = [r for r in rows if r.get("deletionVector")], 1
        if min_deleted_share > 0:
            rows = [r for r in rows if (share := deleted_share(r)) is not None and share >= min_deleted_share]
    bins = plan_zorder(rows, max_file_size=limit) if zorder else plan_compaction(
        rows, max_file_size=limit, min_file_size=small)
    if not bins:
        metrics = _metrics(snap, considered=len(rows), bins=[], added=[], zorder=bool(zorder), tasks=0,
                           started=started)
        return OptimizeResult(table.location, None, metrics)
    check_can_write(snap)
    staged = Staged(table.store)
    staged.keeps_row_ids = tracked_fields(snap) is not None
    try:
        added, tasks = _rewrite(spark, snap, bins, zorder, limit)
        staged.data.extend(added)
        probe = table_probe(spark, snap) if where else None
        recorded = [recorded_partition_predicate(probe, w) for w in where] if probe is not None else None
        op: Optimize | Reorg = Reorg(predicate=recorded, apply_purge=True) if purge else Optimize(
            predicate=recorded, z_order_by=tuple(f.name for f in zorder) if not clustering else (),
            cluster_by=tuple(clustering) if clustering else None, auto=auto)
        txn = Transaction(table.store, snap, op, table=table.location)
        rewritten = [f for b in bins for f in b.files]
        txn.read_files(str(f["path"]) for f in rewritten)
        txn.remove_files(rewritten, data_change=False)
        for f in added:
            add = f.to_add(data_change=False)
            txn.add_file(dataclasses.replace(add, clusteringProvider=PROVIDER) if clustering else add)
        if clustering:  # a concurrent CLUSTER BY change conflicts (check_domains): no clustering by stale columns
            txn.set_domain_metadata(CLUSTERING_DOMAIN, snap.domain_metadata(CLUSTERING_DOMAIN) or "")
    except BaseException:
        staged.cleanup()
        raise
    result = staged.commit(txn, compaction_metrics(rewritten, [f.size for f in added]))
    metrics = _metrics(snap, considered=len(rows), bins=bins, added=added, zorder=bool(zorder), tasks=tasks,
                       started=started)
    return OptimizeResult(table.location, result.version, metrics, dict(result.operation_metrics))


def _partition_key(values: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((str(k), v) for k, v in values.items()))


def metrics_frame(spark: Any, result: OptimizeResult) -> DataFrame:
    """delta-spark's result of ``OPTIMIZE``: one row, ``path`` and the ``metrics`` struct.

    Example:
        >>> metrics_frame(spark, optimize(spark, "/data/t")).first().metrics.numFilesAdded   # doctest: +SKIP
        2
    """
    return arrow_frame(spark, pa.Table.from_pylist([{"path": result.path, "metrics": dict(result.metrics)}],
                                                   schema=_RESULT))


class DeltaOptimizeBuilder:
    """delta-spark's ``DeltaOptimizeBuilder``: ``where`` (partition filters), then ``executeCompaction``
    or ``executeZOrderBy``. Made by ``DeltaTable.optimize()``.

    Example:
        >>> DeltaTable.forPath(spark, "/data/t").optimize().where("p = 'a'").executeCompaction()  # doctest: +SKIP
        DataFrame[path: string, metrics: struct<numFilesAdded:bigint,...>]
    """

    def __init__(self, spark: Any, path: str) -> None:
        self._spark = spark
        self._path = path
        self._filters: list[str] = []

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        """Restrict to the partitions where ``partitionFilter`` (SQL on partition columns) holds; several
        calls combine with AND.

        Example:
            >>> builder.where("day >= '2024-01-01'")                                  # doctest: +SKIP
        """
        if not isinstance(partitionFilter, str):
            raise InvalidArgumentError(
                f"partitionFilter must be a SQL string, got {type(partitionFilter).__name__}", table=self._path)
        self._filters.append(partitionFilter)
        return self

    def executeCompaction(self) -> DataFrame:
        """Bin-pack small files (and files with deletion vectors) toward the target size; returns the
        metrics DataFrame.

        Example:
            >>> builder.executeCompaction().select("metrics.numFilesRemoved").first()[0]   # doctest: +SKIP
            12
        """
        self._check_columns(())
        return metrics_frame(self._spark, optimize(self._spark, self._path, where=self._filters))

    def executeZOrderBy(self, *cols: str | Sequence[str]) -> DataFrame:
        """Rewrite the selected partitions ordered along the Z-curve of ``cols`` (names, or one list).

        Example:
            >>> builder.executeZOrderBy("x", "y").first().metrics.zOrderStats.strategyName   # doctest: +SKIP
            'all'
        """
        names: Sequence[Any] = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
        for c in names:
            if not isinstance(c, str):  # delta-spark's TypeError, in its words
                raise InvalidArgumentTypeError(f"Z-order column must be str. Found {c} with type {type(c)}",
                                               table=self._path)
        if not names:
            raise InvalidArgumentError("executeZOrderBy needs at least one column", table=self._path)
        self._check_columns([str(c) for c in names])
        result = optimize(self._spark, self._path, where=self._filters, zorder_by=[str(c) for c in names])
        return metrics_frame(self._spark, result)

    def _check_columns(self, zorder: Sequence[str]) -> None:
        """delta-spark's refusals, in its words and order, before anything runs (the engine checks again): a
        ``where`` filter on a data column (``DELTA_NON_PARTITION_COLUMN_REFERENCE``), then a Z-order column
        that is a partition column (``DELTA_ZORDERING_ON_PARTITION_COLUMN``) or no column of the table
        (``DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST``)."""
        snap = load_snapshot(self._path)
        parts = list(snap.partition_columns)
        partition_names = {p.lower() for p in parts}
        data_names = {n.lower() for n in snap.schema.field_names} - partition_names
        for sql in self._filters:
            for name in (_referenced_columns(sql) if isinstance(sql, str) else None) or []:
                if name.lower() in data_names:
                    raise InvalidArgumentError(
                        f"[DELTA_NON_PARTITION_COLUMN_REFERENCE] Predicate references non-partition column '{name}'. "
                        f"Only the partition columns may be referenced: [{', '.join(parts)}]. OPTIMIZE ... WHERE "
                        "selects partitions; it cannot filter rows", table=snap.table, version=snap.version)
        for name in zorder:
            if name.lower() in partition_names:
                raise InvalidArgumentError(
                    f"[DELTA_ZORDERING_ON_PARTITION_COLUMN] {name} is a partition column. Z-Ordering can only be "
                    "performed on data columns", table=snap.table, version=snap.version)
            if "." not in name and "`" not in name and name.lower() not in data_names:
                raise InvalidArgumentError(
                    f"[DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST] Z-Ordering column {name} does not exist in data schema. "
                    f"The data columns are {[n for n in snap.schema.field_names if n.lower() in data_names]}",
                    table=snap.table, version=snap.version)
