"""Row-level concurrency with compaction (issue "Row-level concurrency", part 3): DML that loses to a
compaction commits when the table tracks rows -- its change is re-expressed on the compacted files through
row ids -- and aborts with a message naming row tracking when it does not. Results checked row for row,
row ids included, and read back by DuckDB."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import deltalog
from deltalog.errors import ConcurrentModificationException
from deltalog.txn.operations import Optimize
from races import winner_commits_first
from readers import duckdb_rows

TRACKED = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "true"}


def _table(path: str, properties: dict[str, str]) -> deltalog.Table:
    for start in range(0, 100, 25):
        ids = list(range(start, start + 25))
        deltalog.write_table(path, pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64())}),
                             mode="append", properties=properties if start == 0 else None)
    return deltalog.Table(path)


def compact(table: deltalog.Table, *, only: set[int] | None = None) -> int:
    """OPTIMIZE as delta-spark commits it: the live rows of the chosen files (``only``: the smallest ids of
    the files to take, default all) moved into one new file with their row ids materialized, every action
    ``dataChange=false``."""
    import json

    from deltalog.data.read import kept_rows, read_file_rows, with_row_tracking_columns
    from deltalog.data.write_files import DataFileWriter
    from deltalog.protocol.schema import StructType
    from deltalog.txn.row_tracking import tracked_fields

    snap = table.snapshot()
    rows = [r for r in snap.add_files().to_pylist()
            if only is None or json.loads(r["stats"])["minValues"]["id"] in only]
    tracked = tracked_fields(snap.protocol, snap.metadata)
    schema = StructType((*snap.schema.fields, *tracked)) if tracked else snap.schema
    writer = DataFileWriter(table.store, schema, snap.partition_columns)
    for row in rows:
        if tracked is None:
            writer.write(read_file_rows(snap, row))
            continue
        data = with_row_tracking_columns(snap, row, read_file_rows(snap, row, apply_deletion_vector=False),
                                         (tracked[0].name, tracked[1].name))
        writer.write(data.filter(pa.array(kept_rows(snap, row, data.num_rows))))
    files = writer.close()
    txn = table.transaction(Optimize())
    txn.read_files(r["path"] for r in rows)
    txn.remove_files(rows, data_change=False)
    for f in files:
        txn.add_file(replace(f.to_add(), dataChange=False))
    txn.keeps_row_ids = tracked is not None
    return txn.commit().version


def _rows(path: str) -> list[tuple[int, int]]:
    t = deltalog.Table(path).snapshot().to_arrow(columns=["id", "v"])
    return sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))


def _row_ids(path: str) -> dict[int, int]:
    """id value -> row id of every live row (materialized value, else baseRowId + index)."""
    from deltalog.data.read import kept_rows, read_file_rows, with_row_tracking_columns
    from deltalog.txn.row_tracking import tracked_fields

    snap = deltalog.Table(path).snapshot()
    tracked = tracked_fields(snap.protocol, snap.metadata)
    assert tracked is not None
    names = (tracked[0].name, tracked[1].name)
    out: dict[int, int] = {}
    for row in snap.add_files().to_pylist():
        data = read_file_rows(snap, row, apply_deletion_vector=False).select(["id"])
        data = with_row_tracking_columns(snap, row, data, names)
        data = data.filter(pa.array(kept_rows(snap, row, data.num_rows)))
        out.update(zip(data.column("id").to_pylist(), data.column(names[0]).to_pylist()))
    return out


def test_dv_delete_losing_to_a_compaction_commits_on_the_compacted_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    table = _table(path, TRACKED)
    assert _row_ids(path) == {i: i for i in range(100)}
    winner_commits_first(monkeypatch, path, compact)
    result = table.delete([("id", "in", [3, 30, 77])], use_deletion_vectors=True)
    monkeypatch.undo()
    assert result.version == 5 and result.num_deleted_rows == 3
    want = [(i, i) for i in range(100) if i not in (3, 30, 77)]
    assert _rows(path) == want and sorted(duckdb_rows(path, ["id", "v"])) == want
    files = deltalog.Table(path).snapshot().add_files().to_pylist()
    assert len(files) == 1 and files[0]["deletionVector"]["cardinality"] == 3
    assert _row_ids(path) == {i: i for i, _ in want}  # every row kept its id
    info = deltalog.Table(path).history(limit=1)[0]
    assert info["operation"] == "DELETE" and info["rowLevelConcurrency"]["reconciledVersions"] == [4]


def test_update_and_copy_on_write_delete_losing_to_a_compaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    path = str(tmp_path / "dv")
    table = _table(path, TRACKED)
    winner_commits_first(monkeypatch, path, compact)
    table.update_rows([("id", "in", [10, 60])], {"v": -1})
    monkeypatch.undo()
    want = sorted((i, -1 if i in (10, 60) else i) for i in range(100))
    assert _rows(path) == want and sorted(duckdb_rows(path, ["id", "v"])) == want
    assert _row_ids(path) == {i: i for i in range(100)}  # updated rows keep their ids too

    path = str(tmp_path / "cow")  # no deletion vectors: the loser rewrote the file, survivors and all
    table = _table(path, {"delta.enableRowTracking": "true"})
    winner_commits_first(monkeypatch, path, lambda t: compact(t, only={0, 25}))
    table.delete([("id", "in", [5, 40, 90])])
    monkeypatch.undo()
    want = [(i, i) for i in range(100) if i not in (5, 40, 90)]
    assert _rows(path) == want and sorted(duckdb_rows(path, ["id", "v"])) == want
    assert _row_ids(path) == {i: i for i, _ in want}


def test_without_row_tracking_the_abort_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    table = _table(path, {"delta.enableDeletionVectors": "true"})
    winner_commits_first(monkeypatch, path, compact)
    with pytest.raises(ConcurrentModificationException,
                       match=r"version 4 \(OPTIMIZE\).*compacted it; with row tracking "
                             r"\(delta.enableRowTracking=true\)"):
        table.delete([("id", "=", 3)], use_deletion_vectors=True)
    monkeypatch.undo()
    assert deltalog.Table(path).latest_version() == 4 and _rows(path) == [(i, i) for i in range(100)]


def test_files_only_read_may_be_compacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A DELETE that read every file (its condition skips none) but changed one: compacting the others
    changed no row it read, with or without row tracking."""
    path = str(tmp_path / "t")
    table = _table(path, {"delta.enableDeletionVectors": "true"})
    winner_commits_first(monkeypatch, path, lambda t: compact(t, only={50, 75}))
    table.delete(pc.equal(pc.field("v"), 3), use_deletion_vectors=True)
    monkeypatch.undo()
    assert _rows(path) == [(i, i) for i in range(100) if i != 3]


def test_off_by_property_or_when_ids_are_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "off")
    table = _table(path, {**TRACKED, "deltalog.rowLevelConcurrency": "false"})
    winner_commits_first(monkeypatch, path, compact)
    with pytest.raises(ConcurrentModificationException, match="version 4"):
        table.delete([("id", "=", 3)], use_deletion_vectors=True)
    monkeypatch.undo()
    assert _rows(path) == [(i, i) for i in range(100)]

    path = str(tmp_path / "same-row")  # the row was deleted by a commit before the compaction: a real conflict
    table = _table(path, TRACKED)

    def lossy(t: deltalog.Table) -> None:
        t.delete([("id", "=", 3)], use_deletion_vectors=True)
        compact(t)

    winner_commits_first(monkeypatch, path, lossy)
    with pytest.raises(ConcurrentModificationException):
        table.delete([("id", "in", [3, 4])], use_deletion_vectors=True)
    monkeypatch.undo()
    assert _rows(path) == [(i, i) for i in range(100) if i != 3]
