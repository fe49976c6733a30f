"""``DeltaTable.maintain()`` on the Spark engine: the kernel's plan, compaction and purge through Spark's
OPTIMIZE / REORG, maintenance after a Spark write (``deltalog.maintenance.afterCommit``), and the health columns
``detail()`` / ``DESCRIBE DETAIL`` add after delta-spark's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sparkutil import rows

import deltalog
from deltalog.errors import InvalidArgumentError
from deltalog.spark import DeltaTable

pytestmark = pytest.mark.spark


def _table(path: Path) -> str:
    """v0: 300 rows in p=a with deletion vectors on; v1-v5: a row each in p=b; v6: 30% of a deleted (DV)."""
    deltalog.write_table(path, pa.table({"id": list(range(300)), "p": ["a"] * 300}), partition_by=["p"],
                         properties={"delta.enableDeletionVectors": "true"})
    for i in range(5):
        deltalog.write_table(path, pa.table({"id": [1000 + i], "p": ["b"]}), mode="append")
    deltalog.Table(path).delete("id < 90")
    return str(path)


def test_maintain_plans_and_runs_with_spark(spark: Any, tmp_path: Path) -> None:
    path = _table(tmp_path / "t")
    before = rows(spark.read.format("delta").load(path))
    assert len(before) == 215
    table = DeltaTable.forPath(spark, path)
    detail = table.detail().first()
    assert (detail.numFiles, detail.numRecords, detail.numDeletedRecords, detail.numFilesWithDeletionVectors,
            detail.numSmallFiles, detail.commitsSinceCheckpoint) == (6, 215, 90, 1, 6, 7)
    assert spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first().numRecords == 215
    plan = table.maintain(dryRun=True).collect()
    assert [(r.action, r.numFiles, r.status) for r in plan] == [("compact", 5, "planned"), ("purge", 1, "planned")]
    assert deltalog.Table(path).latest_version() == 6
    done = table.maintain().collect()
    assert [(r.action, r.status, r.version, r.filesDone) for r in done] == [("compact", "done", 7, 5),
                                                                           ("purge", "done", 8, 1)]
    history = {h["version"]: h["operation"] for h in deltalog.Table(path).history()}
    assert (history[7], history[8]) == ("OPTIMIZE", "REORG")
    assert rows(spark.read.format("delta").load(path)) == before
    health = deltalog.Table(path).health()
    assert (health.num_files, health.dv_files, health.num_deleted_rows) == (2, 0, 0)
    assert table.maintain(dryRun=True).count() == 0
    after = table.detail().first()
    assert (after.numFiles, after.numRecords, after.numDeletedRecords, after.numFilesWithDeletionVectors) == (
        2, 215, 0, 0)
    with pytest.raises(InvalidArgumentError, match="dryRun needs to be a bool"):
        table.maintain(dryRun="yes")  # type: ignore[arg-type]


def test_maintenance_after_a_spark_write(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "w")
    deltalog.write_table(path, pa.table({"id": [0], "p": ["a"]}), partition_by=["p"], properties={
        "deltalog.maintenance.afterCommit": "true", "deltalog.maintenance.minSmallFiles": "3"})
    spark.range(1, 2).selectExpr("id", "'a' AS p").write.format("delta").mode("append").save(path)
    assert deltalog.Table(path).latest_version() == 1  # two small files: below the threshold
    spark.range(2, 3).selectExpr("id", "'a' AS p").write.format("delta").mode("append").save(path)
    table = deltalog.Table(path)
    assert table.latest_version() == 3 and table.history(1)[0]["operation"] == "OPTIMIZE"
    assert table.snapshot().add_files().num_rows == 1
    assert rows(spark.read.format("delta").load(path)) == [{"id": i, "p": "a"} for i in range(3)]
