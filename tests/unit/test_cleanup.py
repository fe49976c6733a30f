from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from logbuilder import add, commit_info, metadata, protocol, write_commit

import deltalog
from deltalog.errors import InvalidArgumentError, VersionNotFoundError
from deltalog.log.checkpoint_writer import write_checkpoint
from deltalog.log.cleanup import cleanup_expired_logs, midnight_utc
from deltalog.log.crc import write_crc
from deltalog.log.post_commit import checkpoint_interval, run_post_commit, should_checkpoint
from deltalog.storage import InMemoryLogStore, LocalLogStore

DAY = 24 * 3600 * 1000
NOW = midnight_utc(1_700_000_000_000) + 15 * 3600 * 1000  # mid-afternoon UTC


def clock() -> int:
    return NOW


def table(store: InMemoryLogStore) -> deltalog.Table:
    return deltalog.Table("memory://t", store=store)


def grow(
    store: InMemoryLogStore, last: int, *, checkpoints: tuple[int, ...] = (), crc: bool = True, **conf: str
) -> None:
    """Commits 0..last (one file each), checkpoints and .crc files as asked; all files written 'now'."""
    write_commit(store, 0, commit_info("CREATE TABLE"), protocol(), metadata(**conf))
    for v in range(1, last + 1):
        write_commit(store, v, commit_info(), add(f"f{v}.parquet"))
    for v in range(last + 1):
        snap = table(store).snapshot(v)
        if crc:
            write_crc(snap)
        if v in checkpoints:
            write_checkpoint(snap, clock=clock)


def age(store: InMemoryLogStore, versions: range, days: float) -> None:
    """Set every log file of these versions to be ``days`` old."""
    for info in list(store.list_dir("_delta_log")):
        head = info.name.split(".")[0]
        if head.isdigit() and int(head) in versions:
            store.set_modification_time(info.path, int(NOW - days * DAY))


def names(paths: list[str]) -> list[str]:
    return [p.rsplit("/", 1)[1] for p in paths]


def test_deletes_only_before_the_newest_expired_checkpoint() -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 12, checkpoints=(5, 10))
    age(store, range(0, 8), 40)
    age(store, range(8, 13), 1)
    planned = cleanup_expired_logs(table(store), clock=clock, dry_run=True)
    assert names(planned) == [n for v in range(5) for n in (f"{v:020d}.crc", f"{v:020d}.json")]
    assert store.exists("_delta_log/00000000000000000000.json")  # dry run deleted nothing
    deleted = cleanup_expired_logs(table(store), clock=clock)
    assert deleted == planned
    t = table(store)
    for v in range(5, 13):
        assert t.snapshot(v).num_files() == v
    with pytest.raises(VersionNotFoundError):
        t.snapshot(4)
    assert cleanup_expired_logs(t, clock=clock) == []


class FailingDeletes(InMemoryLogStore):
    """Deletes fail (a full or read-only disk) for the paths in ``fail``."""

    def __init__(self, fail: set[str]) -> None:
        super().__init__("memory://t", clock=clock)
        self.fail = fail

    def delete(self, path: str) -> None:
        if path.rsplit("/", 1)[-1] in self.fail:
            raise deltalog.errors.StorageFullError("the disk is full", file=path)
        super().delete(path)


def test_a_failed_delete_stops_the_cleanup_and_leaves_no_gap() -> None:
    store = FailingDeletes({f"{1:020d}.json"})
    grow(store, 12, checkpoints=(5, 10))
    age(store, range(0, 13), 100)
    deleted = names(cleanup_expired_logs(table(store), clock=clock))
    assert deleted == [f"{0:020d}.crc", f"{0:020d}.json", f"{1:020d}.crc"]  # oldest first, then stopped
    remaining = sorted(int(f.name[:20]) for f in store.list_dir("_delta_log") if f.name.endswith(".json"))
    assert remaining == list(range(1, 13))  # contiguous: nothing newer than the failure was deleted
    store.fail.clear()
    assert names(cleanup_expired_logs(table(store), clock=clock))[0] == f"{1:020d}.json"  # a later run resumes
    assert table(store).snapshot().num_files() == 12


def test_within_a_version_the_checkpoint_goes_last() -> None:
    store = FailingDeletes({f"{5:020d}.checkpoint.parquet"})
    grow(store, 12, checkpoints=(5, 10))
    age(store, range(0, 13), 100)
    cleanup_expired_logs(table(store), clock=clock)
    left = sorted(f.name for f in store.list_dir("_delta_log") if f.name[:20].isdigit())
    assert left[0] == f"{5:020d}.checkpoint.parquet"  # the oldest remaining version starts at a checkpoint
    assert table(store).snapshot(5).num_files() == 5


