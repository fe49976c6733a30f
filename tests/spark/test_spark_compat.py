"""deltalog.spark.common.compat on whatever PySpark runs: the helpers that stand in for what a version lacks
(``createDataFrame(pyarrow.Table)``, ``DataFrame.toArrow``, ``Column.try_cast``, a ``rebalance`` hint of columns,
a catalog entry for a provider Spark cannot look up) give the same answers everywhere, and what a version cannot
do is refused with a PySpark exception naming the running version and the one to upgrade to."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark

UTC = dt.UTC


def _sample() -> pa.Table:
    ts = dt.datetime(2024, 3, 1, 12, 30, 15, 123456)
    return pa.table({
        "b": pa.array([True, None, False], pa.bool_()),
        "i8": pa.array([-128, None, 127], pa.int8()),
        "i16": pa.array([-1, None, 2], pa.int16()),
        "i32": pa.array([-2**31, None, 2**31 - 1], pa.int32()),
        "i64": pa.array([-2**63, None, 2**63 - 1], pa.int64()),
        "f32": pa.array([1.5, None, -0.0], pa.float32()),
        "f64": pa.array([2.25, None, float("inf")], pa.float64()),
        "s": pa.array(["a", None, "ü/x=y"], pa.string()),
        "ls": pa.array(["big", None, ""], pa.large_string()),
        "bin": pa.array([b"\x00\x01", None, b""], pa.binary()),
        "dec": pa.array([decimal.Decimal("12345678.91"), None, decimal.Decimal("-0.01")], pa.decimal128(10, 2)),
        "d": pa.array([dt.date(1969, 12, 31), None, dt.date(2024, 2, 29)], pa.date32()),
        "tz": pa.array([ts, None, dt.datetime(1960, 1, 1)], pa.timestamp("us", "Europe/Paris")),
        "naive": pa.array([ts, None, dt.datetime(1900, 1, 1)], pa.timestamp("us")),
        "ns": pa.array([ts, None, ts], pa.timestamp("ns", "UTC")),
        "st": pa.array([{"x": 1, "y": "q"}, None, {"x": None, "y": None}],
                       pa.struct([("x", pa.int32()), ("y", pa.string())])),
        "li": pa.array([[1, None, 3], None, []], pa.list_(pa.int64())),
        "m": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())),
        "deep": pa.array([[{"at": ts, "tags": {"a": ts}}], None, [None]],
                         pa.list_(pa.struct([("at", pa.timestamp("us")),
                                             ("tags", pa.map_(pa.string(), pa.timestamp("us")))]))),
    })


def _utc(value: Any) -> Any:
    """A value as Spark returns it through Arrow: zone-less timestamps read in the session's zone (UTC here)."""
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, dict):
        return {k: _utc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_utc(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_utc(v) for v in value)
    return value


def test_frame_from_arrow_round_trips_every_type(spark: Any) -> None:
    from deltalog.spark.common.compat import frame_from_arrow, to_arrow

    table = _sample()
    df = frame_from_arrow(spark, table)
    assert df.schema.simpleString() == (
        "struct<b:boolean,i8:tinyint,i16:smallint,i32:int,i64:bigint,f32:float,f64:double,s:string,ls:string,"
        "bin:binary,dec:decimal(10,2),d:date,tz:timestamp,naive:timestamp,ns:timestamp,st:struct<x:int,y:string>,"
        "li:array<bigint>,m:map<string,bigint>,deep:array<struct<at:timestamp,tags:map<string,timestamp>>>>")
    back = to_arrow(df)
    assert back.schema.field("tz").type == pa.timestamp("us", "UTC")
    assert back.schema.field("ls").type == pa.string()
    assert back.to_pylist() == [_utc(r) for r in table.to_pylist()]
    assert df.filter("i32 > 0").select("s").collect()[0][0] == "ü/x=y"  # Spark computes on it, not only collects


def test_frame_from_arrow_with_a_schema_and_when_empty(spark: Any) -> None:
    from pyspark.sql.types import LongType, StructField, StructType, TimestampNTZType

    from deltalog.spark.common.compat import frame_from_arrow, to_arrow

    schema = StructType([StructField("at", TimestampNTZType()), StructField("n", LongType(), False)])
    at = dt.datetime(2024, 1, 1, 12)
    df = frame_from_arrow(spark, pa.table({"at": pa.array([at], pa.timestamp("us")), "n": [3]}), schema)
    assert df.schema == schema
    assert df.collect()[0].asDict() == {"at": at, "n": 3}  # timestamp_ntz: the wall clock, no zone applied

    empty = frame_from_arrow(spark, _sample().slice(0, 0))
    assert empty.count() == 0
    assert to_arrow(empty).schema == to_arrow(frame_from_arrow(spark, _sample())).schema
    assert frame_from_arrow(spark, pa.table({"x": pa.array([], pa.int64())})).columns == ["x"]
    assert frame_from_arrow(spark, pa.table({})).count() == 0


def test_metrics_row_is_one_row_of_nullable_longs(spark: Any) -> None:
    from pyspark.sql.types import LongType, StructField, StructType

    from deltalog.spark.common.compat import metrics_row

    names = ["num_affected_rows", "odd `name`", "big"]
    df = metrics_row(spark, names, [3, -1, 2**40])
    assert df.schema == StructType([StructField(n, LongType(), True) for n in names])  # as delta-spark's, nullable
    assert [tuple(r) for r in df.collect()] == [(3, -1, 2**40)] and df.count() == 1
    assert df.filter("big > 0").count() == 1  # Spark computes on it, not only collects
    with pytest.raises(ValueError):
        metrics_row(spark, names, ["1; DROP TABLE x", 0, 0])  # only integers go into the statement
    with pytest.raises(ValueError, match="one value per column"):
        metrics_row(spark, names, [1])


def test_observation_values_after_the_job(spark: Any, tmp_path: Path) -> None:
    import uuid

    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from deltalog.spark.common.compat import observation_values, observed_metrics

    seen, source = Observation(f"t{uuid.uuid4().hex}"), Observation(f"s{uuid.uuid4().hex}")
    counted = spark.range(5).observe(source, F.count(F.lit(1)).alias("n"))
    rows = spark.range(10).join(counted, "id", "full_outer").observe(
        seen, F.count(F.lit(1)).alias("rows"), F.sum("id").alias("total"),
        F.concat_ws(",", F.array_sort(F.collect_set((F.col("id") % 3).cast("string")))).alias("ids"))
    rows.write.parquet(str(tmp_path / "out"))
    assert observation_values(seen) == {"rows": 10, "total": 45, "ids": "0,1,2"}
    assert observed_metrics(source) == {"n": 5}
    empty = Observation(f"e{uuid.uuid4().hex}")  # Spark drops the observation of a side it proves empty
    spark.range(3).join(spark.range(0).filter("false").observe(empty, F.count(F.lit(1)).alias("n")), "id",
                        "full_outer").write.parquet(str(tmp_path / "empty"))
    assert observed_metrics(empty, within=0.05) in (None, {"n": 0})


def test_to_arrow_of_a_spark_query(spark: Any) -> None:
    from deltalog.spark.common.compat import to_arrow

    got = to_arrow(spark.range(5).selectExpr("id", "timestamp_micros(id) AS at", "array(id) AS a"))
    assert got.num_rows == 5
    assert got.schema.field("at").type == pa.timestamp("us", "UTC")
    assert got.column("a").to_pylist() == [[i] for i in range(5)]
    assert to_arrow(spark.range(0)).schema == pa.schema([pa.field("id", pa.int64(), nullable=False)])


def test_try_cast_is_null_where_the_value_does_not_fit(spark: Any) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, DecimalType

    from deltalog.spark.common.compat import try_cast

    df = spark.createDataFrame([(1, "1.5"), (300, "x"), (None, "123456")], "n int, s string")
    got = df.select(try_cast(F.col("n"), ByteType()).alias("b"), try_cast(F.col("n"), "tinyint").alias("b2"),
                    try_cast(F.col("s"), DecimalType(4, 1)).alias("d"), try_cast(F.col("s"), "int").alias("i"))
    assert [r.asDict() for r in got.collect()] == [
        {"b": 1, "b2": 1, "d": decimal.Decimal("1.5"), "i": None},
        {"b": None, "b2": None, "d": None, "i": None},
        {"b": None, "b2": None, "d": None, "i": 123456},
    ]


def test_ansi_cast_fails_where_the_value_does_not_fit(spark: Any) -> None:
    """As Spark's INSERT casts (store assignment ANSI), whatever the session's ``spark.sql.ansi.enabled``."""
    from pyspark.sql import functions as F

    from deltalog.spark.common.compat import ansi_cast

    assert spark.range(1).select(ansi_cast(F.lit(300), "smallint").alias("v")).first().v == 300
    with pytest.raises(Exception, match="CAST_OVERFLOW"):
        spark.range(1).select(ansi_cast(F.lit(5000000000), "int")).collect()


def test_rebalance_keeps_every_row(spark: Any) -> None:
    from deltalog.spark.common.compat import rebalance

    df = spark.range(20).selectExpr("id", "id % 3 AS `k.1`")
    assert sorted(r.id for r in rebalance(df, ["k.1"]).collect()) == list(range(20))
    assert rebalance(df, []).count() == 20


def test_refusal_names_the_running_version(spark: Any) -> None:
    from pyspark.errors import AnalysisException

    from deltalog.spark.common import compat
    from deltalog.spark.common.errors import as_spark_error

    with pytest.raises(compat.UnsupportedSparkVersionError) as raised:
        compat.require((99, 1), "a feature of the future", "has no such thing", "or wait")
    text = str(raised.value)
    assert text.startswith("[DELTA_UNSUPPORTED_SPARK_VERSION] a feature of the future needs Spark 99.1 or later")
    assert f"PySpark {compat.PYSPARK_VERSION}" in text and "pip install 'pyspark>=99.1'" in text
    compat.require(compat.PYSPARK, "what this version has")  # no error

    converted = as_spark_error(raised.value)
    assert isinstance(converted, AnalysisException) and isinstance(converted, compat.UnsupportedSparkVersionError)
    assert converted.getCondition() == "DELTA_UNSUPPORTED_SPARK_VERSION"  # type: ignore[attr-defined]
    assert str(converted) == text


def test_stream_source_needs_python_data_sources(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    from deltalog.spark.common import compat

    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    if compat.PYTHON_DATA_SOURCES:
        assert spark.readStream.format("delta").load(path).isStreaming
        return
    with pytest.raises(AnalysisException) as raised:
        spark.readStream.format("delta").load(path)
    assert str(raised.value).startswith("[DELTA_UNSUPPORTED_SPARK_VERSION] spark.readStream.format(\"delta\")")
    assert f"PySpark {compat.PYSPARK_VERSION}" in str(raised.value) and "pyspark>=4.0" in str(raised.value)


def test_catalog_delta_table_on_every_version(spark: Any, tmp_path: Path) -> None:
    """Spark 3.5 cannot look a ``delta`` provider up: its catalog entries come from create_table_entry."""
    location = str(tmp_path / "cat")
    spark.sql(f"CREATE TABLE compat_cat (id BIGINT, day STRING) USING DELTA PARTITIONED BY (day) "
              f"LOCATION '{location}' COMMENT 'c'")
    try:
        spark.sql("INSERT INTO compat_cat VALUES (1, 'a'), (2, 'b')")
        spark.range(3, 5).selectExpr("id", "'c' AS day").write.format("delta").mode("append").saveAsTable(
            "compat_cat")
        assert sorted(r.id for r in spark.table("compat_cat").collect()) == [1, 2, 3, 4]
        assert sorted(r.id for r in spark.sql("SELECT id FROM compat_cat WHERE day = 'c'").collect()) == [3, 4]
        described = {r[0]: r[1] for r in spark.sql("DESCRIBE TABLE EXTENDED compat_cat").collect()}
        assert described["Provider"].lower() == "delta" and described["Comment"] == "c"
    finally:
        spark.sql("DROP TABLE IF EXISTS compat_cat")
    assert (tmp_path / "cat" / "_delta_log").is_dir()  # an external table: dropping keeps its files


def test_tree_string_prints_spark_s_schema_tree(spark: Any) -> None:
    """The schema tree of delta-spark's messages, also on PySpark 3.5 (whose ``StructType`` cannot print it): the
    rendering matches PySpark 4's own for nested structs, arrays, maps and decimals."""
    from deltalog.spark.common import compat

    ddl = ("a INT NOT NULL, d DECIMAL(10,2), s STRUCT<x: BIGINT, arr: ARRAY<STRUCT<z: STRING>>>, "
           "m MAP<STRING, ARRAY<DOUBLE>>")
    struct = spark.createDataFrame([], ddl).schema
    lines = ["root"]
    compat._tree_branch(struct, " |", lines)
    drawn = "\n".join(lines) + "\n"
    assert drawn == (
        "root\n"
        " |-- a: integer (nullable = false)\n"
        " |-- d: decimal(10,2) (nullable = true)\n"
        " |-- s: struct (nullable = true)\n"
        " |    |-- x: long (nullable = true)\n"
        " |    |-- arr: array (nullable = true)\n"
        " |    |    |-- element: struct (containsNull = true)\n"
        " |    |    |    |-- z: string (nullable = true)\n"
        " |-- m: map (nullable = true)\n"
        " |    |-- key: string\n"
        " |    |-- value: array (valueContainsNull = true)\n"
        " |    |    |-- element: double (containsNull = true)\n")
    assert compat.tree_string(struct) == drawn  # PySpark's own on 4.x


def test_jvm_calls_build_what_pyspark_builds(spark: Any, tmp_path: Path) -> None:
    """deltalog.spark.common.jvm_calls: a column from Spark SQL text is F.expr's column (analysed alike, same
    values); an observation attached with the cached classes is read back as PySpark's; an observation that was
    used already goes to PySpark, which refuses it."""
    import uuid

    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from deltalog.spark.common.compat import observation_values
    from deltalog.spark.common.jvm_calls import observe, sql_column

    df = spark.range(10).withColumn("hit", F.col("id") % 3 == 0)
    text = "count(CASE WHEN `hit` THEN 1 END) AS `n`"
    assert df.select(sql_column(spark, text)).collect() == df.select(F.expr(text)).collect() == [(4,)]
    assert df.select(sql_column(spark, "shiftleft(CAST(1 AS BIGINT), CAST(id % 5 AS INT)) AS b")).schema == \
        df.select(F.expr("shiftleft(CAST(1 AS BIGINT), CAST(id % 5 AS INT)) AS b")).schema
    seen = Observation(f"t{uuid.uuid4().hex}")
    observed = observe(df, seen, sql_column(spark, text), F.sum("id").alias("total"))
    observed.filter("hit").write.parquet(str(tmp_path / "out"))
    assert observation_values(seen) == {"n": 4, "total": 45}
    assert spark.read.parquet(str(tmp_path / "out")).count() == 4
    with pytest.raises(Exception):  # noqa: B017 - PySpark's own refusal, whose type differs between versions
        observe(df, seen, F.count(F.lit(1)).alias("again"))
