"""Concurrent writers on one table: 4 processes append through ``write_table`` while a fifth deletes a
partition through the transaction API, all racing for the same versions.

Every worker records what it committed (version, ``txnId``, files added or removed) and every exception
it saw in a JSON file. The test then reads the ``_delta_log`` JSON commits itself (not through deltalog)
and checks that versions are contiguous, that each recorded commit is in the log exactly once (and
nothing else is), that the live files and rows are exactly "appended minus deleted", and that only the
documented exceptions occurred. A thread-based variant runs the same workers on a ``memory://`` table.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pytest

import deltalog
from deltalog.log.paths import commit_path
from deltalog.storage import LogStore, store_for
from deltalog.txn.commit import CommitFailedError
from deltalog.txn.operations import Delete

APPENDERS = 4
BATCHES = 8  # appends per appender
DELETE_ROUNDS = 4
ROWS_PER_BATCH = 3
# Conflict exceptions after which an operation may be retried from a fresh snapshot.
RETRYABLE = (deltalog.ConcurrentModificationException, CommitFailedError)
MAX_OPERATION_RETRIES = 40


class _Barrier(Protocol):
    def wait(self, timeout: float | None = None) -> int: ...


# ------------------------------------------------------------------------------------------- workers


def _batch(writer: int, k: int) -> pa.Table:
    ids = [writer * 1000 + k * 10 + j for j in range(ROWS_PER_BATCH)]
    part = "d" if k % 2 == 0 else "keep"
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array([part] * len(ids)),
            "writer": pa.array([writer] * len(ids), pa.int32()),
        }
    )


def _error(exc: BaseException) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}


def append_worker(location: str, writer: int, batches: int, barrier: _Barrier, out: str) -> None:
    """Append ``batches`` batches with ``write_table``; an append that gave up (``CommitFailedError``,
    nothing committed) is written again. Records commits, retried conflicts and fatal errors."""
    record: dict[str, Any] = {"commits": [], "retried": [], "fatal": None}
    try:
        barrier.wait(timeout=60)
        for k in range(batches):
            data = _batch(writer, k)
            for _ in range(MAX_OPERATION_RETRIES):
                try:
                    res = deltalog.write_table(location, data, mode="append")
                except RETRYABLE as exc:
                    record["retried"].append(_error(exc))
                    continue
                assert res.commit is not None
                record["commits"].append(
                    {
                        "version": res.version,
                        "txn_id": res.commit.txn_id,
                        "attempts": res.commit.attempts,
                        "added": {path: data.column("id").to_pylist() for path in res.files},
                        "files": len(res.files),
                    }
                )
                break
            else:
                raise AssertionError(f"append {k} of writer {writer} never committed")
    except BaseException as exc:
        record["fatal"] = _error(exc)
    Path(out).write_text(json.dumps(record))


def delete_worker(location: str, rounds: int, barrier: _Barrier, out: str) -> None:
    """``DELETE WHERE p = 'd'`` ``rounds`` times, spread over the appends: scan the partition (read
    predicate + files read), remove the files, commit; on a conflict start over from the new snapshot.
    Even rounds run at ``Serializable`` (concurrent appends to ``p = 'd'`` conflict), odd rounds at the
    default ``WriteSerializable`` (blind appends do not)."""
    record: dict[str, Any] = {"commits": [], "retried": [], "fatal": None, "empty_rounds": 0}
    rng = random.Random(7)
    try:
        barrier.wait(timeout=60)
        table = deltalog.Table(location)
        for r in range(rounds):
            # spread the rounds over the appends: round r starts once a share of them committed
            target = 2 + (r + 1) * APPENDERS * BATCHES // (rounds + 1)
            deadline = time.monotonic() + 60
            while table.latest_version() < target and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.02))
            level = "Serializable" if r % 2 == 0 else None
            for _ in range(MAX_OPERATION_RETRIES):
                try:
                    txn = deltalog.Table(location).transaction(Delete(predicate="p = 'd'"), isolation_level=level)
                    files = txn.scan_files([("p", "=", "d")])
                    if files.num_rows == 0:
                        record["empty_rounds"] += 1
                        break
                    txn.remove_files(files)
                    res = txn.commit()
                except RETRYABLE as exc:
                    record["retried"].append(_error(exc))
                    continue
                record["commits"].append(
                    {
                        "version": res.version,
                        "txn_id": res.txn_id,
                        "attempts": res.attempts,
                        "removed": files.column("path").to_pylist(),
                        "isolation": level or "WriteSerializable",
                    }
                )
                break
            else:
                raise AssertionError(f"delete round {r} never committed")
    except BaseException as exc:
        record["fatal"] = _error(exc)
    Path(out).write_text(json.dumps(record))


# ------------------------------------------------------------------------------------------- checking


def _setup(location: str) -> dict[str, list[int]]:
    """Version 0 (``p = 'keep'``) and version 1 (``p = 'd'``), one file each; returns file -> ids."""
    first = pa.table(
        {"id": pa.array([-1, -2], pa.int64()), "p": ["keep", "keep"], "writer": pa.array([-1, -1], pa.int32())}
    )
    second = pa.table({"id": pa.array([-3, -4], pa.int64()), "p": ["d", "d"], "writer": pa.array([-1, -1], pa.int32())})
    files: dict[str, list[int]] = {}
    for data, mode in ((first, "error"), (second, "append")):
        res = deltalog.write_table(location, data, mode=mode, partition_by=["p"] if mode == "error" else None)
        assert len(res.files) == 1
        files[res.files[0]] = data.column("id").to_pylist()
    return files


def _log_commits(store: LogStore) -> dict[int, list[dict[str, Any]]]:
    """version -> actions of every JSON commit in ``_delta_log`` (parsed here, not by deltalog)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for info in store.list_from("_delta_log/"):
        name = info.path.rsplit("/", 1)[-1]
        stem, _, ext = name.partition(".")
        if ext == "json" and stem.isdigit() and len(stem) == 20:
            text = store.read(info.path).decode("utf-8")
            out[int(stem)] = [json.loads(line) for line in text.splitlines() if line.strip()]
    return out


