"""Selective queries before and after ``OPTIMIZE ... ZORDER BY (x, y)`` on the Spark engine.

    python bench/zorder.py [--rows 4000000] [--files 32] [--repeat 5] [--quick] [--results-dir DIR]

A table of ``--rows`` rows (``id``, and ``x``, ``y`` uniform random integers in [0, 1,000,000)) is written
by Spark as ``--files`` files, then Z-ordered by ``(x, y)`` into about as many files
(``max_file_size`` = table size / ``--files``). Four queries -- a point and a 1% range on ``x``, the
same on ``y`` -- are measured twice over: the fraction of the files the kernel's min/max skipping keeps
(:func:`deltalog.data.filters.prune_files`), and the time of the Spark query
(``deltalog.spark.read(spark, path, where=[...]).count()``). "Before" is the table at the version
before the ``OPTIMIZE`` (time travel: the old files are still there), so before and after runs
alternate, after one warm-up each.

Saves one :class:`harness.Result`, workload ``zorder``: deltalog = the four queries after Z-order
(sum of medians), anchor = the same queries before it; ``extra`` holds the files-read fractions per
query and the time the ``OPTIMIZE`` took. ``bench/run.py`` runs it in full runs only.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed
from harness import Result, save

ROOT = Path(__file__).resolve().parent.parent
DOMAIN = 1_000_000


def queries() -> list[tuple[str, list[tuple[str, str, int]]]]:
    """(name, kernel conditions) of the four measured queries."""
    lo = 421_337
    return [
        ("point x", [("x", "=", lo)]),
        ("point y", [("y", "=", lo)]),
        ("1% range x", [("x", ">=", lo), ("x", "<", lo + DOMAIN // 100)]),
        ("1% range y", [("y", ">=", lo), ("y", "<", lo + DOMAIN // 100)]),
    ]


def files_kept(path: str, version: int | None, conditions: list[tuple[str, str, int]]) -> tuple[int, int]:
    """(files the kernel's skipping keeps, live files) at ``version`` (``None``: latest)."""
    import deltalog
    from deltalog.data.filters import normalize_filter, prune_files

    snap = deltalog.Table(path).snapshot(version)
    conds, _ = normalize_filter(conditions, snap.schema, table=path)
    return int(prune_files(snap, conds).num_rows), int(snap.add_files().num_rows)


def main(argv: list[str] | None = None) -> int:
    args, rows, nfiles, repeat = harness.sized_args(
        __doc__, argv, rows=(4_000_000, 200_000), files=(32, 8), repeat=(5, 1), files_help="files before and after")
    from pyspark.sql import functions as F

    import deltalog
    from deltalog.spark import read, write
    from deltalog.spark.layout.optimize import optimize

    spark = harness.spark_session("deltalog-zorder-bench")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="zorder-", dir=args.data_dir))
    path = str(work / "t")
    try:
        df = spark.range(0, rows, numPartitions=nfiles).select(
            F.col("id"),
            (F.rand(11) * DOMAIN).cast("long").alias("x"),
            (F.rand(17) * DOMAIN).cast("long").alias("y"),
        )
        write(df, path)
        before_version = deltalog.Table(path).latest_version()
        size = sum(int(s) for s in deltalog.Table(path).snapshot().add_files().column("size").to_pylist())
        t0 = time.perf_counter()
        res = optimize(spark, path, zorder_by=["x", "y"], max_file_size=max(1, size // nfiles))
        zorder_s = time.perf_counter() - t0

        extra: dict[str, Any] = {"zorder_seconds": round(zorder_s, 2),
                                 "files_removed": res.metrics["numFilesRemoved"],
                                 "files_added": res.metrics["numFilesAdded"]}
        before_runs: list[float] = []
        after_runs: list[float] = []
        lines = []
        for name, conds in queries():
            kb, nb = files_kept(path, before_version, conds)
            ka, na = files_kept(path, None, conds)

            def run(version: int | None, conds: list[tuple[str, str, int]] = conds) -> int:
                frame = read(spark, path, versionAsOf=version, where=conds)
                return int(frame.count())

            b_times, b_count, a_times, a_count = harness.time_interleaved(
                lambda: run(before_version), lambda: run(None), repeat=repeat
            )
            if a_count != b_count:
                raise SystemExit(f"{name}: {b_count} rows before Z-order but {a_count} after")
            bm, am = statistics.median(b_times), statistics.median(a_times)
            before_runs.append(bm)
            after_runs.append(am)
            extra[f"{name}: files read before"] = round(kb / nb, 4)
            extra[f"{name}: files read after"] = round(ka / na, 4)
            lines.append(f"{name:<12} {kb:>4}/{nb:<4} {kb / nb:>6.1%} {ka:>4}/{na:<4} {ka / na:>6.1%}"
                         f" {bm:>9.3f} {am:>9.3f} {am / bm:>6.2f}  ({a_count} rows)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nZ-order by (x, y): {rows:,} rows, {nfiles} files before; OPTIMIZE took {zorder_s:.1f} s "
          f"({extra['files_removed']} files -> {extra['files_added']})")
    print(f"{'query':<12} {'before':>11} {'':>6} {'after':>11} {'':>6} {'before s':>9} {'after s':>9} {'ratio':>6}")
    for line in lines:
        print(line)
    result = Result(
        workload="zorder",
        title=f"4 selective Spark queries after Z-order (x, y), {rows:,} rows",
        deltalog_median=sum(after_runs),
        anchor_median=sum(before_runs),
        target=1.0,
        anchor="same queries before Z-order",
        deltalog_runs=after_runs,
        anchor_runs=before_runs,
        params={"rows": rows, "files": nfiles, "repeat": repeat, "master": "local[2]"},
        extra=extra,
        quick=args.quick,
    )
    save(result, harness.results_dir_for(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
