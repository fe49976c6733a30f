"""Row-level concurrency: concurrent single-row UPDATEs of one unpartitioned table, on against off.

    python bench/row_concurrency.py [--processes 8] [--updates 50] [--rows 4000000] [--quick]

A table of ``--rows`` rows (``id``, ``v``) in 4 files (1M rows each by default, 1,000 with ``--quick``),
deletion vectors on. ``--processes`` processes
start together; each runs ``--updates`` kernel UPDATEs (``Table.update_rows``: ``v = v + 1`` of one
key, its own disjoint keys spread over all 4 files), one statement at a time; a statement that aborts
with a conflict is run again (up to 200 times), as a job would have to. Three variants run on fresh
copies:

* **on** -- row-level concurrency (the default): UPDATEs of other rows of the same file both commit;
* **off** -- ``deltalog.rowLevelConcurrency=false``: Delta's reference rules, the loser aborts;
* **copy-on-write** -- deletion vectors off: every UPDATE rewrites a file, so concurrent UPDATEs of one
  file must abort (and nothing may be lost).

After each variant the table must hold exactly the acknowledged updates (``v`` = initial + number of
acknowledged updates of the key), else the run fails. Saves workload ``row-concurrency``: committed
statements per second, on against off (target: ≥ 4×, and no aborted attempt when on).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed
import pyarrow as pa
from harness import Result, save

FILES = 4
TARGET = 4.0
MAX_TRIES = 200


def _worker(path: str, keys: list[int], ready: Any, start: Any, out: Any) -> None:
    import pyarrow.compute as pc

    import deltalog
    from deltalog.errors import ConcurrentModificationException

    table = deltalog.Table(path)
    table.snapshot()
    pa.array([0])  # pyarrow imports pandas on its first conversion of Python values: not part of the timing
    acked: list[int] = []
    aborted = 0
    ready.release()
    start.wait()
    try:
        for key in keys:
            for _ in range(MAX_TRIES):  # an aborted statement is run again, as a job would have to
                try:
                    result = table.update_rows([("id", "=", key)], {"v": pc.field("v") + 1})
                except ConcurrentModificationException:
                    aborted += 1
                    continue
                if result.version is not None:
                    acked.append(key)
                break
    except Exception as exc:  # reported by the parent, which would otherwise wait for this writer
        out.put(f"{type(exc).__name__}: {exc}")
        return
    out.put((acked, aborted))


def make_table(path: str, rows: int, properties: dict[str, str]) -> None:
    """``rows`` rows in ``FILES`` files (one append each), ``v = 0``."""
    import deltalog

    per = rows // FILES
    for f in range(FILES):
        ids = pa.array(range(f * per, (f + 1) * per), pa.int64())
        deltalog.write_table(path, pa.table({"id": ids, "v": pa.array([0] * per, pa.int64())}),
                             mode="append", properties=properties if f == 0 else None)


def run_variant(path: str, processes: int, updates: int, rows: int) -> dict[str, Any]:
    """Run the writers on ``path``; returns wall time, committed and aborted statements, checked."""
    import deltalog

    per = rows // FILES
    ctx = mp.get_context("spawn")
    ready, start, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    # writer w updates keys w, w + processes, ... of every file in turn: all writers share all files
    plans = [[(i % FILES) * per + (i // FILES) * processes + w for i in range(updates)] for w in range(processes)]
    workers = [ctx.Process(target=_worker, args=(path, plan, ready, start, out)) for plan in plans]
    for p in workers:
        p.start()
    for _ in workers:  # every interpreter started, imported and holding its snapshot before the clock starts
        if not ready.acquire(timeout=300):
            raise SystemExit(f"{path}: a writer did not start")
    t0 = time.perf_counter()
    start.set()
    results = [out.get(timeout=900) for _ in workers]
    wall = time.perf_counter() - t0
    for p in workers:
        p.join()
    failed = [r for r in results if isinstance(r, str)]
    if failed:
        raise SystemExit(f"{path}: a writer failed: {failed[0]}")
    acked = [k for keys, _ in results for k in keys]
    aborted = sum(a for _, a in results)
    data = deltalog.Table(path).snapshot().to_arrow()
    got = dict(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))
    want = {i: 0 for i in range(rows)}
    for k in acked:
        want[k] += 1
    if got != want:
        bad = sorted(k for k in want if got.get(k) != want[k])[:5]
        raise SystemExit(f"{path}: the table does not hold exactly the acknowledged updates (keys {bad})")
    return {"wall_s": wall, "committed": len(acked), "aborted": aborted, "per_s": len(acked) / wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(parser)
    parser.add_argument("--processes", type=int, default=None, help="writer processes (default 8, quick: 2)")
    parser.add_argument("--updates", type=int, default=None, help="UPDATEs per process (default 50, quick: 5)")
    parser.add_argument("--rows", type=int, default=None, help="table rows (default 4,000,000, quick: 4,000)")
    args = parser.parse_args(argv)
    processes = args.processes or (2 if args.quick else 8)
    updates = args.updates or (5 if args.quick else 50)
    args.rows = args.rows or (4000 if args.quick else 4_000_000)
    if processes * updates > args.rows // FILES * FILES:
        raise SystemExit("--rows must be at least --processes x --updates (every update has its own key)")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="row-concurrency-", dir=args.data_dir))
    variants = {
        "on": {"delta.enableDeletionVectors": "true"},
        "off": {"delta.enableDeletionVectors": "true", "deltalog.rowLevelConcurrency": "false"},
        "copy-on-write": {"delta.enableDeletionVectors": "false"},
    }
    outcome: dict[str, dict[str, Any]] = {}
    try:
        for name, props in variants.items():
            path = str(work / name.replace("-", "_"))
            make_table(path, args.rows, props)
            outcome[name] = run_variant(path, processes, updates, args.rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{processes} processes x {updates} single-key UPDATEs, one table of {args.rows:,} rows in {FILES} files")
    for name, o in outcome.items():
        print(f"  {name:14s} {o['committed']:4d} committed, {o['aborted']:4d} aborted, {o['wall_s']:6.2f} s, "
              f"{o['per_s']:6.1f} committed/s")
    on, off = outcome["on"], outcome["off"]
    result = Result(
        workload="row-concurrency",
        title=f"{processes} processes x {updates} UPDATEs of disjoint keys on one 4-file table of {args.rows:,} rows "
              "(kernel API)",
        deltalog_median=on["per_s"],
        anchor_median=max(off["per_s"], 1e-9),
        target=TARGET,
        metric="throughput",
        unit="committed statements/s",
        anchor="row-level concurrency off (Delta's reference conflict rules)",
        params={"processes": processes, "updates": updates, "rows": args.rows, "files": FILES},
        extra={"aborted_with_row_level_concurrency": on["aborted"],
               **{name: {k: round(v, 3) if isinstance(v, float) else v for k, v in o.items()}
                  for name, o in outcome.items()}},
        limits={"aborted_with_row_level_concurrency": 1},
        quick=args.quick,
    )
    save(result, harness.results_dir_for(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
