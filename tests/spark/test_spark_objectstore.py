"""Spark on object stores: a partitioned table on S3 (moto) written, read, MERGEd, UPDATEd, DELETEd,
OPTIMIZEd, streamed and read as a change feed through plain pip pyspark (no hadoop-aws: deltalog's Arrow
tasks read and write the files), configured only by the Hadoop settings users already have; and the Arrow
read path checked against Spark's own parquet scan on the same local table."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sparkutil import rows

import deltalog

pytestmark = [pytest.mark.spark, pytest.mark.objectstore, pytest.mark.other_lane]

HADOOP = "spark.hadoop.fs.s3a."


@pytest.fixture
def s3(spark: Any, moto_server: Any) -> Iterator[tuple[str, dict[str, str]]]:
    """A fresh bucket, reachable from the session through fs.s3a.* Hadoop settings only."""
    import emulators

    bucket = emulators.new_bucket(moto_server)
    settings = {"endpoint": moto_server.endpoint, "access.key": emulators.ACCESS_KEY,
                "secret.key": emulators.SECRET_KEY, "path.style.access": "true", "endpoint.region": "us-east-1"}
    for key, value in settings.items():
        spark.conf.set(HADOOP + key, value)
    yield f"s3a://{bucket}/t", dict(moto_server.options)
    for key in settings:
        spark.conf.unset(HADOOP + key)


def source(spark: Any, start: int, n: int, v: float | None = None) -> Any:
    frame = spark.range(start, start + n).selectExpr("id", "cast(id % 3 as int) as k")
    return frame.selectExpr("id", "k", f"cast({v} as double) as v" if v is not None else "cast(id as double) / 2 as v")


def table_ids(uri: str, opts: dict[str, str]) -> list[int]:
    return sorted(deltalog.Table(uri, storage_options=opts).snapshot().to_arrow().column("id").to_pylist())


def test_the_pipeline_on_s3_through_arrow_tasks(spark: Any, s3: tuple[str, dict[str, str]]) -> None:
    from deltalog.spark import DeltaTable
    from deltalog.spark.common.storage import native_io

    uri, opts = s3
    assert not native_io(spark, uri)  # plain pip pyspark: no Hadoop file system for s3a
    source(spark, 0, 300).write.format("delta").partitionBy("k").save(uri)
    source(spark, 300, 30).write.format("delta").mode("append").save(uri)
    df = spark.read.format("delta").load(uri)
    assert df.count() == 330 and df.filter("k = 1").count() == 110
    assert rows(df.filter("id < 3")) == [{"id": i, "k": i % 3, "v": i / 2} for i in range(3)]
    assert table_ids(uri, opts) == list(range(330))  # the kernel reads what Spark wrote

    dt = DeltaTable.forPath(spark, uri)
    dt.alias("t").merge(source(spark, 320, 20, v=-1.0).alias("s"), "t.id = s.id") \
        .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    after = spark.read.format("delta").load(uri)
    assert after.count() == 340 and after.filter("v = -1").count() == 20
    dt.delete("id < 10")
    dt.update("id = 100", {"v": "1000.0"})
    assert spark.read.format("delta").load(uri).filter("v = 1000").count() == 1
    metrics = dt.optimize().executeCompaction().collect()[0]
    assert metrics is not None
    assert table_ids(uri, opts) == list(range(10, 340))
    ops = [r["operation"] for r in dt.history().collect()]
    assert ops[:4] == ["OPTIMIZE", "UPDATE", "DELETE", "MERGE"]

    # streaming from S3 to S3 runs in test_spark_demo_s3.py (make demo-s3), in its own driver


def test_change_feed_on_s3(spark: Any, s3: tuple[str, dict[str, str]]) -> None:
    from deltalog.spark import DeltaTable

    uri, _ = s3
    source(spark, 0, 50).write.format("delta").option("delta.enableChangeDataFeed", "true").save(uri)
    DeltaTable.forPath(spark, uri).delete("id < 5")
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1).load(uri)
    assert {r["_change_type"]: r["count"] for r in changes.groupBy("_change_type").count().collect()} == {"delete": 5}


def test_per_call_hadoop_settings_and_for_path_hadoop_conf(spark: Any, moto_server: Any) -> None:
    import emulators
    from deltalog.spark import DeltaTable

    bucket = emulators.new_bucket(moto_server)
    uri = f"s3a://{bucket}/t"
    conf = {"fs.s3a.endpoint": moto_server.endpoint, "fs.s3a.access.key": emulators.ACCESS_KEY,
            "fs.s3a.secret.key": emulators.SECRET_KEY, "fs.s3a.path.style.access": "true",
            "fs.s3a.endpoint.region": "us-east-1"}
    writer = source(spark, 0, 10).write.format("delta")
    for key, value in conf.items():
        writer = writer.option(key, value)
    writer.save(uri)
    reader = spark.read.format("delta")
    for key, value in conf.items():
        reader = reader.option(key, value)
    assert reader.load(uri).count() == 10
    dt = DeltaTable.forPath(spark, uri, hadoopConf=conf)
    dt.delete("id < 3")
    assert dt.toDF().count() == 7


def test_arrow_tasks_read_what_sparks_own_scan_reads(spark: Any, tmp_path: Path) -> None:
    """The same local table (partitioned, deletion vectors, a column added later) through both paths."""
    from deltalog.spark import DeltaTable
    from deltalog.spark.common.storage import IO_CONF

    path = str(tmp_path / "t")
    source(spark, 0, 200).write.format("delta").partitionBy("k").option("delta.enableDeletionVectors", "true") \
        .save(path)
    DeltaTable.forPath(spark, path).delete("id % 7 = 0")
    source(spark, 200, 10).selectExpr("*", "'x' as extra").write.format("delta").mode("append") \
        .option("mergeSchema", "true").save(path)
    native = rows(spark.read.format("delta").load(path))
    spark.conf.set(IO_CONF, "arrow")
    try:
        arrow = rows(spark.read.format("delta").load(path))
        DeltaTable.forPath(spark, path).update("id = 1", {"v": "-5.0"})
        updated = rows(spark.read.format("delta").load(path).filter("id = 1"))
    finally:
        spark.conf.unset(IO_CONF)
    assert arrow == native and len(native) == 210 - 29
    assert updated == [{"id": 1, "k": 1, "v": -5.0, "extra": None}]


def test_native_io_forced_without_a_connector_says_what_to_add(spark: Any, s3: tuple[str, dict[str, str]]) -> None:
    from deltalog.errors import InvalidArgumentError
    from deltalog.spark.common.storage import IO_CONF

    uri, opts = s3
    deltalog.write_table(uri, deltalog_table_rows(), storage_options=opts)
    spark.conf.set(IO_CONF, "native")
    try:
        with pytest.raises(InvalidArgumentError, match="hadoop-aws") as info:
            spark.read.format("delta").load(uri).count()
        assert "objectStoreIO=arrow" in str(info.value)
    finally:
        spark.conf.unset(IO_CONF)


def test_session_hadoop_settings_are_read_whole(spark: Any) -> None:
    """The live Hadoop configuration and the session's ``spark.hadoop.*`` settings are read as whole maps
    (one py4j call each): the same keys and values as copying them entry by entry, odd characters included,
    the session's setting winning over the Hadoop one."""
    from deltalog.spark.common.storage import _PREFIXES, session_hadoop_conf

    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("fs.s3a.access.key", 'k=,"v\\ é')
    conf.set("fs.s3a.endpoint", "http://hadoop:1")
    spark.conf.set("spark.hadoop.fs.s3a.endpoint", "http://session:2")
    try:
        read = session_hadoop_conf(spark)
        copied: dict[str, str] = {}
        for prefix in _PREFIXES:
            props = conf.getPropsWithPrefix(prefix)
            copied.update({prefix + str(k): str(props.get(k)) for k in props.keySet().toArray()})
        copied["fs.s3a.endpoint"] = "http://session:2"
    finally:
        conf.unset("fs.s3a.access.key")
        conf.unset("fs.s3a.endpoint")
        spark.conf.unset("spark.hadoop.fs.s3a.endpoint")
    assert read == copied and len(read) > 20
    assert read["fs.s3a.access.key"] == 'k=,"v\\ é' and read["fs.s3a.endpoint"] == "http://session:2"


