"""Concurrent writers on S3 (moto) and Azure (azurite): processes racing for versions, one key with many
racers, and a writer killed with SIGKILL in the middle of its commits."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.commands.check import check_table

pytestmark = pytest.mark.objectstore

WRITERS, APPENDS = 4, 10  # 40 racing commits per store


@pytest.fixture(params=["s3", "azure"])
def remote(request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    location, options = request.getfixturevalue(f"{request.param}_table")
    return location, options


def _appender(uri: str, options: dict[str, str], writer: int, count: int) -> list[int]:
    from deltalog.txn.commit import RetryPolicy

    versions = []
    for i in range(count):
        row = pa.table({"writer": pa.array([writer], pa.int64()), "seq": pa.array([i], pa.int64())})
        result = deltalog.write_table(uri, row, mode="append", storage_options=options,
                                      retry=RetryPolicy(max_attempts=200, base_delay=0.01, max_delay=0.2))
        versions.append(result.version)
    return versions


def test_processes_appending_together_lose_and_duplicate_nothing(remote: tuple[str, dict[str, str]]) -> None:
    uri, opts = remote
    empty = pa.table({"writer": pa.array([], pa.int64()), "seq": pa.array([], pa.int64())})
    deltalog.write_table(uri, empty, storage_options=opts)
    with mp.get_context("spawn").Pool(WRITERS) as pool:
        results = pool.starmap(_appender, [(uri, opts, w, APPENDS) for w in range(WRITERS)])
    versions = sorted(v for vs in results for v in vs)
    assert versions == list(range(1, WRITERS * APPENDS + 1))  # every version once, none lost
    t = deltalog.Table(uri, storage_options=opts)
    rows = t.snapshot().to_arrow().to_pylist()
    assert sorted((r["writer"], r["seq"]) for r in rows) == [(w, i) for w in range(WRITERS) for i in range(APPENDS)]
    assert t.snapshot().version == WRITERS * APPENDS
    assert check_table(t).ok


def _race(uri: str, options: dict[str, str], writer: int, start: float) -> bool:
    from deltalog.storage import store_for

    store = store_for(uri, options=options)
    while time.time() < start:
        time.sleep(0.001)
    try:
        store.write("_delta_log/00000000000000000042.json", f"writer {writer}".encode(), overwrite=False)
    except FileExistsError:
        return False
    return True


def test_a_race_for_one_key_between_processes_has_one_winner(remote: tuple[str, dict[str, str]]) -> None:
    uri, opts = remote
    start = time.time() + 3
    with mp.get_context("spawn").Pool(8) as pool:
        won = pool.starmap(_race, [(uri, opts, w, start) for w in range(8)])
    assert sum(won) == 1
    body = deltalog.Table(uri, storage_options=opts).store.read("_delta_log/00000000000000000042.json")
    assert body == f"writer {won.index(True)}".encode()


KILLED_WRITER = """
import sys, pyarrow as pa, deltalog, json
uri, options = sys.argv[1], json.loads(sys.argv[2])
i = 0
while True:
    deltalog.write_table(uri, pa.table({"writer": [9], "seq": [i]}), mode="append", storage_options=options)
    i += 1
    print(i, flush=True)
"""


def test_a_writer_killed_mid_commit_leaves_a_readable_table(remote: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    import json

    uri, opts = remote
    deltalog.write_table(uri, pa.table({"writer": pa.array([0], pa.int64()), "seq": pa.array([0], pa.int64())}),
                         storage_options=opts, properties={"delta.checkpointInterval": "4"})
    src = str(Path(deltalog.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": src}
    for delay in (1.5, 2.3, 3.1):
        proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, uri, json.dumps(opts)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    t = deltalog.Table(uri, storage_options=opts)
    snap = t.snapshot()
    assert snap.to_arrow().num_rows == snap.version + 1  # one row per committed version, nothing torn
    assert snap.version >= 3  # the writer got some commits in before each kill
    for v in sorted({*range(0, snap.version + 1, 7), *range(max(0, snap.version - 4), snap.version + 1)}):
        assert t.snapshot(v).to_arrow().num_rows == v + 1
    report = check_table(t)
    assert report.ok, report.problems
    deltalog.write_table(uri, pa.table({"writer": [1], "seq": [1]}), mode="append", storage_options=opts)
    assert t.snapshot().version == snap.version + 1
