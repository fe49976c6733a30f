"""Type widening through Spark: ``ALTER TABLE ... ALTER COLUMN c TYPE`` / ``CHANGE COLUMN`` and a
``mergeSchema`` append of a wider type widen the column once ``delta.enableTypeWidening`` is set; Spark
and DuckDB read the files written before and after with the new type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import deltalog

pytestmark = pytest.mark.spark


def test_type_widening_through_spark(spark: Any, tmp_path: Path) -> None:
    from readers import duckdb_rows

    path = str(tmp_path / "w")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, x FLOAT) USING DELTA")
    spark.sql(f"INSERT INTO {t} VALUES (1, 1.5)")
    with pytest.raises(Exception, match="enableTypeWidening"):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE BIGINT")
    spark.createDataFrame([(2**40, 2.25)], "id bigint, x double").write.format("delta").mode("append") \
        .option("mergeSchema", "true").save(path)
    df = spark.read.format("delta").load(path)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [("id", "bigint"), ("x", "double")]
    rows = sorted(tuple(r) for r in df.collect())
    assert rows == [(1, 1.5), (2**40, 2.25)] and duckdb_rows(path, ["id", "x"]) == rows
    changes = [f.metadata.get("delta.typeChanges") for f in deltalog.Table(path).snapshot().schema.fields]
    assert changes == [[{"fromType": "integer", "toType": "long"}], [{"fromType": "float", "toType": "double"}]]
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="from double to integer") as refused:
        spark.sql(f"ALTER TABLE {t} CHANGE COLUMN x x INT")
    assert refused.value.getCondition() == "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"


def test_date_to_timestamp_ntz_and_preview_table_through_spark(spark: Any, tmp_path: Path) -> None:
    """``date -> timestamp_ntz`` through SQL, and Spark
    DML on a copy of the corpus table Delta 3.3 widened under ``typeWidening-preview``."""
    import datetime as dt
    import shutil

    from readers import duckdb_rows

    path = str(tmp_path / "d")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, d DATE) USING DELTA TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, DATE'2024-01-01'), (2, DATE'2024-01-05')")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN d TYPE TIMESTAMP_NTZ")
    spark.sql(f"INSERT INTO {t} VALUES (3, TIMESTAMP_NTZ'2024-01-03 12:30:00')")
    df = spark.read.format("delta").load(path)
    assert df.schema["d"].dataType.simpleString() == "timestamp_ntz"
    want = [(1, dt.datetime(2024, 1, 1)), (2, dt.datetime(2024, 1, 5)), (3, dt.datetime(2024, 1, 3, 12, 30))]
    assert sorted(tuple(r) for r in df.collect()) == want == duckdb_rows(path, ["id", "d"])
    assert df.filter("d > TIMESTAMP_NTZ'2024-01-05 00:00:01'").count() == 0
    spark.sql(f"UPDATE {t} SET d = d + INTERVAL 1 HOUR WHERE id = 1")
    assert sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t} WHERE id = 1").collect()) == [
        (1, dt.datetime(2024, 1, 1, 1))]

    source = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "kernel-rs-data" / "type-widening"
    if not source.is_dir():
        pytest.skip("the conformance corpus is not beside this checkout")
    copy = str(tmp_path / "preview")
    shutil.copytree(source, copy)
    p = f"delta.`{copy}`"
    spark.sql(f"INSERT INTO {p} SELECT * FROM {p}")
    spark.sql(f"ALTER TABLE {p} ALTER COLUMN int_decimal TYPE DECIMAL(14, 2)")
    spark.sql(f"DELETE FROM {p} WHERE byte_long = 1")
    spark.sql(f"UPDATE {p} SET int_long = 7")
    snap = deltalog.Table(copy).snapshot()
    assert "typeWidening" not in (snap.protocol.readerFeatures or ())
    cols = ["byte_long", "int_long", "int_decimal", "date_timestamp_ntz"]
    got = sorted(tuple(r) for r in spark.read.format("delta").load(copy).select(*cols).collect())
    assert len(got) == 2 and all(r[1] == 7 for r in got) and got == duckdb_rows(copy, cols)


def test_merge_with_schema_evolution_widens_columns(spark: Any, tmp_path: Path) -> None:
    """``withSchemaEvolution()`` on a table with type widening widens a column to a wider source type (it
    failed with DELTA_CAST_FAILURE), as delta-spark does; rows the MERGE copies read in the wider type."""
    from deltalog.spark import DeltaTable

    p = str(tmp_path / "t")
    spark.createDataFrame([(1, 10), (3, 30)], "id int, v int").write.format("delta") \
        .option("delta.enableTypeWidening", "true").save(p)
    source = spark.createDataFrame([(1, 5_000_000_000), (2, 7)], "id int, v bigint")
    merge = DeltaTable.forPath(spark, p).alias("t").merge(source.alias("s"), "t.id = s.id") \
        .whenMatchedUpdateAll().whenNotMatchedInsertAll()
    with pytest.raises(Exception, match="DELTA_CAST_FAILURE"):
        merge.execute()
    merge.withSchemaEvolution().execute()
    df = spark.read.format("delta").load(p)
    assert df.schema.simpleString() == "struct<id:int,v:bigint>"
    assert sorted(tuple(r) for r in df.collect()) == [(1, 5_000_000_000), (2, 7), (3, 30)]
    assert deltalog.Table(p).snapshot().schema.field("v").metadata["delta.typeChanges"] == \
        [{"fromType": "integer", "toType": "long"}]


def test_insert_under_auto_merge_widens_columns(spark: Any, tmp_path: Path) -> None:
    """An INSERT (and ``insertInto``) of a wider type under ``schema.autoMerge`` widens the column on a table with
    type widening, as delta-spark does; without the setting the value is cast (and overflows)."""
    import uuid

    name = f"widen_{uuid.uuid4().hex[:8]}"
    key = "spark.databricks.delta.schema.autoMerge.enabled"
    try:
        spark.sql(f"CREATE TABLE {name} (id INT, v INT) USING delta "
                  "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
        with pytest.raises(Exception, match="CAST_OVERFLOW"):
            spark.sql(f"INSERT INTO {name} VALUES (1, 5000000000L)")
        spark.conf.set(key, "true")
        try:
            spark.sql(f"INSERT INTO {name} VALUES (1, 5000000000L)")
            spark.createDataFrame([(2, 7)], "id bigint, v bigint").write.insertInto(name)
        finally:
            spark.conf.unset(key)
        assert spark.table(name).schema.simpleString() == "struct<id:bigint,v:bigint>"
        assert sorted(tuple(r) for r in spark.table(name).collect()) == [(1, 5_000_000_000), (2, 7)]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
