"""Spark engine I/O against plain Spark parquet on the same data (medians of 3, ratios printed).

    python bench/spark_io.py [--rows 10000000] [--repeat 3] [--quick] [--results-dir DIR]

``bench/run.py`` runs it in full runs (never with ``--quick``, so the CI smoke test starts no JVM); it saves
one :class:`harness.Result` per workload (``spark-write``, ``spark-write-partitioned``, ``spark-scan``,
``spark-scan-partitioned``), anchored on the same job through plain Spark parquet.

Workloads (the same generated DataFrame, ``spark.range`` + generated columns, 8 Spark partitions):

* write, unpartitioned: ``df.write.parquet`` vs ``deltalog.spark.write``;
* write, partitioned by a 50-value column: ``df.write.partitionBy("k").parquet`` vs ours;
* scan, sum + count: ``spark.read.parquet(dir)`` vs ``deltalog.spark.read`` of the same table,
  unpartitioned and partitioned (partition values from the verified Hive directory layout).

Baseline and deltalog runs alternate (after one warm-up each), so load from other processes on the
machine affects both sides alike; the ratio is of the two medians. No assertions: the numbers are for
reading. Each write goes to a fresh directory.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed
from harness import Result, save

ROOT = Path(__file__).resolve().parent.parent

#: (workload key, title, target ratio): issue 7 asks for <= 1.05 on append and scan; a partitioned append
#: is anchored on Spark's own ``partitionBy`` write, which deltalog must not be slower than.
WORKLOADS = [
    ("spark-write", "Spark append, unpartitioned", 1.05),
    ("spark-write-partitioned", "Spark append, partitionBy k (50 values)", 1.0),
    ("spark-scan", "Spark full scan + sum/count, unpartitioned", 1.05),
    ("spark-scan-partitioned", "Spark full scan + sum by k, partitioned", 1.05),
]


def _session() -> Any:
    return harness.spark_session("deltalog-spark-io-bench")


def _frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    return spark.range(0, rows, numPartitions=8).select(
        F.col("id"),
        (F.col("id") % 50).cast("int").alias("k"),
        (F.col("id") * 0.5).alias("x"),
        F.concat(F.lit("s"), (F.col("id") % 1000).cast("string")).alias("s"),
    )


def _pair(
    base: Callable[[int], object], ours: Callable[[int], object], repeat: int
) -> tuple[list[float], list[float]]:
    """``repeat`` timed runs of each, interleaved (base, ours, ours, base, ...) after one warm-up each,
    so that load from other processes and JIT warm-up hit both sides alike."""
    base(-1)  # warm-up (JIT, Python workers)
    ours(-1)
    times: dict[int, list[float]] = {0: [], 1: []}
    for i in range(repeat):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for side in order:
            fn = base if side == 0 else ours
            start = time.perf_counter()
            fn(i)
            times[side].append(time.perf_counter() - start)
    return times[0], times[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(parser)
    parser.add_argument("--rows", type=int, default=None, help="rows generated (default 10M, quick: 1M)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per side (default 5, scans 9; quick: 1)")
    args = parser.parse_args(argv)
    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    repeat = args.repeat or (1 if args.quick else 5)

    from pyspark.sql import functions as F

    from deltalog.spark import read, write

    spark = _session()
    df = _frame(spark, rows)
    work = Path(tempfile.mkdtemp(prefix="spark-io-"))
    try:

        def target(name: str, i: int) -> str:
            path = work / f"{name}-{i}"
            shutil.rmtree(path, ignore_errors=True)
            return str(path)

        results: list[tuple[str, list[float], list[float]]] = []
        results.append((
            "write, unpartitioned",
            *_pair(lambda i: df.write.mode("overwrite").parquet(target("pq", i)),
                   lambda i: write(df, target("delta", i)), repeat),
        ))
        results.append((
            "write, partitionBy k (50 values)",
            *_pair(lambda i: df.write.mode("overwrite").partitionBy("k").parquet(target("pqp", i)),
                   lambda i: write(df, target("deltap", i), partitionBy=["k"]), repeat),
        ))

        def scan(frame: Any) -> None:
            frame.agg(F.sum("x"), F.count(F.lit(1))).collect()

        scans = repeat if args.quick else max(repeat, 9)  # scans are short (about 1 s): more runs
        results.append((
            "scan sum+count, unpartitioned",
            *_pair(lambda i: scan(spark.read.parquet(str(work / "pq-0"))),
                   lambda i: scan(read(spark, str(work / "delta-0"))), scans),
        ))
        results.append((
            "scan sum(x)+count by k, partitioned",
            *_pair(lambda i: spark.read.parquet(str(work / "pqp-0")).groupBy("k").agg(F.sum("x")).collect(),
                   lambda i: read(spark, str(work / "deltap-0")).groupBy("k").agg(F.sum("x")).collect(), scans),
        ))
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nSpark engine I/O, {rows:,} rows, local[2], median of {repeat}")
    print(f"{'workload':<40} {'spark parquet s':>16} {'deltalog s':>11} {'ratio':>7}")
    out_dir = harness.results_dir_for(args)
    for (name, base, mine), (key, title, target) in zip(results, WORKLOADS):
        b, m = statistics.median(base), statistics.median(mine)
        print(f"{name:<40} {b:>16.2f} {m:>11.2f} {m / b:>7.2f}")
        result = Result(
            workload=key,
            title=f"{title}, {rows:,} rows",
            deltalog_median=m,
            anchor_median=b,
            target=target,
            anchor="plain Spark parquet",
            deltalog_runs=mine,
            anchor_runs=base,
            params={"rows": rows, "repeat": repeat, "master": "local[2]", "spark_partitions": 8},
            quick=args.quick,
        )
        save(result, out_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
