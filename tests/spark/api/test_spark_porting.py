"""delta-spark's session settings and names, honoured so that ported jobs keep their behaviour:
``spark.sql.sources.partitionOverwriteMode``, ``...schema.autoMerge.enabled``, ``...commitInfo.userMetadata``,
``...properties.defaults.*``, ``...retentionDurationCheck.enabled``, ``...write.txnAppId``/``txnVersion``
(writes, DELETE, UPDATE), a delta-spark session builder, ``forName("delta.`path`")`` and ``delta.tables``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sparkutil import rows, version

import deltalog
from deltalog.errors import InvalidArgumentError, SchemaError, TableNotFoundError
from deltalog.spark import DeltaTable

pytestmark = pytest.mark.spark


@contextmanager
def conf(spark: Any, **settings: str) -> Iterator[None]:
    """Session settings (dots spelled ``__``) for the block, restored afterwards."""
    keys = {k.replace("__", "."): v for k, v in settings.items()}
    before = {k: spark.conf.get(k, None) for k in keys}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def frame(spark: Any, start: int, n: int, parts: int = 3) -> Any:
    from pyspark.sql import functions as F

    return spark.range(start, start + n, numPartitions=2).withColumn("k", (F.col("id") % parts).cast("int"))


def test_session_partition_overwrite_mode_dynamic(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    frame(spark, 0, 30).write.format("delta").partitionBy("k").save(p)
    with conf(spark, spark__sql__sources__partitionOverwriteMode="dynamic"):
        frame(spark, 100, 3, parts=1).write.format("delta").mode("overwrite").save(p)  # rows of k = 0 only
        got = rows(spark.read.format("delta").load(p))
        assert sorted({r["k"] for r in got}) == [0, 1, 2]  # k = 1 and 2 kept
        assert sorted(r["id"] for r in got if r["k"] == 0) == [100, 101, 102]
        # the writer option wins over the session setting
        frame(spark, 200, 3, parts=1).write.format("delta").mode("overwrite").option(
            "partitionOverwriteMode", "static").save(p)
    assert sorted(r["id"] for r in rows(spark.read.format("delta").load(p))) == [200, 201, 202]


def test_session_auto_merge_for_writes_and_merge(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    p = str(tmp_path / "t")
    frame(spark, 0, 5).write.format("delta").save(p)
    wider = frame(spark, 5, 2).withColumn("extra", F.lit("x"))
    with pytest.raises(SchemaError):
        wider.write.format("delta").mode("append").save(p)
    assert version(p) == 0
    with conf(spark, spark__databricks__delta__schema__autoMerge__enabled="true"):
        wider.write.format("delta").mode("append").save(p)
        assert deltalog.Table(p).snapshot().schema.field_names == ["id", "k", "extra"]
        src = frame(spark, 100, 2).withColumn("more", F.lit(7))
        (DeltaTable.forPath(spark, p).alias("t").merge(src.alias("s"), "t.id = s.id")
         .whenNotMatchedInsertAll().execute())
    snap = deltalog.Table(p).snapshot()
    assert snap.schema.field_names == ["id", "k", "extra", "more"]
    assert snap.to_arrow().num_rows == 9


def test_session_user_metadata_and_property_defaults(spark: Any, tmp_path: Path) -> None:
    p, q = str(tmp_path / "t"), str(tmp_path / "b")
    with conf(spark, spark__databricks__delta__commitInfo__userMetadata="nightly run 7",
              spark__databricks__delta__properties__defaults__enableChangeDataFeed="true"):
        frame(spark, 0, 3).write.format("delta").save(p)
        frame(spark, 3, 3).write.format("delta").mode("append").option("userMetadata", "explicit").save(p)
        DeltaTable.create(spark).location(q).addColumn("id", "long").execute()
    table = deltalog.Table(p)
    assert [e.get("userMetadata") for e in table.history()] == ["explicit", "nightly run 7"]
    assert table.snapshot().properties["delta.enableChangeDataFeed"] == "true"
    assert deltalog.Table(q).snapshot().properties["delta.enableChangeDataFeed"] == "true"
    frame(spark, 6, 3).write.format("delta").mode("append").save(p)  # settings gone: nothing added
    assert "userMetadata" not in table.history(limit=1)[0]


def test_session_retention_check_lets_vacuum_go_below_the_retention(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    frame(spark, 0, 5).write.format("delta").save(p)
    frame(spark, 5, 5).write.format("delta").mode("overwrite").save(p)
    old = deltalog.Table(p).snapshot(0).add_files().column("path").to_pylist()
    past = time.time() - 3600
    for f in old:
        os.utime(os.path.join(p, f), (past, past))
    dt = DeltaTable.forPath(spark, p)
    with pytest.raises(InvalidArgumentError, match=r"retention.*retentionDurationCheck\.enabled=false"):
        dt.vacuum(0)
    with conf(spark, spark__databricks__delta__retentionDurationCheck__enabled="false"):
        deleted = {os.path.basename(r["path"]) for r in dt.vacuum(0, dryRun=True).collect()}
        assert dt.vacuum(0).collect() == []
    assert deleted == {os.path.basename(f) for f in old}
    assert not any(os.path.exists(os.path.join(p, f)) for f in old)
    assert spark.read.format("delta").load(p).count() == 5


def test_session_default_source_delta_makes_unformatted_reads_writes_and_tables_delta(
        spark: Any, tmp_path: Path) -> None:
    """``spark.sql.sources.default=delta`` (a common setting of delta-spark sessions): every read, write,
    stream and new catalog table without a format or ``USING`` is Delta, as Spark makes it the default."""
    import uuid

    suffix = uuid.uuid4().hex[:8]
    names = {k: f"{k}_{suffix}" for k in ("saved", "created", "ctas", "v2", "streamed", "hive")}
    p, out = str(tmp_path / "t"), str(tmp_path / "out")
    try:
        with conf(spark, spark__sql__sources__default="delta"):
            spark.range(3).write.save(p)
            spark.range(3, 5).write.mode("append").save(p)
            assert deltalog.Table(p).latest_version() == 1 and spark.read.load(p).count() == 5
            spark.range(2).write.saveAsTable(names["saved"])
            spark.sql(f"CREATE TABLE {names['created']} (id BIGINT)")
            spark.sql(f"INSERT INTO {names['created']} VALUES (7)")
            spark.sql(f"CREATE TABLE {names['ctas']} AS SELECT 1 AS x")
            spark.range(4).writeTo(names["v2"]).create()
            query = spark.readStream.load(p).writeStream.option("checkpointLocation", str(tmp_path / "ck")) \
                .trigger(availableNow=True).start(out)
            query.awaitTermination(120)
            assert deltalog.Table(out).snapshot().num_files() >= 1
            spark.sql(f"CREATE TABLE {names['hive']} (id INT) USING parquet")  # a format named: not Delta
            for key in ("saved", "created", "ctas", "v2"):
                assert spark.sql(f"DESCRIBE DETAIL {names[key]}").first()["format"] == "delta", key
            assert rows(spark.table(names["created"]), "id") == [{"id": 7}]
            assert spark.sql(f"DESCRIBE DETAIL {names['hive']}").first()["format"] != "delta"
        spark.range(1).write.mode("overwrite").save(str(tmp_path / "pq"))  # back to Spark's parquet default
        assert not (tmp_path / "pq" / "_delta_log").exists()
    finally:
        for name in names.values():
            spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_session_txn_makes_writes_delete_and_update_idempotent(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    frame(spark, 0, 10).write.format("delta").save(p)
    dt = DeltaTable.forPath(spark, p)
    with conf(spark, spark__databricks__delta__write__txnAppId="job", spark__databricks__delta__write__txnVersion="1"):
        dt.delete("id < 2")
        dt.delete("id < 4")  # same batch again: skipped
    assert dt.toDF().count() == 8 and version(p) == 1
    with conf(spark, spark__databricks__delta__write__txnAppId="job", spark__databricks__delta__write__txnVersion="2"):
        dt.update("id = 5", {"k": "42"})
        dt.update("id = 6", {"k": "42"})  # skipped
        frame(spark, 100, 1).write.format("delta").mode("append").save(p)  # batch 2 is done: skipped
    assert [r["id"] for r in rows(dt.toDF()) if r["k"] == 42] == [5]
    assert version(p) == 2 and deltalog.Table(p).snapshot().txn_version("job") == 2
    with conf(spark, spark__databricks__delta__write__txnAppId="job", spark__databricks__delta__write__txnVersion="3"):
        frame(spark, 100, 1).write.format("delta").mode("append").save(p)
    assert version(p) == 3 and dt.toDF().count() == 9


def test_a_delta_spark_session_builder_starts_without_delta_jars(spark: Any) -> None:
    from pyspark.sql import SparkSession

    from deltalog.spark import configure_spark_with_delta_pip

    builder = (SparkSession.builder
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension,com.example.Other")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
               .config("spark.jars.packages", "io.delta:delta-spark_2.13:4.0.0,org.example:x:1"))
    options = configure_spark_with_delta_pip(builder)._options
    assert options["spark.sql.extensions"] == "com.example.Other"
    assert "spark.sql.catalog.spark_catalog" not in options
    assert options["spark.jars.packages"] == "org.example:x:1"


def test_for_name_with_a_delta_path_and_the_delta_tables_names(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark.tables import DeltaMergeBuilder, DeltaOptimizeBuilder, DeltaTableBuilder
    from deltalog.spark.tables import DeltaTable as PortedDeltaTable

    p = str(tmp_path / "t")
    frame(spark, 0, 4).write.format("delta").save(p)
    dt = PortedDeltaTable.forName(spark, f"delta.`{p}`")
    assert dt.toDF().count() == 4
    assert isinstance(dt.alias("t").merge(frame(spark, 0, 1).alias("s"), "t.id = s.id"), DeltaMergeBuilder)
    assert isinstance(dt.optimize(), DeltaOptimizeBuilder)
    assert isinstance(PortedDeltaTable.create(spark), DeltaTableBuilder)
    with pytest.raises(TableNotFoundError, match="DELTA_MISSING_DELTA_TABLE") as caught:
        PortedDeltaTable.forName(spark, "no_such_table_anywhere")
    assert "forPath" not in str(caught.value)
    with pytest.raises(TableNotFoundError, match=r"looks like a path: use DeltaTable\.forPath"):
        PortedDeltaTable.forName(spark, p)  # a path given to forName: the message says what to call


def test_errors_are_pyspark_exceptions_for_ported_except_clauses(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException, IllegalArgumentException

    from deltalog.errors import TableNotFoundError, VersionNotFoundError

    p = str(tmp_path / "t")
    with pytest.raises(AnalysisException, match=r"DELTA_MISSING_DELTA_TABLE|not a Delta table|no Delta table") as err:
        DeltaTable.forPath(spark, str(tmp_path / "nothing"))
    assert isinstance(err.value, TableNotFoundError) and err.value.table is not None
    frame(spark, 0, 3).write.format("delta").save(p)
    with pytest.raises(AnalysisException) as err2:
        spark.read.format("delta").option("versionAsOf", 5).load(p)
    assert isinstance(err2.value, VersionNotFoundError)
    with pytest.raises(AnalysisException):
        frame(spark, 0, 3).selectExpr("id", "'x' AS k").write.format("delta").mode("append").save(p)
    from deltalog.spark import write

    with pytest.raises(IllegalArgumentException, match="unknown save mode"):
        write(frame(spark, 0, 3), p, mode="upsert")
    with pytest.raises(IllegalArgumentException, match="unknown Delta write option"):
        frame(spark, 0, 3).write.format("delta").option("mergeSchemas", "true").mode("append").save(p)
    with pytest.raises(AnalysisException):
        DeltaTable.forPath(spark, p).delete("no_such_column = 1")
    assert version(p) == 0


def test_generate_symlink_manifest_and_column_builder(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import LongType

    p = str(tmp_path / "t")
    frame(spark, 0, 30).write.format("delta").partitionBy("k").save(p)
    dt = DeltaTable.forPath(spark, p)
    dt.generate("symlink_format_manifest")
    files = deltalog.Table(p).snapshot().add_files().select(["path", "partitionValues"]).to_pylist()
    for k in ("0", "1", "2"):
        listed = (tmp_path / "t" / "_symlink_format_manifest" / f"k={k}" / "manifest").read_text().splitlines()
        want = {"file:" + os.path.join(p, f["path"]) for f in files if dict(f["partitionValues"])["k"] == k}
        assert set(listed) == want and all(os.path.exists(x[len("file:"):]) for x in listed)
    frame(spark, 100, 3, parts=1).write.format("delta").mode("overwrite").save(p)  # only k=0 is left
    dt.generate("symlink_format_manifest")
    assert sorted(d.name for d in (tmp_path / "t" / "_symlink_format_manifest").iterdir()) == ["k=0"]
    with pytest.raises(InvalidArgumentError, match="symlink_format_manifest"):
        dt.generate("manifest")
    col = DeltaTable.columnBuilder(spark, "id").dataType("bigint").nullable(False).comment("key").build()
    assert col.name == "id" and col.dataType == LongType() and not col.nullable and col.metadata == {"comment": "key"}
    q = str(tmp_path / "built")
    DeltaTable.create(spark).location(q).addColumns([col]).execute()
    field = deltalog.Table(q).snapshot().schema.fields[0]
    assert (field.name, field.nullable, field.metadata.get("comment")) == ("id", False, "key")
    gen = DeltaTable.columnBuilder(spark, "y").dataType("bigint").generatedAlwaysAs("id + 1").build()
    assert gen.metadata == {"delta.generationExpression": "id + 1"}
    assert dt.detail().first()["location"] == "file:" + os.path.abspath(p)
