"""``DeltaTable.clone`` / ``cloneAtVersion`` / ``cloneAtTimestamp`` and ``convertToDelta`` through Spark,
checked against Spark's own reads of the source and, for delta-rs, in a spawned process."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import spark_deltars_worker
from sparkutil import data_files, rows

import deltalog
from deltalog.errors import DeltaError, InvalidArgumentError
from deltalog.spark import DeltaTable
from pools import spawn_pool

pytestmark = pytest.mark.spark


def _source(spark: Any, path: str, **props: str) -> None:
    """v0: ids 0-9 (k = id % 2), v1: ids 10-14 appended, v2: ids 0-2 deleted."""
    from pyspark.sql import functions as F

    def frame(lo: int, hi: int) -> Any:
        return spark.range(lo, hi, numPartitions=2).withColumn("k", (F.col("id") % 2).cast("int"))

    writer = frame(0, 10).write.format("delta").partitionBy("k")
    for key, value in props.items():
        writer = writer.option(key, value)
    writer.save(path)
    frame(10, 15).write.format("delta").mode("append").save(path)
    DeltaTable.forPath(spark, path).delete("id < 3")


def _at(spark: Any, path: str, version: int | None = None) -> list[dict[str, Any]]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return rows(reader.load(path))


def test_shallow_and_deep_clones_at_versions(spark: Any, tmp_path: Path) -> None:
    src = str(tmp_path / "src")
    _source(spark, src)
    table = DeltaTable.forPath(spark, src)
    before = {v: _at(spark, src, v) for v in (0, 1, 2)}
    shallow = table.cloneAtVersion(1, str(tmp_path / "shallow"), isShallow=True)
    deep = table.clone(str(tmp_path / "deep"))
    assert isinstance(shallow, DeltaTable) and shallow.path == str(tmp_path / "shallow")
    assert rows(shallow.toDF()) == before[1]
    assert rows(deep.toDF()) == before[2]
    assert {v: _at(spark, src, v) for v in (0, 1, 2)} == before  # time travel on the source unaffected
    h = shallow.history().first()
    assert h.operation == "CLONE" and "isShallow" not in h.operationParameters  # delta-spark: source, version
    assert h.operationParameters["sourceVersion"] == "1" and h.operationMetrics["numCopiedFiles"] == "0"
    d = deep.history().first().operationMetrics
    assert d["numCopiedFiles"] == d["sourceNumOfFiles"] == str(deltalog.Table(src).snapshot().num_files())
    ms = os.stat(os.path.join(src, "_delta_log", f"{0:020d}.json")).st_mtime_ns // 1_000_000  # commit time
    stamp = (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M:%S.%f")
    at_ts = table.cloneAtTimestamp(stamp, str(tmp_path / "ts"), True)
    assert rows(at_ts.toDF()) == before[0]
    with pytest.raises(InvalidArgumentError, match="already holds a Delta table"):
        table.clone(str(tmp_path / "deep"))
    with pytest.raises(ValueError, match="isShallow needs to be a bool"):
        table.clone(str(tmp_path / "x"), isShallow="yes")  # type: ignore[arg-type]


def test_shallow_clone_takes_writes_and_vacuum_spares_the_source(spark: Any, tmp_path: Path) -> None:
    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    _source(spark, src)
    source_files = data_files(src)
    dt = DeltaTable.forPath(spark, src).clone(clone, isShallow=True)
    spark.range(100, 103).selectExpr("id", "1 AS k").write.format("delta").mode("append").save(clone)
    dt.delete("k = 0")
    assert [r["id"] for r in rows(dt.toDF())] == [3, 5, 7, 9, 11, 13, 100, 101, 102]
    assert data_files(clone) and all(f.startswith(clone) for f in data_files(clone))
    dt.vacuum(0.0, enforceRetentionDuration=False)
    assert data_files(src) == source_files
    assert len(_at(spark, src)) == 12 and rows(dt.toDF())[-1]["id"] == 102


def test_deep_clone_is_independent_and_delta_rs_reads_it(spark: Any, tmp_path: Path) -> None:
    src = str(tmp_path / "src")
    _source(spark, src)
    expected = _at(spark, src)
    DeltaTable.forPath(spark, src).clone(str(tmp_path / "deep"))
    DeltaTable.forPath(spark, src).clone(str(tmp_path / "shallow"), isShallow=True)
    with spawn_pool() as rs:
        theirs: pa.Table = rs.submit(spark_deltars_worker.read_table, str(tmp_path / "deep")).result(timeout=120)
        assert sorted(theirs.select(["id", "k"]).to_pylist(), key=lambda r: r["id"]) == expected
        # delta-rs (1.6) joins every add.path to the table root, absolute URIs included, so it cannot
        # open a shallow clone; deltalog and Spark's Delta resolve them as the protocol says.
        try:
            shallow: pa.Table | None = rs.submit(
                spark_deltars_worker.read_table, str(tmp_path / "shallow")).result(timeout=120)
        except Exception as exc:  # delta-rs raises its own error types
            assert "file:" in str(exc) and "not found" in str(exc).lower()
            shallow = None
        if shallow is not None:  # a delta-rs that reads it must read it right
            assert sorted(shallow.select(["id", "k"]).to_pylist(), key=lambda r: r["id"]) == expected
    shutil.rmtree(src)
    assert rows(DeltaTable.forPath(spark, str(tmp_path / "deep")).toDF()) == expected


@pytest.mark.parametrize("shallow", [True, False])
def test_clone_of_a_deletion_vector_table(spark: Any, tmp_path: Path, shallow: bool) -> None:
    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    _source(spark, src, **{"delta.enableDeletionVectors": "true"})
    files = deltalog.Table(src).snapshot().add_files()
    assert files.column("deletionVector").null_count < files.num_rows
    dt = DeltaTable.forPath(spark, src).clone(clone, isShallow=shallow)
    assert rows(dt.toDF()) == _at(spark, src)
    dt.delete("id = 4")  # a new DV on top of the cloned one, written into the clone
    assert [r["id"] for r in rows(dt.toDF())] == [3, *range(5, 15)]
    assert [r["id"] for r in _at(spark, src)] == list(range(3, 15))


def test_convert_a_partitioned_parquet_directory_written_by_spark(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StructField, StructType

    raw = str(tmp_path / "raw")
    df = spark.range(20, numPartitions=2).withColumn("k", (F.col("id") % 3).cast("int"))
    df.write.partitionBy("k").parquet(raw)
    expected = rows(spark.read.parquet(raw).select("id", "k"))
    with pytest.raises(InvalidArgumentError, match=r"partitioned by \['k'\].*no partition schema"):
        DeltaTable.convertToDelta(spark, f"parquet.`{raw}`")
    with pytest.raises(InvalidArgumentError, match=r"names \['day'\]"):
        DeltaTable.convertToDelta(spark, f"parquet.`{raw}`", "day date")
    with pytest.raises(InvalidArgumentError, match="form parquet"):
        DeltaTable.convertToDelta(spark, raw)
    assert not os.path.exists(os.path.join(raw, "_delta_log"))
    dt = DeltaTable.convertToDelta(spark, f"parquet.`{raw}`", StructType([StructField("k", IntegerType())]))
    assert rows(dt.toDF()) == expected
    snap = deltalog.Table(raw).snapshot()
    assert snap.partition_columns == ("k",) and all(snap.add_files().column("stats").to_pylist())
    assert dt.history().first().operation == "CONVERT"
    again = DeltaTable.convertToDelta(spark, f"parquet.`{raw}`", "k int")  # already Delta: returned as is
    assert again.path == raw and deltalog.Table(raw).latest_version() == 0
    # Stats skip files on the converted table too.
    assert len(spark.read.format("delta").load(raw).filter("k = 1 AND id > 100").inputFiles()) == 0


def test_convert_refuses_non_parquet_files(spark: Any, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    spark.range(5).write.parquet(str(raw))
    (raw / "README.txt").write_text("not data")
    with pytest.raises(InvalidArgumentError, match=r"not parquet files \(README.txt"):
        DeltaTable.convertToDelta(spark, f"parquet.`{raw}`")
    (raw / "README.txt").unlink()
    (raw / "broken.parquet").write_text("not data")
    with pytest.raises(DeltaError, match=r"broken\.parquet is not a readable parquet file"):
        DeltaTable.convertToDelta(spark, f"PARQUET.`{raw}`")
    assert not (raw / "_delta_log").exists()
