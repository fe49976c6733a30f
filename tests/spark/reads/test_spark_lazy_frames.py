"""A deletion-vector read's Spark plan is built when first needed (:mod:`deltalog.spark.reads.lazy_frames`): a
``count()`` from the log builds none, everything else sees the same rows as an eager read would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.spark.reads.lazy_frames import is_lazy

pytestmark = pytest.mark.spark


def _dv_table(path: str) -> deltalog.Table:
    for i, ids in enumerate([range(0, 100), range(100, 250)]):
        deltalog.write_table(path, pa.table({"id": pa.array(list(ids), pa.int64())}), mode="append",
                             properties={"delta.enableDeletionVectors": "true"} if i == 0 else None)
    table = deltalog.Table(path)
    table.delete([("id", "in", [3, 120, 249])], use_deletion_vectors=True)
    assert all(table.snapshot().add_files().column("deletionVector").to_pylist())
    return table


def test_count_from_the_log_builds_no_plan(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _dv_table(path)
    df = spark.read.format("delta").load(path)
    assert is_lazy(df)
    assert df.count() == 247 and is_lazy(df)  # numRecords less the deletion vectors' cardinalities
    assert df.columns == ["id"] and not is_lazy(df)  # the schema needs the plan
    assert sorted(r.id for r in df.collect()) == [i for i in range(250) if i not in (3, 120, 249)]
    deltalog.write_table(str(tmp_path / "plain"), pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert not is_lazy(spark.read.format("delta").load(str(tmp_path / "plain")))  # nothing to defer


def test_lazy_reads_join_and_filter_as_eager_ones(spark: Any, tmp_path: Path) -> None:
    """Two loads of one table are two relations (a self-join condition means what it says), filters prune,
    and column references of the lazy frame resolve."""
    path = str(tmp_path / "t")
    _dv_table(path)
    a = spark.read.format("delta").load(path)
    b = spark.read.format("delta").load(path)
    assert is_lazy(a) and is_lazy(b)
    joined = a.join(b, a.id == b.id + 1)
    assert joined.count() == 244  # pairs (i, i-1) with both live: 249 pairs less those touching 3, 120, 249
    assert sorted(r.id for r in a.filter(a.id > 245).collect()) == [246, 247, 248]
    assert sorted(r.id for r in b.where("id < 5").select(b["id"]).collect()) == [0, 1, 2, 4]


def test_a_missing_deletion_vector_fails_when_the_query_runs(spark: Any, tmp_path: Path) -> None:
    """As with delta-spark, whose reads open deletion vectors when a query runs: ``load()`` succeeds, the first
    query names the file whose deletion vector cannot be read."""
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": pa.array(list(range(5000)), pa.int64())}),
                         properties={"delta.enableDeletionVectors": "true"})
    DeltaTable.forPath(spark, path).delete("id % 7 = 3")
    stored = list(Path(path).rglob("*.bin"))
    assert stored, "the DELETE stored its deletion vector in a file"
    for dv in stored:
        dv.unlink()
    df = spark.read.format("delta").load(path)
    with pytest.raises(Exception, match=r"deletion vector (file )?of .*parquet cannot be read"):
        df.collect()


def test_a_filter_on_a_lazy_read_plans_only_the_files_it_keeps(spark: Any, tmp_path: Path) -> None:
    """A filter that prunes files re-plans the read over the files it keeps: the whole table's plan (every
    deletion vector decoded and joined) is never built, and the rows are the plain filter's."""
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    _dv_table(path)
    df = spark.read.format("delta").load(path)
    kept = df.filter(F.col("id") >= 100)
    assert is_lazy(df) and len(kept.inputFiles()) == 1
    assert sorted(r.id for r in kept.collect()) == [i for i in range(100, 250) if i not in (120, 249)]
    assert is_lazy(df)
    both = df.where("id < 10 OR id > 240")  # no conjunct prunes: Spark's plain filter on the whole read
    assert not is_lazy(df) and len(both.inputFiles()) == 2
    assert sorted(r.id for r in both.collect()) == [0, 1, 2, 4, 5, 6, 7, 8, 9, *range(241, 249)]
    assert kept.join(df, "id").count() == 148
    assert sorted(r.id for r in df.filter(df.id > 245).collect()) == [246, 247, 248]
