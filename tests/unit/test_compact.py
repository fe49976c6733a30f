"""The kernel's OPTIMIZE compaction (``Table.compact``, delta-rs's ``optimize.compact()``): small files packed
per partition into one ``dataChange=false`` commit, deleted rows purged, row ids kept, a partition filter, a
retry after losing to a concurrent delete (its files cleaned up), and other readers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.errors import InvalidArgumentError
from races import winner_commits_first
from readers import delta_rs_query_rows, duckdb_rows


def _table(path: Path, appends: int = 6, **props: str) -> deltalog.Table:
    for i in range(appends):
        deltalog.write_table(path, pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                                             "p": pa.array([i % 2] * 10, pa.int64())}),
                             mode="append", partition_by=["p"], properties=props or None)
    return deltalog.Table(path)


def _rows(table: deltalog.Table) -> list[tuple[Any, ...]]:
    got = table.snapshot().to_arrow(columns=["id", "p"])
    return sorted(zip(got.column("id").to_pylist(), got.column("p").to_pylist()))


def _row_ids(table: deltalog.Table) -> dict[int, tuple[int, int]]:
    """id -> (row id, row commit version) of the live rows, read from the files."""
    from deltalog.data.read import kept_rows

    snap = table.snapshot()
    rid = snap.properties["delta.rowTracking.materializedRowIdColumnName"]
    rcv = snap.properties["delta.rowTracking.materializedRowCommitVersionColumnName"]
    out = {}
    for f in snap.add_files().to_pylist():
        data = pq.read_table(Path(table.location) / f["path"])
        keep = kept_rows(snap, f, data.num_rows)
        ids = data.column(rid).to_pylist() if rid in data.column_names else [None] * data.num_rows
        cvs = data.column(rcv).to_pylist() if rcv in data.column_names else [None] * data.num_rows
        for i, (k, a, b) in enumerate(zip(data.column("id").to_pylist(), ids, cvs, strict=True)):
            if keep[i]:
                out[k] = (f["baseRowId"] + i if a is None else a, f["defaultRowCommitVersion"] if b is None else b)
    return out


def test_small_files_are_packed_per_partition(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = _table(path, **{"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true",
                            "delta.enableChangeDataFeed": "true"})
    table.delete("id % 7 = 0")
    before, ids = _rows(table), _row_ids(table)
    version = table.snapshot().version
    result = table.compact()
    assert (result.version, result.num_files_removed, result.num_files_added) == (version + 1, 6, 2)
    assert result.partitions_optimized == 2 and result.num_deleted_rows_purged == 9
    snap = table.snapshot()
    assert snap.num_files() == 2 and not any(f["deletionVector"] for f in snap.add_files().to_pylist())
    assert _rows(table) == before and _row_ids(table) == ids  # same rows, same ids and commit versions
    entry = table.history(limit=1)[0]
    assert entry["operation"] == "OPTIMIZE" and entry["operationMetrics"]["numDeletionVectorsRemoved"] == "6"
    actions = [json.loads(line) for line in (path / "_delta_log" / f"{version + 1:020d}.json").read_text().splitlines()]
    assert all(a[k]["dataChange"] is False for a in actions for k in ("add", "remove") if k in a)
    assert deltalog.read_changes(str(path), starting_version=version + 1).num_rows == 0  # no data change
    assert delta_rs_query_rows(str(path), ["id", "p"]) == before == duckdb_rows(str(path), ["id", "p"])
    assert table.compact().version is None  # nothing left to compact


def test_bins_compacted_side_by_side_leave_no_file_when_one_fails(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.commands import compact

    monkeypatch.setattr(compact, "BIN_WORKERS", 2)
    path = tmp_path / "t"
    table = _table(path, appends=12)  # two partitions: two bins, written at once
    on_disk = sorted(p.relative_to(path) for p in path.rglob("*.parquet"))
    victim = next(f["path"] for f in table.snapshot().add_files().to_pylist() if dict(f["partitionValues"])["p"] == "1")
    (path / victim).unlink()
    with pytest.raises(deltalog.DeltaError, match="listed in the log does not exist"):
        table.compact()
    assert table.snapshot().version == 11
    assert sorted(p.relative_to(path) for p in path.rglob("*.parquet")) == [p for p in on_disk if str(p) != victim]


def test_partition_filter_and_file_size(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    result = table.compact(partition_filter="p = 1")
    assert result.num_files_removed == 3 and table.snapshot().num_files() == 4
    with pytest.raises(InvalidArgumentError, match="'id' is not one"):
        table.compact(partition_filter=[("id", ">", 3)])
    with pytest.raises(InvalidArgumentError, match="max_file_size must be positive"):
        table.compact(max_file_size=0)
    size = max(f["size"] for f in table.snapshot().add_files().to_pylist() if dict(f["partitionValues"])["p"] == "0")
    result = table.compact(max_file_size=2 * size + 1)  # two small files per bin at most
    assert result.num_files_removed == 2 and result.num_files_added == 1


def test_a_compaction_that_loses_plans_again_and_leaves_no_files(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    table = _table(path)
    winner_commits_first(monkeypatch, str(path), lambda t: t.delete("id = 3"))
    result = table.compact()
    monkeypatch.undo()
    assert result.version == 7 and (3, 0) not in _rows(table) and len(_rows(table)) == 59
    assert [h["operation"] for h in table.history(limit=2)] == ["OPTIMIZE", "DELETE"]  # planned again after it
    named = set()
    for log in (path / "_delta_log").glob("*.json"):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            named |= {action[k]["path"] for k in ("add", "remove") if k in action}
    on_disk = {str(f.relative_to(path)) for f in path.rglob("*.parquet") if "_delta_log" not in f.parts}
    assert on_disk == named  # the lost attempt's files were deleted


def test_zorder_lets_statistics_skip_files_on_either_column(tmp_path: Path) -> None:
    import numpy as np

    from deltalog.data.filters import normalize_filter, prune_files

    path = tmp_path / "t"
    rng = np.random.default_rng(7)
    for _ in range(4):
        deltalog.write_table(path, pa.table({"x": pa.array(rng.integers(0, 1000, 5000), pa.int64()),
                                             "y": pa.array(rng.integers(0, 1000, 5000), pa.int64()),
                                             "s": pa.array([f"k{i}" for i in rng.integers(0, 100, 5000)])}),
                             mode="append")
    table = deltalog.Table(path)
    before = sorted(zip(*[table.snapshot().to_arrow().column(c).to_pylist() for c in ("x", "y", "s")]))

    def files_read(sql: str) -> int:
        snap = table.snapshot()
        return prune_files(snap, normalize_filter(sql, snap.schema, table="t")[0]).num_rows

    assert files_read("x < 100") == files_read("y < 100") == 4  # random: every file spans everything
    size = sum(f["size"] for f in table.snapshot().add_files().to_pylist())
    result = table.compact(zorder_by=["x", "`y`"], max_file_size=size // 16)
    assert result.num_files_removed == 4 and result.num_files_added >= 12
    n = result.num_files_added
    assert files_read("x < 100") <= n // 2 and files_read("y < 100") <= n // 2
    assert sorted(zip(*[table.snapshot().to_arrow().column(c).to_pylist() for c in ("x", "y", "s")])) == before
    entry = table.history(limit=1)[0]
    assert entry["operationParameters"]["zOrderBy"] == '["x","y"]'
    assert delta_rs_query_rows(str(path), ["x", "y", "s"]) == before


def test_zorder_refusals(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    for columns, fragment in [(["p"], "DELTA_ZORDERING_ON_PARTITION_COLUMN"), (["nope"], "does not exist"),
                              (["id", "ID"], "listed twice"), ("id", "takes a list")]:
        with pytest.raises(InvalidArgumentError, match=fragment):
            table.compact(zorder_by=columns)  # type: ignore[arg-type]
    assert table.snapshot().version == 5


def test_z_order_of_strings_binaries_and_nested_fields() -> None:
    """Strings and binaries order by their first six bytes (shorter ones zero-padded; values with the same
    six tie), across chunks; nulls share the first range with the smallest values; a dotted path names a
    nested field (null where its struct is). With one column, ties keep their order."""
    from deltalog.commands.zorder import z_ordered

    words = ["b", "", None, "abcdefg", "abcdefz", "é", "ab", "\x00"]
    table = pa.Table.from_batches([pa.record_batch({"s": pa.array(words[:4])}),
                                   pa.record_batch({"s": pa.array(words[4:])})])
    got = z_ordered(table, ["s"]).column("s").to_pylist()
    assert got == ["", None, "\x00", "ab", "abcdefg", "abcdefz", "b", "é"]
    blobs = pa.table({"b": pa.array([b"\xff", b"\x00\x01", None, b"\x00"], pa.large_binary())})
    assert z_ordered(blobs, ["b"]).column("b").to_pylist() == [None, b"\x00", b"\x00\x01", b"\xff"]
    nested = pa.table({"s": pa.array([{"a": 3}, None, {"a": 1}, {"a": None}, {"a": 2}],
                                     pa.struct([("a", pa.int64())])), "i": pa.array(range(5))})
    assert z_ordered(nested, ["s.a"]).column("i").to_pylist() == [1, 2, 3, 4, 0]


def _zorder_table(path: Path, **props: str) -> deltalog.Table:
    import numpy as np

    rng = np.random.default_rng(11)
    for i in range(4):
        deltalog.write_table(path, pa.table({"id": pa.array(range(i * 3000, (i + 1) * 3000), pa.int64()),
                                             "x": pa.array(rng.integers(0, 1000, 3000), pa.int64()),
                                             "s": pa.array([f"k{v:04d}" for v in rng.integers(0, 5000, 3000)])}),
                             mode="append", properties=props or None)
    return deltalog.Table(path)


def _file_contents(table: deltalog.Table) -> list[list[int]]:
    """Each live file's ids in their stored order (the files sorted by those lists)."""
    out = []
    for f in table.snapshot().add_files().to_pylist():
        out.append(pq.read_table(Path(table.location) / f["path"]).column("id").to_pylist())
    return sorted(out)


