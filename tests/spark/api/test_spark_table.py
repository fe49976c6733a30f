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
    assert dt.vacuum(0.0, enforceRetentionDuration=False).count() == 0  # an empty DataFrame, as delta-spark
    assert data_files(table) == sorted(set(before) - set(doomed))
    assert dt.toDF().count() == 3


def test_timestamps_without_a_zone_are_in_the_session_time_zone(spark: Any, table: str, tmp_path: Path) -> None:
    """delta-spark casts a time-travel / change-feed / restore timestamp to Spark's TIMESTAMP, so
    '2024-01-01 06:00:00' is 06:00 in spark.sql.session.timeZone; deltalog read it as UTC (a version off)."""
    import datetime as dt

    deltalog.Table(table).set_properties({"delta.enableChangeDataFeed": "true"})  # version 2
    write(spark.range(100, 101).selectExpr("id", "id % 2 AS k"), table, mode="append")  # version 3
    log = os.path.join(table, "_delta_log")
    for v, hour in enumerate((0, 10, 15, 20)):
        ts = to_millis(f"2024-01-01T{hour:02d}:00:00Z") / 1000
        os.utime(os.path.join(log, f"{v:020d}.json"), (ts, ts))
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")  # UTC-5 in January
    try:
        at = "2024-01-01 06:00:00"  # 11:00 UTC: version 1 (06:00 UTC would be version 0)
        assert spark.read.format("delta").option("timestampAsOf", at).load(table).count() == 9
        assert spark.read.format("delta").option("timestampAsOf", "2024-01-01 04:00:00").load(table).count() == 6
        assert spark.sql(f"SELECT count(*) FROM delta.`{table}` TIMESTAMP AS OF '{at}'").first()[0] == 9
        # the change feed from 11:00 UTC starts at version 2 (from 06:00 UTC: version 1, without the feed)
        changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingTimestamp", at)
        assert [r["id"] for r in changes.load(table).collect()] == [100]
        got: list[int] = []  # a stream starting at 11:00 UTC reads the changes from version 2 on
        query = (spark.readStream.format("delta").option("startingTimestamp", at).load(table).writeStream
                 .foreachBatch(lambda df, _: got.extend(r["id"] for r in df.collect()))
                 .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert got == [100]
        naive = dt.datetime(2024, 1, 1, 4, 0)  # a naive datetime too: 09:00 UTC, version 0
        assert DeltaTable.forPath(spark, table).restoreToTimestamp(naive).first()["num_removed_files"] > 0
        assert DeltaTable.forPath(spark, table).toDF().count() == 6
        with pytest.raises(Exception, match="timestampAsOf 'soon' is not a timestamp"):
            spark.read.format("delta").option("timestampAsOf", "soon").load(table)
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)


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
