"""Row tracking (``rowTracking``) in the kernel's commits: fresh ``baseRowId`` ranges above the
``delta.rowTracking`` high-water mark and ``defaultRowCommitVersion`` on every added file; a commit that
lost the race is rebased above the winner's mark (no conflict, no overlapping ids); a file re-added with a
deletion vector keeps its ids; rows a copy-on-write DELETE or a DV purge copies keep their ids and commit
versions (materialized columns); moves where they cannot be kept (column mapping ``id`` mode) are refused
with nothing committed; enabling on a table with files is refused. DuckDB reads the tables."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import UnsupportedFeatureError
from deltalog.protocol.features import writer_features
from readers import duckdb_rows

PROPS = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "true"}


def _ids(path: str) -> list[tuple[int, int, int]]:
    files = deltalog.Table(path).snapshot().add_files().select(["baseRowId", "defaultRowCommitVersion", "stats"])
    return sorted((r["baseRowId"], r["defaultRowCommitVersion"], json.loads(r["stats"])["numRecords"])
                  for r in files.to_pylist())


def _mark(path: str) -> int:
    return int(json.loads(deltalog.Table(path).snapshot().domains["delta.rowTracking"])["rowIdHighWaterMark"])


def test_fresh_row_ids_and_deletion_vectors(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1, 2, 3]}), properties=PROPS)
    snap = deltalog.Table(path).snapshot()
    assert {"rowTracking", "domainMetadata"} <= writer_features(snap.protocol)
    assert snap.properties["delta.rowTracking.materializedRowIdColumnName"].startswith("_row-id-col-")
    deltalog.write_table(path, pa.table({"id": [4, 5]}), mode="append")
    assert _ids(path) == [(0, 0, 3), (3, 1, 2)] and _mark(path) == 4
    deltalog.Table(path).delete([("id", "=", 2)])  # a deletion vector: the file keeps its ids
    assert _ids(path) == [(0, 0, 3), (3, 1, 2)] and _mark(path) == 4
    assert duckdb_rows(path, ["id"]) == [(1,), (3,), (4,), (5,)]
    version = deltalog.Table(path).latest_version()
    deltalog.Table(path).delete([("id", "=", 4)], use_deletion_vectors=False)  # copy-on-write moves row 5
    assert _row_ids(path) == {1: (0, 0), 3: (2, 0), 5: (4, 1)}  # (the file of 1..3 keeps its DV)
    deltalog.Table(path).drop_feature("deletionVectors")  # the purge moves 1 and 3: ids kept too
    assert _row_ids(path) == {1: (0, 0), 3: (2, 0), 5: (4, 1)}
    assert duckdb_rows(path, ["id"]) == [(1,), (3,), (5,)]
    deltalog.write_table(path, pa.table({"id": [9]}), mode="overwrite")  # an overwrite moves nothing
    assert _ids(path)[-1][1] > version


def test_moves_refused_without_materialized_columns(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1, 2]}), properties={
        "delta.enableRowTracking": "true", "delta.columnMapping.mode": "id"})
    table = deltalog.Table(path)
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError, match=r"without keeping their row ids.*'id' mode"):
        table.delete([("id", "=", 1)])
    assert table.latest_version() == version


def _row_ids(path: str) -> dict[int, tuple[int, int]]:
    """id -> (row id, row commit version) of the live rows, from the files (see the Spark test)."""
    import pyarrow.parquet as pq

    snap = deltalog.Table(path).snapshot()
    rid = snap.properties["delta.rowTracking.materializedRowIdColumnName"]
    rcv = snap.properties["delta.rowTracking.materializedRowCommitVersionColumnName"]
    out = {}
    for f in snap.add_files().to_pylist():
        data = pq.read_table(Path(path) / f["path"])
        keep = [True] * data.num_rows
        if f["deletionVector"]:
            from deltalog.data.read import kept_rows

            keep = list(kept_rows(snap, f, data.num_rows))
        ids = data.column(rid).to_pylist() if rid in data.column_names else [None] * data.num_rows
        cvs = data.column(rcv).to_pylist() if rcv in data.column_names else [None] * data.num_rows
        for i, (k, a, b) in enumerate(zip(data.column("id").to_pylist(), ids, cvs)):
            if keep[i]:
                out[k] = (f["baseRowId"] + i if a is None else a, f["defaultRowCommitVersion"] if b is None else b)
    return out


def test_racing_append_is_rebased(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.txn.transaction import Transaction

    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0]}), properties=PROPS)
    commit = Transaction.commit
    raced: list[int] = []

    def other_first(self: Transaction, *args: object, **kwargs: object) -> object:
        if not raced:
            raced.append(1)
            deltalog.write_table(path, pa.table({"id": [10, 11, 12]}), mode="append")
        return commit(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Transaction, "commit", other_first)
    result = deltalog.write_table(path, pa.table({"id": [20, 21]}), mode="append")
    monkeypatch.undo()
    assert result.version == 2 and result.commit is not None and result.commit.winning_versions == (1,)
    assert _ids(path) == [(0, 0, 1), (1, 1, 3), (4, 2, 2)] and _mark(path) == 5  # above the winner's mark


def _add_without_stats(path: str, rows: pa.Table) -> None:
    """Append a file whose add has no statistics (as some writers leave it)."""
    import pyarrow.parquet as pq

    from deltalog.protocol.actions import Add
    from deltalog.txn.operations import Write
    from deltalog.txn.transaction import start_transaction

    name = "part-nostats.parquet"
    pq.write_table(rows, Path(path) / name)
    txn = start_transaction(deltalog.Table(path), Write(mode="Append"))
    txn.add_file(Add(path=name, partitionValues={}, size=(Path(path) / name).stat().st_size,
                     modificationTime=0, dataChange=True, stats=None))
    txn.commit()


def test_enabling_on_a_table_with_files_backfills_their_row_ids(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.commands import row_tracking_backfill

    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0, 1, 2]}), properties={"delta.enableDeletionVectors": "true"})
    deltalog.write_table(path, pa.table({"id": [3, 4]}), mode="append")
    deltalog.Table(path).delete("id = 1")  # a deletion vector: the file keeps its three stored rows
    _add_without_stats(path, pa.table({"id": pa.array([5, 6, 7, 8], pa.int64())}))
    before = sorted(deltalog.Table(path).snapshot().to_arrow().column("id").to_pylist())
    dv = {r["path"]: r["deletionVector"] for r in deltalog.Table(path).snapshot().add_files().to_pylist()}
    monkeypatch.setattr(row_tracking_backfill, "FILES_PER_COMMIT", 2)

    result = deltalog.Table(path).set_properties({"delta.enableRowTracking": "true"})
    history = deltalog.Table(path).history()
    assert [h["operation"] for h in history[:4]][::-1] == [
        "UPGRADE PROTOCOL", "ROW TRACKING BACKFILL", "ROW TRACKING BACKFILL", "SET TBLPROPERTIES"]
    assert [h["operationParameters"].get("batchId") for h in history[1:3]] == ["1", "0"]
    assert result.version == 7 and result.operation == "SET TBLPROPERTIES"
    snap = deltalog.Table(path).snapshot()
    assert {"rowTracking", "domainMetadata"} <= set(writer_features(snap.protocol))
    assert snap.properties["delta.enableRowTracking"] == "true"
    assert snap.properties["delta.rowTracking.materializedRowIdColumnName"].startswith("_row-id-col-")
    ids = _ids(path)  # (baseRowId, defaultRowCommitVersion, numRecords): ranges side by side, from 0
    assert [b for b, _, _ in ids] == [0, ids[0][2], ids[0][2] + ids[1][2]] and _mark(path) == 8
    assert sorted(n for _, _, n in ids) == [2, 3, 4]  # the stats-less file counted from its footer
    assert sorted(v for _, v, _ in ids) == [5, 5, 6]  # the version of the backfill commit that gave them
    assert {r["path"]: r["deletionVector"] for r in snap.add_files().to_pylist()} == dv
    assert sorted(snap.to_arrow().column("id").to_pylist()) == before == [r[0] for r in duckdb_rows(path, ["id"])]
    # ids stay with their rows from now on: a copy-on-write delete moves rows 3 and 5..8 with theirs
    given = {k: v[0] for k, v in _row_ids(path).items()}
    assert len(set(given.values())) == len(given) == 8 and set(given.values()) < set(range(9))
    deltalog.Table(path).set_properties({"delta.enableDeletionVectors": "false"})
    deltalog.Table(path).delete("id = 4 OR id = 6")
    assert {k: v[0] for k, v in _row_ids(path).items()} == {k: v for k, v in given.items() if k not in (4, 6)}


def test_backfill_does_not_bring_back_a_file_removed_meanwhile(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.txn.transaction import Transaction

    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0, 1]}))
    deltalog.write_table(path, pa.table({"id": [2, 3]}), mode="append")
    commit = Transaction.commit

    def delete_first(self: Transaction, *args: object, **kwargs: object) -> object:
        if self.operation.name == "ROW TRACKING BACKFILL":
            monkeypatch.setattr(Transaction, "commit", commit)
            deltalog.Table(path).delete("id < 2")  # removes the first file under the backfill's feet
        return commit(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Transaction, "commit", delete_first)
    deltalog.Table(path).set_properties({"delta.enableRowTracking": "true"})
    monkeypatch.undo()
    ops = [h["operation"] for h in deltalog.Table(path).history()][::-1]
    assert ops == ["WRITE", "WRITE", "UPGRADE PROTOCOL", "DELETE", "ROW TRACKING BACKFILL", "SET TBLPROPERTIES"]
    assert sorted(deltalog.Table(path).snapshot().to_arrow().column("id").to_pylist()) == [2, 3]
    assert [(b, n) for b, _, n in _ids(path)] == [(0, 2)]


def test_enabling_without_the_backfill_is_refused(tmp_path: Path) -> None:
    from dataclasses import replace

    from deltalog.txn.operations import SetTableProperties
    from deltalog.txn.transaction import start_transaction

    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0]}))
    snap = deltalog.Table(path).snapshot()
    txn = start_transaction(deltalog.Table(path), SetTableProperties(properties={"delta.enableRowTracking": "true"}))
    txn.update_metadata(replace(snap.metadata, configuration={"delta.enableRowTracking": "true"}))
    with pytest.raises(UnsupportedFeatureError, match="needs a backfill"):
        txn.commit()
    assert deltalog.Table(path).latest_version() == 0
