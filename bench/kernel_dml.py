"""The kernel's Arrow DML against delta-rs on the same tables (no JVM): MERGE, DELETE and compaction.

* ``kernel-merge`` -- upsert (``when_matched_update_all`` + ``when_not_matched_insert_all``) of a source of
  ``--rows / 10`` rows, half matching, into a ``--rows``-row table of 8 files: ``Table.merge`` against
  delta-rs's ``DeltaTable.merge`` (the same builder);
* ``kernel-delete`` -- ``Table.delete("id % 100 = 7")`` (1% of the rows, copy-on-write) against delta-rs's
  ``DeltaTable.delete`` with the same SQL;
* ``kernel-compact`` -- compaction of 64 small files into one: ``Table.compact()`` against delta-rs's
  ``optimize.compact()``.

Both sides start from an identical copy of the table made before each timed run (copying is not timed),
alternating sides; results are reported (no ratio target) and each side's row count is checked.

    python bench/kernel_dml.py                 # 2,000,000 rows
    python bench/kernel_dml.py --quick         # 20,000 rows, one run
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import deltalake  # before pyarrow.parquet, see tests/interop/deltars_worker.py
import harness
import numpy as np
import pyarrow as pa
from harness import Result, save

import deltalog
import deltalog.commands.compact
import deltalog.commands.delete
import deltalog.commands.merge  # imported before timing, as delta-rs is

INF = float("inf")


def _data(rows: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": pa.array(np.arange(rows), pa.int64()), "v": pa.array(rng.random(rows)),
                     "s": pa.array(np.arange(rows) % 1000).cast(pa.string())})


def _build(path: Path, data: pa.Table, files: int) -> None:
    for i in range(files):
        deltalake.write_deltalake(str(path), data.slice(i * data.num_rows // files, data.num_rows // files),
                                  mode="append")


def _timed(work: Path, base: Path, ours: Callable[[Path], int], theirs: Callable[[Path], int], repeat: int
           ) -> tuple[list[float], list[float], int, int]:
    """Alternating timed runs, each on a fresh copy of ``base``; returns times and the row counts after."""
    mine: list[float] = []
    anchor: list[float] = []
    rows = [0, 0]
    for i in range(repeat):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            copy = work / f"run_{uuid.uuid4().hex[:8]}"
            shutil.copytree(base, copy)
            t0 = time.perf_counter()
            rows[side] = (ours if side == 0 else theirs)(copy)
            (mine if side == 0 else anchor).append(time.perf_counter() - t0)
            shutil.rmtree(copy)
    return mine, anchor, rows[0], rows[1]


def _count(path: Path) -> int:
    return deltalog.Table(str(path)).snapshot().to_arrow(columns=["id"]).num_rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(p)
    p.add_argument("--rows", type=int, default=None, help="target rows (default 2,000,000; quick: 20,000)")
    p.add_argument("--repeat", type=int, default=None, help="runs per side (default 3, quick: 1)")
    args = p.parse_args(argv)
    rows = args.rows or (20_000 if args.quick else 2_000_000)
    repeat = args.repeat or (1 if args.quick else 3)
    results = harness.results_dir_for(args)
    results.mkdir(parents=True, exist_ok=True)
    work = args.data_dir / f"kernel_dml_{uuid.uuid4().hex[:8]}"
    try:
        data = _data(rows)
        base = work / "base"
        _build(base, data, 8)
        m = rows // 10
        ids = np.concatenate([np.arange(0, rows, 20)[: m // 2], np.arange(rows, rows + m - m // 2)])
        source = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(np.zeros(len(ids))),
                           "s": pa.array(["new"] * len(ids))})

        def merge_ours(path: Path) -> int:
            deltalog.Table(str(path)).merge(source, "target.id = source.id").when_matched_update_all() \
                .when_not_matched_insert_all().execute()
            return _count(path)

        def merge_theirs(path: Path) -> int:
            deltalake.DeltaTable(str(path)).merge(source, "target.id = source.id", source_alias="source",
                                                  target_alias="target").when_matched_update_all() \
                .when_not_matched_insert_all().execute()
            return _count(path)

        def delete_ours(path: Path) -> int:
            deltalog.Table(str(path)).delete("id % 100 = 7")
            return _count(path)

        def delete_theirs(path: Path) -> int:
            deltalake.DeltaTable(str(path)).delete("id % 100 = 7")
            return _count(path)

        small = work / "small"
        _build(small, data, 64)

        def compact_ours(path: Path) -> int:
            deltalog.Table(str(path)).compact()
            return _count(path)

        def compact_theirs(path: Path) -> int:
            deltalake.DeltaTable(str(path)).optimize.compact()
            return _count(path)

        cases = [
            ("kernel-merge", f"kernel MERGE upsert, {len(ids):,} into {rows:,} rows (half matched), 8 files",
             base, merge_ours, merge_theirs, "delta-rs merge", rows + len(ids) - m // 2),
            ("kernel-delete", f"kernel DELETE of 1% of {rows:,} rows (8 files), copy-on-write", base, delete_ours,
             delete_theirs, "delta-rs delete", rows - rows // 100),
            ("kernel-compact", f"kernel compaction of 64 files ({rows // 64 * 64:,} rows) into one", small,
             compact_ours, compact_theirs, "delta-rs optimize.compact()", rows // 64 * 64),
        ]
        for workload, title, table, ours, theirs, anchor_name, want in cases:
            mine, anchor, got_ours, got_theirs = _timed(work, table, ours, theirs, repeat)
            if got_ours != want or got_theirs != want:
                print(f"{workload}: expected {want} rows, deltalog {got_ours}, delta-rs {got_theirs}", file=sys.stderr)
                return 1
            r = Result(workload=workload, title=title, deltalog_median=harness.median(mine),
                       anchor_median=harness.median(anchor), target=INF, anchor=anchor_name, deltalog_runs=mine,
                       anchor_runs=anchor, params={"rows": rows}, quick=bool(args.quick))
            save(r, results)
            print(f"{workload}: deltalog {r.deltalog_median:.2f} s, {anchor_name} {r.anchor_median:.2f} s, "
                  f"{r.ratio:.2f}x", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
