"""Spark engine I/O against plain Spark parquet on the same data (medians of 3, ratios printed).

    python bench/spark_io.py [--rows 10000000] [--repeat 3] [--quick]

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
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("deltalog") is None:  # running from a checkout without an install
    sys.path.insert(0, str(ROOT / "src"))


def _session() -> Any:
    import warnings

    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    src = str(ROOT / "src")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
    from pyspark.sql import SparkSession

    from deltalog.spark import configure, register

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("deltalog-spark-io-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return register(spark)


def _frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    return spark.range(0, rows, numPartitions=8).select(
        F.col("id"),
        (F.col("id") % 50).cast("int").alias("k"),
        (F.col("id") * 0.5).alias("x"),
        F.concat(F.lit("s"), (F.col("id") % 1000).cast("string")).alias("s"),
    )


def _pair(base: Callable[[int], object], ours: Callable[[int], object], repeat: int) -> tuple[float, float]:
    """Medians of ``repeat`` runs of each, interleaved (base, ours, ours, base, ...) after one warm-up each,
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
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1M rows, one repeat")
    args = parser.parse_args()
    rows, repeat = (1_000_000, 1) if args.quick else (args.rows, args.repeat)

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

        results: list[tuple[str, float, float]] = []
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

        scans = max(repeat, 5)  # scans are short: more runs for a steadier median
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
    for name, base, mine in results:
        print(f"{name:<40} {base:>16.2f} {mine:>11.2f} {mine / base:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
