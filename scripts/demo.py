"""The demo pipeline: build a local Delta table with deltalog, change it, time travel, and read real
tables written by Spark, delta-rs and the Delta kernels (no JVM involved).

    make demo
"""

from __future__ import annotations

import datetime as dt
import shutil
import sys
from pathlib import Path

import pyarrow as pa

import deltalog

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "conformance"
TABLE = ROOT / ".demo" / "events"
CORPUS_TABLES = [
    "dat-5b772f7/reader_tests/generated/multi_partitioned/delta",
    "kernel-rs-golden/dv-partitioned-with-checkpoint/delta",
    "kernel-rs-golden/table-with-columnmapping-mode-name/delta",
]


def batch(day: str, start: int, n: int) -> pa.Table:
    return pa.table({
        "event_id": pa.array(range(start, start + n), pa.int64()),
        "day": pa.array([dt.date.fromisoformat(day)] * n, pa.date32()),
        "user": pa.array([f"user-{i % 7}" for i in range(start, start + n)]),
        "amount": pa.array([round(i * 1.25, 2) for i in range(start, start + n)], pa.float64()),
    })


def pipeline() -> None:
    """A day of a data engineer's life, on a local table."""
    if TABLE.exists():
        shutil.rmtree(TABLE)
    print(f"=== pipeline on {TABLE.relative_to(ROOT)}")
    r = deltalog.write_table(TABLE, batch("2024-05-01", 0, 1000), mode="error", partition_by=["day"])
    print(f"created the table at version {r.version} with {r.num_rows} rows in {r.num_files} file(s)")
    for i, day in enumerate(["2024-05-02", "2024-05-03"], start=1):
        r = deltalog.write_table(TABLE, batch(day, i * 1000, 1000), mode="append", txn=("ingest", i))
        print(f"appended {day}: version {r.version}")
    again = deltalog.write_table(TABLE, batch("2024-05-03", 2000, 1000), mode="append", txn=("ingest", 2))
    print(f"re-running ingest batch 2 is idempotent: skipped={again.skipped} ({again.skip_reason})")
    fixed = batch("2024-05-02", 1000, 500)
    r = deltalog.write_table(TABLE, fixed, mode="overwrite", predicate=[("day", "=", "2024-05-02")])
    print(f"replaced day 2024-05-02 with corrected data: version {r.version}")

    table = deltalog.Table(TABLE)
    snap = table.snapshot()
    print(f"latest: version {snap.version}, {snap.num_files()} files, "
          f"{snap.to_arrow().num_rows} rows, ingest txn at {snap.txn_version('ingest')}")
    day2 = snap.to_arrow(columns=["event_id", "amount"], filter=[("day", "=", "2024-05-02")])
    print(f"rows on 2024-05-02 now: {day2.num_rows}; before the fix (version 2): "
          f"{table.snapshot(2).to_arrow(filter=[('day', '=', '2024-05-02')]).num_rows}")
    for entry in table.history():
        print(f"  v{entry['version']}: {entry['operation']:<8} {entry.get('operationParameters')}")
    cp = table.checkpoint()
    print(f"checkpoint written at version {cp.version}; reopening uses it: "
          f"{deltalog.Table(TABLE).snapshot().segment.checkpoint_version}")


def show(path: Path) -> None:
    table = deltalog.Table(path)
    snap = table.snapshot()
    print(f"\n=== {path.relative_to(CORPUS)}")
    print(f"version {snap.version}, protocol {snap.protocol.minReaderVersion}/"
          f"{snap.protocol.minWriterVersion}, {snap.num_files()} live files, "
          f"partitioned by {list(snap.partition_columns) or 'nothing'}")
    for entry in table.history(limit=3):
        print(f"  v{entry['version']}: {entry.get('operation')} {entry.get('operationParameters', '')}")
    rows = snap.to_arrow()
    print(f"  {rows.num_rows} rows; first ones:")
    for row in rows.slice(0, 3).to_pylist():
        print(f"    {row}")


def main() -> int:
    pipeline()
    if not CORPUS.exists():
        print(f"\n(the corpus at {CORPUS} is not there: skipping the tables written by other engines)")
        return 0
    for name in CORPUS_TABLES:
        show(CORPUS / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
