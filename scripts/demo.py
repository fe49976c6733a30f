"""The demo: open real Delta tables written by Spark, delta-rs and the Delta kernels, and show what
deltalog reads from them (no JVM involved).

    make demo
"""

from __future__ import annotations

import sys
from pathlib import Path

import deltalog

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "conformance"
TABLES = [
    "dat-5b772f7/reader_tests/generated/multi_partitioned/delta",
    "kernel-rs-golden/dv-partitioned-with-checkpoint/delta",
    "kernel-rs-golden/table-with-columnmapping-mode-name/delta",
]


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
    if snap.version > 0:
        print(f"  as of version 0: {table.snapshot(version=0).to_arrow().num_rows} rows")


def main() -> int:
    if not CORPUS.exists():
        print(f"the demo reads tables from {CORPUS}, which is not there", file=sys.stderr)
        return 1
    for name in TABLES:
        show(CORPUS / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
