"""The SQL front end: every Delta statement of delta-spark's SQL reference, on path tables
(``delta.`/path```) and on catalog tables (Spark's in-memory catalog of the shared session), each
checked against the rows it returns and the log it leaves. The Hive metastore and Spark Connect run the
same workflow in ``test_spark_sql_catalogs.py``; bad input is in ``test_spark_sql_errors.py``."""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import deltalog

pytestmark = pytest.mark.spark

HISTORY_COLUMNS = ["version", "timestamp", "userId", "userName", "operation", "operationParameters", "job",
                   "notebook", "clusterId", "readVersion", "isolationLevel", "isBlindAppend", "operationMetrics",
                   "userMetadata", "engineInfo"]


class Target:
    """One table the tests run statements on: ``ref`` is how SQL names it."""

    def __init__(self, spark: Any, kind: str, tmp: Path) -> None:
        self.spark = spark
        self.kind = kind
        if kind == "path":
            self.path = str(tmp / "t")
            self.ref = f"delta.`{self.path}`"
        else:
            self.ref = f"sql_{uuid.uuid4().hex[:10]}"
            self.path = ""

    def sql(self, text: str) -> Any:
        return self.spark.sql(text.replace("{t}", self.ref))

    def rows(self, text: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.sql(text).collect()]

    @property
    def location(self) -> str:
        if self.kind == "path":
            return self.path
        from deltalog.spark.catalog.entries import lookup

        entry = lookup(self.spark, self.ref)
        assert entry is not None and entry.is_delta, self.ref
        return entry.location

    def table(self) -> deltalog.Table:
        return deltalog.Table(self.location)

    def version(self) -> int:
        return self.table().latest_version()

    def operations(self) -> list[str]:
        return [c["operation"] for c in reversed(self.table().history())]


@pytest.fixture(params=["path", "catalog"])
def target(request: pytest.FixtureRequest, spark: Any, tmp_path: Path) -> Iterator[Target]:
    t = Target(spark, request.param, tmp_path)
    yield t
    if t.kind == "catalog":
        spark.sql(f"DROP TABLE IF EXISTS {t.ref}")


def people(t: Target) -> None:
    t.sql("CREATE TABLE {t} (id INT NOT NULL, name STRING, age INT) USING DELTA PARTITIONED BY (age) "
          "TBLPROPERTIES ('owner' = 'data-eng', 'delta.appendOnly' = 'false')")
    t.sql("INSERT INTO {t} VALUES (1, 'ann', 30), (2, 'bob', 40), (3, 'cy', 30)")


# ------------------------------------------------------------------------------------------ CREATE / INSERT


def test_create_table_writes_schema_partitions_and_properties(target: Target) -> None:
    people(target)
    snap = target.table().snapshot()
    assert [f.name for f in snap.schema.fields] == ["id", "name", "age"]
    assert not snap.schema.fields[0].nullable and snap.schema.fields[1].nullable
    assert list(snap.metadata.partitionColumns) == ["age"]
    assert snap.properties["owner"] == "data-eng"
    assert target.operations() == ["CREATE TABLE", "WRITE"]
    assert target.rows("SELECT * FROM {t} ORDER BY id") == [(1, "ann", 30), (2, "bob", 40), (3, "cy", 30)]
    created = target.table().history()[-1]["operationParameters"]["isManaged"]  # it was "false" for both
    assert created == ("true" if target.kind == "catalog" else "false")


def test_create_if_not_exists_and_existing_table(target: Target) -> None:
    people(target)
    target.sql("CREATE TABLE IF NOT EXISTS {t} (x INT) USING DELTA")
    assert target.version() == 1
    from deltalog.errors import DeltaError

    # delta-spark: a catalog name that exists is refused; a path whose log has another schema too
    expected = "already exists" if target.kind == "catalog" else "DELTA_CREATE_TABLE_SCHEME_MISMATCH"
    with pytest.raises(DeltaError, match=expected):
        target.sql("CREATE TABLE {t} (x INT) USING DELTA")
    assert target.version() == 1


def test_insert_forms(target: Target) -> None:
    people(target)
    result = target.sql("INSERT INTO {t} (name, id, age) VALUES ('dee', 4, 50)")
    assert result.columns == ["num_affected_rows", "num_inserted_rows"]
    assert [tuple(r) for r in result.collect()] == [(1, 1)]
    target.sql("INSERT INTO {t} SELECT id + 10, upper(name), age FROM {t} WHERE age = 30")
    assert target.rows("SELECT id, name FROM {t} WHERE id > 3 ORDER BY id") == [(4, "dee"), (11, "ANN"), (13, "CY")]
    target.sql("INSERT INTO TABLE {t} VALUES (5, 'eve', 40)")
    assert target.rows("SELECT count(*) FROM {t}") == [(7,)]
    assert target.operations()[-1] == "WRITE"


def test_insert_schema_evolution_under_auto_merge(target: Target, spark: Any) -> None:
    """With ``spark.databricks.delta.schema.autoMerge.enabled``, ``INSERT ... BY NAME`` adds the query's new
    columns and a positional ``INSERT`` the columns past the table's, as delta-spark does; without it they are
    refused naming the setting (``BY NAME`` failed with a KeyError, a positional INSERT with an arity error)."""
    from deltalog.errors import InvalidArgumentError, SchemaError

    people(target)
    with pytest.raises(SchemaError, match=r"note: table \(missing\).*autoMerge\.enabled=true"):
        target.sql("INSERT INTO {t} BY NAME SELECT 'dee' AS name, 4 AS id, 50 AS age, 'x' AS note")
    with pytest.raises(InvalidArgumentError, match="INSERT_COLUMN_ARITY_MISMATCH"):
        target.sql("INSERT INTO {t} SELECT 4, 'dee', 50, 'x'")
    assert target.version() == 1
    key = "spark.databricks.delta.schema.autoMerge.enabled"
    spark.conf.set(key, "true")
    try:
        target.sql("INSERT INTO {t} BY NAME SELECT 'dee' AS name, 4 AS id, 50 AS age, 'x' AS note")
        target.sql("INSERT INTO {t} SELECT 5, 'eve', 60, 'y', 2.5D AS score")
        if target.kind == "catalog":  # df.write.insertInto: by position, the same evolution
            spark.createDataFrame([(6, "fay", 70, "z", 3.5, True)], "a int, b string, c int, d string, e double, "
                                  "flag boolean").write.insertInto(target.ref)
    finally:
        spark.conf.unset(key)
    extra = ["flag"] if target.kind == "catalog" else []
    assert target.table().snapshot().schema.field_names == ["id", "name", "age", "note", "score", *extra]
    assert target.rows("SELECT id, note, score FROM {t} WHERE id >= 3 ORDER BY id") == \
        [(3, None, None), (4, "x", None), (5, "y", 2.5)] + ([(6, "z", 3.5)] if extra else [])


def test_char_and_varchar_columns(target: Target, spark: Any) -> None:
    """``CHAR(n)`` / ``VARCHAR(n)`` columns are stored as Spark stores them (``string`` with the declared type
    in the field's metadata) and every write checks the length (``EXCEED_LIMIT_LENGTH``), as delta-spark does;
    CREATE TABLE failed before, and nested ones are refused."""
    from deltalog.spark import DeltaTable
    from deltalog.txn.constraints import ConstraintViolationError

    target.sql("CREATE TABLE {t} (id INT, c CHAR(3), v VARCHAR(5)) USING DELTA")
    fields = {f.name: f for f in target.table().snapshot().schema.fields}
    assert fields["v"].metadata == {"__CHAR_VARCHAR_TYPE_STRING": "varchar(5)"}
    target.sql("INSERT INTO {t} VALUES (1, 'abc', 'abcde'), (2, 'a', 'ab   ')")
    for statement in ("INSERT INTO {t} VALUES (3, 'abcd', 'a')", "UPDATE {t} SET v = 'abcdef' WHERE id = 1",
                      "MERGE INTO {t} AS x USING (SELECT 9 AS id, 'x' AS c, 'toolong' AS v) s ON x.id = s.id "
                      "WHEN NOT MATCHED THEN INSERT *"):
        with pytest.raises(ConstraintViolationError, match="EXCEED_LIMIT_LENGTH"):
            target.sql(statement)
    assert target.version() == 1
    assert [tuple(r)[:2] for r in target.sql("DESCRIBE {t}").collect()] == \
        [("id", "int"), ("c", "char(3)"), ("v", "varchar(5)"), ("", ""), ("# Partitioning", ""),
         ("Not partitioned", "")]
    assert target.rows("SELECT id, c, v FROM {t} ORDER BY id") == [(1, "abc", "abcde"), (2, "a", "ab   ")]
    with pytest.raises(Exception, match="inside a struct, array or map"):
        spark.sql(f"CREATE TABLE nested_{uuid.uuid4().hex[:6]} (a ARRAY<VARCHAR(2)>) USING DELTA")
    if target.kind == "path":
        built = str(Path(target.path).parent / "built")
        DeltaTable.create(spark).location(built).addColumn("v", "VARCHAR(2)").execute()
        with pytest.raises(ConstraintViolationError, match=r"column v is varchar\(2\)"):
            spark.createDataFrame([("abc",)], "v string").write.format("delta").mode("append").save(built)


