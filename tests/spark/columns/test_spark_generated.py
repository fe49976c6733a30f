"""Generated columns through Spark: defined by SQL and the builder, computed by DataFrame writes, SQL INSERT
and MERGE inserts, checked when given, recomputed when UPDATE / MERGE change the columns they come from."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

import deltalog
from deltalog.txn.constraints import ConstraintViolationError

pytestmark = pytest.mark.spark


def test_generated_partition_column(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "events")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (ts TIMESTAMP, v BIGINT, day DATE GENERATED ALWAYS AS (CAST(ts AS DATE))) "
              "USING DELTA PARTITIONED BY (day)")
    meta = deltalog.Table(path).snapshot().schema.field("day").metadata
    assert meta["delta.generationExpression"] == "CAST(ts AS DATE)"
    assert deltalog.Table(path).snapshot().protocol.minWriterVersion >= 4
    spark.sql(f"INSERT INTO {t} (ts, v) VALUES (TIMESTAMP'2024-05-01 10:00:00', 1)")
    spark.sql(f"INSERT INTO {t} VALUES (TIMESTAMP'2024-05-02 10:00:00', 2)")  # positional, day left out
    spark.createDataFrame([(dt.datetime(2024, 5, 3, 8), 3)], "ts timestamp, v bigint").write.format("delta") \
        .mode("append").save(path)
    spark.createDataFrame([(dt.datetime(2024, 5, 4, 8), 4, dt.date(2024, 5, 4))], "ts timestamp, v bigint, day date") \
        .write.format("delta").mode("append").save(path)
    rows = sorted((r.v, str(r.day)) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(1, "2024-05-01"), (2, "2024-05-02"), (3, "2024-05-03"), (4, "2024-05-04")]
    parts = sorted(dict(p)["day"] for p in deltalog.Table(path).snapshot().add_files().column("partitionValues")
                   .to_pylist())
    assert parts == ["2024-05-01", "2024-05-02", "2024-05-03", "2024-05-04"]
    version = deltalog.Table(path).latest_version()
    bad = spark.createDataFrame([(dt.datetime(2024, 5, 5, 8), 5, dt.date(1999, 1, 1))],
                                "ts timestamp, v bigint, day date")
    with pytest.raises(ConstraintViolationError, match="generated column day"):
        bad.write.format("delta").mode("append").save(path)
    with pytest.raises(ConstraintViolationError, match="generated column day") as caught:
        spark.sql(f"INSERT INTO {t} VALUES (TIMESTAMP'2024-05-05 10:00:00', 5, DATE'1999-01-01')")
    assert "USER_RAISED_EXCEPTION" not in str(caught.value)  # deltalog's error, as CHECK violations raise
    assert caught.value.getCondition() == "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"  # type: ignore[attr-defined]
    assert deltalog.Table(path).latest_version() == version

    spark.sql(f"UPDATE {t} SET ts = TIMESTAMP'2024-06-01 00:00:00' WHERE v = 1")  # day follows ts
    assert [str(r.day) for r in spark.sql(f"SELECT day FROM {t} WHERE v = 1").collect()] == ["2024-06-01"]
    with pytest.raises(ValueError, match="GENERATED_COLUMN_UPDATE_NOT_SUPPORTED"):
        spark.sql(f"UPDATE {t} SET day = DATE'2020-01-01' WHERE v = 2")
    spark.sql(f"MERGE INTO {t} x USING (SELECT TIMESTAMP'2024-07-07 07:00:00' AS ts, 9L AS v) s ON x.v = s.v "
              "WHEN NOT MATCHED THEN INSERT (ts, v) VALUES (s.ts, s.v)")
    assert [str(r.day) for r in spark.sql(f"SELECT day FROM {t} WHERE v = 9").collect()] == ["2024-07-07"]

    # a filter on ts prunes the generated partition column day (bounds widened by two days for time zones)
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(path)
    late = df.filter(F.col("ts") >= "2024-06-01 00:00:00")
    assert sorted(r.v for r in late.collect()) == [1, 9]
    assert len(late.inputFiles()) == 2 < len(df.inputFiles())  # only the 2024-06-01 and 2024-07-07 files
    early = df.select("ts", "v").where("ts < '2024-05-02 12:00:00'")
    assert sorted(r.v for r in early.collect()) == [2] and len(early.inputFiles()) == 3  # up to 2024-05-04


def test_builder_generated_column(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "b")
    c = DeltaTable.columnBuilder(spark, "c").dataType("STRING").generatedAlwaysAs("concat('x', a)").build()
    DeltaTable.create(spark).location(path).addColumn("a", "INT").addColumn(
        "b", "INT", generatedAlwaysAs="a * 10").addColumns([c]).execute()
    spark.range(3).selectExpr("CAST(id AS INT) AS a").write.format("delta").mode("append").save(path)
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == \
        [(0, 0, "x0"), (1, 10, "x1"), (2, 20, "x2")]
    # the kernel computes the same column (an expression in its subset)
    import pyarrow as pa

    deltalog.write_table(path, pa.table({"a": pa.array([7], pa.int32())}), mode="append")
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).where("a = 7").collect()) == [(7, 70, "x7")]