def _check(location: str, setup_files: dict[str, list[int]], records: list[dict[str, Any]]) -> None:
    fatal = [r["fatal"] for r in records if r["fatal"] is not None]
    assert not fatal, "a worker failed:\n" + "\n".join(f["traceback"] for f in fatal)
    retried = [e for r in records for e in r["retried"]]
    documented = {"CommitFailedError", *(c.__name__ for c in _subclasses(deltalog.ConcurrentModificationException))}
    assert {e["type"] for e in retried} <= documented, [e["traceback"] for e in retried if e["type"] not in documented]

    appends = [c for r in records[:APPENDERS] for c in r["commits"]]
    deletes = records[APPENDERS]["commits"]
    assert len(appends) == APPENDERS * BATCHES
    assert len(deletes) + records[APPENDERS]["empty_rounds"] == DELETE_ROUNDS
    assert all(c["files"] == 1 for c in appends)

    store = store_for(location)
    log = _log_commits(store)
    latest = max(log)
    # contiguous versions 0..latest, one per commit: 2 setup commits + every append + every delete
    assert sorted(log) == list(range(latest + 1))
    assert latest + 1 == 2 + len(appends) + len(deletes)

    def info(v: int) -> dict[str, Any]:
        infos: list[dict[str, Any]] = [a["commitInfo"] for a in log[v] if "commitInfo" in a]
        assert len(infos) == 1, f"version {v} has {len(infos)} commitInfo actions"
        return infos[0]

    txn_ids = {v: info(v).get("txnId") for v in log}
    ours = appends + deletes
    # each recorded commit is in the log exactly once, at the version it reported
    assert len({c["txn_id"] for c in ours}) == len(ours)
    for c in ours:
        assert txn_ids[c["version"]] == c["txn_id"], f"commit {c} is not at version {c['version']}"
    assert sorted(c["version"] for c in ours) == list(range(2, latest + 1))
    assert len(set(txn_ids.values())) == len(txn_ids)

    # the actions of each commit are what its writer staged
    def paths(v: int, kind: str) -> list[str]:
        return sorted(a[kind]["path"] for a in log[v] if kind in a)

    for c in appends:
        assert paths(c["version"], "add") == sorted(c["added"]) and not paths(c["version"], "remove")
        assert info(c["version"])["operation"] == "WRITE" and info(c["version"])["isBlindAppend"] is True
    for c in deletes:
        assert paths(c["version"], "remove") == sorted(c["removed"]) and not paths(c["version"], "add")
        assert info(c["version"])["operation"] == "DELETE"

    # a file is removed only while live: never twice, never before it was added
    added_at = {p: v for v in log for p in paths(v, "add")}
    removed_at: dict[str, int] = {}
    for c in sorted(deletes, key=lambda c: c["version"]):
        for p in c["removed"]:
            assert p not in removed_at, f"{p} removed twice (versions {removed_at[p]} and {c['version']})"
            assert added_at[p] < c["version"]
            removed_at[p] = c["version"]

    # final state: appended minus deleted, as files and as rows
    file_ids = dict(setup_files)
    for c in appends:
        file_ids.update(c["added"])
    live = sorted(set(file_ids) - set(removed_at))
    snap = deltalog.Table(location).snapshot()
    assert snap.version == latest
    assert sorted(snap.add_files().column("path").to_pylist()) == live
    expected_ids = sorted(i for p in live for i in file_ids[p])
    assert sorted(snap.to_arrow().column("id").to_pylist()) == expected_ids
    # rows of p = 'keep' are never deleted
    keep = {i for p, ids in file_ids.items() if "p=keep" in p for i in ids}
    assert keep <= set(expected_ids)


