"""Profile deltalog's side of the benchmark workloads with pyinstrument and summarise where time goes.

For each workload the deltalog call is run under a sampling profiler (1 ms) a few times, and two
files are written to ``<results-dir>/profile/``:

* ``<workload>.txt`` -- pyinstrument's call tree (text);
* ``<workload>.json`` -- a summary: time per *deltalog line* (every sample is charged to the deepest
  frame inside ``src/deltalog``, at the line it was executing, so time spent in pyarrow/numpy/json
  called from that line counts there), with the library functions that took that time; and time per
  deltalog function including callees. ``bench/report.py`` puts the top lines into
  ``docs/performance.md``. Caveat: a C function without a Python-visible frame (``pyarrow.json.read_json``,
  for one) is sampled when it returns, so its time shows as "the line itself" on the next line of the
  caller that makes a call.

Workloads: ``a``-``d`` as in ``log_load.py`` (snapshot + ``add_files()``), ``e`` (open + write a
checkpoint, on a fresh copy) and ``f`` (50 small commits with post-commit hooks).

    python bench/hotspots.py                   # a b c d e f, full sizes (tables are reused)
    python bench/hotspots.py --workload c --quick
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import deltalake  # noqa: F401  # before pyarrow.parquet, see tests/interop/deltars_worker.py
import harness
from log_load import CP_SHAPE, WORKLOADS
from synth import LogSpec, build, fake_files, log_copy

import deltalog

SRC = str((harness.ROOT / "src").resolve())


def _frame(ident: str) -> tuple[str, str, int, int]:
    """(function, file, first line, current line) of a pyinstrument frame identifier."""
    head, *attrs = ident.split("\x01")
    parts = head.split("\x00")
    func, file, first = parts[0], parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else "0"
    line = next((int(a[1:]) for a in attrs if a.startswith("l") and a[1:].isdigit()), 0)
    return func, file, int(first) if first.isdigit() else 0, line


def _short(file: str) -> str:
    if file.startswith(SRC):
        return "src" + file[len(SRC) :]
    for marker in ("site-packages/", "lib/python3"):
        i = file.find(marker)
        if i >= 0:
            return file[i + len(marker) :] if marker == "site-packages/" else file[i:]
    return file


def summarise(session: Any, *, top: int = 12) -> dict[str, Any]:
    """Aggregate a pyinstrument session's samples by deltalog line and by deltalog function."""
    by_line: dict[str, float] = defaultdict(float)
    callees: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    by_func: dict[str, float] = defaultdict(float)
    total = 0.0
    for stack, seconds in session.frame_records:
        total += seconds
        frames = [_frame(s) for s in stack]
        ours = [f for f in frames if f[1].startswith(SRC)]
        if not ours:
            continue
        func, file, _first, line = ours[-1]
        key = f"{_short(file)}:{line} ({func})"
        by_line[key] += seconds
        leaf = frames[-1]
        if not leaf[1].startswith(SRC):
            callees[key][f"{leaf[0]} [{_short(leaf[1]) or 'builtin'}]"] += seconds
        else:
            callees[key]["(the line itself)"] += seconds
        for f in {(f[0], f[1], f[2]) for f in ours}:
            by_func[f"{_short(f[1])}:{f[2]} {f[0]}"] += seconds

    def rows(d: dict[str, float]) -> list[dict[str, Any]]:
        best = sorted(d.items(), key=lambda kv: -kv[1])[:top]
        return [{"where": k, "seconds": round(v, 4), "share": round(v / total, 4) if total else 0.0} for k, v in best]

    lines = rows(by_line)
    for row in lines:
        parts = sorted(callees[row["where"]].items(), key=lambda kv: -kv[1])[:3]
        row["in"] = [{"callee": c, "seconds": round(s, 4)} for c, s in parts]
    return {"sampled_s": round(total, 4), "by_line": lines, "by_function": rows(by_func)}


def _targets(quick: bool, data_dir: Path) -> dict[str, tuple[Callable[[], object], int]]:
    """Workload -> (deltalog call to profile, iterations)."""
    out: dict[str, tuple[Callable[[], object], int]] = {}
    for key, w in WORKLOADS.items():
        spec = w.quick if quick else w.spec
        back = w.quick_travel_back if quick else w.travel_back
        path = build(spec, data_dir)
        version = spec.version - back if back else None

        def load(p: Path = path, v: int | None = version) -> object:
            return deltalog.Table(p).snapshot(v).add_files().num_rows

        out[key] = (load, 1 if key == "c" else 5)
    cp_spec = LogSpec(files=3_000 if quick else 1_000_000, **CP_SHAPE)  # type: ignore[arg-type]
    cp_base = build(cp_spec, data_dir)

    def checkpoint() -> object:
        copy = log_copy(cp_base, data_dir / "profile_cp", checkpoints=True)
        try:
            return deltalog.Table(copy).checkpoint()
        finally:
            shutil.rmtree(copy, ignore_errors=True)

    out["e"] = (checkpoint, 1)
    commits = 10 if quick else 50

    def commit_loop() -> object:
        from synth import PARTITION_BY, SCHEMA

        from deltalog.protocol.actions import Add, Format, Metadata
        from deltalog.txn.operations import CreateTable, Write

        path = data_dir / f"profile_commits_{uuid.uuid4().hex[:6]}"
        try:
            create = deltalog.Table(path).transaction(CreateTable(partition_by=PARTITION_BY))
            create.update_metadata(
                Metadata(id="p", format=Format(), schemaString=json.dumps(SCHEMA), partitionColumns=PARTITION_BY)
            )
            create.commit()
            for c in range(commits):
                txn = deltalog.Table(path).transaction(Write(mode="Append", partition_by=PARTITION_BY))
                for f in fake_files(c * 5, 5, ts=int(time.time() * 1000)):
                    txn.add_file(Add(f.path, dict(f.partition_values), f.size, f.modification_time, True, f.stats))
                txn.commit()
            return commits
        finally:
            shutil.rmtree(path, ignore_errors=True)

    out["f"] = (commit_loop, 1)
    return out


def profile(key: str, fn: Callable[[], object], iterations: int, out_dir: Path) -> dict[str, Any]:
    """Profile ``iterations`` calls of ``fn`` after one warm-up; writes the text tree and the summary."""
    from pyinstrument import Profiler

    fn()
    profiler = Profiler(interval=0.001)
    profiler.start()
    t0 = time.perf_counter()
    for _ in range(iterations):
        fn()
    wall = time.perf_counter() - t0
    profiler.stop()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{key}.txt").write_text(profiler.output_text(unicode=True, color=False, show_all=False))
    summary = {"workload": key, "iterations": iterations, "wall_s": round(wall, 4), **summarise(profiler.last_session)}
    (out_dir / f"{key}.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(p)
    p.add_argument("--workload", nargs="+", default=["a", "b", "c", "d", "e", "f"])
    args = p.parse_args(argv)
    try:
        import pyinstrument  # noqa: F401
    except ImportError:
        print("pyinstrument is not installed (pip install pyinstrument); skipping the profiles")
        return 0
    out_dir = harness.results_dir_for(args) / "profile"
    targets = _targets(args.quick, args.data_dir)
    for key in args.workload:
        fn, iterations = targets[key]
        s = profile(key, fn, iterations, out_dir)
        head = ", ".join(f"{r['where']} {100 * r['share']:.0f}%" for r in s["by_line"][:3])
        print(f"(profile {key}) {s['wall_s'] / iterations * 1000:,.0f} ms per run; top lines: {head}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
