"""Sessions as users start them. The Python Spark's workers run: a program started as ``.venv/bin/python
job.py`` without the venv on ``PATH`` (whose ``python3`` cannot import deltalog) works in local mode --
through ``configure(builder)`` and through ``register(spark)`` of a session built without it -- and an
interpreter the user chose is kept, its failure to import deltalog told in deltalog's words (what a cluster
whose executors lack deltalog sees). And the session a configured builder makes has Delta's SQL too, with no
``register(spark)``, as delta-spark's ``configure_spark_with_delta_pip`` session has."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import deltalog
from deltalog.spark.common.workers import is_local_master, use_driver_python_for, worker_import_error

PROGRAM = """
import sys
from pyspark.sql import SparkSession
from deltalog.spark import DeltaTable, configure, register

how, path = sys.argv[1], sys.argv[2]
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
if how == "configure":
    spark = configure(builder).getOrCreate()
else:
    spark = register(builder.getOrCreate())
rows = spark.createDataFrame([(i, i % 2) for i in range(10)], "id long, p long")
try:
    rows.write.format("delta").partitionBy("p").save(path)  # Arrow tasks in Python workers
    DeltaTable.forPath(spark, path).delete("id < 3")
    print("ROWS", spark.read.format("delta").load(path).count())
    # Delta's SQL from the session the builder made, with no register(spark) in the configure case
    print("SQL", spark.sql(f"SELECT count(*) FROM delta.`{path}` WHERE p = 1").first()[0],
          [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()])
except Exception as exc:
    print("FAILED", type(exc).__name__, str(exc).splitlines()[0])
"""


def _fake_python(directory: Path, says: str) -> Path:
    """An executable named ``python3`` that is not a usable worker interpreter: it prints ``says`` and fails."""
    directory.mkdir()
    fake = directory / "python3"
    fake.write_text(f"#!/bin/sh\necho \"{says}\" >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake


def _run(tmp: Path, how: str, **env: str) -> str:
    program = tmp / "job.py"
    program.write_text(PROGRAM)
    src = str(Path(deltalog.__file__).resolve().parent.parent)
    full = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_SUBMIT_ARGS")}
    full.update(SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=os.pathsep.join(p for p in (src, full.get("PYTHONPATH")) if p))
    full.update(env)
    done = subprocess.run([sys.executable, str(program), how, str(tmp / "t")], env=full, capture_output=True,
                          text=True, timeout=600, cwd=tmp)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(("ROWS", "SQL", "FAILED"))]
    return " | ".join(lines) or done.stderr[-3000:]


@pytest.mark.spark
@pytest.mark.own_jvm
@pytest.mark.parametrize("how", ["configure", "register"])
def test_local_workers_run_the_drivers_interpreter(tmp_path: Path, how: str) -> None:
    fake = _fake_python(tmp_path / "bin", "ModuleNotFoundError: No module named 'pyarrow'")
    path = f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}"  # python3 on PATH cannot be a worker
    assert _run(tmp_path, how, PATH=path) == "ROWS 7 | SQL 4 ['DELETE', 'WRITE']"


@pytest.mark.spark
@pytest.mark.own_jvm
def test_a_chosen_interpreter_is_kept_and_its_failure_named(tmp_path: Path) -> None:
    fake = _fake_python(tmp_path / "bin", "ModuleNotFoundError: No module named 'deltalog'")
    out = _run(tmp_path, "configure", PYSPARK_PYTHON=str(fake))
    assert out.startswith("FAILED"), out
    assert "Spark's Python workers cannot import deltalog (No module named 'deltalog')" in out, out
    assert "PYSPARK_PYTHON" in out and "spark.submit.pyFiles" in out, out


def test_builders_in_local_mode_get_the_drivers_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    class Builder:
        def __init__(self, **options: str) -> None:
            self._options = options

    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    use_driver_python_for(Builder(**{"spark.master": "spark://cluster:7077"}))
    assert "PYSPARK_PYTHON" not in os.environ  # a cluster's executors are the deployment's to provide
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--master yarn pyspark-shell")
    use_driver_python_for(Builder())
    assert "PYSPARK_PYTHON" not in os.environ
    use_driver_python_for(Builder(**{"spark.master": "local[2]", "spark.pyspark.python": "/opt/py"}))
    assert "PYSPARK_PYTHON" not in os.environ  # the user's choice
    use_driver_python_for(Builder(**{"spark.master": "local[2]"}))
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other")
    use_driver_python_for(Builder(**{"spark.master": "local[2]"}))
    assert os.environ["PYSPARK_PYTHON"] == "/opt/other"
    assert is_local_master("LOCAL[*]") and not is_local_master("k8s://https://host")
    assert worker_import_error("java.lang.RuntimeException: boom") is None
