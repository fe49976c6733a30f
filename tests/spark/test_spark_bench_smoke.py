"""The Spark benchmarks of issue 15 run end to end at tiny sizes: scans over
many files (``bench/scan_planning.py``), MERGE / DELETE / UPDATE / OPTIMIZE against hand-written jobs and
delta-rs (``bench/spark_dml.py``), DELETE with deletion vectors plus the scans after it (``bench/dml_dv.py``),
the scans before and after ``maintain`` (``bench/maintain_dv.py``) and issue 55's sweep (``bench/sweep.py``).
They record what the issue counts -- no status/list call per data file in deltalog's planning, only the
matching files read by a selective scan, the rows each command changed, the Spark jobs of each side -- and
the report renders them. Times are never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

# The scans and the deletion-vector DELETE run in a driver process of their own (marked own_jvm, so that
# make test runs them in the other lane, beside the shared-session Spark tests); the DML benchmarks run
# in the shared session.
SCANS = textwrap.dedent('''
    import sys
    sys.path.insert(0, sys.argv[1])
    import dml_dv, dv_bound, maintain_dv, scan_planning
    common = ["--quick", "--results-dir", sys.argv[2], "--data-dir", sys.argv[3]]
    assert scan_planning.main([*common, "--files", "20", "60"]) == 0
    assert dv_bound.main([*common, "--rows", "20000", "--files", "4"]) == 0
    assert dml_dv.main([*common, "--rows", "40000", "--files", "4"]) == 0
    assert maintain_dv.main([*common, "--rows", "40000", "--files", "4"]) == 0
''')


def _result(results: Path, workload: str) -> dict[str, object]:
    doc: dict[str, object] = json.loads((results / f"{workload}.json").read_text())
    assert float(doc["deltalog_median"]) > 0 and float(doc["anchor_median"]) > 0, doc  # type: ignore[arg-type]
    return doc


def _run(driver: str, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    proc = subprocess.run(
        [sys.executable, "-c", driver, str(ROOT / "bench"), str(results), str(tmp_path / "data")],
        capture_output=True, text=True, timeout=1200, check=False, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return results, env


def _report(results: Path, env: dict[str, str], tmp_path: Path) -> str:
    report = tmp_path / "performance.md"
    subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--results-dir", str(results),
                    "--out", str(report)], check=True, env=env, capture_output=True)
    return report.read_text()


@pytest.mark.own_jvm
def test_spark_scan_benchmarks_quick(tmp_path: Path) -> None:
    results, env = _run(SCANS, tmp_path)
    for n in (20, 60):
        extra = _result(results, f"spark-scan-files-{n}")["extra"]
        assert isinstance(extra, dict)
        assert extra["deltalog_files_discovered"] == 0
        assert extra["anchor_files_discovered"] == n == extra["paths_files_discovered"]
    selective = _result(results, "spark-scan-selective")["extra"]
    assert isinstance(selective, dict) and selective["files_read"] == selective["matching_files"] == 1
    for workload in ("spark-scan-dv-all", "spark-scan-dv-one", "spark-count-dv"):
        _result(results, workload)
    everyday = _result(results, "spark-scan-everyday")["extra"]
    assert isinstance(everyday, dict) and everyday["files"] == 60
    assert all(everyday[shape]["ratio"] > 0 for shape in ("agg", "groupby", "materialise"))
    bound = _result(results, "dv-bound-20000")["extra"]
    assert isinstance(bound, dict) and set(bound["agg"]) == {"floor", "told apart", "one-key join", "sized join",
                                                                   "bitmap", "binary bitmap", "reader floor",
                                                                   "reader bitmap", "dv"}
    dml_dv = _result(results, "dml-dv")["extra"]
    assert isinstance(dml_dv, dict)
    assert dml_dv["deleted_rows"] == 400 and dml_dv["files_with_deletion_vector"] == 4
    maintained = _result(results, "scan-dv-after-maintain")["extra"]
    assert isinstance(maintained, dict) and maintained["rows"] == 38000 and maintained["steps"]
    _result(results, "scan-dv-before-maintain")
    text = _report(results, env, tmp_path)
    assert "| 60 |" in text and (tmp_path / "performance_scan_files.png").exists()
    assert "spark-scan-dv-one" in text


def test_spark_dml_benchmarks_quick(spark: Any, tmp_path: Path) -> None:
    """In the suite's shared session (the bench leaves a session it was given running)."""
    results = tmp_path / "results"
    argv = ["--quick", "--results-dir", str(results), "--data-dir", str(tmp_path / "data")]
    sys.path.insert(0, str(ROOT / "bench"))  # the benchmarks import each other by module name
    try:
        import spark_dml

        assert spark_dml.main(argv, spark=spark) == 0
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert spark.range(1).count() == 1  # still running
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    for workload in ("spark-merge", "spark-merge-deltars", "spark-delete-cow", "spark-update-cow", "spark-delete-dv",
                     "spark-update-dv", "spark-optimize-compact-deltars", "spark-zorder-deltars",
                     "spark-zorder-sortwrite"):
        _result(results, workload)
    text = _report(results, env, tmp_path)
    assert "spark-merge" in text and "spark-zorder-sortwrite" in text


def test_spark_sweep_quick(spark: Any, tmp_path: Path) -> None:
    """Issue 55's sweep (``bench/sweep.py``) at its smallest: one read size and shape, one MERGE, in the shared
    session; every cell lands in sweep.json with both sides timed and the jobs counted, and the report renders
    the Sweep section with its plot."""
    results = tmp_path / "results"
    argv = ["--quick", "--rows", "20000", "--shapes", "agg", "--merges", "100:1000", "--results-dir", str(results),
            "--data-dir", str(tmp_path / "data"), "--plot", str(tmp_path / "plot.png")]
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import sweep

        assert sweep.main(argv, spark=spark) == 0
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert spark.range(1).count() == 1  # still running
    doc = json.loads((results / "sweep.json").read_text())
    assert doc["complete"] and doc["quick"]
    kinds = [(c["kind"], c["shape"], c["ours"], c["anchor"]) for c in doc["cells"]]
    assert kinds == [("read", "agg", "dv", "floor"), ("read", "agg", "dv", "cow"), ("read", "agg", "cow", "parquet"),
                     ("plan", "load()", "dv", "cow"), ("merge", "upsert", "merge", "hand")]
    for c in doc["cells"]:
        assert c["ours_s"] > 0 and c["anchor_s"] > 0 and c["ratio"] > 0
    merge = doc["cells"][-1]
    assert merge["anchor_jobs"] > 0 and merge["ours_jobs"] > 0 and merge["jobs_target"] == merge["anchor_jobs"] + 2
    assert doc["cells"][0]["anchor_jobs"] > 0  # the floor scans
    assert (tmp_path / "plot.png").exists()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    text = _report(results, env, tmp_path)
    assert "## Sweep" in text and "| 100 | 1,000 |" in text and (tmp_path / "sweep.png").exists()
    assert "other PySpark versions" not in text  # no lane has run
    lanes = results / sweep.LANES_DIR  # what `sweep.py --lanes` keeps of a lane's run
    lanes.mkdir()
    (lanes / "3.5.json").write_text(json.dumps(doc))
    text = _report(results, env, tmp_path)
    row = next(line for line in text.splitlines() if line.startswith(f"| {doc['environment']['pyspark']} |"))
    assert "(100 into 1,000)" in row and row.endswith(f"| {sum(c['holds'] is False for c in doc['cells'])} of 5 |")
    assert sweep.without_lanes(["--quick", "--lanes", "3.5", "4.0", "--only", "merge"]) == \
        ["--quick", "--only", "merge"]
