"""Checkpoint-write benchmark: deltalog's ``write_checkpoint`` against delta-rs's ``create_checkpoint``.

Builds a synthetic partitioned table whose commit 0 holds N ``add`` actions with JSON stats, copies its
log twice (one copy per writer, so neither sees the other's checkpoint) and times, on each copy,
loading the table and writing the checkpoint. Prints both and the ratio (deltalog / delta-rs; below
1.0 means deltalog is faster).

    python bench/checkpoint_write.py --files 100000
    python bench/checkpoint_write.py                 # 1,000,000 files
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
import uuid
from pathlib import Path

import deltalog
from deltalog.log.checkpoint_writer import write_checkpoint

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


def build_log(path: Path, files: int, *, stats_as_struct: bool = False) -> None:
    """Commit 0 with protocol, metadata and ``files`` adds (stats included), partitioned by ``day``."""
    if path.exists():
        shutil.rmtree(path)
    log = path / "_delta_log"
    log.mkdir(parents=True)
    now = int(time.time() * 1000)
    head = [
        json.dumps({"commitInfo": {"timestamp": now, "operation": "WRITE"}}),
        json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json.dumps(
            {
                "metaData": {
                    "id": str(uuid.uuid4()),
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(SCHEMA),
                    "partitionColumns": ["day"],
                    "configuration": {"delta.checkpoint.writeStatsAsStruct": "true"} if stats_as_struct else {},
                    "createdTime": now,
                }
            }
        ),
    ]
    rng = random.Random(files)
    # The stats JSON is embedded as an escaped string; written with plain formatting for speed.
    template = (
        '{{"add":{{"path":"day=2024-01-{d:02d}/part-{i:07d}-{tag}-c000.snappy.parquet",'
        '"partitionValues":{{"day":"2024-01-{d:02d}"}},"size":{size},"modificationTime":{now},'
        '"dataChange":true,"stats":"{{\\"numRecords\\":1000,\\"minValues\\":{{\\"id\\":{lo},'
        '\\"value\\":0.5,\\"name\\":\\"a\\"}},\\"maxValues\\":{{\\"id\\":{hi},\\"value\\":99.5,'
        '\\"name\\":\\"zzz\\"}},\\"nullCount\\":{{\\"id\\":0,\\"value\\":3,\\"name\\":1}}}}"}}}}'
    )
    with open(log / f"{0:020d}.json", "w") as out:
        out.write("\n".join(head) + "\n")
        step = 100_000
        for start in range(0, files, step):
            lines = [
                template.format(
                    d=i % 28 + 1,
                    i=i,
                    tag=uuid.UUID(int=rng.getrandbits(128)),
                    now=now,
                    size=rng.randrange(1 << 20, 1 << 28),
                    lo=rng.randrange(1 << 40),
                    hi=rng.randrange(1 << 40, 1 << 50),
                )
                for i in range(start, min(files, start + step))
            ]
            out.write("\n".join(lines) + "\n")


def _copy(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


def run(files: int, *, stats_as_struct: bool = False) -> dict[str, float]:
    """Build (or reuse) the log, time both writers on fresh copies and return the timings."""
    from deltalake import DeltaTable

    base = DATA / f"cp_{files}{'_struct' if stats_as_struct else ''}"
    if not (base / "_delta_log" / f"{0:020d}.json").exists():
        t0 = time.perf_counter()
        build_log(base, files, stats_as_struct=stats_as_struct)
        print(f"built a log with {files:,} adds in {time.perf_counter() - t0:.1f} s")

    ours = _copy(base, DATA / f"cp_{files}_deltalog")
    t0 = time.perf_counter()
    snap = deltalog.Table(ours).snapshot()
    t1 = time.perf_counter()
    result = write_checkpoint(snap)
    t2 = time.perf_counter()

    theirs = _copy(base, DATA / f"cp_{files}_deltars")
    t3 = time.perf_counter()
    dt = DeltaTable(str(theirs))
    t4 = time.perf_counter()
    dt.create_checkpoint()
    t5 = time.perf_counter()

    check = deltalog.Table(ours).snapshot()
    if check.segment.checkpoint_version != 0 or check.num_files() != files:
        raise SystemExit("deltalog's checkpoint does not reproduce the table")
    if len(DeltaTable(str(ours)).file_uris()) != files:
        raise SystemExit("delta-rs reads a different number of files from deltalog's checkpoint")
    shutil.rmtree(ours)
    shutil.rmtree(theirs)
    return {
        "files": files,
        "ours_load": t1 - t0,
        "ours_write": t2 - t1,
        "theirs_load": t4 - t3,
        "theirs_write": t5 - t4,
        "bytes": result.size_in_bytes,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=1_000_000)
    p.add_argument("--stats-as-struct", action="store_true", help="set delta.checkpoint.writeStatsAsStruct=true")
    args = p.parse_args()
    r = run(args.files, stats_as_struct=args.stats_as_struct)
    ours, theirs = r["ours_load"] + r["ours_write"], r["theirs_load"] + r["theirs_write"]
    print(f"checkpoint of {int(r['files']):,} files ({r['bytes'] / 1e6:.1f} MB written by deltalog)")
    print(f"  deltalog: load {r['ours_load']:.2f} s + write {r['ours_write']:.2f} s = {ours:.2f} s")
    print(f"  delta-rs: load {r['theirs_load']:.2f} s + create_checkpoint {r['theirs_write']:.2f} s = {theirs:.2f} s")
    print(
        f"  ratio (deltalog / delta-rs): write {r['ours_write'] / r['theirs_write']:.2f}x, "
        f"load+write {ours / theirs:.2f}x"
    )


if __name__ == "__main__":
    main()
