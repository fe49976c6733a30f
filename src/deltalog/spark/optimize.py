"""``OPTIMIZE`` with Spark: compaction and Z-ordering, as delta-spark's ``DeltaTable.optimize()`` builder.

``DeltaTable.forPath(spark, p).optimize().where("day = '2024-01-01'").executeCompaction()`` or
``.executeZOrderBy("x", "y")``; both return delta-spark's one-row metrics DataFrame (``path``,
``metrics``). The kernel plans (:mod:`deltalog.commands.optimize_plan`), Spark moves the rows:

1. **Which files.** ``where`` filters (SQL on partition columns only; any other column is refused) are
   evaluated by Spark over the files' typed partition values. The size limit is
   ``spark.databricks.delta.optimize.maxFileSize`` when set, else the table's ``delta.targetFileSize``,
   else 1 GiB; files below ``spark.databricks.delta.optimize.minFileSize`` (default: the limit) or with
   deletion vectors are compacted. Z-ordering takes every file of the selected partitions.
2. **The rows** of the chosen files are read with the deletion-vector-aware scan of
   :func:`~deltalog.spark.dml._scan.target_scan` (deleted rows are purged) and tagged with their bin.
   Compaction hashes rows by bin into tasks and writes one file per bin (rows in their old order).
   Z-ordering first turns each column into a ``double`` key (numbers, dates, timestamps; the first six
   bytes of strings), gets ``2**b - 1`` quantiles of each key per partition (``percentile_approx`` over a
   sample, one small aggregate collected), then the Z-values splitting each partition into
   ``size / maxFileSize`` files (a second sampled pass); the full pass computes each row's Z-value
   (range numbers interleaved bit by bit) and file in one Arrow task, hash-partitions so that each file
   is one task, and sorts each task by Z, so every file covers a compact box of the Z-curve: tight
   min/max on each column. Nothing is read twice or cached.
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

import contextlib
import dataclasses
import functools
import itertools
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow.write import _Plan, _write_batches
from deltalog.arrow.write_files import WrittenFile
from deltalog.commands.clustering import CLUSTERING_DOMAIN, PROVIDER, clustering_of
from deltalog.commands.optimize_plan import (
    DEFAULT_MAX_FILE_SIZE,
    Bin,
    bits_per_column,
    interleave_bits,
    orderable,
    plan_compaction,
    plan_zorder,
    range_ids,
    range_probabilities,
    sample_fractions,
    size_percentiles,
    size_summary,
    stats_columns,
)
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.actions import Metadata
from deltalog.protocol.column_mapping import mapping_mode
from deltalog.protocol.schema import DecimalType, PrimitiveType, StructField, StructType
from deltalog.spark._common import load_snapshot, open_table, spark_schema
from deltalog.spark.dml._jobs import Staged, check_can_write
from deltalog.spark.dml._row_ids import tracked_fields
from deltalog.spark.dml._scan import FILE, ROW, _partition_table, file_uris, quoted, target_scan
from deltalog.spark.read import _scan
from deltalog.spark.write import _FILE_DDL, _FILE_SCHEMA, _chunks, _RunWriter, _task_error
from deltalog.storage.log_store import StoreRef
from deltalog.txn.operations import Optimize
from deltalog.txn.transaction import Transaction

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["DeltaOptimizeBuilder", "OptimizeResult", "optimize"]

DataFrame = Any  # pyspark.sql.DataFrame (classic or Connect)

MAX_FILE_SIZE_CONF = "spark.databricks.delta.optimize.maxFileSize"
MIN_FILE_SIZE_CONF = "spark.databricks.delta.optimize.minFileSize"
ZORDER_STATS_CHECK_CONF = "spark.databricks.delta.optimize.zorder.checkStatsCollection.enabled"

_BIN = "__deltalog_bin"
_Z = "__deltalog_z"
_TASK = "__deltalog_task"
_KEY = "__deltalog_key"
_QUANTILE_ACCURACY = 10_000
#: Quantiles come from a sample of about this many rows per range of a bin (all rows of small bins).
_SAMPLE_ROWS_PER_RANGE = 100
_NUMERIC = ("byte", "short", "integer", "long", "float", "double")

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


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def _bytes(value: Any, name: str, table: str) -> int:
    """A positive byte count from an int or a text such as ``134217728`` or ``128m``."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        m = _SIZE_RE.match(str(value))
        if m is None:
            raise InvalidArgumentError(f"{name} must be a number of bytes (e.g. 134217728 or 128m), got {value!r}",
                                       table=table)
        number = int(m.group(1)) << (10 * " kmgt".index(m.group(2).lower() or " "))
    if number <= 0:
        raise InvalidArgumentError(f"{name} must be positive, got {value!r}", table=table)
    return number


