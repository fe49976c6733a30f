"""UniForm maintenance: VACUUM keeps ``metadata/`` and the data files of the Iceberg snapshots still retained,
old Iceberg snapshots expire with ``delta.logRetentionDuration``, the table's detail and ``deltalog describe``
show the Iceberg state, and ``deltalog uniform sync|rebuild`` bring it up to date."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

import deltalog
import deltalog.uniform
from deltalog.cli import cli as main
from iceberg_readers import duckdb_rows, pyiceberg_rows, pyiceberg_table

pytest.importorskip("pyiceberg")

UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}
DAY = 86_400_000


def _files(path: str, under: str = "") -> set[str]:
    out = set()
    for root, _, names in os.walk(os.path.join(path, under)):
        for n in names:
            out.add(os.path.relpath(os.path.join(root, n), path))
    return out


def test_vacuum_keeps_metadata_and_files_of_retained_iceberg_snapshots(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1, 2]}), properties=UNIFORM)
    first = pyiceberg_table(path).metadata.current_snapshot_id
    deltalog.write_table(path, pa.table({"id": [3]}), mode="overwrite")  # removes the first file
    metadata_before = _files(path, "metadata")
    table = deltalog.Table(path)
    result = table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert result.num_deleted_files == 0  # the first Iceberg snapshot still reads the removed file
    assert metadata_before <= _files(path, "metadata")
    assert pyiceberg_rows(path, ["id"], snapshot_id=first) == [(1,), (2,)]
    # past the log retention the old Iceberg snapshot expires with the next commit; then vacuum removes the file
    later = int(time.time() * 1000) + 31 * DAY
    deltalog.write_table(path, pa.table({"id": [4]}), mode="append", clock=lambda: later)
    md = pyiceberg_table(path).metadata
    assert first not in {s.snapshot_id for s in md.snapshots}
    result = table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False, clock=lambda: later)
    assert result.num_deleted_files == 1
    assert pyiceberg_rows(path, ["id"]) == [(3,), (4,)]


def test_vacuum_keeps_metadata_dir_when_files_are_old(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1]}), properties=UNIFORM)
    stray = os.path.join(path, "metadata", "unrelated.bin")  # even files no snapshot names stay
    with open(stray, "wb") as f:
        f.write(b"x")
    os.utime(stray, (0, 0))
    later = int(time.time() * 1000) + 10 * DAY
    res = deltalog.Table(path).vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False,
                                      clock=lambda: later)
    assert not [p for p in res.files_deleted if p.startswith("metadata/")]


def test_detail_and_describe_show_the_iceberg_state(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1]}), properties=UNIFORM)
    deltalog.write_table(path, pa.table({"id": [2]}), mode="append")
    state = deltalog.uniform.iceberg_state(deltalog.Table(path).snapshot().store)
    assert state is not None and state.converted_version == 1
    assert state.metadata_location.endswith("metadata/v2.metadata.json")
    out = CliRunner().invoke(main, ["describe", "--json", path])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)["iceberg"]
    assert doc["converted_delta_version"] == 1 and doc["metadata_location"].endswith("v2.metadata.json")
    out = CliRunner().invoke(main, ["describe", path])
    assert out.exit_code == 0 and "iceberg" in out.output


def test_cli_sync_and_rebuild(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1]}), properties=UNIFORM)
    runner = CliRunner()
    out = runner.invoke(main, ["uniform", "sync", "--json", path])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["mode"] == "up-to-date"
    out = runner.invoke(main, ["uniform", "rebuild", path])
    assert out.exit_code == 0, out.output
    assert "rebuilt" in out.output
    md = pyiceberg_table(path).metadata
    assert len(md.snapshots) == 1 and md.properties["delta-version"] == "0"
    assert pyiceberg_rows(path, ["id"]) == [(1,)]


def test_sync_of_a_table_without_uniform_writes_metadata(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1, 2]}), properties={"delta.columnMapping.mode": "name"})
    assert not os.path.exists(os.path.join(path, "metadata"))  # no UniForm: the post-commit step does nothing
    result = deltalog.uniform.sync(path)
    assert result.mode == "created"
    assert pyiceberg_rows(path, ["id"]) == [(1,), (2,)]


def test_a_failing_iceberg_step_never_fails_the_commit(tmp_path: Any, monkeypatch: Any) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1]}), properties=UNIFORM)
    import deltalog.uniform.convert as convert

    def boom(*_: Any, **__: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(convert, "write_list", boom)
    res = deltalog.write_table(path, pa.table({"id": [2]}), mode="append")
    assert res.version == 1
    assert any(e.startswith("iceberg:") for e in res.commit.post_commit_errors)
    assert pyiceberg_rows(path, ["id"]) == [(1,)]  # still readable: the previous metadata
    monkeypatch.undo()
    deltalog.write_table(path, pa.table({"id": [3]}), mode="append")  # the next commit catches up
    assert pyiceberg_rows(path, ["id"]) == [(1,), (2,), (3,)]


def test_manifests_are_reused_and_merged(tmp_path: Any) -> None:
    """One new manifest per append, the others carried over unchanged; past 32 the small ones merge into one."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0]}), properties=UNIFORM)
    first = pyiceberg_table(path).metadata.current_snapshot()
    assert first is not None
    previous = {m.manifest_path for m in first.manifests(PyArrowFileIO())}
    for i in range(1, 36):
        deltalog.write_table(path, pa.table({"id": [i]}), mode="append")
        snap = pyiceberg_table(path).metadata.current_snapshot()
        assert snap is not None
        manifests = {m.manifest_path for m in snap.manifests(PyArrowFileIO())}
        if len(manifests) == len(previous) + 1:
            assert previous < manifests  # reused, not rewritten
        else:
            assert len(manifests) < len(previous)  # merged
        previous = manifests
    assert len(previous) < 33
    assert pyiceberg_rows(path, ["id"]) == [(i,) for i in range(36)]
    assert duckdb_rows(path, ["id"]) == [(i,) for i in range(36)]


