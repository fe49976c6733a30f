"""Interop with delta-rs (``deltalake``): after deltalog's RESTORE, VACUUM and property changes, delta-rs
opens the table at the same version and reads the same rows. Every delta-rs call runs in one spawned
worker process (see ``deltars_worker``)."""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltars_worker
import pyarrow as pa
import pytest

import deltalog
from deltalog.arrow.write import write_table
from deltalog.commands.properties import set_properties
from deltalog.commands.restore import restore
from deltalog.commands.vacuum import vacuum
from pools import spawn_pool

DAY = 24 * 3600 * 1000


@pytest.fixture(scope="module")
def rs() -> Iterator[cf.ProcessPoolExecutor]:
    with spawn_pool() as pool:
        yield pool


def rs_read(rs: cf.ProcessPoolExecutor, path: Path) -> pa.Table:
    result: pa.Table = rs.submit(deltars_worker.read_table, str(path)).result(timeout=120)
    return result


def rs_version(rs: cf.ProcessPoolExecutor, path: Path) -> int:
    result: int = rs.submit(deltars_worker.version, str(path)).result(timeout=120)
    return result


def rows(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.select(["id", "p"]).to_pylist(), key=lambda r: r["id"])


def data(ids: list[int], p: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [p] * len(ids)})


def test_restore_then_vacuum_reads_the_same_in_delta_rs(rs: cf.ProcessPoolExecutor, tmp_path: Path) -> None:
    write_table(str(tmp_path), data([1, 2], "a b"), mode="append", partition_by=["p"])
    write_table(str(tmp_path), data([3], "c"), mode="append")
    write_table(str(tmp_path), data([4, 5], "d"), mode="overwrite")
    table = deltalog.Table(str(tmp_path))
    expected = rows(table.snapshot(version=1).to_arrow())

    res = restore(table, version=1)
    assert rows(table.snapshot().to_arrow()) == expected
    assert rs_version(rs, tmp_path) == res.version
    assert rows(rs_read(rs, tmp_path)) == expected

    later = time.time_ns() // 1_000_000 + 30 * DAY
    vac = vacuum(table, retention_hours=0, enforce_retention_duration=False, dry_run=False, clock=lambda: later)
    assert vac.num_deleted_files == 1 and vac.files_deleted[0].startswith("p=d/")
    assert vac.end_version is not None
    assert rs_version(rs, tmp_path) == vac.end_version
    assert rows(rs_read(rs, tmp_path)) == expected == rows(table.snapshot().to_arrow())


def test_properties_and_restored_metadata_read_in_delta_rs(rs: cf.ProcessPoolExecutor, tmp_path: Path) -> None:
    write_table(str(tmp_path), data([1], "a"), mode="append", partition_by=["p"])
    table = deltalog.Table(str(tmp_path))
    set_properties(table, {"delta.logRetentionDuration": "interval 60 days", "owner": "etl"})
    write_table(
        str(tmp_path), data([2], "b").append_column("extra", pa.array(["x"])), mode="append", schema_mode="merge"
    )
    res = restore(table, version=0)
    assert res.metadata_restored
    theirs = rs_read(rs, tmp_path)
    assert sorted(theirs.column_names) == ["id", "p"]
    assert rows(theirs) == [{"id": 1, "p": "a"}] == rows(table.snapshot().to_arrow())
