"""The same routing and engine over Spark Connect: a local Connect server (shipped inside pyspark) and
a client in a separate process (see ``connect_client.py``). The server's Python has PySpark's packages and
deltalog's dependencies but not deltalog, which each client ships with its session
(``spark.addArtifacts(zip, pyfile=True)``, docs/deployment.md#spark-connect); one client shows what a session
that does not is told, and what the artifacts do not reach (a stream's ``foreachBatch``)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from shipping import deltalog_zip, python_without

import deltalog

pytestmark = [pytest.mark.spark, pytest.mark.own_jvm]

HERE = Path(__file__).resolve().parent
DV_TABLE = HERE.parents[2] / "shared" / "conformance" / "kernel-rs-golden" / "dv-partitioned-with-checkpoint" / "delta"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env(tmp: Path, shipped: Path | None = None) -> dict[str, str]:
    """A client's environment (``shipped``: the zip of deltalog its session ships)."""
    import pyspark

    src = str(Path(deltalog.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).resolve().parent),
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_PID_DIR=str(tmp / "pids"),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join(p for p in (src, str(HERE), env.get("PYTHONPATH", "")) if p),
    )
    if shipped is not None:
        env["DELTALOG_SHIP"] = str(shipped)
    return env


def _server_env(tmp: Path) -> dict[str, str]:
    """The server's environment: its Python (PYSPARK_PYTHON, which it runs its clients' functions with) cannot
    import deltalog, and no PYTHONPATH leads to this checkout."""
    env = {k: v for k, v in _env(tmp).items() if k != "PYTHONPATH"}
    env["PYSPARK_PYTHON"] = str(python_without(tmp / "server-python"))
    return env


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """deltalog, zipped for ``spark.addArtifacts(..., pyfile=True)``."""
    return deltalog_zip(tmp_path_factory.mktemp("ship") / "deltalog.zip")


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if importlib.util.find_spec("grpc") is None:
        pytest.skip("Spark Connect needs pyspark[connect] (grpcio, ...)")
    tmp = tmp_path_factory.mktemp("connect")
    env = _server_env(tmp)
    sbin = Path(env["SPARK_HOME"]) / "sbin"
    port = _free_port()
    subprocess.run(
        [str(sbin / "start-connect-server.sh"), "--master", "local[2]",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.sql.warehouse.dir={tmp / 'warehouse'}",
         "--conf", "spark.sql.shuffle.partitions=2",
         "--conf", "spark.driver.extraJavaOptions=-XX:+UseSerialGC -XX:TieredStopAtLevel=1"],
        env=env, check=True, capture_output=True, timeout=60,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.skip("the Spark Connect server did not start within 60 s")
                time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        subprocess.run([str(sbin / "stop-connect-server.sh")], env=env, capture_output=True, timeout=60)


def test_format_delta_over_spark_connect(connect_url: str, shipped: Path, tmp_path: Path) -> None:
    if not DV_TABLE.is_dir():
        pytest.skip("conformance corpus is not available")
    out = subprocess.run(
        [sys.executable, str(HERE / "connect_client.py"), connect_url, str(tmp_path), str(DV_TABLE)],
        env=_env(tmp_path, shipped), capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts["session"] == "pyspark.sql.connect.session"
    assert (facts["count"], facts["count_v0"]) == (40, 20)
    assert facts["pruned_files"] == facts["files_k1"]
    assert facts["history"] == ["second", None]
    total, by_stats, by_both = facts["skip_files"]
    assert total > by_stats > by_both >= 1 and facts["skip_rows"] == [18, 18, 19, 19]
    assert facts["chain_files"] == [by_both, total] and facts["chain_rows"] == [[18, 36], [18, 36]]
    assert facts["shadow_rows"] == 0 and facts["bound"] == [by_stats, [18, 18, 19, 19]]
    assert facts["after_filter"] == [by_stats, by_stats, [18, 18, 19, 19]]
    assert facts["bound_filter"] == [by_stats, [18, 18, 19, 19]]
    assert facts["bound_shadowed"] == [total, [180, 180, 190, 190]]
    assert facts["dv_count"] == facts["dv_expected"]
    assert "CHECK constraint small" in str(facts["constraint"]) and facts["constraint_version"] == 0
    assert facts["flat"] == 7 and "parquet-mr" in str(facts["flat_writer"])
    assert facts["built"] == [["id", "day"], ["day"], 3]
    # the comment comes through; NOT NULL does not: the server's parquet reader makes every column nullable
    # (docs/porting.md, "Read DataFrames")
    assert facts["read_schema"] == [["id", True, {"comment": "key"}], ["day", True, {}]]
    assert facts["empty_read_schema"] == [["id", False, {"comment": "key"}], ["day", True, {}]]


def test_sql_and_catalog_tables_over_spark_connect(connect_url: str, shipped: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(HERE / "sql_catalog_client.py"), "connect", str(tmp_path), connect_url],
        env=_env(tmp_path, shipped), capture_output=True, text=True, timeout=300,
    )
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("FACTS ")), None)
    assert out.returncode == 0 and line is not None, out.stderr[-3000:]
    facts = json.loads(line[len("FACTS "):])
    assert facts["session"] == "pyspark.sql.connect.session"
    assert facts["update"] == 1 and facts["delete"] == 1
    assert facts["rows"] == [[1, "a"], [2, "B"]] and facts["v1"] == 3
    assert facts["changes"] == 3  # update pre/post image and the delete
    assert facts["history"] == ["DELETE", "UPDATE", "WRITE", "CREATE TABLE"]
    assert facts["merge"] == [2, 1, 1] and facts["people"] == [[1, "ANN"], [2, "bob"]]
    assert facts["kwargs"] == [["bob", "x"]]  # a view over a Delta table joined with a {df} argument
    # SQL temporary views over Delta tables were read through the data source path, which fails
    assert facts["temp_views"] == [[[1, "ANN"], [2, "bob"]], [["bob"]], 2] and facts["replaced_view"] == [[0]]
    assert facts["numbers"] == 3 and facts["forName"] == 2
    assert facts["zorder"] == 1 and facts["numbers_after"] == [[0], [1], [2]]  # Z-ordered in one Arrow task
    assert facts["optimize"] >= 2 and facts["vacuum_dry"] == 0
    assert facts["log_version"] == 3
    assert facts["tables_after_drop"] == []


def test_what_the_connect_server_needs(connect_url: str, shipped: Path, tmp_path: Path) -> None:
    """docs/deployment.md#spark-connect: a session whose server's Python lacks deltalog is told so in
    deltalog's words; the session's artifacts bring it to the server's Python workers, but not to the process
    the server runs a stream's foreachBatch in (deltalog's Delta sink), which needs it installed."""
    out = subprocess.run(
        [sys.executable, str(HERE / "shipping_client.py"), connect_url, str(tmp_path), str(shipped)],
        env=_env(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts["bare"].startswith("deltalog: The Spark Connect server's Python workers cannot import deltalog. "
                                    "Install deltalog"), facts["bare"]
    assert "PYSPARK_PYTHON in the server's environment" in facts["bare"]
    assert "spark.addArtifacts('deltalog.zip', pyfile=True)" in facts["bare"]
    assert "docs/deployment.md#spark-connect" in facts["bare"]
    assert facts["shipped"] == 20
    assert facts["sink"].startswith("deltalog: The Python process the Spark Connect server runs a stream's "
                                    "foreachBatch in (deltalog's Delta sink) cannot import deltalog."), facts["sink"]
    assert "do not reach this process" in facts["sink"]