def _conf(spark: Any, key: str) -> str | None:
    try:
        value = spark.conf.get(key, None)
    except Exception:
        return None
    return None if value is None else str(value)


def _file_sizes(
    spark: Any, snap: Snapshot, max_file_size: int | str | None, min_file_size: int | str | None
) -> tuple[int, int]:
    loc = snap.table
    if max_file_size is not None:
        limit = _bytes(max_file_size, "max_file_size", loc)
    elif (conf := _conf(spark, MAX_FILE_SIZE_CONF)) is not None:
        limit = _bytes(conf, MAX_FILE_SIZE_CONF, loc)
    elif "delta.targetFileSize" in snap.metadata.configuration:
        limit = _bytes(snap.metadata.configuration["delta.targetFileSize"], "delta.targetFileSize", loc)
    else:
        limit = DEFAULT_MAX_FILE_SIZE
    if min_file_size is not None:
        return limit, _bytes(min_file_size, "min_file_size", loc)
    conf = _conf(spark, MIN_FILE_SIZE_CONF)
    return limit, (_bytes(conf, MIN_FILE_SIZE_CONF, loc) if conf is not None else limit)


# ------------------------------------------------------------------------------ partition filter


def _referenced_columns(sql: str) -> list[str] | None:
    """First names of the column references of a SQL condition (``None`` when it cannot be parsed)."""
    from deltalog.txn.sql_expr import UnsupportedExpressionError, _Node, _Parser

    try:
        root = _Parser(sql).parse()
    except UnsupportedExpressionError:
        return None
    found: list[str] = []

    def visit(item: Any) -> None:
        if isinstance(item, _Node):
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


def _non_partition_error(column: str, snap: Snapshot) -> InvalidArgumentError:
    parts = list(snap.partition_columns)
    return InvalidArgumentError(
        f"[DELTA_NON_PARTITION_COLUMN_REFERENCE] the OPTIMIZE filter references non-partition column "
        f"{column!r}; only the partition columns may be referenced: {parts}",
        table=snap.table, version=snap.version,
    )


def _check_filter(sql: str, snap: Snapshot) -> None:
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidArgumentError(f"an OPTIMIZE partition filter must be a non-empty SQL string, got {sql!r}",
                                   table=snap.table)
    parts = {p.lower() for p in snap.partition_columns}
    for name in _referenced_columns(sql) or []:
        if name.lower() not in parts:
            if snap.schema.get(name) is not None or name.lower() in {n.lower() for n in snap.schema.field_names}:
                raise _non_partition_error(name, snap)
            raise InvalidArgumentError(
                f"[UNRESOLVED_COLUMN] the OPTIMIZE filter {sql!r} references unknown column {name!r}; the "
                f"partition columns are {list(snap.partition_columns)}",
                table=snap.table, version=snap.version,
            )


_UNRESOLVED = re.compile(r"name `([^`]+)` cannot be resolved")


def _select_files(spark: Any, snap: Snapshot, filters: Sequence[str]) -> pa.Table:
    """The live files whose partition values satisfy every filter (evaluated by Spark)."""
    from pyspark.sql import functions as F

    files = snap.add_files()
    for sql in filters:
        _check_filter(sql, snap)
    if not filters or files.num_rows == 0:
        return files
    fields = [snap.schema.field(p) for p in snap.partition_columns]
    ids = [str(i) for i in range(files.num_rows)]
    ptable = _partition_table(files, ids, fields, snap.column_mapping_mode)
    key = StructField(FILE, PrimitiveType("string"), False, {})
    df = spark.createDataFrame(ptable, spark_schema([key, *fields]))
    for sql in filters:
        try:
            df = df.filter(F.expr(sql))
            _ = df.schema
        except Exception as exc:
            unresolved = _UNRESOLVED.search(str(exc))
            if unresolved and snap.schema.get(unresolved.group(1)) is not None:
                raise _non_partition_error(unresolved.group(1), snap) from None
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InvalidArgumentError(f"the OPTIMIZE partition filter {sql!r} is invalid: {first}",
                                       table=snap.table) from None
    keep = sorted(int(r[0]) for r in df.select(FILE).collect())
    return files.take(pa.array(keep, pa.int64()))