def test_keeps_the_latest_checkpoint_and_everything_after() -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 12, checkpoints=(5, 10))
    age(store, range(0, 13), 100)
    deleted = names(cleanup_expired_logs(table(store), clock=clock))
    assert "00000000000000000005.checkpoint.parquet" in deleted
    assert all(int(n.split(".")[0]) < 10 for n in deleted)
    assert store.exists("_delta_log/00000000000000000010.checkpoint.parquet")
    assert store.exists("_delta_log/00000000000000000010.json")
    assert table(store).snapshot().num_files() == 12


def test_nothing_without_an_old_enough_checkpoint() -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 12, checkpoints=(10,))
    age(store, range(0, 8), 40)  # cutoff commit 7, but the only checkpoint is at 10
    assert cleanup_expired_logs(table(store), clock=clock) == []
    store2 = InMemoryLogStore(clock=clock)
    grow(store2, 3)
    age(store2, range(0, 4), 40)  # old, but no checkpoint at all
    assert cleanup_expired_logs(table(store2), clock=clock) == []


def test_retention_property_override_and_midnight_rounding() -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 6, checkpoints=(3,), crc=False, **{"delta.logRetentionDuration": "interval 2 days"})
    age(store, range(0, 7), 1)
    assert cleanup_expired_logs(table(store), clock=clock, dry_run=True) == []
    age(store, range(0, 4), 2.3)  # after midnight UTC two days ago: kept
    assert cleanup_expired_logs(table(store), clock=clock, dry_run=True) == []
    age(store, range(0, 4), 2.7)
    assert names(cleanup_expired_logs(table(store), clock=clock, dry_run=True))[-1] == "00000000000000000002.json"
    # exactly at midnight UTC two days ago: still expired (a commit at the cutoff is acceptable)
    for v in range(4):
        store.set_modification_time(f"_delta_log/{v:020d}.json", midnight_utc(NOW - 2 * DAY) - 3 + v)
    assert len(cleanup_expired_logs(table(store), clock=clock, dry_run=True)) == 3
    # a longer retention keeps them
    assert len(cleanup_expired_logs(table(store), clock=clock, dry_run=True, retention=3 * DAY)) == 0
    assert cleanup_expired_logs(table(store), clock=clock, retention="interval 1 hour", truncate_to_day=False)


def test_monotonized_timestamps_protect_newer_commits() -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 6, checkpoints=(2, 5), crc=False)
    age(store, range(0, 7), 1)
    age(store, range(0, 3), 40)
    store.set_modification_time("_delta_log/00000000000000000001.json", NOW)  # clock skew: newer file
    deleted = names(cleanup_expired_logs(table(store), clock=clock))
    # commit 1 counts as newer than the cutoff, so commits 1.. are kept and nothing is gained
    assert deleted == []


def test_compactions_staged_commits_and_sidecars() -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 8, checkpoints=(4,), crc=False)
    store.write("_delta_log/00000000000000000001.00000000000000000003.compacted.json", b"", overwrite=False)
    store.write("_delta_log/00000000000000000004.00000000000000000006.compacted.json", b"", overwrite=False)
    store.write("_delta_log/00000000000000000005.00000000000000000007.compacted.json", b"", overwrite=False)
    store.write("_delta_log/_staged_commits/00000000000000000003.aaaa.json", b"", overwrite=False)
    store.write("_delta_log/_staged_commits/00000000000000000009.bbbb.json", b"", overwrite=False)
    v2 = "\n".join(
        json.dumps(a)
        for a in [
            {"checkpointMetadata": {"version": 6}},
            protocol(),
            metadata(),
            {"sidecar": {"path": "keep.parquet", "sizeInBytes": 1, "modificationTime": 1}},
        ]
    )
    store.write(
        "_delta_log/00000000000000000006.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json",
        v2.encode(),
        overwrite=False,
    )
    for name in ("keep.parquet", "orphan.parquet", "fresh-orphan.parquet"):
        store.write(f"_delta_log/_sidecars/{name}", b"", overwrite=False)
    store.set_modification_time("_delta_log/_sidecars/keep.parquet", NOW - 10 * DAY)
    store.set_modification_time("_delta_log/_sidecars/orphan.parquet", NOW - 10 * DAY)
    age(store, range(0, 5), 40)
    deleted = names(cleanup_expired_logs(store, clock=clock, retention="30 days"))
    assert deleted == [
        "00000000000000000000.json",
        "00000000000000000001.json",
        "00000000000000000001.00000000000000000003.compacted.json",
        "00000000000000000002.json",
        "00000000000000000003.json",
        "00000000000000000004.00000000000000000006.compacted.json",
        "00000000000000000003.aaaa.json",
        "orphan.parquet",
    ]
    assert store.exists("_delta_log/00000000000000000005.00000000000000000007.compacted.json")
    assert store.exists("_delta_log/_sidecars/keep.parquet")
    assert store.exists("_delta_log/_sidecars/fresh-orphan.parquet")


