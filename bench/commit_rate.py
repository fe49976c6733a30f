"""Commit-rate benchmark: N small sequential commits, deltalog's transaction API against delta-rs's.

Each commit appends the same kind of actions: ``--adds`` ``add`` actions for fake (never written)
parquet files with JSON stats, partitioned by ``day``; paths are new in every commit, so the table
grows by ``--adds`` files per commit. Each writer gets its own fresh table, created before timing
starts; only the ``--commits`` commits are timed.

* deltalog: ``deltalog.Table(path).transaction(Write(mode="Append"), post_commit=...)`` per commit
  (which loads the latest snapshot), ``add_actions``, ``commit()``. Run twice: with the post-commit
  hooks (the default: a ``.crc`` checksum file after every commit, a checkpoint every
  ``delta.checkpointInterval`` = 10 commits, expired-log cleanup after a checkpoint) and with
  ``post_commit=False`` (no ``.crc``, no checkpoint: every snapshot load replays all JSON commits).
* delta-rs: ``DeltaTable.create_write_transaction(actions, mode="append", schema, partition_by)``.
  Its default post-commit hook (``PostCommitHookProperties(create_checkpoint=True)``) writes a
  checkpoint every ``delta.checkpointInterval`` commits -- **100** by default in delta-rs -- and it
  writes no ``.crc`` files. A ``DeltaTable`` handle is not advanced by its own
  ``create_write_transaction`` (``version()`` stays put and each commit then re-checks every commit
  since as a "winner", which gets slower and slower), so the handle is refreshed with
  ``update_incremental()`` after every commit ("incremental"); "fresh" opens a new ``DeltaTable`` per
  commit instead, which does the same work as deltalog's per-commit snapshot load.

The comparable pair depends on ``--checkpoint-interval``: by default each side keeps its own default
(deltalog checkpoints 10x as often); with ``--checkpoint-interval 100`` both tables checkpoint at the
same cadence and deltalog-with-hooks differs from delta-rs only by the ``.crc`` file it writes.

    python bench/commit_rate.py                      # 200 commits of 5 adds
    python bench/commit_rate.py --commits 500 --adds 20 --checkpoint-interval 100
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import deltalake  # imported first: before pyarrow.parquet (which deltalog imports), see tests/interop/deltars_worker.py
import pyarrow as pa

import deltalog
from deltalog.protocol.actions import Add, Format, Metadata
from deltalog.txn.operations import CreateTable, Write

DATA = Path(__file__).resolve().parent / ".data"

ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("name", pa.string()), ("day", pa.string())])
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "double", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "day", "type": "string", "nullable": True, "metadata": {}},
    ],
}
PARTITION_BY = ["day"]


class FakeFile(NamedTuple):
    """One ``add`` action, as plain values both writers take."""

    path: str
    day: str
    size: int
    modification_time: int
    stats: str


def fake_files(commit: int, adds: int, now: int) -> list[FakeFile]:
    """The ``add`` actions of one commit."""
    out = []
    for j in range(adds):
        i = commit * adds + j
        day = f"2024-01-{i % 28 + 1:02d}"
        stats = {
            "numRecords": 1000,
            "minValues": {"id": i * 1000, "value": 0.5, "name": "a"},
            "maxValues": {"id": i * 1000 + 999, "value": 99.5, "name": "zzz"},
            "nullCount": {"id": 0, "value": 3, "name": 1},
        }
        path = f"day={day}/part-{i:07d}-{uuid.UUID(int=i)}-c000.snappy.parquet"
        out.append(FakeFile(path, day, 1_000_000 + i, now, json.dumps(stats, separators=(",", ":"))))
    return out


def _properties(interval: int | None) -> dict[str, str]:
    return {} if interval is None else {"delta.checkpointInterval": str(interval)}


def run_deltalog(path: Path, batches: list[list[FakeFile]], *, post_commit: bool, interval: int | None) -> float:
    table = deltalog.Table(str(path))
    create = table.transaction(
        CreateTable(partition_by=tuple(PARTITION_BY), properties=_properties(interval)), post_commit=post_commit
    )
    create.update_metadata(
        Metadata(
            id=str(uuid.uuid4()),
            format=Format(),
            schemaString=json.dumps(SCHEMA),
            partitionColumns=tuple(PARTITION_BY),
            configuration=_properties(interval),
            createdTime=int(time.time() * 1000),
        )
    )
    create.commit()
    prepared = [
        [
            Add(
                path=f.path,
                partitionValues={"day": f.day},
                size=f.size,
                modificationTime=f.modification_time,
                dataChange=True,
                stats=f.stats,
            )
            for f in batch
        ]
        for batch in batches
    ]
    op = Write(mode="Append", partition_by=tuple(PARTITION_BY))
    t0 = time.perf_counter()
    for adds in prepared:
        txn = deltalog.Table(str(path)).transaction(op, post_commit=post_commit)
        txn.add_actions(adds)
        txn.commit()
    return time.perf_counter() - t0


def run_deltars(path: Path, batches: list[list[FakeFile]], *, handle: str, interval: int | None) -> float:
    deltalake.DeltaTable.create(
        str(path), ARROW_SCHEMA, partition_by=PARTITION_BY, configuration=_properties(interval) or None
    )
    prepared: list[list[deltalake.transaction.AddAction | deltalake.transaction.RemoveAction]] = [
        [
            deltalake.transaction.AddAction(
                path=f.path,
                size=f.size,
                partition_values={"day": f.day},
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
        dt.create_write_transaction(adds, mode="append", schema=ARROW_SCHEMA, partition_by=PARTITION_BY)
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--commits", type=int, default=200)
    p.add_argument("--adds", type=int, default=5, help="add actions per commit")
    p.add_argument(
        "--checkpoint-interval",
        type=int,
        default=None,
        help="set delta.checkpointInterval on both tables (default: each writer's own default, 10 vs 100)",
    )
    args = p.parse_args()
    now = int(time.time() * 1000)
    batches = [fake_files(c, args.adds, now) for c in range(args.commits)]
    root = DATA / f"commit_rate_{uuid.uuid4().hex[:8]}"
    runs: list[tuple[str, Callable[[Path], float]]] = [
        (
            "deltalog, post-commit hooks",
            lambda d: run_deltalog(d, batches, post_commit=True, interval=args.checkpoint_interval),
        ),
        (
            "deltalog, post_commit=False",
            lambda d: run_deltalog(d, batches, post_commit=False, interval=args.checkpoint_interval),
        ),
        (
            "delta-rs, incremental handle",
            lambda d: run_deltars(d, batches, handle="incremental", interval=args.checkpoint_interval),
        ),
        (
            "delta-rs, fresh DeltaTable",
            lambda d: run_deltars(d, batches, handle="fresh", interval=args.checkpoint_interval),
        ),
    ]
    interval = args.checkpoint_interval
    print(
        f"{args.commits} sequential commits of {args.adds} add actions each "
        f"(delta.checkpointInterval: {interval if interval is not None else 'defaults, deltalog 10 / delta-rs 100'})"
    )
    rates: dict[str, float] = {}
    try:
        for i, (label, fn) in enumerate(runs):
            path = root / f"t{i}"
            seconds = fn(path)
            rates[label] = args.commits / seconds
            summary = _check(path, args.commits, args.adds)
            print(
                f"  {label:<30} {seconds:7.2f} s  {rates[label]:8.1f} commits/s  "
                f"{1000 * seconds / args.commits:6.2f} ms/commit  ({summary})",
                flush=True,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = rates["delta-rs, incremental handle"]
    print("  ratio (deltalog commits/s / delta-rs incremental commits/s; above 1.0 means deltalog is faster):")
    for label in ("deltalog, post-commit hooks", "deltalog, post_commit=False"):
        print(f"    {label:<30} {rates[label] / base:5.2f}x")
    print(
        "  comparable: deltalog with post-commit hooks vs delta-rs (both checkpoint by "
        "delta.checkpointInterval; deltalog also writes a .crc per commit). Pass --checkpoint-interval 100 "
        "for the same checkpoint cadence."
    )


if __name__ == "__main__":
    main()
