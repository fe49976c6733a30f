"""Reads through the Spark engine: time travel, errors, deletion vectors and column mapping on corpus
tables (compared with the kernel's own reader), partition pruning and min/max file skipping."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sparkutil import rows, to_arrow

import deltalog
from deltalog.errors import InvalidArgumentError, TableNotFoundError, VersionNotFoundError
from deltalog.log.timestamps import to_millis
from deltalog.spark import read, write

pytestmark = pytest.mark.spark

CORPUS = Path(__file__).resolve().parents[4] / "shared" / "conformance"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/conformance")


def corpus(rel: str) -> str:
    path = CORPUS / rel
    if not path.is_dir():
        pytest.skip(f"conformance corpus table {rel} is not available")
    return str(path)


def _norm(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def same_rows(spark_df: Any, expected: pa.Table) -> None:
    got = [_norm(r) for r in to_arrow(spark_df).to_pylist()]
    want = [_norm(r) for r in expected.to_pylist()]
    assert spark_df.columns == expected.column_names
    assert sorted(got, key=repr) == sorted(want, key=repr)


def test_time_travel_by_version_and_timestamp(spark: Any, tmp_path: Path) -> None:
    p = tmp_path / "t"
    for i in range(3):
        write(spark.range(i * 10, i * 10 + 10), str(p), mode="append")
    log = p / "_delta_log"
    for v, day in enumerate(("2024-01-01", "2024-02-01", "2024-03-01")):
        ts = to_millis(f"{day}T00:00:00Z") / 1000
        os.utime(log / f"{v:020d}.json", (ts, ts))
    assert spark.read.format("delta").option("versionAsOf", 0).load(str(p)).count() == 10
    assert read(spark, str(p), versionAsOf=1).count() == 20
    assert spark.read.format("delta").option("timestampAsOf", "2024-02-15").load(str(p)).count() == 20
    assert spark.read.format("delta").load(str(p)).count() == 30
    with pytest.raises(VersionNotFoundError, match=r"DELTA_VERSION_NOT_FOUND.*version 7"):
        read(spark, str(p), versionAsOf=7)
    with pytest.raises(VersionNotFoundError, match="DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"):
        read(spark, str(p), timestampAsOf="2023-01-01")
    with pytest.raises(VersionNotFoundError, match="DELTA_TIMESTAMP_GREATER_THAN_COMMIT"):
        spark.read.format("delta").option("timestampAsOf", "2099-01-01").load(str(p))
    with pytest.raises(InvalidArgumentError, match="both"):
        read(spark, str(p), versionAsOf=0, timestampAsOf="2024-02-15")
    # delta-spark's path suffixes: @v<version> and @<yyyyMMddHHmmssSSS>, in load() and in SQL
    assert spark.read.format("delta").load(f"{p}@v0").count() == 10
    assert spark.read.format("delta").load(f"{p}@20240215000000000").count() == 20
    assert spark.sql(f"SELECT count(*) FROM delta.`{p}@v1`").first()[0] == 20
    with pytest.raises(InvalidArgumentError, match="DELTA_TIME_TRAVEL_MULTIPLE_FORMATS"):
        spark.read.format("delta").option("versionAsOf", 1).load(f"{p}@v0")
    with pytest.raises(TableNotFoundError, match="DELTA_MISSING_DELTA_TABLE"):
        spark.read.format("delta").load(f"{p}@x1")
    # the @ timestamp is a time in the session time zone, as delta-spark reads it: 20:00 on Jan 31 in Los Angeles
    # is 04:00 UTC on Feb 1, after version 1's commit (it would be before it, version 0, read as UTC)
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        assert spark.read.format("delta").load(f"{p}@20240131200000000").count() == 20
        assert read(spark, f"{p}@20240131200000000").count() == 20
        assert spark.sql(f"SELECT count(*) FROM delta.`{p}@20240131200000000`").first()[0] == 20
        assert spark.read.format("delta").load(f"{p}@20240131150000000").count() == 10  # 23:00 UTC, Jan 31
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_reads_of_one_version_are_the_same_data_to_spark(spark: Any, tmp_path: Path) -> None:
    """As delta-spark's reads of one version share their file index: Spark sees two reads of it as the same data
    (``sameSemantics``), so a ``cache()`` of one serves the others; a commit makes later reads read the files."""
    p = str(tmp_path / "t")
    spark.range(0, 100, numPartitions=4).write.format("delta").save(p)
    a, b = spark.read.format("delta").load(p), spark.read.format("delta").load(p)
    assert a.sameSemantics(b) and a.filter("id > 90").sameSemantics(b.filter("id > 90"))
    assert a.join(b, a.id == b.id).count() == 100  # each read has columns of its own
    a.cache()
    try:
        assert a.count() == 100
        later = spark.read.format("delta").load(p).filter("id > 90")  # a filter that could skip 3 files of 4
        assert "InMemoryRelation" in later._jdf.queryExecution().optimizedPlan().toString() and later.count() == 9
        write(spark.range(100, 110), p, mode="append")
        after = spark.read.format("delta").load(p)
        assert "InMemoryRelation" not in after._jdf.queryExecution().optimizedPlan().toString()
        assert after.count() == 110 and a.count() == 100  # the cached frame keeps Spark's cached rows
        # deltalog's own scans (a MERGE's) read the files, never a cached read of the same version
        after.cache()
        assert after.count() == 110
        from deltalog.spark import DeltaTable

        DeltaTable.forPath(spark, p).alias("t").merge(spark.range(105, 115).alias("s"), "t.id = s.id") \
            .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        assert spark.read.format("delta").load(p).count() == 115 and after.count() == 110
    finally:
        spark.catalog.clearCache()


def test_reads_follow_the_table_under_a_path_written_again(spark: Any, tmp_path: Path) -> None:
    """A session's reads keep the snapshot they last saw per path (only newer commits are read), yet a table
    deleted and written again under that path, up to the same version, is read as it now is."""
    import shutil

    from deltalog.spark.common.core import open_table

    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    ids = lambda: sorted(r.id for r in spark.read.format("delta").load(path).collect())  # noqa: E731
    assert ids() == [0, 1, 2] and open_table(path) is open_table(path)
    spark.range(3, 5).write.format("delta").mode("append").save(path)
    assert ids() == [0, 1, 2, 3, 4]
    for start in (10, 20):
        shutil.rmtree(path)
        spark.range(start, start + 3).write.format("delta").save(path)
        spark.range(start + 3, start + 5).write.format("delta").mode("append").save(path)
        assert ids() == list(range(start, start + 5))


def test_not_a_delta_table_gives_a_clear_error(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    for path in (tmp_path / "missing", tmp_path / "plain"):
        with pytest.raises(TableNotFoundError, match=r"\[DELTA_MISSING_DELTA_TABLE\].* is not a Delta table") as err:
            spark.read.format("delta").load(str(path))
        assert "at org.apache" not in str(err.value)
    with pytest.raises(TableNotFoundError, match="DELTA_MISSING_DELTA_TABLE"):  # a schema needs a table to match
        spark.read.format("delta").schema("id long").load(str(tmp_path / "missing"))
    with pytest.raises(InvalidArgumentError, match=r"unknown Delta read option\(s\) \['versionAsOff'\]"):
        spark.read.format("delta").option("versionAsOff", 1).load(str(tmp_path / "missing"))


@pytest.mark.parametrize(
    "rel",
    [
        "kernel-rs-golden/dv-partitioned-with-checkpoint/delta",
        "delta-spark/table-with-dv-small",
        "kernel-rs-golden/dv-with-columnmapping/delta",
    ],
)
def test_deletion_vector_tables_match_the_kernel(spark: Any, rel: str) -> None:
    path = corpus(rel)
    snap = deltalog.Table(path).snapshot()
    assert snap.add_files().column("deletionVector").null_count < snap.num_files()
    same_rows(read(spark, path), snap.to_arrow())


@pytest.mark.parametrize("partitioned", [False, True], ids=["plain", "partitioned"])
def test_only_files_with_a_deletion_vector_are_joined(spark: Any, tmp_path: Path, partitioned: bool) -> None:
    from pyspark.sql import functions as F

    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    df = spark.range(0, 400, numPartitions=4).select("id", (F.col("id") % 4).alias("k"))
    write(df, path, partitionBy=["k"] if partitioned else None, **{"delta.enableDeletionVectors": "true"})
    DeltaTable.forPath(spark, path).delete("id IN (1, 5, 9)")  # rows of one file (or one partition) only
    snap = deltalog.Table(path).snapshot()
    dvs = snap.add_files().column("deletionVector")
    assert 0 < dvs.null_count < snap.num_files()  # some files carry a deletion vector, some do not
    got = read(spark, path)
    plan = got._jdf.queryExecution().executedPlan().toString()
    # the file with the deletion vector is scanned apart: its rows' bits tested in a constant, no join
    assert "Union" in plan and "bit_get" in plan and "LeftAnti" not in plan
    same_rows(got, snap.to_arrow())
    assert got.count() == 397 and got.filter("id IN (1, 5, 9)").count() == 0


@pytest.mark.parametrize(
    "rel",
    [
        "kernel-rs-golden/table-with-columnmapping-mode-name/delta",
        "kernel-rs-golden/table-with-columnmapping-mode-id/delta",
        "delta-kernel-defaults/data-reader-partition-values-column-mapping-name",
    ],
)
def test_column_mapping_tables_match_the_kernel(spark: Any, rel: str) -> None:
    path = corpus(rel)
    snap = deltalog.Table(path).snapshot()
    assert snap.column_mapping_mode in ("name", "id")
    same_rows(spark.read.format("delta").load(path), snap.to_arrow())


def test_partition_pruning_and_stats_skipping_limit_the_files_read(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    part = str(tmp_path / "part")
    df = spark.range(0, 90, numPartitions=2).withColumn("k", (F.col("id") % 3).cast("int"))
    write(df, part, partitionBy=["k"])
    assert deltalog.Table(part).snapshot().num_files() == 6
    pruned = read(spark, part, where=[("k", "=", 1)])
    assert len(pruned.inputFiles()) == 2
    assert all("/k=1/" in f for f in pruned.inputFiles())
    assert sorted(r["id"] for r in rows(pruned)) == list(range(1, 90, 3))
    assert len(read(spark, part, where=[("k", "in", [0, 2])]).inputFiles()) == 4
    assert read(spark, part, where=[("k", "=", 5)]).count() == 0

    flat = str(tmp_path / "flat")
    write(spark.range(0, 100, numPartitions=4), flat)  # four files with disjoint id ranges
    assert deltalog.Table(flat).snapshot().num_files() == 4
    low = read(spark, flat, where=[("id", "<", 10)])
    assert len(low.inputFiles()) == 1
    assert [r["id"] for r in rows(low)] == list(range(10))
    assert len(read(spark, flat, where=[("id", ">=", 50)]).inputFiles()) == 2
    # A Spark filter is a row filter only: every file is scanned, the rows are still right.
    assert read(spark, flat, where=F.col("id") < 10).count() == 10
    assert read(spark, flat, where="id >= 95").count() == 5


def test_projection_of_partition_columns_and_missing_columns(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    p = str(tmp_path / "a table+with %25 odd#chars ü")  # join keys must match Spark's file URIs
    write(spark.range(6).withColumn("k", F.col("id") % 2), p, partitionBy="k")
    only_k = read(spark, p, columns=["k"])
    assert only_k.columns == ["k"]
    assert sorted(r["k"] for r in to_arrow(only_k).to_pylist()) == [0, 0, 0, 1, 1, 1]
    write(spark.range(6, 8).withColumn("k", F.lit(0)).withColumn("extra", F.lit("x")), p, mode="append",
          mergeSchema=True)
    got = rows(read(spark, p, columns=["id", "extra"]))
    assert [r["extra"] for r in got] == [None] * 6 + ["x", "x"]
    with pytest.raises(InvalidArgumentError, match="UNRESOLVED_COLUMN"):
        read(spark, p, columns=["nope"])


def test_file_metadata_column_in_sql_and_with_deletion_vectors(spark: Any, tmp_path: Path) -> None:
    """``_metadata`` (file path, name, size, modification time, row index) as Spark's file sources offer it:
    in SQL over Delta tables, and through the DataFrame API on tables with deletion vectors too."""
    path = str(tmp_path / "t")
    spark.range(6).coalesce(1).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")
    [add] = deltalog.Table(path).snapshot().add_files().to_pylist()
    assert add["deletionVector"] is not None
    expected = [(i, os.path.basename(add["path"]), i, add["size"]) for i in (0, 1, 3, 4, 5)]
    by_sql = spark.sql(f"SELECT id, _metadata.file_name, _metadata.row_index, _metadata.file_size "
                       f"FROM delta.`{path}` ORDER BY id").collect()
    assert [tuple(r) for r in by_sql] == expected
    by_df = read(spark, path).select("id", "_metadata.file_name", "_metadata.row_index", "_metadata.file_size")
    assert [tuple(r) for r in by_df.orderBy("id").collect()] == expected
    star = spark.sql(f"SELECT *, _metadata.file_path FROM delta.`{path}` WHERE id = 0").first()
    assert star.asDict().keys() == {"id", "file_path"} and star.file_path.endswith(add["path"])
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="row_id"):  # no row tracking: no row ids, as in delta-spark
        spark.sql(f"SELECT _metadata.row_id FROM delta.`{path}`").collect()


def test_nan_rows_written_by_the_kernel_are_seen_by_spark_filters(spark: Any, tmp_path: Path) -> None:
    """Spark's NaN is greater than every number and equal to itself. Arrow's footer bounds of [1.0, NaN] were
    [1.0, 1.0], and Spark's parquet reader skipped the row group for ``x > 5`` and ``x = NaN``; the kernel's
    files (also the ones Spark's OPTIMIZE writes in its tasks) now carry no float footer bounds."""
    p = str(tmp_path / "t")
    for batch in ([1.0, math.nan], [2.0, 3.0]):
        deltalog.write_table(p, pa.table({"x": batch}), mode="append")
    spark.sql(f"OPTIMIZE delta.`{p}`").collect()
    assert deltalog.Table(p).snapshot().num_files() == 1
    frame = spark.read.format("delta").load(p)
    assert frame.where("x > 5").count() == 1
    assert frame.where("x = double('NaN')").count() == 1
    assert frame.where("x < 2.5").count() == 2


def test_a_read_dataframe_reads_the_table_as_it_is_when_an_action_runs(spark: Any, tmp_path: Path) -> None:
    """As in delta-spark: a DataFrame of ``load(p)`` / ``DeltaTable.toDF()`` (and frames built on it by
    ``filter``, ``select``, ``orderBy``, ``limit``, ``groupBy(...).agg``, ``join``, ...) sees commits made
    after it was created; a time-travel
    read and a cached frame keep their rows; a column the table gains stays out; one it loses fails the
    action with ``DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS``."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from deltalog.spark import DeltaTable

    p = str(tmp_path / "t")
    spark.range(3).selectExpr("id", "id * 10 AS v").write.format("delta").save(p)
    df = spark.read.format("delta").load(p)
    ones = df.filter("id > 0").select("id")
    table = DeltaTable.forPath(spark, p)
    as_df = table.toDF()
    old = spark.read.format("delta").option("versionAsOf", 0).load(p)
    cached = spark.read.format("delta").load(p).cache()
    by_parity = df.groupBy((F.col("id") % 2).alias("odd")).agg(F.sum("v").alias("v"))  # built before the commit
    pairs = df.join(ones, "id")
    bound = df.filter(df.id > 0).select(df.id, (df["v"] * 2).alias("w")).orderBy(df.id.desc())  # df's columns
    assert (df.count(), ones.count(), as_df.count(), cached.count(), pairs.count()) == (3, 2, 3, 3, 2)
    spark.range(3, 6).selectExpr("id", "id * 10 AS v").write.format("delta").mode("append").save(p)
    assert df.count() == 6 and sorted(r.id for r in ones.collect()) == [1, 2, 3, 4, 5]
    assert [tuple(r) for r in bound.collect()] == [(i, i * 20) for i in range(5, 0, -1)]
    assert df.orderBy("id", ascending=False).limit(4).first().id == 5 and df.distinct().count() == 6
    assert [r.id for r in df.alias("d").select("d.id").sort("id").tail(1)] == [5]
    assert sorted(map(tuple, by_parity.collect())) == [(0, 60), (1, 90)] and pairs.count() == 5
    assert (old.count(), cached.count()) == (3, 3)  # a time-travel read, Spark's cache
    table.update("id = 1", {"v": "-1"})
    assert as_df.where("id = 1").first().v == -1
    df.write.format("delta").save(str(tmp_path / "copy"))
    assert read(spark, str(tmp_path / "copy")).count() == 6
    updates = read(spark, str(tmp_path / "copy"))  # a MERGE source read before a commit to its table
    spark.range(10, 12).selectExpr("id", "id * 10 AS v").write.format("delta").mode("append") \
        .save(str(tmp_path / "copy"))
    DeltaTable.createOrReplace(spark).location(str(tmp_path / "copy2")).addColumns(updates.schema).execute()
    DeltaTable.forPath(spark, str(tmp_path / "copy2")).alias("t").merge(updates.alias("s"), "t.id = s.id") \
        .whenNotMatchedInsertAll().execute()
    assert read(spark, str(tmp_path / "copy2")).count() == 8  # the source as its table is when MERGE runs
    spark.range(6, 7).selectExpr("id", "id * 10 AS v", "'x' AS extra").write.format("delta").mode("append") \
        .option("mergeSchema", "true").save(p)
    assert df.count() == 7 and df.columns == ["id", "v"] and df.where("id = 6").first().v == 60
    spark.sql(f"ALTER TABLE delta.`{p}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"ALTER TABLE delta.`{p}` DROP COLUMN v")
    assert ones.count() == 6  # it reads id alone
    with pytest.raises(AnalysisException) as lost:
        df.count()
    assert lost.value.getCondition() == "DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS"  # type: ignore[attr-defined]
