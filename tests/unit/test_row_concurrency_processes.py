"""Row-level concurrency across processes (issue "Row-level concurrency"): writers in separate processes
running DELETE / UPDATE on disjoint ids of one unpartitioned 4-file table for a fixed time. Every
acknowledged statement is in the final rows, no other change is, and DuckDB and delta-rs read the same
rows as deltalog. A writer killed with SIGKILL in the middle of a rebase leaves the table readable with
the winner's commit intact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa

import deltalog
from readers import delta_rs_query_rows, duckdb_rows

ROOT = Path(__file__).resolve().parents[2]
FILES, PER_FILE, WRITERS, SECONDS = 4, 50, 4, 4.0

#: One writer: for SECONDS, alternately UPDATE (v = v + 1) and DELETE its own ids (writer w owns
#: ids = w mod WRITERS, in every file); prints each acknowledged statement as a JSON line.
WRITER = """
import json, sys, time
import pyarrow.compute as pc
import deltalog
from deltalog.errors import ConcurrentModificationException
path, w, writers, seconds, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
table = deltalog.Table(path)
ids = [i for i in range(total) if i % writers == w]
deadline = time.monotonic() + seconds
n = 0
while time.monotonic() < deadline and ids:
    key = ids[n % len(ids)]
    kind = "delete" if n % 5 == 4 else "update"
    try:
        if kind == "delete":
            result = table.delete([("id", "=", key)])
            ids.remove(key)
        else:
            result = table.update_rows([("id", "=", key)], {"v": pc.field("v") + 1})
    except ConcurrentModificationException as exc:
        print(json.dumps({"aborted": key, "why": str(exc)[:800]}), flush=True)
    else:
        if result.version is not None:
            print(json.dumps({kind: key}), flush=True)
    n += 1
"""


def _make(path: str) -> None:
    for f in range(FILES):
        ids = pa.array(range(f * PER_FILE, (f + 1) * PER_FILE), pa.int64())
        deltalog.write_table(path, pa.table({"id": ids, "v": pa.array([0] * PER_FILE, pa.int64())}), mode="append",
                             properties={"delta.enableDeletionVectors": "true"} if f == 0 else None)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def test_writers_in_processes_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _make(path)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, path, str(w), str(WRITERS), str(SECONDS),
                               str(FILES * PER_FILE)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
             for w in range(WRITERS)]
    want = {i: 0 for i in range(FILES * PER_FILE)}
    aborted = acknowledged = 0
    reasons: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        for line in out.splitlines():
            event = json.loads(line)
            if "update" in event:
                want[event["update"]] += 1
            elif "delete" in event:
                del want[event["delete"]]
            else:
                aborted += 1
                reasons.append(event["why"])
            acknowledged += "aborted" not in event
    data = deltalog.Table(path).snapshot().to_arrow()
    got = dict(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))
    assert got == want, {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
    # the writers share every file: each commit was reconciled (the reasons name any conflict that was not)
    assert acknowledged >= 20 and aborted == 0, reasons
    rows = sorted(want.items())
    assert duckdb_rows(path, ["id", "v"]) == rows
    assert delta_rs_query_rows(path, ["id", "v"]) == rows


#: A DELETE of ids >= 100 whose first commit attempt finds a winner (a DELETE of id < 10, same file) and
#: then hangs while writing the rebased deletion vector, so the test can kill it there.
KILLED = """
import sys, time
import deltalog
from deltalog.commands import dv_rebase
from deltalog.txn.transaction import Transaction
path, marker = sys.argv[1], sys.argv[2]
commit = Transaction.commit
def raced(self, *args, **kwargs):
    Transaction.commit = commit
    deltalog.Table(path).delete([("id", "<", 10)])
    return commit(self, *args, **kwargs)
Transaction.commit = raced
def hang(*args, **kwargs):
    open(marker, "w").close()
    time.sleep(600)
dv_rebase.write_deletion_vectors = hang
deltalog.Table(path).delete([("id", ">=", 100)])
"""


def test_writer_killed_during_a_rebase(tmp_path: Path) -> None:
    path, marker = str(tmp_path / "t"), tmp_path / "rebasing"
    deltalog.write_table(path, pa.table({"id": pa.array(range(200), pa.int64())}),
                         properties={"delta.enableDeletionVectors": "true"})
    log = tmp_path / "writer.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", KILLED, path, str(marker)], env=_env(),
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the writer never reached the rebase"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    table = deltalog.Table(path)
    assert table.latest_version() == 1 and table.history(limit=1)[0]["operation"] == "DELETE"
    ids = list(range(10, 200))  # the winner's delete, nothing of the killed one
    assert sorted(table.snapshot().to_arrow().column("id").to_pylist()) == ids
    assert duckdb_rows(path, ["id"]) == [(i,) for i in ids]
