"""Unmodified delta-spark programs (``delta_programs/``, written the way delta-spark's docs and examples
write them) run through ``deltalog run`` / ``python -m deltalog.spark.run``: ``import delta`` and friends
resolve to deltalog, sessions built with delta-spark's JVM settings start and are routed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import deltalog

pytestmark = pytest.mark.spark

PROGRAMS = Path(__file__).resolve().parent / "delta_programs"


def _run(command: list[str], tmp: Path, **env: str) -> tuple[dict[str, Any], str]:
    src = str(Path(deltalog.__file__).resolve().parent.parent)
    full = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p), **env)
    if "PYSPARK_SUBMIT_ARGS" not in env:
        full.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run([*command, str(tmp)], env=full, capture_output=True, text=True, timeout=600, cwd=tmp)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("FACTS ")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(line[len("FACTS "):]), done.stderr


@pytest.mark.own_jvm
def test_quickstart_program_with_delta_pip_and_packages(tmp_path: Path) -> None:
    facts, stderr = _run([sys.executable, "-m", "deltalog.cli", "run", str(PROGRAMS / "quickstart.py")], tmp_path,
                         PYSPARK_SUBMIT_ARGS="--packages io.delta:delta-spark_2.13:4.0.0 pyspark-shell")
    assert facts["latest"] == [5, 6, 7, 8, 9] and facts["v0"] == [0, 1, 2, 3, 4]
    assert facts["after_merge"] == 20
    assert facts["operations"] == ["WRITE", "WRITE", "UPDATE", "DELETE", "MERGE"]
    assert facts["last_operation"] == "MERGE"
    assert facts["files_after_optimize"] == 1
    assert facts["restored"] == 5
    assert facts["is_delta"] == [True, False]
    assert facts["converted"] == 3
    assert facts["people"] == [[1, "ann"]]
    assert facts["session_catalog"] is None
    # one line says what was dropped (the --packages of PYSPARK_SUBMIT_ARGS, the builder's JVM settings)
    dropped = [ln for ln in stderr.splitlines() if "ignoring delta-spark's JVM settings" in ln]
    assert any("--packages io.delta:delta-spark_2.13:4.0.0" in ln for ln in dropped), stderr[-2000:]
    assert any("DeltaSparkSessionExtension" in ln and "DeltaCatalog" in ln for ln in dropped), stderr[-2000:]


@pytest.mark.own_jvm
def test_sql_pipeline_program(tmp_path: Path) -> None:
    facts, _ = _run([sys.executable, "-m", "deltalog.spark.run", str(PROGRAMS / "sql_pipeline.py")], tmp_path)
    assert facts["merge"] == [2, 1, 1]
    assert facts["student"] == [[1, "ann2", 20], [2, "BOB", 21], [4, "dee", 22]]
    assert facts["v1"] == 3
    assert facts["history"] == ["MERGE", "DELETE", "UPDATE", "WRITE", "CREATE TABLE"]
    assert facts["location_in_warehouse"] is True
    assert facts["path_count"] == 5 and facts["path_history"] == 2
    assert facts["vacuum"] == 1
    assert facts["optimize"] == 1
    assert facts["restore"] is True and facts["restored_count"] == 10
    assert facts["constraint"] != "accepted"
    assert facts["clone"] == 3
    assert facts["tables"] == ["clone_of_student", "student", "updates"]
    assert facts["tables_after_drop"] == ["clone_of_student", "student"]
    assert facts["view_sees_append"] == 13 and facts["view_after_delete"] == 10  # a temp view follows the table
    assert facts["vacuum_api_columns"] == []  # DeltaTable.vacuum() returns an empty DataFrame
    assert deltalog.Table(str(tmp_path / "warehouse" / "student")).latest_version() == 5


@pytest.mark.own_jvm
def test_streaming_upserts_program(tmp_path: Path) -> None:
    facts, _ = _run([sys.executable, "-m", "deltalog.spark.run", str(PROGRAMS / "streaming_upserts.py")], tmp_path)
    assert facts["sink"] == 6
    assert facts["totals"] == [[0, 9], [1, 12], [2, 15]]
    assert facts["conflict_classes"] is True
    assert facts["missing"] == "AnalysisException"


@pytest.mark.own_jvm
def test_run_usage_errors(tmp_path: Path) -> None:
    src = str(Path(deltalog.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=src)
    done = subprocess.run([sys.executable, "-m", "deltalog.cli", "run", str(tmp_path / "nope.py")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "nope.py" in done.stderr and "is not a file" in done.stderr
    job = tmp_path / "exits.py"
    job.write_text("import sys\nfrom delta.tables import DeltaTable\nprint(DeltaTable.__module__, sys.argv[1:])\n"
                   "sys.exit(3)\n")
    done = subprocess.run([sys.executable, "-m", "deltalog.cli", "run", str(job), "--flag", "x"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stdout.strip() == "deltalog.spark.api.table ['--flag', 'x']"


def test_register_after_a_delta_spark_session_was_built(spark: Any) -> None:
    """Outside ``deltalog run``: a session built with delta-spark's catalog setting works once registered."""
    from deltalog.spark import register

    spark.conf.set("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    try:
        register(spark)
        assert spark.conf.get("spark.sql.catalog.spark_catalog", None) is None
        assert spark.sql("SHOW TABLES").count() >= 0
    finally:
        spark.conf.unset("spark.sql.catalog.spark_catalog")
