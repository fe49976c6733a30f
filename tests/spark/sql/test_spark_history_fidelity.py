"""History as delta-spark writes and shows it (issue 54, items 3 and 5): ``operationParameters`` of every
command in delta-spark's rendering -- predicates as Catalyst prints them (DML analysed, with expression
ids; OPTIMIZE / REORG partition filters parsed), JSON lists, booleans and numbers as JSON literals in the
log and as text in the history -- and ``DESCRIBE HISTORY`` on every table reference delta-spark's grammar
takes, with its errors. Expression ids (``id#12``) differ from run to run; the tests compare without them,
as delta-spark's own history suite does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def _no_ids(text: str) -> str:
    """``text`` without Catalyst's expression ids (``id#12`` -> ``id``)."""
    return re.sub(r"#\d+", "", text)


def _logged(path: str, version: int) -> dict[str, Any]:
    """``commitInfo.operationParameters`` of commit ``version`` as the log file holds them."""
    log = Path(path, "_delta_log", f"{version:020d}.json")
    for line in log.read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            return dict(action["commitInfo"]["operationParameters"])
    raise AssertionError(f"commit {version} of {path} has no commitInfo")


def _last(spark: Any, path: str) -> tuple[int, str, dict[str, str | None]]:
    from deltalog.spark import DeltaTable

    row = DeltaTable.forPath(spark, path).history(1).first()
    return row.version, row.operation, dict(row.operationParameters)


def _table(spark: Any, tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, v INT, p STRING) USING DELTA PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'a')")
    return path


