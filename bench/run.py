"""Run every benchmark workload, print deltalog against its anchor, write results and the report.

    make bench                    (= python bench/run.py)
    python bench/run.py --quick   tiny sizes, results in bench/results/quick/ (the smoke test uses this)

Each workload script runs in its own process with the shared options (``--quick``, ``--results-dir``,
``--data-dir``; see ``bench/harness.py``) and saves ``<results-dir>/<workload>.json``; then the deltalog
side of the workloads is profiled (``bench/hotspots.py``, when pyinstrument is installed) and
``bench/report.py`` writes ``docs/performance.md`` with its plot (for ``--quick``: into the results
directory, unless ``--report`` says where). A script that fails is reported and the others still run;
the exit status is then 1.

Scripts: ``log_load.py`` (workloads a-d and the scaling sweep), ``checkpoint_write.py`` (e),
``commit_rate.py`` (f), and in full runs only (so the CI smoke test never starts a JVM) the Spark
workloads: ``spark_io.py`` (append and scan against plain Spark parquet), ``scan_planning.py`` (scans of
1k-100k-file tables planned from the log against ``spark.read.parquet(dir)``), ``spark_dml.py`` (MERGE,
DELETE / UPDATE and OPTIMIZE against hand-written Spark jobs and delta-rs) and, when present,
``zorder.py`` (selective queries before/after Z-order), ``dml_dv.py`` (DELETE with deletion vectors
against copy-on-write, then full scans with deletion vectors on every file / on one file) and
``streaming_latency.py`` (a Delta-to-Delta stream against Spark's file stream); ``sweep.py`` (issue 55's
sweep: deletion-vector reads of 1M-10M rows in five query shapes against the row-index floor, copy-on-write
and parquet, and MERGE upserts of 1k-500k rows into 10k-5M against the hand-written join, into
``sweep.json`` and ``docs/sweep.png``); ``dv_bound.py`` (what dropping deleted rows costs inside Spark, part by
part, against the row-index floor);
``row_concurrency.py`` (concurrent single-row UPDATEs from several processes, row-level concurrency on
against off); ``kernel_dml.py`` (the kernel's Arrow MERGE, DELETE and compaction against delta-rs's);
``object_store.py`` (S3 on a moto server: snapshot load and commit rate against delta-rs,
and in full runs a Spark scan of a 10k-file table through deltalog's Arrow tasks); ``health.py``
(``Table.health()`` of the 1M-file table against loading its snapshot); ``maintain_dv.py`` (full scans of a
table with 5% of its rows deleted by deletion vectors, before and after ``maintain``, against copy-on-write);
``uniform.py`` (the cost UniForm's Iceberg metadata adds to a commit: 100 sequential appends and one OPTIMIZE
of 1,000 files, against the same table without ``delta.universalFormat.enabledFormats``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import harness

HERE = Path(__file__).resolve().parent

#: (script, extra arguments for full runs, runs with --quick); every script gets the shared options.
SCRIPTS: list[tuple[str, list[str], bool]] = [
    ("log_load.py", [], True),
    ("checkpoint_write.py", [], True),
    ("commit_rate.py", [], True),
    ("spark_io.py", [], False),
    ("scan_planning.py", [], False),
    ("spark_dml.py", [], False),
    ("zorder.py", [], False),
    ("dml_dv.py", [], False),
    ("sweep.py", [], False),
    ("dv_bound.py", [], False),
    ("streaming_latency.py", [], False),
    ("sql_catalog.py", [], False),
    ("object_store.py", [], True),
    ("row_concurrency.py", [], True),
    ("kernel_dml.py", [], True),
    ("health.py", [], True),
    ("maintain_dv.py", [], False),
    ("uniform.py", [], True),
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(p)
    p.add_argument("--only", nargs="+", metavar="SCRIPT", help="run only these scripts (e.g. log_load.py)")
    p.add_argument("--no-profile", action="store_true", help="skip the pyinstrument profiles")
    p.add_argument("--report", type=Path, default=None, help="where to write performance.md")
    args = p.parse_args(argv)
    results_dir = harness.results_dir_for(args)
    shared = ["--results-dir", str(results_dir), "--data-dir", str(args.data_dir), *(["--quick"] if args.quick else [])]
    steps = [(s, full) for s, full, quick in SCRIPTS if (not args.only or s in args.only) and (quick or not args.quick)]
    if not args.no_profile and not args.only:
        steps.append(("hotspots.py", []))
    status = 0
    started = time.perf_counter()
    for script, full in steps:
        if not (HERE / script).exists():
            continue
        cmd = [sys.executable, str(HERE / script), *shared, *([] if args.quick else full)]
        print(f"$ {' '.join(Path(c).name if c.endswith('.py') else c for c in cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call(cmd)
        print(f"  ({script}: {time.perf_counter() - t0:.1f} s{'' if code == 0 else f', exit {code}'})", flush=True)
        status |= 1 if code else 0
    default_report = results_dir / "performance.md" if args.quick else harness.ROOT / "docs" / "performance.md"
    report = args.report or default_report
    cmd = [sys.executable, str(HERE / "report.py"), "--results-dir", str(results_dir), "--out", str(report)]
    code = subprocess.call(cmd)
    status |= 1 if code else 0
    print(f"total {time.perf_counter() - started:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
