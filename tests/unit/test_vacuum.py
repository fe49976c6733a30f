"""VACUUM: what is deleted (unreferenced, expired, old enough), what never is, and its commits."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from logbuilder import add, commit_info, metadata, protocol, remove, write_commit

import deltalog
from deltalog.arrow.write import write_table
from deltalog.commands.vacuum import VacuumResult, store_relative_path, vacuum
from deltalog.data.deletion_vectors import write_deletion_vectors
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.actions import Add
from deltalog.storage import InMemoryLogStore
from deltalog.txn.operations import Delete
from deltalog.txn.transaction import start_transaction

DAY = 24 * 3600 * 1000
WEEK = 7 * DAY
T0 = 1_700_000_000_000  # when the data files were written (their mtime in these tests)
T1 = T0 + DAY  # when the overwrite tombstoned the first file


def set_mtime(path: Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def data_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def age_all(root: Path, ms: int = T0) -> None:
    """Pretend every data file and directory was last changed at ``ms`` (directories last, as setting a
    file's time does not change its directory's)."""
    paths = [p for p in root.rglob("*") if "_delta_log" not in p.parts]
    for p in sorted(paths, key=lambda p: p.is_dir()):
        set_mtime(p, ms)


def make_table(root: Path, partition_by: list[str] | None = None) -> tuple[str, str]:
    """v0: file A (ids 1, 2); v1: overwrite at T1 with file B (id 3). Returns (A, B) store paths."""
    cols: dict[str, Any] = {"id": pa.array([1, 2], pa.int64())}
    if partition_by:
        cols[partition_by[0]] = ["x", "x"]
    first = write_table(str(root), pa.table(cols), mode="append", partition_by=partition_by, clock=lambda: T0)
    cols = {"id": pa.array([3], pa.int64())}
    if partition_by:
        cols[partition_by[0]] = ["y"]
    second = write_table(str(root), pa.table(cols), mode="overwrite", partition_by=partition_by, clock=lambda: T1)
    age_all(root)
    return store_path(first.files[0]), store_path(second.files[0])


def store_path(log_path: str) -> str:
    rel = store_relative_path(log_path, "/unused")
    assert rel is not None
    return rel


def versions(root: Path) -> int:
    return deltalog.Table(str(root)).latest_version()


# ------------------------------------------------------------------------------------- what is deleted


def test_uncommitted_files_are_removed_only_after_the_retention(tmp_path: Path) -> None:
    a, b = make_table(tmp_path)
    # A writer crashed after writing data files but before committing them.
    pq.write_table(pa.table({"id": [9]}), tmp_path / "part-crashed.parquet")
    (tmp_path / "p=1").mkdir()
    pq.write_table(pa.table({"id": [9]}), tmp_path / "p=1" / "part-crashed.parquet")
    crash_time = T1 + 2 * DAY
    set_mtime(tmp_path / "part-crashed.parquet", crash_time)
    set_mtime(tmp_path / "p=1" / "part-crashed.parquet", crash_time)
    set_mtime(tmp_path / "p=1", crash_time)
    table = deltalog.Table(str(tmp_path))

    early = vacuum(table, dry_run=False, clock=lambda: crash_time + WEEK - 1)
    assert "part-crashed.parquet" not in early.files_deleted
    assert early.files_deleted == [a]  # only the expired tombstone
    assert (tmp_path / "part-crashed.parquet").exists()

    late = vacuum(table, dry_run=False, clock=lambda: crash_time + WEEK + 1)
    assert late.files_deleted == ["p=1/part-crashed.parquet", "part-crashed.parquet"]
    assert data_files(tmp_path) == {b}
    assert not (tmp_path / "p=1").exists()  # emptied directory removed
    assert deltalog.Table(str(tmp_path)).snapshot().to_arrow().column("id").to_pylist() == [3]


def test_in_flight_files_are_safe_even_with_zero_retention(tmp_path: Path) -> None:
    make_table(tmp_path)
    pq.write_table(pa.table({"id": [9]}), tmp_path / "part-in-flight.parquet")
    now = T1 + 30 * DAY
    set_mtime(tmp_path / "part-in-flight.parquet", now)  # being written right now
    res = vacuum(
        deltalog.Table(str(tmp_path)),
        retention_hours=0,
        enforce_retention_duration=False,
        dry_run=False,
        clock=lambda: now,
    )
    assert "part-in-flight.parquet" not in res.files_deleted
    assert (tmp_path / "part-in-flight.parquet").exists()


def test_tombstones_are_kept_within_the_retention_and_removed_after(tmp_path: Path) -> None:
    a, b = make_table(tmp_path)
    table = deltalog.Table(str(tmp_path))

    kept = vacuum(table, dry_run=False, clock=lambda: T1 + WEEK)  # deletionTimestamp == cutoff: kept
    assert kept.files_deleted == [] and kept.num_deleted_files == 0
    assert table.snapshot(version=0).to_arrow().column("id").to_pylist() == [1, 2]  # time travel works

    gone = vacuum(table, dry_run=False, clock=lambda: T1 + WEEK + 1)
    assert gone.files_deleted == [a]
    assert gone.num_deleted_files == 1
    assert data_files(tmp_path) == {b}


def test_the_retention_comes_from_the_table_property(tmp_path: Path) -> None:
    a, _ = make_table(tmp_path)
    from deltalog.commands.properties import set_properties

    table = deltalog.Table(str(tmp_path))
    set_properties(table, {"delta.deletedFileRetentionDuration": "interval 1 day"})
    res = vacuum(table, clock=lambda: T1 + DAY + 1)
    assert res.retention_ms == DAY and res.retention_hours == 24
    assert res.files_deleted == [a]
    assert vacuum(table, clock=lambda: T1 + DAY).files_deleted == []


def test_partitioned_tables_keep_live_partitions_and_drop_empty_ones(tmp_path: Path) -> None:
    a, b = make_table(tmp_path, partition_by=["p"])
    assert a.startswith("p=x/") and b.startswith("p=y/")
    res = vacuum(deltalog.Table(str(tmp_path)), dry_run=False, clock=lambda: T1 + WEEK + 1)
    assert res.files_deleted == [a]
    assert res.num_removed_directories == 1
    assert not (tmp_path / "p=x").exists() and (tmp_path / "p=y").is_dir()
    assert res.num_vacuumed_directories == 3  # root, p=x, p=y


def test_recently_changed_directories_are_left_alone(tmp_path: Path) -> None:
    make_table(tmp_path, partition_by=["p"])
    (tmp_path / "p=new").mkdir()  # a writer just created it and is about to write a file into it
    (tmp_path / "p=old").mkdir()
    set_mtime(tmp_path / "p=old", T0)
    res = vacuum(deltalog.Table(str(tmp_path)), dry_run=False, clock=lambda: T1 + WEEK + 1)
    assert (tmp_path / "p=new").is_dir() and not (tmp_path / "p=old").exists()
    assert res.num_removed_directories == 2  # p=old and the emptied p=x


def test_partition_columns_starting_with_underscore_are_vacuumed(tmp_path: Path) -> None:
    a, b = make_table(tmp_path, partition_by=["_p"])
    assert a.startswith("_p=x/")
    res = vacuum(deltalog.Table(str(tmp_path)), dry_run=False, clock=lambda: T1 + WEEK + 1)
    assert res.files_deleted == [a]
    assert data_files(tmp_path) == {b}


# ------------------------------------------------------------------------------------ deletion vectors


def _dv_table(root: Path) -> tuple[str, str]:
    """A file with a (prefixed) DV deleting row 0 at v1; returns (live DV path, orphan DV path)."""
    write_table(
        str(root),
        pa.table({"id": pa.array([1, 2, 3], pa.int64())}),
        mode="append",
        properties={"delta.enableDeletionVectors": "true"},
        clock=lambda: T0,
    )
    table = deltalog.Table(str(root))
    [live] = write_deletion_vectors(str(root), [[0]], prefix="ab")
    [orphan] = write_deletion_vectors(str(root), [[1]])
    txn = start_transaction(table, Delete(predicate="id = 1"), clock=lambda: T1)
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
            deletionVector=live.to_dict(),
        )
    )
    txn.commit()
    age_all(root)
    live_path, orphan_path = live.relative_path(), orphan.relative_path()
    assert live_path is not None and orphan_path is not None
    return live_path, orphan_path


def test_deletion_vector_files_of_live_files_are_kept(tmp_path: Path) -> None:
    live_dv, orphan_dv = _dv_table(tmp_path)
    assert live_dv.startswith("ab/")
    table = deltalog.Table(str(tmp_path))
    assert table.snapshot().to_arrow().column("id").to_pylist() == [2, 3]
    # Within the retention the tombstone (same path, no DV) keeps the data file; the orphan DV goes.
    res = vacuum(table, dry_run=False, clock=lambda: T1 + 30 * DAY)
    assert res.files_deleted == [orphan_dv]
    assert (tmp_path / live_dv).exists()
    assert table.snapshot().to_arrow().column("id").to_pylist() == [2, 3]


def test_deletion_vector_files_under_a_prefixed_name_are_kept(tmp_path: Path) -> None:
    live_dv, _ = _dv_table(tmp_path)
    directory, _, name = live_dv.rpartition("/")
    prefixed = tmp_path / directory / f"test-prefix-{name}"
    os.rename(tmp_path / live_dv, prefixed)  # how Spark's test builds name DV files; readers accept it
    set_mtime(prefixed, T0)
    table = deltalog.Table(str(tmp_path))
    res = vacuum(table, dry_run=False, clock=lambda: T1 + 30 * DAY)
    assert prefixed.exists()
    assert all(not p.endswith(name) for p in res.files_deleted)
    assert table.snapshot().to_arrow().column("id").to_pylist() == [2, 3]


# ------------------------------------------------------------------------------------- never touched


def test_log_and_hidden_files_are_never_touched_but_old_change_data_is(tmp_path: Path) -> None:
    make_table(tmp_path)
    for rel in ("_change_data/cdc-00000.snappy.parquet", "_change_data/p=1/cdc-00001.snappy.parquet"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x")
        set_mtime(tmp_path / rel, T0)
    young = tmp_path / "_change_data" / "cdc-00002.snappy.parquet"
    young.write_bytes(b"x")
    set_mtime(young, T1 + 365 * DAY)  # not older than the (zero) retention: kept
    never = [
        "_delta_log/garbage.parquet",
        "_delta_log/_sidecars/orphan.parquet",
        ".hidden/part-0.parquet",
        "_tmp/part-0.parquet",
        ".part-0.parquet.crc",
        "_SUCCESS",
        "p=1/.part-1.parquet.crc",
        "p=1/_committed_123",
    ]
    for rel in never:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x")
        set_mtime(tmp_path / rel, T0)
    res = vacuum(
        deltalog.Table(str(tmp_path)),
        retention_hours=0,
        enforce_retention_duration=False,
        dry_run=False,
        clock=lambda: T1 + 365 * DAY,
    )
    for rel in never:
        assert (tmp_path / rel).exists(), rel
        assert rel not in res.files_deleted
    assert sorted(p for p in res.files_deleted if p.startswith("_change_data")) == [
        "_change_data/cdc-00000.snappy.parquet", "_change_data/p=1/cdc-00001.snappy.parquet"]
    assert young.exists()
    assert (tmp_path / "p=1").is_dir()  # not empty: its hidden files stay


def test_paths_outside_the_root_are_never_deleted(tmp_path: Path) -> None:
    root = tmp_path / "t"
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("rel.parquet", "abs.parquet", "linked.parquet", "in-linked-dir.parquet"):
        (outside / name).write_bytes(b"x")
        set_mtime(outside / name, T0)
    store = deltalog.Table(str(root)).store
    write_commit(store, 0, commit_info("CREATE TABLE"), protocol(), metadata())
    write_commit(
        store,
        1,
        commit_info(),
        add("../outside/rel.parquet"),
        add((outside / "abs.parquet").as_uri()),
    )
    write_commit(
        store,
        2,
        commit_info("DELETE"),
        remove("../outside/rel.parquet", deletionTimestamp=T0),
        remove((outside / "abs.parquet").as_uri(), deletionTimestamp=T0),
    )
    os.symlink(outside / "linked.parquet", root / "link.parquet")  # a file symlink: only the link may go
    os.symlink(outside, root / "linkdir")  # a directory symlink is not followed
    res = vacuum(
        deltalog.Table(str(root)),
        retention_hours=0,
        enforce_retention_duration=False,
        dry_run=False,
        clock=lambda: T1 + 365 * DAY,
    )
    assert sorted(p.name for p in outside.iterdir()) == [
        "abs.parquet",
        "in-linked-dir.parquet",
        "linked.parquet",
        "rel.parquet",
    ]
    assert res.files_deleted == ["link.parquet"]


def test_store_relative_path() -> None:
    assert store_relative_path("p=a%20b/x.parquet", "/t") == "p=a b/x.parquet"
    assert store_relative_path("file:///t/p%3D1/x.parquet", "/t") == "p=1/x.parquet"
    assert store_relative_path("file:/t/x.parquet", "file:///t") == "x.parquet"
    assert store_relative_path("/t/x.parquet", "/t") == "x.parquet"
    assert store_relative_path("/t2/x.parquet", "/t") is None
    assert store_relative_path("s3://b/t/x.parquet", "/t") is None
    assert store_relative_path("memory://m/x.parquet", "memory://m") == "x.parquet"
    assert store_relative_path("a/../x.parquet", "/t") == "x.parquet"
    assert store_relative_path("a/../../x.parquet", "/t") is None
    assert store_relative_path("..", "/t") is None
    assert store_relative_path("", "/t") is None


# ------------------------------------------------------------------------------------ memory stores


def _memory_table(name: str, *features: str) -> tuple[deltalog.Table, InMemoryLogStore]:
    store = InMemoryLogStore(f"memory://{name}", clock=lambda: T0)
    proto = protocol(3, 7, readerFeatures=list(features), writerFeatures=list(features)) if features else protocol()
    write_commit(store, 0, commit_info("CREATE TABLE"), proto, metadata())
    write_commit(store, 1, commit_info(), add("a%20b.parquet"), add("c.parquet"))
    write_commit(store, 2, commit_info("DELETE"), remove("c.parquet", deletionTimestamp=T0))
    for name_ in ("a b.parquet", "c.parquet", "orphan.parquet"):
        store.write(name_, b"data", overwrite=False)
    return deltalog.Table(f"memory://{name}", store=store), store


def test_memory_store_decodes_log_paths_and_commits_start_and_end() -> None:
    table, store = _memory_table("vacuum-mem")
    now = T0 + 30 * DAY
    res = vacuum(table, dry_run=False, clock=lambda: now)
    assert res.files_deleted == ["c.parquet", "orphan.parquet"]
    assert res.size_of_data_to_delete == 8
    assert [f.path for f in store.list_dir("") if not f.path.startswith("_")] == ["a b.parquet"]
    assert (res.start_version, res.end_version) == (3, 4)
    end, start = table.history(limit=2)
    assert start["operation"] == "VACUUM START" and end["operation"] == "VACUUM END"
    assert start["operationParameters"] == {  # JSON literals, as delta-spark writes them
        "retentionCheckEnabled": True,
        "defaultRetentionMillis": WEEK,
    }
    assert start["operationMetrics"] == {"numFilesToDelete": "2", "sizeOfDataToDelete": "8"}
    assert end["operationParameters"] == {"status": "COMPLETED"}
    assert end["operationMetrics"] == {"numDeletedFiles": "2", "numVacuumedDirectories": "1"}
    raw = store.read("_delta_log/00000000000000000003.json").decode().splitlines()
    assert [next(iter(json.loads(line))) for line in raw] == ["commitInfo"]  # commitInfo only
    assert json.loads(raw[0])["commitInfo"]["timestamp"] == now  # the injected clock
    # history reports the commit times time travel uses: the store's file times, made increasing
    assert (start["timestamp"], end["timestamp"]) == (T0 + 3, T0 + 4)


def test_specified_retention_is_recorded() -> None:
    table, _ = _memory_table("vacuum-mem-retention")
    vacuum(table, retention_hours=200, dry_run=False, clock=lambda: T0 + 30 * DAY)
    start = table.history(limit=2)[1]
    assert start["operationParameters"]["specifiedRetentionMillis"] == 200 * 3600 * 1000


def test_dry_run_lists_but_deletes_and_commits_nothing() -> None:
    table, store = _memory_table("vacuum-dry")
    res = vacuum(table, clock=lambda: T0 + 30 * DAY)
    assert isinstance(res, VacuumResult)
    assert res.dry_run and res.files_deleted == ["c.parquet", "orphan.parquet"]
    assert res.num_files_to_delete == 2 and res.num_deleted_files == 0
    assert res.start_version is None and res.end_version is None
    assert store.exists("c.parquet") and store.exists("orphan.parquet")
    assert table.latest_version() == 2


def test_vacuum_protocol_check_feature_is_supported() -> None:
    table, _ = _memory_table("vacuum-vpc", "vacuumProtocolCheck")
    res = vacuum(table, dry_run=False, clock=lambda: T0 + 30 * DAY)
    assert res.num_deleted_files == 2


def test_tables_deltalog_cannot_write_are_not_vacuumed() -> None:
    table, store = _memory_table("vacuum-ice", "icebergCompatV3")
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV3"):
        vacuum(table, dry_run=False, clock=lambda: T0 + 30 * DAY)
    assert store.exists("orphan.parquet") and table.latest_version() == 2


# ----------------------------------------------------------------------------------- retention check


def test_retention_below_the_table_setting_is_refused() -> None:
    table, store = _memory_table("vacuum-check")
    with pytest.raises(InvalidArgumentError, match=r"delta\.deletedFileRetentionDuration") as info:
        vacuum(table, retention_hours=1, dry_run=False)
    assert "enforce_retention_duration=False" in str(info.value)  # the kernel's way and Spark's way
    assert "spark.databricks.delta.retentionDurationCheck.enabled=false" in str(info.value)
    assert store.exists("orphan.parquet") and table.latest_version() == 2
    res = vacuum(table, retention_hours=1, enforce_retention_duration=False, clock=lambda: T0 + 2 * 3600 * 1000)
    assert res.retention_hours == 1 and res.files_deleted == ["c.parquet", "orphan.parquet"]


@pytest.mark.parametrize("hours", [-1, float("nan"), float("inf"), True, "7"])
def test_invalid_retention_values(hours: Any) -> None:
    table, _ = _memory_table(f"vacuum-bad-{hours}")
    with pytest.raises(InvalidArgumentError, match="retention_hours"):
        vacuum(table, retention_hours=hours, enforce_retention_duration=False)


# ------------------------------------------------------------------------------------------------ lite

def test_lite_finds_removed_files_in_the_log_and_never_lists_the_table(tmp_path: Path) -> None:
    a, b = make_table(tmp_path)
    stray = tmp_path / "part-never-committed.parquet"  # no commit names it: only a full vacuum finds it
    stray.write_bytes(b"x")
    set_mtime(stray, T0)
    table = deltalog.Table(str(tmp_path))
    assert vacuum(table, lite=True, clock=lambda: T1 + WEEK).files_deleted == []  # the tombstone is not expired
    dry = vacuum(table, lite=True, clock=lambda: T1 + WEEK + 1)
    assert (dry.files_deleted, dry.dry_run) == ([a], True)
    done = vacuum(table, lite=True, dry_run=False, clock=lambda: T1 + WEEK + 1)
    assert (done.files_deleted, done.num_deleted_files, done.num_vacuumed_directories) == ([a], 1, 0)
    assert data_files(tmp_path) == {b, stray.name}
    # a second LITE starts from the cutoff of the one before: file A is not looked for again
    assert vacuum(table, lite=True, clock=lambda: T1 + WEEK + 2).files_deleted == []
    assert vacuum(table, clock=lambda: T1 + WEEK + 2).files_deleted == [stray.name]


def test_lite_refuses_when_the_log_lost_commits_since_the_last_vacuum(tmp_path: Path) -> None:
    make_table(tmp_path)
    table = deltalog.Table(str(tmp_path))
    write_table(str(tmp_path), pa.table({"id": pa.array([4], pa.int64())}), mode="append", clock=lambda: T1 + DAY)
    table.checkpoint()
    for v in (0, 1):  # log cleanup removed the commits that held the removes
        (tmp_path / "_delta_log" / f"{v:020d}.json").unlink()
    with pytest.raises(deltalog.errors.DeltaError, match=r"DELTA_CANNOT_VACUUM_LITE.*starts at version 2"):
        vacuum(table, lite=True, clock=lambda: T1 + WEEK + 1)
    # after a full vacuum whose cutoff is past the oldest commit kept, LITE can run again
    vacuum(table, dry_run=False, clock=lambda: T1 + 2 * WEEK)
    assert vacuum(table, lite=True, clock=lambda: T1 + 2 * WEEK + 1).files_deleted == []


def test_an_inventory_replaces_the_listing(tmp_path: Path) -> None:
    a, b = make_table(tmp_path)
    stray = tmp_path / "part-never-committed.parquet"  # not in the inventory: never looked at
    stray.write_bytes(b"x")
    set_mtime(stray, T0)
    table = deltalog.Table(str(tmp_path))

    def entry(rel: str, mtime: int = T0) -> tuple[str, int, bool, int]:
        return (f"file:{tmp_path / rel}", (tmp_path / rel).stat().st_size, False, mtime)

    inventory = [entry(a), entry(b), (str(tmp_path), 0, True, T0), ("/elsewhere/old.parquet", 9, False, 0),
                 entry("_delta_log/00000000000000000000.json")]
    assert table.vacuum(inventory=inventory, clock=lambda: T1 + WEEK).files_deleted == []  # tombstone kept
    # the inventory's times decide, as the listing's would: a file it calls recent stays
    assert table.vacuum(inventory=[entry(a, T1 + WEEK)], clock=lambda: T1 + WEEK + 1).files_deleted == []
    done = table.vacuum(inventory=iter(inventory), dry_run=False, clock=lambda: T1 + WEEK + 1)
    assert (done.files_deleted, done.num_deleted_files) == ([a], 1)
    assert data_files(tmp_path) == {b, stray.name}
    with pytest.raises(InvalidArgumentError, match=r"inventory entry 1 is \('x',\).*\[table "):
        table.vacuum(inventory=[("x",)], clock=lambda: T1 + WEEK + 1)  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="takes no inventory"):
        table.vacuum(inventory=[], lite=True)