def test_dml_predicates_are_the_analysed_conditions_catalyst_prints(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    from deltalog.spark import DeltaTable

    path = _table(spark, tmp_path)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id = 1")
    version, op, params = _last(spark, path)
    assert op == "DELETE" and re.fullmatch(r'\["\(id#\d+ = 1\)"\]', str(params["predicate"]))
    assert _no_ids(str(params["predicate"])) == '["(id = 1)"]'  # delta-spark's history suite, ids removed
    assert _logged(path, version) == params
    dt.delete(F.col("v") > 2)
    assert _no_ids(str(_last(spark, path)[2]["predicate"])) == '["(v > 2)"]'
    dt.update("p = 'b'", {"v": "v + 1"})
    _, op, params = _last(spark, path)
    assert (op, _no_ids(str(params["predicate"]))) == ("UPDATE", '["(p = b)"]')  # a string literal is bare
    spark.sql(f"DELETE FROM delta.`{path}` WHERE v = 3 AND p = 'b'")
    assert _no_ids(str(_last(spark, path)[2]["predicate"])) == '["((v = 3) AND (p = b))"]'
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (7, 7, 'c')")
    dt.delete()
    assert _last(spark, path)[1:] == ("DELETE", {"predicate": "[]"})


def test_merge_records_join_and_clause_predicates_as_delta_spark(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    from deltalog.spark import DeltaTable

    path = _table(spark, tmp_path)
    source = spark.createDataFrame([(2, 20, "b"), (9, 90, "z")], "id INT, v INT, p STRING")
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdate("s.v > 1", {"v": "s.v"}).whenMatchedDelete()
     .whenNotMatchedInsertAll("s.id > 0")
     .whenNotMatchedBySourceDelete("t.v < 100").execute())
    version, op, params = _last(spark, path)
    assert op == "MERGE" and _logged(path, version) == params
    assert _no_ids(str(params["predicate"])) == '["(id = id)"]'
    assert json.loads(_no_ids(str(params["matchedPredicates"]))) == [
        {"predicate": "(v > 1)", "actionType": "update"}, {"actionType": "delete"}]
    assert json.loads(_no_ids(str(params["notMatchedPredicates"]))) == [
        {"predicate": "(id > 0)", "actionType": "insert"}]
    assert json.loads(_no_ids(str(params["notMatchedBySourcePredicates"]))) == [
        {"predicate": "(v < 100)", "actionType": "delete"}]
    assert str(params["matchedPredicates"]).startswith('[{"predicate":')  # delta-spark's field order
    # an upsert (its ON condition read from the join the MERGE writes with) and an insert-only MERGE
    table = DeltaTable.forPath(spark, path)
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    version, op, params = _last(spark, path)
    assert (op, _no_ids(str(params["predicate"]))) == ("MERGE", '["(id = id)"]') and _logged(path, version) == params
    assert re.fullmatch(r'\["\(id#\d+ = id#\d+\)"\]', str(params["predicate"]))
    table.alias("t").merge(source.withColumn("id", F.col("id") + 100).alias("s"), "s.id = t.id") \
        .whenNotMatchedInsertAll().execute()
    assert _no_ids(str(_last(spark, path)[2]["predicate"])) == '["(id = id)"]'


def test_optimize_and_reorg_record_parsed_partition_filters(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark import DeltaTable

    path = _table(spark, tmp_path)
    for _ in range(2):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, 4, 'a'), (5, 5, 'b')")
    DeltaTable.forPath(spark, path).optimize().where("p = 'a'").where("p != 'z'").executeCompaction()
    version, op, params = _last(spark, path)
    assert (op, params) == ("OPTIMIZE", {"predicate": '["(\'p = a)","NOT (\'p = z)"]', "zOrderBy": "[]",
                                         "clusterBy": "[]", "auto": "false"})
    assert _logged(path, version)["auto"] is False  # a JSON literal in the log, text in the history
    spark.sql(f"OPTIMIZE delta.`{path}` WHERE p = 'b' ZORDER BY (v)")
    assert _last(spark, path)[1:] == ("OPTIMIZE", {"predicate": '["(\'p = b)"]', "zOrderBy": '["v"]',
                                                   "clusterBy": "[]", "auto": "false"})
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 4")
    spark.sql(f"REORG TABLE delta.`{path}` WHERE p = 'a' APPLY (PURGE)")
    version, op, params = _last(spark, path)
    assert (op, params) == ("REORG", {"predicate": '["(\'p = a)"]', "applyPurge": "true"})
    assert _logged(path, version)["applyPurge"] is True


def test_literal_parameters_are_json_literals_in_the_log_and_text_in_the_history(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark import DeltaTable

    path = _table(spark, tmp_path)
    spark.sql(f"ALTER TABLE delta.`{path}` UNSET TBLPROPERTIES IF EXISTS ('nope')")
    version, op, params = _last(spark, path)
    assert (op, params) == ("UNSET TBLPROPERTIES", {"properties": '["nope"]', "ifExists": "true"})
    assert _logged(path, version) == {"properties": '["nope"]', "ifExists": True}
    DeltaTable.forPath(spark, path).restoreToVersion(1)
    version, op, params = _last(spark, path)
    assert (op, params) == ("RESTORE", {"version": "1", "timestamp": None})
    assert _logged(path, version) == {"version": 1, "timestamp": None}
    spark.sql(f"VACUUM delta.`{path}` RETAIN 200 HOURS")
    start = DeltaTable.forPath(spark, path).history(2).collect()[1]
    assert (start.operation, dict(start.operationParameters)) == ("VACUUM START", {
        "retentionCheckEnabled": "true", "defaultRetentionMillis": "604800000",
        "specifiedRetentionMillis": "720000000"})
    assert _logged(path, start.version) == {"retentionCheckEnabled": True, "defaultRetentionMillis": 604800000,
                                            "specifiedRetentionMillis": 720000000}


def test_writes_and_creates_record_delta_spark_parameters(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "w")
    spark.createDataFrame([(1, "a")], "id INT, p STRING").write.format("delta").partitionBy("p").save(path)
    spark.createDataFrame([(2, "a")], "id INT, p STRING").write.format("delta").mode("overwrite") \
        .option("replaceWhere", "p = 'a'").save(path)
    assert _last(spark, path)[1:] == ("WRITE", {"mode": "Overwrite", "partitionBy": '["p"]', "predicate": "p = 'a'"})
    created = str(tmp_path / "c")
    spark.sql(f"CREATE TABLE delta.`{created}` (id INT, k STRING) USING DELTA CLUSTER BY (k)")
    version, op, params = _last(spark, created)
    assert (op, params) == ("CREATE TABLE", {"isManaged": "false", "description": None, "partitionBy": "[]",
                                             "clusterBy": '["k"]', "properties": params["properties"]})
    assert _logged(created, version)["description"] is None  # null, not the text "null"
    spark.sql(f"ALTER TABLE delta.`{created}` ADD COLUMNS (v3 LONG, s STRUCT<a: INT> AFTER id)")
    column3 = '{"name":"v3","type":"long","nullable":true,"metadata":{}}'
    struct = '{"name":"s","type":"struct","nullable":true,"metadata":{}}'  # Spark's typeName of the type
    assert _last(spark, created)[1:] == ("ADD COLUMNS", {
        "columns": f'[{{"column":{column3}}},{{"column":{struct},"position":"AFTER id"}}]'})
    ctas = str(tmp_path / "ctas")
    spark.sql(f"CREATE TABLE delta.`{ctas}` USING DELTA COMMENT 'kept' AS SELECT 1 AS id")
    params = _last(spark, ctas)[2]
    assert (params["description"], params["clusterBy"], params["partitionBy"]) == ("kept", "[]", "[]")


def test_spark_connect_reads_the_same_text_from_the_plan(spark: Any) -> None:
    """On Spark Connect (no JVM handle) the predicate comes from the plan's text, which the server writes as
    ``QueryExecution`` prints it: the same text the JVM gives on classic Spark."""
    from deltalog.spark.reads.target import plan_line, recorded_partition_predicate, recorded_predicate

    frame = spark.createDataFrame([], "id INT, v INT, p STRING")
    plan = frame.filter("(id = 1 AND p = 'a') OR v IN (1, 2)")._jdf.queryExecution().toString()
    analysed = plan_line(plan, "Analyzed", "Filter ")
    assert analysed is not None and _no_ids(analysed) == "(((id = 1) AND (p = a)) OR v IN (1,2))"
    assert analysed == recorded_predicate(frame, "(id = 1 AND p = 'a') OR v IN (1, 2)")  # the frame's own ids
    parsed = plan_line(plan, "Parsed", "'Filter ")
    assert parsed == "((('id = 1) AND ('p = a)) OR 'v IN (1,2))"
    assert parsed == recorded_partition_predicate(frame, "(id = 1 AND p = 'a') OR v IN (1, 2)")
    assert plan_line(plan, "Analyzed", "Join Inner, ") is None  # another node on top: no text


# ---------------------------------------------------------------------------------------- DESCRIBE HISTORY


def test_describe_history_takes_every_reference_delta_spark_takes(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "h")
    spark.range(3).write.format("delta").save(path)
    spark.range(3).write.format("delta").mode("overwrite").save(path)
    want = [(1, "WRITE", {"mode": "Overwrite", "partitionBy": "[]"}),
            (0, "WRITE", {"mode": "ErrorIfExists", "partitionBy": "[]"})]

    def shown(statement: str) -> list[tuple[int, str, dict[str, str | None]]]:
        return [(r.version, r.operation, dict(r.operationParameters))
                for r in spark.sql(statement).select("version", "operation", "operationParameters").collect()]

    for ref in (f"'{path}'", f"delta.`{path}`", f"`{path}`"):
        assert shown(f"DESCRIBE HISTORY {ref}") == want, ref
        assert shown(f"describe history {ref} limit 1") == want[:1], ref
        assert shown(f"DESC HISTORY {ref} LIMIT 0") == [], ref
    spark.sql("CREATE SCHEMA IF NOT EXISTS hist_db")
    try:
        spark.sql("CREATE TABLE hist_db.ht (id INT) USING DELTA COMMENT 'about'")
        spark.sql("INSERT INTO hist_db.ht VALUES (1)")
        for ref in ("hist_db.ht", "`hist_db`.`ht`", "spark_catalog.hist_db.ht"):
            rows = shown(f"DESCRIBE HISTORY {ref}")
            assert [r[:2] for r in rows] == [(1, "WRITE"), (0, "CREATE TABLE")], ref
            assert rows[1][2]["description"] == "about" and rows[1][2]["clusterBy"] == "[]", ref
            assert [r[:2] for r in shown(f"DESCRIBE HISTORY {ref} LIMIT 1")] == [(1, "WRITE")], ref
        current = spark.catalog.currentDatabase()
        spark.sql("USE hist_db")
        try:
            assert [r[0] for r in shown("describe history ht")] == [1, 0]
        finally:
            spark.sql(f"USE {current}")
    finally:
        spark.sql("DROP TABLE IF EXISTS hist_db.ht")


def test_describe_history_errors_are_delta_sparks(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException, ParseException

    spark.range(2).write.parquet(str(tmp_path / "pq"))
    for where in (str(tmp_path / "pq"), str(tmp_path / "missing")):
        for ref in (f"'{where}'", f"delta.`{where}`"):
            with pytest.raises(AnalysisException) as info:
                spark.sql(f"describe history {ref}").collect()
            assert "[DELTA_TABLE_ONLY_OPERATION]" in str(info.value), ref
            assert "DESCRIBE HISTORY" in str(info.value) and "only supported for Delta tables" in str(info.value)
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("DESCRIBE HISTORY no_such_history_table")
    path = str(tmp_path / "d")
    spark.range(2).write.format("delta").save(path)
    spark.sql(f"CREATE TABLE history_source USING DELTA LOCATION '{path}'")
    try:
        spark.sql("CREATE OR REPLACE VIEW history_view AS SELECT * FROM history_source")
        with pytest.raises(AnalysisException, match=r"DELTA_CANNOT_DESCRIBE_VIEW_HISTORY.*history of a view"):
            spark.sql("DESCRIBE HISTORY history_view")
    finally:
        spark.sql("DROP VIEW IF EXISTS history_view")
        spark.sql("DROP TABLE IF EXISTS history_source")
    for bad in ("LIMIT 1.5", "LIMIT x", "LIMIT", "LIMIT 1 2"):
        with pytest.raises(ParseException):
            spark.sql(f"DESCRIBE HISTORY delta.`{path}` {bad}")
