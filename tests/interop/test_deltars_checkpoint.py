"""Checkpoints written by deltalog are read by delta-rs, and delta-rs's checkpoints by deltalog."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.log.checkpoint_writer import write_checkpoint

deltalake = pytest.importorskip("deltalake")


def _write_table(path: Path, configuration: dict[str, str] | None = None) -> None:
    """Five delta-rs commits: appends to two partitions, then an overwrite of one (tombstones)."""
    for i in range(4):
        data = pa.table(
            {
                "id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                "value": pa.array([float(x) / 3 for x in range(10)], pa.float64()),
                "part": pa.array([f"p{i % 2}"] * 10),
            }
        )
        deltalake.write_deltalake(
            str(path), data, partition_by=["part"], mode="append", configuration=configuration if i == 0 else None
        )
    deltalake.write_deltalake(
        str(path),
        pa.table({"id": pa.array([100], pa.int64()), "value": pa.array([1.5]), "part": pa.array(["p0"])}),
        partition_by=["part"],
        mode="overwrite",
        predicate="part = 'p0'",
    )


def _rows(dt: object) -> list[dict[str, object]]:
    table = dt.to_pyarrow_table()  # type: ignore[attr-defined]
    return sorted(table.to_pylist(), key=lambda r: (r["part"], r["id"]))


def _drop_commits(path: Path, upto: int) -> None:
    for v in range(upto + 1):
        (path / "_delta_log" / f"{v:020d}.json").unlink()


def _live_paths(snap: deltalog.Snapshot) -> list[str]:
    return sorted(snap.add_files().column("path").to_pylist())


@pytest.mark.parametrize("parts", [None, 2])
def test_deltars_reads_our_checkpoint(tmp_path: Path, parts: int | None) -> None:
    _write_table(tmp_path)
    expected_rows = _rows(deltalake.DeltaTable(str(tmp_path)))
    snap = deltalog.Table(tmp_path).snapshot()
    assert snap.version == 4 and snap.tombstones().num_rows == 2
    result = write_checkpoint(snap, parts=parts)
    assert result.written and result.num_add_files == 3
    _drop_commits(tmp_path, 4)  # delta-rs can only reconstruct version 4 from our checkpoint
    dt = deltalake.DeltaTable(str(tmp_path))
    assert dt.version() == 4
    assert sorted(Path(u).name for u in dt.file_uris()) == sorted(Path(p).name for p in _live_paths(snap))
    assert _rows(dt) == expected_rows
    assert dt.metadata().partition_columns == ["part"]
    assert dt.metadata().id == snap.metadata.id
    assert deltalog.Table(tmp_path).snapshot().add_files().sort_by("path").equals(snap.add_files().sort_by("path"))


def test_deltars_appends_after_our_checkpoint(tmp_path: Path) -> None:
    _write_table(tmp_path)
    write_checkpoint(deltalog.Table(tmp_path).snapshot())
    _drop_commits(tmp_path, 3)
    deltalake.write_deltalake(
        str(tmp_path),
        pa.table({"id": pa.array([7], pa.int64()), "value": pa.array([0.0]), "part": pa.array(["p1"])}),
        partition_by=["part"],
        mode="append",
    )
    dt = deltalake.DeltaTable(str(tmp_path))
    assert dt.version() == 5
    assert len(dt.file_uris()) == 4
    assert deltalog.Table(tmp_path).snapshot().num_files() == 4


def test_deltars_reads_typed_stats_checkpoint(tmp_path: Path) -> None:
    # stats only as stats_parsed (no JSON stats): delta-rs's file statistics can only come from the struct
    _write_table(
        tmp_path, {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"}
    )
    expected_rows = _rows(deltalake.DeltaTable(str(tmp_path)))
    snap = deltalog.Table(tmp_path).snapshot()
    result = write_checkpoint(snap)
    schema = pq.read_schema(tmp_path / result.paths[0])
    add_type = schema.field("add").type
    assert add_type.get_field_index("stats_parsed") >= 0 and add_type.get_field_index("partitionValues_parsed") >= 0
    _drop_commits(tmp_path, 4)
    dt = deltalake.DeltaTable(str(tmp_path))
    assert _rows(dt) == expected_rows
    filtered = dt.to_pyarrow_table(filters=[("id", ">=", 30)]).num_rows
    assert filtered == sum(1 for r in expected_rows if r["id"] >= 30)  # type: ignore[operator]
    assert add_type.get_field_index("stats") < 0
    theirs = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
    ours = {r["path"]: r for r in snap.add_files().to_pylist()}
    mins = {p: json.loads(ours[p]["stats"])["minValues"]["id"] for p in theirs["path"]}
    assert dict(zip(theirs["path"], theirs["min.id"])) == mins


def test_we_read_deltars_checkpoints(tmp_path: Path) -> None:
    _write_table(tmp_path)
    before = deltalog.Table(tmp_path).snapshot()
    deltalake.DeltaTable(str(tmp_path)).create_checkpoint()
    hint = json.loads((tmp_path / "_delta_log" / "_last_checkpoint").read_text())
    assert hint["version"] == 4
    _drop_commits(tmp_path, 4)
    after = deltalog.Table(tmp_path).snapshot()
    assert after.segment.checkpoint_version == 4 and not after.segment.commits
    assert _live_paths(after) == _live_paths(before)
    cols = ["path", "partitionValues", "size", "modificationTime", "stats"]
    assert after.add_files().select(cols).sort_by("path").equals(before.add_files().select(cols).sort_by("path"))
    assert after.metadata == before.metadata and after.protocol == before.protocol
    assert sorted(after.tombstones().column("path").to_pylist()) == sorted(
        before.tombstones().column("path").to_pylist()
    )


def test_our_checkpoint_then_theirs_agree(tmp_path: Path) -> None:
    """The same table checkpointed by both writers reconstructs to the same state in both readers."""
    _write_table(tmp_path)
    ours = write_checkpoint(deltalog.Table(tmp_path).snapshot())
    ours_rows = pq.read_table(tmp_path / ours.paths[0], columns=["add"]).column("add").drop_null()
    (tmp_path / ours.paths[0]).unlink()
    (tmp_path / "_delta_log" / "_last_checkpoint").unlink()
    deltalake.DeltaTable(str(tmp_path)).create_checkpoint()
    theirs_rows = pq.read_table(tmp_path / ours.paths[0], columns=["add"]).column("add").drop_null()
    key = lambda rows: sorted((r["path"], r["size"], r["stats"]) for r in rows.to_pylist())  # noqa: E731
    assert key(ours_rows) == key(theirs_rows)
