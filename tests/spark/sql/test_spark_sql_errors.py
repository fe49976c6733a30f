"""Bad SQL input: syntax errors keep Spark's own error; Delta statements on a non-Delta table, an unknown
table or with a clause deltalog cannot run raise named errors; a failed statement leaves the table's log,
its files and the catalog exactly as they were."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import deltalog

pytestmark = pytest.mark.spark


def _listing(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


@pytest.fixture
def tables(spark: Any) -> Iterator[tuple[str, str]]:
    """A catalog Delta table with two rows and a parquet catalog table."""
    suffix = uuid.uuid4().hex[:8]
    delta_name, parquet_name = f"err_d_{suffix}", f"err_p_{suffix}"
    spark.sql(f"CREATE TABLE {delta_name} (id INT, v STRING) USING DELTA")
    spark.sql(f"ALTER TABLE {delta_name} ADD CONSTRAINT pos CHECK (id > 0)")
    spark.sql(f"INSERT INTO {delta_name} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"CREATE TABLE {parquet_name} (x INT) USING parquet")
    yield delta_name, parquet_name
    spark.sql(f"DROP TABLE IF EXISTS {delta_name}")
    spark.sql(f"DROP TABLE IF EXISTS {parquet_name}")


def _location(spark: Any, name: str) -> str:
    from deltalog.spark.catalog.entries import lookup

    entry = lookup(spark, name)
    assert entry is not None
    return entry.location


def test_syntax_errors_keep_sparks_error(spark: Any, tables: tuple[str, str]) -> None:
    from pyspark.errors import ParseException

    for text in ("SELEC 1", "MERGE INTO t USING", "UPDATE SET x = 1", "SELECT * FROM delta.`/x` VERSION AS 1"):
        with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR"):
            spark.sql(text)
    # Delta's own statements: a ParseException too (delta-spark's parser raises one), naming the problem
    name, _ = tables
    for text, why in {"DESCRIBE HISTORY": "table name", f"RESTORE TABLE {name}": "VERSION AS OF",
                      f"VACUUM {name} RETAIN many HOURS": "not a number",
                      f"VACUUM {name} RETAIN 200 HOURS DRY WALK": "unexpected",
                      f"OPTIMIZE {name} ZORDER (id)": "unexpected"}.items():
        with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR") as info:
            spark.sql(text)
        assert why in str(info.value) and text.split()[0] in str(info.value), (text, str(info.value))


def test_unknown_tables_are_named(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    from deltalog.errors import TableNotFoundError

    for text in ("DESCRIBE HISTORY no_such_t", "VACUUM no_such_t", "OPTIMIZE no_such_t",
                 "RESTORE TABLE no_such_t TO VERSION AS OF 0", "SHOW TBLPROPERTIES no_such_t",
                 "ALTER TABLE no_such_t ADD CONSTRAINT c CHECK (x > 0)", "FSCK REPAIR TABLE no_such_t"):
        with pytest.raises(AnalysisException, match="no_such_t") as info:
            spark.sql(text)
        assert "TABLE_OR_VIEW_NOT_FOUND" in str(info.value) or "not found" in str(info.value).lower(), text
    for text in ("UPDATE no_such_t SET x = 1", "DELETE FROM no_such_t", "INSERT INTO no_such_t VALUES (1)",
                 "MERGE INTO no_such_t t USING (SELECT 1 AS x) s ON t.x = s.x WHEN MATCHED THEN DELETE",
                 "SELECT * FROM no_such_t VERSION AS OF 1"):
        with pytest.raises(AnalysisException, match="no_such_t"):
            spark.sql(text)
    missing = tmp_path / "nothing"
    for text in (f"DESCRIBE DETAIL delta.`{missing}`", f"SELECT * FROM delta.`{missing}`"):  # delta-spark's wording
        with pytest.raises(TableNotFoundError, match=r"DELTA_MISSING_DELTA_TABLE.*nothing is not a Delta table"):
            spark.sql(text).collect()
    with pytest.raises(TableNotFoundError, match=r"DELTA_TABLE_ONLY_OPERATION.*nothing` is not a Delta table\. "
                                                 r"DESCRIBE HISTORY is only supported for Delta tables"):
        spark.sql(f"DESCRIBE HISTORY delta.`{missing}`").collect()
    assert not missing.exists()


def test_delta_statements_on_a_non_delta_table(spark: Any, tables: tuple[str, str], tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    _, pq_name = tables
    for text in (f"DESCRIBE HISTORY {pq_name}", f"OPTIMIZE {pq_name}",
                 f"RESTORE TABLE {pq_name} TO VERSION AS OF 0", f"VACUUM {pq_name}",
                 f"ALTER TABLE {pq_name} ADD CONSTRAINT c CHECK (x > 0)",
                 f"SELECT * FROM {pq_name} VERSION AS OF 0"):
        with pytest.raises(AnalysisException) as info:
            spark.sql(text).collect()
        message = str(info.value)
        assert pq_name in message and ("not a Delta table" in message or "does not support" in message
                                       or "time travel" in message.lower()), (text, message)
    plain = tmp_path / "plain"
    spark.range(3).write.parquet(str(plain))
    before = _listing(str(plain))
    for text in (f"DESCRIBE HISTORY delta.`{plain}`", f"UPDATE delta.`{plain}` SET id = 0",
                 f"DELETE FROM delta.`{plain}`", f"INSERT INTO delta.`{plain}` VALUES (1)"):
        with pytest.raises(AnalysisException, match=r"Delta table|_delta_log|not a Delta"):
            spark.sql(text)
    assert _listing(str(plain)) == before


def test_describe_detail_of_a_non_delta_table(spark: Any, tables: tuple[str, str]) -> None:
    """delta-spark describes any catalog table (deltalog refused: DELTA_TABLE_ONLY_OPERATION): the catalog's
    facts, and nulls where only a Delta log would know."""
    import datetime as dt

    delta_name, _ = tables

    name = f"detail_p_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (x INT, k STRING) USING parquet PARTITIONED BY (k) COMMENT 'raw landing' "
              "TBLPROPERTIES ('team' = 'ingest')")
    try:
        row = spark.sql(f"DESCRIBE DETAIL {name}").first()
        assert (row.format, row.name, row.description) == ("parquet", f"spark_catalog.default.{name}", "raw landing")
        assert row.location == "file:" + _location(spark, name) and row.partitionColumns == ["k"]
        assert row.properties["team"] == "ingest"
        assert abs(row.createdAt - dt.datetime.now()) < dt.timedelta(minutes=5)
        assert (row.id, row.numFiles, row.sizeInBytes, row.minReaderVersion, row.tableFeatures) == (None,) * 5
        assert spark.sql(f"DESCRIBE DETAIL {name}").columns == spark.sql(f"DESCRIBE DETAIL {delta_name}").columns
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_unsupported_clauses_are_refused_by_name(spark: Any, tables: tuple[str, str]) -> None:
    from deltalog.errors import InvalidArgumentError

    name, _ = tables
    loc = _location(spark, name)
    version = deltalog.Table(loc).latest_version()
    refusals = {
        f"ALTER TABLE delta.`{loc}` RENAME TO other_{name}": "named by its path",
        f"ALTER TABLE {name} ADD CONSTRAINT u UNIQUE (id)": "CHECK",
        f"UPDATE {name} SET v = s.v FROM (SELECT 1 AS id, 'z' AS v) s WHERE {name}.id = s.id": "MERGE INTO",
        f"MERGE INTO {name} t USING (SELECT 1 AS id) s ON t.id = s.id "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET *": "NOT MATCHED BY SOURCE",
        # sqlglot parses these; Spark has no such syntax, and ignoring the clause would change more rows
        f"DELETE FROM {name} USING (SELECT 1 AS id) s WHERE {name}.id = s.id": "DELETE ... USING",
        f"UPDATE {name} SET v = 'z' LIMIT 1": "UPDATE ... LIMIT",
        f"DELETE FROM {name} WHERE id > 0 ORDER BY id": "DELETE ... ORDER",
    }
    for text, why in refusals.items():
        with pytest.raises(InvalidArgumentError) as info:
            spark.sql(text)
        message = str(info.value)
        assert message.startswith("cannot run ") and why in message, (text, message)
    assert deltalog.Table(loc).latest_version() == version
    assert spark.catalog.tableExists(name) and not spark.catalog.tableExists(f"other_{name}")


def test_failed_writes_leave_the_table_unchanged(spark: Any, tables: tuple[str, str]) -> None:
    name, _ = tables
    loc = _location(spark, name)
    version, files = deltalog.Table(loc).latest_version(), _listing(loc)
    failing = [
        f"INSERT INTO {name} VALUES (1)",  # arity
        f"INSERT INTO {name} VALUES (-5, 'neg')",  # the CHECK constraint
        f"UPDATE {name} SET id = -id",  # the CHECK constraint
        f"UPDATE {name} SET nope = 1",  # unknown column
        f"DELETE FROM {name} WHERE nope = 1",
        f"MERGE INTO {name} t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = 'twice'",  # two source rows match one target row
        f"INSERT INTO {name} SELECT id, CAST(assert_true(id < 0) AS STRING) FROM range(3)",  # fails in the job
        f"CREATE TABLE {name} (x INT) USING DELTA",  # exists
    ]
    failures: list[str] = []
    for text in failing:
        with pytest.raises(Exception) as info:  # each fails its own way
            spark.sql(text).collect()
        failures.append(type(info.value).__name__)
        assert deltalog.Table(loc).latest_version() == version, text
    assert "Py4JJavaError" not in failures, failures  # a named error every time, not a raw JVM trace
    # files written by a failed job are removed again; the table reads as before
    assert [f for f in _listing(loc) if not f.startswith("_delta_log")] == \
        [f for f in files if not f.startswith("_delta_log")]
    assert sorted(tuple(r) for r in spark.table(name).collect()) == [(1, "a"), (2, "b")]


def test_failed_creates_leave_no_catalog_entry_and_no_files(spark: Any, tmp_path: Path) -> None:
    warehouse = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    name = f"never_{uuid.uuid4().hex[:8]}"
    with pytest.raises(Exception, match=r"assert|true"):
        spark.sql(f"CREATE TABLE {name} USING DELTA AS SELECT assert_true(id < 0) AS a FROM range(3)")
    assert not spark.catalog.tableExists(name)
    assert not os.path.exists(os.path.join(warehouse, name))
    with pytest.raises(Exception, match=r"NOT_A_TYPE|type|DATATYPE|parse"):
        spark.sql(f"CREATE TABLE {name} (x NOT_A_TYPE) USING DELTA")
    assert not spark.catalog.tableExists(name)
    assert not os.path.exists(os.path.join(warehouse, name))
    path = tmp_path / "ctas"
    with pytest.raises(Exception, match=r"assert|true"):
        spark.sql(f"CREATE TABLE delta.`{path}` USING DELTA AS SELECT assert_true(id < 0) AS a FROM range(3)")
    assert not (path / "_delta_log").exists() or not any((path / "_delta_log").iterdir())


def test_failed_replace_keeps_the_old_table(spark: Any, tables: tuple[str, str]) -> None:
    name, _ = tables
    loc = _location(spark, name)
    version = deltalog.Table(loc).latest_version()
    with pytest.raises(Exception, match=r"assert|true"):
        spark.sql(f"CREATE OR REPLACE TABLE {name} USING DELTA AS SELECT assert_true(id < 0) AS a FROM range(3)")
    assert deltalog.Table(loc).latest_version() == version
    assert spark.table(name).columns == ["id", "v"] and spark.table(name).count() == 2
    assert _location(spark, name) == loc
