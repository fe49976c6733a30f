"""Health benchmark: ``Table.health()`` against loading the same table's snapshot, in the same run.

Workload ``health``: the table of workload ``c`` (~1M files: a delta-rs checkpoint + 20 JSON commits, stats
on every file, 365 partitions; ``--quick``: 5,000 files). deltalog's side is ``Table(path).health()`` --
snapshot load, then every health number (row counts from the stats strings, histograms of the table and
each partition, tombstones, a listing of the log, the history scan); the anchor is ``Table(path).snapshot()
.add_files()`` alone, so the ratio is what the health numbers cost on top of the load (target: within 2x).
The two alternate in one process after a warm-up each; medians of wall-clock time are reported (and, in
``extra``, of the process's CPU time, steadier on a shared machine), times are never asserted.

    python bench/health.py
    python bench/health.py --quick --results-dir /tmp/r
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import harness
from harness import Result, median, save
from synth import LogSpec, build

CP_SHAPE = {"commits": 20, "adds_per_commit": 20, "removes_per_commit": 2, "checkpoint": True}
SPEC = LogSpec(files=1_000_000, **CP_SHAPE)  # type: ignore[arg-type]
QUICK = LogSpec(files=5_000, **CP_SHAPE)  # type: ignore[arg-type]
TARGET = 2.0


def health(path: Path) -> int:
    """deltalog: the table's health (snapshot load included); returns the live file count."""
    import deltalog

    return int(deltalog.Table(path).health().num_files)


def snapshot(path: Path) -> int:
    """The anchor: the snapshot load and its Arrow file index alone."""
    import deltalog

    return int(deltalog.Table(path).snapshot().add_files().num_rows)


def run(*, quick: bool, repeat: int, data_dir: Path) -> Result:
    """Build (or reuse) the table, time both sides and return the result."""
    import deltalake  # noqa: F401  (delta-rs before pyarrow.parquet: synth writes checkpoints with it)

    spec = QUICK if quick else SPEC
    path = build(spec, data_dir)
    t0 = time.perf_counter()
    import deltalog

    h = deltalog.Table(path).health()
    first = time.perf_counter() - t0
    snapshot(path)
    ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
    n_ours = n_theirs = 0
    for _ in range(max(1, repeat)):  # alternating, so a transient load on the machine hits both alike
        for fn, wall, cpu in ((health, ours, ours_cpu), (snapshot, theirs, theirs_cpu)):
            w0, c0 = time.perf_counter(), time.process_time()
            count = fn(path)
            wall.append(time.perf_counter() - w0)
            cpu.append(time.process_time() - c0)
            n_ours, n_theirs = (count, n_theirs) if fn is health else (n_ours, count)
    if n_ours != spec.live_files or n_theirs != spec.live_files:
        raise SystemExit(f"health: {n_ours:,} / {n_theirs:,} live files, expected {spec.live_files:,}")
    return Result(
        workload="health",
        title=f"health of {spec.live_files:,} files ({len(h.partitions)} partitions), against the snapshot load",
        deltalog_median=median(ours),
        anchor_median=median(theirs),
        target=TARGET,
        anchor="deltalog snapshot load",
        deltalog_runs=ours,
        anchor_runs=theirs,
        params={"spec": spec.__dict__, "repeat": repeat},
        extra={"first_health_s": first, "num_partitions": len(h.partitions),
               "deltalog_cpu_s": median(ours_cpu), "anchor_cpu_s": median(theirs_cpu),
               "cpu_ratio": median(ours_cpu) / max(1e-9, median(theirs_cpu)),
               "histogram_source": h.file_size_histogram_source, "small_file_share": h.small_file_share},
        quick=quick,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(p)
    p.add_argument("--repeat", type=int, default=None, help="timed runs per side (default 5, quick: 1)")
    args = p.parse_args(argv)
    result = run(quick=args.quick, repeat=args.repeat or (1 if args.quick else 5), data_dir=args.data_dir)
    save(result, harness.results_dir_for(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
