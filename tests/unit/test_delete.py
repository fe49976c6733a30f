"""Kernel DELETE: copy-on-write and deletion vectors, checked against the same delete done by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import deltalog
from deltalog.commands.delete import delete
from deltalog.errors import InvalidArgumentError


def _data(start: int, n: int, part: str) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "part": pa.array([part] * n),
        "v": pa.array([None if i % 7 == 0 else i * 0.5 for i in range(start, start + n)], pa.float64()),
    })


def _make(tmp_path: Path, *, dvs: bool) -> deltalog.Table:
    path = tmp_path / "t"
    props = {"delta.enableDeletionVectors": "true"} if dvs else None
    deltalog.write_table(path, _data(0, 100, "a"), mode="append", partition_by=["part"], properties=props)
    deltalog.write_table(path, _data(100, 100, "b"), mode="append")
    deltalog.write_table(path, _data(200, 100, "a"), mode="append")
    return deltalog.Table(path)


def _expected(before: pa.Table, keep: pa.ChunkedArray) -> list[int]:
    return sorted(before.filter(pc.fill_null(keep, True)).column("id").to_pylist())


@pytest.mark.parametrize("dvs", [False, True])
def test_delete_matches_the_same_filter_done_by_hand(tmp_path: Path, dvs: bool) -> None:
    table = _make(tmp_path, dvs=dvs)
    before = table.snapshot().to_arrow()
    files_before = table.snapshot().num_files()
    result = table.delete([("id", ">=", 150), ("id", "<", 260)])
    assert result.used_deletion_vectors is dvs
    assert result.num_deleted_rows == 110
    want = _expected(before, pc.invert(pc.and_(pc.greater_equal(before["id"], 150), pc.less(before["id"], 260))))
    snap = table.snapshot()
    assert sorted(snap.to_arrow().column("id").to_pylist()) == want
    assert table.history(limit=1)[0]["operation"] == "DELETE"
    metrics = table.history(limit=1)[0]["operationMetrics"]
    assert metrics["numDeletedRows"] == "110"
    if dvs:
        # files keep their data; the two touched files carry deletion vectors now
        assert snap.num_files() == files_before
        dv_rows = [r for r in snap.add_files().to_pylist() if r["deletionVector"]]
        assert len(dv_rows) == 2 and result.num_deletion_vectors_added == 2
        assert all(json.loads(r["stats"])["tightBounds"] is False for r in dv_rows)
        # a contiguous range of rows is a small bitmap: stored inline in the log, no DV file
        assert {r["deletionVector"]["storageType"] for r in dv_rows} == {"i"}
        assert not list((Path(table.location)).glob("deletion_vector_*.bin"))
    else:
        assert result.num_copied_rows == 50 + 40 and result.num_added_files == 2


def test_second_delete_merges_into_the_existing_deletion_vector(tmp_path: Path) -> None:
    table = _make(tmp_path, dvs=True)
    delete(table, [("id", "<", 10)])
    delete(table, pc.field("id") >= pc.scalar(95))  # an expression predicate, same file again
    rows = table.snapshot().add_files().to_pylist()
    first = next(r for r in rows if r["deletionVector"] and r["deletionVector"]["cardinality"] == 15)
    assert first is not None
    ids = sorted(table.snapshot().to_arrow().column("id").to_pylist())
    assert ids == [i for i in range(300) if not (i < 10 or i >= 95)]
    # time travel still sees the rows the deletes removed
    assert table.snapshot(version=2).to_arrow().num_rows == 300


def test_partition_predicate_drops_whole_files_and_null_rows_never_match(tmp_path: Path) -> None:
    table = _make(tmp_path, dvs=False)
    result = delete(table, [("part", "=", "a")])
    assert result.num_removed_files == 2 and result.num_deleted_rows == 200 and result.num_added_files == 0
    assert set(table.snapshot().to_arrow().column("part").to_pylist()) == {"b"}
    result = delete(table, [("v", ">", -1.0)])  # rows with a null v stay
    assert sorted(table.snapshot().to_arrow().column("id").to_pylist()) == [i for i in range(100, 200) if i % 7 == 0]
    assert result.num_deleted_rows == 100 - len([i for i in range(100, 200) if i % 7 == 0])


def test_no_match_commits_nothing_and_delete_all(tmp_path: Path) -> None:
    table = _make(tmp_path, dvs=True)
    version = table.snapshot().version
    assert delete(table, [("id", "=", 10_000)]).version is None
    assert table.snapshot().version == version
    result = delete(table)
    assert result.num_deleted_rows == 300 and table.snapshot().to_arrow().num_rows == 0


def test_bad_input(tmp_path: Path) -> None:
    table = _make(tmp_path, dvs=False)
    with pytest.raises(InvalidArgumentError, match="deletion vectors are not enabled"):
        delete(table, [("id", "=", 1)], use_deletion_vectors=True)
    with pytest.raises(InvalidArgumentError, match="filter column 'nope'"):
        delete(table, [("nope", "=", 1)])
    # not a filter at all: the filter's own error (it was an IndexError while naming the operation)
    for bad in ([("id", "=")], 5):
        with pytest.raises(InvalidArgumentError, match=r"filter must be a SQL|is not \(column, op, value\)"):
            delete(table, bad)
        with pytest.raises(InvalidArgumentError, match=r"filter must be a SQL|is not \(column, op, value\)"):
            table.update_rows(bad, {"id": 0})
    table.set_properties({"delta.appendOnly": "true"})
    version = table.snapshot().version
    with pytest.raises(deltalog.DeltaError, match="append-only"):
        delete(table, [("id", "=", 1)])
    assert table.snapshot().version == version


def test_scattered_deletes_go_to_a_deletion_vector_file(tmp_path: Path) -> None:
    table = _make(tmp_path, dvs=True)
    scattered = list(range(0, 100, 2))  # 50 rows of one file, no runs: too big to inline
    table.delete([("id", "in", scattered)])
    dv_rows = [r for r in table.snapshot().add_files().to_pylist() if r["deletionVector"]]
    assert [r["deletionVector"]["storageType"] for r in dv_rows] == ["u"]
    assert len(list(Path(table.location).glob("deletion_vector_*.bin"))) == 1
    ids = set(table.snapshot().to_arrow().column("id").to_pylist())
    assert not ids & set(scattered) and len(ids) == 300 - 50


def test_deletion_vector_deletes_read_only_the_tested_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Merge-on-read copies no row, so only the columns the conditions test are read from each file (all of
    them for a pyarrow expression, whose columns are not known); the result is the same as by hand."""
    import deltalog.data.read as read_module

    table = _make(tmp_path, dvs=True)
    reads: list[list[str]] = []
    real = read_module.read_file

    def recording(snap: object, add: dict[str, object], needed: list[str], *args: object, **kw: object) -> pa.Table:
        reads.append(list(needed))
        return real(snap, add, needed, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(read_module, "read_file", recording)
    before = table.snapshot().to_arrow()
    conditions = [("v", ">", 40.0), ("part", "=", "a"), ("id", "<", 250)]
    result = delete(table, conditions)
    assert result.used_deletion_vectors and result.num_deletion_vectors_added == 2
    assert reads and all(sorted(names) == ["id", "part", "v"] for names in reads)  # every column tested
    keep = pc.invert(pc.and_(pc.and_(pc.greater(before["v"], 40.0), pc.equal(before["part"], "a")),
                             pc.less(before["id"], 250)))
    assert sorted(table.snapshot().to_arrow().column("id").to_pylist()) == _expected(before, keep)

    reads.clear()
    result = delete(table, [("id", "=", 5)])
    assert result.num_deleted_rows == 1 and reads == [["id"]]

    reads.clear()
    result = delete(table, pc.field("id") == 6)  # an expression (no file skipping by it): every column
    assert result.num_deleted_rows == 1 and len(reads) == 3
    assert all(sorted(names) == ["id", "part", "v"] for names in reads)
    ids = table.snapshot().to_arrow().column("id").to_pylist()
    assert 5 not in ids and 6 not in ids and len(ids) == len(set(ids))


@pytest.mark.parametrize("command", ["delete", "update"])
def test_copy_on_write_reads_every_column_only_of_files_with_a_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Matches are found from the tested columns; the whole file is read only where a row matched (here
    the second file's v range holds 60.25, but no row does)."""
    import deltalog.data.read as read_module

    table = _make(tmp_path, dvs=False)
    before = table.snapshot().to_arrow()
    reads: list[tuple[str, list[str]]] = []
    real = read_module.read_file

    def recording(snap: object, add: dict[str, object], needed: list[str], *args: object, **kw: object) -> pa.Table:
        reads.append((str(add["path"]), list(needed)))
        return real(snap, add, needed, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(read_module, "read_file", recording)
    where = [("v", "in", [25.5, 60.25])]
    if command == "delete":
        assert delete(table, where).num_deleted_rows == 1
    else:
        assert table.update_rows(where, {"v": -1.0}).num_updated_rows == 1
    probed = [path for path, names in reads if names == ["v"]]
    whole = [path for path, names in reads if sorted(names) == ["id", "part", "v"]]
    assert len(probed) == 2 and len(whole) == 1 and len(reads) == 3 and whole[0] in probed
    after = {r["id"]: r["v"] for r in table.snapshot().to_arrow().to_pylist()}
    expected = {r["id"]: r["v"] for r in before.to_pylist() if r["id"] != 51}
    if command == "update":
        expected[51] = -1.0
    assert after == expected


def test_a_large_rewrite_is_split_between_writers_and_a_failure_leaves_no_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import deltalog.commands.delete as delete_module
    from deltalog.data.write_files import DataFileWriter

    def data_files(table: deltalog.Table) -> set[str]:
        root = Path(table.location)
        return {str(f.relative_to(root)) for f in root.rglob("*.parquet") if "_delta_log" not in f.parts}

    monkeypatch.setattr(delete_module, "_PARALLEL_BYTES", 0)  # every rewrite counts as large
    table = _make(tmp_path, dvs=False)
    result = delete(table, "id % 10 = 3")  # rewrites the three files: survivors of 3 files, 2 writers
    # three survivors' pieces (a, b, a) over two writers: the first gets both a pieces, the second b
    assert result.num_added_files == 2 and result.num_removed_files == 3
    assert sorted(table.snapshot().to_arrow().column("id").to_pylist()) == [i for i in range(300) if i % 10 != 3]
    before, version = data_files(table), table.snapshot().version
    real_close, calls = DataFileWriter.close, []

    def second_fails(self: DataFileWriter) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_close(self)

    monkeypatch.setattr(DataFileWriter, "close", second_fails)
    with pytest.raises(OSError, match="disk full"):
        delete(table, "id % 10 = 4")
    assert table.snapshot().version == version and data_files(table) == before  # the first writer's files too