# ------------------------------------------------------------------------------------- Z-order


def _zorder_columns(spark: Any, snap: Snapshot, columns: Sequence[str]) -> list[StructField]:
    """The Z-order columns resolved to data columns (errors name the column and the rule)."""
    where: dict[str, Any] = {"table": snap.table, "version": snap.version}
    if not columns:
        raise InvalidArgumentError("executeZOrderBy needs at least one column", **where)
    by_lower = {f.name.lower(): f for f in snap.schema.fields}
    parts = {p.lower() for p in snap.partition_columns}
    out: list[StructField] = []
    for name in columns:
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"Z-order columns must be column names, got {name!r}", **where)
        if name.lower() in parts:
            raise InvalidArgumentError(
                f"[DELTA_ZORDERING_ON_PARTITION_COLUMN] {name} is a partition column; Z-ordering can only be "
                "performed on data columns", **where)
        f = by_lower.get(name.lower())
        if f is None:
            raise InvalidArgumentError(
                f"[DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST] Z-order column {name} does not exist in the data schema "
                f"(top-level columns: {[c for c in snap.schema.field_names if c.lower() not in parts]})", **where)
        if not orderable(f.type):
            raise InvalidArgumentError(f"cannot Z-order by column {f.name}: its type cannot be ordered", **where)
        if any(o.name == f.name for o in out):
            raise InvalidArgumentError(f"Z-order column {f.name} is listed twice", **where)
        out.append(f)
    check = (_conf(spark, ZORDER_STATS_CHECK_CONF) or "true").strip().lower() != "false"
    with_stats = stats_columns(snap.schema, snap.partition_columns, snap.metadata.configuration)
    missing = [f.name for f in out if f.name.lower() not in with_stats]
    if check and missing:
        raise InvalidArgumentError(
            f"[DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS] Z-ordering on {missing} will be ineffective: statistics "
            "are not collected for these columns (see delta.dataSkippingNumIndexedCols and "
            f"delta.dataSkippingStatsColumns); set {ZORDER_STATS_CHECK_CONF}=false to Z-order anyway", **where)
    bits_per_column(len(out))  # validates the count
    return out


def _path_column(f: StructField) -> Any:
    """The column of ``f``; a nested clustering column (see :func:`_clustering_fields`) is reached
    through its struct parents."""
    from pyspark.sql import functions as F

    first, *rest = f.metadata.get(_PATH) or [f.name]
    col = F.col(quoted(first))
    for part in rest:
        col = col.getField(part)
    return col


_PATH = "deltalog.path"


def _clustering_fields(snap: Snapshot, columns: Sequence[str]) -> list[StructField]:
    """The clustering columns as fields named by their paths, typed by the leaf they name."""
    out = []
    for path in columns:
        f = None
        node: Any = snap.schema
        parts = path.split(".") if path not in snap.schema.field_names else [path]
        for part in parts:
            if not isinstance(node, StructType) or part not in node.field_names:
                raise InvalidArgumentError(f"clustering column {path} is not in the table's schema",
                                           table=snap.table, version=snap.version)
            f = node.field(part)
            node = f.type
        assert f is not None
        if not orderable(f.type):
            raise InvalidArgumentError(f"cannot cluster by column {path}: its type cannot be ordered",
                                       table=snap.table, version=snap.version)
        out.append(StructField(path, f.type, True, {_PATH: parts}))
    return out


