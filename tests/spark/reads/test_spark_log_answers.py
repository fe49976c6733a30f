"""``count()`` of a Delta read is answered from the log -- no Spark job -- when the log proves it, and counted by
Spark otherwise (a filter, a step that changes rows, a file without statistics); the answer is right either way."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

import deltalog

pytestmark = pytest.mark.spark


def _jobs(spark: Any, run: Any) -> tuple[Any, int]:
    """``run()``'s result and how many Spark jobs it started."""
    group = f"log-answers-{os.urandom(4).hex()}"
    sc = spark.sparkContext
    sc.setJobGroup(group, "log answers test")
    try:
        result = run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return result, len(sc.statusTracker().getJobIdsForGroup(group))


def test_count_of_a_read_comes_from_the_log(spark: Any, tmp_path: Any) -> None:
    from pyspark.sql import functions as F

    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    spark.range(0, 300, 1, 3).withColumn("k", F.col("id") % 3).write.format("delta") \
        .option("delta.enableDeletionVectors", "true").save(path)
    DeltaTable.forPath(spark, path).delete("id % 10 = 0")  # 30 rows gone, by deletion vectors
    assert deltalog.Table(path).snapshot().add_files().column("deletionVector").null_count < 3
    df = spark.read.format("delta").load(path)
    assert _jobs(spark, df.count) == (270, 0)
    assert _jobs(spark, DeltaTable.forPath(spark, path).toDF().select("k").orderBy("k").count) == (270, 0)
    assert _jobs(spark, spark.read.format("delta").option("versionAsOf", 0).load(path).count) == (300, 0)
    # not provable from the log: Spark counts, with the same answer as a plain parquet count
    assert df.filter("k = 1").count() == 100 - 10
    assert df.select(F.explode(F.array("id", "k"))).count() == 540
    assert df.distinct().count() == 270 and df.limit(7).count() == 7
    spark.range(5).write.format("delta").mode("append").save(path)
    assert _jobs(spark, df.count) == (275, 0)  # the frame reads the table as it is now, as delta-spark's


def test_a_file_without_statistics_is_counted_by_spark(spark: Any, tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    spark.range(10).write.format("delta").save(path)
    spark.range(10, 14).write.format("delta").mode("append").save(path)
    log = tmp_path / "t" / "_delta_log" / "00000000000000000001.json"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for action in lines:
        if "add" in action:
            action["add"].pop("stats", None)  # as a writer that keeps no statistics leaves it
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    count, jobs = _jobs(spark, spark.read.format("delta").load(path).count)
    assert count == 14 and jobs > 0


def test_sql_count_star_comes_from_the_log(spark: Any, tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    spark.range(0, 50, 1, 2).write.format("delta").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 5")
    counted = spark.sql(f"SELECT count(*) FROM delta.`{path}`")
    own = spark.sql(f"SELECT count(*) FROM parquet.`{path}`").schema  # Spark's own query over the files
    assert counted.schema == own and own.fields[0].name == "count(1)" and not own.fields[0].nullable
    assert counted.collect()[0][0] == 45
    assert spark.sql(f"SELECT COUNT(1) AS n FROM delta.`{path}` t").collect()[0].n == 45
    assert spark.sql(f"SELECT count(*) FROM delta.`{path}` VERSION AS OF 0").collect()[0][0] == 50
    spark.range(3).write.format("delta").mode("append").save(path)
    assert counted.collect()[0][0] == 48  # the query's frame reads the table as it is at each action
    # other shapes are Spark's
    assert spark.sql(f"SELECT count(*) FROM delta.`{path}` WHERE id > 40").collect()[0][0] == 9
    assert spark.sql(f"SELECT count(DISTINCT id) FROM delta.`{path}`").collect()[0][0] == 48
    # no data file is read for the answer: with a live one gone (not one the DELETE removed), the log still
    # answers and a scan fails
    live = deltalog.Table(path).snapshot().add_files().column("path").to_pylist()
    os.remove(os.path.join(path, live[0]))
    assert spark.sql(f"SELECT count(*) FROM delta.`{path}`").collect()[0][0] == 48
    with pytest.raises(Exception, match=r"FILE_NOT_FOUND|does not exist"):
        spark.sql(f"SELECT sum(id) FROM delta.`{path}`").collect()


def test_min_max_count_come_from_the_log_where_statistics_are_exact(spark: Any, tmp_path: Any) -> None:
    import datetime as dt

    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    rows = [(i, None if i % 4 == 0 else i * 10, dt.date(2024, 1, 1) + dt.timedelta(days=i), f"s{i:03d}", i % 2)
            for i in range(40)]
    schema = "id long, v int, d date, s string, p int"
    spark.createDataFrame(rows, schema).repartition(3).write.format("delta").partitionBy("p").save(path)
    q = f"SELECT count(*), count(v), min(id), max(id) AS top, min(v), max(d) FROM delta.`{path}`"
    want = [(40, 30, 0, 39, 10, dt.date(2024, 2, 9))]
    answered = spark.sql(q)
    assert [tuple(r) for r in answered.collect()] == want
    assert answered.columns == ["count(1)", "count(v)", "min(id)", "top", "min(v)", "max(d)"]
    plain = spark.read.parquet(*[os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs
                                 if f.endswith(".parquet")])
    plain.createOrReplaceTempView("log_answers_plain")
    try:
        spark_types = spark.sql(q.replace(f"delta.`{path}`", "log_answers_plain")).schema
    finally:
        spark.catalog.dropTempView("log_answers_plain")  # the session is shared: leave no view behind
    assert answered.schema == spark_types  # names, types, nullability and metadata as Spark's own aggregate
    df = spark.read.format("delta").load(path)
    assert [tuple(r) for r in df.agg(F.count("*"), F.count("v"), F.min("id"), F.max("id"), F.min("v"),
                                     F.max("d")).collect()] == want
    # what the log cannot prove exactly is Spark's, with the same answer
    assert spark.sql(f"SELECT max(s), max(p) FROM delta.`{path}`").collect()[0] == ("s039", 1)
    assert df.select("id").agg(F.max("id")).collect()[0][0] == 39
    # no data file is read for an answer from the log
    for dirpath, _, names in os.walk(path):
        for name in names:
            if name.endswith(".parquet"):
                os.remove(os.path.join(dirpath, name))
    assert [tuple(r) for r in spark.sql(q).collect()] == want
    with pytest.raises(Exception, match=r"FILE_NOT_FOUND|does not exist"):
        spark.sql(f"SELECT max(s) FROM delta.`{path}`").collect()


def test_bounds_of_files_with_deletion_vectors_are_not_used(spark: Any, tmp_path: Any) -> None:
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    spark.range(0, 100, 1, 2).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    DeltaTable.forPath(spark, path).delete("id >= 95 OR id = 0")
    got = spark.sql(f"SELECT count(*), min(id), max(id), count(id) FROM delta.`{path}`").collect()[0]
    assert tuple(got) == (94, 1, 94, 94)
    empty = str(tmp_path / "e")
    spark.range(0).write.format("delta").save(empty)
    assert tuple(spark.sql(f"SELECT count(*), max(id) FROM delta.`{empty}`").collect()[0]) == (0, None)
