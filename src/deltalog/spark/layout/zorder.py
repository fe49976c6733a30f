"""Z-order keys and the Z-ordered frame OPTIMIZE writes (``executeZOrderBy`` and liquid clustering):
each Z-order column becomes an order-preserving ``double``, ranges come from quantiles of a sample, and
every row gets its Z-value and output file in one Python task (see :mod:`deltalog.spark.layout.optimize`).

Example:
    >>> zorder_columns(spark, snap, ["x", "y"])[0].name                         # doctest: +SKIP
    'x'
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.commands.optimize_plan import (
    Bin,
    bin_rows,
    bits_per_column,
    fractions_for,
    interleave_bits,
    orderable,
    range_ids,
    range_probabilities,
    zorder_fields,
)
from deltalog.errors import (
    InvalidArgumentError,
)
from deltalog.protocol.schema import DecimalType, PrimitiveType, StructField, StructType
from deltalog.spark.common.compat import to_arrow
from deltalog.spark.common.core import map_in_arrow, quoted, session_setting
from deltalog.spark.common.storage import is_connect
from deltalog.spark.jobs.tasks import task_error

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot


DataFrame = Any  # pyspark.sql.DataFrame (classic or Connect)

ZORDER_STATS_CHECK_CONF = "spark.databricks.delta.optimize.zorder.checkStatsCollection.enabled"

BIN = "__deltalog_bin"
_Z = "__deltalog_z"
_TASK = "__deltalog_task"
_KEY = "__deltalog_key"
_QUANTILE_ACCURACY = 10_000
#: Quantiles come from a sample of about this many rows per range of a bin (all rows of small bins).
_SAMPLE_ROWS_PER_RANGE = 100
_NUMERIC = ("byte", "short", "integer", "long", "float", "double")
#: Samples of up to this many rows (all bins together) are brought to the driver, where the key and
#: Z-value bounds come from one pass (as Spark's range partitioner samples); larger ones are aggregated
#: by two Spark passes.
_DRIVER_SAMPLE_ROWS = 2_000_000


def zorder_columns(spark: Any, snap: Snapshot, columns: Sequence[str]) -> list[StructField]:
    """The Z-order columns resolved to data columns (errors name the column and the rule; see
    :func:`deltalog.commands.optimize_plan.zorder_fields`), with the session's statistics check."""
    check = (session_setting(spark, ZORDER_STATS_CHECK_CONF) or "true").strip().lower() != "false"
    return zorder_fields(snap.schema, snap.partition_columns, snap.metadata.configuration, columns,
                         require_stats=check, stats_conf=ZORDER_STATS_CHECK_CONF, table=snap.table,
                         version=snap.version)


def _path_column(f: StructField) -> Any:
    """The column of ``f``; a nested clustering column (see :func:`clustering_fields`) is reached
    through its struct parents."""
    from pyspark.sql import functions as F

    first, *rest = f.metadata.get(_PATH) or [f.name]
    col = F.col(quoted(first))
    for part in rest:
        col = col.getField(part)
    return col


_PATH = "deltalog.path"


