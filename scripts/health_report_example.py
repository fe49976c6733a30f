"""The example of docs/health.md's HTML report: builds a small table with a history (a first load, a day of
hourly appends, a DELETE with deletion vectors, an OPTIMIZE of one partition, more appends), writes its
report with ``deltalog health --html`` and, where headless Chromium is installed (/usr/bin/chromium), the
screenshot docs/health-report.png (reduced to a palette of 128 colours when Pillow is there).

    .venv/bin/python scripts/health_report_example.py [OUT_DIR]     # OUT_DIR: .demo/health-report by default
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

import deltalog
from deltalog.cli import main

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
T0 = 1_714_550_400_000  # 2024-05-01 08:00:00 UTC
HOUR = 3_600_000


def rows(day: str, start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "day": [day] * n,
                     "amount": pa.array([float(i % 97) for i in range(start, start + n)])})


def build(path: Path) -> None:
    props = {"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "50"}
    first = pa.concat_tables([rows(f"2024-05-0{d}", d * 100_000, 20_000 * d) for d in (1, 2, 3)])
    deltalog.write_table(path, first, partition_by=["day"], properties=props, clock=lambda: T0)
    table = deltalog.Table(path)
    for h in range(1, 25):  # a day of hourly appends: small files in one partition
        deltalog.write_table(path, rows("2024-05-04", 400_000 + h * 1000, 10 + h), mode="append",
                             clock=lambda h=h: T0 + h * HOUR)
    table.delete("day = '2024-05-01' AND id % 4 = 0", clock=lambda: T0 + 26 * HOUR)
    table.compact(partition_filter="day = '2024-05-04'", clock=lambda: T0 + 28 * HOUR)
    for h in range(30, 42):
        deltalog.write_table(path, rows("2024-05-05", 500_000 + h * 1000, 5 + h), mode="append",
                             clock=lambda h=h: T0 + h * HOUR)


def screenshot(page: Path, png: Path) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        "--host-resolver-rules=MAP * ~NOTFOUND", "--force-color-profile=srgb", "--hide-scrollbars",
                        f"--user-data-dir={profile}", f"--screenshot={png}", "--window-size=1000,2150",
                        page.as_uri()], check=True, capture_output=True, timeout=180)
    try:  # a palette of 128 colours: the same picture in a third of the bytes (Pillow comes with matplotlib)
        from PIL import Image
    except ImportError:
        return
    with Image.open(png) as shot:
        small = shot.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(png, optimize=True)


def run(out: Path) -> int:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    table, page = out / "orders", out / "orders-health.html"
    build(table)
    os.chdir(out)  # the report names the table as given: "orders"
    code = main(["health", "orders", "--html", str(page), "--max-small-file-share", "0.5",
                 "--max-deleted-share", "0.1"])
    print(f"exit code {code}; report: {page}")
    if os.path.exists(CHROMIUM):
        png = ROOT / "docs" / "health-report.png"
        screenshot(page, png)
        print(f"screenshot: {png} ({png.stat().st_size:,} bytes)")
    else:
        print(f"no {CHROMIUM}: no screenshot (apt-get install -y --no-install-recommends chromium)")
    return 0


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".demo" / "health-report"))
