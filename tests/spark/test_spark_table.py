"""``DeltaTable`` (delta-spark's Python API) and the routing of ``format("delta")``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from sparkutil import data_files, rows, version

import deltalog
from deltalog.errors import TableNotFoundError
from deltalog.log.timestamps import to_millis
from deltalog.spark import DeltaTable, write
from deltalog.spark.session import is_registered

pytestmark = pytest.mark.spark

HISTORY_COLUMNS = [
    "version", "timestamp", "userId", "userName", "operation", "operationParameters", "job", "notebook",
    "clusterId", "readVersion", "isolationLevel", "isBlindAppend", "operationMetrics", "userMetadata",
    "engineInfo",
]


@pytest.fixture
def table(spark: Any, tmp_path: Path) -> str:
    from pyspark.sql import functions as F

    p = str(tmp_path / "t")
    write(spark.range(0, 6).withColumn("k", F.col("id") % 2), p, partitionBy=["k"], userMetadata="first")
    write(spark.range(6, 9).withColumn("k", F.col("id") % 2), p, mode="append")
    return p


def test_for_path_is_delta_table_to_df_and_alias(spark: Any, table: str, tmp_path: Path) -> None:
    dt = DeltaTable.forPath(spark, table)
    assert repr(dt) == f"DeltaTable({table!r})"
    assert sorted(r["id"] for r in rows(dt.toDF())) == list(range(9))
    assert dt.alias("t").toDF().select("t.id").count() == 9
    assert DeltaTable.isDeltaTable(spark, table)
    (tmp_path / "plain").mkdir()
    assert not DeltaTable.isDeltaTable(spark, str(tmp_path / "plain"))
    assert not DeltaTable.isDeltaTable(spark, str(tmp_path / "missing"))
    with pytest.raises(TableNotFoundError, match="DELTA_MISSING_DELTA_TABLE"):
        DeltaTable.forPath(spark, str(tmp_path / "plain"))
    with pytest.raises(TableNotFoundError, match="DELTA_MISSING_DELTA_TABLE"):
        DeltaTable.forName(spark, "no_such_table_anywhere")


def test_delete_and_update_through_an_alias(spark: Any, table: str) -> None:
    """As in delta-spark, ``alias("t")`` names the table in ``delete`` / ``update`` conditions and values."""
    dt = DeltaTable.forPath(spark, table).alias("t")
    dt.delete("t.id = 1 OR t.k = 0 AND t.id > 6")
    dt.update("t.id = 2", {"id": "t.id + 100", "k": "t.k"})
    assert sorted(r["id"] for r in rows(dt.toDF())) == [0, 3, 4, 5, 6, 7, 102]
    dt.update(set={"id": "t.id * 2"})  # no condition: every row
    assert sorted(r["id"] for r in rows(dt.toDF())) == [0, 6, 8, 10, 12, 14, 204]
    assert DeltaTable.forPath(spark, table).history(1).first().operationParameters["predicate"] == "[]"


def test_history_and_detail(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    h = dt.history()
    assert h.columns == HISTORY_COLUMNS
    got = [r.asDict() for r in h.collect()]
    assert [(r["version"], r["operation"], r["readVersion"]) for r in got] == [(1, "WRITE", 0), (0, "WRITE", None)]
    assert got[1]["operationParameters"] == {"mode": "ErrorIfExists", "partitionBy": '["k"]'}
    assert got[1]["userMetadata"] == "first"
    assert got[0]["isBlindAppend"] is True
    assert got[0]["operationMetrics"]["numOutputRows"] == "3"
    assert dt.history(1).count() == 1
    d = dt.detail().collect()[0].asDict()
    snap = deltalog.Table(table).snapshot()
    assert d["format"] == "delta" and d["id"] == snap.metadata.id and d["location"] == "file:" + os.path.abspath(table)
    assert d["partitionColumns"] == ["k"] and d["numFiles"] == snap.num_files()
    assert d["sizeInBytes"] == sum(snap.add_files().column("size").to_pylist())
    assert (d["minReaderVersion"], d["minWriterVersion"]) == (1, 2)
    assert d["createdAt"] is not None and d["lastModified"] >= d["createdAt"]


def test_restore_and_vacuum(spark: Any, table: str) -> None:
    dt = DeltaTable.forPath(spark, table)
    log = os.path.join(table, "_delta_log")
    for v, day in enumerate(("2024-01-01", "2024-02-01")):
        ts = to_millis(f"{day}T00:00:00Z") / 1000
        os.utime(os.path.join(log, f"{v:020d}.json"), (ts, ts))
    appended = deltalog.Table(table).snapshot().num_files() - deltalog.Table(table).snapshot(0).num_files()
    metrics = dt.restoreToVersion(0).collect()[0].asDict()
    assert metrics["num_removed_files"] == appended and metrics["num_restored_files"] == 0
    assert dt.toDF().count() == 6
    assert dt.history(1).collect()[0]["operation"] == "RESTORE"
    assert dt.restoreToTimestamp("2024-02-15").collect()[0]["num_restored_files"] == appended
    assert dt.toDF().count() == 9
    from pyspark.errors import AnalysisException

    for call, condition in ((lambda: dt.restoreToVersion(50), "DELTA_CANNOT_RESTORE_TABLE_VERSION"),
                            (lambda: dt.restoreToTimestamp("2999-01-01"), "DELTA_CANNOT_RESTORE_TIMESTAMP_GREATER"),
                            (lambda: dt.restoreToTimestamp("2001-01-01"), "DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER")):
        with pytest.raises(AnalysisException) as caught:
            call()
        assert caught.value.getCondition() == condition
    write(spark.range(3).selectExpr("id", "id % 2 AS k"), table, mode="overwrite")
    before = data_files(table)
    dry = dt.vacuum(0.0, dryRun=True, enforceRetentionDuration=False)
    assert dry.columns == ["path"]
    doomed = sorted(r["path"] for r in dry.collect())
    assert doomed and set(doomed) < set(before)
    assert dt.vacuum(0.0, enforceRetentionDuration=False).count() == len(doomed)
    assert data_files(table) == sorted(set(before) - set(doomed))
    assert dt.toDF().count() == 3


def test_format_routing_leaves_other_formats_to_spark(spark: Any, tmp_path: Path) -> None:
    assert is_registered()
    pq_dir = str(tmp_path / "plain")
    spark.range(4).write.format("parquet").mode("overwrite").save(pq_dir)
    assert spark.read.format("parquet").load(pq_dir).count() == 4
    assert not os.path.isdir(os.path.join(pq_dir, "_delta_log"))
    assert not any(n.startswith("_SUCCESS") for n in os.listdir(pq_dir))
    p = str(tmp_path / "t")
    spark.range(5).write.save(p, format="delta", mode="append", partitionBy=None, userMetadata="via save")
    assert spark.read.load(p, format="delta").count() == 5
    assert version(p) == 0


def test_exception_names_of_delta_spark() -> None:
    from deltalog.spark import exceptions

    for name in ("ConcurrentAppendException", "ConcurrentDeleteReadException", "ConcurrentDeleteDeleteException",
                 "ConcurrentTransactionException", "MetadataChangedException", "ProtocolChangedException",
                 "ConcurrentWriteException", "DeltaConcurrentModificationException"):
        assert issubclass(getattr(exceptions, name), deltalog.ConcurrentModificationException)
    from pyspark.errors import PySparkException

    # as in delta-spark, the conflicts raised at the Spark API are PySparkExceptions with Delta's condition
    assert issubclass(exceptions.ConcurrentAppendException, deltalog.ConcurrentAppendException)
    assert issubclass(exceptions.ConcurrentAppendException, PySparkException)
