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
    with pytest.raises(Exception, match="UNSUPPORTED_TYPE_CHANGE"):
        spark.sql(f"ALTER TABLE {t} CHANGE COLUMN x x INT")
