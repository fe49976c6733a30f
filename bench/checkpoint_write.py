"""Checkpoint-write benchmark (workload ``e``): deltalog against delta-rs's ``create_checkpoint``.

The table is workload ``c``'s (:mod:`synth`): ~1M files in a checkpoint at version 0 (written by
delta-rs) and 20 JSON commits -- a table due for its next periodic checkpoint. Each run gets a fresh
copy of that log (hard links; the new checkpoint lands in the copy only) and times, per writer, opening
the table and writing the checkpoint of version 20:

* deltalog: ``deltalog.Table(path).snapshot()`` + ``write_checkpoint(snapshot)``
  (what ``Table.checkpoint()`` and ``deltalog checkpoint PATH`` do);
* delta-rs: ``DeltaTable(path)`` + ``create_checkpoint()``.

The headline ratio is the end-to-end time (open + write; deltalog / delta-rs, below 1.0 is faster);
the two phases are reported too. The first run checks that each checkpoint reproduces the table for
both readers.

    python bench/checkpoint_write.py                       # ~1M files, 3 runs
    python bench/checkpoint_write.py --files 100000 --repeat 5
    python bench/checkpoint_write.py --stats-as-struct     # delta.checkpoint.writeStatsAsStruct=true
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import deltalake  # before pyarrow.parquet, see tests/interop/deltars_worker.py
import harness  # puts src/ on sys.path when deltalog is not installed
from harness import Result, median, save
from log_load import CP_SHAPE
from synth import LogSpec, build, log_copy

import deltalog
from deltalog.log.checkpoint_writer import write_checkpoint

TARGET = 0.5


def _deltalog(path: Path) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    snap = deltalog.Table(path).snapshot()
    t1 = time.perf_counter()
    result = write_checkpoint(snap)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, int(result.size_in_bytes)


def _deltars(path: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    dt = deltalake.DeltaTable(str(path))
    t1 = time.perf_counter()
    dt.create_checkpoint()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def _verify(path: Path, spec: LogSpec, who: str) -> None:
    snap = deltalog.Table(path).snapshot()
    if snap.segment.checkpoint_version != spec.version or snap.num_files() != spec.live_files:
        raise SystemExit(f"{who}'s checkpoint does not reproduce the table for deltalog")
    n = deltalake.DeltaTable(str(path)).get_add_actions().num_rows
    if n != spec.live_files:
        raise SystemExit(f"delta-rs reads {n} files from {who}'s checkpoint, expected {spec.live_files}")


def run(spec: LogSpec, *, repeat: int, data_dir: Path, quick: bool, workload: str = "e") -> Result:
    """Time both writers ``repeat`` times on fresh copies of ``spec``'s log."""
    base = build(spec, data_dir)
    ours: dict[str, list[float]] = {"load": [], "write": [], "total": []}
    theirs: dict[str, list[float]] = {"load": [], "write": [], "total": []}
    size = 0
    for i in range(repeat):
        copy = log_copy(base, data_dir / "cp_deltalog", checkpoints=True)
        load, write, size = _deltalog(copy)
        ours["load"].append(load)
        ours["write"].append(write)
        ours["total"].append(load + write)
        if i == 0:
            _verify(copy, spec, "deltalog")
        shutil.rmtree(copy)
        copy = log_copy(base, data_dir / "cp_deltars", checkpoints=True)
        load, write = _deltars(copy)
        theirs["load"].append(load)
        theirs["write"].append(write)
        theirs["total"].append(load + write)
        if i == 0:
            _verify(copy, spec, "delta-rs")
        shutil.rmtree(copy)
    extra: dict[str, Any] = {
        "deltalog_load_s": median(ours["load"]),
        "deltalog_write_s": median(ours["write"]),
        "anchor_load_s": median(theirs["load"]),
        "anchor_write_s": median(theirs["write"]),
        "write_only_ratio": median(ours["write"]) / max(1e-9, median(theirs["write"])),
        "deltalog_checkpoint_bytes": size,
    }
    return Result(
        workload=workload,
        title=f"write a checkpoint of ~{spec.live_files:,} files (open + write)",
        deltalog_median=median(ours["total"]),
        anchor_median=median(theirs["total"]),
        target=TARGET,
        anchor="delta-rs create_checkpoint",
        deltalog_runs=ours["total"],
        anchor_runs=theirs["total"],
        params={"spec": spec.__dict__, "repeat": repeat, "live_files": spec.live_files},
        extra=extra,
        quick=quick,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(p)
    p.add_argument("--files", type=int, default=None, help="files in the base checkpoint (default 1,000,000)")
    p.add_argument("--repeat", type=int, default=None, help="runs per writer (default 3, quick: 1)")
    p.add_argument("--stats-as-struct", action="store_true", help="set delta.checkpoint.writeStatsAsStruct=true")
    args = p.parse_args(argv)
    files = args.files or (3_000 if args.quick else 1_000_000)
    spec = LogSpec(files=files, stats_as_struct=args.stats_as_struct, **CP_SHAPE)  # type: ignore[arg-type]
    repeat = args.repeat or (1 if args.quick else 3)
    workload = "e-stats-struct" if args.stats_as_struct else "e"
    result = run(spec, repeat=repeat, data_dir=args.data_dir, quick=args.quick, workload=workload)
    x = result.extra
    print(
        f"    phases: deltalog open {x['deltalog_load_s']:.2f} s + write {x['deltalog_write_s']:.2f} s; "
        f"delta-rs open {x['anchor_load_s']:.2f} s + create_checkpoint {x['anchor_write_s']:.2f} s; "
        f"write-only ratio {x['write_only_ratio']:.2f}x"
    )
    save(result, harness.results_dir_for(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