def test_zorder_through_spill_files_writes_what_the_in_memory_sort_writes(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from deltalog.commands import zorder

    table = _zorder_table(tmp_path / "m")
    size = sum(f["size"] for f in table.snapshot().add_files().to_pylist())
    table.compact(zorder_by=["x", "s"], max_file_size=size // 6)
    in_memory = _file_contents(table)
    table.restore(version=3)  # the same files in the same order again (ties keep the order they are read in)
    spill_root = tmp_path / "tmp"
    spill_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill_root))
    monkeypatch.setattr(zorder, "IN_MEMORY_BYTES", 0)  # every partition through spill files
    result = table.compact(zorder_by=["x", "s"], max_file_size=size // 6)
    assert result.num_files_added == len(in_memory) >= 6
    # the sample holds every row: the same Z ranges, the same order, the same files
    assert _file_contents(table) == in_memory
    assert list(spill_root.iterdir()) == []  # the spill files are gone

    monkeypatch.setattr(zorder, "SAMPLE_ROWS", 500)  # ranges from a sample: other cuts, the same rows
    again = _zorder_table(tmp_path / "a", **{"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"})
    again.delete("id % 5 = 0")
    ids = _row_ids(again)
    again.compact(zorder_by=["x", "s"], max_file_size=size // 6)
    assert sorted(_row_ids(again).items()) == sorted(ids.items())  # row ids kept, deleted rows purged
    assert not any(f["deletionVector"] for f in again.snapshot().add_files().to_pylist())
    spans = [json.loads(f["stats"]) for f in again.snapshot().add_files().to_pylist()]
    assert min(s["maxValues"]["x"] - s["minValues"]["x"] for s in spans) < 600  # files split the x range
    assert list(spill_root.iterdir()) == []
