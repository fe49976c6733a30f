"""The Spark engine on a real standalone cluster: a master and one worker started with pyspark's own
``spark-class`` on loopback, and a driver in a separate process (see ``cluster_client.py``) that writes,
reads and time-travels through ``format("delta")`` with executors in their own JVM, then gives them a Python
that cannot import deltalog and ships deltalog in each way docs/deployment.md#executors tells. The daemons
are always stopped (``finally``, and ``atexit`` should the interpreter exit first)."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shipping import deltalog_zip, deps_directory, packed_env, python_without, tar_gz, zip_of

import deltalog

pytestmark = [pytest.mark.spark, pytest.mark.own_jvm]

HERE = Path(__file__).resolve().parent
_RUNNING: list[subprocess.Popen[bytes]] = []


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a daemon this module started (its own process group), politely first."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


@atexit.register
def _stop_all() -> None:
    for proc in list(_RUNNING):
        _stop(proc)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env(tmp: Path) -> dict[str, str]:
    import pyspark

    src = str(Path(deltalog.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).resolve().parent),
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_WORKER_DIR=str(tmp / "work"),
        PYSPARK_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join(p for p in (src, str(HERE), env.get("PYTHONPATH", "")) if p),
    )
    return env


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    spark_class = Path(env["SPARK_HOME"]) / "bin" / "spark-class"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(spark_class), *args], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    _RUNNING.append(proc)
    return proc


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
    raise AssertionError(f"Spark daemon did not report {text!r} within {seconds} s:\n{tail}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("cluster")
    (tmp / "logs").mkdir()
    (tmp / "work").mkdir()
    env = _env(tmp)
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    lean = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    # No PYTHONPATH to this checkout: the executors' Python workers find deltalog where each driver says.
    env_daemon = {**{k: v for k, v in env.items() if k != "PYTHONPATH"},
                  "SPARK_DAEMON_JAVA_OPTS": lean, "SPARK_DAEMON_MEMORY": "256m"}
    master_log, worker_log = tmp / "master.log", tmp / "worker.log"
    procs = []
    try:
        master = _start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                         "--webui-port", "0"], env_daemon, master_log)
        procs.append(master)
        _wait_for(master_log, "I have been elected leader", master, 60)
        worker = _start(["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                         "--memory", "2g", "--webui-port", "0", "--work-dir", str(tmp / "work")],
                        env_daemon, worker_log)
        procs.append(worker)
        _wait_for(worker_log, "Successfully registered with master", worker, 60)
        yield url
    finally:
        for proc in reversed(procs):
            _stop(proc)
            _RUNNING.remove(proc)


@pytest.fixture(scope="module")
def facts(cluster: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What one driver (``cluster_client.py``) found on the cluster: its executors have PySpark's packages but
    neither deltalog nor pyroaring (one of its native dependencies) unless a step gives them an interpreter
    that has them or ships them."""
    tmp = tmp_path_factory.mktemp("driver")
    bare = python_without(tmp / "bare", "pyroaring")
    env_tgz = tar_gz(tmp / "env.tar.gz", packed_env(tmp / "env", "pyroaring", rest=tmp / "bare"))
    deps_tgz = tar_gz(tmp / "deps.tar.gz", deps_directory(tmp / "deps", "pyroaring"))
    zipped, native = deltalog_zip(tmp / "deltalog.zip"), zip_of(tmp / "native.zip", "pyroaring")
    env = {k: v for k, v in _env(tmp).items() if k != "PYSPARK_PYTHON"}  # the builder's spark.pyspark.python
    (tmp / "work").mkdir()
    out = subprocess.run(
        [sys.executable, str(HERE / "cluster_client.py"), cluster, str(tmp / "work"), str(bare), str(env_tgz),
         str(deps_tgz), str(zipped), str(native)],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp / "work",
    )
    assert out.returncode == 0, out.stderr[-3000:]
    found: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_format_delta_on_a_standalone_cluster(cluster: str, facts: dict[str, Any]) -> None:
    assert facts["master"] == cluster and facts["executors"] == 1
    assert (facts["count"], facts["count_v0"], facts["kernel_rows"]) == (150, 100, 150)
    assert facts["k1"] == 25 + 13
    assert facts["history"] == ["more", None]
    assert facts["flat"] == list(range(15)) and facts["flat_v0"] == 10


def test_what_the_executors_need(facts: dict[str, Any]) -> None:
    """docs/deployment.md#executors: deltalog's error names the executor and the fix; a packed environment
    (``spark.archives=env.tar.gz#env`` with ``spark.pyspark.python=./env/bin/python``) and a dependency
    directory (``deps.tar.gz#deps`` on ``PYTHONPATH``) ship deltalog and pyroaring; ``spark.submit.pyFiles``
    ships deltalog but not pyroaring's native code."""
    assert facts["python"] == "./env/bin/python"  # the builder's spark.pyspark.python, honoured by configure()
    assert facts["env"] == 20 and facts["deps"] == 20
    executor = "deltalog: Spark's Python workers on the executors (executor 0 on host 127.0.0.1) cannot import "
    assert facts["bare"].startswith(executor + "deltalog. Install deltalog (pip install deltalog"), facts["bare"]
    assert "spark.archives" in facts["bare"] and "docs/deployment.md#executors" in facts["bare"]
    assert facts["pyfiles"].startswith(
        executor + "pyroaring (deltalog needs it): the package is there but not its native code -- a package "
        "zipped for spark.submit.pyFiles or a pyfile artifact cannot load native code."), facts["pyfiles"]