def _subclasses(cls: type) -> set[type]:
    out = {cls}
    sub: type
    for sub in cls.__subclasses__():
        out |= _subclasses(sub)
    return out


def _run(location: str, tmp: Path, start: Callable[[Callable[..., None], tuple[Any, ...]], Any], barrier: Any) -> None:
    setup_files = _setup(location)
    outs = [str(tmp / f"appender-{w}.json") for w in range(APPENDERS)] + [str(tmp / "deleter.json")]
    workers = [start(append_worker, (location, w, BATCHES, barrier, outs[w])) for w in range(APPENDERS)]
    workers.append(start(delete_worker, (location, DELETE_ROUNDS, barrier, outs[-1])))
    for w in workers:
        w.join(timeout=120)
    assert not any(w.is_alive() for w in workers), "a worker hung"
    records: list[dict[str, Any]] = [json.loads(Path(o).read_text()) for o in outs]
    _check(location, setup_files, records)


# --------------------------------------------------------------------------------------------- tests


def test_processes_append_and_delete_concurrently(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    location = str(tmp_path / "table")
    barrier = ctx.Barrier(APPENDERS + 1)

    def start(fn: Callable[..., None], args: tuple[Any, ...]) -> Any:
        p = ctx.Process(target=fn, args=args)
        p.start()
        return p

    _run(location, tmp_path, start, barrier)
    # the post-commit hooks of racing writers left readable checksums and checkpoints behind
    log_dir = Path(location) / "_delta_log"
    assert (log_dir / "00000000000000000010.checkpoint.parquet").exists()
    assert (log_dir / "_last_checkpoint").exists()
    assert Path(location, commit_path(0)).exists()


def test_threads_append_and_delete_concurrently_in_memory(tmp_path: Path) -> None:
    location = f"memory://concurrency-{uuid.uuid4().hex}"
    barrier = threading.Barrier(APPENDERS + 1)

    def start(fn: Callable[..., None], args: tuple[Any, ...]) -> Any:
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        return t

    _run(location, tmp_path, start, barrier)


@pytest.mark.parametrize("kind", ["append", "delete"])
def test_worker_records_fatal_errors(tmp_path: Path, kind: str) -> None:
    """The harness itself: a worker that cannot write reports the error instead of passing silently."""
    out = tmp_path / "out.json"
    location = str(tmp_path / "not-a-table")
    Path(location).write_text("a file where the table should be")
    barrier = threading.Barrier(1)
    if kind == "append":
        append_worker(location, 0, 1, barrier, str(out))
    else:
        delete_worker(location, 1, barrier, str(out))
    assert json.loads(out.read_text())["fatal"] is not None
