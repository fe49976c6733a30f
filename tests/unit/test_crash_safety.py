"""Who owns the data files when a commit fails, how the outcome of a failed put is settled, and what a
user is told: named storage errors, interrupts after a landed commit, post-commit failures."""

from __future__ import annotations

import errno
import os
import pickle
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import (
    CommitOutcomeUnknownError,
    DeltaError,
    StorageError,
    StorageFullError,
    StorageIOError,
    StoragePermissionError,
)
from deltalog.storage import LocalLogStore
from deltalog.storage.local import FileOps
from deltalog.storage.memory import InMemoryLogStore
from deltalog.txn.commit import ABSENT, LANDED, TAKEN, UNKNOWN, RetryPolicy, publish_commit

DATA = pa.table({"id": pa.array([1, 2, 3], pa.int64())})


def data_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.parquet") if "_delta_log" not in p.parts)


class FlakyCommits(InMemoryLogStore):
    """A store whose put of commit files misbehaves as ``mode`` says (once)."""

    def __init__(self, mode: str) -> None:
        super().__init__(f"memory://flaky-{mode}-{random.random()}")
        self.mode = mode
        self.read_fails = False

    def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
        commit = path.startswith("_delta_log/") and path.endswith(".json") and not overwrite
        if commit and self.mode == "lost-response":  # the put landed, its answer was lost
            self.mode = ""
            super().write(path, data, overwrite=overwrite)
            raise TimeoutError("the response never came")
        if commit and self.mode == "interrupt-after":
            self.mode = ""
            super().write(path, data, overwrite=overwrite)
            raise KeyboardInterrupt
        if commit and self.mode == "fail-unknown":
            self.mode = ""
            self.read_fails = True
            raise ConnectionResetError("connection reset by peer")
        if commit and self.mode == "fail-absent":
            self.mode = ""
            raise OSError(errno.EIO, "Input/output error")
        super().write(path, data, overwrite=overwrite)

    def read(self, path: str) -> bytes:
        if self.read_fails:
            raise ConnectionResetError("connection reset by peer")
        return super().read(path)


def test_publish_settles_every_outcome_of_a_put() -> None:
    store = FlakyCommits("lost-response")
    outcome, error = publish_commit(store, 0, b'{"commitInfo":{"txnId":"a"}}\n')
    assert (outcome, type(error)) == (LANDED, TimeoutError)
    assert publish_commit(store, 0, b'{"commitInfo":{"txnId":"b"}}\n') == (TAKEN, None)
    store.mode = "fail-absent"
    assert publish_commit(store, 1, b"x\n")[0] == ABSENT
    store.mode = "fail-unknown"
    assert publish_commit(store, 2, b"x\n")[0] == UNKNOWN


def test_a_lost_response_after_the_put_landed_is_a_success() -> None:
    store = FlakyCommits("")
    deltalog.write_table(store.root, DATA, store=store)
    store.mode = "lost-response"
    result = deltalog.write_table(store.root, DATA, mode="append", store=store)
    assert result.version == 1
    assert deltalog.Table(store.root, store=store).snapshot().to_arrow().num_rows == 6


def test_an_interrupt_after_the_commit_landed_keeps_the_files_and_names_the_version() -> None:
    store = FlakyCommits("")
    deltalog.write_table(store.root, DATA, store=store)
    store.mode = "interrupt-after"
    with pytest.raises(KeyboardInterrupt) as info:
        deltalog.write_table(store.root, DATA, mode="append", store=store)
    assert info.value.deltalog_committed_version == 1  # type: ignore[attr-defined]
    assert any("was committed as version 1" in n for n in info.value.__notes__)
    snap = deltalog.Table(store.root, store=store).snapshot()
    assert (snap.version, snap.to_arrow().num_rows) == (1, 6)  # every file of version 1 is there


def test_an_unknown_outcome_keeps_the_files_and_says_how_to_check() -> None:
    store = FlakyCommits("")
    deltalog.write_table(store.root, DATA, store=store)
    before = {f.path for f in store.list_dir("", recursive=True) if f.path.endswith(".parquet")}
    store.mode = "fail-unknown"
    with pytest.raises(CommitOutcomeUnknownError) as info:
        deltalog.write_table(store.root, DATA, mode="append", store=store)
    store.read_fails = False
    after = {f.path for f in store.list_dir("", recursive=True) if f.path.endswith(".parquet")}
    assert len(after - before) == 1  # the new data file was kept: it may be referenced
    message = str(info.value)
    assert "deltalog check" in message and "version 1" in message and "WRITE failed" in message
    assert isinstance(info.value, OSError)


