"""Full scans of a merge-on-read table before and after ``maintain``, against the copy-on-write table.

    python bench/maintain_dv.py [--rows 5000000] [--files 16] [--repeat 3] [--quick] [--results-dir DIR]

Two copies of one table (``id``, ``k``, ``v``, ``s``; ``--rows`` rows in ``--files`` files, ``delta.targetFileSize``
4 MiB so that the files of the default size are not small and ``maintain`` purges rather than compacts), one with
``delta.enableDeletionVectors=true``. Both get ``DELETE WHERE id % 20 = 7``: 5% of the rows, spread over every
file, so the merge-on-read copy has a deletion vector on every file and the copy-on-write copy was rewritten.
Then full scans that materialise every column of every row (Spark's ``noop`` sink), alternating after one
warm-up each:

* ``scan-dv-before-maintain``: the merge-on-read table against the copy-on-write table (for reference);
* ``scan-dv-after-maintain``: the same table after ``DeltaTable.maintain()`` with its default policy (files whose
  deletion vector deletes at least 5% of their rows are purged, through Spark's ``REORG ... APPLY (PURGE)``),
  against the copy-on-write table (target 1.1x).

The ``maintain`` run's own time and its plan are recorded in ``extra``. ``bench/run.py`` runs it in full runs
only (it starts a JVM).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed
from dml_dv import _alternate, _full_scan, generated_rows
from harness import Result, save

CONDITION = "id % 20 = 7"


def main(argv: list[str] | None = None) -> int:
    args, rows, nfiles, repeat = harness.sized_args(
        __doc__, argv, rows=(5_000_000, 200_000), files=(16, 4), repeat=(3, 1))

    import deltalog
    from deltalog.spark import DeltaTable, read, write

    spark = harness.spark_session("deltalog-maintain-dv-bench")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="maintain-dv-", dir=args.data_dir))
    try:
        df = generated_rows(spark, rows, nfiles)
        paths = {"dv": str(work / "dv"), "cow": str(work / "cow")}
        # a 4 MiB target file size, so that the files (~4 MB each at the default size) are not "small" (below a
        # quarter of the target) and maintain purges them file by file rather than compacting them all into one
        target = {"delta.targetFileSize": str(4 << 20)}
        write(df, paths["dv"], **{"delta.enableDeletionVectors": "true", **target})
        write(df, paths["cow"], **target)
        for path in paths.values():
            DeltaTable.forPath(spark, path).delete(CONDITION)
        health = deltalog.Table(paths["dv"]).health()
        if health.dv_files != nfiles:
            raise SystemExit(f"expected a deletion vector on each of the {nfiles} files, got {health.dv_files}")
        before = _alternate(repeat, dv=lambda: _full_scan(read(spark, paths["dv"])),
                            cow=lambda: _full_scan(read(spark, paths["cow"])))
        t0 = time.perf_counter()
        steps = DeltaTable.forPath(spark, paths["dv"]).maintain().collect()
        maintain_s = time.perf_counter() - t0
        after_health = deltalog.Table(paths["dv"]).health()
        if after_health.dv_files:
            raise SystemExit(f"maintain left {after_health.dv_files} files with deletion vectors: {steps}")
        counts = {k: read(spark, p).count() for k, p in paths.items()}
        if counts["dv"] != counts["cow"]:
            raise SystemExit(f"row counts differ after maintain: {counts}")
        after = _alternate(repeat, dv=lambda: _full_scan(read(spark, paths["dv"])),
                           cow=lambda: _full_scan(read(spark, paths["cow"])))
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    params = {"rows": rows, "files": nfiles, "repeat": repeat, "condition": CONDITION, "master": "local[2]",
              "scan": "every column of every row (noop sink)"}
    extra: dict[str, Any] = {
        "maintain_s": round(maintain_s, 3),
        "steps": [(s.action, s.status, s.numFiles, s.numBytes) for s in steps],
        "deleted_row_share_before": round(health.deleted_row_share, 4),
        "rows": counts["dv"],
    }
    print(f"\nDELETE WHERE {CONDITION} ({health.num_deleted_rows:,} of {rows:,} rows, {nfiles} files), local[2], "
          f"median of {repeat}; maintain took {maintain_s:.2f} s: {extra['steps']}")
    for workload, title, (dv_runs, cow_runs), target in (
        ("scan-dv-before-maintain", f"full scan, deletion vectors on all {nfiles} files (5% deleted), {rows:,} rows",
         before, 1.3),
        ("scan-dv-after-maintain", f"full scan after maintain (5% deleted, purged), {rows:,} rows", after, 1.1),
    ):
        print(f"  {workload}: {statistics.median(dv_runs):.2f} s against {statistics.median(cow_runs):.2f} s "
              f"copy-on-write: ratio {statistics.median(dv_runs) / statistics.median(cow_runs):.2f}")
        save(Result(workload=workload, title=title, deltalog_median=statistics.median(dv_runs),
                    anchor_median=statistics.median(cow_runs), target=target,
                    anchor="same rows after a copy-on-write DELETE", deltalog_runs=dv_runs, anchor_runs=cow_runs,
                    params=params, extra=extra, quick=args.quick),
             harness.results_dir_for(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
