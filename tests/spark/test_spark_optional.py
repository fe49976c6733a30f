"""pyspark stays optional: ``import deltalog`` and ``import deltalog.spark`` work without it (this test is
not marked ``spark``; it runs with the kernel's tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import deltalog

CODE = """
import sys
sys.modules["pyspark"] = None  # any import of pyspark now fails
import deltalog, deltalog.spark
from deltalog.spark import DeltaTable, configure, read, register, write
from deltalog.spark.exceptions import ConcurrentAppendException
assert "pyspark" not in [m for m in sys.modules if sys.modules[m] is not None]
print("ok")
"""


def test_deltalog_imports_without_pyspark() -> None:
    src = str(Path(deltalog.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)}
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
