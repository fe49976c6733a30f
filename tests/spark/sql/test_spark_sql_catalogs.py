"""Catalog Delta tables in a Hive metastore (Derby, in a temporary directory): created, written and queried
with SQL and the DataFrame API in one process, then found, read, written and dropped by a second process
on the same metastore. The client script is ``sql_catalog_client.py`` (its Connect mode runs in
test_spark_connect.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import deltalog

pytestmark = [pytest.mark.spark, pytest.mark.own_jvm]

HERE = Path(__file__).resolve().parents[1]  # tests/spark: the client scripts


def client(*args: str) -> dict[str, Any]:
    src = str(Path(deltalog.__file__).resolve().parent.parent)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p))
    done = subprocess.run([sys.executable, str(HERE / "sql_catalog_client.py"), *args], env=env,
                          capture_output=True, text=True, timeout=600, cwd=args[1])
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("FACTS ")), None)
    assert done.returncode == 0 and line is not None, done.stdout[-3000:] + done.stderr[-5000:]
    facts: dict[str, Any] = json.loads(line[len("FACTS "):])
    return facts


def test_hive_metastore_tables_across_sessions(tmp_path: Path) -> None:
    work = str(tmp_path)
    first = client("hive-write", work)
    assert first["catalog"] == "hive"
    assert first["orders"] == [[1, 10.0, "mon"], [3, 10.0, "tue"], [4, 40.0, "wed"]]
    assert first["v1"] == 3
    assert first["history"] == ["MERGE", "UPDATE", "WRITE", "CREATE TABLE"]
    assert first["numbers"] == 8 and first["forName"] == 3
    assert first["tables"] == ["daily", "numbers", "orders"]
    assert first["provider"].lower() == "delta"
    orders = tmp_path / "warehouse" / "sales.db" / "orders"
    assert deltalog.Table(str(orders)).latest_version() == 3

    second = client("hive-read", work)
    assert second["tables"] == ["daily", "numbers", "orders"]
    assert second["daily"] == [["mon", 10.0], ["tue", 10.0], ["wed", 40.0]]
    assert second["numbers"] == 5
    assert second["location"].rstrip("/").endswith("warehouse/sales.db/numbers")
    assert second["tables_after_drop"] == ["daily", "orders"]
    assert not (tmp_path / "warehouse" / "sales.db" / "numbers").exists()  # a managed table's data goes with it
