"""Column defaults through Spark SQL and DataFrames, as delta-spark users write them: the feature must be
enabled first; unlisted columns, ``DEFAULT`` in ``VALUES`` / ``SET`` / MERGE, DataFrame appends that leave
a column out, ``ALTER COLUMN SET / DROP DEFAULT``; read back the same by DuckDB's delta extension."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

import deltalog

pytestmark = pytest.mark.spark


def test_column_defaults_workflow(spark: Any, tmp_path: Path) -> None:
    from readers import duckdb_rows, sort_key

    path = str(tmp_path / "d")
    t = f"delta.`{path}`"
    columns = "(id BIGINT, status STRING DEFAULT 'new', day DATE DEFAULT current_date(), n INT DEFAULT 6 + 1)"
    with pytest.raises(Exception, match="WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED"):
        spark.sql(f"CREATE TABLE {t} {columns} USING DELTA")
    assert not (tmp_path / "d" / "_delta_log").exists()
    spark.sql(f"CREATE TABLE {t} {columns} USING DELTA "
              "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')")
    today = dt.date.today()
    spark.sql(f"INSERT INTO {t} (id) VALUES (1)")
    spark.sql(f"INSERT INTO {t} VALUES (2, DEFAULT, DATE'2024-01-01', 3), (3, 'x', DEFAULT, DEFAULT)")
    spark.range(4, 5).write.format("delta").mode("append").save(path)  # a DataFrame leaving columns out
    spark.sql(f"UPDATE {t} SET status = DEFAULT, n = 0 WHERE id = 3")
    spark.sql(f"MERGE INTO {t} x USING (SELECT 4L AS id UNION ALL SELECT 5L) s ON x.id = s.id "
              "WHEN MATCHED THEN UPDATE SET status = 'merged', n = DEFAULT "
              "WHEN NOT MATCHED THEN INSERT (id, status) VALUES (s.id, DEFAULT)")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN n SET DEFAULT 9")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN status DROP DEFAULT")
    spark.sql(f"INSERT INTO {t} (id, day) VALUES (6, DATE'2024-06-06')")
    want = [(1, "new", today, 7), (2, "new", dt.date(2024, 1, 1), 3), (3, "new", today, 0),
            (4, "merged", today, 7), (5, "new", today, 7), (6, None, dt.date(2024, 6, 6), 9)]
    names = ["id", "status", "day", "n"]
    got = sorted((tuple(r) for r in spark.read.format("delta").load(path).select(*names).collect()), key=sort_key)
    assert got == want and duckdb_rows(path, names) == want
    with pytest.raises(Exception, match="WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN_NOT_SUPPORTED"):
        spark.sql(f"ALTER TABLE {t} ADD COLUMN extra INT DEFAULT 1")
    with pytest.raises(Exception, match="INVALID_DEFAULT_VALUE"):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN n SET DEFAULT no_such_function()")
    assert deltalog.Table(path).snapshot().schema.field_names == names