def test_a_put_that_provably_failed_deletes_the_files_and_says_nothing_was_committed() -> None:
    store = FlakyCommits("")
    deltalog.write_table(store.root, DATA, store=store)
    before = {f.path for f in store.list_dir("", recursive=True)}
    store.mode = "fail-absent"
    with pytest.raises(StorageIOError) as info:
        deltalog.write_table(store.root, DATA, mode="append", store=store)
    assert "nothing was committed, the table is still at version 0" in str(info.value)
    assert {f.path for f in store.list_dir("", recursive=True)} == before


class Faulty(FileOps):
    """Raises ``error`` on the first call of ``method`` (optionally only for paths containing ``where``)."""

    def __init__(self, method: str, error: OSError, where: str = "") -> None:
        self.method, self.error, self.where = method, error, where

    def _maybe(self, name: str, path: str) -> None:
        if name == self.method and self.where in path and self.error is not None:
            error, self.error = self.error, None  # type: ignore[assignment]
            raise error

    def link(self, src: str, dst: str) -> None:
        self._maybe("link", dst)
        super().link(src, dst)

    def unlink(self, path: str) -> None:
        self._maybe("unlink", path)
        super().unlink(path)

    def open_output(self, path: str) -> Any:
        self._maybe("open_output", path)
        return super().open_output(path)

    def write_new(self, path: str, data: bytes) -> None:
        self._maybe("write_new", path)
        super().write_new(path, data)


def with_ops(monkeypatch: pytest.MonkeyPatch, ops: FileOps) -> None:
    from deltalog.storage import local

    monkeypatch.setattr(local, "OS_OPS", ops)


@pytest.mark.parametrize(
    ("code", "cls", "words"),
    [
        (errno.EACCES, StoragePermissionError, "no write permission on _delta_log"),
        (errno.EROFS, StoragePermissionError, "the file system is read-only"),
        (errno.EDQUOT, StorageFullError, "the disk quota is exhausted"),
        (errno.EIO, StorageIOError, "an I/O error"),
    ],
)
def test_a_failed_commit_file_is_a_named_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, cls: type[StorageError], words: str
) -> None:
    deltalog.write_table(str(tmp_path), DATA)
    with_ops(monkeypatch, Faulty("link", OSError(code, os.strerror(code)), where="_delta_log"))
    with pytest.raises(cls) as info:
        deltalog.write_table(str(tmp_path), DATA, mode="append")
    err = info.value
    assert isinstance(err, OSError) and err.errno == code
    assert words in err.message and "_delta_log/00000000000000000001.json" in err.message
    assert err.message.startswith("WRITE failed: ") and "the table is still at version 0" in err.message
    assert ".tmp" not in str(err)  # never the temporary file's name
    assert data_files(tmp_path) == sorted(  # the new data file is gone, the committed one stays
        a["path"] for a in deltalog.Table(str(tmp_path)).snapshot().add_files().to_pylist()
    )


def test_a_full_disk_while_writing_data_names_the_file_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deltalog.write_table(str(tmp_path), DATA)
    before = data_files(tmp_path)
    with_ops(monkeypatch, Faulty("open_output", OSError(errno.EFBIG, "File too large")))
    with pytest.raises(StorageFullError, match=r"WRITE failed: the file would exceed the file-size limit .* "
                                               r"while writing part-.*\.parquet; nothing was committed"):
        deltalog.write_table(str(tmp_path), DATA, mode="append")
    assert data_files(tmp_path) == before
    assert deltalog.Table(str(tmp_path)).snapshot().version == 0