def test_invalid_retention_is_an_error() -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 1, crc=False, **{"delta.logRetentionDuration": "forever"})
    with pytest.raises(InvalidArgumentError, match=r"delta\.logRetentionDuration"):
        cleanup_expired_logs(table(store), clock=clock)


# -------------------------------------------------------------------------------------------- post-commit


def test_post_commit_writes_crc_checkpoint_and_cleans() -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 9, crc=False, **{"delta.checkpointInterval": "5"})
    report = run_post_commit(table(store), 5, clock=clock)
    assert report.errors == [] and report.crc == "_delta_log/00000000000000000005.crc"
    assert report.checkpoint is not None and report.checkpoint.version == 5
    assert run_post_commit(table(store), 7, clock=clock).checkpoint is None
    age(store, range(0, 10), 60)
    report = run_post_commit(table(store), 9, clock=clock)
    assert report.checkpoint is None and report.cleaned == []  # cleanup follows checkpoints only
    write_commit(store, 10, commit_info(), add("f10.parquet"))
    report = run_post_commit(table(store), 10, snapshot=table(store).snapshot(10), clock=clock)
    assert report.checkpoint is not None and report.checkpoint.version == 10
    # commit 10 is new, so the cutoff commit is 9 and the checkpoint kept is the one at 5
    assert names(report.cleaned) == [f"{v:020d}.json" for v in range(5)]
    assert table(store).snapshot(5).num_files() == 5
    assert table(store).snapshot().num_files() == 10


def test_post_commit_respects_disabled_cleanup_and_default_interval() -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 10, crc=False, **{"delta.enableExpiredLogCleanup": "false"})
    age(store, range(0, 11), 60)
    snap = table(store).snapshot()
    assert checkpoint_interval(snap) == 10 and should_checkpoint(snap)
    assert not should_checkpoint(table(store).snapshot(0))
    report = run_post_commit(table(store), 10, clock=clock)
    assert report.checkpoint is not None and report.cleaned == [] and report.errors == []


def test_post_commit_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 2, crc=False, **{"delta.checkpointInterval": "2", "delta.deletedFileRetentionDuration": "bad"})
    with caplog.at_level(logging.WARNING):
        report = run_post_commit(table(store), 2, clock=clock)
        missing = run_post_commit(table(store), 99, clock=clock)
    assert report.crc is not None and report.checkpoint is None
    assert report.errors and report.errors[0].startswith("checkpoint: InvalidArgumentError")
    assert missing.errors and missing.errors[0].startswith("load snapshot")
    assert "post-commit checkpoint failed" in caplog.text


def test_invalid_checkpoint_interval_falls_back_to_default(caplog: pytest.LogCaptureFixture) -> None:
    store = InMemoryLogStore(clock=clock)
    grow(store, 0, crc=False, **{"delta.checkpointInterval": "zero"})
    with caplog.at_level(logging.WARNING):
        assert checkpoint_interval(table(store).snapshot()) == 10
    assert "invalid delta.checkpointInterval" in caplog.text


def test_local_store_with_parquet_checkpoints(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    write_commit(store, 0, commit_info("CREATE TABLE"), protocol(), metadata())
    for v in range(1, 5):
        write_commit(store, v, commit_info(), add(f"f{v}.parquet"))
    write_checkpoint(deltalog.Table(tmp_path).snapshot(3), clock=clock)
    store.write("_delta_log/_sidecars/orphan.parquet", b"", overwrite=False)
    old = (NOW - 40 * DAY) / 1000
    for p in (tmp_path / "_delta_log").rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))
    deleted = names(cleanup_expired_logs(deltalog.Table(tmp_path), clock=clock))
    assert deleted == [f"{v:020d}.json" for v in range(3)] + ["orphan.parquet"]
    assert deltalog.Table(tmp_path).snapshot().num_files() == 4