def test_a_hadoop_file_system_configured_for_the_scheme_is_used(spark: Any) -> None:
    """Whether the JVM has a file system for a scheme is remembered per session, but keyed by the configured
    ``fs.<scheme>.impl``: setting one (here a class every Hadoop has) is seen at once, and so is removing it."""
    from deltalog.spark.common.storage import native_io

    conf = spark.sparkContext._jsc.hadoopConfiguration()
    assert not native_io(spark, "s3a://bucket/t") and not native_io(spark, "s3a://bucket/t")
    conf.set("fs.s3a.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
    try:
        assert native_io(spark, "s3a://bucket/t")
    finally:
        conf.unset("fs.s3a.impl")
    assert not native_io(spark, "s3a://bucket/t")


def deltalog_table_rows() -> Any:
    import pyarrow as pa

    return pa.table({"id": pa.array([1, 2], pa.int64())})


def test_credentials_are_not_in_the_plan(spark: Any, s3: tuple[str, dict[str, str]]) -> None:
    import emulators

    uri, _ = s3
    source(spark, 0, 5).write.format("delta").save(uri)
    stream = spark.readStream.format("delta").load(uri)
    plan = stream._jdf.queryExecution().toString()
    assert "__deltalog_storage_secret" in plan  # the options travel with the source ...
    assert emulators.SECRET_KEY not in plan  # ... redacted in the plan Spark prints
    assert os.environ.get("AWS_SECRET_ACCESS_KEY") != emulators.SECRET_KEY  # nothing leaked into the env


ENV_ONLY = """
import sys
from deltalog.spark import DeltaTable, local_session

spark = local_session("env-only", cores=1)
for uri in sys.argv[1:]:
    spark.range(20).selectExpr("id", "id % 2 as p").write.format("delta").partitionBy("p").save(uri)
    DeltaTable.forPath(spark, uri).delete("id < 5")
    print("ROWS", uri, spark.read.format("delta").load(uri).count())
"""


@pytest.mark.own_jvm
def test_a_job_takes_endpoints_and_credentials_from_the_environment_alone(
    tmp_path: Path, moto_server: Any, azurite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The variables delta-rs and the cloud SDKs read (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``, the keys, the
    region; ``AZURE_STORAGE_*``), no storage options and no Hadoop settings: the job writes, deletes and reads
    on S3 (``s3://`` and ``s3a://``) and Azure, and the kernel reads what it wrote the same way."""
    import subprocess
    import sys

    import emulators

    bucket, container = emulators.new_bucket(moto_server), emulators.new_container(azurite)
    uris = [f"s3://{bucket}/a", f"s3a://{bucket}/b", f"az://{container}/c"]
    env = {**os.environ, **moto_server.options, **azurite.options, "SPARK_LOCAL_IP": "127.0.0.1"}
    program = tmp_path / "job.py"
    program.write_text(ENV_ONLY)
    done = subprocess.run([sys.executable, str(program), *uris], env=env, capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert [ln for ln in done.stdout.splitlines() if ln.startswith("ROWS")] == [f"ROWS {u} 15" for u in uris]
    for key, value in {**moto_server.options, **azurite.options}.items():
        monkeypatch.setenv(key, value)
    assert [deltalog.Table(u).snapshot().to_arrow().num_rows for u in uris] == [15] * 3
