"""Writes through the Spark engine: save modes, options, partitioning, schema enforcement and evolution,
constraints, idempotence -- and that a refused or failed write commits nothing."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sparkutil import arrow_rows, data_files, rows, version
from sparkutil import frame as frame_of

import deltalog
from deltalog.arrow.write import TableExistsError
from deltalog.errors import InvalidArgumentError, SchemaError
from deltalog.spark import DeltaTable, read, write
from deltalog.txn.constraints import ConstraintViolationError

pytestmark = pytest.mark.spark

UTC = dt.UTC


def frame(spark: Any, start: int, n: int, *, parts: int = 3) -> Any:
    from pyspark.sql import functions as F

    return (
        spark.range(start, start + n, numPartitions=2)
        .withColumn("k", (F.col("id") % parts).cast("int"))
        .withColumn("s", F.concat(F.lit("v"), F.col("id").cast("string")))
    )


def history(path: Path) -> list[dict[str, Any]]:
    return deltalog.Table(str(path)).history()


def test_save_modes_through_format_delta(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    frame(spark, 0, 10).write.format("delta").save(p)  # default: errorifexists, creates the table
    assert version(p) == 0
    with pytest.raises(TableExistsError, match="DELTA_PATH_EXISTS"):
        frame(spark, 0, 10).write.format("delta").mode("errorifexists").save(p)
    assert version(p) == 0
    frame(spark, 10, 5).write.format("delta").mode("append").save(p)
    assert spark.read.format("delta").load(p).count() == 15
    frame(spark, 100, 3).write.format("delta").mode("ignore").save(p)
    assert version(p) == 1
    frame(spark, 100, 3).write.mode("overwrite").save(p, format="delta")
    got = rows(spark.read.format("delta").load(p))
    assert [r["id"] for r in got] == [100, 101, 102]
    assert got[0] == {"id": 100, "k": 1, "s": "v100"}
    h = history(tmp_path / "t")
    assert [(e["version"], e["operationParameters"]["mode"]) for e in h] == [
        (2, "Overwrite"), (1, "Append"), (0, "ErrorIfExists")
    ]
    assert [e["isBlindAppend"] for e in h] == [False, True, True]
    assert h[0]["operationMetrics"]["numOutputRows"] == "3"
    # Every column of a table created from a DataFrame is nullable (spark.range's id is not).
    schema = json.loads(deltalog.Table(p).snapshot().metadata.schemaString or "{}")
    assert all(f["nullable"] for f in schema["fields"])


def test_unknown_mode_and_option_are_refused_with_the_valid_ones(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match=r"unknown save mode 'upsert'.*'append'"):
        write(frame(spark, 0, 3), p, mode="upsert")
    with pytest.raises(InvalidArgumentError, match=r"unknown Delta write option\(s\) \['mergeSchemas'\].*mergeSchema"):
        frame(spark, 0, 3).write.format("delta").option("mergeSchemas", "true").save(p)
    with pytest.raises(InvalidArgumentError, match="partitionOverwriteMode must be 'static' or 'dynamic'"):
        write(frame(spark, 0, 3), p, mode="overwrite", partitionOverwriteMode="dynamical")
    with pytest.raises(InvalidArgumentError, match="replaceWhere and partitionOverwriteMode=dynamic"):
        write(frame(spark, 0, 3), p, mode="overwrite", partitionOverwriteMode="dynamic", replaceWhere="k = 1")
    assert version(p) == -1
    assert data_files(p) == []


def test_partitioned_write_across_types_with_nulls(spark: Any, tmp_path: Path) -> None:
    values: dict[str, tuple[pa.DataType, list[Any]]] = {
        "b": (pa.bool_(), [True, False]),
        "i8": (pa.int8(), [-128, 127]),
        "i32": (pa.int32(), [-(2**31), 7]),
        "i64": (pa.int64(), [2**63 - 1, -5]),
        "f64": (pa.float64(), [2.5, -1e10]),
        "dec": (pa.decimal128(10, 2), [decimal.Decimal("12345678.91"), decimal.Decimal("-3.10")]),
        "s": (pa.string(), ["a b/c=d%", "ü€#?"]),
        "d": (pa.date32(), [dt.date(1969, 12, 31), dt.date(2024, 2, 29)]),
        "ts": (pa.timestamp("us", tz="UTC"), [dt.datetime(1960, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
                                             dt.datetime(2024, 1, 1, 12, 30, tzinfo=UTC)]),
        "ntz": (pa.timestamp("us"), [dt.datetime(2000, 1, 1, 1, 2, 3, 456789), dt.datetime(1900, 1, 1)]),
    }
    n = 6
    cols: dict[str, Any] = {"id": pa.array(range(n), pa.int64())}
    for name, (atype, vals) in values.items():
        cols[name] = pa.array([*vals, None, *vals, None][:n], atype)
    cols["v"] = pa.array([f"v{i}" for i in range(n)])
    source = pa.table(cols)
    from pyspark.sql.pandas.types import from_arrow_schema

    df = frame_of(spark, source, from_arrow_schema(source.schema, prefer_timestamp_ntz=True))
    first, second = ["b", "i8", "i32", "s", "d"], ["i64", "f64", "dec", "ts", "ntz"]
    for i, parts in enumerate((first, second)):
        p = str(tmp_path / f"t{i}")
        write(df, p, partitionBy=parts)
        snap = deltalog.Table(p).snapshot()
        assert snap.partition_columns == tuple(parts)
        expected = arrow_rows(source)
        assert rows(read(spark, p)) == expected
        assert arrow_rows(snap.to_arrow()) == expected
        # Partition columns live in the log and the directory names only, never in the files.
        sample = data_files(p)[0]
        assert not set(parts) & set(pq.read_schema(sample).names)
        assert "__HIVE_DEFAULT_PARTITION__" in "".join(data_files(p))
        # One file per partition value and task: 3 distinct value combinations (2 values + all-null).
        assert snap.num_files() <= 6


def test_replace_where_replaces_only_matching_partitions(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    p = str(tmp_path / "t")
    write(frame(spark, 0, 30), p, partitionBy="k")
    before = {r["id"] for r in rows(read(spark, p)) if r["k"] != 1}
    replacement = frame(spark, 1000, 30).filter(F.col("k") == 1)
    replacement.write.format("delta").mode("overwrite").option("replaceWhere", "k = 1").save(p)
    got = rows(read(spark, p))
    assert {r["id"] for r in got if r["k"] != 1} == before
    assert {r["id"] for r in got if r["k"] == 1} == {i for i in range(1000, 1030) if i % 3 == 1}
    assert history(tmp_path / "t")[0]["operationParameters"]["predicate"] == "k = 1"  # as given, as delta-spark
    # Rows outside the predicate are refused inside the tasks; nothing is committed.
    with pytest.raises(InvalidArgumentError, match=r"DELTA_REPLACE_WHERE_MISMATCH.*do not match the overwrite"):
        write(frame(spark, 0, 30), p, mode="overwrite", replaceWhere="k IN (0, 2)")
    assert version(p) == 1
    # Data columns and OR are accepted too (tests/spark/writes/test_spark_replace_where.py); the rows written
    # must satisfy the condition all the same.
    with pytest.raises(InvalidArgumentError, match="DELTA_REPLACE_WHERE_MISMATCH"):
        write(frame(spark, 0, 3), p, mode="overwrite", replaceWhere="id > 3")
    with pytest.raises(InvalidArgumentError, match="DELTA_REPLACE_WHERE_MISMATCH"):
        write(frame(spark, 0, 6), p, mode="overwrite", replaceWhere="k = 1 OR k = 2")
    assert version(p) == 1
    write(frame(spark, 2000, 6).filter(F.col("k") != 1), p, mode="overwrite", replaceWhere="k = 0 OR k = 2")
    got = rows(read(spark, p))
    assert {r["id"] for r in got if r["k"] != 1} == {i for i in range(2000, 2006) if i % 3 != 1}
    assert {r["id"] for r in got if r["k"] == 1} == {i for i in range(1000, 1030) if i % 3 == 1}
    assert version(p) == 2


def test_schema_mismatch_merge_schema_and_overwrite_schema(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    p = str(tmp_path / "t")
    write(frame(spark, 0, 4), p)
    files = data_files(p)
    wider = frame(spark, 10, 2).withColumn("extra", F.lit(1.5))
    with pytest.raises(SchemaError, match="extra: table \\(missing\\) vs data double") as err:
        wider.write.format("delta").mode("append").save(p)
    # the advice names the writer's options, not the kernel's keywords
    assert '.option("mergeSchema", "true")' in str(err.value) and "schema_mode" not in str(err.value)
    assert version(p) == 0 and data_files(p) == files  # refused before any job ran
    with pytest.raises(InvalidArgumentError, match=r'partitioned by \[\], not \[.id.\].*option\("overwriteSchema"'):
        frame(spark, 10, 2).write.format("delta").mode("append").partitionBy("id").save(p)
    wider.write.format("delta").mode("append").option("mergeSchema", "true").save(p)
    got = rows(read(spark, p))
    assert [r["extra"] for r in got] == [None, None, None, None, 1.5, 1.5]
    # as delta-spark does: a column left out is written as nulls, another spelling takes the table's
    spark.range(20, 21).toDF("ID").withColumn("S", F.lit("x")).write.format("delta").mode("append").save(p)
    assert [r for r in rows(read(spark, p)) if r["id"] == 20] == [{"id": 20, "k": None, "s": "x", "extra": None}]
    assert deltalog.Table(p).snapshot().schema.field_names == ["id", "k", "s", "extra"]
    retyped = spark.range(3).select(F.col("id").cast("string").alias("id"), F.lit(True).alias("flag"))
    with pytest.raises(SchemaError):
        write(retyped, p, mode="overwrite")
    assert version(p) == 2
    write(retyped, p, mode="overwrite", overwriteSchema="true")
    assert deltalog.Table(p).snapshot().schema.field_names == ["id", "flag"]
    assert sorted(r["id"] for r in rows(read(spark, p))) == ["0", "1", "2"]


def test_struct_fields_in_another_order_or_missing_are_written_by_name(spark: Any, tmp_path: Path) -> None:
    """As delta-spark: an append whose struct lists the table's fields in another order, or lacks some, is
    written by field name without mergeSchema (it was refused); the table's schema stays the same."""
    p = str(tmp_path / "t")
    spark.createDataFrame([(1, (1, 2, [(1, "x")]))], "id long, s struct<a: long, b: int, "
                          "arr: array<struct<k: int, v: string>>>").write.format("delta").save(p)
    spark.createDataFrame([(5, (60, 50, [("y", 7)]))], "id long, s struct<b: int, a: int, "
                          "arr: array<struct<v: string, k: int>>>").write.format("delta").mode("append").save(p)
    spark.createDataFrame([(6, (70,))], "id long, s struct<a: long>").write.format("delta").mode("append").save(p)
    assert deltalog.Table(p).snapshot().schema == deltalog.Table(p).snapshot(version=0).schema
    got = {r["id"]: r["s"] for r in rows(read(spark, p))}
    assert got == {1: {"a": 1, "b": 2, "arr": [{"k": 1, "v": "x"}]}, 5: {"a": 50, "b": 60, "arr": [{"k": 7, "v": "y"}]},
                   6: {"a": 70, "b": None, "arr": None}}
    with pytest.raises(SchemaError, match="s: table struct"):  # a field the table lacks still needs mergeSchema
        spark.createDataFrame([(7, (1, "z"))], "id long, s struct<a: long, zz: string>").write.format("delta") \
            .mode("append").save(p)
    assert version(p) == 2


