"""Unpartitioned writes through Spark's own parquet writer: the same rows and the same ``add.stats`` as
the kernel's Arrow writer produces, the ``mapInArrow`` path whenever the kernel must check rows (or the
session writes INT96 timestamps), and nothing left behind by a failed job."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sparkutil import arrow_rows, data_files, frame, rows, version

import deltalog
from deltalog.spark import read, write

pytestmark = pytest.mark.spark

UTC = dt.UTC


def source_table() -> pa.Table:
    n = 50
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "x": pa.array([float("nan") if i == 7 else (None if i % 9 == 0 else i / 3) for i in range(n)], pa.float64()),
        "y": pa.array([None if i % 4 == 0 else -i * 1.5 for i in range(n)], pa.float32()),
        "s": pa.array([None if i == 3 else f"{'long-' * 10}{i:03d}" for i in range(n)], pa.string()),
        "d": pa.array([dt.date(2000 + i % 30, 1 + i % 12, 1) for i in range(n)], pa.date32()),
        "ts": pa.array([dt.datetime(2024, 1, 1, i % 24, 0, 0, 123456, tzinfo=UTC) for i in range(n)],
                       pa.timestamp("us", "UTC")),
        "ntz": pa.array([dt.datetime(1990, 5, 1, 0, i) for i in range(n)], pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal(i * 7) / 4 for i in range(n)], pa.decimal128(10, 2)),
        "big": pa.array([decimal.Decimal(i) for i in range(n)], pa.decimal128(30, 0)),
        "flag": pa.array([i % 2 == 0 for i in range(n)], pa.bool_()),
        "st": pa.array([{"a": i, "b": None if i % 5 else f"b{i}"} for i in range(n)],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "tags": pa.array([[f"t{i}"] for i in range(n)], pa.list_(pa.string())),
    })


def frame_of(spark: Any, table: pa.Table) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return frame(spark, table, from_arrow_schema(table.schema, prefer_timestamp_ntz=True))


def adds(path: str) -> list[dict[str, Any]]:
    files = deltalog.Table(path).snapshot().add_files()
    return [{"path": p, "stats": json.loads(s)} for p, s in zip(files.column("path").to_pylist(),
                                                               files.column("stats").to_pylist())]


def writer_of(path: str) -> str:
    return str(pq.read_metadata(data_files(path)[0]).created_by)


def _norm(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return value


def test_spark_writer_files_carry_the_kernel_stats(spark: Any, tmp_path: Path) -> None:
    source = source_table()
    ours, kernel = str(tmp_path / "spark"), str(tmp_path / "kernel")
    write(frame_of(spark, source).coalesce(1), ours)
    deltalog.write_table(kernel, source)
    assert "parquet-mr" in writer_of(ours)
    assert not [n for n in os.listdir(ours) if n.startswith("_deltalog_staging_")]
    (mine,), (theirs,) = adds(ours), adds(kernel)
    assert mine["stats"] == theirs["stats"]
    assert "x" not in mine["stats"]["minValues"]  # the NaN column has no bounds
    assert mine["stats"]["nullCount"]["x"] == 6 and mine["stats"]["nullCount"]["st"]["b"] == 40
    expected = [_norm(r) for r in arrow_rows(source)]
    assert [_norm(r) for r in rows(read(spark, ours))] == expected
    assert [_norm(r) for r in arrow_rows(deltalog.Table(ours).snapshot().to_arrow())] == expected


def test_int96_sessions_and_row_checks_use_the_arrow_writer(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    df = spark.range(10).withColumn("ts", F.timestamp_seconds(F.col("id")))
    key = "spark.sql.parquet.outputTimestampType"
    before = spark.conf.get(key)
    spark.conf.set(key, "INT96")
    try:
        write(df, str(tmp_path / "int96"))
    finally:
        spark.conf.set(key, before)
    assert "parquet-mr" not in writer_of(str(tmp_path / "int96"))
    write(df, str(tmp_path / "micros"))
    assert "parquet-mr" in writer_of(str(tmp_path / "micros"))
    for name in ("int96", "micros"):
        assert sorted(r["ts"] for r in rows(read(spark, str(tmp_path / name)))) == [
            dt.datetime(1970, 1, 1, 0, 0, i, tzinfo=UTC) for i in range(10)
        ]
    checked = str(tmp_path / "checked")
    write(df, checked, **{"delta.constraints.small": "id < 100"})
    assert "parquet-mr" not in writer_of(checked)
    sized = str(tmp_path / "sized")
    write(df, sized, targetFileSize=1 << 20)
    assert "parquet-mr" not in writer_of(sized)


def test_empty_and_failed_native_writes(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    p = str(tmp_path / "t")
    write(spark.range(0), p)
    assert version(p) == 0 and deltalog.Table(p).snapshot().num_files() == 0 and data_files(p) == []
    write(spark.range(5), p, mode="append")
    assert "parquet-mr" in writer_of(p)

    def fail(x):  # type: ignore[no-untyped-def]  # a typed UDF would be taken for a pandas UDF
        raise RuntimeError("task failure")

    before = data_files(p)
    with pytest.raises(Exception, match="task failure"):
        write(spark.range(0, 5, numPartitions=2).withColumn("id", F.udf(fail, "long")("id")), p, mode="append")
    assert version(p) == 1 and data_files(p) == before
    assert not [n for n in os.listdir(p) if n.startswith("_deltalog_staging_")]
    assert sorted(r["id"] for r in rows(read(spark, p))) == list(range(5))


def test_columns_in_another_order_still_use_the_spark_writer(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    p = str(tmp_path / "t")
    write(spark.range(3).select(F.lit("a").alias("s"), "id"), p)
    write(spark.range(3, 5).select("id", F.lit("b").alias("s")), p, mode="append")
    assert all("parquet-mr" in str(pq.read_metadata(f).created_by) for f in data_files(p))
    assert [(r["id"], r["s"]) for r in rows(read(spark, p))] == [(0, "a"), (1, "a"), (2, "a"), (3, "b"), (4, "b")]
    assert read(spark, p).columns == ["s", "id"]


def test_void_columns_are_left_out_of_the_files(spark: Any, tmp_path: Path) -> None:
    # ``NULL AS b`` makes a void column: delta-spark leaves it out of the data files, so that a later
    # mergeSchema can give it a type and the old files still read (a parquet null column would not)
    for name, partitioned in (("plain", False), ("parts", True)):
        p = str(tmp_path / name)
        writer = spark.sql("SELECT 1 AS a, NULL AS b, 'x' AS p").write.format("delta")
        (writer.partitionBy("p") if partitioned else writer).save(p)
        assert [pq.read_schema(f).names for f in data_files(p)] == [["a"] if partitioned else ["a", "p"]]
        spark.sql("SELECT 2 AS a, 'y' AS b, 'x' AS p").write.format("delta").mode("append") \
            .option("mergeSchema", "true").save(p)
        assert deltalog.Table(p).snapshot().schema.field("b").type.name == "string"
        assert sorted((r["a"], r["b"]) for r in read(spark, p).collect()) == [(1, None), (2, "y")]
