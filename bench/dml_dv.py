"""DELETE with deletion vectors against copy-on-write DELETE, on the Spark engine.

    python bench/dml_dv.py [--rows 10000000] [--files 16] [--repeat 3] [--quick] [--results-dir DIR]

Two copies of one table (``id``, ``k``, ``v``, ``s``; ``--rows`` rows in ``--files`` files), one with
``delta.enableDeletionVectors=true``. The measured command is ``DeltaTable.delete("id % 100 = 7")``: 1% of
the rows, spread over every file. With deletion vectors the executors write one bitmap per file and the
data files stay; copy-on-write rewrites every file without the deleted rows. After each timed delete the
table is restored to its first version (a log-only ``RESTORE``), so every run deletes the same rows from
the same files; DV and copy-on-write runs alternate after one warm-up each.

Then the read side of merge-on-read, full scans that materialise every column of every row (Spark's
``noop`` sink), alternating after one warm-up each:

* ``spark-scan-dv-all``: the table with a deletion vector on every file against the copy-on-write table
  holding the same rows (target 1.3x);
* ``spark-scan-dv-one``: the table after the same DELETE limited to the first file's rows (a deletion
  vector on 1 of ``--files`` files) against the same table before it, without deletion vectors (1.1x).

A full-scan count of each table after its delete is recorded as well (``extra``; ``groupBy().count()``, which
Spark runs as a scan, since ``count()`` itself is answered from the log).

* ``spark-count-dv``: ``count()`` of the table with a deletion vector on every file against ``count()`` of the
  copy-on-write table (target 1.1x): both answered from the log (``deltalog.spark.reads.log_answers``); the
  Spark scan that ``count()`` ran before is in ``extra`` (``scan_after_*``).

Saves workloads ``dml-dv`` (deltalog = the DELETE with deletion vectors, anchor = the copy-on-write DELETE
of the same rows) and the two scans. ``bench/run.py`` runs it in full runs only.
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

CONDITION = "id % 100 = 7"


def main(argv: list[str] | None = None) -> int:
    args, rows, nfiles, repeat = harness.sized_args(
        __doc__, argv, rows=(10_000_000, 200_000), files=(16, 4), repeat=(3, 1))

    import deltalog
    from deltalog.spark import DeltaTable, read, write

    spark = harness.spark_session("deltalog-dml-dv-bench")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="dml-dv-", dir=args.data_dir))
    try:
        df = generated_rows(spark, rows, nfiles)
        paths = {"dv": str(work / "dv"), "cow": str(work / "cow")}
        write(df, paths["dv"], **{"delta.enableDeletionVectors": "true"})
        write(df, paths["cow"])
        tables = {k: DeltaTable.forPath(spark, p) for k, p in paths.items()}
        deleted: dict[str, int] = {}
        scans: dict[str, list[float]] = {"dv": [], "cow": []}

        def run(kind: str) -> int:
            table = tables[kind]
            table.restoreToVersion(0)
            table.delete(CONDITION)
            return int(deltalog.Table(paths[kind]).history(limit=1)[0]["operationMetrics"]["numDeletedRows"])

        def timed_scan(kind: str) -> None:
            t0 = time.perf_counter()
            read(spark, paths[kind]).groupBy().count().collect()  # a scan: count() is answered from the log
            scans[kind].append(time.perf_counter() - t0)

        def timed_count(kind: str) -> float:
            t0 = time.perf_counter()
            read(spark, paths[kind]).count()
            return time.perf_counter() - t0

        # warm-up (JIT, Python workers), then alternate; the restore is part of neither timing
        for kind in ("dv", "cow"):
            deleted[kind] = run(kind)
        dv_times: list[float] = []
        cow_times: list[float] = []
        for i in range(repeat):
            for kind in (("dv", "cow") if i % 2 == 0 else ("cow", "dv")):
                tables[kind].restoreToVersion(0)
                t0 = time.perf_counter()
                tables[kind].delete(CONDITION)
                (dv_times if kind == "dv" else cow_times).append(time.perf_counter() - t0)
                timed_scan(kind)
        if deleted["dv"] != deleted["cow"]:
            raise SystemExit(f"deleted rows differ: {deleted}")
        dv_files = deltalog.Table(paths["dv"]).snapshot().add_files()
        with_dv = sum(1 for d in dv_files.column("deletionVector").to_pylist() if d)
        scan_all = _alternate(repeat, warmup=not args.quick, dv=lambda: _full_scan(read(spark, paths["dv"])),
                              cow=lambda: _full_scan(read(spark, paths["cow"])))
        counts = _alternate(repeat, warmup=not args.quick, dv=lambda: timed_count("dv"), cow=lambda: timed_count("cow"))
        if read(spark, paths["dv"]).count() != read(spark, paths["dv"]).groupBy().count().collect()[0][0]:
            raise SystemExit("count() from the log differs from a scan's count")
        tables["dv"].restoreToVersion(0)
        tables["dv"].delete(f"{CONDITION} AND id < {rows // nfiles}")  # the first file's rows only
        one_files = deltalog.Table(paths["dv"]).snapshot().add_files()
        with_dv_one = sum(1 for d in one_files.column("deletionVector").to_pylist() if d)
        if with_dv_one != 1:
            raise SystemExit(f"expected a deletion vector on 1 file, got {with_dv_one}")
        scan_one = _alternate(repeat, warmup=not args.quick, dv=lambda: _full_scan(read(spark, paths["dv"])),
                              cow=lambda: _full_scan(read(spark, paths["dv"], versionAsOf=0)))
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    dv, cow = statistics.median(dv_times), statistics.median(cow_times)
    scan_dv, scan_cow = statistics.median(scans["dv"]), statistics.median(scans["cow"])
    print(f"\nDELETE WHERE {CONDITION} ({deleted['dv']:,} of {rows:,} rows, {nfiles} files), local[2], "
          f"median of {repeat}")
    print(f"  deletion vectors: {dv:7.2f} s   ({with_dv} files got a deletion vector)")
    print(f"  copy-on-write:    {cow:7.2f} s   ratio {dv / cow:.2f}")
    print(f"  full scan after:  {scan_dv:7.2f} s with deletion vectors, {scan_cow:.2f} s copy-on-write")
    extra: dict[str, Any] = {
        "deleted_rows": deleted["dv"],
        "files_with_deletion_vector": with_dv,
        "scan_after_dv_s": round(scan_dv, 3),
        "scan_after_cow_s": round(scan_cow, 3),
    }
    result = Result(
        workload="dml-dv",
        title=f"Spark DELETE of 1% of rows with deletion vectors, {rows:,} rows in {nfiles} files",
        deltalog_median=dv,
        anchor_median=cow,
        target=0.5,
        anchor="copy-on-write DELETE (same rows, same files)",
        deltalog_runs=dv_times,
        anchor_runs=cow_times,
        params={"rows": rows, "files": nfiles, "repeat": repeat, "condition": CONDITION, "master": "local[2]"},
        extra=extra,
        quick=args.quick,
    )
    save(result, harness.results_dir_for(args))
    params = {"rows": rows, "files": nfiles, "repeat": repeat, "condition": CONDITION, "master": "local[2]",
              "scan": "every column of every row (noop sink)"}
    for workload, title, (dv_runs, plain_runs), anchor, target in (
        ("spark-scan-dv-all", f"full scan, deletion vectors on all {nfiles} files (1% deleted), {rows:,} rows",
         scan_all, "same rows after a copy-on-write DELETE", 1.3),
        ("spark-scan-dv-one", f"full scan, a deletion vector on 1 of {nfiles} files, {rows:,} rows",
         scan_one, "same table without deletion vectors", 1.1),
        ("spark-count-dv", f"count(), deletion vectors on all {nfiles} files (1% deleted), {rows:,} rows",
         counts, "count() of the same rows after a copy-on-write DELETE", 1.1),
    ):
        print(f"  {workload}: {statistics.median(dv_runs):.2f} s against {statistics.median(plain_runs):.2f} s")
        save(Result(workload=workload, title=title, deltalog_median=statistics.median(dv_runs),
                    anchor_median=statistics.median(plain_runs), target=target, anchor=anchor,
                    deltalog_runs=dv_runs, anchor_runs=plain_runs, params=params, quick=args.quick),
             harness.results_dir_for(args))
    return 0


def generated_rows(spark: Any, rows: int, nfiles: int) -> Any:
    """The benchmark's rows (``id``, ``k``, ``v``, ``s``) in ``nfiles`` Spark partitions (a file each)."""
    from pyspark.sql import functions as F

    return spark.range(0, rows, numPartitions=nfiles).select(
        F.col("id"),
        (F.col("id") % 97).cast("int").alias("k"),
        (F.rand(3) * 1000).alias("v"),
        F.concat(F.lit("s"), (F.col("id") % 1000).cast("string")).alias("s"),
    )


def _full_scan(df: Any) -> float:
    """Seconds to materialise every column of every row of ``df`` (Spark's ``noop`` sink)."""
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def _alternate(repeat: int, *, dv: Any, cow: Any, warmup: bool = True) -> tuple[list[float], list[float]]:
    """``repeat`` timings of each side after one warm-up each (``warmup``), alternating which goes first."""
    if warmup:
        dv()
        cow()
    a: list[float] = []
    b: list[float] = []
    for i in range(repeat):
        if i % 2 == 0:
            a.append(dv())
            b.append(cow())
        else:
            b.append(cow())
            a.append(dv())
    return a, b


if __name__ == "__main__":
    raise SystemExit(main())
