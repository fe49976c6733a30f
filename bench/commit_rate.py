"""Commit-rate benchmark (workload ``f``): N small sequential commits, deltalog against delta-rs.

Each commit appends ``--adds`` ``add`` actions for fake (never written) parquet files with JSON stats
(:func:`synth.fake_files`), partitioned by ``day``; paths are new in every commit, so the table grows
by ``--adds`` files per commit. Each writer gets its own fresh table, created before timing starts;
only the commits are timed. Four variants run:

* ``deltalog`` -- one ``deltalog.Table(path)``; per commit ``table.transaction(Write(mode="Append"))``
  (which gets the latest snapshot), ``add_actions``, ``commit()``, with the post-commit hooks on (the
  default: a ``.crc`` after every commit, a checkpoint every ``delta.checkpointInterval`` = 10 commits,
  expired-log cleanup after a checkpoint);
* ``deltalog, fresh Table per commit`` -- the same with a new ``Table`` per commit (a full snapshot load
  each time);
* ``deltalog, post_commit=False`` -- one ``Table``, no ``.crc``, no checkpoint;
* ``delta-rs`` -- ``DeltaTable.create_write_transaction(actions, mode="append", ...)`` on one handle,
  refreshed with ``update_incremental()`` after each commit (its handle does not advance by itself);
  its post-commit hook checkpoints every ``delta.checkpointInterval`` (100 by default in delta-rs) and
  writes no ``.crc``;
* ``delta-rs, fresh handle`` -- a new ``DeltaTable`` per commit (the same work as deltalog's per-commit
  snapshot load).

The headline pair is deltalog with its default hooks against delta-rs's incremental handle, each with
its own defaults; the ratio is deltalog commits/s / delta-rs commits/s (above 1.0 is faster). Pass
``--checkpoint-interval 100`` for the same checkpoint cadence on both sides.

    python bench/commit_rate.py                      # 200 commits of 5 adds
    python bench/commit_rate.py --commits 500 --adds 20 --checkpoint-interval 100
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import deltalake  # before pyarrow.parquet, see tests/interop/deltars_worker.py
import harness  # puts src/ on sys.path when deltalog is not installed
import pyarrow as pa
from harness import Result, median, save
from synth import PARTITION_BY, SCHEMA, FakeFile, fake_files

import deltalog
from deltalog.protocol.actions import Add, Format, Metadata
from deltalog.txn.operations import CreateTable, Write

ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("name", pa.string()), ("day", pa.string())])
TARGET = 1.0
HEADLINE = ("deltalog", "delta-rs")


def _properties(interval: int | None) -> dict[str, str]:
    return {} if interval is None else {"delta.checkpointInterval": str(interval)}


def run_deltalog(
    path: Path, batches: list[list[FakeFile]], *, post_commit: bool, interval: int | None, handle: str = "reuse"
) -> float:
    """Create the table, then time one transaction per batch; returns seconds.

    ``handle="reuse"`` keeps one :class:`deltalog.Table` for every commit (it may keep its latest
    snapshot and read only newer commits); ``"fresh"`` opens a new one per commit.
    """
    import json

    table = deltalog.Table(str(path))
    parts = tuple(PARTITION_BY)
    create_op = CreateTable(partition_by=parts, properties=_properties(interval))
    create = table.transaction(create_op, post_commit=post_commit)
    create.update_metadata(
        Metadata(
            id=str(uuid.uuid4()),
            format=Format(),
            schemaString=json.dumps(SCHEMA),
            partitionColumns=parts,
            configuration=_properties(interval),
            createdTime=int(time.time() * 1000),
        )
    )
    create.commit()
    prepared = [
        [
            Add(
                path=f.path,
                partitionValues=dict(f.partition_values),
                size=f.size,
                modificationTime=f.modification_time,
                dataChange=True,
                stats=f.stats,
            )
            for f in batch
        ]
        for batch in batches
    ]
    op = Write(mode="Append", partition_by=parts)
    t0 = time.perf_counter()
    for adds in prepared:
        if handle == "fresh":
            table = deltalog.Table(str(path))
        txn = table.transaction(op, post_commit=post_commit)
        txn.add_actions(adds)
        txn.commit()
    return time.perf_counter() - t0


def run_deltars(path: Path, batches: list[list[FakeFile]], *, handle: str, interval: int | None) -> float:
    """Create the table, then time one ``create_write_transaction`` per batch; returns seconds."""
    parts = list(PARTITION_BY)
    conf = _properties(interval) or None
    deltalake.DeltaTable.create(str(path), ARROW_SCHEMA, partition_by=parts, configuration=conf)
    prepared = [
        [
            deltalake.transaction.AddAction(
                path=f.path,
                size=f.size,
                partition_values=dict(f.partition_values),
                modification_time=f.modification_time,
                data_change=True,
                stats=f.stats,
            )
            for f in batch
        ]
        for batch in batches
    ]
    dt = deltalake.DeltaTable(str(path))
    t0 = time.perf_counter()
    for adds in prepared:
        if handle == "fresh":
            dt = deltalake.DeltaTable(str(path))
        dt.create_write_transaction(adds, mode="append", schema=ARROW_SCHEMA, partition_by=parts)
        if handle == "incremental":
            dt.update_incremental()
    return time.perf_counter() - t0


def _check(path: Path, commits: int, adds: int) -> str:
    """Both readers see every commit and file; returns a summary of the log's extra files."""
    snap = deltalog.Table(str(path)).snapshot()
    dt = deltalake.DeltaTable(str(path))
    if snap.version != commits or dt.version() != commits:
        raise SystemExit(f"{path.name}: expected version {commits}, got {snap.version} / {dt.version()}")
    if snap.num_files() != commits * adds or len(dt.file_uris()) != commits * adds:
        raise SystemExit(f"{path.name}: expected {commits * adds} files")
    names = os.listdir(path / "_delta_log")
    crc = sum(n.endswith(".crc") for n in names)
    cps = sorted(int(n.split(".")[0]) for n in names if n.endswith(".checkpoint.parquet"))
    shown = "none" if not cps else ", ".join(map(str, cps)) if len(cps) <= 4 else f"{cps[0]}, {cps[1]}, ..., {cps[-1]}"
    return f"{crc} .crc files, {len(cps)} checkpoints: {shown}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(p)
    p.add_argument("--commits", type=int, default=None, help="commits per run (default 200, quick: 10)")
    p.add_argument("--adds", type=int, default=5, help="add actions per commit")
    p.add_argument("--repeat", type=int, default=None, help="runs per variant (default 3, quick: 1)")
    p.add_argument(
        "--checkpoint-interval",
        type=int,
        default=None,
        help="set delta.checkpointInterval on both tables (default: each writer's own default, 10 vs 100)",
    )
    args = p.parse_args(argv)
    commits = args.commits or (10 if args.quick else 200)
    repeat = args.repeat or (1 if args.quick else 3)
    interval = args.checkpoint_interval
    now = int(time.time() * 1000)
    batches = [fake_files(c * args.adds, args.adds, ts=now) for c in range(commits)]
    variants: list[tuple[str, Callable[[Path], float]]] = [
        ("deltalog", lambda d: run_deltalog(d, batches, post_commit=True, interval=interval)),
        (
            "deltalog, fresh Table per commit",
            lambda d: run_deltalog(d, batches, post_commit=True, interval=interval, handle="fresh"),
        ),
        ("deltalog, post_commit=False", lambda d: run_deltalog(d, batches, post_commit=False, interval=interval)),
        ("delta-rs", lambda d: run_deltars(d, batches, handle="incremental", interval=interval)),
        ("delta-rs, fresh handle", lambda d: run_deltars(d, batches, handle="fresh", interval=interval)),
    ]
    cadence = interval if interval is not None else "defaults, deltalog 10 / delta-rs 100"
    print(f"{commits} sequential commits of {args.adds} add actions each (delta.checkpointInterval: {cadence})")
    root = args.data_dir / f"commit_rate_{uuid.uuid4().hex[:8]}"
    rates: dict[str, list[float]] = {label: [] for label, _ in variants}
    try:
        for run in range(repeat):
            for i, (label, fn) in enumerate(variants):
                path = root / f"r{run}_t{i}"
                seconds = fn(path)
                rates[label].append(commits / seconds)
                summary = _check(path, commits, args.adds)
                shutil.rmtree(path)
                print(
                    f"    {label:<34} {seconds:7.2f} s  {commits / seconds:8.1f} commits/s  "
                    f"{1000 * seconds / commits:6.2f} ms/commit  ({summary})",
                    flush=True,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ours, theirs = HEADLINE
    result = Result(
        workload="f",
        title=f"{commits} sequential commits of {args.adds} adds (throughput)",
        deltalog_median=median(rates[ours]),
        anchor_median=median(rates[theirs]),
        target=TARGET,
        metric="throughput",
        unit="commits/s",
        anchor="delta-rs create_write_transaction",
        deltalog_runs=rates[ours],
        anchor_runs=rates[theirs],
        params={"commits": commits, "adds": args.adds, "repeat": repeat, "checkpoint_interval": interval},
        extra={f"{label} commits/s": median(r) for label, r in rates.items()},
        quick=args.quick,
    )
    save(result, harness.results_dir_for(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
