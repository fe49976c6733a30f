"""OPTIMIZE on the Spark engine: compaction and Z-order (``DeltaTable.optimize()``). Every result is compared
with the table read before the command; file skipping is measured with the kernel's own pruning."""

from __future__ import annotations

import concurrent.futures as cf
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import spark_deltars_worker
from sparkutil import arrow_rows, data_files, rows, version

import deltalog
from deltalog.data.filters import normalize_filter, prune_files
from deltalog.errors import InvalidArgumentError
from deltalog.spark import DeltaTable
from deltalog.txn.operations import Delete
from deltalog.txn.transaction import Transaction, start_transaction

pytestmark = pytest.mark.spark


def chunk(start: int, n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "p": pa.array([f"p{i % 2}" for i in ids], pa.string()),
        "x": pa.array([rng.randrange(1000) for _ in ids], pa.int64()),
        "y": pa.array([None if i % 11 == 0 else rng.random() * 1000 for i in ids], pa.float64()),
        "s": pa.array([f"s{rng.randrange(50):03d}" for _ in ids], pa.string()),
    })


def make(tmp_path: Path, *, appends: int = 6, rows_each: int = 40, partitioned: bool = True,
         props: dict[str, str] | None = None, name: str = "t") -> str:
    """A table of ``appends`` small kernel appends (one file per partition each)."""
    path = str(tmp_path / name)
    for i in range(appends):
        deltalog.write_table(
            path, chunk(i * rows_each, rows_each, seed=i), mode="append",
            partition_by=["p"] if partitioned else None, properties=(props or None) if i == 0 else None,
        )
    return path


def snapshot(path: str) -> Any:
    return deltalog.Table(path).snapshot()


def table_rows(path: str) -> list[dict[str, Any]]:
    return arrow_rows(snapshot(path).to_arrow())


def live(path: str) -> list[dict[str, Any]]:
    return list(snapshot(path).add_files().to_pylist())


def commit_actions(path: str, v: int) -> list[dict[str, Any]]:
    with open(Path(path) / "_delta_log" / f"{v:020d}.json") as f:
        return [json.loads(line) for line in f if line.strip()]


def same_rows(spark: Any, path: str, before_version: int) -> None:
    """The latest version holds exactly the rows of ``before_version`` (both directions of exceptAll)."""
    now = spark.read.format("delta").load(path)
    then = spark.read.format("delta").option("versionAsOf", before_version).load(path)
    assert now.count() == then.count()
    assert now.exceptAll(then).count() == 0 and then.exceptAll(now).count() == 0


def files_read(path: str, column: str, op: str, value: Any) -> int:
    snap = snapshot(path)
    conds, _ = normalize_filter([(column, op, value)], snap.schema, table=path)
    return int(prune_files(snap, conds).num_rows)


# ------------------------------------------------------------------------------------------- compaction


def test_compaction_bin_packs_small_files_without_changing_rows(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path)
    before = version(path)
    expected = table_rows(path)
    assert len(live(path)) == 12

    out = DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert out.columns == ["path", "metrics"]
    m = out.first().metrics
    assert (m.numFilesRemoved, m.numFilesAdded, m.partitionsOptimized, m.totalConsideredFiles) == (12, 2, 2, 12)
    assert m.filesRemoved.totalFiles == 12 and m.filesAdded.totalFiles == 2 and m.zOrderStats is None
    assert version(path) == before + 1
    assert table_rows(path) == expected
    same_rows(spark, path, before)
    assert len(live(path)) == 2 and all(json.loads(f["stats"])["numRecords"] == 120 for f in live(path))

    actions = commit_actions(path, before + 1)
    files = [a.get("add") or a.get("remove") for a in actions if "add" in a or "remove" in a]
    assert len(files) == 14 and all(f["dataChange"] is False for f in files)
    info = DeltaTable.forPath(spark, path).history(1).first()
    assert info.operation == "OPTIMIZE"
    assert info.operationParameters == {"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": "false"}
    assert info.operationMetrics["numRemovedFiles"] == "12" and info.operationMetrics["numAddedFiles"] == "2"
    assert info.isBlindAppend is False

    # Each partition now has one file: nothing to do, nothing committed.
    again = DeltaTable.forPath(spark, path).optimize().executeCompaction().first().metrics
    assert (again.numFilesAdded, again.numFilesRemoved, again.totalFilesSkipped) == (0, 0, 2)
    assert version(path) == before + 1


