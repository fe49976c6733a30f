"""A DataFrame read from a Delta table declares the table's schema as delta-spark's does: the table's nullability
(nested too) and the column comments, and no other field metadata -- on every way a read starts and on every scan
shape (plain, partitioned, deletion vectors, column mapping, empty), with filter pushdown and file skipping kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

import deltalog

pytestmark = pytest.mark.spark


def _schema(spark: Any) -> Any:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    inner = StructType([StructField("a", LongType(), False, {"comment": "inner a"}),
                        StructField("b", StringType(), True)])
    return StructType([
        StructField("id", LongType(), False, {"comment": "the key"}),
        StructField("name", StringType(), True),
        StructField("part", StringType(), False, {"comment": "partition"}),
        StructField("st", inner, False),
    ])


def _create(spark: Any, path: str, *, props: dict[str, str] | None = None, rows: bool = True) -> Any:
    from deltalog.spark import DeltaTable

    builder = DeltaTable.create(spark).location(path).addColumns(_schema(spark)).partitionedBy("part")
    for k, v in (props or {}).items():
        builder = builder.property(k, v)
    builder.execute()
    if rows:
        spark.createDataFrame(
            [(i, None if i % 3 else f"n{i}", f"p{i % 2}", (i, None)) for i in range(12)], _schema(spark),
        ).write.format("delta").mode("append").save(path)
    return DeltaTable.forPath(spark, path)


def _declared(schema: Any) -> list[tuple[str, bool, dict[str, Any], str]]:
    """Each top-level field as (name, nullable, metadata, nested JSON): the whole declaration compared."""
    return [(f.name, f.nullable, dict(f.metadata), json.dumps(f.dataType.jsonValue(), sort_keys=True))
            for f in schema.fields]


def test_read_schema_is_the_tables_on_every_entry_point(spark: Any, tmp_path: Any) -> None:
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    _create(spark, path)
    want = _declared(_schema(spark))
    assert _declared(spark.read.format("delta").load(path).schema) == want
    assert _declared(DeltaTable.forPath(spark, path).toDF().schema) == want
    assert _declared(spark.sql(f"SELECT * FROM delta.`{path}`").schema) == want
    spark.sql(f"CREATE TABLE read_schema_t USING DELTA LOCATION '{path}'")
    try:
        assert _declared(spark.table("read_schema_t").schema) == want
        assert _declared(DeltaTable.forName(spark, "read_schema_t").toDF().schema) == want
    finally:
        spark.sql("DROP TABLE read_schema_t")
    # a projection keeps each column's declaration; the rows are the table's
    picked = spark.read.format("delta").load(path).select("st", "id")
    assert _declared(picked.schema) == [want[3], want[0]]
    assert picked.filter("id = 4").collect()[0].st.a == 4


def test_read_schema_kept_across_scan_shapes(spark: Any, tmp_path: Any) -> None:
    want = _declared(_schema(spark))
    cm = str(tmp_path / "cm")
    _create(spark, cm, props={"delta.columnMapping.mode": "name"})
    assert _declared(spark.read.format("delta").load(cm).schema) == want
    dv = str(tmp_path / "dv")
    table = _create(spark, dv, props={"delta.enableDeletionVectors": "true"})
    table.delete("id = 3")
    files = deltalog.Table(dv).snapshot().add_files()
    assert files.column("deletionVector").null_count < files.num_rows  # the read drops rows by a DV
    read = spark.read.format("delta").load(dv)
    assert _declared(read.schema) == want
    assert sorted(r.id for r in read.collect()) == [i for i in range(12) if i != 3]
    empty = str(tmp_path / "empty")
    _create(spark, empty, rows=False)
    assert _declared(spark.read.format("delta").load(empty).schema) == want
    old = spark.read.format("delta").option("versionAsOf", 0).load(dv)
    assert _declared(old.schema) == want and old.count() == 0


def test_not_null_read_keeps_pushdown_and_skipping(spark: Any, tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    _create(spark, path)
    df = spark.read.format("delta").load(path).filter("id > 9 AND part = 'p0'")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "PushedFilters: [" in plan and "GreaterThan(id,9)" in plan, plan
    assert "PartitionFilters: [" in plan and "p0" in plan, plan
    assert [r.id for r in df.collect()] == [10]
    assert len(df.inputFiles()) == 1  # the other partition's file skipped
