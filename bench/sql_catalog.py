"""SQL over a catalog Delta table against the same queries through ``spark.read.format("delta").load(path)``,
and the cost of deltalog's SQL front end per statement.

    python bench/sql_catalog.py [--rows 4000000] [--files 32] [--repeat 5] [--quick] [--results-dir DIR]

A managed catalog table (``saveAsTable``) of ``--rows`` rows -- ``id``, ``k = id % 8`` (the partition
column) and ``x``, a uniform random integer -- is queried three ways, each as SQL on the catalog name
(``spark.sql``, through the front end) and as the DataFrame equivalent on
``spark.read.format("delta").load(path)``: an aggregate over the whole table, a count of one partition, a
sum over a narrow ``id`` range (files skipped by their statistics). Both sides alternate, after a warm-up.

The front end's cost is timed without running queries: ``spark.sql(text)`` returns a planned DataFrame, so
its time through deltalog's front end minus Spark's own ``sql`` (for statements without Delta tables: a
literal ``SELECT`` and a query over a parquet catalog table), or minus the DataFrame it builds by hand (for
the Delta query: the catalog lookup, the parse and the rewrite) is what the front end adds.

Saves two :class:`harness.Result` s: ``sql-select`` (the three queries, sum of medians; target 1.05x) and
``sql-frontend`` (statement planning through the front end against Spark's own; absolute limit 20 ms
added per statement). ``bench/run.py`` runs it in full runs only.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed
from harness import Result, save


def _timed_plans(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of ``fn`` (a statement planned, not run) over ``repeat`` rounds of 10 calls."""
    fn()
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(10):
            fn()
        rounds.append((time.perf_counter() - t0) / 10)
    return statistics.median(rounds)


def main(argv: list[str] | None = None) -> int:
    args, rows, nfiles, repeat = harness.sized_args(
        __doc__, argv, rows=(4_000_000, 100_000), files=(32, 4), repeat=(5, 1))
    from pyspark.sql import functions as F

    from deltalog.spark.catalog.entries import lookup
    from deltalog.spark.common.statements import original_sql

    args.data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sql-", dir=args.data_dir))
    spark = harness.spark_session("deltalog-sql-bench", **{"spark.sql.warehouse.dir": str(work / "warehouse")})
    extra: dict[str, Any] = {}
    try:
        df = spark.range(0, rows, numPartitions=nfiles).select(
            "id", (F.col("id") % 8).alias("k"), (F.rand(7) * 1_000_000).cast("long").alias("x"))
        df.write.format("delta").partitionBy("k").saveAsTable("events")
        spark.range(1000).write.format("parquet").saveAsTable("plain")
        entry = lookup(spark, "events")
        assert entry is not None
        path = entry.location
        lo = rows // 3
        queries: list[tuple[str, str, Callable[[Any], Any]]] = [
            ("aggregate", "SELECT k, count(*) AS n, sum(x) AS s FROM events GROUP BY k ORDER BY k",
             lambda d: d.groupBy("k").agg(F.count("*").alias("n"), F.sum("x").alias("s")).orderBy("k")),
            ("one partition", "SELECT count(*) FROM events WHERE k = 3",
             lambda d: d.where("k = 3").agg(F.count("*"))),
            ("id range", f"SELECT sum(x) FROM events WHERE id BETWEEN {lo} AND {lo + 1000}",
             lambda d: d.where(f"id BETWEEN {lo} AND {lo + 1000}").agg(F.sum("x"))),
        ]
        sql_runs: list[float] = []
        path_runs: list[float] = []
        lines = []
        for name, text, frame in queries:
            def by_sql(text: str = text) -> list[Any]:
                return [tuple(r) for r in spark.sql(text).collect()]

            def by_path(frame: Callable[[Any], Any] = frame) -> list[Any]:
                return [tuple(r) for r in frame(spark.read.format("delta").load(path)).collect()]

            s_times, s_rows, p_times, p_rows = harness.time_interleaved(by_sql, by_path, repeat=repeat)
            if s_rows != p_rows:
                raise SystemExit(f"{name}: SQL returned {s_rows[:3]} but the path read {p_rows[:3]}")
            sm, pm = statistics.median(s_times), statistics.median(p_times)
            sql_runs.append(sm)
            path_runs.append(pm)
            extra[f"{name}: sql s"] = round(sm, 4)
            extra[f"{name}: path s"] = round(pm, 4)
            lines.append(f"{name:<14} {sm:>9.3f} {pm:>9.3f} {sm / pm:>6.2f}")

        raw = original_sql(spark)
        plan_repeat = max(3, repeat)
        overhead: dict[str, float] = {}
        plain_pairs = [("SELECT 1", "SELECT 1 AS one"), ("parquet table", "SELECT count(*) FROM plain WHERE id > 5")]
        routed_total = raw_total = 0.0
        for label, text in plain_pairs:
            routed = _timed_plans(lambda text=text: spark.sql(text), plan_repeat)
            own = _timed_plans(lambda text=text: raw(text), plan_repeat)
            overhead[label] = (routed - own) * 1000
            routed_total += routed
            raw_total += own
        delta_text = "SELECT count(*) FROM events WHERE k = 3"
        routed = _timed_plans(lambda: spark.sql(delta_text), plan_repeat)
        own = _timed_plans(lambda: spark.read.format("delta").load(path).where("k = 3").agg(F.count("*")),
                           plan_repeat)
        overhead["delta table"] = (routed - own) * 1000
        routed_total += routed
        raw_total += own
        for label, ms in overhead.items():
            extra[f"frontend ms: {label}"] = round(ms, 2)
        extra["frontend_overhead_ms"] = round(max(overhead.values()), 2)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nSQL on a catalog table vs spark.read.format('delta').load(path): {rows:,} rows, {nfiles} tasks")
    print(f"{'query':<14} {'sql s':>9} {'path s':>9} {'ratio':>6}")
    for line in lines:
        print(line)
    print("front end, ms added per statement: " + ", ".join(f"{k} {v:.1f}" for k, v in overhead.items()))
    params = {"rows": rows, "files": nfiles, "repeat": repeat, "master": "local[2]"}
    save(Result(
        workload="sql-select",
        title=f"3 SQL queries on a catalog Delta table, {rows:,} rows",
        deltalog_median=sum(sql_runs), anchor_median=sum(path_runs), target=1.05,
        anchor='the same queries on spark.read.format("delta").load(path)',
        deltalog_runs=sql_runs, anchor_runs=path_runs, params=params,
        extra={k: v for k, v in extra.items() if not k.startswith("frontend")}, quick=args.quick,
    ), harness.results_dir_for(args))
    save(Result(
        workload="sql-frontend",
        title="statement planning through deltalog's SQL front end (3 statements)",
        deltalog_median=routed_total, anchor_median=raw_total, target=float("inf"),
        anchor="Spark's own sql() / the DataFrame built by hand",
        params=params, extra={k: v for k, v in extra.items() if k.startswith("frontend")},
        limits={"frontend_overhead_ms": 20.0}, quick=args.quick,
    ), harness.results_dir_for(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
