"""Row-level concurrency through Spark: an UPDATE and a DELETE with deletion vectors that change
different rows of one file both commit (the losing Spark statement is rebased onto the winner's
deletion vector); one row changed by both still conflicts with a named exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import deltalog
from races import winner_commits_first

pytestmark = pytest.mark.spark


def test_update_and_delete_of_other_rows_both_commit(spark: Any, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.spark.exceptions import ConcurrentAppendException

    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING DELTA "
              "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.range(0, 100, 1, 1).selectExpr("id", "'a' AS v").write.format("delta").mode("append").save(path)
    winner_commits_first(monkeypatch, path, lambda table: table.delete([("id", "<", 10)]))
    spark.sql(f"UPDATE {t} SET v = 'b' WHERE id >= 90")
    monkeypatch.undo()
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(i, "b" if i >= 90 else "a") for i in range(10, 100)]
    assert deltalog.Table(path).latest_version() == 3
    # the winner's UPDATE adds a file of rows 10..19: the loser's predicate cannot match it (min/max stats)
    from deltalog.spark import DeltaTable

    winner_commits_first(monkeypatch, path,
                         lambda _: DeltaTable.forPath(spark, path).update("id < 20", {"v": "'c'"}))
    spark.sql(f"DELETE FROM {t} WHERE id >= 95")
    monkeypatch.undo()
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(i, "c" if i < 20 else "b" if i >= 90 else "a") for i in range(10, 95)]
    winner_commits_first(monkeypatch, path, lambda table: table.delete([("id", "=", 50)]))
    with pytest.raises(ConcurrentAppendException, match="version 6"):
        spark.sql(f"DELETE FROM {t} WHERE id BETWEEN 45 AND 55")  # row 50 deleted by both
    monkeypatch.undo()
    assert spark.read.format("delta").load(path).count() == 84


def test_optimize_that_loses_to_a_delete_plans_again(spark: Any, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "o")
    spark.range(0, 100, 1, 4).write.format("delta").save(path)
    # the DELETE rewrites a file OPTIMIZE read
    winner_commits_first(monkeypatch, path, lambda table: table.delete([("id", "<", 10)]))
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    monkeypatch.undo()
    table = deltalog.Table(path)
    assert [h["operation"] for h in table.history(limit=2)] == ["OPTIMIZE", "DELETE"]
    assert table.snapshot().num_files() == 1
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == list(range(10, 100))
    written = {p.name for p in Path(path).glob("*.parquet")}
    assert len(written) == 4 + 1 + 1  # 4 originals, the delete's rewrite, one compacted file: the lost one is gone


def test_dml_losing_to_optimize_is_restated_through_row_ids(spark: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """With row tracking, a Spark DELETE and MERGE that lose to a Spark OPTIMIZE commit on the compacted
    file (the kernel tests check the row ids); DuckDB reads the same rows."""
    from deltalog.spark import DeltaTable
    from deltalog.spark.layout.optimize import optimize
    from readers import duckdb_rows

    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING) USING DELTA TBLPROPERTIES "
              "('delta.enableDeletionVectors' = 'true', 'delta.enableRowTracking' = 'true')")
    for start in range(0, 40, 10):
        rows = spark.range(start, start + 10, 1, 1).selectExpr("id", "'a' AS v")
        rows.write.format("delta").mode("append").save(path)
    winner_commits_first(monkeypatch, path, lambda _: optimize(spark, path))
    spark.sql(f"DELETE FROM {t} WHERE id IN (3, 17, 38)")
    monkeypatch.undo()
    table = deltalog.Table(path)
    assert [h["operation"] for h in table.history(limit=2)] == ["DELETE", "OPTIMIZE"]
    assert len(table.snapshot().add_files()) == 1
    source = spark.createDataFrame([(5, "m"), (100, "new")], "id BIGINT, v STRING")
    # this OPTIMIZE purges the deletion vector: a new file
    winner_commits_first(monkeypatch, path, lambda _: optimize(spark, path))
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    monkeypatch.undo()
    want = sorted([(i, "m" if i == 5 else "a") for i in range(40) if i not in (3, 17, 38)] + [(100, "new")])
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == want
    assert sorted(duckdb_rows(path, ["id", "v"])) == want
