"""Row tracking through Spark: appends and MERGE inserts get fresh row ids, and rows that DELETE, UPDATE,
MERGE and OPTIMIZE copy into new files keep their ids (materialized row-id column) and, unless updated,
their commit versions; the materialized columns stay out of reads (Spark, DuckDB)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.txn.row_tracking import COMMIT_VERSION_COLUMN, ROW_ID_COLUMN

pytestmark = pytest.mark.spark


def _row_ids(path: str) -> dict[int, tuple[int, int]]:
    """id -> (row id, row commit version), from the files (materialized value, else the file's defaults)."""
    snap = deltalog.Table(path).snapshot()
    rid, rcv = snap.properties[ROW_ID_COLUMN], snap.properties[COMMIT_VERSION_COLUMN]
    out: dict[int, tuple[int, int]] = {}
    for f in snap.add_files().to_pylist():
        assert f["deletionVector"] is None
        data = pq.read_table(Path(path) / f["path"])
        mat_id = data.column(rid).to_pylist() if rid in data.column_names else [None] * data.num_rows
        mat_cv = data.column(rcv).to_pylist() if rcv in data.column_names else [None] * data.num_rows
        for i, (key, a, b) in enumerate(zip(data.column("id").to_pylist(), mat_id, mat_cv)):
            out[key] = (f["baseRowId"] + i if a is None else a, f["defaultRowCommitVersion"] if b is None else b)
    return out


def test_row_ids_kept_by_dml_and_optimize(spark: Any, tmp_path: Path) -> None:
    from readers import duckdb_rows

    path = str(tmp_path / "r")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v BIGINT) USING DELTA TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
    spark.range(0, 10, 1, 2).selectExpr("id", "id AS v").write.format("delta").mode("append").save(path)
    first = _row_ids(path)
    assert sorted(r for r, _ in first.values()) == list(range(10))
    spark.sql(f"UPDATE {t} SET v = v + 100 WHERE id = 5")
    update = deltalog.Table(path).latest_version()
    after = _row_ids(path)
    assert {k: r for k, (r, _) in after.items()} == {k: r for k, (r, _) in first.items()}
    assert after[5][1] == update and all(after[k][1] == first[k][1] for k in first if k != 5)
    spark.sql(f"DELETE FROM {t} WHERE id = 2")
    assert _row_ids(path) == {k: v for k, v in after.items() if k != 2}
    spark.sql(f"MERGE INTO {t} x USING (SELECT 3L AS id, 33L AS v UNION ALL SELECT 42L, 42L) s ON x.id = s.id "
              "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    merge = deltalog.Table(path).latest_version()
    merged = _row_ids(path)
    assert merged[3] == (after[3][0], merge) and merged[42][0] >= 10 and merged[42][1] == merge
    assert all(merged[k] == after[k] for k in after if k not in (2, 3))
    from deltalog.spark import DeltaTable

    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert deltalog.Table(path).snapshot().num_files() == 1
    assert _row_ids(path) == merged
    ranges = sorted((f["baseRowId"], f["baseRowId"] + json.loads(f["stats"])["numRecords"])
                    for f in deltalog.Table(path).snapshot().add_files().to_pylist())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    df = spark.read.format("delta").load(path)
    assert df.columns == ["id", "v"]
    want = sorted([(k, k) for k in range(10) if k not in (2, 3, 5)] + [(3, 33), (5, 105), (42, 42)])
    assert sorted(tuple(r) for r in df.collect()) == want == duckdb_rows(path, ["id", "v"])


def test_row_tracking_with_deletion_vectors(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "r")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING DELTA TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
              "'delta.enableDeletionVectors' = 'true')")
    spark.range(0, 10, 1, 2).write.format("delta").mode("append").save(path)
    spark.sql(f"MERGE INTO {t} x USING (SELECT 20L AS id) s ON x.id = s.id WHEN NOT MATCHED THEN INSERT *")
    spark.sql(f"DELETE FROM {t} WHERE id = 3")
    spark.sql(f"UPDATE {t} SET id = id + 100 WHERE id = 5")  # the new image keeps row id 5
    files = deltalog.Table(path).snapshot().add_files().to_pylist()
    rid = deltalog.Table(path).snapshot().properties[ROW_ID_COLUMN]
    moved = [f for f in files if f["deletionVector"] is None and f["baseRowId"] > 10]
    assert len(moved) == 1
    data = pq.read_table(Path(path) / moved[0]["path"])
    assert data.column("id").to_pylist() == [105] and data.column(rid).to_pylist() == [5]
    rows = sorted(r.id for r in spark.read.format("delta").load(path).collect())
    assert rows == sorted([i for i in range(10) if i not in (3, 5)] + [20, 105])


