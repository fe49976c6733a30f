"""The benchmark harness runs end to end at ``--quick`` sizes and writes its results (times are never
asserted: this only guards the harness, e.g. against a kernel API change breaking a workload)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_quick_writes_results(tmp_path: Path) -> None:
    results = tmp_path / "results"
    report = tmp_path / "performance.md"
    proc = subprocess.run(
        [
            sys.executable, str(ROOT / "bench" / "run.py"), "--quick",
            "--results-dir", str(results), "--data-dir", str(tmp_path / "data"), "--report", str(report),
        ],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLCONFIGDIR": str(tmp_path / "mpl")},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for workload in "abcdef":
        doc = json.loads((results / f"{workload}.json").read_text())
        assert doc["workload"] == workload and doc["quick"] is True
        assert doc["deltalog_median"] > 0 and doc["anchor_median"] > 0 and "holds" in doc
    for workload in ("s3-load", "s3-commits"):  # the object-store workloads, on a moto server
        doc = json.loads((results / f"{workload}.json").read_text())
        assert doc["deltalog_median"] > 0 and doc["anchor_median"] > 0
    for workload in ("kernel-merge", "kernel-delete", "kernel-compact"):  # the kernel's DML against delta-rs's
        doc = json.loads((results / f"{workload}.json").read_text())
        assert doc["deltalog_median"] > 0 and doc["anchor_median"] > 0
    for workload in ("uniform-appends", "uniform-optimize"):  # UniForm's commits against the same without it
        doc = json.loads((results / f"{workload}.json").read_text())
        assert doc["deltalog_median"] > 0 and doc["anchor_median"] > 0 and doc["target"] == 1.5
    doc = json.loads((results / "health.json").read_text())  # Table.health() against the snapshot load
    assert doc["deltalog_median"] > 0 and doc["anchor_median"] > 0
    doc = json.loads((results / "row-concurrency.json").read_text())  # processes racing on one table
    assert doc["extra"]["on"]["committed"] + doc["extra"]["on"]["aborted"] == 10
    assert json.loads((results / "scale.json").read_text())["points"]
    assert (results / "profile" / "a.json").exists()
    assert report.exists() and (tmp_path / "performance_snapshot_load.png").exists()
    assert "| a |" in report.read_text()