def test_concurrent_writers_leave_readable_current_metadata(tmp_path: Any) -> None:
    """Writers racing for the same Iceberg metadata version: one wins each, the others read again and go on
    (or stop when the winner converted their version); the end state holds every Delta version's rows."""
    import threading

    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0]}), properties=UNIFORM)
    errors: list[str] = []

    def writer(w: int) -> None:
        for i in range(4):
            res = deltalog.write_table(path, pa.table({"id": [w * 100 + i]}), mode="append")
            errors.extend(res.commit.post_commit_errors)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(1, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    table = deltalog.Table(path)
    md = pyiceberg_table(path).metadata
    assert md.properties["delta-version"] == str(table.latest_version()) == "12"
    assert pyiceberg_rows(path, ["id"]) == sorted((r,) for r in table.snapshot().to_arrow().column("id").to_pylist())
    versions = [int(s.summary["delta-version"]) for s in md.snapshots]
    assert versions == list(range(13))  # one Iceberg snapshot per Delta commit, in order


def test_old_metadata_files_leave_with_the_metadata_log(tmp_path: Any, monkeypatch: Any) -> None:
    import deltalog.uniform.convert as convert

    monkeypatch.setattr(convert, "_METADATA_LOG", 2)
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0]}), properties=UNIFORM)
    for i in range(1, 6):
        deltalog.write_table(path, pa.table({"id": [i]}), mode="append")
    names = sorted(n for n in os.listdir(os.path.join(path, "metadata")) if n.endswith(".metadata.json"))
    assert names == ["v4.metadata.json", "v5.metadata.json", "v6.metadata.json"]
    md = pyiceberg_table(path).metadata
    assert [e.metadata_file.rsplit("/", 1)[1] for e in md.metadata_log] == ["v4.metadata.json", "v5.metadata.json"]
    assert pyiceberg_rows(path, ["id"]) == [(i,) for i in range(6)]


def test_empty_table_and_deleting_every_row(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"x": pa.array([], pa.int32())}), properties=UNIFORM)
    assert pyiceberg_table(path).metadata.current_snapshot_id is None  # no files: no snapshot yet
    assert pyiceberg_rows(path, ["x"]) == [] and duckdb_rows(path, ["x"]) == []
    deltalog.write_table(path, pa.table({"x": pa.array([1], pa.int32())}), mode="append")
    deltalog.Table(path).delete("x = 1")
    assert pyiceberg_rows(path, ["x"]) == [] and duckdb_rows(path, ["x"]) == []
    assert pyiceberg_table(path).metadata.current_snapshot().summary["total-records"] == "0"