def test_row_ids_in_spark_reads(spark: Any, tmp_path: Path) -> None:
    """``_metadata.row_id`` / ``row_commit_version`` (and the file fields) as delta-spark exposes them, in
    ``select`` / ``selectExpr`` / ``withColumn`` / ``filter``, after other steps and with deletion vectors;
    the values are the ones the log and the files give (``_row_ids``)."""
    from pyspark.sql import functions as F

    path = str(tmp_path / "r")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v BIGINT) USING DELTA TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
              "'delta.enableDeletionVectors' = 'true')")
    spark.range(0, 10, 1, 2).selectExpr("id", "id AS v").write.format("delta").mode("append").save(path)
    spark.sql(f"UPDATE {t} SET v = 100 WHERE id = 4")
    spark.sql(f"DELETE FROM {t} WHERE id = 7")
    truth = _row_ids_live(path)
    df = spark.read.format("delta").load(path)
    assert df.columns == ["id", "v"]
    got = {r.id: (r.row_id, r.row_commit_version)
           for r in df.select("id", "_metadata.row_id", F.col("_metadata.row_commit_version")).collect()}
    assert got == truth and len(got) == 9
    assert {r[0]: r[1] for r in df.selectExpr("id", "_metadata.row_id + 1000").collect()} == {
        k: v[0] + 1000 for k, v in truth.items()}
    rid = df.withColumn("rid", F.col("_metadata.row_id"))
    assert rid.columns == ["id", "v", "rid"]
    assert {r.id: r.rid for r in rid.collect()} == {k: v[0] for k, v in truth.items()}
    four = truth[4][0]
    hit = df.filter(f"_metadata.row_id = {four}")
    assert hit.columns == ["id", "v"] and [tuple(r) for r in hit.collect()] == [(4, 100)]
    later = df.select("id").filter("id > 2").withColumn("x", F.lit(1)).select("*", "_metadata")
    assert later.columns == ["id", "x", "_metadata"]
    row = next(r for r in later.collect() if r.id == 4)
    assert (row._metadata.row_id, row._metadata.row_commit_version) == truth[4]
    assert row._metadata.file_path.endswith(".parquet") and row._metadata.file_size > 0
    assert {r.id for r in later.collect()} == {k for k in truth if k > 2}
    # the loaded frame's own columns still resolve on frames built with the row ids (df.id, not MISSING_ATTRIBUTES)
    assert [tuple(r) for r in df.select("id", "_metadata.row_id").filter(df.id == 4).select(df.id, "row_id")
            .collect()] == [(4, four)]
    assert [r.id for r in hit.select(df.id).collect()] == [4]
    assert [tuple(r) for r in rid.filter(df.v == 100).select(df.id, rid.rid).collect()] == [(4, four)]
    # SQL, as delta-spark users write it: `*` stays the table's columns
    sql = spark.sql(f"SELECT *, _metadata.row_id, _metadata.row_commit_version FROM {t} "
                    f"WHERE _metadata.row_id = {four}")
    assert sql.columns == ["id", "v", "row_id", "row_commit_version"]
    assert [tuple(r) for r in sql.collect()] == [(4, 100, *truth[4])]
    assert spark.sql(f"SELECT count(*) FROM {t} x WHERE x._metadata.row_commit_version = {truth[4][1]}").first()[0] == 1
    assert spark.sql(f"SELECT x.* FROM {t} x WHERE _metadata.row_id < 3").columns == ["id", "v"]
    # tables without row tracking keep Spark's own _metadata
    plain = str(tmp_path / "p")
    spark.range(3).write.format("delta").save(plain)
    pdf = spark.read.format("delta").load(plain)
    assert "row_index" in pdf.select("_metadata.*").columns
    with pytest.raises(Exception, match="row_id"):
        pdf.select("_metadata.row_id").collect()


def _row_ids_live(path: str) -> dict[int, tuple[int, int]]:
    """id -> (row id, row commit version) of the live rows (deletion vectors applied), from files and log."""
    from deltalog.data.read import kept_rows

    snap = deltalog.Table(path).snapshot()
    rid, rcv = snap.properties[ROW_ID_COLUMN], snap.properties[COMMIT_VERSION_COLUMN]
    out: dict[int, tuple[int, int]] = {}
    for f in snap.add_files().to_pylist():
        data = pq.read_table(Path(path) / f["path"])
        keep = kept_rows(snap, f, data.num_rows)
        mat_id = data.column(rid).to_pylist() if rid in data.column_names else [None] * data.num_rows
        mat_cv = data.column(rcv).to_pylist() if rcv in data.column_names else [None] * data.num_rows
        for i, (key, a, b) in enumerate(zip(data.column("id").to_pylist(), mat_id, mat_cv)):
            if keep[i]:
                out[key] = (f["baseRowId"] + i if a is None else a,
                            f["defaultRowCommitVersion"] if b is None else b)
    return out


def test_enabling_row_tracking_on_a_table_with_files_backfills_ids(spark: Any, tmp_path: Path) -> None:
    """``ALTER TABLE ... SET TBLPROPERTIES ('delta.enableRowTracking' = 'true')`` on a table with files: its
    files get ids first (delta-spark's commits), and the ids stay with their rows through an UPDATE."""
    path = str(tmp_path / "r")
    t = f"delta.`{path}`"
    spark.range(0, 10, 1, 2).selectExpr("id", "id AS v").write.format("delta").save(path)
    spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
    history = spark.sql(f"DESCRIBE HISTORY {t}").orderBy("version").collect()
    assert [h.operation for h in history] == ["WRITE", "UPGRADE PROTOCOL", "ROW TRACKING BACKFILL", "SET TBLPROPERTIES"]
    assert history[2].operationParameters == {"batchId": "0"}

    def ids() -> dict[int, int]:
        read = spark.read.format("delta").load(path).select("id", "_metadata.row_id")
        return {r.id: r.row_id for r in read.collect()}

    first = ids()
    assert sorted(first.values()) == list(range(10)) and _row_ids(path) == {k: (v, 2) for k, v in first.items()}
    spark.sql(f"UPDATE {t} SET v = -1 WHERE id IN (3, 8)")
    assert ids() == first
