"""``make demo-s3`` (scripts/demo_s3.py) runs end to end: the kernel, the CLI and Spark on a moto S3."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.objectstore, pytest.mark.own_jvm]
ROOT = Path(__file__).resolve().parents[2]


def test_demo_s3_runs() -> None:
    pytest.importorskip("moto.server")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo_s3.py")], capture_output=True, text=True,
                          timeout=600, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "after DELETE: [3, 4, 5, 6, 7]" in out
    assert "rows 1000 | region 1: 250" in out and "streamed copy: 1010 rows" in out
    assert "history: ['OPTIMIZE', 'MERGE', 'WRITE']" in out