def test_insert_overwrite_and_replace_where(target: Target) -> None:
    people(target)
    target.sql("INSERT INTO {t} REPLACE WHERE age = 30 SELECT 7, 'gil', 30")
    assert target.rows("SELECT id FROM {t} ORDER BY id") == [(2,), (7,)]
    commit = target.table().history(limit=1)[0]
    assert commit["operation"] == "WRITE" and "age = 30" in commit["operationParameters"]["predicate"]
    target.sql("INSERT OVERWRITE {t} SELECT 9, 'ivy', 60")
    assert target.rows("SELECT * FROM {t}") == [(9, "ivy", 60)]
    assert target.table().history(limit=1)[0]["operationParameters"]["mode"] == "Overwrite"


def test_insert_overwrite_partitions(target: Target, spark: Any) -> None:
    people(target)  # ages 30 (ids 1, 3) and 40 (id 2)
    target.sql("INSERT INTO {t} VALUES (4, 'dee', 50)")
    target.sql("INSERT OVERWRITE {t} PARTITION (age = 30) SELECT 7, 'gil'")  # static: that partition only
    assert target.rows("SELECT id, age FROM {t} ORDER BY id") == [(2, 40), (4, 50), (7, 30)]
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:  # dynamic: the partitions the query writes into
        target.sql("INSERT OVERWRITE {t} SELECT 40, 'hal', 40")  # by position, though two columns are named 40
        assert target.rows("SELECT id, age FROM {t} ORDER BY id") == [(4, 50), (7, 30), (40, 40)]
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    target.sql("INSERT OVERWRITE {t} PARTITION (age) SELECT 9, 'ivy', 60")  # static mode: the whole table
    assert target.rows("SELECT id, age FROM {t}") == [(9, 60)]


def test_ctas_create_or_replace_and_replace(target: Target, spark: Any) -> None:
    target.sql("CREATE TABLE {t} USING DELTA PARTITIONED BY (k) TBLPROPERTIES ('p' = '1') AS "
               "SELECT id, CAST(id % 2 AS INT) AS k FROM range(6)")
    snap = target.table().snapshot()
    assert list(snap.metadata.partitionColumns) == ["k"] and snap.properties["p"] == "1"
    assert target.rows("SELECT count(*) FROM {t} WHERE k = 1") == [(3,)]
    assert target.operations() == ["CREATE TABLE AS SELECT"]
    target.sql("CREATE OR REPLACE TABLE {t} USING DELTA AS SELECT 'x' AS s")
    assert target.rows("SELECT * FROM {t}") == [("x",)]
    assert target.operations()[-1] == "CREATE OR REPLACE TABLE AS SELECT"
    target.sql("REPLACE TABLE {t} (a INT, b STRING) USING DELTA")
    assert target.rows("SELECT * FROM {t}") == []
    assert [f.name for f in target.table().snapshot().schema.fields] == ["a", "b"]
    assert target.operations()[-1] == "REPLACE TABLE"
    assert target.rows("SELECT * FROM {t} VERSION AS OF 0 WHERE id = 4") == [(4, 0)]
    # a catalog table in the warehouse is managed, in every create's commitInfo (REPLACE TABLE said false)
    managed = {c["operationParameters"]["isManaged"] for c in target.table().history()}
    assert managed == {"true" if target.kind == "catalog" else "false"}


# ------------------------------------------------------------------------------------------ DML


def test_update_and_delete(target: Target) -> None:
    people(target)
    result = target.sql("UPDATE {t} SET name = concat(name, '!'), age = age + 1 WHERE id <= 2")
    assert result.columns == ["num_affected_rows"] and result.first()[0] == 2
    assert target.rows("SELECT * FROM {t} ORDER BY id") == [(1, "ann!", 31), (2, "bob!", 41), (3, "cy", 30)]
    result = target.sql("DELETE FROM {t} WHERE age > 40")
    assert result.columns == ["num_affected_rows"] and result.first()[0] == 1
    assert target.rows("SELECT id FROM {t} ORDER BY id") == [(1,), (3,)]
    target.sql("DELETE FROM {t}")
    assert target.rows("SELECT count(*) FROM {t}") == [(0,)]
    assert target.operations()[-3:] == ["UPDATE", "DELETE", "DELETE"]


@pytest.fixture
def catalog_target(spark: Any, tmp_path: Path) -> Iterator[Target]:
    """A catalog table only (for tests whose statements name tables the same way on both kinds)."""
    t = Target(spark, "catalog", tmp_path)
    yield t
    spark.sql(f"DROP TABLE IF EXISTS {t.ref}")


def test_dml_with_ctes_and_subqueries_over_delta_tables(catalog_target: Target, spark: Any, tmp_path: Path) -> None:
    """Spark's ``WITH ... INSERT / MERGE / UPDATE / DELETE`` and ``IN (SELECT ... FROM <Delta table>)``
    conditions: the CTEs and the Delta tables they read reach the statement, and no view is left behind.
    The subqueries read a path table, the statements write a catalog table: both kinds of reference."""
    target = catalog_target
    people(target)
    staged = f"delta.`{tmp_path / 'staged'}`"
    spark.sql(f"CREATE TABLE {staged} (id INT, name STRING, age INT) USING DELTA")
    spark.sql(f"INSERT INTO {staged} VALUES (2, 'bo', 41), (3, 'cyd', 31), (9, 'ida', 50)")
    views = {t.name for t in spark.catalog.listTables()}
    target.sql(f"WITH young AS (SELECT id + 10 AS id, name, age FROM {staged} WHERE age < 45) "
               "INSERT INTO {t} SELECT * FROM young")
    target.sql(f"INSERT INTO {{t}} WITH old AS (SELECT id + 20 AS id, name, age FROM {staged} WHERE age > 45) "
               "SELECT * FROM old")
    assert target.rows("SELECT id FROM {t} WHERE id > 10 ORDER BY id") == [(12,), (13,), (29,)]
    merged = target.sql(f"WITH src AS (SELECT * FROM {staged}), people AS (SELECT * FROM src WHERE id < 9) "
                        "MERGE INTO {t} AS t USING people ON t.id = people.id "  # the CTE hides any table `people`
                        "WHEN MATCHED THEN UPDATE SET t.name = people.name WHEN NOT MATCHED THEN INSERT *")
    assert tuple(merged.first()) == (2, 2, 0, 0)
    assert target.rows("SELECT id, name FROM {t} WHERE id <= 3 ORDER BY id") == [(1, "ann"), (2, "bo"), (3, "cyd")]
    deleted = target.sql(f"DELETE FROM {{t}} WHERE id - 10 IN (SELECT id FROM {staged}) OR id = 29")
    assert deleted.first()[0] == 3
    updated = target.sql(f"WITH picked AS (SELECT id FROM {staged} WHERE age > 40), again AS (SELECT * FROM picked) "
                         "UPDATE {t} SET age = 0 WHERE id IN (SELECT id FROM again)")
    assert updated.first()[0] == 1
    version = target.version()
    from deltalog.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match=r"DELTA_UNSUPPORTED_SUBQUERY.*target's column t\.id"):
        target.sql("WITH x AS (SELECT 3 AS id) DELETE FROM {t} t WHERE EXISTS (SELECT 1 FROM x WHERE x.id > t.id)")
    assert target.version() == version  # refused, not run with t.id taken for x.id
    # EXISTS correlated by equalities runs (as an IN), with EXISTS's meaning for nulls
    gone = target.sql("WITH x AS (SELECT 3 AS id UNION ALL SELECT NULL) DELETE FROM {t} t "
                      "WHERE EXISTS (SELECT 1 FROM x WHERE x.id = t.id AND t.age > 0)")
    assert gone.first()[0] == 1
    assert target.rows("SELECT * FROM {t} ORDER BY id") == [(1, "ann", 30), (2, "bo", 0)]
    kept = target.sql("WITH x AS (SELECT 1 AS id UNION ALL SELECT NULL) UPDATE {t} AS t SET age = 99 "
                      "WHERE NOT EXISTS (SELECT * FROM x WHERE t.id = x.id)")
    assert kept.first()[0] == 1
    assert target.rows("SELECT * FROM {t} ORDER BY id") == [(1, "ann", 30), (2, "bo", 99)]
    assert {t.name for t in spark.catalog.listTables()} == views  # the reads' temporary views are gone


