"""UniForm kept up to date by Spark's writers (issue 56, item 3): Spark commits through the kernel's
transaction, whose post-commit step writes the Iceberg metadata, so a DataFrame write and a MERGE leave a table
that pyiceberg and DuckDB's iceberg extension read as deltalog does."""

from __future__ import annotations

from typing import Any

import pytest

import deltalog
from iceberg_readers import duckdb_rows, pyiceberg_rows, pyiceberg_table
from readers import sort_key

pytestmark = pytest.mark.spark

UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}


def _delta(path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    t = deltalog.Table(path).snapshot().to_arrow()
    return sorted(zip(*[t.column(c).to_pylist() for c in columns]), key=sort_key)


def test_spark_write_and_merge_keep_iceberg_metadata_current(spark: Any, tmp_path: Any) -> None:
    pytest.importorskip("pyiceberg")
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "a", 10.0), (2, "b", 20.0), (3, None, 30.0)], "id long, day string, v double")
    writer = df.write.format("delta").partitionBy("day")
    for k, v in UNIFORM.items():
        writer = writer.option(k, v)
    writer.save(path)
    columns = ["id", "day", "v"]
    assert pyiceberg_rows(path, columns) == _delta(path, columns)

    source = spark.createDataFrame([(2, "b", 21.0), (4, "c", 40.0)], "id long, day string, v double")
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    expected = _delta(path, columns)
    assert [r[0] for r in expected] == [1, 2, 3, 4] and (2, "b", 21.0) in expected
    assert pyiceberg_rows(path, columns) == expected
    assert duckdb_rows(path, columns) == expected
    md = pyiceberg_table(path).metadata
    assert md.properties["delta-version"] == str(deltalog.Table(path).latest_version())
    assert [s.summary["delta-version"] for s in md.snapshots] == ["0", "1"]


def test_sql_and_streaming_writes_keep_iceberg_metadata_current(spark: Any, tmp_path: Any) -> None:
    """SQL (CREATE TABLE with TBLPROPERTIES, INSERT, UPDATE, DELETE) and a streaming append each leave one Iceberg
    snapshot per Delta commit that pyiceberg reads as deltalog does."""
    pytest.importorskip("pyiceberg")
    path = str(tmp_path / "t")
    props = ", ".join(f"'{k}' = '{v}'" for k, v in UNIFORM.items())
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta TBLPROPERTIES ({props})")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"UPDATE delta.`{path}` SET v = 'B' WHERE id = 2")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
    columns = ["id", "v"]
    assert pyiceberg_rows(path, columns) == _delta(path, columns) == [(1, "a"), (2, "B")]

    incoming = str(tmp_path / "incoming")
    spark.createDataFrame([(100, "s"), (101, "s")], "id long, v string").write.parquet(incoming)
    stream = spark.readStream.schema("id long, v string").parquet(incoming)
    query = (stream.writeStream.format("delta").outputMode("append")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start(path))
    query.awaitTermination(120)
    expected = _delta(path, columns)
    assert expected == [(1, "a"), (2, "B"), (100, "s"), (101, "s")]
    assert pyiceberg_rows(path, columns) == expected
    md = pyiceberg_table(path).metadata
    assert md.properties["delta-version"] == str(deltalog.Table(path).latest_version())
