"""``Table.compute_statistics`` (``ANALYZE TABLE ... COMPUTE DELTA STATISTICS``): every live file re-added
with statistics read again from its footer, in one ``COMPUTE STATS`` commit that rewrites no file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog import ConcurrentDeleteReadException
from deltalog.commands import compute_stats
from deltalog.commands.convert import convert_to_delta
from deltalog.data.filters import normalize_filter, prune_files
from readers import delta_rs_rows, duckdb_rows


def _adds(path: Path) -> list[dict[str, Any]]:
    return sorted(deltalog.Table(str(path)).snapshot().add_files().to_pylist(), key=lambda r: r["path"])


def _matching(path: Path, condition: tuple[str, str, Any]) -> int:
    snap = deltalog.Table(str(path)).snapshot()
    conditions, _ = normalize_filter([condition], snap.schema, table=str(path))
    return prune_files(snap, conditions).num_rows


def _last_commit(path: Path) -> list[dict[str, Any]]:
    version = deltalog.Table(str(path)).latest_version()
    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_files_converted_without_statistics_get_them_and_can_be_skipped(tmp_path: Path) -> None:
    for i in range(3):  # three files of ids i*10 .. i*10+9, one with a NaN in its float column
        score = [float(n) for n in range(10)] if i != 1 else [float("nan"), *[float(n) for n in range(9)]]
        pq.write_table(pa.table({"id": list(range(i * 10, i * 10 + 10)), "score": score}), tmp_path / f"f{i}.parquet")
    convert_to_delta(str(tmp_path), collect_stats=False)
    before = _adds(tmp_path)
    assert all(r["stats"] is None for r in before)
    assert _matching(tmp_path, ("id", ">=", 25)) == 3  # no statistics: nothing can be skipped

    result = deltalog.Table(str(tmp_path)).compute_statistics()
    assert result is not None and result.operation == "COMPUTE STATS" and result.version == 1
    after = _adds(tmp_path)
    assert [(r["path"], r["size"], r["modificationTime"]) for r in after] == \
        [(r["path"], r["size"], r["modificationTime"]) for r in before]  # the same files, none rewritten
    stats = [json.loads(r["stats"]) for r in after]
    assert [(s["numRecords"], s["minValues"]["id"], s["maxValues"]["id"]) for s in stats] == \
        [(10, 0, 9), (10, 10, 19), (10, 20, 29)]
    assert "score" in stats[0]["minValues"] and "score" not in stats[1]["minValues"]  # NaN: no bounds
    assert all(s["tightBounds"] and s["nullCount"] == {"id": 0, "score": 0} for s in stats)
    assert _matching(tmp_path, ("id", ">=", 25)) == 1
    actions = _last_commit(tmp_path)
    assert [a["commitInfo"]["operation"] for a in actions if "commitInfo" in a] == ["COMPUTE STATS"]
    assert all(not a["add"]["dataChange"] for a in actions if "add" in a)
    assert not any("remove" in a for a in actions)
    assert deltalog.Table(str(tmp_path)).snapshot().to_arrow().num_rows == 30
    expected = [(i,) for i in range(30)]  # each re-added file is read once by the other readers
    assert delta_rs_rows(str(tmp_path), ["id"]) == expected and duckdb_rows(str(tmp_path), ["id"]) == expected


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_recomputed_statistics_equal_the_writers(tmp_path: Path, mapping: str) -> None:
    # float leaves too (top level and in a struct, with null, NaN and a null struct): the writer counts them
    # itself (its files have no float footer bounds), and so must the recomputation
    data = pa.table({"id": [3, 1, 2], "f": [1.5, None, -2.0],
                     "s": pa.array([{"a": "x", "g": 0.5}, None, {"a": "z", "g": None}]),
                     "t": pa.array([{"h": float("nan")}, {"h": 4.0}, {"h": 1.0}]), "p": ["k", "k", "k"]})
    deltalog.write_table(str(tmp_path), data, partition_by=["p"],
                         properties={"delta.columnMapping.mode": mapping} if mapping != "none" else None)
    written = {r["path"]: r["stats"] for r in _adds(tmp_path)}
    deltalog.Table(str(tmp_path)).compute_statistics()
    assert {r["path"]: r["stats"] for r in _adds(tmp_path)} == written  # keyed by physical names when mapped
    stats = json.loads(next(iter(written.values())) or "")
    assert len(stats["minValues"]) == 3  # id, f and s (a, g): t.h holds a NaN
    nested = sorted(sorted(v.values()) for v in stats["nullCount"].values() if isinstance(v, dict))
    assert nested == [[0], [1, 2]]  # t.h; s.a and s.g (the null struct counts as null in both)


def test_a_file_with_a_deletion_vector_keeps_it_and_gets_wide_bounds(tmp_path: Path) -> None:
    deltalog.write_table(str(tmp_path), pa.table({"id": list(range(10))}),
                         properties={"delta.enableDeletionVectors": "true"})
    table = deltalog.Table(str(tmp_path))
    table.delete([("id", "<", 3)])
    dv = _adds(tmp_path)[0]["deletionVector"]
    assert dv is not None
    table.compute_statistics()
    row = _adds(tmp_path)[0]
    stats = json.loads(row["stats"])
    assert row["deletionVector"] == dv
    assert (stats["numRecords"], stats["minValues"]["id"], stats["tightBounds"]) == (10, 0, False)
    assert sorted(table.snapshot().to_arrow().column("id").to_pylist()) == list(range(3, 10))
    # the re-added file (same path, same deletion vector) is one live file to DuckDB too (delta-rs reads no
    # deletion vectors: it is checked in the first test)
    assert duckdb_rows(str(tmp_path), ["id"]) == [(i,) for i in range(3, 10)]


def test_a_file_removed_meanwhile_is_not_brought_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deltalog.write_table(str(tmp_path), pa.table({"id": [1, 2]}))
    real = compute_stats.map_files

    def racing(read: Any, rows: list[dict[str, Any]]) -> Any:
        out = real(read, rows)
        deltalog.write_table(str(tmp_path), pa.table({"id": [7]}), mode="overwrite")  # removes the file
        return out

    monkeypatch.setattr(compute_stats, "map_files", racing)
    with pytest.raises(ConcurrentDeleteReadException):
        deltalog.Table(str(tmp_path)).compute_statistics()
    assert deltalog.Table(str(tmp_path)).latest_version() == 1
    assert deltalog.Table(str(tmp_path)).snapshot().to_arrow().column("id").to_pylist() == [7]


def test_an_empty_table_commits_nothing_and_a_lost_file_is_named(tmp_path: Path) -> None:
    deltalog.write_table(str(tmp_path), pa.table({"id": pa.array([], pa.int64())}))
    table = deltalog.Table(str(tmp_path))
    version = table.latest_version()
    assert table.snapshot().num_files() == 0
    assert table.compute_statistics() is None
    assert table.latest_version() == version
    deltalog.write_table(str(tmp_path), pa.table({"id": [1]}), mode="append")
    lost = _adds(tmp_path)[-1]["path"]
    (tmp_path / lost).unlink()
    with pytest.raises(deltalog.DeltaError, match=lost):
        table.compute_statistics()
    assert table.latest_version() == version + 1
