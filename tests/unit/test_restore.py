"""RESTORE: files, rows, metadata and protocol of the old version, metrics, and refusals."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.arrow.write import write_table
from deltalog.commands.properties import set_properties
from deltalog.commands.restore import MissingRestoreFilesError, RestoreResult, merge_protocols, restore
from deltalog.commands.vacuum import vacuum
from deltalog.data.deletion_vectors import write_deletion_vectors
from deltalog.errors import (
    DeltaError,
    InvalidArgumentError,
    TimestampAfterLatestError,
    TimestampBeforeEarliestError,
    VersionNotFoundError,
)
from deltalog.protocol.actions import Add, Protocol
from deltalog.txn.operations import Delete
from deltalog.txn.transaction import start_transaction

DAY = 24 * 3600 * 1000


def ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def rows(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def three_versions(root: Path) -> deltalog.Table:
    """v0: ids 1, 2 (p=a); v1: + id 3 (p=b); v2: overwrite with id 4 (p=c)."""

    def data(i: list[int], p: str) -> pa.Table:
        return pa.table({"id": pa.array(i, pa.int64()), "p": [p] * len(i)})

    write_table(str(root), data([1, 2], "a"), mode="append", partition_by=["p"])
    write_table(str(root), data([3], "b"), mode="append")
    write_table(str(root), data([4], "c"), mode="overwrite")
    return deltalog.Table(str(root))


def log_actions(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_restore_by_version(tmp_path: Path) -> None:
    table = three_versions(tmp_path)
    old = table.snapshot(version=1)
    res = restore(table, version=1)
    assert isinstance(res, RestoreResult)
    assert (res.version, res.restored_version) == (3, 1)
    assert rows(table.snapshot().to_arrow()) == rows(old.to_arrow())
    sizes = {r["path"]: r["size"] for r in old.add_files().to_pylist()}
    removed = table.snapshot(version=2).add_files().column("size").to_pylist()
    assert res.num_restored_files == 2 and res.num_removed_files == 1
    assert res.restored_files_size == sum(sizes.values()) and res.removed_files_size == sum(removed)
    assert res.num_files_after_restore == 2 and res.table_size_after_restore == sum(sizes.values())
    assert not res.metadata_restored and not res.protocol_upgraded

    entry = table.history(limit=1)[0]
    assert entry["operation"] == "RESTORE"
    assert entry["operationParameters"] == {"version": 1, "timestamp": None}
    assert entry["operationMetrics"] == {
        "numRestoredFiles": "2",
        "numRemovedFiles": "1",
        "restoredFilesSize": str(res.restored_files_size),
        "removedFilesSize": str(res.removed_files_size),
        "numOfFilesAfterRestore": "2",
        "tableSizeAfterRestore": str(res.table_size_after_restore),
    }
    assert dict(res.metrics) == entry["operationMetrics"]

    actions = log_actions(tmp_path, 3)
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert all(a["dataChange"] for a in adds) and all(r["dataChange"] for r in removes)
    assert {a["path"] for a in adds} == set(sizes)
    assert all(json.loads(a["stats"])["numRecords"] >= 1 for a in adds)  # stats are carried over
    assert not any("metaData" in a or "protocol" in a for a in actions)


def test_restore_by_timestamp(tmp_path: Path) -> None:
    table = three_versions(tmp_path)
    base = 1_700_000_000_000
    for v in range(3):
        ms = base + v * 60_000
        os.utime(tmp_path / "_delta_log" / f"{v:020d}.json", ns=(ms * 1_000_000, ms * 1_000_000))
    when = dt.datetime.fromtimestamp((base + 30_000) / 1000, tz=dt.UTC)
    res = restore(table, timestamp=when)
    assert res.restored_version == 0
    assert ids(table.snapshot().to_arrow()) == [1, 2]
    params = table.history(limit=1)[0]["operationParameters"]
    assert params["version"] is None and params["timestamp"] == when.isoformat()


def test_restore_then_time_travel_and_restore_forward(tmp_path: Path) -> None:
    table = three_versions(tmp_path)
    restore(table, version=0)
    assert ids(table.snapshot().to_arrow()) == [1, 2]
    restore(table, version=2)  # files tombstoned by the first restore come back
    assert ids(table.snapshot().to_arrow()) == [4]
    assert ids(table.snapshot(version=3).to_arrow()) == [1, 2]
    assert [h["operation"] for h in table.history(limit=2)] == ["RESTORE", "RESTORE"]


def test_restore_to_the_current_version_changes_nothing(tmp_path: Path) -> None:
    table = three_versions(tmp_path)
    res = restore(table, version=2)
    assert res.num_restored_files == 0 and res.num_removed_files == 0
    assert ids(table.snapshot().to_arrow()) == [4]


def test_vacuumed_files_are_refused(tmp_path: Path) -> None:
    table = three_versions(tmp_path)
    now = table.history(limit=1)[0]["timestamp"] + 30 * DAY
    vacuum(table, retention_hours=0, enforce_retention_duration=False, dry_run=False, clock=lambda: now)
    latest = table.latest_version()
    with pytest.raises(MissingRestoreFilesError, match="VACUUM") as info:
        restore(table, version=1)
    assert isinstance(info.value, DeltaError)
    assert "p=a/" in str(info.value) and "2 file(s)" in str(info.value)
    assert table.latest_version() == latest  # nothing committed
    assert ids(table.snapshot().to_arrow()) == [4]


def test_metadata_is_restored_and_protocol_kept(tmp_path: Path) -> None:
    write_table(str(tmp_path), pa.table({"id": pa.array([1], pa.int64())}), mode="append")
    table = deltalog.Table(str(tmp_path))
    set_properties(table, {"delta.enableChangeDataFeed": "true"})
    write_table(
        str(tmp_path),
        pa.table({"id": pa.array([2], pa.int64()), "extra": ["x"]}),
        mode="append",
        schema_mode="merge",
    )
    assert table.snapshot().protocol.minWriterVersion == 4
    res = restore(table, version=0)
    snap = table.snapshot()
    assert res.metadata_restored and not res.protocol_upgraded
    assert snap.schema.field_names == ["id"]
    assert "delta.enableChangeDataFeed" not in snap.properties
    assert snap.protocol.minWriterVersion == 4  # never downgraded
    assert rows(snap.to_arrow()) == rows(table.snapshot(version=0).to_arrow())


def test_deletion_vectors_are_swapped_back(tmp_path: Path) -> None:
    write_table(
        str(tmp_path),
        pa.table({"id": pa.array([1, 2, 3], pa.int64())}),
        mode="append",
        properties={"delta.enableDeletionVectors": "true"},
    )
    table = deltalog.Table(str(tmp_path))
    [dv] = write_deletion_vectors(str(tmp_path), [[0]])
    txn = start_transaction(table, Delete(predicate="id = 1"))
    [row] = txn.scan_files().to_pylist()
    txn.remove_files([row])
    txn.add_file(
        Add(
            path=row["path"],
            partitionValues={},
            size=row["size"],
            modificationTime=row["modificationTime"],
            dataChange=True,
            stats=row["stats"],
            deletionVector=dv.to_dict(),
        )
    )
    txn.commit()
    assert ids(table.snapshot().to_arrow()) == [2, 3]
    res = restore(table, version=0)
    assert (res.num_restored_files, res.num_removed_files) == (1, 1)
    assert ids(table.snapshot().to_arrow()) == [1, 2, 3]
    res = restore(table, version=1)
    assert ids(table.snapshot().to_arrow()) == [2, 3]
    [add] = [a["add"] for a in log_actions(tmp_path, res.version) if "add" in a]
    assert add["deletionVector"]["pathOrInlineDv"] == dv.pathOrInlineDv
    # A vacuumed deletion vector file is refused too.
    restore(table, version=0)
    (tmp_path / (dv.relative_path() or "")).unlink()
    with pytest.raises(MissingRestoreFilesError, match="deletion_vector_"):
        restore(table, version=1)


def test_invalid_arguments(tmp_path: Path) -> None:
    table = three_versions(tmp_path)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        restore(table)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        restore(table, version=0, timestamp="2024-01-01")
    with pytest.raises(VersionNotFoundError, match=r"^\[DELTA_CANNOT_RESTORE_TABLE_VERSION\] .* version 9: .*latest "
                       r"version is 2"):
        restore(table, version=9)
    with pytest.raises(TimestampAfterLatestError, match=r"^\[DELTA_CANNOT_RESTORE_TIMESTAMP_GREATER\] .*2999-01-01"):
        restore(table, timestamp="2999-01-01")
    with pytest.raises(TimestampBeforeEarliestError, match=r"^\[DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER\] .*before the "
                       r"earliest available commit \(version 0"):
        restore(table, timestamp="2001-01-01")
    assert table.snapshot().version == 2  # nothing committed


def test_merge_protocols() -> None:
    legacy = Protocol(1, 2)
    assert merge_protocols(legacy, Protocol(1, 1)) is legacy
    assert merge_protocols(legacy, Protocol(2, 5)) == Protocol(2, 5)
    dv = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
    merged = merge_protocols(Protocol(2, 5), dv)
    assert merged.minReaderVersion == 3 and merged.readerFeatures == ("columnMapping", "deletionVectors")
    assert merged.writerFeatures is not None and {"columnMapping", "changeDataFeed"} <= set(merged.writerFeatures)
    tf = Protocol(1, 7, None, ("appendOnly",))
    assert merge_protocols(tf, Protocol(1, 7, None, ("invariants",))).writerFeatures == ("appendOnly", "invariants")