def test_statements_with_python_arguments(catalog_target: Target, spark: Any) -> None:
    """``spark.sql(text, **kwargs)``, PySpark's formatting of ``{df}`` / ``{value}`` (DataFrames become tables,
    strings literals, columns references), in statements on a Delta table; optimizer hints naming it."""
    from pyspark.sql import functions as F

    target = catalog_target
    people(target)
    views = {t.name for t in spark.catalog.listTables()}
    staged = spark.createDataFrame([(2, "bo", 41), (9, "ida", 50)], "id int, name string, age int")
    spark.sql(f"INSERT INTO {target.ref} SELECT * FROM {{s}} WHERE id > {{n}}", s=staged, n=5)
    spark.sql(f"MERGE INTO {target.ref} t USING {{s}} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.name = s.name",
              s=staged)
    spark.sql(f"UPDATE {target.ref} SET name = {{name}} WHERE id = {{i}}", name="o'neil", i=3)
    spark.sql(f"DELETE FROM {target.ref} WHERE id IN (SELECT id + 8 FROM {{s}})", s=spark.range(1, 2))
    rows = spark.sql(f"SELECT /*+ BROADCAST(t) */ {{c}}, t.name FROM {target.ref} t JOIN {{s}} s USING (id) ORDER BY 1",
                     c=F.col("id"), s=spark.range(10)).collect()
    assert [tuple(r) for r in rows] == [(1, "ann"), (2, "bo"), (3, "o'neil")]
    assert {t.name for t in spark.catalog.listTables()} == views


def test_parameter_markers_identifier_and_merge_with_schema_evolution(catalog_target: Target, spark: Any) -> None:
    """``spark.sql(text, args=...)`` with ``:name`` / ``?`` markers in statements deltalog runs (they were left
    unbound), ``IDENTIFIER('t')`` / ``IDENTIFIER(:t)`` naming a Delta table (read through Spark's data source
    path, which failed), and ``MERGE WITH SCHEMA EVOLUTION INTO`` (Spark's own MERGE, which failed)."""
    target = catalog_target
    people(target)
    t = target.ref
    spark.sql(f"UPDATE {t} SET name = :n WHERE id = :i", args={"n": "ANN", "i": 1})
    spark.sql(f"DELETE FROM {t} WHERE id = ?", args=[2])
    spark.sql(f"INSERT INTO {t} (id, name, age) VALUES (:i, 'dee', :a)", args={"i": 4, "a": 40})
    assert spark.sql("SELECT id, name FROM IDENTIFIER(:t) ORDER BY id", args={"t": t}).collect() == \
        spark.sql(f"SELECT id, name FROM IDENTIFIER('{t}') ORDER BY id").collect()
    assert target.rows("SELECT id, name FROM {t} ORDER BY id") == [(1, "ANN"), (3, "cy"), (4, "dee")]
    spark.sql(f"MERGE WITH SCHEMA EVOLUTION INTO {t} USING (SELECT 3 AS id, 'CY' AS name, 1 AS extra) s "
              "ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *".replace("{t}", t))
    assert target.rows("SELECT * FROM {t} WHERE id = 3") == [(3, "CY", 30, 1)]  # age kept, extra added
    # IDENTIFIER as the target of INSERT (with a column list: sqlglot read it as one) and of OPTIMIZE (failed)
    spark.sql("INSERT INTO IDENTIFIER(:t) (name, id) VALUES ('eve', 5)", args={"t": t})
    spark.sql(f"INSERT INTO IDENTIFIER('{t}') VALUES (6, 'fay', 60, 0)")
    assert target.rows("SELECT id, name, age FROM {t} WHERE id > 4 ORDER BY id") == [(5, "eve", None), (6, "fay", 60)]
    assert spark.sql(f"OPTIMIZE IDENTIFIER('{t}')").first().metrics.numFilesAdded == 1
    assert spark.sql("SELECT 'IDENTIFIER(''x'')' AS s").first().s == "IDENTIFIER('x')"  # a string stays one


def test_merge_with_every_clause_and_a_subquery_source(target: Target) -> None:
    people(target)
    result = target.sql("""
        MERGE INTO {t} AS t
        USING (SELECT 1 AS id, 'ANN' AS name, 30 AS age, false AS gone
               UNION ALL SELECT 2, 'BOB', 40, true
               UNION ALL SELECT 8, 'hal', 20, false) AS s
        ON t.id = s.id
        WHEN MATCHED AND s.gone THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.name = s.name
        WHEN NOT MATCHED AND s.age > 10 THEN INSERT (id, name, age) VALUES (s.id, s.name, s.age)
        WHEN NOT MATCHED BY SOURCE AND t.age = 30 THEN UPDATE SET t.name = 'stale'
    """)
    assert result.columns == ["num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows"]
    assert tuple(result.first()) == (4, 2, 1, 1)
    assert target.rows("SELECT * FROM {t} ORDER BY id") == [(1, "ANN", 30), (3, "stale", 30), (8, "hal", 20)]
    commit = target.table().history(limit=1)[0]
    assert commit["operation"] == "MERGE"
    assert commit["operationMetrics"]["numTargetRowsNotMatchedBySourceUpdated"] == "1"


def test_merge_star_actions_and_by_source_delete(target: Target, tmp_path: Path) -> None:
    people(target)
    src = tmp_path / "src"
    target.spark.sql(f"CREATE TABLE delta.`{src}` (id INT, name STRING, age INT) USING DELTA")
    target.spark.sql(f"INSERT INTO delta.`{src}` VALUES (1, 'a1', 31), (9, 'z', 99)")
    target.sql(f"MERGE INTO {{t}} USING delta.`{src}` src ON {{t}}.id = src.id "
               "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT * "
               "WHEN NOT MATCHED BY SOURCE THEN DELETE".replace("{t}.id", "t.id").replace("{t} USING",
                                                                                          "{t} t USING"))
    assert target.rows("SELECT * FROM {t} ORDER BY id") == [(1, "a1", 31), (9, "z", 99)]


# ------------------------------------------------------------------------------------------ reads


