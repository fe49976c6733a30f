"""Column mapping through Spark: a table created in name mode by SQL takes DataFrame and SQL writes,
UPDATE / DELETE / MERGE (with schema evolution), OPTIMIZE, RENAME COLUMN and DROP COLUMN; every step is
read back the same by Spark and by DuckDB's delta extension (delta-kernel-rs; see test_column_mapping.py
for why not delta-rs, and why the partition column comes first)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import deltalog

pytestmark = pytest.mark.spark


def _spark_rows(spark: Any, path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    from readers import sort_key

    rows = spark.read.format("delta").load(path).select(*columns).collect()
    return sorted((tuple(r) for r in rows), key=sort_key)


def _check(spark: Any, path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    from readers import duckdb_rows

    ours = _spark_rows(spark, path, columns)
    assert duckdb_rows(path, columns) == ours
    return ours


def test_column_mapping_workflow(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "cm")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (region STRING, id BIGINT, amount DOUBLE) USING DELTA PARTITIONED BY (region) "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO {t} VALUES ('eu', 1, 10.0), ('us', 2, 20.0), ('eu', 3, 30.0)")
    spark.createDataFrame([("us", 4, 40.0)], "region string, id bigint, amount double").write.format("delta") \
        .mode("append").save(path)
    snap = deltalog.Table(path).snapshot()
    physical = {f.name: f.metadata["delta.columnMapping.physicalName"] for f in snap.schema.fields}
    last = sorted((Path(path) / "_delta_log").glob("*.json"))[-1].read_text().splitlines()
    add = json.loads(next(ln for ln in last if '"add"' in ln))["add"]
    assert set(add["partitionValues"]) == {physical["region"]}
    assert set(json.loads(add["stats"])["minValues"]) == {physical["id"], physical["amount"]}

    spark.sql(f"UPDATE {t} SET amount = amount + 1 WHERE id = 1")
    spark.sql(f"DELETE FROM {t} WHERE id = 2")
    spark.sql(f"MERGE INTO {t} x USING (SELECT 'eu' AS region, 3L AS id, 33.0 AS amount, 'vip' AS tier "
              "UNION ALL SELECT 'ap', 5L, 50.0, 'new') s ON x.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")  # tier: new column (autoMerge off)
    spark.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")
    try:
        spark.sql(f"MERGE INTO {t} x USING (SELECT 'ap' AS region, 6L AS id, 60.0 AS amount, 'gold' AS tier) s "
                  "ON x.id = s.id WHEN NOT MATCHED THEN INSERT *")
    finally:
        spark.conf.unset("spark.databricks.delta.schema.autoMerge.enabled")
    tier = deltalog.Table(path).snapshot().schema.field("tier").metadata
    assert tier["delta.columnMapping.physicalName"].startswith("col-") and tier["delta.columnMapping.id"] == 4
    spark.sql(f"OPTIMIZE {t}")
    rows = _check(spark, path, ["region", "id", "amount", "tier"])
    assert rows == [("ap", 5, 50.0, None), ("ap", 6, 60.0, "gold"), ("eu", 1, 11.0, None), ("eu", 3, 33.0, None),
                    ("us", 4, 40.0, None)]

    spark.sql(f"ALTER TABLE {t} RENAME COLUMN amount TO total")
    spark.sql(f"ALTER TABLE {t} DROP COLUMN tier")
    assert spark.read.format("delta").load(path).columns == ["region", "id", "total"]
    spark.sql(f"INSERT INTO {t} VALUES ('us', 7, 70.0)")
    assert _check(spark, path, ["region", "id", "total"])[-1] == ("us", 7, 70.0)
    assert [h["operation"] for h in deltalog.Table(path).history(limit=3)] == ["WRITE", "DROP COLUMNS",
                                                                               "RENAME COLUMN"]
    with pytest.raises(Exception, match="partition column"):
        spark.sql(f"ALTER TABLE {t} DROP COLUMN region")


def test_drop_columns_list_with_struct_fields(spark: Any, tmp_path: Path) -> None:
    """``DROP COLUMNS (v, s.y)`` drops the struct field ``s.y`` (sqlglot parses it as a dotted expression in a
    list, which was read as a top-level ``y``: DELTA_COLUMN_NOT_FOUND)."""
    path = str(tmp_path / "nested")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id INT, s STRUCT<x: INT, y: STRING>, v STRING) USING DELTA "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO {t} VALUES (1, named_struct('x', 1, 'y', 'a'), 'q')")
    spark.sql(f"ALTER TABLE {t} DROP COLUMNS (v, s.y)")
    assert spark.read.format("delta").load(path).schema.simpleString() == "struct<id:int,s:struct<x:int>>"
    from readers import duckdb_rows

    assert _spark_rows(spark, path, ["id", "s.x"]) == [(1, 1)]
    assert duckdb_rows(path, ["id", "s"]) == [(1, {"x": 1})]


def test_switch_existing_table_to_name_mode(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "old")
    spark.range(5).selectExpr("CAST(id % 2 AS STRING) AS k", "id").write.format("delta").partitionBy("k").save(path)
    from deltalog.spark import DeltaTable

    with pytest.raises(Exception, match="needs column mapping"):
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN id TO key")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN id TO key")
    DeltaTable.forPath(spark, path).update("key = 0", {"key": "100"})
    assert _check(spark, path, ["k", "key"]) == [("0", 2), ("0", 4), ("0", 100), ("1", 1), ("1", 3)]


def test_column_names_with_dots_through_the_arrow_jobs(spark: Any, tmp_path: Path) -> None:
    """PySpark's ``mapInArrow`` passes each column as ``df[name]``, which reads ``a.b`` as a field of ``a``:
    the write, OPTIMIZE and Z-order jobs failed on such a column (column mapping writes through them)."""
    from deltalog.spark import DeltaTable

    p = str(tmp_path / "dots")
    spark.range(12).selectExpr("id AS `a.b`", "CAST(id % 3 AS STRING) AS `c d`").repartition(3) \
        .write.format("delta").option("delta.columnMapping.mode", "name").save(p)
    dt = DeltaTable.forPath(spark, p)
    dt.update("`a.b` = 1", {"`c d`": "'one'"})
    assert dt.optimize().executeZOrderBy("`a.b`").first()["metrics"]["numFilesAdded"] == 1
    got = sorted(tuple(r) for r in spark.read.format("delta").load(p).collect())
    assert got[:3] == [(0, "0"), (1, "one"), (2, "2")] and len(got) == 12
    assert deltalog.Table(p).snapshot().schema.field_names == ["a.b", "c d"]
