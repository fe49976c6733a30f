"""Spark scans planned from the Delta log (:mod:`deltalog.spark.reads.log_index`): no file-system status or list
call per data file (counted by Spark's own ``HiveCatalogMetrics.filesDiscovered``), the same rows as the
kernel, Hive partition values, deletion vectors and DML included; the setting that turns it off."""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import InvalidArgumentError
from deltalog.spark import DeltaTable, read
from deltalog.spark.reads.log_index import FILE_INDEX_CONF

pytestmark = pytest.mark.spark


def _discovered(spark: Any, fn: Callable[[], Any]) -> tuple[int, Any]:
    """Files Spark found by listing or status calls while ``fn`` ran, and its result."""
    counter = spark.sparkContext._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics.METRIC_FILES_DISCOVERED()
    before = counter.getCount()
    out = fn()
    return int(counter.getCount() - before), out


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def _kernel_rows(path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    t = deltalog.Table(path).snapshot().to_arrow().select(columns)
    return sorted(zip(*[t.column(c).to_pylist() for c in columns]))


def _append(path: str, ids: list[int], **kwargs: Any) -> None:
    data = pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array([f"k{i % 3}" for i in ids], pa.string())})
    deltalog.write_table(path, data, mode="append", **kwargs)


def _scan_folders() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "deltalog-scan-*")))


def test_unpartitioned_scan_makes_no_status_call_per_file(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    for start in range(0, 60, 10):
        _append(path, list(range(start, start + 10)))
    folders = _scan_folders()
    found, df = _discovered(spark, lambda: read(spark, path))
    assert found == 0
    assert _scan_folders() == folders  # the planning folder is gone once the relation exists ...
    assert _rows(df) == _kernel_rows(path, ["id", "k"])  # ... and the frame keeps working
    assert df.count() == 60 and df.filter("id < 5").count() == 5
    assert len(df.inputFiles()) == 6
    found, _ = _discovered(spark, lambda: df.count())
    assert found == 0


def test_hive_partitions_and_deletion_vectors_from_the_log(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    props = {"delta.enableDeletionVectors": "true"}
    _append(path, list(range(0, 30)), partition_by=["k"], properties=props)
    _append(path, list(range(30, 60)))
    deltalog.Table(path).delete([("id", "in", [1, 2, 31, 44])], use_deletion_vectors=True)
    found, df = _discovered(spark, lambda: read(spark, path))
    assert found == 0
    assert _rows(df) == _kernel_rows(path, ["id", "k"])
    assert sorted(r["k"] for r in df.groupBy("k").count().collect()) == ["k0", "k1", "k2"]
    assert df.filter("k = 'k1'").count() == len([i for i in range(60) if i % 3 == 1 and i not in (1, 31)])


def test_a_table_below_a_key_value_folder_keeps_its_partition_values(spark: Any, tmp_path: Path) -> None:
    """Spark's partition discovery would read ``day=1`` above the table as a column: such tables are
    read through explicit paths (still the right rows and columns)."""
    path = str(tmp_path / "day=1" / "t")
    _append(path, list(range(12)), partition_by=["k"])
    df = read(spark, path)
    assert df.columns == ["id", "k"]
    assert _rows(df) == _kernel_rows(path, ["id", "k"])


def test_dml_plans_from_the_log(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    for start in range(0, 40, 10):
        _append(path, list(range(start, start + 10)))
    found, _ = _discovered(spark, lambda: DeltaTable.forPath(spark, path).delete("id % 10 = 3"))
    assert found == 0
    assert _rows(read(spark, path).select("id")) == [(i,) for i in range(40) if i % 10 != 3]


def test_the_setting_hands_spark_explicit_paths(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    for start in range(0, 30, 10):
        _append(path, list(range(start, start + 10)))
    spark.conf.set(FILE_INDEX_CONF, "paths")
    try:
        found, df = _discovered(spark, lambda: read(spark, path))
        assert found == 3
        assert _rows(df) == _kernel_rows(path, ["id", "k"])
        spark.conf.set(FILE_INDEX_CONF, "sometimes")
        with pytest.raises(InvalidArgumentError, match=r"spark\.deltalog\.scan\.fileIndex='sometimes'.*log or paths"):
            read(spark, path)
    finally:
        spark.conf.unset(FILE_INDEX_CONF)


def test_a_missing_data_file_fails_the_scan_naming_it(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _append(path, [1, 2])
    _append(path, [3, 4])
    gone = deltalog.Table(path).snapshot().add_files().column("path").to_pylist()[-1]
    os.remove(os.path.join(path, gone))
    df = read(spark, path)  # planning does not touch the data files
    with pytest.raises(Exception, match=r"FILE_NOT_EXIST|does not exist") as err:
        df.collect()
    assert gone in str(err.value)
