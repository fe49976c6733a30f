"""The everyday steps of a Delta pipeline, one test per feature area, on whichever PySpark runs them.

``make test`` runs this module on the default PySpark with the rest of the Spark suite, and once more on every
other supported Spark minor version (the compatibility lanes of ``scripts/spark_lanes.py``). Each test carries
``feature(...)``: the row it fills in the README's Spark version table. Where a version cannot offer a feature
(:mod:`deltalog.spark.common.compat` says which), the test checks the refusal instead -- a PySpark exception
naming the running version and the one to upgrade to -- and reports the row as refused.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def rows(df: Any) -> list[tuple[Any, ...]]:
    """The rows as sorted tuples (``collect``: the same on every version)."""
    return sorted((tuple(r) for r in df.collect()), key=lambda r: tuple((v is not None, v) for v in r))


def _attempt(action: Any, lane: Any) -> bool:
    """Run ``action``; True when it ran. A version that cannot offer the feature must refuse it with deltalog's
    version refusal (a PySpark exception naming the running version and the one to upgrade to): the lane then
    reports the feature as refused, and the README's table, checked against the lanes, says where that is
    expected."""
    from pyspark.errors import PySparkException

    from deltalog.spark.common import compat

    try:
        action()
    except PySparkException as exc:
        text = str(exc)
        if "DELTA_UNSUPPORTED_SPARK_VERSION" not in text:
            raise
        needs = re.search(r"needs Spark (\d+\.\d+) or later", text)
        assert needs is not None and compat.PYSPARK_VERSION in text, text
        lane.refused(f"needs {needs.group(1)}")
        return False
    return True


def _events(spark: Any) -> Any:
    return spark.createDataFrame(
        [(1, "click", dt.date(2024, 1, 1), 10.5), (2, "view", dt.date(2024, 1, 1), 3.0),
         (3, "click", dt.date(2024, 1, 2), 7.25), (4, "buy", dt.date(2024, 1, 2), 99.0)],
        "id long, kind string, day date, amount double")


@pytest.mark.feature("Path tables: write, append, partitions, read")
def test_path_tables(spark: Any, tmp_path: Path, lane: Any) -> None:
    path = str(tmp_path / "t")
    _events(spark).write.format("delta").partitionBy("day").save(path)
    _events(spark).selectExpr("id + 10 AS id", "kind", "day", "amount").write.format("delta").mode("append").save(path)
    df = spark.read.format("delta").load(path)
    assert df.count() == 8
    assert rows(df.where("day = DATE'2024-01-02'").groupBy("kind").count()) == [("buy", 2), ("click", 2)]
    with pytest.raises(Exception, match="mode"):
        _events(spark).write.format("delta").save(path)  # errorifexists on an existing table
    lane.works()


@pytest.mark.feature("Time travel, history, detail")
def test_time_travel(spark: Any, tmp_path: Path, lane: Any) -> None:
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    spark.range(3, 5).write.format("delta").mode("append").save(path)
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 3
    table = DeltaTable.forPath(spark, path)
    history = table.history().orderBy("version").select("version", "operation").collect()
    assert [(r.version, r.operation) for r in history] == [(0, "WRITE"), (1, "WRITE")]
    assert table.detail().first().numFiles >= 2
    lane.works()


@pytest.mark.feature("DELETE, UPDATE, MERGE (DeltaTable)")
def test_dml(spark: Any, tmp_path: Path, lane: Any) -> None:
    from pyspark.sql import functions as F

    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    _events(spark).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    table.delete("kind = 'view'")
    table.update(condition=F.col("kind") == "buy", set={"amount": F.col("amount") * 2})
    source = spark.createDataFrame([(1, "click", dt.date(2024, 1, 1), 1.0), (9, "view", dt.date(2024, 1, 3), 2.0)],
                                   "id long, kind string, day date, amount double")
    (table.alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    assert rows(table.toDF().select("id", "amount")) == [(1, 1.0), (3, 7.25), (4, 198.0), (9, 2.0)]
    # a streaming-style upsert repeated (the later ones count the source in their write job) and an empty batch
    # (Spark drops the source's part of the plan, and with it the observation counting its rows)
    for n in (10, 11):
        batch = table.toDF().withColumn("amount", F.col("amount") + 1).unionByName(source.limit(1).withColumn(
            "id", F.lit(n).cast("long")))
        (table.alias("t").merge(batch.alias("s"), "t.id = s.id")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    empty = source.filter(F.lit(False))
    (table.alias("t").merge(empty.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll()
     .execute())
    assert rows(table.toDF().select("id", "amount")) == \
        [(1, 3.0), (3, 9.25), (4, 200.0), (9, 4.0), (10, 2.0), (11, 1.0)]
    lane.works()


@pytest.mark.feature("Deletion vectors")
def test_deletion_vectors(spark: Any, tmp_path: Path, lane: Any) -> None:
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    (spark.range(100).repartitionByRange(4, "id").write.format("delta")
     .option("delta.enableDeletionVectors", "true").save(path))
    DeltaTable.forPath(spark, path).delete("id % 10 = 0")
    df = spark.read.format("delta").load(path)
    assert df.count() == 90  # from the log
    # the rows themselves: each file's deletion vector applied in the scan (an anti join over the four files)
    assert sorted(r.id for r in df.collect()) == [i for i in range(100) if i % 10]
    ops = DeltaTable.forPath(spark, path).history(1).first().operationMetrics
    assert ops["numDeletionVectorsAdded"] == "4", ops
    lane.works()


@pytest.mark.feature("OPTIMIZE, Z-order")
def test_optimize(spark: Any, tmp_path: Path, lane: Any) -> None:
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    for start in range(0, 40, 10):
        batch = spark.range(start, start + 10).selectExpr("id", "id % 3 AS k").coalesce(1)
        batch.write.format("delta").mode("append").save(path)
    table = DeltaTable.forPath(spark, path)
    metrics = table.optimize().executeCompaction().first().metrics
    assert metrics.numFilesRemoved == 4 and metrics.numFilesAdded == 1
    table.optimize().executeZOrderBy("k")
    assert spark.read.format("delta").load(path).count() == 40
    lane.works()


@pytest.mark.feature("VACUUM, RESTORE")
def test_vacuum_restore(spark: Any, tmp_path: Path, lane: Any) -> None:
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    spark.range(5).coalesce(1).write.format("delta").save(path)
    spark.range(5, 8).coalesce(1).write.format("delta").mode("overwrite").save(path)
    table = DeltaTable.forPath(spark, path)
    table.restoreToVersion(0)
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [0, 1, 2, 3, 4]
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    parquet = [p for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts]
    assert len(parquet) == 1 and spark.read.format("delta").load(path).count() == 5
    lane.works()


@pytest.mark.feature("Change data feed reads")
def test_change_feed(spark: Any, tmp_path: Path, lane: Any) -> None:
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    spark.range(4).write.format("delta").option("delta.enableChangeDataFeed", "true").save(path)
    DeltaTable.forPath(spark, path).delete("id = 2")
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1)
               .load(path).select("id", "_change_type", "_commit_version"))
    assert rows(changes) == [(2, "delete", 1)]
    lane.works()


@pytest.mark.feature("SQL on delta.`path`")
def test_sql_on_paths(spark: Any, tmp_path: Path, lane: Any) -> None:
    path = str(tmp_path / "t")
    _events(spark).write.format("delta").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE kind = 'view'")
    spark.sql(f"UPDATE delta.`{path}` SET amount = 0 WHERE id = 4")
    spark.createDataFrame([(1, 5.0), (7, 1.0)], "id long, amount double").createOrReplaceTempView("everyday_src")
    spark.sql(f"""MERGE INTO delta.`{path}` t USING everyday_src s ON t.id = s.id
                  WHEN MATCHED THEN UPDATE SET t.amount = s.amount
                  WHEN NOT MATCHED THEN INSERT (id, kind, day, amount)
                    VALUES (s.id, 'new', DATE'2024-02-01', s.amount)""")
    assert rows(spark.sql(f"SELECT id, amount FROM delta.`{path}`")) == [(1, 5.0), (3, 7.25), (4, 0.0), (7, 1.0)]
    ops = [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()]
    assert ops[:3] == ["MERGE", "UPDATE", "DELETE"]
    spark.sql(f"OPTIMIZE delta.`{path}`")
    lane.works()


@pytest.mark.feature("Catalog tables: CREATE TABLE, CTAS, saveAsTable")
def test_catalog_tables(spark: Any, lane: Any) -> None:
    def create() -> None:
        spark.sql("CREATE TABLE everyday_cat (id BIGINT, name STRING) USING DELTA")

    try:
        if not _attempt(create, lane):
            return
        spark.sql("INSERT INTO everyday_cat VALUES (1, 'a'), (2, 'b')")
        spark.sql("CREATE TABLE everyday_ctas USING DELTA AS SELECT id * 10 AS id FROM everyday_cat")
        spark.range(3).write.format("delta").saveAsTable("everyday_saved")
        assert rows(spark.sql("SELECT id FROM everyday_ctas")) == [(10,), (20,)]
        assert spark.table("everyday_saved").count() == 3
        spark.sql("DELETE FROM everyday_cat WHERE id = 1")
        assert rows(spark.sql("SELECT id, name FROM everyday_cat")) == [(2, "b")]
    finally:
        for name in ("everyday_cat", "everyday_ctas", "everyday_saved"):
            spark.sql(f"DROP TABLE IF EXISTS {name}")
    lane.works()


@pytest.mark.feature("Streaming sink (writeStream.format(\"delta\"))")
def test_streaming_sink(spark: Any, tmp_path: Path, lane: Any) -> None:
    src, out, chk = tmp_path / "in", str(tmp_path / "out"), str(tmp_path / "chk")
    src.mkdir()
    spark.range(6).selectExpr("id", "CAST(id AS STRING) AS s").write.mode("append").parquet(str(src))
    stream = spark.readStream.schema("id long, s string").parquet(str(src))
    query = stream.writeStream.format("delta").option("checkpointLocation", chk).trigger(availableNow=True).start(out)
    query.awaitTermination(120)
    # the same query again: exactly-once, nothing new to write
    query = stream.writeStream.format("delta").option("checkpointLocation", chk).trigger(availableNow=True).start(out)
    query.awaitTermination(120)
    assert spark.read.format("delta").load(out).count() == 6
    lane.works()


@pytest.mark.feature("Streaming source (readStream.format(\"delta\"))")
def test_streaming_source(spark: Any, tmp_path: Path, lane: Any) -> None:
    from deltalog.spark.common import compat

    src, out, chk = str(tmp_path / "src"), str(tmp_path / "out"), str(tmp_path / "chk")
    for start in range(0, 20, 10):
        spark.range(start, start + 10).coalesce(1).write.format("delta").mode("append").save(src)

    def run() -> Any:
        return (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(src)
                .writeStream.format("delta").option("checkpointLocation", chk)
                .trigger(availableNow=True).start(out))

    started: list[Any] = []
    if not _attempt(lambda: started.append(run()), lane):
        return
    query = started[0]
    query.awaitTermination(180)
    assert spark.read.format("delta").load(out).count() == 20
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    # 4.2+: one file per trigger; 4.0 / 4.1 have no read limits for availableNow, which runs as one batch
    assert batches == ([10, 10] if compat.STREAM_READ_LIMITS else [20]), batches
    spark.range(20, 25).write.format("delta").mode("append").save(src)
    run().awaitTermination(180)
    assert spark.read.format("delta").load(out).count() == 25
    lane.works("" if compat.STREAM_READ_LIMITS else "availableNow runs as one batch")


@pytest.mark.feature("Errors as PySpark exceptions")
def test_errors(spark: Any, tmp_path: Path, lane: Any) -> None:
    from pyspark.errors import AnalysisException

    from deltalog.spark import DeltaTable

    with pytest.raises(AnalysisException, match="not a Delta table"):
        DeltaTable.forPath(spark, str(tmp_path / "nothing"))
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    with pytest.raises(AnalysisException):
        spark.read.format("delta").option("versionAsOf", 7).load(path).count()
    with pytest.raises(AnalysisException, match="schema"):
        spark.range(3).selectExpr("CAST(id AS STRING) AS other").write.format("delta").mode("append").save(path)
    lane.works()


@pytest.mark.feature("Schema evolution (mergeSchema)")
def test_schema_evolution(spark: Any, tmp_path: Path, lane: Any) -> None:
    path = str(tmp_path / "t")
    spark.range(2).write.format("delta").save(path)
    (spark.range(2, 4).selectExpr("id", "'x' AS tag").write.format("delta").mode("append")
     .option("mergeSchema", "true").save(path))
    assert rows(spark.read.format("delta").load(path)) == [(0, None), (1, None), (2, "x"), (3, "x")]
    lane.works()


def test_supported_versions_are_the_lanes() -> None:
    """compat.SUPPORTED names exactly the lanes of scripts/spark_lanes.py plus the newest (the venv's own)."""
    import importlib.util

    from deltalog.spark.common import compat

    script = Path(__file__).resolve().parents[2] / "scripts" / "spark_lanes.py"
    spec = importlib.util.spec_from_file_location("spark_lanes", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lanes = {tuple(int(p) for p in minor.split(".")) for minor in module.LANES}
    assert compat.PYSPARK in compat.SUPPORTED
    newest = set(compat.SUPPORTED) - lanes
    assert lanes <= set(compat.SUPPORTED) and len(newest) == 1 and min(newest) > max(lanes), (compat.SUPPORTED, lanes)