def test_where_limits_compaction_to_partitions_and_refuses_data_columns(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path)
    p1 = sorted(f["path"] for f in live(path) if dict(f["partitionValues"])["p"] == "p1")
    dt = DeltaTable.forPath(spark, path)
    for bad, name in (("x > 3", "x"), ("p = 'p0' AND id < 5", "id")):
        with pytest.raises(InvalidArgumentError, match=f"non-partition column '{name}'.*partition columns"):
            dt.optimize().where(bad).executeCompaction()
    with pytest.raises(InvalidArgumentError, match="unknown column 'nope'"):
        dt.optimize().where("nope = 1").executeCompaction()
    assert version(path) == 5

    m = dt.optimize().where("p = 'p0'").executeCompaction().first().metrics
    assert (m.numFilesRemoved, m.numFilesAdded, m.totalConsideredFiles) == (6, 1, 6)
    assert sorted(f["path"] for f in live(path) if dict(f["partitionValues"])["p"] == "p1") == p1
    assert dt.history(1).first().operationParameters["predicate"] == '["(\'p = p0)"]'  # parsed, as delta-spark
    same_rows(spark, path, 5)


def test_max_file_size_splits_bins_and_large_files_stay(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=False, appends=8)
    sizes = sorted(f["size"] for f in live(path))
    limit = sizes[0] + sizes[1] + sizes[2] + 10  # room for three files per bin
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(limit))
    try:
        m = DeltaTable.forPath(spark, path).optimize().executeCompaction().first().metrics
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    assert m.numBins >= 2 and m.numFilesAdded == m.numBins
    assert m.numFilesRemoved + m.totalFilesSkipped == 8
    assert len(live(path)) == 8 - m.numFilesRemoved + m.numFilesAdded
    same_rows(spark, path, 7)
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", " ")  # blank: unset, as every setting
    try:
        m = DeltaTable.forPath(spark, path).optimize().executeCompaction().first().metrics
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    assert m.numFilesAdded == 1 and len(live(path)) == 1  # the default limit (1 GiB) takes every file


def test_compaction_purges_rows_deleted_by_deletion_vectors(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=False, appends=3, props={"delta.enableDeletionVectors": "true"})
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id % 4 = 0")
    assert all(f["deletionVector"] for f in live(path))
    expected = table_rows(path)
    deleted = sum(f["deletionVector"]["cardinality"] for f in live(path))

    m = dt.optimize().executeCompaction().first().metrics
    assert m.deletionVectorStats.numDeletionVectorsRemoved == 3
    assert m.deletionVectorStats.numDeletionVectorRowsRemoved == deleted == 30
    files = live(path)
    assert len(files) == 1 and not files[0]["deletionVector"]
    assert json.loads(files[0]["stats"])["numRecords"] == 90 and json.loads(files[0]["stats"])["tightBounds"]
    assert table_rows(path) == expected

    dt.delete("id = 1")  # a lone file with a deletion vector is rewritten too
    m = dt.optimize().executeCompaction().first().metrics
    assert (m.numFilesRemoved, m.numFilesAdded) == (1, 1)
    assert not live(path)[0]["deletionVector"] and len(table_rows(path)) == 89
    assert dt.history(1).first().operationMetrics["numDeletionVectorsRemoved"] == "1"


