"""Sessions as users start them. The Python Spark's workers run: a program started as ``.venv/bin/python
job.py`` without the venv on ``PATH`` (whose ``python3`` cannot import deltalog) works in local mode --
through ``configure(builder)`` and for a session built before ``import deltalog.spark`` (which registers it,
with no ``register(spark)``) -- and an
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

how, path = sys.argv[1], sys.argv[2]
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
if how == "configure":
    from deltalog.spark import DeltaTable, configure

    spark = configure(builder).getOrCreate()
else:  # a session built before deltalog.spark is imported, and no register(spark): the import registers it
    spark = builder.getOrCreate()
    from deltalog.spark import DeltaTable
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
@pytest.mark.parametrize("how", ["configure", "before"])
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
    assert "Spark's Python workers on this machine cannot import deltalog. In local mode" in out, out
    assert "PYSPARK_PYTHON" in out and "docs/deployment.md#the-driver" in out, out


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
    assert os.environ["PYSPARK_PYTHON"] == "/opt/py"  # the user's choice, which PySpark reads only from there
    monkeypatch.delenv("PYSPARK_PYTHON")
    use_driver_python_for(Builder(**{"spark.master": "spark://c:7077", "spark.pyspark.python": "./env/bin/python"}))
    assert os.environ["PYSPARK_PYTHON"] == "./env/bin/python"  # on a cluster too (docs/deployment.md)
    monkeypatch.delenv("PYSPARK_PYTHON")
    use_driver_python_for(Builder(**{"spark.master": "local[2]"}))
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other")
    use_driver_python_for(Builder(**{"spark.master": "local[2]"}))
    assert os.environ["PYSPARK_PYTHON"] == "/opt/other"
    assert is_local_master("LOCAL[*]") and not is_local_master("k8s://https://host")
    assert worker_import_error("java.lang.RuntimeException: boom") is None


class ConnectError(Exception):
    """Stands for an exception the Spark Connect client raises (its module says where it came from)."""


ConnectError.__module__ = "pyspark.errors.exceptions.connect"
TRACEBACK = "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most recent call last):\n"


def _said(failure: BaseException | str) -> str:
    told = worker_import_error(failure, table="/t")
    assert told is not None, failure
    assert str(told).endswith(" [table /t]") and "\n" not in str(told)
    return str(told)


def test_import_failures_name_the_machine_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """The words for each machine and each way its Python can lack deltalog; the texts are those Spark 4.3
    gave in the deployments docs/deployment.md tells of (trimmed)."""
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    lost = "Lost task 0.0 in stage 4.0 (TID 5) (10.0.0.7 executor 3): org.apache.spark.api.python.PythonException: "
    said = _said(lost + TRACEBACK + "ModuleNotFoundError: No module named 'pyroaring'")
    assert said.startswith("Spark's Python workers on the executors (executor 3 on host 10.0.0.7) cannot import "
                           "pyroaring (deltalog needs it). Install deltalog (pip install deltalog"), said
    assert "spark.archives" in said and "docs/deployment.md#executors" in said
    said = _said(lost + "ImportError: cannot import name 'BitMap' from 'pyroaring' (unknown location)")
    assert "cannot import pyroaring (deltalog needs it): the package is there but not its native code" in said
    said = _said(lost + "ModuleNotFoundError: No module named 'obstore._obstore'")
    assert "cannot import obstore._obstore (deltalog needs it): the package is there but not its native" in said
    said = _said(lost + "ModuleNotFoundError: No module named 'deltalog.spark.newer'")
    assert "cannot import deltalog.spark.newer (the deltalog it finds is not this driver's " in said
    said = _said(lost + "[PACKAGE_NOT_INSTALLED] PyArrow >= 15.0.0 must be installed; however, it was not found.")
    assert "(executor 3 on host 10.0.0.7) cannot import pyarrow (deltalog needs it)" in said
    # In local mode (or with no task named) it is this machine's interpreter.
    said = _said(TRACEBACK + "ModuleNotFoundError: No module named 'deltalog'")
    assert said.startswith("Spark's Python workers on this machine cannot import deltalog. In local mode, start")
    assert "docs/deployment.md#the-driver" in said
    # A relative interpreter from spark.archives, where it is not unpacked; one unpacked without its mode bits.
    said = _said('java.io.IOException: Cannot run program "./env/bin/python": error=2, No such file or directory')
    assert "on this machine cannot start: their interpreter ./env/bin/python is not there -- a relative" in said
    said = _said(lost + 'java.io.IOException: Cannot run program "./env/bin/python": error=13, Permission denied')
    assert "10.0.0.7) cannot start: their interpreter ./env/bin/python is not executable" in said
    assert ".tar.gz" in said
    # Another module, or PySpark's Connect client's packages outside Spark Connect: not deltalog's to tell.
    assert worker_import_error(lost + "ModuleNotFoundError: No module named 'mylib'") is None
    assert worker_import_error(lost + "ModuleNotFoundError: No module named 'grpc'") is None
    assert worker_import_error('Cannot run program "/usr/bin/R": error=2') is None


def test_connect_failures_name_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    said = _said(ConnectError(TRACEBACK + "ModuleNotFoundError: No module named 'deltalog'"))
    assert said.startswith("The Spark Connect server's Python workers cannot import deltalog. Install deltalog")
    assert "PYSPARK_PYTHON in the server's environment" in said and "pyfile=True" in said
    assert "docs/deployment.md#spark-connect" in said
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # only the text: this process runs a Connect session
    assert _said(TRACEBACK + "ModuleNotFoundError: No module named 'deltalog'") == said
    runner = ("[STREAMING_PYTHON_RUNNER_INITIALIZATION_FAILURE] Streaming Runner initialization failed, returned "
              "-2. Cause: Traceback (most recent call last):\n  File \".../foreach_batch_worker.py\", line 100, "
              "in main\nModuleNotFoundError: No module named '{}'")
    said = _said(ConnectError(runner.format("deltalog")))
    assert said.startswith("The Python process the Spark Connect server runs a stream's foreachBatch in "
                           "(deltalog's Delta sink) cannot import deltalog. Install deltalog")
    assert "the session's artifacts (spark.addArtifacts) do not reach this process" in said
    said = _said(ConnectError("Job aborted due to stage failure: Task 0 in stage 1.0 failed 4 times, most recent "
                              "failure: Lost task 0.3 in stage 1.0 (TID 10) (10.0.0.9 executor 0): java.io."
                              'IOException: Cannot run program "./env/bin/python" (in directory "./3ded2c4e"): '
                              "error=2, No such file or directory"))
    assert said.startswith("The Spark Connect server's Python workers on executor 0 (host 10.0.0.9) cannot start: "
                           "their interpreter ./env/bin/python is not there -- a Spark Connect server runs them in "
                           "each session's own directory"), said
    said = _said(ConnectError(runner.format("grpc")))
    assert "cannot import grpc (PySpark's Connect client needs it: pip install 'pyspark[connect]')" in said
    said = _said(ConnectError("Failed to plan Python data source initialize source: Traceback (most recent call "
                              "last):\n  File \".../python_streaming_source_runner.py\", line 227, in main\n"
                              "ModuleNotFoundError: No module named 'deltalog'"))
    assert said.startswith("The Python process the Spark Connect server plans a Python streaming source in")
    # A foreachBatch runner whose Python cannot import PySpark's Connect client dies before it says so.
    silent = ("Python worker failed to connect back.\n\nJVM stacktrace:\norg.apache.spark.SparkException\n\tat "
              "org.apache.spark.api.python.StreamingPythonRunner.init(StreamingPythonRunner.scala:80)\n\tat "
              "org.apache.spark.sql.connect.planner.StreamingForeachBatchHelper$.pythonForeachBatchWrapper")
    said = _said(ConnectError(silent))
    assert said.startswith("The Spark Connect server could not start the Python process it runs a stream's "
                           "foreachBatch in (deltalog's Delta sink)")
    assert "pip install 'pyspark[connect]'" in said
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED")
    assert worker_import_error(silent) is None  # a classic session's worker that did not connect back: not ours
