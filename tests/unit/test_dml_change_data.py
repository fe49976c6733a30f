"""The kernel's DELETE and UPDATE on tables with the change data feed on write change data files (they were
refused: "rewrites rows without change data files, which deltalog cannot produce yet"): the deleted rows, and
each updated row's pre- and post-image, read back by deltalog's change feed and by delta-rs's ``load_cdf``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import ConcurrentModificationException
from races import winner_commits_first

CDF = {"delta.enableChangeDataFeed": "true"}


def _write(path: Path, **properties: str) -> deltalog.Table:
    data = pa.table({"id": pa.array(range(10), pa.int64()), "p": pa.array([i % 2 for i in range(10)], pa.int64()),
                     "v": [str(i) for i in range(10)]})
    deltalog.write_table(path, data, partition_by=["p"], properties={**CDF, **properties})
    return deltalog.Table(path)


def _changes(path: Path, start: int) -> list[tuple[Any, ...]]:
    got = deltalog.read_changes(str(path), starting_version=start)
    cols = ["id", "p", "v", "_change_type", "_commit_version"]
    return sorted(zip(*[got.column(c).to_pylist() for c in cols]))


def _delta_rs_changes(path: Path, start: int) -> list[tuple[Any, ...]]:
    deltalake = pytest.importorskip("deltalake")
    reader = deltalake.DeltaTable(str(path)).load_cdf(starting_version=start)
    got = reader.read_all() if isinstance(reader, pa.RecordBatchReader) else pa.table(reader)
    cols = ["id", "p", "v", "_change_type", "_commit_version"]
    return sorted(zip(*[got.column(c).to_pylist() for c in cols]))


@pytest.mark.parametrize("dvs", [False, True])
def test_delete_and_update_record_their_changes(tmp_path: Path, dvs: bool) -> None:
    path = tmp_path / "t"
    table = _write(path, **({"delta.enableDeletionVectors": "true"} if dvs else {}))
    assert table.delete("id IN (3, 4)").num_deleted_rows == 2
    result = table.update_rows("id >= 8", {"v": deltalog.sql_expr("concat(v, '!')")})
    assert result.num_updated_rows == 2 and result.used_deletion_vectors is dvs
    want = [(3, 1, "3", "delete", 1), (4, 0, "4", "delete", 1),
            (8, 0, "8", "update_preimage", 2), (8, 0, "8!", "update_postimage", 2),
            (9, 1, "9", "update_preimage", 2), (9, 1, "9!", "update_postimage", 2)]
    assert _changes(path, 1) == want
    assert _delta_rs_changes(path, 1) == want
    commit = table.history(limit=1)[0]
    assert commit["operationMetrics"]["numAddedChangeFiles"] == "2"  # one per partition touched
    cdc = [a for a in _actions(path, 2) if "cdc" in a]
    assert {a["cdc"]["path"].split("/")[1] for a in cdc} == {"p=0", "p=1"}
    assert all(a["cdc"]["path"].startswith("_change_data/") and a["cdc"]["dataChange"] is False for a in cdc)
    if dvs:  # a deletion-vector DELETE writes none: readers take the rows from the deletion vectors
        assert not [a for a in _actions(path, 1) if "cdc" in a]


def _actions(path: Path, version: int) -> list[dict[str, Any]]:
    import json

    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_change_files_hold_physical_names_and_no_row_tracking_columns(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "t"
    table = _write(path, **{"delta.columnMapping.mode": "name", "delta.enableRowTracking": "true"})
    table.update_rows("id = 5", {"v": "five"})
    cdc = [a["cdc"] for a in _actions(path, 1) if "cdc" in a]
    assert len(cdc) == 1
    names = pq.read_schema(path / cdc[0]["path"]).names
    assert len(names) == 3 and names[-1] == "_change_type" and all(n.startswith("col-") for n in names[:2])
    assert _changes(path, 1) == [(5, 1, "5", "update_preimage", 1), (5, 1, "five", "update_postimage", 1)]


def test_removing_whole_files_writes_no_change_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = _write(path)
    table.delete("p = 1 AND v != 'nope'")  # every row of the p=1 file: the remove says it all
    assert not [a for a in _actions(path, 1) if "cdc" in a]
    assert [c[:4] for c in _changes(path, 1)] == [(i, 1, str(i), "delete") for i in (1, 3, 5, 7, 9)]


def test_a_statement_that_does_not_commit_leaves_no_change_files(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    table = _write(path)
    winner_commits_first(monkeypatch, str(path), lambda t: t.delete("id = 2"))
    with pytest.raises(ConcurrentModificationException):
        table.update_rows("id < 4", {"v": "x"})  # rewrites the file the winner rewrote
    monkeypatch.undo()
    live = {a["cdc"]["path"] for a in _actions(path, 1) if "cdc" in a}
    on_disk = {str(f.relative_to(path)) for f in (path / "_change_data").rglob("*.parquet")}
    assert on_disk == live and len(live) == 1  # the winner's; the loser's were deleted


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_overwrite_by_a_data_column_predicate_records_its_changes(tmp_path: Path, mapping: str) -> None:
    # it was refused on tables with the change data feed ("would have to record change data")
    path = tmp_path / "t"
    _write(path, **{"delta.columnMapping.mode": mapping})
    new = pa.table({"id": pa.array([2, 3, 40], pa.int64()), "p": pa.array([0, 1, 0], pa.int64()),
                    "v": ["two", "three", "forty"]})
    res = deltalog.write_table(path, new, mode="overwrite", predicate="id BETWEEN 2 AND 3 OR id >= 40")
    assert res.version == 1
    want = [(2, 0, "2", "delete", 1), (2, 0, "two", "insert", 1), (3, 1, "3", "delete", 1),
            (3, 1, "three", "insert", 1), (40, 0, "forty", "insert", 1)]
    assert _changes(path, 1) == want
    if mapping == "none":  # delta-rs's change feed refuses tables with column mapping
        assert _delta_rs_changes(path, 1) == want
    metrics = deltalog.Table(path).history(limit=1)[0]["operationMetrics"]
    assert metrics["numAddedChangeFiles"] == "4"  # the deletes and the inserts, per partition
    assert metrics["numDeletedRows"] == "2" and metrics["numCopiedRows"] == "8"
    # every row of the touched files matches: only whole files go, the adds and removes say it (as Spark)
    before = {p.name for p in (path / "_change_data").rglob("*.parquet")}
    whole = pa.table({"id": pa.array([1], pa.int64()), "p": pa.array([1], pa.int64()), "v": ["one"]})
    deltalog.write_table(path, whole, mode="overwrite", predicate="p = 1 AND id < 100")
    assert not [a for a in _actions(path, 2) if "cdc" in a]
    assert {p.name for p in (path / "_change_data").rglob("*.parquet")} == before  # none left behind
    got = _changes(path, 2)
    assert (1, 1, "one", "insert", 2) in got and (3, 1, "three", "delete", 2) in got and len(got) == 6
    assert sorted(r["id"] for r in deltalog.Table(path).snapshot().to_arrow().to_pylist()) == [0, 1, 2, 4, 6, 8, 40]


def test_a_refused_overwrite_leaves_no_change_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write(path)
    bad = pa.table({"id": pa.array([2, 50], pa.int64()), "p": pa.array([0, 0], pa.int64()), "v": ["a", "b"]})
    with pytest.raises(deltalog.InvalidArgumentError, match="DELTA_REPLACE_WHERE_MISMATCH"):
        deltalog.write_table(path, bad, mode="overwrite", predicate="id < 10")
    assert not (path / "_change_data").exists() or not list((path / "_change_data").rglob("*.parquet"))
    assert deltalog.Table(path).latest_version() == 0


@pytest.mark.parametrize("dvs", [False, True])
def test_delete_and_update_a_file_group_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  dvs: bool) -> None:
    # each file its own group: the rows rewritten are written group by group, and the change data holds every
    # deleted row even when the first groups only removed whole files (their rows wait for a rewrite)
    import json

    import deltalog.commands.delete as delete_module

    monkeypatch.setattr(delete_module, "GROUP_BYTES", 1)
    groups = delete_module.file_groups  # the smaller files (wholly deleted below) first, whatever their names
    monkeypatch.setattr(delete_module, "file_groups", lambda rows: groups(
        sorted(rows, key=lambda r: json.loads(r["stats"])["numRecords"])))
    path = tmp_path / "t"
    for part in ([0, 1], [2, 3], [4, 5, 6]):  # three files, unpartitioned
        deltalog.write_table(path, pa.table({"id": pa.array(part, pa.int64()), "p": pa.array([0] * len(part)),
                                             "v": [str(i) for i in part]}), mode="append",
                             properties={**CDF, **({"delta.enableDeletionVectors": "true"} if dvs else {})})
    table = deltalog.Table(path)
    first = table.update_rows("id % 2 = 0", {"v": "even"})  # all three files, one group each
    assert (first.num_updated_rows, first.num_removed_files) == (4, 3)
    assert sorted(deltalog.read_changes(str(path), starting_version=3, ending_version=3,
                                        filter="_change_type = 'update_postimage'").column("id").to_pylist()) == \
        [0, 2, 4, 6]
    result = table.delete("id <= 3 OR id = 5")  # files 1 and 2 go whole, file 3 keeps rows 4 and 6
    assert (result.num_deleted_rows, result.num_removed_files) == (5, 5 if dvs else 3)  # + the new images' files
    got = deltalog.read_changes(str(path), starting_version=4)
    assert sorted(zip(got.column("id").to_pylist(), got.column("_change_type").to_pylist())) == \
        [(i, "delete") for i in (0, 1, 2, 3, 5)]
    version = table.latest_version()
    up = table.update_rows("id >= 4", {"v": "x"})
    assert up.num_updated_rows == 2 and up.num_removed_files == 1
    assert sorted(r["v"] for r in table.snapshot().to_arrow().to_pylist()) == ["x", "x"]
    kinds = deltalog.read_changes(str(path), starting_version=version + 1).column("_change_type").to_pylist()
    assert sorted(kinds) == ["update_postimage"] * 2 + ["update_preimage"] * 2
    whole = table.delete("id >= 0")  # every row: whole files only, no change files (readers take the removes)
    assert whole.num_deleted_rows == 2 and not [a for a in _actions(path, table.latest_version()) if "cdc" in a]


def test_overwrite_by_a_data_column_predicate_a_file_group_at_a_time(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import deltalog.commands.delete as delete_module

    monkeypatch.setattr(delete_module, "GROUP_BYTES", 1)
    groups = delete_module.file_groups  # the wholly replaced (smaller) file first, whatever the names
    monkeypatch.setattr(delete_module, "file_groups", lambda rows: groups(
        sorted(rows, key=lambda r: json.loads(r["stats"])["numRecords"])))
    path = tmp_path / "t"
    for part in ([0, 1], [2, 3, 4]):
        deltalog.write_table(path, pa.table({"id": pa.array(part, pa.int64()), "p": pa.array([0] * len(part)),
                                             "v": [str(i) for i in part]}), mode="append", properties=CDF)
    new = pa.table({"id": pa.array([1, 2], pa.int64()), "p": pa.array([0, 0]), "v": ["one", "two"]})
    deltalog.write_table(path, new, mode="overwrite", predicate="id <= 2")  # file 1 whole, file 2 keeps 3, 4
    got = _changes(path, 2)
    assert got == [(0, 0, "0", "delete", 2), (1, 0, "1", "delete", 2), (1, 0, "one", "insert", 2),
                   (2, 0, "2", "delete", 2), (2, 0, "two", "insert", 2)]
