"""The cost UniForm adds to a commit (issue 56): the same kernel commits with and without the Iceberg metadata.

* ``uniform-appends`` -- ``--commits`` (100) sequential small appends (``deltalog.write_table(..., mode="append")``
  of ``--rows`` rows, a new ``Table`` and snapshot per call as a user's script does) to a UniForm table
  (``delta.enableIcebergCompatV2`` + ``delta.universalFormat.enabledFormats = iceberg``; column mapping in
  ``name`` mode comes with the compat property) against the same table without
  ``delta.universalFormat.enabledFormats``. That anchor is the fair one: it keeps column mapping and
  icebergCompatV2's rules (field ids, the compat tag, ``numRecords``), so the only difference is the Iceberg
  post-commit step, which is what UniForm adds. A plain table (no properties) is measured in the same run and
  reported too (``extra``), so the cost of column mapping and the compat rules is visible as well.
* ``uniform-optimize`` -- one OPTIMIZE (``Table.compact()``, kernel compaction) of a ``--files`` (1,000) file
  table into one file, UniForm against the same table without ``enabledFormats``. Each run builds both tables
  afresh (one write of ``--files`` files, not timed; the UniForm one gets its Iceberg metadata with that
  write), then empties UniForm's in-process caches of Iceberg metadata and manifests, so the timed OPTIMIZE
  reads them from storage as a fresh process would (the Delta side also loads its snapshot from the log).

Target for both: a commit with UniForm costs at most 1.5x one without. The sides are measured alternately: per
commit (rotating which table goes first) for the appends, per run (alternating order) for OPTIMIZE; the
ratios are of medians: for the appends the median commit of all runs (``deltalog_runs`` / ``anchor_runs``
hold each run's mean per commit, and ``extra`` the median of those means and their ratio, which also counts
the checkpoint every 10 commits on both sides and the load spikes of a shared machine). Each side's result
is checked: deltalog's row count, and for UniForm pyiceberg reads the same count from the table's path.

    python bench/uniform.py                  # 100 appends of 100 rows, OPTIMIZE of 1,000 files, 5 runs
    python bench/uniform.py --quick          # 5 appends, OPTIMIZE of 20 files, one run
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import uuid
from pathlib import Path

import harness  # puts src/ on sys.path when deltalog is not installed
import numpy as np
import pyarrow as pa
from harness import Result, median, save

import deltalog
import deltalog.commands.compact  # imported before timing, on both sides
import deltalog.uniform

TARGET = 1.5
COMPAT = {"delta.enableIcebergCompatV2": "true"}
UNIFORM = {**COMPAT, "delta.universalFormat.enabledFormats": "iceberg"}
SIDES: dict[str, dict[str, str]] = {"uniform": UNIFORM, "compat": COMPAT, "plain": {}}


def _rows(start: int, n: int) -> pa.Table:
    rng = np.random.default_rng(start)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": pa.array(ids),
        "value": pa.array(rng.random(n)),
        "name": pa.array([f"name-{i % 97}" for i in ids]),
        "ts": pa.array(ids * 1_000_000, pa.timestamp("us", tz="UTC")),
    })


def _iceberg_rows(path: Path) -> int:
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(str(path)).scan().to_arrow().num_rows


def _delta_rows(path: Path) -> int:
    return deltalog.Table(str(path)).snapshot().to_arrow(columns=["id"]).num_rows


def _check(path: Path, side: str, want: int) -> None:
    got = _delta_rows(path)
    if got != want:
        raise SystemExit(f"{path.name}: deltalog reads {got} rows, expected {want}")
    if side == "uniform" and (ice := _iceberg_rows(path)) != want:
        raise SystemExit(f"{path.name}: pyiceberg reads {ice} rows, expected {want}")


def run_appends(root: Path, commits: int, rows: int) -> dict[str, list[float]]:
    """One run: a fresh table per side, then ``commits`` appends to each, rotating the order per commit;
    returns each side's seconds per commit."""
    paths = {side: root / f"{side}_{uuid.uuid4().hex[:8]}" for side in SIDES}
    for side, props in SIDES.items():
        deltalog.write_table(str(paths[side]), _rows(0, rows), properties=props)
    per: dict[str, list[float]] = {side: [] for side in SIDES}
    order = list(SIDES)
    for c in range(commits):
        data = _rows((c + 1) * rows, rows)
        for side in order[c % len(order):] + order[:c % len(order)]:
            t0 = time.perf_counter()
            deltalog.write_table(str(paths[side]), data, mode="append")
            per[side].append(time.perf_counter() - t0)
    for side, path in paths.items():
        _check(path, side, (commits + 1) * rows)
        shutil.rmtree(path)
    return per


def _build_files(path: Path, files: int, rows_per_file: int, props: dict[str, str]) -> None:
    data = _rows(0, files * rows_per_file)
    batches = data.to_batches(max_chunksize=rows_per_file)
    deltalog.write_table(str(path), pa.Table.from_batches(batches), properties=props, target_file_size=1)
    if deltalog.Table(str(path)).snapshot().num_files() != files:
        raise SystemExit(f"{path.name}: expected {files} files")


