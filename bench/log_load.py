"""Log benchmark: open a table with N live files (checkpoint + K JSON commits) and list its files.

Compares deltalog against delta-rs (``deltalake``) on the same table in the same run and prints the
ratio (deltalog time / delta-rs time; below 1.0 means deltalog is faster).

    python bench/log_load.py --files 100000 --commits 50 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import deltalog

DATA = Path(__file__).resolve().parent / ".data"

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "double", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "day", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def _add(i: int, now: int) -> str:
    day = f"2024-01-{i % 28 + 1:02d}"
    stats = {
        "numRecords": 1000,
        "minValues": {"id": i * 1000, "value": 0.5, "name": "a"},
        "maxValues": {"id": i * 1000 + 999, "value": 99.5, "name": "zzz"},
        "nullCount": {"id": 0, "value": 3, "name": 1},
    }
    return json.dumps(
        {
            "add": {
                "path": f"day={day}/part-{i:06d}-{uuid.uuid4()}.c000.snappy.parquet",
                "partitionValues": {"day": day},
                "size": 12345 + i,
                "modificationTime": now,
                "dataChange": True,
                "stats": json.dumps(stats),
            }
        }
    )


def build_table(path: Path, files: int, commits: int) -> None:
    """Commit 0 with every file, a checkpoint written by delta-rs, then ``commits`` small commits."""
    from deltalake import DeltaTable

    if path.exists():
        shutil.rmtree(path)
    log = path / "_delta_log"
    log.mkdir(parents=True)
    now = int(time.time() * 1000)
    lines = [
        json.dumps({"commitInfo": {"timestamp": now, "operation": "WRITE"}}),
        json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json.dumps(
            {
                "metaData": {
                    "id": str(uuid.uuid4()),
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(SCHEMA),
                    "partitionColumns": ["day"],
                    "configuration": {},
                    "createdTime": now,
                }
            }
        ),
    ]
    lines += [_add(i, now) for i in range(files)]
    (log / f"{0:020d}.json").write_text("\n".join(lines) + "\n")
    DeltaTable(str(path)).create_checkpoint()
    next_id = files
    for v in range(1, commits + 1):
        body = [json.dumps({"commitInfo": {"timestamp": now + v, "operation": "WRITE"}})]
        for _ in range(20):
            body.append(_add(next_id, now + v))
            next_id += 1
        (log / f"{v:020d}.json").write_text("\n".join(body) + "\n")


def _time(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    fn()  # warm the page cache and imports
    times = []
    result = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def run(files: int, commits: int, repeat: int) -> dict[str, float]:
    """Build (or reuse) the table and time both readers; returns the medians and the ratio."""
    from deltalake import DeltaTable

    path = DATA / f"log_{files}_{commits}"
    marker = path / "_delta_log" / f"{commits:020d}.json"
    if not marker.exists():
        build_table(path, files, commits)

    def ours() -> int:
        return deltalog.Table(path).snapshot().add_files().num_rows

    def theirs() -> int:
        return len(DeltaTable(str(path)).get_add_actions(flatten=False))

    t_ours, n_ours = _time(ours, repeat)
    t_theirs, n_theirs = _time(theirs, repeat)
    if n_ours != n_theirs:
        raise SystemExit(f"live file counts differ: deltalog {n_ours}, delta-rs {n_theirs}")
    return {"files": n_ours, "deltalog_s": t_ours, "deltars_s": t_theirs, "ratio": t_ours / t_theirs}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--files", type=int, default=100_000)
    p.add_argument("--commits", type=int, default=50)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    r = run(args.files, args.commits, args.repeat)
    print(
        f"load + list live files, {r['files']:,} files (checkpoint + {args.commits} commits): "
        f"deltalog {r['deltalog_s'] * 1000:.0f} ms, delta-rs {r['deltars_s'] * 1000:.0f} ms, "
        f"ratio {r['ratio']:.2f}x"
    )


if __name__ == "__main__":
    main()