def test_constraints_checked_in_tasks_and_failed_job_commits_nothing(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    p = str(tmp_path / "t")
    write(frame(spark, 0, 5), p, **{"delta.constraints.nonneg": "id >= 0"})
    assert deltalog.Table(p).snapshot().properties["delta.constraints.nonneg"] == "id >= 0"
    with pytest.raises(ConstraintViolationError, match="CHECK constraint nonneg"):
        write(frame(spark, -3, 5), p, mode="append")
    assert version(p) == 0
    assert len(rows(read(spark, p))) == 5

    def fail(x):  # type: ignore[no-untyped-def]  # a typed UDF would be taken for a pandas UDF
        raise RuntimeError("task failure")

    with pytest.raises(Exception, match="task failure"):
        write(frame(spark, 0, 5).withColumn("id", F.udf(fail, "long")("id")), p, mode="append")
    assert version(p) == 0


def test_txn_idempotence_user_metadata_and_data_change(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    first = write(frame(spark, 0, 4), p, txnAppId="etl", txnVersion=1, userMetadata="run 1")
    assert not first.skipped and first.num_rows == 4
    again = write(frame(spark, 0, 4), p, mode="append", txnAppId="etl", txnVersion="1")
    assert again.skipped and version(p) == 0
    write(frame(spark, 4, 4), p, mode="append", txnAppId="etl", txnVersion=2)
    assert deltalog.Table(p).snapshot().txn_version("etl") == 2
    assert history(tmp_path / "t")[-1]["userMetadata"] == "run 1"
    with pytest.raises(InvalidArgumentError, match="together"):
        write(frame(spark, 0, 1), p, mode="append", txnAppId="etl")
    write(frame(spark, 0, 8), p, mode="overwrite", dataChange="false")
    commit = (tmp_path / "t" / "_delta_log" / "00000000000000000002.json").read_text().splitlines()
    actions = [json.loads(line) for line in commit]
    assert all(a["add"]["dataChange"] is False for a in actions if "add" in a)
    assert all(a["remove"]["dataChange"] is False for a in actions if "remove" in a)


def test_empty_dataframe_creates_an_empty_table(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    empty = frame(spark, 0, 0)
    write(empty, p, partitionBy=["k"])
    assert version(p) == 0 and deltalog.Table(p).snapshot().num_files() == 0
    df = spark.read.format("delta").load(p)
    assert df.count() == 0
    assert df.columns == ["id", "k", "s"]
    assert [f.dataType.simpleString() for f in df.schema.fields] == ["bigint", "int", "string"]


def test_dynamic_partition_overwrite_replaces_only_written_partitions(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    p = str(tmp_path / "t")
    frame(spark, 0, 30).write.format("delta").partitionBy("k").save(p)  # k = 0, 1, 2, ten rows each
    new = frame(spark, 100, 4).withColumn("k", F.when(F.col("id") % 2 == 0, 1).otherwise(3).cast("int"))
    (new.write.format("delta").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(p))
    got = rows(read(spark, p))
    old = rows(frame(spark, 0, 30))
    expected = [r for r in old if r["k"] != 1] + rows(new)
    assert sorted(got, key=lambda r: r["id"]) == sorted(expected, key=lambda r: r["id"])
    h = history(tmp_path / "t")[0]
    assert h["operationParameters"]["mode"] == "Overwrite" and not h["isBlindAppend"]
    removed = [a["remove"] for a in _commit_actions(p, 1) if "remove" in a]
    assert removed and {r["partitionValues"]["k"] for r in removed} == {"1"}
    # An unpartitioned table: dynamic means the whole table, as Spark's.
    q = str(tmp_path / "u")
    write(frame(spark, 0, 5), q)
    write(frame(spark, 50, 2), q, mode="overwrite", partitionOverwriteMode="dynamic")
    assert sorted(r["id"] for r in rows(read(spark, q))) == [50, 51]


def test_max_records_per_file_caps_every_file(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    frame(spark, 0, 250).write.format("delta").option("maxRecordsPerFile", 40).partitionBy("k").save(p)
    counts = [json.loads(a["add"]["stats"])["numRecords"] for a in _commit_actions(p, 0) if "add" in a]
    assert sum(counts) == 250 and max(counts) <= 40 and len(counts) >= 7
    q = str(tmp_path / "u")
    write(frame(spark, 0, 100), q, maxRecordsPerFile="30")
    counts = [json.loads(a["add"]["stats"])["numRecords"] for a in _commit_actions(q, 0) if "add" in a]
    assert sum(counts) == 100 and max(counts) <= 30
    assert sorted(r["id"] for r in rows(read(spark, q))) == list(range(100))


def _commit_actions(path: str, v: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{v:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_optimized_writes_shuffle_by_partition_first(spark: Any, tmp_path: Path) -> None:
    scattered = frame(spark, 0, 200).repartition(8)  # 8 tasks, each holding rows of both partitions
    plain, shuffled = str(tmp_path / "plain"), str(tmp_path / "shuffled")
    scattered.write.format("delta").partitionBy("k").save(plain)
    scattered.write.format("delta").option("optimizeWrite", "true").partitionBy("k").save(shuffled)
    assert deltalog.Table(plain).snapshot().num_files() > 3
    assert deltalog.Table(shuffled).snapshot().num_files() == 3  # one task per partition value
    assert sorted(r["id"] for r in rows(read(spark, shuffled))) == list(range(200))
    # the table property turns it on for every write, the option off again
    prop = str(tmp_path / "prop")
    scattered.write.format("delta").option("delta.autoOptimize.optimizeWrite", "true").partitionBy("k").save(prop)
    assert deltalog.Table(prop).snapshot().num_files() == 3
    scattered.write.format("delta").mode("append").option("optimizeWrite", "false").save(prop)
    assert deltalog.Table(prop).snapshot().num_files() > 6


def test_auto_compaction_compacts_the_partitions_written(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    frame(spark, 0, 6).coalesce(1).write.format("delta").partitionBy("k") \
        .option("delta.autoOptimize.autoCompact", "true").save(p)  # one file in each of k = 0, 1, 2
    spark.conf.set("spark.databricks.delta.autoCompact.minNumFiles", "3")
    try:
        for i in (1, 2):  # k = 1 and 2 get a second file each: below 3 small files, nothing is compacted
            spark.range(10 + i, 11 + i).selectExpr("id", f"{i} AS k", "'x' AS s").write.format("delta") \
                .mode("append").save(p)
        assert version(p) == 2 and deltalog.Table(p).snapshot().num_files() == 5
        spark.range(20, 22).selectExpr("id", "1 AS k", "'x' AS s").coalesce(1).write.format("delta") \
            .mode("append").save(p)  # a fourth file in k = 1: compacted right after
        last = deltalog.Table(p).history(limit=1)[0]
        assert (last["version"], last["operation"], last["operationParameters"]["auto"]) == (4, "OPTIMIZE", True)
        assert _files_by_k(p) == {"0": 1, "1": 1, "2": 2}  # k = 2 was not written by the last append
        source = spark.range(30, 31).selectExpr("id", "2 AS k", "'m' AS s")  # MERGE inserts a third file in k = 2
        DeltaTable.forPath(spark, p).alias("t").merge(source.alias("u"), "t.id = u.id").whenNotMatchedInsertAll() \
            .execute()
    finally:
        spark.conf.unset("spark.databricks.delta.autoCompact.minNumFiles")
    assert [c["operation"] for c in deltalog.Table(p).history(limit=2)] == ["OPTIMIZE", "MERGE"]
    assert _files_by_k(p) == {"0": 1, "1": 1, "2": 1}
    assert sorted(r["id"] for r in rows(read(spark, p))) == [0, 1, 2, 3, 4, 5, 11, 12, 20, 21, 30]


def _files_by_k(path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in deltalog.Table(path).snapshot().add_files().to_pylist():
        k = dict(row["partitionValues"])["k"]
        out[k] = out.get(k, 0) + 1
    return out
