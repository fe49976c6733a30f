"""The fault sweep (``tests/faults/faultkit.py``) through Spark: UPDATE, MERGE, OPTIMIZE and a Spark
append, each with interrupts, full disks and I/O errors injected before and after every storage step
the driver takes (commit, checksum, checkpoint, deletion vectors written by the driver).

Process death is swept by the kernel sweep (``tests/faults``) and, for Spark, by
``test_spark_merge_survives_process_death`` below in a separate driver process: a forked driver would
share its parent's JVM gateway, so the in-process sweep injects only faults that raise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
import faultkit

import deltalog

pytestmark = pytest.mark.spark

EVERY = os.environ.get("DELTALOG_FAULTS", "").strip().lower() == "all"


def data(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "part": ["a" if i % 2 else "b" for i in ids],
                     "x": [i / 4 for i in ids]})


def created(root: str, **props: str) -> None:
    path = os.path.join(root, "t")
    deltalog.write_table(path, data(range(0, 20)), properties=props or None)
    deltalog.write_table(path, data(range(20, 40)), mode="append")


def scenarios(spark: Any) -> list[faultkit.Scenario]:
    from deltalog.spark import DeltaTable

    def table(root: str) -> Any:
        return DeltaTable.forPath(spark, os.path.join(root, "t"))

    def merge(root: str) -> None:
        source = spark.createDataFrame(data(range(30, 50)).to_pandas()).withColumn("x", spark_lit(9.0))
        (table(root).alias("t").merge(source.alias("s"), "t.id = s.id")
         .whenMatchedUpdate(set={"x": "s.x"}).whenNotMatchedInsertAll().execute())

    def append(root: str) -> None:
        spark.createDataFrame(data(range(100, 110)).to_pandas()).write.format("delta").mode("append").save(
            os.path.join(root, "t"))

    return [
        faultkit.Scenario(
            "spark update with deletion vectors",
            lambda r: created(r, **{"delta.enableDeletionVectors": "true"}),
            lambda r: table(r).update("id < 5", {"x": "x + 1"}),
            deltars_rows=False,
        ),
        faultkit.Scenario("spark merge", created, merge),
        # one file: the MERGE writes in one job (``_merge_one_pass``)
        faultkit.Scenario("spark merge into one file", lambda r: deltalog.write_table(
            os.path.join(r, "t"), data(range(0, 40))), merge),
        faultkit.Scenario("spark optimize", created, lambda r: table(r).optimize().executeCompaction()),
        faultkit.Scenario("spark append", created, append),
    ]


def spark_lit(value: float) -> Any:
    from pyspark.sql import functions as F

    return F.lit(value)


@pytest.mark.other_lane
def test_spark_operations_survive_every_fault(spark: Any, rs: Any, tmp_path: Path) -> None:
    """Every operation's commit takes the same storage steps (the commit file, then the checksum), so in
    ``make test`` the operations share the sample: odd and even sampled cases alternate between them, each
    case runs under at least two operations, and every operation meets a fault before and after its commit.
    ``DELTALOG_FAULTS=all`` (``make test-faults``) runs every case under every operation."""
    failures: list[str] = []
    for i, scenario in enumerate(scenarios(spark)):
        work = tmp_path / scenario.name.replace(" ", "-")
        report = faultkit.sweep(scenario, str(work), rs, every=EVERY, runner=faultkit.run_inline,
                                modes=faultkit.RAISING_MODES, share=None if EVERY else (i, 2))
        faultkit.record(report, EVERY, runner="inline")
        assert report.cases >= (len(report.points) if EVERY else len(report.points) // 2) > 0
        failures += [f"{scenario.name}: {f.case}: {f.problem}" for f in report.failures]
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:12])


DRIVER = textwrap.dedent('''
    import os, sys
    sys.path.insert(0, sys.argv[1])
    import faultkit
    from deltalog.spark import DeltaTable, local_session
    from deltalog.storage import local

    root, step = sys.argv[2], int(sys.argv[3])
    spark = local_session("fault-driver")
    source = spark.createDataFrame([(i, "c", 9.0) for i in range(30, 50)], "id long, part string, x double")

    def merge(at):
        (DeltaTable.forPath(spark, os.path.join(at, "t")).alias("t").merge(source.alias("s"), "t.id = s.id")
         .whenMatchedUpdate(set={"x": "s.x"}).whenNotMatchedInsertAll().execute())

    if len(sys.argv) > 4:  # first the reference MERGE, without faults, in the same driver
        local.OS_OPS = faultkit.FaultOps()
        merge(sys.argv[4])
        print("POINTS", len(local.OS_OPS.points), *local.OS_OPS.points, flush=True)
    local.OS_OPS = faultkit.FaultOps((step, "before"), "kill")
    merge(root)
''')


@pytest.mark.own_jvm
def test_spark_merge_survives_process_death(rs: Any, tmp_path: Path) -> None:
    """A Spark driver killed before a storage step of MERGE (every step with DELTALOG_FAULTS=all; else the
    link that publishes the commit file) leaves the old or the new table, never a broken one."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    src = str(Path(deltalog.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    faults = str(Path(__file__).resolve().parents[1] / "faults")
    template = tmp_path / "template"
    created(str(template))
    before = faultkit.table_state(str(template / "t"))
    assert before is not None

    def run(root: Path, step: int, reference: Path | None = None) -> subprocess.CompletedProcess[str]:
        import shutil

        for r in (root, reference):
            if r is not None:
                shutil.copytree(template, r)
        args = [faults, str(root), str(step), *([str(reference)] if reference else [])]
        return subprocess.run([sys.executable, "-c", DRIVER, *args], env=env, capture_output=True, text=True,
                              timeout=600)

    # The first driver runs the reference MERGE (the expected table, the number of storage steps), then
    # the MERGE killed at step 2 (before the link that publishes the commit): one JVM start fewer.
    first = run(tmp_path / "kill-2", 2, reference=tmp_path / "reference")
    assert "POINTS" in first.stdout, first.stderr[-3000:]
    points = int(first.stdout.split("POINTS", 1)[1].split()[0])
    expected = faultkit.versions_rows(str(tmp_path / "reference" / "t"), before[0])
    expected[before[0]] = before[1]
    steps = range(points) if EVERY else [2]  # after write_new of the commit's temp file, before its link
    assert points > 2
    problems = []
    for step in steps:
        root = tmp_path / f"kill-{step}"
        done = first if step == 2 else run(root, step)
        if done.returncode not in (faultkit.KILL_EXIT, 0):
            problems.append(f"step {step}: exit {done.returncode}: {done.stderr[-2000:]}")
            continue
        scenario = faultkit.Scenario("spark merge (process death)", created, lambda r: None)
        result = {"outcome": "killed" if done.returncode == faultkit.KILL_EXIT else "ok"}
        problems += [f"step {step}: {p}" for p in
                     faultkit.verify(scenario, str(root), result, "kill", before[0], expected, rs)]
    assert not problems, "\n".join(problems)