def _key(f: StructField) -> Any:
    """An order-preserving ``double`` of a column (nulls stay null)."""
    from pyspark.sql import functions as F

    col = _path_column(f)
    t = f.type
    if isinstance(t, DecimalType) or (isinstance(t, PrimitiveType) and t.name in _NUMERIC):
        return col.cast("double")
    name = t.name if isinstance(t, PrimitiveType) else ""
    if name == "boolean":
        return col.cast("int").cast("double")
    if name == "date":
        return F.unix_date(col).cast("double")
    if name == "timestamp":
        return F.unix_micros(col).cast("double")
    if name == "timestamp_ntz":
        return F.unix_micros(col.cast("timestamp")).cast("double")
    # string / binary: the first six bytes, big-endian, zero-padded (exact in a double's 53 bits)
    prefix = F.rpad(F.hex(F.substring(col.cast("binary"), 1, 6)), 12, "0")
    return F.conv(prefix, 16, 10).cast("double")


@dataclass(frozen=True)
class _ZSpec:
    keys: tuple[str, ...]
    bounds: Mapping[int, tuple[np.ndarray, ...]]
    bits: int
    #: Per bin: the Z-values separating its output files, the index of its first task, its file count;
    #: and the partitioning key of each task (``None`` in the sampling pass, which yields bin and Z only).
    z_bounds: Mapping[int, np.ndarray] = field(default_factory=dict)
    offsets: Mapping[int, int] = field(default_factory=dict)
    files: Mapping[int, int] = field(default_factory=dict)
    task_keys: tuple[int, ...] | None = None