def test_time_travel_in_sql(target: Target) -> None:
    people(target)  # v0 create, v1 insert
    target.sql("DELETE FROM {t} WHERE id = 1")  # v2
    assert target.rows("SELECT count(*) FROM {t} VERSION AS OF 1") == [(3,)]
    assert target.rows("SELECT count(*) FROM {t} FOR VERSION AS OF 1") == [(3,)]
    assert target.rows("SELECT count(*) FROM {t} VERSION AS OF 0") == [(0,)]
    at = target.rows("SELECT count(*) FROM {t}@v1")
    assert at == [(3,)]
    stamp = target.table().history()[-2]["timestamp"]  # version 1
    text = dt.datetime.fromtimestamp(stamp / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    assert target.rows(f"SELECT count(*) FROM {{t}} TIMESTAMP AS OF '{text}'") == [(3,)]
    # an expression, evaluated by Spark in the session time zone
    assert target.rows(f"SELECT count(*) FROM {{t}} TIMESTAMP AS OF CAST('{text}' AS TIMESTAMP) + INTERVAL 0 SECONDS") \
        == [(3,)]
    from deltalog.errors import VersionNotFoundError

    with pytest.raises(VersionNotFoundError, match="after the latest commit"):  # as delta-spark
        target.rows("SELECT count(*) FROM {t} TIMESTAMP AS OF current_timestamp() + INTERVAL 1 HOUR")
    # both sides of a self-join at different versions
    assert target.rows("SELECT count(*) FROM {t} VERSION AS OF 1 a LEFT ANTI JOIN {t} b ON a.id = b.id") == [(1,)]


def test_delta_paths_in_joins_ctes_and_subqueries(spark: Any, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    spark.range(10).selectExpr("id", "id % 3 AS g").write.format("delta").save(str(a))
    spark.range(3).selectExpr("id AS g", "concat('g', id) AS label").write.format("delta").save(str(b))
    rows = spark.sql(f"""
        WITH big AS (SELECT * FROM delta.`{a}` WHERE id >= 4)
        SELECT l.label, count(*) AS n
        FROM big JOIN delta.`{b}` l ON big.g = l.g
        WHERE big.id IN (SELECT id FROM delta.`{a}` WHERE id % 2 = 0)
        GROUP BY l.label ORDER BY l.label""").collect()
    assert [tuple(r) for r in rows] == [("g0", 1), ("g1", 1), ("g2", 1)]
    scalar = spark.sql(f"SELECT (SELECT max(id) FROM delta.`{a}`) AS m").first()[0]
    assert scalar == 9
    # the reads are DataFrame arguments of Spark's sql(): no temporary view outlives a statement
    assert [t.name for t in spark.catalog.listTables() if t.isTemporary] == []


def test_table_changes(target: Target) -> None:
    target.sql("CREATE TABLE {t} (id INT, v STRING) USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    target.sql("INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    target.sql("UPDATE {t} SET v = 'B' WHERE id = 2")
    name = target.path if target.kind == "path" else target.ref
    rows = target.rows(f"SELECT id, v, _change_type, _commit_version FROM table_changes('{name}', 1, 2) "
                       "ORDER BY _commit_version, id, _change_type")
    assert rows == [(1, "a", "insert", 1), (2, "b", "insert", 1),
                    (2, "B", "update_postimage", 2), (2, "b", "update_preimage", 2)]
    if target.kind == "path":
        assert target.rows(f"SELECT count(*) FROM table_changes_by_path('{name}', 2)") == [(2,)]


def test_catalog_reads_take_the_parquet_scan(spark: Any) -> None:
    name = f"fast_{uuid.uuid4().hex[:8]}"
    try:
        spark.range(100).selectExpr("id", "id % 4 AS k").write.format("delta").partitionBy("k").saveAsTable(name)
        from deltalog.spark.catalog.entries import lookup

        location = lookup(spark, name).location  # type: ignore[union-attr]
        for df in (spark.table(name), spark.read.table(name), spark.sql(f"SELECT * FROM {name} WHERE k = 1")):
            plan = df._jdf.queryExecution().executedPlan().toString()
            assert "FileScan parquet" in plan and "PythonDataSource" not in plan and "BatchEvalPython" not in plan
        assert spark.sql(f"SELECT count(*) FROM {name} WHERE k = 1").first()[0] == 25
        # the WHERE clause of a one-table query prunes and skips files in deltalog's planning, as a DataFrame
        # filter does: only the k = 1 files (and only those whose id range can match) are scanned
        assert len(spark.sql(f"SELECT * FROM {name} WHERE k = 1").inputFiles()) == \
            len(spark.read.format("delta").load(location).where("k = 1").inputFiles()) < 8
        assert len(spark.sql(f"SELECT * FROM {name} WHERE id = 99 AND k = 3").inputFiles()) == 1
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


# ------------------------------------------------------------------------------------------ utilities


def test_describe_history_and_detail(target: Target) -> None:
    people(target)
    history = target.sql("DESCRIBE HISTORY {t}")
    assert history.columns == HISTORY_COLUMNS
    assert [(r.version, r.operation) for r in history.collect()] == [(1, "WRITE"), (0, "CREATE TABLE")]
    assert [r.version for r in target.sql("DESCRIBE HISTORY {t} LIMIT 1").collect()] == [1]
    # every form of table reference delta-spark's grammar takes: DESC or DESCRIBE, delta.`path`, a path as a
    # string, a backquoted absolute path, qualified catalog names, any case, LIMIT
    loc = target.location.removeprefix("file:")
    forms = [f"DESC HISTORY {target.ref}", f"describe history '{loc}' limit 1", f'DESCRIBE HISTORY "{loc}"',
             f"DESCRIBE HISTORY `{loc}` LIMIT 1", f"DESC HISTORY delta.`{loc}`"]
    if target.kind == "catalog":
        forms += [f"DESCRIBE HISTORY default.{target.ref}", f"DESC HISTORY spark_catalog.default.{target.ref} LIMIT 1"]
    assert {f: target.spark.sql(f).count() for f in forms} == {f: 1 if "limit" in f.lower() else 2 for f in forms}
    assert target.spark.sql(f"DESC DETAIL `{loc}`").first().numFiles == target.table().snapshot().add_files().num_rows
    detail = target.sql("DESCRIBE DETAIL {t}").first()
    assert detail.format == "delta" and detail.partitionColumns == ["age"]
    assert detail.numFiles == target.table().snapshot().add_files().num_rows
    assert detail.properties["owner"] == "data-eng"
    assert detail.location.rstrip("/").endswith(os.path.basename(target.location))
    if target.kind == "catalog":
        assert detail.name == f"spark_catalog.default.{target.ref}"


def test_optimize_and_zorder(target: Target) -> None:
    target.sql("CREATE TABLE {t} (id BIGINT, k INT) USING DELTA PARTITIONED BY (k)")
    for i in range(3):
        target.sql(f"INSERT INTO {{t}} VALUES ({i}, 0), ({i + 10}, 1)")
    result = target.sql("OPTIMIZE {t} WHERE k = 0")
    assert result.columns == ["path", "metrics"]
    metrics = result.first().metrics
    assert (metrics.numFilesRemoved, metrics.numFilesAdded) == (3, 1)
    assert len(target.table().snapshot().add_files()) == 4
    metrics = target.sql("OPTIMIZE {t} ZORDER BY (id)").first().metrics
    assert metrics.numFilesRemoved == 4 and metrics.zOrderStats is not None
    assert target.operations()[-2:] == ["OPTIMIZE", "OPTIMIZE"]
    assert target.rows("SELECT sum(id) FROM {t}") == [(sum(range(3)) + sum(range(10, 13)),)]


def test_reorg_purge(catalog_target: Target) -> None:
    from deltalog.errors import InvalidArgumentError, SqlSyntaxError, UnsupportedFeatureError

    target = catalog_target
    target.sql("CREATE TABLE {t} (id BIGINT, k INT) USING DELTA PARTITIONED BY (k) "
               "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    for i in range(2):
        target.sql(f"INSERT INTO {{t}} VALUES ({i}, 0), ({i + 10}, 0), ({i + 20}, 1), ({i + 30}, 1)")
    target.sql("DELETE FROM {t} WHERE id IN (0, 20, 21)")
    live = sorted(target.rows("SELECT id, k FROM {t}"))

    def with_dvs() -> list[str]:
        files = target.table().snapshot().add_files()
        return sorted(str(dict(p)["k"]) for p, dv in zip(files.column("partitionValues").to_pylist(),
                                                  files.column("deletionVector").to_pylist(), strict=True) if dv)

    assert with_dvs() == ["0", "1", "1"]
    metrics = target.sql("REORG TABLE {t} WHERE k = 1 APPLY (PURGE)").first().metrics
    # only the files with deletion vectors, each partition's bin-packed into one: both k=1 files
    assert (metrics.numFilesRemoved, metrics.numFilesAdded) == (2, 1)
    assert metrics.deletionVectorStats.numDeletionVectorRowsRemoved == 2
    assert with_dvs() == ["0"] and sorted(target.rows("SELECT id, k FROM {t}")) == live
    assert target.sql("REORG TABLE {t} APPLY (PURGE)").first().metrics.numFilesRemoved == 1  # the k=0 one
    assert with_dvs() == [] and sorted(target.rows("SELECT id, k FROM {t}")) == live
    assert len(target.table().snapshot().add_files()) == 3  # the file without a deletion vector stays
    last = target.table().history(limit=1)[0]
    assert last["operation"] == "REORG" and last["operationParameters"]["applyPurge"] is True  # a JSON literal
    assert target.sql("REORG TABLE {t} APPLY (PURGE)").first().metrics.numFilesRemoved == 0  # nothing to do
    version = target.version()
    with pytest.raises(UnsupportedFeatureError, match="COMPAT_VERSION_NOT_SUPPORTED"):
        target.sql("REORG TABLE {t} APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION = 3))")
    with pytest.raises(SqlSyntaxError, match="APPLY takes"):
        target.sql("REORG TABLE {t} APPLY (COMPACT)")
    with pytest.raises(InvalidArgumentError, match="REORG filter references non-partition column 'id'"):
        target.sql("REORG TABLE {t} WHERE id = 1 APPLY (PURGE)")
    assert target.version() == version


def test_vacuum(target: Target, spark: Any) -> None:
    target.sql("CREATE TABLE {t} (id INT) USING DELTA")
    target.sql("INSERT INTO {t} VALUES (1)")
    target.sql("INSERT OVERWRITE {t} VALUES (2)")
    from deltalog.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="retention"):
        target.sql("VACUUM {t} RETAIN 0 HOURS")
    assert target.version() == 2
    dry = target.sql("VACUUM {t} RETAIN 200 HOURS DRY RUN")
    assert dry.columns == ["path"] and dry.collect() == []
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        dry = target.sql("VACUUM {t} RETAIN 0 HOURS DRY RUN")
        listed = [r.path.removeprefix("file:") for r in dry.collect()]
        assert len(listed) == 1 and listed[0].endswith(".parquet") and os.path.exists(listed[0])
        # LITE (the removed files the log names), its modifiers in any order, as delta-spark takes them
        lite = target.sql("VACUUM {t} LITE DRY RUN RETAIN 0 HOURS").collect()
        assert [r.path.removeprefix("file:") for r in lite] == listed
        _vacuum_using_inventory(target, spark, listed[0])
        assert target.version() == 2
        done = target.sql("VACUUM {t} RETAIN 0 HOURS").collect()
        assert len(done) == 1
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert not os.path.exists(listed[0])
    assert target.rows("SELECT * FROM {t}") == [(2,)]
    assert target.operations()[-2:] == ["VACUUM START", "VACUUM END"]


def _vacuum_using_inventory(target: Target, spark: Any, doomed: str) -> None:
    """``USING INVENTORY``: the listing comes from a table or query (it was refused)."""
    from deltalog.errors import InvalidArgumentError

    root = target.table().location.removeprefix("file:")
    stray = os.path.join(root, "stray.parquet")  # old and unreferenced, but not in the inventory: it stays
    with open(stray, "wb") as f:
        f.write(b"x")
    os.utime(stray, (0, 0))
    rows = [("file:" + os.path.join(d, n), os.path.getsize(os.path.join(d, n)), False,
             int(os.path.getmtime(os.path.join(d, n)) * 1000))
            for d, _, names in os.walk(root) for n in names if n != "stray.parquet"]
    rows += [("file:" + root, 0, True, 0), ("file:/elsewhere/x.parquet", 1, False, 0)]
    spark.createDataFrame(rows, "path string, length bigint, isDir boolean, modificationTime bigint") \
        .createOrReplaceTempView("vacuum_inventory")
    got = target.sql("VACUUM {t} USING INVENTORY vacuum_inventory RETAIN 0 HOURS DRY RUN").collect()
    assert [r.path.removeprefix("file:") for r in got] == [doomed]
    got = target.sql("VACUUM {t} DRY RUN USING INVENTORY (SELECT * FROM vacuum_inventory WHERE NOT isDir) "
                     "RETAIN 0 HOURS").collect()
    assert [r.path.removeprefix("file:") for r in got] == [doomed]
    spark.createDataFrame([("x", 1)], "path string, length int").createOrReplaceTempView("vacuum_inventory")
    with pytest.raises(InvalidArgumentError, match=r"DELTA_INVALID_INVENTORY_SCHEMA.*`isDir` BOOLEAN"):
        target.sql("VACUUM {t} USING INVENTORY vacuum_inventory RETAIN 0 HOURS")
    with pytest.raises(InvalidArgumentError, match="VACUUM LITE finds the files in the log"):
        target.sql("VACUUM {t} LITE USING INVENTORY (SELECT 'x' AS path, 1L AS length, false AS isDir, "
                   "0L AS modificationTime) RETAIN 0 HOURS")
    spark.catalog.dropTempView("vacuum_inventory")
    assert os.path.exists(stray) and os.path.exists(doomed)
    os.remove(stray)


def test_restore(target: Target) -> None:
    people(target)
    target.sql("DELETE FROM {t} WHERE age = 30")
    result = target.sql("RESTORE TABLE {t} TO VERSION AS OF 1")
    assert result.columns[:2] == ["table_size_after_restore", "num_of_files_after_restore"]
    assert target.rows("SELECT count(*) FROM {t}") == [(3,)]
    target.sql("DELETE FROM {t}")
    stamp = target.table().history()[-2]["timestamp"]  # version 1
    text = dt.datetime.fromtimestamp(stamp / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    target.sql(f"RESTORE {{t}} TO TIMESTAMP AS OF '{text}'")
    assert target.rows("SELECT count(*) FROM {t}") == [(3,)]
    assert target.operations()[-1] == "RESTORE"


def test_create_table_with_check_constraints(target: Target) -> None:
    from deltalog.errors import DeltaError

    for bad, why in (("id INT, CHECK (id > 0)", "needs a name"),
                     ("id INT, CONSTRAINT pk PRIMARY KEY (id)", "only CHECK constraints"),
                     ("id INT, CONSTRAINT c CHECK (nope > 0)", "nope"),
                     ("id INT, CONSTRAINT c CHECK (id + 1)", "boolean")):
        with pytest.raises(DeltaError, match=why):
            target.sql(f"CREATE TABLE {{t}} ({bad}) USING DELTA")
        assert not target.spark.catalog.tableExists(target.ref) if target.kind == "catalog" else \
            not os.path.exists(target.path)
    target.sql("CREATE TABLE {t} (id INT NOT NULL, qty INT CONSTRAINT qty_pos CHECK (qty > 0), "
               "CONSTRAINT Small CHECK (id < 100)) USING DELTA")
    props = target.table().snapshot().properties
    assert (props["delta.constraints.qty_pos"], props["delta.constraints.small"]) == ("qty > 0", "id < 100")
    assert target.operations() == ["CREATE TABLE"] and target.table().snapshot().protocol.minWriterVersion >= 3
    with pytest.raises(DeltaError, match="qty_pos"):
        target.sql("INSERT INTO {t} VALUES (1, 0)")
    with pytest.raises(DeltaError, match="column id") as null:
        target.sql("INSERT INTO {t} VALUES (NULL, 5)")
    assert null.value.getCondition() == "DELTA_NOT_NULL_CONSTRAINT_VIOLATED"  # type: ignore[attr-defined]
    target.sql("INSERT INTO {t} VALUES (1, 5)")
    assert target.rows("SELECT * FROM {t}") == [(1, 5)]


def test_alter_table(target: Target) -> None:
    people(target)
    target.sql("ALTER TABLE {t} ADD CONSTRAINT adult CHECK (age >= 18)")
    assert target.table().snapshot().properties["delta.constraints.adult"] == "age >= 18"
    from deltalog.errors import DeltaError

    with pytest.raises(DeltaError, match="adult") as violated:
        target.sql("INSERT INTO {t} VALUES (5, 'kid', 9)")
    assert violated.value.getCondition() == "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"  # type: ignore[attr-defined]
    before = target.version()
    target.sql("ALTER TABLE {t} DROP CONSTRAINT adult")
    target.sql("ALTER TABLE {t} DROP CONSTRAINT IF EXISTS adult")  # delta-spark commits this one too
    assert "delta.constraints.adult" not in target.table().snapshot().properties
    assert target.version() == before + 2
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as missing:
        target.sql("ALTER TABLE {t} DROP CONSTRAINT adult")
    assert missing.value.getCondition() == "DELTA_CONSTRAINT_DOES_NOT_EXIST"
    target.sql("ALTER TABLE {t} SET TBLPROPERTIES ('team' = 'x', 'delta.logRetentionDuration' = 'interval 60 days')")
    target.sql("ALTER TABLE {t} UNSET TBLPROPERTIES ('owner')")
    with pytest.raises(AnalysisException) as missing:
        target.sql("ALTER TABLE {t} UNSET TBLPROPERTIES ('owner')")
    assert missing.value.getCondition() == "DELTA_UNSET_NON_EXISTENT_PROPERTY"
    assert target.version() == before + 4
    target.sql("ALTER TABLE {t} UNSET TBLPROPERTIES IF EXISTS ('owner', 'never')")
    props = target.table().snapshot().properties
    assert props["team"] == "x" and "owner" not in props
    target.sql("ALTER TABLE {t} ADD COLUMNS (email STRING COMMENT 'work mail', score DOUBLE)")
    target.sql("ALTER TABLE {t} ADD COLUMN nick STRING AFTER name")
    target.sql("ALTER TABLE {t} ADD COLUMNS (address STRUCT<city: STRING>)")
    target.sql("ALTER TABLE {t} ADD COLUMNS (address.zip STRING FIRST, address.street STRING)")  # nested fields
    assert target.rows("SELECT address FROM {t} WHERE id = 1") == [(None,)]
    target.sql("INSERT INTO {t} (id, name, age, address) VALUES (7, 'g', 70, named_struct('zip', 'z', 'city', 'c', "
               "'street', 's'))")
    assert target.rows("SELECT address.zip, address.street FROM {t} WHERE id = 7") == [("z", "s")]
    target.sql("DELETE FROM {t} WHERE id = 7")
    target.sql("ALTER TABLE {t} ALTER COLUMN name COMMENT 'given name'")
    target.sql("ALTER TABLE {t} ALTER COLUMN id DROP NOT NULL")
    fields = {f.name: f for f in target.table().snapshot().schema.fields}
    assert list(fields) == ["id", "name", "nick", "age", "email", "score", "address"]
    assert [f.name for f in fields["address"].type.fields] == ["zip", "city", "street"]
    assert fields["email"].metadata.get("comment") == "work mail"
    assert fields["name"].metadata.get("comment") == "given name"
    assert fields["id"].nullable
    target.sql("ALTER TABLE {t} ALTER COLUMN name SET NOT NULL")
    assert not {f.name: f for f in target.table().snapshot().schema.fields}["name"].nullable
    assert target.rows("SELECT id, email FROM {t} WHERE id = 1") == [(1, None)]
    assert target.operations()[-7:] == ["ADD COLUMNS", "ADD COLUMNS", "WRITE", "DELETE", "CHANGE COLUMN",
                                        "CHANGE COLUMN", "CHANGE COLUMN"]


def test_alter_column_first_and_after_move_columns(target: Target) -> None:
    """``ALTER COLUMN c FIRST | AFTER x`` (and ``CHANGE COLUMN c c type ... FIRST | AFTER x``) move a column,
    nested fields within their struct, as delta-spark does; Spark refused them (sqlglot leaves them as text)."""
    from deltalog.errors import InvalidArgumentError

    people(target)  # id, name, age
    target.sql("ALTER TABLE {t} ADD COLUMNS (address STRUCT<city: STRING, zip: STRING>)")
    target.sql("ALTER TABLE {t} ALTER COLUMN age FIRST")
    target.sql("ALTER TABLE {t} ALTER COLUMN `name` COMMENT 'given name' AFTER address")
    target.sql("ALTER TABLE {t} ALTER COLUMN address.zip FIRST")
    target.sql("ALTER TABLE {t} CHANGE COLUMN id id INT AFTER age")
    schema = target.table().snapshot().schema
    assert schema.field_names == ["age", "id", "address", "name"]
    assert schema.field("address").type.field_names == ["zip", "city"]  # type: ignore[attr-defined]
    assert schema.field("name").metadata.get("comment") == "given name"
    assert target.rows("SELECT * FROM {t} WHERE id = 1") == [(30, 1, None, "ann")]
    params = target.table().history(limit=1)[0]["operationParameters"]
    assert target.operations()[-1] == "CHANGE COLUMN" and params["position"] == "AFTER age"
    with pytest.raises(InvalidArgumentError, match=r"DELTA_COLUMN_NOT_FOUND.*'nope'"):
        target.sql("ALTER TABLE {t} ALTER COLUMN id AFTER nope")
    with pytest.raises(InvalidArgumentError, match=r"keeps the column's type \(int\)"):
        target.sql("ALTER TABLE {t} CHANGE COLUMN id id BIGINT FIRST")


def test_show_tblproperties(target: Target) -> None:
    people(target)
    shown = target.sql("SHOW TBLPROPERTIES {t}")
    assert shown.columns == ["key", "value"]
    rows = [tuple(r) for r in shown.collect()]
    # as delta-spark: the configuration and the protocol's versions, sorted by key
    assert rows == [("delta.appendOnly", "false"), ("delta.minReaderVersion", "1"),
                    ("delta.minWriterVersion", "2"), ("owner", "data-eng")]
    assert target.rows("SHOW TBLPROPERTIES {t} ('owner')") == [("owner", "data-eng")]
    assert target.rows("SHOW TBLPROPERTIES {t} ('delta.minWriterVersion')") == [("delta.minWriterVersion", "2")]
    extended = {r.col_name: r.data_type for r in target.sql("DESCRIBE TABLE EXTENDED {t}").collect()}
    assert extended["Table Properties"] == \
        "[delta.appendOnly=false,delta.minReaderVersion=1,delta.minWriterVersion=2,owner=data-eng]"
    target.sql("ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    rows = [tuple(r) for r in target.sql("SHOW TBLPROPERTIES {t}").collect()]  # each table feature: supported
    assert ("delta.feature.deletionVectors", "supported") in rows and ("delta.minReaderVersion", "3") in rows
    assert [k for k, _ in rows] == sorted(k for k, _ in rows)
    shown = target.sql("SHOW COLUMNS IN {t}")
    assert shown.columns == ["col_name"] and [r.col_name for r in shown.collect()] == ["id", "name", "age"]
    if target.kind == "catalog":
        assert target.rows("SHOW COLUMNS FROM {t} IN default") == [("id",), ("name",), ("age",)]


def test_generate_manifest_and_fsck(target: Target) -> None:
    people(target)
    target.sql("GENERATE symlink_format_manifest FOR TABLE {t}")
    manifests = sorted(str(p.relative_to(target.location))
                       for p in Path(target.location, "_symlink_format_manifest").rglob("manifest"))
    assert manifests == ["_symlink_format_manifest/age=30/manifest", "_symlink_format_manifest/age=40/manifest"]
    victim = next(p for p in Path(target.location).rglob("*.parquet") if "age=40" in str(p))
    victim.unlink()
    dry = target.sql("FSCK REPAIR TABLE {t} DRY RUN")
    assert dry.columns == ["path", "is_file_missing"]
    assert [(os.path.basename(r.path), r.is_file_missing) for r in dry.collect()] == [(victim.name, True)]
    assert target.version() == 1
    target.sql("FSCK REPAIR TABLE {t}")
    assert target.version() == 2 and target.operations()[-1] == "FSCK"
    assert target.rows("SELECT id FROM {t} ORDER BY id") == [(1,), (3,)]


def test_convert_to_delta(spark: Any, tmp_path: Path) -> None:
    plain, parts = str(tmp_path / "plain"), str(tmp_path / "parts")
    spark.range(5).write.parquet(plain)
    spark.range(6).selectExpr("id", "CAST(id % 2 AS INT) AS k").write.partitionBy("k").parquet(parts)
    spark.sql(f"CONVERT TO DELTA parquet.`{plain}` NO STATISTICS")
    spark.sql(f"CONVERT TO DELTA parquet.`{parts}` PARTITIONED BY (k INT)")
    assert spark.sql(f"SELECT count(*) FROM delta.`{plain}`").first()[0] == 5
    assert set(deltalog.Table(plain).snapshot().add_files().column("stats").to_pylist()) == {None}
    assert spark.sql(f"ANALYZE TABLE delta.`{plain}` COMPUTE DELTA STATISTICS").collect() == []
    stats = deltalog.Table(plain).snapshot().add_files().column("stats").to_pylist()
    assert sum(json.loads(s)["numRecords"] for s in stats) == 5 and deltalog.Table(plain).latest_version() == 1
    assert deltalog.Table(plain).history()[0]["operation"] == "COMPUTE STATS"
    assert spark.sql(f"SELECT sum(id) FROM delta.`{parts}` WHERE k = 1").first()[0] == 9
    assert list(deltalog.Table(parts).snapshot().metadata.partitionColumns) == ["k"]
    assert deltalog.Table(plain).history()[-1]["operation"] == "CONVERT"
    spark.sql(f"CONVERT TO DELTA parquet.`{plain}`")  # already Delta: nothing to do
    assert deltalog.Table(plain).latest_version() == 1


def test_clone(target: Target, spark: Any, tmp_path: Path) -> None:
    people(target)
    target.sql("DELETE FROM {t} WHERE id = 1")  # v2
    shallow, deep = f"shallow_{uuid.uuid4().hex[:8]}", str(tmp_path / "deep")
    try:
        result = target.sql(f"CREATE TABLE {shallow} SHALLOW CLONE {{t}} VERSION AS OF 1")
        assert result.columns[:2] == ["source_table_size", "source_num_of_files"]
        assert spark.sql(f"SELECT count(*) FROM {shallow}").first()[0] == 3
        target.sql(f"CREATE OR REPLACE TABLE delta.`{deep}` DEEP CLONE {{t}}")
        assert spark.sql(f"SELECT id FROM delta.`{deep}` ORDER BY id").collect() == \
            spark.sql(f"SELECT id FROM {target.ref} ORDER BY id").collect()
        deep_files = [p for p in Path(deep).rglob("*.parquet")]
        assert deep_files, "a deep clone copies the data files"
        assert deltalog.Table(deep).history()[-1]["operation"] == "CLONE"
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {shallow}")


# ------------------------------------------------------------------------------------------ the catalog


def test_managed_table_lives_in_the_warehouse_and_drop_removes_it(spark: Any) -> None:
    name = f"managed_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id INT) USING DELTA")
    spark.sql(f"INSERT INTO {name} VALUES (1)")
    from deltalog.spark.catalog.entries import lookup

    entry = lookup(spark, name)
    assert entry is not None and entry.managed and entry.is_delta
    warehouse = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    assert os.path.realpath(entry.location) == os.path.realpath(os.path.join(warehouse, name))
    assert name in [r.tableName for r in spark.sql("SHOW TABLES").collect()]
    assert spark.catalog.tableExists(name)
    spark.sql(f"DROP TABLE {name}")
    assert not os.path.exists(entry.location)
    assert not spark.catalog.tableExists(name)


def test_external_table_over_an_existing_delta_table(spark: Any, tmp_path: Path) -> None:
    loc = str(tmp_path / "ext")
    spark.range(4).selectExpr("id", "'x' AS s").write.format("delta").save(loc)
    name = f"ext_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} USING DELTA LOCATION '{loc}'")  # schema comes from the log
    assert deltalog.Table(loc).latest_version() == 0
    assert spark.table(name).columns == ["id", "s"]
    spark.sql(f"INSERT INTO {name} VALUES (9, 'y')")
    assert spark.sql(f"SELECT count(*) FROM delta.`{loc}`").first()[0] == 5
    spark.sql(f"DROP TABLE {name}")
    assert deltalog.Table(loc).latest_version() == 1  # an external table's data stays
    spark.sql(f"CREATE TABLE {name} (id BIGINT, s STRING) USING DELTA LOCATION '{loc}'")  # matching schema
    assert spark.table(name).count() == 5
    spark.sql(f"DROP TABLE {name}")


def test_database_qualified_names(spark: Any) -> None:
    db = f"db_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE DATABASE {db}")
    try:
        spark.sql(f"CREATE TABLE {db}.t (id INT) USING DELTA")
        spark.sql(f"INSERT INTO {db}.t VALUES (1), (2)")
        spark.sql(f"UPDATE spark_catalog.{db}.t SET id = id * 10")
        assert sorted(r.id for r in spark.table(f"{db}.t").collect()) == [10, 20]
        spark.sql(f"USE {db}")
        try:
            assert spark.sql("SELECT count(*) FROM t").first()[0] == 2
        finally:
            spark.sql("USE default")
        from deltalog.spark.catalog.entries import lookup

        entry = lookup(spark, f"{db}.t")
        assert entry is not None and f"{db}.db" in entry.location
    finally:
        spark.sql(f"DROP DATABASE {db} CASCADE")


def test_dataframe_catalog_api(spark: Any) -> None:
    from pyspark.sql import functions as F

    from deltalog.spark import DeltaTable

    a, b = f"api_a_{uuid.uuid4().hex[:6]}", f"api_b_{uuid.uuid4().hex[:6]}"
    df = spark.range(6).selectExpr("id", "CAST(id % 2 AS INT) AS k")
    try:
        df.write.format("delta").partitionBy("k").saveAsTable(a)
        df.write.format("delta").mode("append").saveAsTable(a)
        df.selectExpr("id AS c", "k AS c").write.insertInto(a)  # by position, whatever the names
        assert spark.table(a).count() == 18
        df.write.insertInto(a, overwrite=True)
        assert spark.read.table(a).count() == 6
        assert spark.read.option("versionAsOf", 1).table(a).count() == 12
        df.write.format("delta").mode("overwrite").saveAsTable(a)
        with pytest.raises(Exception, match="already exists"):
            df.write.format("delta").saveAsTable(a)
        df.write.format("delta").mode("ignore").saveAsTable(a)
        assert [c["operation"] for c in reversed(DeltaTable.forName(spark, a)._table.history())] == \
            ["CREATE TABLE AS SELECT", "WRITE", "WRITE", "WRITE", "CREATE OR REPLACE TABLE AS SELECT"]

        df.writeTo(b).using("delta").partitionedBy("k").tableProperty("owner", "me").create()
        df.writeTo(b).append()
        df.filter("k = 0").writeTo(b).overwrite(F.col("k") == 0)
        assert spark.table(b).count() == 9
        df.filter("k = 1").selectExpr("CAST(id AS INT) AS id", "k").writeTo(b).overwritePartitions()  # int: up-cast
        assert spark.table(b).count() == 6 and dict(spark.table(b).dtypes)["id"] == "bigint"
        df.writeTo(b).using("delta").createOrReplace()
        dt_b = DeltaTable.forName(spark, b)
        assert dt_b.toDF().count() == 6 and dt_b.detail().first().name == f"spark_catalog.default.{b}"
        dt_b.delete("k = 1")
        assert spark.table(b).count() == 3
        missing = spark.sql(f"SHOW TBLPROPERTIES {b} ('owner')").first()  # replaced: properties as given (none)
        assert "does not have property" in missing.value
        df.writeTo(b).using("delta").clusterBy("id").createOrReplace()  # Spark 4's DataFrameWriterV2.clusterBy
        assert DeltaTable.forName(spark, b).detail().first().clusteringColumns == ["id"]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {a}")
        spark.sql(f"DROP TABLE IF EXISTS {b}")


def test_save_as_table_overwrite_of_a_part_of_the_table(spark: Any) -> None:
    """``saveAsTable`` in mode overwrite with ``replaceWhere`` or a dynamic ``partitionOverwriteMode`` overwrites
    that part of the table, as ``save(path)`` does (it was refused: "overwriteSchema cannot be combined with
    replaceWhere", an option the user never gave)."""
    from deltalog.spark import DeltaTable

    name = f"part_{uuid.uuid4().hex[:8]}"
    try:
        spark.range(6).selectExpr("id", "CAST(id % 3 AS INT) AS k").write.format("delta").partitionBy("k") \
            .saveAsTable(name)
        new = spark.createDataFrame([(100, 1)], "id long, k int")
        new.write.format("delta").mode("overwrite").option("replaceWhere", "k = 1").saveAsTable(name)
        assert sorted(tuple(r) for r in spark.table(name).collect()) == [(0, 0), (2, 2), (3, 0), (5, 2), (100, 1)]
        with pytest.raises(Exception, match="DELTA_REPLACE_WHERE_MISMATCH"):
            new.write.format("delta").mode("overwrite").option("replaceWhere", "k = 2").saveAsTable(name)
        spark.createDataFrame([(200, 2)], "id long, k int").write.format("delta").mode("overwrite") \
            .option("partitionOverwriteMode", "dynamic").saveAsTable(name)
        assert sorted(tuple(r) for r in spark.table(name).collect()) == [(0, 0), (3, 0), (100, 1), (200, 2)]
        assert [c["operation"] for c in DeltaTable.forName(spark, name)._table.history()][:2] == ["WRITE", "WRITE"]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_builder_table_name_registers_a_catalog_table(spark: Any) -> None:
    from deltalog.spark import DeltaTable

    name = f"built_{uuid.uuid4().hex[:8]}"
    try:
        DeltaTable.create(spark).tableName(name).addColumn("id", "INT").addColumn("s", "STRING") \
            .partitionedBy("s").execute()
        spark.sql(f"INSERT INTO {name} VALUES (1, 'a')")
        assert DeltaTable.forName(spark, name).toDF().collect()[0].id == 1
        DeltaTable.createIfNotExists(spark).tableName(name).addColumn("id", "INT").execute()
        assert spark.table(name).count() == 1
        DeltaTable.createOrReplace(spark).tableName(name).addColumn("x", "LONG").execute()
        assert spark.table(name).columns == ["x"]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_streaming_to_table_and_foreach_batch_without_a_path(spark: Any, tmp_path: Path) -> None:
    """``toTable(name)`` of a missing table creates it from the stream, as Spark's toTable does (it was refused),
    then streams into it as into any catalog Delta table; ``partitionBy`` reaches the sink (Spark refuses
    partitioning beside the foreachBatch the sink runs on). A ``foreachBatch`` of the user's runs as given."""
    from deltalog.spark import DeltaTable

    src, name = str(tmp_path / "src"), f"stream_{uuid.uuid4().hex[:8]}"
    spark.range(5).write.format("delta").save(src)
    seen: list[int] = []
    try:
        src_p = spark.readStream.format("delta").load(src).selectExpr("id", "CAST(id % 2 AS INT) AS p")
        query = src_p.writeStream.format("delta").option("checkpointLocation", str(tmp_path / "cp")) \
            .option("delta.appendOnly", "true").partitionBy("p").trigger(availableNow=True).toTable(name)
        query.awaitTermination()
        detail = DeltaTable.forName(spark, name).detail().first()
        assert (detail.partitionColumns, detail.properties, detail.numFiles) == (["p"], {"delta.appendOnly": "true"}, 2)
        assert spark.table(name).count() == 5
        query = spark.readStream.format("delta").load(src).writeStream.format("delta") \
            .option("checkpointLocation", str(tmp_path / "cp2")) \
            .foreachBatch(lambda batch, epoch: seen.append(batch.count())).trigger(availableNow=True).start()
        query.awaitTermination()
        assert sum(seen) == 5
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_stream_of_a_catalog_table_and_catalog_create_table(spark: Any, tmp_path: Path) -> None:
    """``spark.readStream.table(name)`` streams a catalog Delta table through deltalog's source (it failed in
    the catalog entry's data source); ``spark.catalog.createTable(..., source="delta")`` commits a Delta
    table (it registered an entry without any log)."""
    from pyspark.sql.types import LongType, StructField, StructType

    from deltalog.arrow.write import TableExistsError
    from deltalog.errors import InvalidArgumentError
    from deltalog.spark import DeltaTable

    made, over, bad, sink = (f"{p}_{uuid.uuid4().hex[:8]}" for p in ("made", "over", "bad", "sink"))
    existing = str(tmp_path / "existing")
    spark.range(3).write.format("delta").save(existing)
    schema = StructType([StructField("id", LongType())])
    try:
        assert spark.catalog.createTable(made, source="delta", schema=schema, description="made here",
                                         **{"delta.appendOnly": "true"}).count() == 0
        detail = DeltaTable.forName(spark, made).detail().first()
        assert detail.description == "made here" and detail.properties == {"delta.appendOnly": "true"}
        assert deltalog.Table(detail.location).latest_version() == 0
        with pytest.raises(TableExistsError, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
            spark.catalog.createTable(made, source="delta", schema=schema)
        assert spark.catalog.createTable(over, path=existing, source="delta").count() == 3  # its log's schema
        with pytest.raises(InvalidArgumentError, match=r"unknown option\(s\) \['foo'\]"):
            spark.catalog.createTable(bad, source="delta", schema=schema, foo="1")
        assert not spark.catalog.tableExists(bad)
        query = spark.readStream.table(over).writeStream.format("memory").queryName(sink) \
            .trigger(availableNow=True).start()
        query.awaitTermination()
        assert sorted(r.id for r in spark.table(sink).collect()) == [0, 1, 2]
    finally:
        for name in (made, over, bad):
            spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_catalog_tables_report_the_delta_table_description(spark: Any) -> None:
    """``spark.catalog.getTable`` / ``listTables`` give a Delta table's description (delta-spark's table
    reports its log's); Spark's own answer was None, and other tables keep Spark's."""
    delta, pq = (f"{p}_{uuid.uuid4().hex[:8]}" for p in ("described", "pq"))
    try:
        spark.sql(f"CREATE TABLE {delta} (id INT) USING delta COMMENT 'hello table'")
        spark.sql(f"CREATE TABLE {pq} (id INT) USING parquet COMMENT 'plain'")
        assert spark.catalog.getTable(delta).description == "hello table"
        spark.sql(f"COMMENT ON TABLE {delta} IS 'changed'")
        listed = {t.name: t for t in spark.catalog.listTables()}
        assert listed[delta].description == "changed" and listed[delta].tableType == "MANAGED"
        assert listed[pq].description == spark.catalog.getTable(pq).description == "plain"
    finally:
        for name in (delta, pq):
            spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_non_delta_statements_pass_through(spark: Any, tmp_path: Path) -> None:
    name = f"pq_{uuid.uuid4().hex[:8]}"
    try:
        spark.sql(f"CREATE TABLE {name} (x INT) USING parquet")
        spark.sql(f"INSERT INTO {name} VALUES (1), (2)")
        assert spark.sql(f"SELECT sum(x) FROM {name}").first()[0] == 3
        spark.sql(f"CREATE OR REPLACE TEMP VIEW v_{name} AS SELECT x * 2 AS y FROM {name}")
        assert spark.sql(f"SELECT max(y) FROM v_{name}").first()[0] == 4
        assert spark.sql("SELECT 1 AS one").first().one == 1
        described = spark.sql(f"DESCRIBE TABLE {name}").collect()
        assert described[0].col_name == "x"
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_data_sources_are_registered_when_first_needed(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """register() registers no Python data source (the first one a JVM registers costs about 2 s); looking up
    a catalog Delta table registers the ``delta`` provider, so Spark's own paths that meet it find it."""
    from pyspark.sql.datasource import DataSourceRegistration

    from deltalog.spark import register
    from deltalog.spark.catalog import entries
    from deltalog.spark.common import sources

    calls: list[str] = []
    original = DataSourceRegistration.register

    def recording(self: Any, source: Any) -> None:
        calls.append(source.name())
        original(self, source)

    monkeypatch.setattr(DataSourceRegistration, "register", recording)
    monkeypatch.setattr(sources, "_REGISTERED", weakref.WeakKeyDictionary())  # a session that registered nothing
    register(spark)
    assert calls == []
    name = f"lazy_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta")
    try:
        monkeypatch.setattr(sources, "_REGISTERED", weakref.WeakKeyDictionary())  # as if it never created one
        calls.clear()
        entry = entries.lookup(spark, name, cached=False)
        assert entry is not None and entry.is_delta and calls == ["delta"]
        entries.lookup(spark, name, cached=False)
        assert calls == ["delta"]  # once per session
    finally:
        spark.sql(f"DROP TABLE {name}")


def test_replacing_a_table_keeps_its_location(spark: Any, tmp_path: Path) -> None:
    """``CREATE OR REPLACE TABLE t ... LOCATION`` / ``DeltaTable.createOrReplace().location(...)`` with another
    location than the table's is refused (``DELTA_TABLE_LOCATION_MISMATCH``), as delta-spark; it replaced the
    table where it was and ignored the location. The table's own location, however spelled, is accepted."""
    from deltalog.errors import InvalidArgumentError
    from deltalog.spark import DeltaTable

    name = f"loc_{uuid.uuid4().hex[:8]}"
    here, there = tmp_path / "here", tmp_path / "there"
    try:
        spark.sql(f"CREATE TABLE {name} (a INT) USING delta LOCATION '{here}'")
        spark.sql(f"INSERT INTO {name} VALUES (1)")
        version = deltalog.Table(str(here)).latest_version()
        for replace in (lambda: spark.sql(f"CREATE OR REPLACE TABLE {name} (b INT) USING delta LOCATION '{there}'"),
                        lambda: DeltaTable.createOrReplace(spark).tableName(name).location(str(there))
                        .addColumn("b", "INT").execute(),
                        lambda: DeltaTable.replace(spark).tableName(name).location(str(there))
                        .addColumn("b", "INT").execute()):
            with pytest.raises(InvalidArgumentError, match="DELTA_TABLE_LOCATION_MISMATCH"):
                replace()
        assert deltalog.Table(str(here)).latest_version() == version and not there.exists()
        spark.sql(f"CREATE OR REPLACE TABLE {name} (b INT) USING delta LOCATION 'file://{here}/'")  # the same place
        DeltaTable.createOrReplace(spark).tableName(name).location(str(here)).addColumn("c", "INT").execute()
        assert spark.table(name).columns == ["c"] and deltalog.Table(str(here)).latest_version() == version + 2
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_describe_table_lays_out_partitioning_as_spark_does_for_delta_tables(spark: Any, tmp_path: Any) -> None:
    """delta-spark's tables are a catalog's own (v2) tables: DESCRIBE TABLE lists the columns, an empty row and
    ``# Partitioning`` with ``Part <i>`` rows, or ``Not partitioned``."""
    flat, parted = str(tmp_path / "flat"), str(tmp_path / "parted")
    spark.sql(f"CREATE TABLE delta.`{flat}` (a INT COMMENT 'first', b STRING) USING DELTA")
    spark.sql(f"CREATE TABLE delta.`{parted}` (a INT, b STRING, c DATE) USING DELTA PARTITIONED BY (c, b)")
    rows = [tuple(r) for r in spark.sql(f"DESCRIBE TABLE delta.`{flat}`").collect()]
    assert rows == [("a", "int", "first"), ("b", "string", None), ("", "", ""), ("# Partitioning", "", ""),
                    ("Not partitioned", "", "")]
    rows = [tuple(r) for r in spark.sql(f"DESCRIBE TABLE delta.`{parted}`").collect()]
    assert rows[3:] == [("", "", ""), ("# Partitioning", "", ""), ("Part 0", "c", ""), ("Part 1", "b", "")]
