"""The Spark benchmark of scans over many files (``bench/scan_planning.py``) runs end to end at tiny sizes
and records what the issue counts: no status/list call per data file in deltalog's planning, only the
matching files read by a selective scan. Times are never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def test_scan_planning_bench_quick(tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "scan_planning.py"), "--quick", "--files", "20", "60",
         "--results-dir", str(results), "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=600, check=False, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for n in (20, 60):
        doc = json.loads((results / f"spark-scan-files-{n}.json").read_text())
        assert doc["extra"]["deltalog_files_discovered"] == 0
        assert doc["extra"]["anchor_files_discovered"] == n == doc["extra"]["paths_files_discovered"]
        assert doc["deltalog_median"] > 0 and doc["anchor_median"] > 0
    selective = json.loads((results / "spark-scan-selective.json").read_text())
    assert selective["extra"]["files_read"] == selective["extra"]["matching_files"] == 1
    report = tmp_path / "performance.md"
    subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--results-dir", str(results),
                    "--out", str(report)], check=True, env=env, capture_output=True)
    assert "| 60 |" in report.read_text() and (tmp_path / "performance_scan_files.png").exists()