def _zorder_task(spec: _ZSpec, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Runs in a Spark task: the rows' Z-values (range numbers of the keys interleaved) and, unless
    sampling, their output task: ``_BIN`` becomes the task's index and ``_TASK`` its partitioning key."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        names = batch.schema.names
        bins = batch.column(names.index(_BIN)).to_numpy(zero_copy_only=False)
        keys = [
            pc.fill_null(batch.column(names.index(k)), pa.scalar(-np.inf, pa.float64())).to_numpy(zero_copy_only=False)
            for k in spec.keys
        ]
        ids = [np.zeros(batch.num_rows, dtype=np.int64) for _ in spec.keys]
        distinct = np.unique(bins)
        for b in distinct:
            rows = bins == b
            bounds = spec.bounds.get(int(b))
            for i, values in enumerate(keys):
                ids[i][rows] = range_ids(values[rows], bounds[i] if bounds else None)
        z = interleave_bits(ids, bits=spec.bits)
        if spec.task_keys is None:
            yield pa.RecordBatch.from_arrays([pa.array(bins, pa.int64()), pa.array(z, pa.int64())], names=[_BIN, _Z])
            continue
        task = np.zeros(batch.num_rows, dtype=np.int64)
        for b in distinct:
            rows = bins == b
            edges = spec.z_bounds.get(int(b))
            local = np.zeros(int(rows.sum()), dtype=np.int64) if edges is None or not len(edges) else (
                np.searchsorted(edges, z[rows], side="right"))
            task[rows] = spec.offsets[int(b)] + np.minimum(local, spec.files[int(b)] - 1)
        keep = [i for i, n in enumerate(names) if n not in spec.keys and n != _BIN]
        yield pa.RecordBatch.from_arrays(
            [batch.column(i) for i in keep]
            + [pa.array(task, pa.int64()), pa.array(z, pa.int64()), pa.array(np.asarray(spec.task_keys)[task])],
            names=[names[i] for i in keep] + [_BIN, _Z, _TASK],
        )


def _task_keys(spark: Any, tasks: int) -> tuple[int, ...]:
    """For each task ``t``, a ``long`` that ``repartition(tasks, col)`` (Murmur3 hash, seed 42, modulo
    ``tasks``) sends to partition ``t``, found by Spark's own ``hash``: one task per partition."""
    from pyspark.sql import functions as F

    span = 32 * tasks + 64
    while True:
        probe = spark.range(0, span).select(F.col("id"), F.expr(f"pmod(hash(id), {tasks})").alias("p"))
        found = {int(r["p"]): int(r["id"]) for r in probe.groupBy("p").agg(F.min("id").alias("id")).collect()}
        if len(found) == tasks:
            return tuple(found[t] for t in range(tasks))
        span *= 4


def _zorder_frame(
    spark: Any, tagged: DataFrame, columns: list[StructField], bins: list[Bin], table: str
) -> DataFrame:
    """The rows with their Z-value, one shuffle partition per output file, sorted by Z.

    Two passes over a sample of each bin (about :data:`_SAMPLE_ROWS_PER_RANGE` rows per range) find
    each key's range bounds, then the Z-values splitting the bin into its output files; the full pass
    computes every row's Z-value and file in one Python task and hash-partitions on a key chosen per
    file, so no input is read twice or cached (range partitioning would sample its input again).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStruct

    bits = bits_per_column(len(columns))
    probs = range_probabilities(bits)
    keys = tuple(f"{_KEY}{i}" for i in range(len(columns)))
    keyed = tagged.select("*", *[_key(f).alias(k) for f, k in zip(columns, keys)])
    fractions = sample_fractions(bins, _SAMPLE_ROWS_PER_RANGE << bits)
    sample = keyed if fractions is None else keyed.sampleBy(_BIN, fractions, seed=17)
    quantiles = sample.groupBy(_BIN).agg(*[F.percentile_approx(k, probs, _QUANTILE_ACCURACY).alias(k) for k in keys])
    try:
        collected = quantiles.collect()
    except Exception as exc:
        raise _task_error(exc, table) from None
    bounds = {
        int(r[_BIN]): tuple(np.array([v for v in (r[k] or []) if v is not None], dtype=np.float64) for k in keys)
        for r in collected
    }
    files = {i: b.num_output_files for i, b in enumerate(bins)}
    z_bounds: dict[int, np.ndarray] = {}
    most = max(files.values())
    if most > 1:
        grid = max(1024, 4 * most)
        sampled_z = sample.mapInArrow(
            functools.partial(_zorder_task, _ZSpec(keys, bounds, bits)),
            SparkStruct([SparkField(_BIN, LongType(), False), SparkField(_Z, LongType(), False)]),
        )
        agg = sampled_z.groupBy(_BIN).agg(
            F.percentile_approx(_Z, [k / grid for k in range(1, grid)], _QUANTILE_ACCURACY).alias(_Z))
        try:
            z_rows = agg.collect()
        except Exception as exc:
            raise _task_error(exc, table) from None
        for r in z_rows:
            b, qs = int(r[_BIN]), [v for v in (r[_Z] or []) if v is not None]
            if files.get(b, 1) > 1 and qs:
                picks = [min(len(qs) - 1, round(k * grid / files[b]) - 1) for k in range(1, files[b])]
                z_bounds[b] = np.array([qs[i] for i in picks], dtype=np.int64)
    offsets = dict(zip(files, itertools.accumulate([0, *files.values()])))
    tasks = sum(files.values())
    spec = _ZSpec(keys, bounds, bits, z_bounds, offsets, files, _task_keys(spark, tasks))
    kept = [f for f in keyed.schema.fields if f.name not in keys and f.name != _BIN]
    out_schema = SparkStruct([*kept, SparkField(_BIN, LongType(), False), SparkField(_Z, LongType(), False),
                              SparkField(_TASK, LongType(), False)])
    with_z = keyed.mapInArrow(functools.partial(_zorder_task, spec), out_schema)
    return with_z.repartition(tasks, F.col(_TASK)).sortWithinPartitions(_BIN, _Z)


# ------------------------------------------------------------------------------------- rewrite


@dataclass(frozen=True)
class _RewriteSpec:
    store: StoreRef
    table: str
    schema: StructType
    metadata: Metadata
    target_file_size: int


def _file_rows(files: list[WrittenFile]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [
            {
                "path": f.path, "rel_path": f.rel_path, "partition_values": json.dumps(f.partition_values),
                "size": f.size, "num_records": f.num_records, "stats": f.stats,
                "modification_time": f.modification_time,
            }
            for f in files
        ],
        schema=_FILE_SCHEMA,
    )


def _rewrite_task(spec: _RewriteSpec, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Runs in a Spark task over rows sorted by bin: a new file (set) per bin; one row per file."""
    store = spec.store.open()
    plan = _Plan(None, spec.metadata, spec.schema, False, None)
    names = spec.schema.field_names
    done: list[WrittenFile] = []
    writer: _RunWriter | None = None
    current: int | None = None
    try:
        for chunk in _chunks(batches):
            bins = chunk.column(chunk.schema.names.index(_BIN)).to_numpy(zero_copy_only=False)
            data = pa.Table.from_batches([chunk]).select(names)
            bounds = [0, *(np.flatnonzero(bins[1:] != bins[:-1]) + 1).tolist(), len(bins)]
            for begin, end in itertools.pairwise(bounds):
                if writer is None or int(bins[begin]) != current:
                    if writer is not None:
                        closing, writer = writer, None
                        done.extend(closing.close())
                    writer = _RunWriter(store, spec.schema, spec.metadata.partitionColumns,
                                        target_file_size=spec.target_file_size,
                                        column_mapping=mapping_mode(spec.metadata.configuration))
                    current = int(bins[begin])
                _write_batches(writer, iter(data.slice(begin, end - begin).to_batches()), plan, spec.table)
        if writer is not None:
            closing, writer = writer, None
            done.extend(closing.close())
    except BaseException:
        if writer is not None:
            writer.abort()
        for f in done:
            with contextlib.suppress(Exception):
                store.delete(f.rel_path)
        raise
    if done:
        yield _file_rows(done)


def _rewrite(spark: Any, snap: Snapshot, bins: list[Bin], zorder: list[StructField], max_file_size: int
             ) -> tuple[list[WrittenFile], int]:
    """Write the bins' live rows as new files (nothing committed); returns them and the task count."""
    from pyspark.sql import functions as F

    all_files = snap.add_files()
    index = {p: i for i, p in enumerate(all_files.column("path").to_pylist())}
    members = [(b_id, f["path"]) for b_id, b in enumerate(bins) for f in b.files]
    chosen = all_files.take(pa.array([index[p] for _, p in members], pa.int64()))
    tracked = tracked_fields(snap)  # row tracking: the rows keep their ids and commit versions
    schema = StructType((*snap.schema.fields, *tracked)) if tracked else snap.schema
    data = [F.col(quoted(n)) for n in schema.field_names]
    if zorder and len(bins) == 1 and not tracked:
        # One bin: the plain read scan (no per-row file path, deleted rows dropped), no join to tag rows.
        scan = _scan(spark, snap, chosen, list(snap.schema.fields), snap.column_mapping_mode,
                     set(snap.partition_columns))
        tagged = scan.select(*data, F.lit(0).cast("long").alias(_BIN))
    else:
        binmap = pa.table({FILE: pa.array(file_uris(snap, chosen), _STR),
                           _BIN: pa.array([b for b, _ in members], _I64)})
        scan = target_scan(spark, snap, chosen, drop_deleted=True, row_ids=True)
        tagged = scan.join(F.broadcast(spark.createDataFrame(binmap)), on=FILE, how="inner")
    if zorder:
        ordered = _zorder_frame(spark, tagged.select(*data, F.col(_BIN)), zorder, bins, snap.table)
        tasks = sum(b.num_output_files for b in bins)
    else:
        tasks = len(bins)
        ordered = tagged.repartition(tasks, F.col(_BIN)).sortWithinPartitions(_BIN, FILE, ROW)
    # Files roll over only at twice the limit: a bin (or a Z-range) becomes one file.
    spec = _RewriteSpec(StoreRef.of(snap.store), snap.table, schema, snap.metadata, 2 * max_file_size)
    job = ordered.select(*data, F.col(_BIN)).mapInArrow(functools.partial(_rewrite_task, spec), _FILE_DDL)
    try:
        rows = job.collect()
    except Exception as exc:
        raise _task_error(exc, snap.table) from None
    files = [
        WrittenFile(path=r["path"], rel_path=r["rel_path"], partition_values=json.loads(r["partition_values"]),
                    size=int(r["size"]), num_records=int(r["num_records"]), stats=r["stats"],
                    modification_time=int(r["modification_time"]))
        for r in rows
    ]
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


def _commit_metrics(bins: list[Bin], added: list[WrittenFile]) -> dict[str, Any]:
    dvs = [f["deletionVector"] for b in bins for f in b.files if f.get("deletionVector")]
    return {
        **size_percentiles([f.size for f in added]),
        "numDeletionVectorsRemoved": len(dvs),
        "numDeletionVectorRowsRemoved": sum(int(d.get("cardinality") or 0) for d in dvs),
        "numDeletionVectorBytesRemoved": sum(int(d.get("sizeInBytes") or 0) for d in dvs),
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
) -> OptimizeResult:
    """Compact the table at ``path`` (or, with ``zorder_by``, Z-order it) in one ``OPTIMIZE`` commit; see
    the module docstring. ``where``: SQL filters on partition columns (AND). ``max_file_size`` /
    ``min_file_size`` (bytes, or text like ``"128m"``) override the session and table settings.

    On a liquid-clustered table (:mod:`deltalog.commands.clustering`) OPTIMIZE clusters instead: the files
    not yet clustered (``clusteringProvider`` unset) -- every file with ``full=True`` (``OPTIMIZE t FULL``)
    -- are Z-ordered by the clustering columns and written with ``clusteringProvider = "liquid"``;
    ``zorder_by`` is refused there, as in delta-spark.

    Example:
        >>> optimize(spark, "/data/t", max_file_size="64m").metrics["numFilesRemoved"]       # doctest: +SKIP
        31
        >>> optimize(spark, "/data/t", zorder_by=["x", "y"], where=["day = '2024-01-01'"]).version  # doctest: +SKIP
        9
    """
    started = int(time.time() * 1000)
    if isinstance(where, str) or isinstance(zorder_by, str):
        raise InvalidArgumentError("where and zorder_by take lists of strings", table=str(path))
    table = open_table(path)
    snap = load_snapshot(table.location)
    clustering = _clustering(snap, zorder_by, full)
    zorder = (_zorder_columns(spark, snap, list(zorder_by)) if zorder_by
              else _clustering_fields(snap, clustering) if clustering else [])
    limit, small = _file_sizes(spark, snap, max_file_size, min_file_size)
    selected = _select_files(spark, snap, list(where))
    rows = selected.to_pylist()
    if clustering and not full:  # incremental clustering: only the files written since
        rows = [r for r in rows if r.get("clusteringProvider") != PROVIDER]
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
        op = Optimize(predicate=list(where) or None, z_order_by=tuple(f.name for f in zorder) if not clustering
                      else (), cluster_by=tuple(clustering) if clustering else None)
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
    result = staged.commit(txn, _commit_metrics(bins, added))
    metrics = _metrics(snap, considered=len(rows), bins=bins, added=added, zorder=bool(zorder), tasks=tasks,
                       started=started)
    return OptimizeResult(table.location, result.version, metrics, dict(result.operation_metrics))


def metrics_frame(spark: Any, result: OptimizeResult) -> DataFrame:
    """delta-spark's result of ``OPTIMIZE``: one row, ``path`` and the ``metrics`` struct.

    Example:
        >>> metrics_frame(spark, optimize(spark, "/data/t")).first().metrics.numFilesAdded   # doctest: +SKIP
        2
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    table = pa.Table.from_pylist([{"path": result.path, "metrics": dict(result.metrics)}], schema=_RESULT)
    return spark.createDataFrame(table, schema=from_arrow_schema(table.schema, prefer_timestamp_ntz=False))


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
        return metrics_frame(self._spark, optimize(self._spark, self._path, where=self._filters))

    def executeZOrderBy(self, *cols: str | Sequence[str]) -> DataFrame:
        """Rewrite the selected partitions ordered along the Z-curve of ``cols`` (names, or one list).

        Example:
            >>> builder.executeZOrderBy("x", "y").first().metrics.zOrderStats.strategyName   # doctest: +SKIP
            'all'
        """
        names: Sequence[Any] = cols[0] if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else cols
        if not names:
            raise InvalidArgumentError("executeZOrderBy needs at least one column", table=self._path)
        if not all(isinstance(c, str) for c in names):
            raise InvalidArgumentError(f"executeZOrderBy takes column names, got {list(names)!r}", table=self._path)
        result = optimize(self._spark, self._path, where=self._filters, zorder_by=[str(c) for c in names])
        return metrics_frame(self._spark, result)
