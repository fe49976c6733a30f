"""Row-level concurrency (issue "Row-level concurrency", part 1): two DELETEs with deletion vectors on
disjoint rows of the same file both commit -- the loser is rebased onto the winner (its deletion vector
becomes the union, its remove names the winner's post-image) -- while deletes of one row still conflict
and a losing commit's rebased deletion-vector file is deleted again. Checked with deltalog and DuckDB."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import ConcurrentModificationException
from races import winner_commits_first
from readers import duckdb_rows


def _table(path: str) -> deltalog.Table:
    deltalog.write_table(path, pa.table({"id": list(range(100))}), properties={"delta.enableDeletionVectors": "true"})
    return deltalog.Table(path)


def _ids(path: str) -> list[int]:
    return sorted(deltalog.Table(path).snapshot().to_arrow(columns=["id"]).column("id").to_pylist())


def test_disjoint_deletes_on_one_file_both_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    table = _table(path)
    table.delete([("id", "=", 50)])  # both start from an existing deletion vector
    winner_commits_first(monkeypatch, path, lambda t: t.delete([("id", "<", 10)]))
    result = table.delete([("id", ">=", 90)])
    monkeypatch.undo()
    assert result.version == 3 and result.num_deleted_rows == 10
    want = [i for i in range(10, 90) if i != 50]
    assert _ids(path) == want and [r[0] for r in duckdb_rows(path, ["id"])] == want
    files = deltalog.Table(path).snapshot().add_files().to_pylist()
    assert len(files) == 1 and files[0]["deletionVector"]["cardinality"] == 21
    history = deltalog.Table(path).history(limit=2)
    assert [h["operation"] for h in history] == ["DELETE", "DELETE"]


def test_overlapping_deletes_still_conflict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    table = _table(path)
    winner_commits_first(monkeypatch, path, lambda t: t.delete([("id", "<", 10)]))
    with pytest.raises(ConcurrentModificationException, match="version 1"):
        table.delete([("id", "=", 5)])  # row 5: deleted by both
    monkeypatch.undo()
    assert deltalog.Table(path).latest_version() == 1 and _ids(path) == list(range(10, 100))


def test_rebased_dv_file_removed_when_nothing_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.compute as pc

    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": list(range(10_000))}),
                         properties={"delta.enableDeletionVectors": "true"})
    table = deltalog.Table(path)
    odd = pc.equal(pc.bit_wise_and(pc.field("id"), 1), 1)

    def winners(t: deltalog.Table) -> None:  # even rows below 5000, then a metadata change: the loser fails
        t.delete((pc.field("id") < 5000) & ~odd)
        t.set_properties({"owner": "someone"})

    winner_commits_first(monkeypatch, path, winners)
    with pytest.raises(ConcurrentModificationException, match="changed the table metadata"):
        table.delete((pc.field("id") >= 5000) & odd)  # rebased onto the first winner, then refused
    monkeypatch.undo()
    bins = {p.name for p in Path(path).glob("*.bin")}
    assert len(bins) == 1  # the winner's DV file; the loser's own and its rebased one are gone again
    assert len(_ids(path)) == 7500


def test_rebase_is_recorded_in_commit_info(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    table = _table(path)
    winner_commits_first(monkeypatch, path, lambda t: t.delete([("id", "<", 10)]))
    table.update_rows([("id", ">=", 90)], {"id": 0})  # an UPDATE rebased onto the winning DELETE
    monkeypatch.undo()
    history = deltalog.Table(path).history(limit=2)
    assert history[0]["operation"] == "UPDATE"
    assert history[0]["rowLevelConcurrency"] == {"reconciledVersions": [1], "rebasedFiles": 1}
    assert "rowLevelConcurrency" not in history[1]  # the winner was not rebased
    assert _ids(path) == sorted([*range(10, 90), *[0] * 10])
    assert sorted(r[0] for r in duckdb_rows(path, ["id"])) == _ids(path)


def test_overlap_message_names_the_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    table = _table(path)
    winner_commits_first(monkeypatch, path, lambda t: t.delete([("id", "<", 10)]))
    with pytest.raises(ConcurrentModificationException, match=r"both deleted or updated rows 3, 4, 5, 6, 7 and 2 more"):
        table.delete([("id", ">=", 3)])
    monkeypatch.undo()


def test_property_false_keeps_the_reference_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    table = _table(path)
    table.set_properties({"deltalog.rowLevelConcurrency": "false"})
    winner_commits_first(monkeypatch, path, lambda t: t.delete([("id", "<", 10)]))
    with pytest.raises(ConcurrentModificationException, match="version 2"):
        table.delete([("id", ">=", 90)])  # disjoint rows, but the table asks for Delta's reference rules
    monkeypatch.undo()
    assert _ids(path) == list(range(10, 100))


def test_property_must_be_a_boolean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    table = _table(path)
    table.set_properties({"deltalog.rowLevelConcurrency": "sometimes"})
    winner_commits_first(monkeypatch, path, lambda t: t.delete([("id", "<", 10)]))
    with pytest.raises(deltalog.errors.InvalidArgumentError, match="must be true or false, not 'sometimes'"):
        table.delete([("id", ">=", 90)])
    monkeypatch.undo()
    assert _ids(path) == list(range(10, 100)) and not list(Path(path).glob("*.bin"))[1:]
