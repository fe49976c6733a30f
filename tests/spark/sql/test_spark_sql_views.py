"""Views over Delta catalog tables and Spark's table statements on Delta tables (``TRUNCATE TABLE``,
``COMMENT ON``, ``CACHE TABLE``, ``ALTER TABLE ... RENAME TO``, ``CREATE TABLE ... LIKE``, ``REPLACE COLUMNS``):
what a delta-spark program that uses them sees."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import deltalog
from deltalog.errors import InvalidArgumentError

pytestmark = pytest.mark.spark


def _rows(spark: Any, text: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in spark.sql(text).collect()]


@pytest.fixture
def names(spark: Any) -> Iterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:8]
    made = {k: f"{k}_{suffix}" for k in ("t", "other", "odd", "pv", "pv2", "tv", "db", "cached", "pq")}
    yield made
    for kind, key in (("VIEW", "pv2"), ("VIEW", "pv"), ("VIEW", "tv"), ("VIEW", "cached"), ("TABLE", "t"),
                      ("TABLE", "other"), ("TABLE", "odd"), ("TABLE", "pq")):
        spark.sql(f"DROP {kind} IF EXISTS {made[key]}")
    spark.sql(f"DROP DATABASE IF EXISTS {made['db']} CASCADE")


def test_views_over_delta_tables_read_the_latest_version(spark: Any, names: dict[str, str], tmp_path: Path) -> None:
    t, pv, pv2, tv = names["t"], names["pv"], names["pv2"], names["tv"]
    spark.sql(f"CREATE TABLE {t} (id BIGINT, p STRING) USING DELTA PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y')")
    spark.sql(f"CREATE TEMP VIEW {tv} AS SELECT * FROM {t} WHERE id > 1")
    spark.sql(f"CREATE VIEW {pv} AS SELECT id, p FROM {t} WHERE id > 1")
    spark.sql(f"CREATE VIEW {pv2} (ident, part) AS SELECT * FROM {pv} WHERE p = 'x'")  # a view of a view
    spark.sql(f"INSERT INTO {t} VALUES (3, 'x')")  # every view reads the table as it is now
    assert _rows(spark, f"SELECT id FROM {tv} ORDER BY id") == [(2,), (3,)]
    assert _rows(spark, f"SELECT * FROM {pv} ORDER BY id") == [(2, "y"), (3, "x")]
    assert _rows(spark, f"SELECT * FROM {pv2}") == [(3, "x")]
    assert spark.table(pv2).columns == ["ident", "part"]
    assert spark.read.table(tv).count() == 2
    assert _rows(spark, f"SELECT count(*) FROM {pv} JOIN {t} USING (id)") == [(2,)]
    db = names["db"]
    spark.sql(f"CREATE DATABASE {db}")
    spark.sql(f"USE {db}")  # the view's own table names resolve where the view was made
    try:
        assert _rows(spark, f"SELECT ident FROM default.{pv2}") == [(3,)]
    finally:
        spark.sql("USE default")
    other = names["other"]
    spark.sql(f"CREATE TABLE {other} USING DELTA AS SELECT * FROM {pv}")
    spark.sql(f"MERGE INTO {other} o USING {pv} v ON o.id = v.id WHEN MATCHED AND v.id = 3 THEN DELETE")
    spark.sql(f"DELETE FROM {other} WHERE id IN (SELECT ident + 1 FROM {pv2})")
    assert _rows(spark, f"SELECT * FROM {other}") == [(2, "y")]
    assert [r[0] for r in _rows(spark, f"DESCRIBE {pv}")] == ["id", "p"]
    spark.sql(f"ALTER TABLE {t} ADD COLUMNS (z INT)")  # Spark checks CREATE VIEW against the catalog's copy
    assert [c.name for c in spark.catalog.listColumns(t)] == ["id", "z", "p"]  # partition columns last, as Spark
    spark.sql(f"CREATE OR REPLACE VIEW {pv} AS SELECT * FROM {t}")
    assert spark.table(pv).columns == ["id", "z", "p"]

    path_table = f"delta.`{tmp_path / 'by_path'}`"
    spark.sql(f"CREATE TABLE {path_table} (id INT) USING DELTA")
    version = deltalog.Table(str(tmp_path / "by_path")).latest_version()
    for query, why in ((f"SELECT * FROM {path_table}", "by its path"),
                       (f"SELECT * FROM {t} VERSION AS OF 0", "with time travel"),
                       (f"SELECT * FROM table_changes('{t}', 0)", "change data feed")):
        with pytest.raises(InvalidArgumentError, match=why):
            spark.sql(f"CREATE TEMP VIEW refused_view AS {query}")
    assert not spark.catalog.tableExists("refused_view")
    assert deltalog.Table(str(tmp_path / "by_path")).latest_version() == version


def test_a_query_dataframe_reads_its_delta_tables_as_they_are_at_each_action(spark: Any, tmp_path: Path) -> None:
    """``df = spark.sql("SELECT ...")`` over Delta tables sees later commits at its next action, as in
    delta-spark; a time-travel query keeps its version, and so does a cached one."""
    from pyspark.errors import AnalysisException

    p, q = str(tmp_path / "t"), str(tmp_path / "d")
    spark.range(4).selectExpr("id", "id % 2 AS k").write.format("delta").save(p)
    spark.range(2).selectExpr("id AS k", "concat('n', id) AS name").write.format("delta").save(q)
    joined = spark.sql(f"SELECT t.id, d.name FROM delta.`{p}` t JOIN delta.`{q}` d ON t.k = d.k WHERE t.id > 0")
    counted = spark.sql(f"SELECT count(*) AS n FROM delta.`{p}`")
    old = spark.sql(f"SELECT count(*) AS n FROM delta.`{p}` VERSION AS OF 0")
    cached = spark.sql(f"SELECT * FROM delta.`{p}`").cache()
    built = joined.filter("id > 1").select(joined.id, (joined.id * 10).alias("x")).orderBy("id")  # on the query
    assert (joined.count(), counted.first().n, old.first().n, cached.count()) == (3, 4, 4, 4)
    spark.range(4, 6).selectExpr("id", "id % 2 AS k").write.format("delta").mode("append").save(p)
    assert (joined.count(), counted.first().n, old.first().n, cached.count()) == (5, 6, 4, 4)
    assert [tuple(r) for r in built.collect()] == [(2, 20), (3, 30), (4, 40), (5, 50)]
    spark.range(2, 3).selectExpr("id AS k", "concat('n', id) AS name").write.format("delta").mode("append").save(q)
    spark.range(6, 7).selectExpr("id", "2L AS k").write.format("delta").mode("append").save(p)
    assert sorted(r.name for r in joined.collect())[-1] == "n2" and counted.first().n == 7
    spark.sql(f"ALTER TABLE delta.`{q}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"ALTER TABLE delta.`{q}` DROP COLUMN name")
    with pytest.raises(AnalysisException) as lost:
        joined.count()
    assert lost.value.getCondition() == "DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS"  # type: ignore[attr-defined]
    assert q in str(lost.value)  # the table whose schema changed


def test_temp_views_of_delta_dataframes_read_the_latest_version(spark: Any, tmp_path: Path) -> None:
    """A temporary view of ``spark.read.format("delta").load(p)`` follows the table, as in delta-spark (as the
    DataFrame itself does); one of a time-travel read stays at its version."""
    suffix = uuid.uuid4().hex[:8]
    ev, part, old, glob = (f"{k}_{suffix}" for k in ("ev", "part", "old", "glob"))
    p = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(p)
    df = spark.read.format("delta").load(p)
    df.createOrReplaceTempView(ev)
    df.filter("id > 0").select("id").createOrReplaceTempView(part)
    spark.read.format("delta").option("versionAsOf", 0).load(p).createTempView(old)
    df.createOrReplaceGlobalTempView(glob)
    try:
        spark.range(3, 8).write.format("delta").mode("append").save(p)
        assert _rows(spark, f"SELECT count(*) FROM {ev}") == [(8,)]
        assert _rows(spark, f"SELECT count(*) FROM {part}") == [(7,)]
        assert _rows(spark, f"SELECT count(*) FROM {old}") == [(3,)]
        assert _rows(spark, f"SELECT count(*) FROM global_temp.{glob}") == [(8,)]
        assert spark.table(ev).count() == 8 and spark.read.table(part).count() == 7
        assert _rows(spark, f"SELECT count(*) FROM {ev} a JOIN {part} b ON a.id = b.id") == [(7,)]
        assert df.count() == 8  # the DataFrame, too, reads the table as it is when an action runs
        spark.range(8, 9).selectExpr("id", "'x' AS extra").write.format("delta").mode("append") \
            .option("mergeSchema", "true").save(p)
        assert spark.table(ev).columns == ["id"]  # a column the table gained stays out, as Spark keeps a view's
        assert _rows(spark, f"SELECT count(*) FROM {ev}") == [(9,)]
        cached = spark.read.format("delta").load(p).cache()  # a cached DataFrame's view reads the cache, as Spark
        assert cached.count() == 9 and "InMemoryRelation" in cached.filter("id > 1")._jdf.queryExecution() \
            .optimizedPlan().toString()  # and filters on it too: the scan is not re-planned past the cache
        cached.createOrReplaceTempView(part)
        spark.sql(f"CACHE TABLE {ev}")  # the view's rows now, then Spark's cache
        spark.range(20, 22).write.format("delta").mode("append").save(p)
        assert _rows(spark, f"SELECT count(*) FROM {ev}") == [(9,)] and spark.table(part).count() == 9
        spark.sql(f"UNCACHE TABLE {ev}")
        assert _rows(spark, f"SELECT count(*) FROM {ev}") == [(11,)]
        cached.unpersist()
        spark.range(2).createOrReplaceTempView(ev)  # replaced by another DataFrame: Spark's view again
        assert _rows(spark, f"SELECT count(*) FROM {ev}") == [(2,)]
    finally:
        for view in (ev, part, old):
            spark.catalog.dropTempView(view)
        spark.catalog.dropGlobalTempView(glob)


def test_update_delete_merge_through_temporary_views(spark: Any, names: dict[str, str], tmp_path: Path) -> None:
    """delta-spark changes a table through a temporary view of the whole table (a DataFrame's or SQL's); a
    view of part of it, of an old version, or a persistent view is refused naming why, nothing written."""
    t, tv, pv = names["t"], names["tv"], names["pv"]
    suffix = uuid.uuid4().hex[:8]
    by_df, by_path, part, old, sampled, limited = (f"{k}_{suffix}" for k in ("bydf", "bypath", "part", "old",
                                                                             "sampled", "limited"))
    spark.sql(f"CREATE TABLE {t} (id BIGINT, p STRING, v DOUBLE) USING DELTA PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, 'a', 3.0), (4, 'b', 4.0)")
    location = spark.sql(f"DESCRIBE DETAIL {t}").first()["location"]
    spark.sql(f"CREATE TEMP VIEW {tv} AS SELECT * FROM {t}")
    spark.sql(f"CREATE VIEW {pv} AS SELECT * FROM {t}")
    spark.table(t).createOrReplaceTempView(by_df)
    spark.read.format("delta").load(location).createOrReplaceTempView(by_path)
    spark.table(t).where("id > 1").createOrReplaceTempView(part)
    spark.read.format("delta").option("versionAsOf", 0).load(location).createOrReplaceTempView(old)
    try:
        assert _rows(spark, f"UPDATE {tv} SET v = 10 WHERE id = 1") == [(1,)]
        assert _rows(spark, f"UPDATE {by_df} x SET v = x.v * 10 WHERE x.id = 2") == [(1,)]
        assert _rows(spark, f"DELETE FROM {by_path} WHERE id = 3") == [(1,)]
        merged = spark.sql(f"MERGE INTO {by_df} USING (SELECT 4 AS id, 'b' AS p, 0.5 AS v UNION ALL "
                           f"SELECT 5, 'c', 5.0) s ON {by_df}.id = s.id WHEN MATCHED THEN UPDATE SET * "
                           "WHEN NOT MATCHED THEN INSERT *").first()
        assert (merged["num_updated_rows"], merged["num_inserted_rows"]) == (1, 1)
        expected = [(1, "a", 10.0), (2, "b", 20.0), (4, "b", 0.5), (5, "c", 5.0)]
        assert _rows(spark, f"SELECT * FROM {t} ORDER BY id") == expected
        assert _rows(spark, f"SELECT * FROM {by_path} ORDER BY id") == expected  # the views see the changes
        version = deltalog.Table(location).latest_version()
        spark.sql(f"CREATE TEMP VIEW {sampled} AS SELECT * FROM {t} TABLESAMPLE (50 PERCENT)")
        spark.sql(f"CREATE TEMP VIEW {limited} AS SELECT * FROM {t} LIMIT 2")
        for statement, why in ((f"DELETE FROM {part} WHERE id = 2", "DELTA_UNEXPECTED_PARTIAL_SCAN"),
                               (f"DELETE FROM {sampled} WHERE id = 2", "DELTA_UNEXPECTED_PARTIAL_SCAN"),
                               (f"UPDATE {limited} SET v = 0", "DELTA_UNEXPECTED_PARTIAL_SCAN"),
                               (f"UPDATE {old} SET v = 0", "version 0"),
                               (f"UPDATE {pv} SET v = 0", "persistent view"),
                               (f"INSERT INTO {by_df} VALUES (9, 'z', 9.0)", "insert into the table itself"),
                               (f"INSERT INTO {tv} VALUES (9, 'z', 9.0)", "insert into the table itself")):
            with pytest.raises(InvalidArgumentError, match=why):
                spark.sql(statement)
        assert deltalog.Table(location).latest_version() == version
    finally:
        for view in (by_df, by_path, part, old, sampled, limited):
            spark.catalog.dropTempView(view)


def test_truncate_comment_and_cache(spark: Any, names: dict[str, str]) -> None:
    t = names["t"]
    spark.sql(f"CREATE TABLE {t} (id BIGINT, p STRING) USING DELTA PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y')")
    from deltalog.spark import DeltaTable

    def description() -> Any:
        return DeltaTable.forName(spark, t).detail().first()["description"]

    spark.sql(f"COMMENT ON TABLE {t} IS 'one row ' 'per click'")  # adjacent literals join, as in Spark
    assert description() == "one row per click"
    extended = {r[0]: r[1] for r in _rows(spark, f"DESCRIBE TABLE EXTENDED {t}")}
    assert extended["Comment"] == "one row per click"
    spark.sql(f"COMMENT ON TABLE {t} IS NULL")
    assert description() is None
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('comment' = 'clicks')")  # as delta-spark: the description
    assert description() == "clicks"
    assert "comment" not in dict(_rows(spark, f"SHOW TBLPROPERTIES {t}"))
    spark.sql(f"COMMENT ON COLUMN {t}.id IS 'the click'")
    assert _rows(spark, f"DESCRIBE {t}")[0] == ("id", "bigint", "the click")

    odd = names["odd"]  # nested names that need quoting reach the catalog quoted
    spark.sql(f"CREATE TABLE {odd} (`a b` STRUCT<`c d`: ARRAY<STRUCT<`e.f`: DECIMAL(5,1)>>>) USING DELTA "
              "COMMENT 'odd''s \\\\ name'")  # Spark reads 'odd' 's \\ name' as "odds \ name"
    assert DeltaTable.forName(spark, odd).detail().first()["description"] == "odds \\ name"
    by_property = names["odd"] + "_p"  # TBLPROPERTIES ('comment' = ...) is the description too, as delta-spark
    try:
        spark.sql(f"CREATE TABLE {by_property} (a INT) USING DELTA TBLPROPERTIES ('comment' = 'c', 'k' = 'v')")
        assert DeltaTable.forName(spark, by_property).detail().first()["description"] == "c"
        assert dict(_rows(spark, f"SHOW TBLPROPERTIES {by_property}")).get("comment") is None
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {by_property}")
    assert "`a b` STRUCT<`c d`: ARRAY<STRUCT<`e.f`: DECIMAL(5,1)>>>" in spark.sql(f"SHOW CREATE TABLE {odd}").first()[0]
    ddl = spark.sql(f"SHOW CREATE TABLE {t}").first()["createtab_stmt"]  # the log's table, re-creatable
    assert ddl.startswith(f"CREATE TABLE spark_catalog.default.{t} (\n  id BIGINT COMMENT 'the click',\n  p STRING)\n"
                          "USING delta\nPARTITIONED BY (p)\nCOMMENT 'clicks'\nTBLPROPERTIES (\n"), ddl
    other = names["other"]
    spark.sql(ddl.replace(t, other))
    assert spark.sql(f"SHOW CREATE TABLE {other}").first()[0] == ddl.replace(t, other)

    version = DeltaTable.forName(spark, t).history(1).first()["version"]
    with pytest.raises(InvalidArgumentError, match="DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED"):
        spark.sql(f"TRUNCATE TABLE {t} PARTITION (p = 'x')")
    spark.sql(f"TRUNCATE TABLE {t}")
    assert _rows(spark, f"SELECT count(*) FROM {t}") == [(0,)]
    assert _rows(spark, f"SELECT count(*) FROM {t} VERSION AS OF {version}") == [(2,)]
    assert DeltaTable.forName(spark, t).history(1).first()["version"] == version + 1

    spark.sql(f"INSERT INTO {t} VALUES (5, 'x'), (6, 'y')")
    # CACHE TABLE of a Delta table caches deltalog's read of its version; later reads of that version, which plan
    # the same scan, are served from it (their WHERE filtering the cached rows), as delta-spark's are
    entries = spark._jsparkSession.sharedState().cacheManager()
    others = entries.numCachedEntries()  # what other tests of the session left cached
    spark.sql(f"CACHE TABLE {t}")
    try:
        for frame in (spark.sql(f"SELECT id FROM {t} WHERE p = 'y'"), spark.table(t).filter("p = 'y'").select("id"),
                      spark.sql(f"SELECT id FROM delta.`{_detail_location(spark, t)}` WHERE id > 5")):
            assert _cached(frame) and [tuple(r) for r in frame.collect()] == [(6,)]
        spark.sql(f"INSERT INTO {t} VALUES (8, 'z')")  # a new version: read from its files, not from the cache
        later = spark.sql(f"SELECT count(*) FROM {t}")
        assert not _cached(later) and later.first()[0] == 3
        with pytest.raises(InvalidArgumentError, match="invalid storageLevel 'FAST'"):
            spark.sql(f"CACHE TABLE {t} OPTIONS ('storageLevel' 'FAST')")
        assert entries.numCachedEntries() == others + 1
        spark.sql(f"CACHE LAZY TABLE {t} OPTIONS ('storageLevel' 'DISK_ONLY')")
        assert _cached(spark.table(t)) and spark.table(t).count() == 3
        assert entries.numCachedEntries() == others + 1  # the older version's cache, which no read uses, is dropped
        spark.sql(f"CACHE TABLE {t}")  # the same version again: still cached, once
        assert _cached(spark.table(t)) and entries.numCachedEntries() == others + 1
        assert spark.catalog.isCached(t)
        spark.sql(f"UNCACHE TABLE {t}")
        assert not _cached(spark.table(t)) and not _cached(spark.sql(f"SELECT * FROM {t}"))
        assert not spark.catalog.isCached(t)
        spark.catalog.cacheTable(t)  # the catalog's methods do the same (cacheTable is lazy, as Spark's)
        assert spark.catalog.isCached(t) and _cached(spark.sql(f"SELECT * FROM {t} WHERE id > 5"))
        spark.catalog.uncacheTable(t)
        assert not spark.catalog.isCached(t)
    finally:
        spark.catalog.clearCache()
    cached = names["cached"]
    spark.sql(f"CACHE TABLE {cached} AS SELECT * FROM {t} WHERE id > 5")
    assert spark.catalog.isCached(cached)
    spark.sql(f"INSERT INTO {t} VALUES (7, 'x')")
    assert _rows(spark, f"SELECT id FROM {cached} ORDER BY id") == [(6,), (8,)]  # the rows as they were when cached


def test_rename_managed_and_external_tables(spark: Any, names: dict[str, str], tmp_path: Path) -> None:
    """A managed table's directory moves with its name (Spark's own rename), an external one stays; SET
    LOCATION points a table at another Delta table of its schema."""
    t, other = names["t"], names["other"]
    spark.sql(f"CREATE TABLE {t} USING DELTA AS SELECT id FROM range(3)")
    old = _detail_location(spark, t)
    spark.sql(f"ALTER TABLE {t} RENAME TO {other}")
    assert not spark.catalog.tableExists(t)
    moved = _detail_location(spark, other)
    assert moved != old and deltalog.Table(moved).latest_version() == 0
    spark.sql(f"INSERT INTO {other} VALUES (7)")
    assert _rows(spark, f"SELECT count(*) FROM {other}") == [(4,)]
    external = str(tmp_path / "ext")
    spark.sql(f"CREATE TABLE {t} (id INT) USING DELTA LOCATION '{external}'")
    spark.sql(f"DROP TABLE {other}")
    spark.sql(f"ALTER TABLE {t} RENAME TO {other}")
    assert _detail_location(spark, other) == external
    moved_to = str(tmp_path / "elsewhere")
    spark.range(4).selectExpr("CAST(id AS INT) AS id").write.format("delta").save(moved_to)
    spark.sql(f"ALTER TABLE {other} SET LOCATION '{moved_to}'")  # another Delta table of the same schema
    assert _detail_location(spark, other) == moved_to and spark.table(other).count() == 4
    spark.range(2).write.format("delta").save(str(tmp_path / "other_schema"))
    with pytest.raises(InvalidArgumentError, match=r"DELTA_SET_LOCATION_SCHEMA_MISMATCH.*bypassSchemaCheck"):
        spark.sql(f"ALTER TABLE {other} SET LOCATION '{tmp_path / 'other_schema'}'")
    assert _detail_location(spark, other) == moved_to
    replaced = spark.createDataFrame([(1, "x")], "a INT, b STRING")  # a replace drops columns: the catalog follows
    replaced.write.format("delta").mode("overwrite").saveAsTable(other)
    assert [c.name for c in spark.catalog.listColumns(other)] == ["a", "b"]


def _cached(frame: Any) -> bool:
    """Whether Spark serves ``frame`` (in part) from its cache."""
    return "InMemoryRelation" in frame._jdf.queryExecution().optimizedPlan().toString()


def _detail_location(spark: Any, name: str) -> str:
    from deltalog.spark import DeltaTable

    location = str(DeltaTable.forName(spark, name).detail().first()["location"])
    return location.removeprefix("file:")


def test_show_partitions_clone_to_a_name_and_change_feed_by_name(spark: Any, names: dict[str, str]) -> None:
    from deltalog.spark import DeltaTable

    t, other = names["t"], names["other"]
    spark.sql(f"CREATE TABLE {t} (id INT, p STRING, q INT) USING DELTA PARTITIONED BY (p, q) "
              "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 1), (2, 'a/b', 2), (3, NULL, 1), (4, 'a', 1)")
    assert _rows(spark, f"SHOW PARTITIONS {t}") == [("p=__HIVE_DEFAULT_PARTITION__/q=1",), ("p=a%2Fb/q=2",),
                                                    ("p=a/q=1",)]
    assert _rows(spark, f"SHOW PARTITIONS {t} PARTITION (q = 1, p = 'a')") == [("p=a/q=1",)]
    with pytest.raises(InvalidArgumentError, match=r"\['z'\] are not partition columns"):
        spark.sql(f"SHOW PARTITIONS {t} PARTITION (z = 1)")

    clone = DeltaTable.forName(spark, t).clone(other, isShallow=True)  # a name: a catalog table, as delta-spark
    assert spark.catalog.tableExists(other) and clone.toDF().count() == 4
    assert not (Path.cwd() / other).exists()

    spark.sql(f"DELETE FROM {t} WHERE id = 4")
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2).table(t)
    assert [(r.id, r._change_type) for r in changes.collect()] == [(4, "delete")]


def test_create_table_like_insert_table_and_column_statements(spark: Any, names: dict[str, str],
                                                              tmp_path: Path) -> None:
    from deltalog.arrow.write import TableExistsError
    from deltalog.spark import DeltaTable

    t, other, odd, pq = names["t"], names["other"], names["odd"], names["pq"]
    spark.sql(f"CREATE TABLE {t} (id BIGINT GENERATED ALWAYS AS IDENTITY, name STRING COMMENT 'who', d DATE, "
              "y INT GENERATED ALWAYS AS (year(d))) USING DELTA PARTITIONED BY (y) COMMENT 'people' "
              "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', 'owner' = 'me', "
              "'delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO {t} (name, d) VALUES ('x', DATE'2024-01-01'), ('y', DATE'2025-01-01')")
    # LIKE a Delta table: its columns (comments, identity, generated), partitioning, description, properties
    spark.sql(f"CREATE TABLE {other} LIKE {t} TBLPROPERTIES ('extra' = '1')")
    detail = DeltaTable.forName(spark, other).detail().first()
    assert (detail.description, detail.partitionColumns, detail.numFiles) == ("people", ["y"], 0)
    assert {k: v for k, v in detail.properties.items() if "maxColumnId" not in k} == {
        "delta.enableChangeDataFeed": "true", "owner": "me", "delta.columnMapping.mode": "name", "extra": "1"}
    assert _rows(spark, f"DESCRIBE {other}")[:2] == [("id", "bigint", None), ("name", "string", "who")]
    spark.sql(f"INSERT INTO {other} (name, d) VALUES ('z', DATE'2023-05-05')")
    assert _rows(spark, f"SELECT * FROM {other}") == [(1, "z", datetime.date(2023, 5, 5), 2023)]
    with pytest.raises(TableExistsError, match=r"TABLE_OR_VIEW_ALREADY_EXISTS.*IF NOT EXISTS"):
        spark.sql(f"CREATE TABLE {other} LIKE {t}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {other} LIKE {t}")
    with pytest.raises(InvalidArgumentError, match="can only be a Delta table"):
        spark.sql(f"CREATE TABLE {odd} LIKE {t} USING parquet")
    # a non-Delta table LIKE ... USING DELTA: the catalog's columns and partitioning
    spark.sql(f"CREATE TABLE {pq} (id INT, p STRING) USING parquet PARTITIONED BY (p)")
    spark.sql(f"CREATE TABLE delta.`{tmp_path / 'like_pq'}` LIKE {pq}")
    assert DeltaTable.forPath(spark, str(tmp_path / "like_pq")).detail().first().partitionColumns == ["p"]

    # INSERT INTO ... TABLE s (sqlglot keeps the source apart: it reached Spark as TABLE <read> AS s)
    spark.sql(f"CREATE TABLE {odd} (name STRING, y INT) USING DELTA")
    spark.sql(f"INSERT INTO {odd} SELECT name, y FROM {t}")
    spark.sql(f"INSERT INTO {odd} TABLE {odd}")
    assert _rows(spark, f"SELECT count(*) FROM {odd}") == [(4,)]
    # CHANGE COLUMN restating the type changes only the comment (it asked for type widening)
    spark.sql(f"ALTER TABLE {odd} CHANGE COLUMN name name STRING COMMENT 'hello'")
    spark.sql(f"ALTER TABLE {odd} ALTER COLUMN y TYPE INT")
    assert _rows(spark, f"DESCRIBE {odd}")[:2] == [("name", "string", "hello"), ("y", "int", None)]
    # REPLACE COLUMNS: reordered, comments as listed, a column added (the kernel's rules, tested there)
    spark.sql(f"ALTER TABLE {odd} REPLACE COLUMNS (y INT, name STRING, extra STRING COMMENT 'new')")
    assert _rows(spark, f"DESCRIBE {odd}") == [("y", "int", None), ("name", "string", None), ("extra", "string", "new"),
                                               ("", "", ""), ("# Partitioning", "", ""), ("Not partitioned", "", "")]
    assert DeltaTable.forName(spark, odd).history(1).first().operation == "REPLACE COLUMNS"
