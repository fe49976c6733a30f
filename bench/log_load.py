"""Log benchmarks: load a snapshot and list its live files, deltalog against delta-rs on the same table.

Workloads (tables from :mod:`synth`; ratio = deltalog time / delta-rs time, below 1.0 is faster):

* ``a`` -- 100k files: a delta-rs checkpoint + 50 JSON commits (target <= 0.8x);
* ``b`` -- 1,000 JSON commits without a checkpoint, ~95k live files (target <= 0.8x);
* ``c`` -- ~1M files: checkpoint + 20 commits, each reader in its own process so its peak RSS can be
  measured (target <= 1.0x and deltalog's peak RSS < 2 GiB); the first load in the fresh process is
  reported separately (it pays for the process's fresh memory, see ``docs/performance.md``);
* ``d`` -- time travel to the version 500 commits before the latest of table ``b`` (target <= 1.0x);
* ``scale`` -- the load time of checkpoint + 20 commits tables of 10k .. 300k files, for the plot in
  ``docs/performance.md`` (table ``c`` is its 1M point).

deltalog: ``deltalog.Table(path).snapshot(version).add_files()``; delta-rs:
``DeltaTable(path, version=...).get_add_actions()``. Both produce an Arrow table of every live file
with its stats; the counts are checked against each other and the spec. In-process runs alternate the
two readers after one warm-up each; the medians are reported.

    python bench/log_load.py                       # every workload, full sizes
    python bench/log_load.py --workload a --repeat 7
    python bench/log_load.py --quick --results-dir /tmp/r
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import harness
from harness import GIB, Result, median, run_child, save, time_calls, time_interleaved
from synth import LogSpec, build

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Workload:
    """A log-load workload: the table, how far back to travel, the target and the sizes.

    ``title`` may use ``{files}`` (live files at the version read), ``{commits}`` (JSON commits after
    the checkpoint), ``{versions}`` (commit files), ``{back}`` and ``{version}``.
    """

    key: str
    title: str
    spec: LogSpec
    quick: LogSpec
    target: float
    travel_back: int = 0
    quick_travel_back: int = 0
    subprocess: bool = False


CP_SHAPE = {"commits": 20, "adds_per_commit": 20, "removes_per_commit": 2, "checkpoint": True}
WORKLOADS = {
    "a": Workload(
        "a",
        "load + list files: {files:,} files, checkpoint + {commits} JSON commits",
        LogSpec(files=100_000, commits=50, adds_per_commit=20, removes_per_commit=2, checkpoint=True),
        LogSpec(files=2_000, commits=5, adds_per_commit=20, removes_per_commit=2, checkpoint=True),
        0.8,
    ),
    "b": Workload(
        "b",
        "load + list files: {versions:,} JSON commits, no checkpoint ({files:,} files)",
        LogSpec(files=100, commits=999, adds_per_commit=100, removes_per_commit=5),
        LogSpec(files=20, commits=49, adds_per_commit=10, removes_per_commit=2),
        0.8,
    ),
    "c": Workload(
        "c",
        "load + list files: {files:,} files, checkpoint + {commits} commits (own process, peak RSS)",
        LogSpec(files=1_000_000, **CP_SHAPE),  # type: ignore[arg-type]
        LogSpec(files=5_000, **CP_SHAPE),  # type: ignore[arg-type]
        1.0,
        subprocess=True,
    ),
    "d": Workload(
        "d",
        "time travel {back} commits back (table b: version {version}, {files:,} files)",
        LogSpec(files=100, commits=999, adds_per_commit=100, removes_per_commit=5),
        LogSpec(files=20, commits=49, adds_per_commit=10, removes_per_commit=2),
        1.0,
        travel_back=500,
        quick_travel_back=20,
    ),
}
SCALE_SIZES = (10_000, 30_000, 100_000, 300_000)
QUICK_SCALE_SIZES = (500, 1_500)
RSS_LIMIT = 2 * GIB


# ------------------------------------------------------------------------------------------- readers


def _import_both() -> None:
    """delta-rs must be imported before pyarrow.parquet (see tests/interop/deltars_worker.py)."""
    import deltalake  # noqa: F401

    import deltalog  # noqa: F401


def load_deltalog(path: Path, version: int | None) -> int:
    """deltalog: snapshot + the Arrow table of live files; returns the file count."""
    import deltalog

    files = deltalog.Table(path).snapshot(version).add_files()
    return int(files.num_rows)


def load_deltars(path: Path, version: int | None) -> int:
    """delta-rs: open the table (at ``version``) + its add actions as Arrow; returns the file count."""
    from deltalake import DeltaTable

    actions = DeltaTable(str(path), version=version).get_add_actions(flatten=False)
    return int(actions.num_rows)


READERS = {"deltalog": load_deltalog, "deltars": load_deltars}


def child_main(reader: str, path: Path, version: int | None, repeat: int) -> None:
    """Child-process mode: import one reader only, time it, print times and peak RSS as JSON."""
    if reader == "deltars":
        import deltalake  # noqa: F401
    else:
        import deltalog  # noqa: F401
    import_rss = harness.peak_rss_bytes()
    fn = READERS[reader]
    t0 = time.perf_counter()
    fn(path, version)  # the first load in a fresh process: also the warm-up of the timed runs
    first = time.perf_counter() - t0
    first_rss = harness.peak_rss_bytes()
    seconds, count = time_calls(lambda: fn(path, version), repeat=repeat, warmup=0)
    out = {
        "seconds": seconds,
        "files": count,
        "first_s": first,
        "first_peak_rss": first_rss,
        "peak_rss": harness.peak_rss_bytes(),
        "import_rss": import_rss,
    }
    print(json.dumps(out))


# ---------------------------------------------------------------------------------------- workloads


def _check(count: int, expected: int, who: str, key: str) -> None:
    if count != expected:
        raise SystemExit(f"workload {key}: {who} lists {count:,} live files, expected {expected:,}")


def run_workload(w: Workload, *, quick: bool, repeat: int, data_dir: Path) -> Result:
    """Build (or reuse) the table, time both readers and return the result."""
    spec = w.quick if quick else w.spec
    back = w.quick_travel_back if quick else w.travel_back
    path = build(spec, data_dir)
    version = spec.version - back if back else None
    expected = spec.live_files_at(spec.version - back)
    params: dict[str, Any] = {"spec": spec.__dict__, "version": version, "repeat": repeat, "live_files": expected}
    extra: dict[str, Any] = {}
    limits: dict[str, float] = {}
    if w.subprocess:
        runs = {}
        for reader in ("deltalog", "deltars"):
            argv = [str(HERE / "log_load.py"), "--child", reader, "--path", str(path), "--repeat", str(repeat)]
            out = run_child(argv)
            _check(out["files"], expected, reader, w.key)
            runs[reader] = out
        ours, theirs = runs["deltalog"]["seconds"], runs["deltars"]["seconds"]
        extra = {
            "deltalog_first_load_s": runs["deltalog"]["first_s"],
            "anchor_first_load_s": runs["deltars"]["first_s"],
            "first_load_ratio": runs["deltalog"]["first_s"] / max(1e-9, runs["deltars"]["first_s"]),
            "deltalog_first_load_peak_rss_bytes": runs["deltalog"]["first_peak_rss"],
            "anchor_first_load_peak_rss_bytes": runs["deltars"]["first_peak_rss"],
            "deltalog_peak_rss_bytes": runs["deltalog"]["peak_rss"],
            "anchor_peak_rss_bytes": runs["deltars"]["peak_rss"],
            "deltalog_import_rss_bytes": runs["deltalog"]["import_rss"],
            "anchor_import_rss_bytes": runs["deltars"]["import_rss"],
            "rss_ratio": runs["deltalog"]["peak_rss"] / max(1, runs["deltars"]["peak_rss"]),
        }
        limits = {"deltalog_peak_rss_bytes": float(RSS_LIMIT)}
    else:
        _import_both()
        ours, n_ours, theirs, n_theirs = time_interleaved(
            partial(load_deltalog, path, version), partial(load_deltars, path, version), repeat=repeat
        )
        _check(n_ours, expected, "deltalog", w.key)
        _check(n_theirs, expected, "delta-rs", w.key)
    title = w.title.format(
        files=expected, commits=spec.commits, versions=spec.commits + 1, back=back, version=version
    )
    return Result(
        workload=w.key,
        title=title,
        deltalog_median=median(ours),
        anchor_median=median(theirs),
        target=w.target,
        deltalog_runs=ours,
        anchor_runs=theirs,
        params=params,
        extra=extra,
        limits=limits,
        quick=quick,
    )


def run_scale(*, quick: bool, repeat: int, data_dir: Path, results_dir: Path) -> Path:
    """Load time against the number of files (checkpoint + 20 commits); writes ``scale.json``."""
    _import_both()
    points = []
    for files in QUICK_SCALE_SIZES if quick else SCALE_SIZES:
        spec = LogSpec(files=files, **CP_SHAPE)  # type: ignore[arg-type]
        path = build(spec, data_dir)
        ours, n, theirs, m = time_interleaved(
            partial(load_deltalog, path, None), partial(load_deltars, path, None), repeat=repeat
        )
        _check(n, spec.live_files, "deltalog", "scale")
        _check(m, spec.live_files, "delta-rs", "scale")
        points.append({"files": spec.live_files, "deltalog_s": median(ours), "anchor_s": median(theirs)})
        print(
            f"(scale) {spec.live_files:>9,} files: deltalog {median(ours) * 1000:,.0f} ms, "
            f"delta-rs {median(theirs) * 1000:,.0f} ms",
            flush=True,
        )
    results_dir.mkdir(parents=True, exist_ok=True)
    out = results_dir / "scale.json"
    body = {"kind": "scale", "shape": "checkpoint + 20 commits", "quick": quick, "points": points}
    out.write_text(json.dumps(body, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(p)
    p.add_argument("--workload", nargs="+", choices=[*WORKLOADS, "scale"], default=[*WORKLOADS, "scale"])
    p.add_argument("--repeat", type=int, default=None, help="timed runs per reader (default 5, c: 3, quick: 1)")
    p.add_argument("--child", choices=sorted(READERS), help=argparse.SUPPRESS)
    p.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--version", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child_main(args.child, args.path, args.version, args.repeat or 1)
        return 0
    results_dir = harness.results_dir_for(args)
    for key in args.workload:
        repeat = args.repeat or (1 if args.quick else 3 if key == "c" else 5)
        if key == "scale":
            run_scale(quick=args.quick, repeat=repeat, data_dir=args.data_dir, results_dir=results_dir)
            continue
        save(run_workload(WORKLOADS[key], quick=args.quick, repeat=repeat, data_dir=args.data_dir), results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
