"""Row-level concurrency across processes with a Spark writer among them: a Spark session (its own JVM)
and two kernel writers run UPDATE / DELETE on disjoint ids of one unpartitioned 4-file table with deletion
vectors while the Spark writer runs its statements. Every acknowledged statement is in the final rows and
nothing else changed; DuckDB and delta-rs read the same rows as deltalog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from readers import delta_rs_query_rows, duckdb_rows

pytestmark = [pytest.mark.spark, pytest.mark.own_jvm]

ROOT = Path(__file__).resolve().parents[3]
FILES, PER_FILE, WRITERS, SECONDS, STATEMENTS = 4, 30, 3, 300.0, 5

#: One writer (``spark`` or ``kernel``): waits for the start file, then alternately UPDATEs (v = v + 1) and
#: DELETEs its own ids (writer w owns ids = w mod WRITERS, in every file) -- the Spark writer STATEMENTS
#: times, the kernel writers (one statement per 50 ms at most) until the Spark writer is done, SECONDS at
#: most; prints each acknowledged statement as a JSON line. The Spark writer creates the start file once
#: its session is up.
WRITER = """
import json, os, sys, time
import deltalog
from deltalog.errors import ConcurrentModificationException
kind, path, w, writers, seconds, total, start, statements = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), sys.argv[7], int(sys.argv[8])
if kind == "spark":
    from deltalog.spark import local_session
    from deltalog.spark.dml import delete, update
    spark = local_session("row-concurrency-writer")
    update(spark, path, "id = -1", {"v": "v + 1"})  # warm up: nothing matches, nothing commits
    open(start, "w").close()
    run_delete = lambda key: delete(spark, path, f"id = {key}")
    run_update = lambda key: update(spark, path, f"id = {key}", {"v": "v + 1"})
else:
    import pyarrow.compute as pc
    table = deltalog.Table(path)
    run_delete = lambda key: table.delete([("id", "=", key)])
    run_update = lambda key: table.update_rows([("id", "=", key)], {"v": pc.field("v") + 1})
while not os.path.exists(start):
    time.sleep(0.05)
ids = [i for i in range(total) if i % writers == w]
done = start + ".done"
deadline = time.monotonic() + seconds
n = 0
# the Spark writer runs STATEMENTS statements; the kernel writers (paced) run until it has finished
while ids and ((n < statements) if kind == "spark" else not os.path.exists(done)) and time.monotonic() < deadline:
    if kind == "kernel":
        time.sleep(0.05)
    key = ids[n % len(ids)]
    op = "delete" if n % 5 == 4 else "update"
    try:
        result = run_delete(key) if op == "delete" else run_update(key)
        if op == "delete":
            ids.remove(key)
    except ConcurrentModificationException:
        print(json.dumps({"aborted": key}), flush=True)
    else:
        if result.version is not None:
            print(json.dumps({op: key, "by": kind}), flush=True)
    n += 1
if kind == "spark":
    open(done, "w").close()
"""


def test_spark_and_kernel_writers_in_processes_lose_nothing(tmp_path: Path) -> None:
    path, start = str(tmp_path / "t"), str(tmp_path / "go")
    for f in range(FILES):
        ids = pa.array(range(f * PER_FILE, (f + 1) * PER_FILE), pa.int64())
        deltalog.write_table(path, pa.table({"id": ids, "v": pa.array([0] * PER_FILE, pa.int64())}), mode="append",
                             properties={"delta.enableDeletionVectors": "true"} if f == 0 else None)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    kinds = ["spark", *["kernel"] * (WRITERS - 1)]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, kind, path, str(w), str(WRITERS), str(SECONDS),
                               str(FILES * PER_FILE), start, str(STATEMENTS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for w, kind in enumerate(kinds)]
    want = {i: 0 for i in range(FILES * PER_FILE)}
    by: dict[str, int] = {}
    aborted = 0
    started = time.monotonic()
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        for line in out.splitlines():
            event = json.loads(line)
            if "update" in event:
                want[event["update"]] += 1
            elif "delete" in event:
                del want[event["delete"]]
            else:
                aborted += 1
            if "by" in event:
                by[event["by"]] = by.get(event["by"], 0) + 1
    assert time.monotonic() - started < 600
    data = deltalog.Table(path).snapshot().to_arrow()
    got = dict(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))
    assert got == want, {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
    assert by.get("spark", 0) == STATEMENTS and by.get("kernel", 0) >= 10 and aborted == 0, (by, aborted)
    rows = sorted(want.items())
    assert duckdb_rows(path, ["id", "v"]) == rows
    assert delta_rs_query_rows(path, ["id", "v"]) == rows