def _forget_iceberg_caches() -> None:
    from deltalog.uniform.convert import clear_caches

    clear_caches()


def run_optimize(root: Path, files: int, rows_per_file: int, repeat: int) -> tuple[list[float], list[float]]:
    """``repeat`` runs of OPTIMIZE on a fresh ``files``-file table per side, alternating the order."""
    timed: dict[str, list[float]] = {"uniform": [], "compat": []}
    for side in ("uniform", "compat"):  # warm-up, not timed: the first OPTIMIZE and Iceberg read import modules
        path = root / f"warm_{side}_{uuid.uuid4().hex[:8]}"
        _build_files(path, 4, rows_per_file, SIDES[side])
        _forget_iceberg_caches()
        deltalog.Table(str(path)).compact()
        shutil.rmtree(path)
    for i in range(repeat):
        for side in (("uniform", "compat") if i % 2 == 0 else ("compat", "uniform")):
            path = root / f"opt_{side}_{uuid.uuid4().hex[:8]}"
            _build_files(path, files, rows_per_file, SIDES[side])
            _forget_iceberg_caches()
            table = deltalog.Table(str(path))
            t0 = time.perf_counter()
            result = table.compact()
            timed[side].append(time.perf_counter() - t0)
            if result.num_files_removed != files or result.num_files_added != 1:
                raise SystemExit(f"{path.name}: OPTIMIZE removed {result.num_files_removed} files, "
                                 f"added {result.num_files_added}")
            _check(path, side, files * rows_per_file)
            shutil.rmtree(path)
    return timed["uniform"], timed["compat"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(p)
    p.add_argument("--commits", type=int, default=None, help="appends per run (default 100, quick: 5)")
    p.add_argument("--rows", type=int, default=100, help="rows per append and per OPTIMIZE input file")
    p.add_argument("--files", type=int, default=None, help="files OPTIMIZE compacts (default 1,000, quick: 20)")
    p.add_argument("--repeat", type=int, default=None, help="runs per workload (default 5, quick: 1)")
    p.add_argument("--only", choices=["appends", "optimize"], default=None, help="run one workload")
    args = p.parse_args(argv)
    commits = args.commits or (5 if args.quick else 100)
    files = args.files or (20 if args.quick else 1000)
    repeat = args.repeat or (1 if args.quick else 5)
    results = harness.results_dir_for(args)
    root = args.data_dir / f"uniform_{uuid.uuid4().hex[:8]}"
    try:
        if args.only in (None, "appends"):
            commits_s: dict[str, list[float]] = {side: [] for side in SIDES}  # every commit of every run
            means: dict[str, list[float]] = {side: [] for side in SIDES}  # each run's mean per commit
            for r in range(repeat):
                one = run_appends(root, commits, args.rows)
                for side, secs in one.items():
                    commits_s[side] += secs
                    means[side].append(sum(secs) / len(secs))
                print(f"    appends run {r + 1}: " + ", ".join(
                    f"{side} median {1000 * median(one[side]):.1f} ms/commit (mean {1000 * means[side][-1]:.1f})"
                    for side in SIDES), flush=True)
            med = {side: median(v) for side, v in commits_s.items()}
            mean = {side: median(v) for side, v in means.items()}
            save(Result(
                workload="uniform-appends",
                title=f"{commits} sequential kernel appends of {args.rows} rows, UniForm on (median commit)",
                deltalog_median=med["uniform"], anchor_median=med["compat"], target=TARGET,
                anchor="same table without enabledFormats",
                deltalog_runs=means["uniform"], anchor_runs=means["compat"],
                params={"commits": commits, "rows": args.rows, "repeat": repeat},
                extra={
                    "plain_s": med["plain"],
                    "ratio_vs_plain": med["uniform"] / med["plain"] if med["plain"] else None,
                    "compat_vs_plain": med["compat"] / med["plain"] if med["plain"] else None,
                    "iceberg_step_s": med["uniform"] - med["compat"],
                    "mean_commit_s": mean,
                    "ratio_of_means": mean["uniform"] / mean["compat"] if mean["compat"] else None,
                    "plain_runs": means["plain"],
                },
                quick=bool(args.quick),
            ), results)
        if args.only in (None, "optimize"):
            ours, anchor = run_optimize(root, files, args.rows, repeat)
            save(Result(
                workload="uniform-optimize",
                title=f"one OPTIMIZE (kernel compaction) of {files:,} files into one, UniForm on",
                deltalog_median=median(ours), anchor_median=median(anchor), target=TARGET,
                anchor="same table without enabledFormats",
                deltalog_runs=ours, anchor_runs=anchor,
                params={"files": files, "rows_per_file": args.rows, "repeat": repeat},
                extra={"iceberg_step_s": median(ours) - median(anchor)},
                quick=bool(args.quick),
            ), results)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
