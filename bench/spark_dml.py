"""Spark MERGE, DELETE / UPDATE and OPTIMIZE against hand-written Spark jobs and delta-rs (issue 15).

    python bench/spark_dml.py [--only merge merge-pruned dml optimize] [--large] [--repeat 3] [--quick]
                               [--results-dir DIR]

Every deltalog command runs on a table written once by deltalog and is undone between runs by a log-only
``RESTORE`` to version 0 (not timed), so each run does the same work; deltalog and its Spark anchor
alternate after a warm-up each. delta-rs runs in a child process (``bench/deltars_ops.py``) on a fresh
copy of the same table per run.

* **merge** -- upsert of ``S`` source rows (half matching target ids, half new) into a ``T``-row
  single-file table (``id``, ``v`` double, ``s`` string): 500k into 5M (quick 2k into 20k; ``--large``
  adds 5M into 50M): ``DeltaTable.merge(...).whenMatchedUpdateAll().whenNotMatchedInsertAll()`` against
  the same result written by hand (full outer join on ``id`` + parquet write), and against delta-rs's
  ``merge`` (``when_matched_update_all().when_not_matched_insert_all()``);
* **merge, pruned** -- the same upsert of 10k keys (half new) that all fall in the last of the 40 key-ordered files
  of a 10M-row table (quick 200 into 20k / 8 files), against a MERGE that rewrites every file (the hand-written
  full outer join of the whole table with the source + parquet write) and against deltalog's MERGE without
  the pruning by the source's keys (which joins every file with the source, rewriting only the touched one);
* **dml** -- DELETE and UPDATE (``v = v + 1``) of the 1% of rows with ``id % 100 = 7`` (in every file) of a
  10M-row, 16-file table (quick 20k / 4), copy-on-write and with deletion vectors, against the hand-written
  rewrite (read the files, filter / ``when`` the rows, write parquet);
* **optimize** -- a 4M-row, 32-file table (quick 20k / 8) of random ``x``, ``y``: ``OPTIMIZE`` compaction
  and ``ZORDER BY (x, y)`` against delta-rs's ``optimize.compact()`` / ``optimize.z_order(["x", "y"])`` on
  the same table, and Z-order against Spark's ``repartitionByRange(32, x, y)`` + ``sortWithinPartitions``
  + parquet write of the same rows.

Saves ``spark-merge`` (anchor: hand-written; target 1.3), ``spark-merge-deltars`` (reported),
``spark-merge-large`` / ``-large-deltars`` with ``--large``, ``spark-merge-pruned`` (target 0.3),
``spark-merge-pruned-unpruned`` (reported), ``spark-delete-cow`` / ``spark-update-cow``
(target 1.2), ``spark-delete-dv`` / ``spark-update-dv`` (reported), ``spark-optimize-compact-deltars``,
``spark-zorder-deltars`` (reported) and ``spark-zorder-sortwrite`` (target 1.5). Full runs only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed
from harness import Result, save

HERE = Path(__file__).resolve().parent
INF = float("inf")


def _deltars(op: str, table: Path, *args: str) -> float:
    out = harness.run_child([str(HERE / "deltars_ops.py"), op, str(table), *args], timeout=3600)
    return float(out["seconds"])


def _copy(src: Path, dst: Path) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


class Bench:
    """One Spark session and the options; each ``run_*`` saves its results."""

    def __init__(self, args: argparse.Namespace, work: Path, spark: Any = None) -> None:
        self.args, self.work = args, work
        self.quick = bool(args.quick)
        self.repeat = args.repeat or (1 if self.quick else 3)
        self.results_dir = harness.results_dir_for(args)
        self.results_dir.mkdir(parents=True, exist_ok=True)
        self.own_session = spark is None
        self.spark = spark if spark is not None else harness.spark_session(
            "deltalog-spark-dml-bench", **{"spark.driver.memory": "4g"})

    def save(self, workload: str, title: str, ours: list[float], anchor: list[float], anchor_name: str,
             target: float, **params: Any) -> None:
        r = Result(workload=workload, title=title, deltalog_median=harness.median(ours),
                   anchor_median=harness.median(anchor), target=target, anchor=anchor_name, deltalog_runs=ours,
                   anchor_runs=anchor, params={**params, "master": "local[2]"}, quick=self.quick)
        save(r, self.results_dir)

    def alternate(self, ours: Callable[[], Any], anchor: Callable[[], Any], undo: Callable[[], Any]) -> tuple[
            list[float], list[float]]:
        """Timed runs of ``ours`` (each after an untimed ``undo``) and ``anchor``, alternating after a warm-up
        (none with ``--quick``, whose numbers only show that the workload runs)."""
        import time

        if not self.quick:
            undo()
            ours()
            anchor()
        mine: list[float] = []
        theirs: list[float] = []
        for i in range(self.repeat):
            for side in ((0, 1) if i % 2 == 0 else (1, 0)):
                if side == 0:
                    undo()
                    t0 = time.perf_counter()
                    ours()
                    mine.append(time.perf_counter() - t0)
                else:
                    t0 = time.perf_counter()
                    anchor()
                    theirs.append(time.perf_counter() - t0)
        return mine, theirs

    # ------------------------------------------------------------------------------------------- MERGE

    def run_merge(self, target_rows: int, source_rows: int, suffix: str) -> None:
        from pyspark.sql import functions as F

        from deltalog.spark import DeltaTable, write

        spark = self.spark
        path = self.work / f"merge-target{suffix}"
        cols = lambda df: df.select(  # noqa: E731
            "id", (F.col("id") * 0.5).alias("v"), F.concat(F.lit("s"), (F.col("id") % 1000).cast("string")).alias("s"))
        write(cols(spark.range(0, target_rows, numPartitions=1)), str(path))
        half = source_rows // 2
        src_path = self.work / f"merge-source{suffix}.parquet"
        source_df = cols(spark.range(0, half, numPartitions=1).select((F.col("id") * 2).alias("id"))
                         .unionByName(spark.range(target_rows, target_rows + half, numPartitions=1)))
        source_df = source_df.withColumn("v", F.col("v") + 1)
        source_df.coalesce(1).write.mode("overwrite").parquet(str(src_path))
        source = spark.read.parquet(str(src_path))
        table = DeltaTable.forPath(spark, str(path))
        out = self.work / f"merge-hand{suffix}"

        def ours() -> None:
            (table.alias("t").merge(source.alias("s"), "t.id = s.id")
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

        first_files = [str(p) for p in path.glob("*.parquet")]

        def hand() -> None:  # the same result from the original file
            t = spark.read.parquet(*first_files).alias("t")
            joined = t.join(source.alias("s"), F.col("t.id") == F.col("s.id"), "full_outer")
            pick = lambda c: F.when(F.col("s.id").isNotNull(), F.col(f"s.{c}")).otherwise(F.col(f"t.{c}"))  # noqa: E731
            joined.select(*[pick(c).alias(c) for c in ("id", "v", "s")]).write.mode("overwrite").parquet(str(out))

        mine, theirs = self.alternate(ours, hand, lambda: table.restoreToVersion(0))
        rows = spark.read.parquet(str(out)).count()
        table.restoreToVersion(0)
        ours()
        if table.toDF().count() != rows:
            raise SystemExit(f"MERGE wrote {table.toDF().count()} rows, the hand-written job {rows}")
        size = f"{source_rows:,} into {target_rows:,} rows"
        self.save(f"spark-merge{suffix}", f"Spark MERGE upsert, {size} (half matched)", mine, theirs,
                  "hand-written Spark full outer join + write", 1.3, target_rows=target_rows, source_rows=source_rows)
        v0 = self.work / f"merge-v0{suffix}"
        shutil.rmtree(v0, ignore_errors=True)
        deltars: list[float] = []
        for _ in range(max(1, self.repeat - 1)):
            table.restoreToVersion(0)
            _copy(path, v0)
            deltars.append(_deltars("merge", v0, str(next(src_path.glob("*.parquet")))))
        self.save(f"spark-merge{suffix}-deltars", f"Spark MERGE upsert, {size}, against delta-rs", mine, deltars,
                  "delta-rs merge", INF, target_rows=target_rows, source_rows=source_rows)

    def run_merge_pruned(self, target_rows: int, files: int, source_rows: int) -> None:
        """MERGE of ``source_rows`` keys that all fall in the last of ``files`` key-ordered files: with the
        pruning by the source's keys against the same MERGE without it (which reads every file)."""
        from pyspark.sql import functions as F

        from deltalog.spark import DeltaTable, write
        from deltalog.spark.dml import merge_keys

        spark = self.spark
        path = self.work / "merge-pruned"
        cols = lambda df: df.select("id", (F.col("id") * 0.5).alias("v"))  # noqa: E731
        write(cols(spark.range(0, target_rows, numPartitions=files)), str(path))  # one key range per file
        half = source_rows // 2
        src_path = self.work / "merge-pruned-source.parquet"
        cols(spark.range(target_rows - half, target_rows + half, numPartitions=1)).withColumn(
            "v", F.col("v") + 1).write.mode("overwrite").parquet(str(src_path))
        source = spark.read.parquet(str(src_path))
        table = DeltaTable.forPath(spark, str(path))
        pairs = merge_keys.key_pairs

        def run(prune: bool) -> Any:
            merge_keys.key_pairs = pairs if prune else (lambda *a, **k: [])  # type: ignore[assignment]
            try:
                return (table.alias("t").merge(source.alias("s"), "t.id = s.id")
                        .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
            finally:
                merge_keys.key_pairs = pairs  # type: ignore[assignment]

        import time

        times: dict[bool, list[float]] = {True: [], False: []}
        for i in range(self.repeat + (0 if self.quick else 1)):  # a warm-up of each first (full runs)
            for prune in ((True, False) if i % 2 == 0 else (False, True)):
                table.restoreToVersion(0)
                t0 = time.perf_counter()
                run(prune)
                times[prune].append(time.perf_counter() - t0)
        skip = 0 if self.quick else 1
        mine, theirs = times[True][skip:], times[False][skip:]
        first_files = [str(p) for p in path.glob("*.parquet")]
        out = self.work / "merge-pruned-hand"

        def rewrite_all() -> None:  # what a MERGE that rewrites every file does: the whole table joined and written
            t = spark.read.parquet(*first_files).alias("t")
            joined = t.join(source.alias("s"), F.col("t.id") == F.col("s.id"), "full_outer")
            pick = lambda c: F.when(F.col("s.id").isNotNull(), F.col(f"s.{c}")).otherwise(F.col(f"t.{c}"))  # noqa: E731
            joined.select(*[pick(c).alias(c) for c in ("id", "v")]).write.mode("overwrite").parquet(str(out))

        hand: list[float] = []
        for _ in range(self.repeat + skip):
            t0 = time.perf_counter()
            rewrite_all()
            hand.append(time.perf_counter() - t0)
        hand = hand[skip:]
        table.restoreToVersion(0)
        run(True)
        removed = table.history(1).first()["operationMetrics"]["numTargetFilesRemoved"]
        if removed != "1" or table.toDF().count() != target_rows + half:
            raise SystemExit(f"pruned MERGE removed {removed} files and left {table.toDF().count()} rows")
        table.restoreToVersion(0)
        what = f"{source_rows:,} keys in the last of {files} key-ordered files ({target_rows:,} rows)"
        self.save("spark-merge-pruned", f"Spark MERGE upsert, {what}", mine, hand,
                  "hand-written Spark full outer join + write of every file", 0.3,
                  target_rows=target_rows, files=files, source_rows=source_rows)
        self.save("spark-merge-pruned-unpruned", f"Spark MERGE upsert, {what}, against deltalog's MERGE without the "
                  "pruning", mine, theirs, "the same MERGE without pruning by the source's keys (rewrites the "
                  "touched file only)", INF, target_rows=target_rows, files=files, source_rows=source_rows)

    # ------------------------------------------------------------------------------------ DELETE / UPDATE

    def run_dml(self) -> None:
        from pyspark.sql import functions as F

        from deltalog.spark import DeltaTable, write

        spark = self.spark
        rows, nfiles = (20_000, 4) if self.quick else (10_000_000, 16)
        df = spark.range(0, rows, numPartitions=nfiles).select(
            "id", (F.col("id") % 97).cast("int").alias("k"), (F.col("id") * 0.5).alias("v"),
            F.concat(F.lit("s"), (F.col("id") % 1000).cast("string")).alias("s"))
        cond = "id % 100 = 7"
        for kind, props in (("cow", {}), ("dv", {"delta.enableDeletionVectors": "true"})):
            path = self.work / f"dml-{kind}"
            write(df, str(path), **props)
            files = [str(p) for p in path.glob("*.parquet")]
            table = DeltaTable.forPath(spark, str(path))
            out = self.work / f"dml-hand-{kind}"
            jobs = {
                "delete": (lambda t=table: t.delete(cond),
                           lambda f=files, o=out: spark.read.parquet(*f).filter(f"NOT ({cond})")
                           .write.mode("overwrite").parquet(str(o))),
                "update": (lambda t=table: t.update(cond, {"v": "v + 1"}),
                           lambda f=files, o=out: spark.read.parquet(*f)
                           .withColumn("v", F.when(F.expr(cond), F.col("v") + 1).otherwise(F.col("v")))
                           .write.mode("overwrite").parquet(str(o))),
            }
            for op, (ours, hand) in jobs.items():
                mine, theirs = self.alternate(ours, hand, lambda t=table: t.restoreToVersion(0))
                title = (f"Spark {op.upper()} of 1% of {rows:,} rows ({nfiles} files), "
                         + ("copy-on-write" if kind == "cow" else "deletion vectors"))
                self.save(f"spark-{op}-{kind}", title, mine, theirs, "hand-written Spark rewrite (read, "
                          f"{'filter' if op == 'delete' else 'when'}, write)", 1.2 if kind == "cow" else INF,
                          rows=rows, files=nfiles, condition=cond)

    # ------------------------------------------------------------------------------------------ OPTIMIZE

    def run_optimize(self) -> None:
        import time

        from pyspark.sql import functions as F

        import deltalog
        from deltalog.spark import write
        from deltalog.spark.layout.optimize import optimize

        spark = self.spark
        rows, nfiles = (20_000, 8) if self.quick else (4_000_000, 32)
        path = self.work / "opt"
        write(spark.range(0, rows, numPartitions=nfiles).select(
            "id", (F.rand(11) * 1_000_000).cast("long").alias("x"),
            (F.rand(17) * 1_000_000).cast("long").alias("y")), str(path))
        size = sum(int(s) for s in deltalog.Table(str(path)).snapshot().add_files().column("size").to_pylist())
        files = [str(p) for p in path.glob("*.parquet")]
        out = self.work / "opt-sort"

        def restore() -> None:
            deltalog.Table(str(path)).restore(version=0)

        def timed(fn: Callable[[], Any]) -> float:
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0

        compact: list[float] = []
        zorder: list[float] = []
        sort_write: list[float] = []
        rs_compact: list[float] = []
        rs_zorder: list[float] = []

        def sort() -> None:
            (spark.read.parquet(*files).repartitionByRange(nfiles, "x", "y").sortWithinPartitions("x", "y")
             .write.mode("overwrite").parquet(str(out)))

        if not self.quick:  # warm-up
            sort()
            restore()
            optimize(spark, str(path), zorder_by=["x", "y"], max_file_size=max(1, size // nfiles))
        copy = self.work / "opt-deltars"
        for _ in range(self.repeat):
            restore()
            compact.append(timed(lambda: optimize(spark, str(path))))
            restore()
            zorder.append(timed(lambda: optimize(spark, str(path), zorder_by=["x", "y"],
                                                 max_file_size=max(1, size // nfiles))))
            sort_write.append(timed(sort))
            restore()
            _copy(path, copy)
            rs_compact.append(_deltars("compact", copy))
            _copy(path, copy)
            rs_zorder.append(_deltars("zorder", copy, "x", "y"))
        what = f"{rows:,} rows / {nfiles} files"
        self.save("spark-optimize-compact-deltars", f"OPTIMIZE compaction, {what}, against delta-rs", compact,
                  rs_compact, "delta-rs optimize.compact()", INF, rows=rows, files=nfiles)
        self.save("spark-zorder-deltars", f"OPTIMIZE ZORDER BY (x, y), {what}, against delta-rs", zorder,
                  rs_zorder, "delta-rs optimize.z_order()", INF, rows=rows, files=nfiles)
        self.save("spark-zorder-sortwrite", f"OPTIMIZE ZORDER BY (x, y), {what}", zorder, sort_write,
                  "Spark repartitionByRange + sortWithinPartitions + write", 1.5, rows=rows, files=nfiles)


def main(argv: list[str] | None = None, *, spark: Any = None) -> int:
    """Run the workloads named by ``argv`` (see the module's docstring); ``spark`` is a session to use
    (and leave running) instead of a new one, as the suite's smoke test does.

    Example:
        >>> main(["--quick", "--only", "dml"])                                  # doctest: +SKIP
        0
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(parser)
    parser.add_argument("--only", nargs="+", choices=("merge", "merge-pruned", "dml", "optimize"), default=None)
    parser.add_argument("--large", action="store_true", help="also MERGE 5M source rows into 50M")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per side (default 3, quick 1)")
    args = parser.parse_args(argv)
    parts = args.only or ["merge", "dml", "optimize"]
    args.data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="spark-dml-", dir=args.data_dir))
    bench = Bench(args, work, spark)
    try:
        if "merge" in parts:
            bench.run_merge(*((20_000, 2_000) if bench.quick else (5_000_000, 500_000)), "")
            if args.large and not bench.quick:
                bench.run_merge(50_000_000, 5_000_000, "-large")
        if "merge" in parts or "merge-pruned" in parts:
            bench.run_merge_pruned(*((20_000, 8, 200) if bench.quick else (10_000_000, 40, 10_000)))
        if "dml" in parts:
            bench.run_dml()
        if "optimize" in parts:
            bench.run_optimize()
    finally:
        if bench.own_session:
            bench.spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"done": parts}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