def clustering_fields(snap: Snapshot, columns: Sequence[str]) -> list[StructField]:
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
    sampling, their output task: ``BIN`` becomes the task's index and ``_TASK`` its partitioning key."""
    for batch in batches:
        if batch.num_rows == 0:
            continue
        names = batch.schema.names
        bins = batch.column(names.index(BIN)).to_numpy(zero_copy_only=False)
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
            yield pa.RecordBatch.from_arrays([pa.array(bins, pa.int64()), pa.array(z, pa.int64())], names=[BIN, _Z])
            continue
        task = np.zeros(batch.num_rows, dtype=np.int64)
        for b in distinct:
            rows = bins == b
            edges = spec.z_bounds.get(int(b))
            local = np.zeros(int(rows.sum()), dtype=np.int64) if edges is None or not len(edges) else (
                np.searchsorted(edges, z[rows], side="right"))
            task[rows] = spec.offsets[int(b)] + np.minimum(local, spec.files[int(b)] - 1)
        keep = [i for i, n in enumerate(names) if n not in spec.keys and n != BIN]
        yield pa.RecordBatch.from_arrays(
            [batch.column(i) for i in keep]
            + [pa.array(task, pa.int64()), pa.array(z, pa.int64()), pa.array(np.asarray(spec.task_keys)[task])],
            names=[names[i] for i in keep] + [BIN, _Z, _TASK],
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


def zorder_frame(
    spark: Any, tagged: DataFrame, columns: list[StructField], bins: list[Bin], table: str
) -> DataFrame:
    """The rows with their Z-value, one shuffle partition per output file, sorted by Z.

    A sample of each bin (about :data:`_SAMPLE_ROWS_PER_RANGE` rows per range) gives each key's range
    bounds, then the Z-values splitting the bin into its output files -- on the driver in one pass when
    the sample is small (:data:`_DRIVER_SAMPLE_ROWS`), else by two Spark aggregations; the full pass
    computes every row's Z-value and file in one Python task and hash-partitions on a key chosen per
    file, so no input is read twice or cached (range partitioning would sample its input again).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStruct

    bits = bits_per_column(len(columns))
    keys = tuple(f"{_KEY}{i}" for i in range(len(columns)))
    keyed = tagged.select("*", *[_key(f).alias(k) for f, k in zip(columns, keys)])
    per_bin = _SAMPLE_ROWS_PER_RANGE << bits
    counts = bin_rows(bins)  # the files' stats are parsed once, for the fractions and the driver-side choice
    fractions = fractions_for(counts, per_bin)
    sample = keyed if fractions is None else keyed.sampleBy(BIN, fractions, seed=17)
    files = {i: b.num_output_files for i, b in enumerate(bins)}
    if counts is not None and sum(min(n, per_bin) for n in counts) <= _DRIVER_SAMPLE_ROWS:
        try:
            sampled = to_arrow(sample.select(BIN, *keys))
        except Exception as exc:
            raise task_error(exc, table) from None
        bounds, z_bounds = _driver_bounds(sampled, keys, bits, files)
    else:
        bounds, z_bounds = _spark_bounds(sample, keys, bits, files, table)
    offsets = dict(zip(files, itertools.accumulate([0, *files.values()])))
    tasks = sum(files.values())
    spec = _ZSpec(keys, bounds, bits, z_bounds, offsets, files, _task_keys(spark, tasks))
    kept = [f for f in keyed.schema.fields if f.name not in keys and f.name != BIN]
    out_schema = SparkStruct([*kept, SparkField(BIN, LongType(), False), SparkField(_Z, LongType(), False),
                              SparkField(_TASK, LongType(), False)])
    if len(bins) == 1 and files[0] <= _MAX_CASE_FILES and not is_connect(spark):
        with_z = _jvm_zorder(keyed, spec, [f.name for f in kept])
    else:
        with_z = map_in_arrow(keyed, functools.partial(_zorder_task, spec), out_schema)
    return with_z.repartition(tasks, F.col(_TASK)).sortWithinPartitions(BIN, _Z)


#: A single bin split into at most this many files gets its Z-values and files from Spark expressions.
_MAX_CASE_FILES = 256


def _jvm_zorder(keyed: DataFrame, spec: _ZSpec, kept: list[str]) -> DataFrame:
    """What :func:`_zorder_task` computes for a single bin (index 0), as Spark expressions: each key's range
    number by Spark ML's ``Bucketizer`` (a binary search over the bounds, in the JVM), the bits interleaved
    by shifts, the output file by comparing Z with the file bounds -- so the rows do not travel to Python
    and back before the shuffle. Same numbers as the task: a key's range counts the bounds strictly below
    it (the splits are the bounds' next doubles up), nulls rank first and NaN last."""
    from pyspark.ml.feature import Bucketizer
    from pyspark.sql import functions as F

    inf = float("inf")
    frame = keyed
    for k in spec.keys:
        c = F.col(k)
        frame = frame.withColumn(k, F.coalesce(F.when(F.isnan(c), F.lit(inf)).otherwise(c), F.lit(-inf)))
    bounds = spec.bounds.get(0) or tuple(np.array([], dtype=np.float64) for _ in spec.keys)
    ids: list[Any] = []
    bucketed_in, bucketed_out, splits = [], [], []
    for i, (k, edges) in enumerate(zip(spec.keys, bounds, strict=True)):
        up = np.nextafter(np.asarray(edges, dtype=np.float64), inf)
        up = up[np.isfinite(up)]
        if not up.size:
            ids.append(F.lit(0).cast("long"))
            continue
        out = f"{_KEY}range{i}"
        bucketed_in.append(k)
        bucketed_out.append(out)
        splits.append([-inf, *up.tolist(), inf])
        ids.append(F.col(out).cast("long"))
    if bucketed_in:
        frame = Bucketizer(splitsArray=splits, inputCols=bucketed_in, outputCols=bucketed_out).transform(frame)
    n = len(ids)
    z = None
    for shift in range(spec.bits - 1, -1, -1):
        for j, idc in enumerate(ids):
            bit = F.shiftleft(F.shiftright(idc, shift).bitwiseAND(F.lit(1)), shift * n + (n - 1 - j))
            z = bit if z is None else z.bitwiseOR(bit)
    assert z is not None
    file_edges = [int(e) for e in spec.z_bounds.get(0, np.array([], dtype=np.int64))]
    local: Any = None  # the number of file bounds at or below z (the bounds are sorted)
    for e_i, edge in enumerate(file_edges):
        when = (F.col(_Z) < F.lit(edge), F.lit(e_i))
        local = F.when(*when) if local is None else local.when(*when)
    local = F.lit(len(file_edges)) if local is None else local.otherwise(F.lit(len(file_edges)))
    task = F.least(local, F.lit(spec.files[0] - 1)).cast("long") + F.lit(spec.offsets[0])
    keys = F.array(*[F.lit(t) for t in spec.task_keys or (0,)])
    frame = frame.select(*[F.col(quoted(c)) for c in kept], z.cast("long").alias(_Z))
    frame = frame.select(*[F.col(quoted(c)) for c in kept], task.alias(BIN), F.col(_Z))
    return frame.select(*[F.col(quoted(c)) for c in kept], F.col(BIN), F.col(_Z),
                        F.element_at(keys, (F.col(BIN) + 1).cast("int")).cast("long").alias(_TASK))


def _edges(bounds: np.ndarray) -> np.ndarray:
    """Range bounds as the tasks use them: distinct finite values, sorted. (A key's range is the number of
    bounds below it; an infinite or NaN bound never separates two finite keys, a repeated one adds nothing.)"""
    return np.unique(bounds[np.isfinite(bounds)])


def _sorted_quantiles(values: np.ndarray, probs: Sequence[float]) -> np.ndarray:
    """The values at the given quantiles of ``values`` (values that occur in it, NaN ranked last as Spark
    orders it; empty input: no bounds)."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    if not v.size:
        return np.array([], dtype=np.float64)
    idx = np.clip(np.ceil(np.asarray(probs, dtype=np.float64) * v.size).astype(np.int64) - 1, 0, v.size - 1)
    return v[idx]


def _driver_bounds(sample: pa.Table, keys: tuple[str, ...], bits: int, files: Mapping[int, int]
                   ) -> tuple[dict[int, tuple[np.ndarray, ...]], dict[int, np.ndarray]]:
    """Key range bounds and output-file Z bounds per bin from a sample collected to the driver: exact
    quantiles of the sample, the sample's Z-values computed by the tasks' own code."""
    probs = range_probabilities(bits)
    bins = sample.column(BIN).to_numpy(zero_copy_only=False)
    bounds: dict[int, tuple[np.ndarray, ...]] = {}
    for b in np.unique(bins):
        rows = sample.filter(pa.array(bins == b))
        bounds[int(b)] = tuple(
            _edges(_sorted_quantiles(pc.drop_null(rows.column(k)).to_numpy(zero_copy_only=False), probs))
            for k in keys)
    z_bounds: dict[int, np.ndarray] = {}
    if max(files.values(), default=1) > 1 and sample.num_rows:
        zs = pa.Table.from_batches(list(_zorder_task(_ZSpec(keys, bounds, bits), sample.to_batches())))
        zbins = zs.column(BIN).to_numpy(zero_copy_only=False)
        z = zs.column(_Z).to_numpy(zero_copy_only=False)
        for b, n in files.items():
            rows = z[zbins == b]
            if n > 1 and rows.size:
                z_bounds[b] = np.unique(_sorted_quantiles(rows, [k / n for k in range(1, n)]).astype(np.int64))
    return bounds, z_bounds


def _spark_bounds(sample: DataFrame, keys: tuple[str, ...], bits: int, files: Mapping[int, int], table: str
                  ) -> tuple[dict[int, tuple[np.ndarray, ...]], dict[int, np.ndarray]]:
    """The same bounds from a sample too large for the driver: two Spark aggregation passes (approximate
    quantiles of the keys, then of the sample's Z-values)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStruct

    probs = range_probabilities(bits)
    quantiles = sample.groupBy(BIN).agg(*[F.percentile_approx(k, probs, _QUANTILE_ACCURACY).alias(k) for k in keys])
    try:
        collected = quantiles.collect()
    except Exception as exc:
        raise task_error(exc, table) from None
    bounds = {
        int(r[BIN]): tuple(_edges(np.array([v for v in (r[k] or []) if v is not None], dtype=np.float64))
                            for k in keys)
        for r in collected
    }
    z_bounds: dict[int, np.ndarray] = {}
    most = max(files.values())
    if most > 1:
        grid = max(1024, 4 * most)
        sampled_z = map_in_arrow(
            sample, functools.partial(_zorder_task, _ZSpec(keys, bounds, bits)),
            SparkStruct([SparkField(BIN, LongType(), False), SparkField(_Z, LongType(), False)]),
        )
        agg = sampled_z.groupBy(BIN).agg(
            F.percentile_approx(_Z, [k / grid for k in range(1, grid)], _QUANTILE_ACCURACY).alias(_Z))
        try:
            z_rows = agg.collect()
        except Exception as exc:
            raise task_error(exc, table) from None
        for r in z_rows:
            b, qs = int(r[BIN]), [v for v in (r[_Z] or []) if v is not None]
            if files.get(b, 1) > 1 and qs:
                picks = [min(len(qs) - 1, round(k * grid / files[b]) - 1) for k in range(1, files[b])]
                z_bounds[b] = np.unique(np.array([qs[i] for i in picks], dtype=np.int64))
    return bounds, z_bounds