def test_compaction_tasks_keep_column_mapping_widened_types_and_row_ids(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction's tasks read each bin with the kernel's reader and write it with the kernel's writer: the
    mapped physical names, a widened type, deletion vectors and row ids come out right, and bins beyond
    the cap on tasks share tasks."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from deltalog.spark.layout import bins
    from readers import duckdb_rows

    monkeypatch.setattr(bins, "_MAX_TASKS", 2)
    path = str(tmp_path / "f")
    t = f"delta.`{path}`"
    # p first: DuckDB reads a mapped partition column that is not the first column as null (see the README)
    spark.sql(f"CREATE TABLE {t} (p STRING, id BIGINT, n INT) USING DELTA PARTITIONED BY (p) TBLPROPERTIES ("
              "'delta.columnMapping.mode' = 'name', 'delta.enableDeletionVectors' = 'true', "
              "'delta.enableRowTracking' = 'true', 'delta.enableTypeWidening' = 'true')")
    for i in range(3):
        spark.range(i * 30, (i + 1) * 30, 1, 1).selectExpr("concat('p', id % 3) AS p", "id", "CAST(id AS INT) AS n") \
            .write.format("delta").mode("append").save(path)
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN n TYPE BIGINT")
    spark.sql(f"ALTER TABLE {t} RENAME COLUMN n TO m")
    spark.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    assert len(live(path)) == 9 and all(f["deletionVector"] for f in live(path))
    before = version(path)
    ids = {r.id: r.row_id for r in spark.read.format("delta").load(path)
           .select("id", F.col("_metadata.row_id")).collect()}
    expected = sorted((i, f"p{i % 3}", i) for i in range(90) if i % 7)

    m = DeltaTable.forPath(spark, path).optimize().executeCompaction().first().metrics
    assert (m.numFilesRemoved, m.numFilesAdded, m.totalScheduledTasks) == (9, 3, 2)
    assert m.deletionVectorStats.numDeletionVectorRowsRemoved == 13
    files = live(path)
    assert len(files) == 3 and not any(f["deletionVector"] for f in files)
    for f in files:
        written = pq.read_schema(Path(path) / f["path"])
        assert "m" not in written.names and written.field(written.names[1]).type == pa.int64()
    assert {r.id: r.row_id for r in spark.read.format("delta").load(path)
            .select("id", F.col("_metadata.row_id")).collect()} == {k: v for k, v in ids.items() if k % 7}
    same_rows(spark, path, before)
    got = sorted(tuple(r) for r in spark.read.format("delta").load(path).select("id", "p", "m").collect())
    assert got == expected == duckdb_rows(path, ["id", "p", "m"])  # delta-rs 1.6 refuses typeWidening tables


def test_compaction_of_a_missing_file_names_it_and_leaves_nothing(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, appends=3, partitioned=False)
    victim = live(path)[1]["path"]
    (Path(path) / victim).unlink()
    on_disk = data_files(path)
    before = version(path)
    with pytest.raises(deltalog.DeltaError, match=f"data file {victim} listed in the log does not exist"):
        DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert version(path) == before and data_files(path) == on_disk


# ------------------------------------------------------------------------------------------- concurrency


def racing(monkeypatch: pytest.MonkeyPatch, action: Callable[[str], None]) -> None:
    """Run ``action(table)`` once, right before the next transaction commits (after its snapshot)."""
    original = Transaction.commit

    def commit(self: Transaction, **kwargs: Any) -> Any:
        monkeypatch.setattr(Transaction, "commit", original)
        action(self.table)
        return original(self, **kwargs)

    monkeypatch.setattr(Transaction, "commit", commit)


def test_concurrent_append_does_not_conflict(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = make(tmp_path, appends=3, props={"delta.isolationLevel": "Serializable"})
    expected = table_rows(path) + chunk(1000, 10, seed=9).to_pylist()

    def append(table: str) -> None:
        deltalog.write_table(table, chunk(1000, 10, seed=9), mode="append")

    racing(monkeypatch, append)
    m = DeltaTable.forPath(spark, path).optimize().executeCompaction().first().metrics
    assert m.numFilesRemoved == 6
    assert version(path) == 4  # 3 = the append, 4 = OPTIMIZE
    assert commit_actions(path, 4)[0]["commitInfo"]["operation"] == "OPTIMIZE"
    assert table_rows(path) == arrow_rows(pa.Table.from_pylist(expected))
    assert len(live(path)) == 4  # one compacted file + the append's file per partition


def test_concurrent_delete_of_a_compacted_file_makes_optimize_plan_again(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make(tmp_path, appends=3)
    on_disk = data_files(path)
    victim = live(path)[0]

    def delete_file(table: str) -> None:
        txn = start_transaction(deltalog.Table(table), Delete(predicate="id < 0"))
        txn.read_whole_table()
        txn.remove_files([victim])
        txn.commit()

    racing(monkeypatch, delete_file)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()  # lost to the delete: planned again
    assert version(path) == 4  # 3 = the concurrent delete, 4 = OPTIMIZE of what is left
    assert commit_actions(path, 4)[0]["commitInfo"]["operation"] == "OPTIMIZE"
    assert victim["path"] not in {f["path"] for f in live(path)}
    new_files = set(data_files(path)) - set(on_disk)
    added = [a["add"] for a in commit_actions(path, 4) if "add" in a]
    assert added and len(new_files) == len(added)  # only the committed attempt's files remain


# ------------------------------------------------------------------------------------------- Z-order


@pytest.mark.parametrize("bounds", ["task", "driver", "spark"])
def test_zorder_tightens_file_bounds_on_both_columns(spark: Any, tmp_path: Path, rs: cf.ProcessPoolExecutor,
                                                     bounds: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the table sorted in one task's memory (a small table), or by Spark: the sample's quantiles on the
    # driver (small samples) or by Spark's aggregations (large ones)
    from deltalog.spark.layout import zorder

    if bounds != "task":  # every partition through Spark's shuffle
        spark.conf.set("spark.deltalog.optimize.zorderInTaskBytes", "0")
    if bounds == "spark":
        monkeypatch.setattr(zorder, "_DRIVER_SAMPLE_ROWS", 0)
    path = make(tmp_path, partitioned=False, appends=8, rows_each=250)
    before = version(path)
    probes = [("x", "=", 300), ("y", ">=", 900.0), ("y", "<", 100.0)]
    read_before = [files_read(path, *p) for p in probes]
    assert read_before == [8, 8, 8]  # random rows: every file spans both columns
    total = sum(f["size"] for f in live(path))

    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(total // 16))  # ~16 files
    try:
        m = DeltaTable.forPath(spark, path).optimize().executeZOrderBy(["x", "y"]).first().metrics
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
        spark.conf.unset("spark.deltalog.optimize.zorderInTaskBytes")
    n = len(live(path))
    assert m.numFilesRemoved == 8 and m.numFilesAdded == n and n >= 8
    assert m.zOrderStats.strategyName == "all" and m.zOrderStats.mergedFiles.num == 8
    read_after = [files_read(path, *p) for p in probes]
    fractions = [after / n for after in read_after]  # measured: 5, 5 and 8 of 16 files
    assert max(fractions) <= 0.6 and sum(fractions) / len(fractions) < 0.45, (read_after, n)
    same_rows(spark, path, before)
    info = DeltaTable.forPath(spark, path).history(1).first()
    assert info.operationParameters["zOrderBy"] == '["x","y"]'
    # delta-rs reads the rewritten table identically
    ours = snapshot(path).to_arrow()
    theirs: pa.Table = rs.submit(spark_deltars_worker.read_table, path).result(timeout=120)
    assert arrow_rows(theirs.select(ours.column_names).cast(ours.schema)) == arrow_rows(ours)


def test_zorder_per_partition_and_column_errors(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, appends=4, props={"delta.dataSkippingNumIndexedCols": "3"})
    dt = DeltaTable.forPath(spark, path)
    cases = [
        (("p",), "DELTA_ZORDERING_ON_PARTITION_COLUMN.*p is a partition column"),
        (("nope",), "DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST.*nope"),
        (("x", "s"), r"DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS.*\['s'\]"),
        ((), "at least one column"),
    ]
    for cols, message in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            dt.optimize().executeZOrderBy(*cols)
    assert version(path) == 3

    p0 = sorted(f["path"] for f in live(path) if dict(f["partitionValues"])["p"] == "p0")
    m = dt.optimize().where("p = 'p1'").executeZOrderBy("X", "y").first().metrics  # names resolve like Spark
    assert (m.numFilesRemoved, m.partitionsOptimized, m.zOrderStats.numOutputCubes) == (4, 1, 1)
    assert sorted(f["path"] for f in live(path) if dict(f["partitionValues"])["p"] == "p0") == p0
    same_rows(spark, path, 3)
    assert rows(spark.read.format("delta").load(path).filter("p = 'p1'")) == sorted(
        [r for r in table_rows(path) if r["p"] == "p1"], key=lambda r: r["id"])


def test_zorder_sorts_small_partitions_in_a_task_and_large_ones_with_spark(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalog.spark.layout import optimize

    path = make(tmp_path, appends=4)
    for i in range(4):  # p1 gets four more files: twice the bytes of p0
        deltalog.write_table(path, chunk(1000 + i * 40, 40, seed=20 + i).filter(pa.compute.equal(
            chunk(1000 + i * 40, 40, seed=20 + i).column("p"), "p1")), mode="append")
    sizes = {p: sum(f["size"] for f in live(path) if dict(f["partitionValues"])["p"] == p) for p in ("p0", "p1")}
    assert sizes["p0"] < sizes["p1"]
    seen: dict[str, list[str]] = {"task": [], "spark": []}
    in_task, with_spark = optimize.compact_bins, optimize._zorder_rewrite

    def spy_task(spark: Any, snap: Any, bins: list[Any], **kw: Any) -> Any:
        seen["task"] += [dict(b.partition)["p"] for b in bins]
        return in_task(spark, snap, bins, **kw)

    def spy_spark(spark: Any, snap: Any, bins: list[Any], *args: Any) -> Any:
        seen["spark"] += [dict(b.partition)["p"] for b in bins]
        return with_spark(spark, snap, bins, *args)

    monkeypatch.setattr(optimize, "compact_bins", spy_task)
    monkeypatch.setattr(optimize, "_zorder_rewrite", spy_spark)
    before = version(path)
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(sizes["p0"] // 3))
    spark.conf.set("spark.deltalog.optimize.zorderInTaskBytes", "nope")
    try:
        with pytest.raises(InvalidArgumentError, match="zorderInTaskBytes must be a number of bytes"):
            DeltaTable.forPath(spark, path).optimize().executeZOrderBy("x", "y")
        spark.conf.set("spark.deltalog.optimize.zorderInTaskBytes", str(sizes["p0"]))  # p0 fits, p1 does not
        m = DeltaTable.forPath(spark, path).optimize().executeZOrderBy("x", "y").first().metrics
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
        spark.conf.unset("spark.deltalog.optimize.zorderInTaskBytes")
    assert seen == {"task": ["p0"], "spark": ["p1"]}
    assert m.numFilesRemoved == 12 and m.numFilesAdded == len(live(path)) >= 6 and m.partitionsOptimized == 2
    same_rows(spark, path, before)
    for p in ("p0", "p1"):  # each partition's new files split the x range between them
        spans = [json.loads(f["stats"]) for f in live(path) if dict(f["partitionValues"])["p"] == p]
        assert len(spans) >= 3 and min(s["maxValues"]["x"] - s["minValues"]["x"] for s in spans) < 900


def test_zorder_values_from_spark_expressions_match_the_python_task(spark: Any) -> None:
    """The single-bin Z-order computed by Spark expressions (Bucketizer ranges, shifted bits, file bounds)
    gives every row the same Z-value and file as the Arrow task used for several bins."""
    import functools
    import math

    import numpy as np
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    from deltalog.spark.layout import zorder as z

    rng = np.random.default_rng(7)
    values: list[tuple[int, float | None, float | None]] = []
    for i in range(3000):
        a = float(rng.integers(0, 50))  # many repeats: repeated quantiles
        b = float(rng.normal())
        special = i % 97
        if special == 1:
            a = math.nan
        elif special == 2:
            b = math.inf
        elif special == 3:
            b = -math.inf
        values.append((i, None if special == 4 else a, None if special == 5 else b))
    keys = (f"{z._KEY}0", f"{z._KEY}1")
    schema = StructType([StructField("id", LongType()), StructField(keys[0], DoubleType()),
                         StructField(keys[1], DoubleType())])
    frame = spark.createDataFrame(values, schema).select("id", *keys, F.lit(0).cast("long").alias(z.BIN))
    sample = pa.table({z.BIN: pa.array([0] * 700, pa.int64()),
                       keys[0]: pa.array([v[1] for v in values[:700]], pa.float64()),
                       keys[1]: pa.array([v[2] for v in values[:700]], pa.float64())})
    bits = 10
    bounds, z_bounds = z._driver_bounds(sample, keys, bits, {0: 7})
    spec = z._ZSpec(keys, bounds, bits, z_bounds, {0: 0}, {0: 7}, tuple(range(100, 107)))
    out = StructType([StructField("id", LongType()), StructField(z.BIN, LongType(), False),
                      StructField(z._Z, LongType(), False), StructField(z._TASK, LongType(), False)])
    python = {r["id"]: tuple(r)[1:] for r in
              frame.mapInArrow(functools.partial(z._zorder_task, spec), out).collect()}
    jvm = {r["id"]: tuple(r)[1:] for r in z._jvm_zorder(frame, spec, ["id"]).collect()}
    assert len(python) == 3000 and jvm == python
    assert len({v[0] for v in jvm.values()}) == 7  # every file gets rows