def test_post_commit_failures_are_reported_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deltalog.write_table(str(tmp_path), DATA, properties={"delta.checkpointInterval": "2"})
    with_ops(monkeypatch, Faulty("write_new", OSError(errno.ENOSPC, "No space left on device"), where="checkpoint"))
    result = deltalog.write_table(str(tmp_path), DATA, mode="append")
    assert result.version == 1
    deltalog.write_table(str(tmp_path), DATA, mode="append")  # version 2: its checkpoint fails
    with_ops(monkeypatch, Faulty("write_new", OSError(errno.ENOSPC, "No space left on device"), where="checkpoint"))
    res = deltalog.write_table(str(tmp_path), DATA, mode="append")  # version 3: no checkpoint due
    assert res.commit is not None and res.commit.post_commit_errors == ()
    table = deltalog.Table(str(tmp_path))
    txn = table.transaction(deltalog.txn.operations.Write(mode="Append"))
    txn.add_file(deltalog.protocol.actions.Add("extra.parquet", {}, 1, 0, True))
    with_ops(monkeypatch, Faulty("write_new", OSError(errno.ENOSPC, "No space left on device"), where="checkpoint"))
    committed = txn.commit()  # version 4 is a checkpoint version: the checkpoint write fails
    assert committed.version == 4
    assert [e.split(":")[0] for e in committed.post_commit_errors] == ["checkpoint"]
    assert "the disk is full" in committed.post_commit_errors[0]


def test_an_interrupt_during_post_commit_names_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deltalog.write_table(str(tmp_path), DATA)

    class Interrupting(FileOps):
        def write_new(self, path: str, data: bytes) -> None:
            if ".crc" in path:
                raise KeyboardInterrupt
            super().write_new(path, data)

    with_ops(monkeypatch, Interrupting())
    with pytest.raises(KeyboardInterrupt) as info:
        deltalog.write_table(str(tmp_path), DATA, mode="append")
    assert info.value.deltalog_committed_version == 1  # type: ignore[attr-defined]
    assert "'write checksum'" in info.value.__notes__[0]
    monkeypatch.undo()
    assert deltalog.Table(str(tmp_path)).snapshot().to_arrow().num_rows == 6


def test_storage_errors_are_os_errors_that_survive_pickling() -> None:
    err = StoragePermissionError("no write permission on _delta_log", errno=13, table="/t", file="x")
    err = err.in_context(operation="DELETE", committed_version=None, table_version=2)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is StoragePermissionError and isinstance(back, PermissionError)
    assert (back.errno, back.operation, back.table_version, str(back)) == (13, "DELETE", 2, str(err))
    assert back.in_context(operation="OTHER") is back  # context is given once
    assert isinstance(back, DeltaError)


def test_vacuum_names_the_committed_start_when_a_delete_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deltalog.write_table(str(tmp_path), DATA)
    deltalog.write_table(str(tmp_path), DATA, mode="overwrite")
    with_ops(monkeypatch, Faulty("unlink", OSError(errno.EACCES, "Permission denied"), where="part-"))
    with pytest.raises(StoragePermissionError) as info:
        deltalog.Table(str(tmp_path)).vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    message = info.value.message
    assert message.startswith("VACUUM failed: no write permission on the table directory")
    assert "version 3 was committed by this operation before the failure" in message  # START 2, END 3
    history = [h["operation"] for h in deltalog.Table(str(tmp_path)).history()]
    assert history[:2] == ["VACUUM END", "VACUUM START"]  # the failure was recorded as VACUUM END (FAILED)


def test_retry_policy_gives_up_with_the_files_discarded(tmp_path: Path) -> None:
    from deltalog.txn.commit import CommitFailedError

    deltalog.write_table(str(tmp_path), DATA)

    class AlwaysBeaten(LocalLogStore):
        """Before each of our commit puts, another writer (its own store) takes that version."""

        def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
            if path.startswith("_delta_log/") and path.endswith(".json") and not overwrite:
                deltalog.write_table(str(tmp_path), DATA, mode="append")
            super().write(path, data, overwrite=overwrite)

    ours_before = set(data_files(tmp_path))
    with pytest.raises(CommitFailedError):
        deltalog.write_table(str(tmp_path), DATA, mode="append", store=AlwaysBeaten(str(tmp_path)),
                             retry=RetryPolicy(max_attempts=2, base_delay=0))
    live = {a["path"] for a in deltalog.Table(str(tmp_path)).snapshot().add_files().to_pylist()}
    assert set(data_files(tmp_path)) == live  # our file is gone; the winners' files are all there
    assert ours_before < live
