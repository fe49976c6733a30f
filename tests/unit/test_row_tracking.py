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


def test_enabling_on_a_table_with_files_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0]}))
    with pytest.raises(UnsupportedFeatureError, match="backfill"):
        deltalog.Table(path).set_properties({"delta.enableRowTracking": "true"})
    assert deltalog.Table(path).latest_version() == 0
