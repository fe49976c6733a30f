"""Issue 55's sweep: deletion-vector reads and MERGE at everyday sizes and query shapes, each cell a ratio.

    python bench/sweep.py [--only reads merge] [--rows 1000000 4000000 10000000] [--shapes count agg ...] [--files 8]
                          [--merges 1000:10000 20000:200000 ...] [--repeat 3] [--quick] [--results-dir DIR]
                          [--plot PATH] [--lanes [3.5 4.0 ...]]

**Reads.** For each ``--rows`` size (1M, 4M, 10M; quick: 20k, 40k), ``--files`` files (8) of
``bench/dml_dv.py``'s rows (``id``, ``k`` = ``id % 97``, ``v`` random double, ``s`` short string), three tables
holding the same rows:

* ``dv`` -- deletion vectors enabled, then ``DELETE WHERE id % 100 = 7`` (1% of the rows, every file gets a
  deletion vector), as ``bench/dml_dv.py`` builds it;
* ``cow`` -- the same DELETE on a table without deletion vectors (copy-on-write: every file rewritten);
* ``parquet`` -- the ``cow`` table's live data files read with ``spark.read.parquet(*files)``;

and the **floor**: the ``dv`` table's data files read with ``spark.read.parquet(*files)`` filtered on
``_metadata.row_index >= 0`` (so every shape has Spark generate the row index; no row is dropped). Delta
tables are read as users do, ``spark.read.format("delta").load(path)`` (deltalog routes ``delta``); every
timed call starts at the reader call. The two parquet readers are given the files' schema (read once,
untimed), as the Delta reader has it from the log: no footer-inference job is timed. The shapes:
``count()``, ``agg(sum(v), count(*))``, ``groupBy(k).agg(sum(v))``, ``filter(id < rows / 100).count()`` and
full materialisation (``write.format("noop")``); ``--shapes`` picks some. Ratios per (shape, size):
``dv / floor`` (target 1.3), ``dv / cow`` and ``cow / parquet`` (reported). deltalog answers a Delta
table's ``count()`` from the log (no Spark job), so that cell compares planning with a scan. **Planning**:
``load()`` without an action, ``dv`` against ``cow``; the target is a difference of at most 50 ms
(recorded as ``difference_ms``).

**MERGE.** Upsert, ``whenMatchedUpdateAll().whenNotMatchedInsertAll()``, of ``S`` source rows into a
``T``-row table (``id``, ``v``, ``s``) for each ``S:T`` of ``--merges`` (1k into 10k, 100k and 1M; 20k into
200k and 2M; 200k into 2M; 500k into 5M; quick: 100 into 1k, 200 into 2k). Half of the source matches
target ids spread evenly over the whole key range (so every target file is touched and pruning by the
source's keys cannot help: this measures the fixed cost), half is new. Every target has ``--files`` files
(8, whatever its size: one rule for every cell). The anchor is ``bench/spark_dml.py``'s: the hand-written
Spark full outer join of the original target files with the source + parquet write of the same result. The
ratio's target is 1.3, and MERGE may run at most two Spark jobs more than the hand-written job (jobs are
counted per timed call with ``sc.setJobGroup`` + ``statusTracker().getJobIdsForGroup``; the last timed
call's count is kept). The MERGE is undone by a log-only ``RESTORE`` before each run (not timed).

Every cell's contenders are measured alternately in the same run (their order rotating each round) after
untimed warm-up rounds (one for MERGE, three for reads: :data:`READ_WARMUP_ROUNDS`; none with ``--quick``, whose
numbers only show that the sweep runs); medians of
``--repeat`` runs (3, quick 1) or, for a fast cell, of as many more rounds (at most five times as many) as it
takes for each side to have run ``--min-seconds`` (4 s; a median of three 0.15 s runs moved by 40% between
two runs of the sweep, and on 2026-12-04 the median of four to eight rounds of a 0.2-0.5 s MERGE cell moved
between 1.08x and 1.33x from one sweep to the next: a loaded machine stretches every run, and the fixed
cost of a small MERGE most). Spark jobs are counted for the read contenders too.

Saves ``<results-dir>/sweep.json`` -- one file holding every cell (``kind``: ``read`` / ``plan`` /
``merge``; shape, sizes, both sides' medians and runs, ratio, target, jobs), rewritten after each cell so
that an interrupted run keeps what it measured (``complete`` is false until the end) -- and draws the plot
(``--plot``; default ``docs/sweep.png`` for a full run into ``bench/results``, else
``<results-dir>/sweep.png``): DV read ratios against rows per shape, MERGE ratio against target rows per
source size. ``bench/report.py`` renders sweep.json as the "Sweep" section of ``docs/performance.md``
(and redraws the plot next to the page). ``bench/run.py`` runs it in full runs only.

**Other PySpark versions.** ``--lanes`` runs the same sweep (the other options as given) once on each Spark
version lane of ``scripts/spark_lanes.py`` (3.5, 4.0, 4.1, 4.2 by default, or the minor versions named; each a
cached package directory put first on ``PYTHONPATH``, installed once per machine), one process per lane, one
after the other, and keeps each lane's sweep.json as ``<results-dir>/sweep-lanes/<version>.json``;
``bench/report.py`` adds a table of each version's worst ratios to the "Sweep" section. The venv's own
PySpark is the plain run's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed

CONDITION = "id % 100 = 7"  # bench/dml_dv.py's DELETE: 1% of the rows, in every file
READ_ROWS = ((1_000_000, 4_000_000, 10_000_000), (20_000, 40_000))
MERGES = (
    ((1_000, 10_000), (1_000, 100_000), (1_000, 1_000_000), (20_000, 200_000), (20_000, 2_000_000),
     (200_000, 2_000_000), (500_000, 5_000_000)),
    ((100, 1_000), (200, 2_000)),
)
SHAPES = ("count", "agg", "groupby", "filter", "materialise")
SHAPE_TEXT = {
    "count": "count()",
    "agg": "agg(sum(v), count(*))",
    "groupby": "groupBy(k).agg(sum(v))",
    "filter": "filter(id < rows/100).count()",
    "materialise": "noop write (every row)",
}
READ_TARGET = 1.3  # dv / floor
PLAN_TARGET_MS = 50.0  # dv load() - cow load()
MERGE_TARGET = 1.3
MERGE_EXTRA_JOBS = 2
SWEEP_FILE = "sweep.json"
PLOT_NAME = "sweep.png"


# ------------------------------------------------------------------------------------------------ measuring


class Jobs:
    """Counts the Spark jobs a call runs: the call runs under a job group of its own."""

    def __init__(self, spark: Any) -> None:
        self.sc = spark.sparkContext
        self.n = 0

    def run(self, fn: Callable[[], Any]) -> tuple[float, int]:
        """Seconds ``fn()`` took and the number of Spark jobs it ran."""
        self.n += 1
        group = f"deltalog-sweep-{self.n}"
        self.sc.setJobGroup(group, "bench/sweep.py")
        try:
            t0 = time.perf_counter()
            fn()
            seconds = time.perf_counter() - t0
        finally:
            self.sc.setLocalProperty("spark.jobGroup.id", None)
            self.sc.setLocalProperty("spark.job.description", None)
        return seconds, len(self.sc.statusTracker().getJobIdsForGroup(group))


#: a fast cell gets more rounds than ``--repeat``, until each side has run about this long (seconds) ...
MIN_SECONDS = 4.0
#: Untimed rounds of each side before a read cell is timed: Spark compiles each query's generated code once and
#: the JVM then compiles it to machine code over the next runs; with one round, the first cell of a process
#: measured a JVM still compiling (2026-12-04, ``dv_bound.py``'s first cell, five runs: the floor 191 -> 117 ms,
#: the read 249 -> 148 ms, the ratio of medians 1.43x where the later cells measured 0.93-1.15x).
READ_WARMUP_ROUNDS = 3
#: ... but at most this many times ``--repeat`` rounds
MAX_ROUNDS_FACTOR = 5


def rotate(
    jobs: Jobs, sides: dict[str, Callable[[], Any]], *, repeat: int, warmup: bool | int,
    before: Callable[[str], Any] | None = None, min_seconds: float = 0.0,
) -> dict[str, dict[str, Any]]:
    """Time every side ``repeat`` times, round by round with the order rotating each round (so a transient
    load hits all alike), after untimed warm-up rounds of each (``warmup``: ``True`` one, or a number of
    rounds; :data:`READ_WARMUP_ROUNDS` for the reads); ``before(side)`` runs untimed before
    each call. With ``min_seconds``, rounds go on (up to :data:`MAX_ROUNDS_FACTOR` times ``repeat``) until every
    side's timed runs add up to that: a cell of 0.1-0.3 s then takes the median of 14-15 runs, which one stall
    of the machine does not move. Returns ``{side: {"runs": [...], "median": s, "jobs": n}}`` (jobs of the
    last timed call)."""
    names = list(sides)
    for _ in range(int(warmup)):
        for name in names:
            if before:
                before(name)
            sides[name]()
    out: dict[str, dict[str, Any]] = {n: {"runs": [], "jobs": 0} for n in names}
    rounds, most = max(1, repeat), MAX_ROUNDS_FACTOR * max(1, repeat)
    i = 0
    while i < rounds or (i < most and min(sum(v["runs"]) for v in out.values()) < min_seconds):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            if before:
                before(name)
            seconds, njobs = jobs.run(sides[name])
            out[name]["runs"].append(round(seconds, 5))
            out[name]["jobs"] = njobs
        i += 1
    for v in out.values():
        v["median"] = harness.median(v["runs"])
    return out


def cell(kind: str, shape: str, ours: str, anchor: str, timed: dict[str, dict[str, Any]], target: float | None,
         **params: Any) -> dict[str, Any]:
    """One cell of sweep.json: ``ours`` against ``anchor`` (keys of ``timed``)."""
    a, b = timed[ours], timed[anchor]
    ratio = a["median"] / b["median"] if b["median"] else float("inf")
    return {
        "kind": kind, "shape": shape, **params, "ours": ours, "anchor": anchor,
        "ours_s": a["median"], "anchor_s": b["median"], "ratio": round(ratio, 4), "target": target,
        "holds": None if target is None else ratio <= target,
        "ours_jobs": a["jobs"], "anchor_jobs": b["jobs"], "ours_runs": a["runs"], "anchor_runs": b["runs"],
    }


# --------------------------------------------------------------------------------------------------- reads


def shape_fn(shape: str, rows: int) -> Callable[[Any], Any]:
    """The action of ``shape`` on a DataFrame."""
    from pyspark.sql import functions as F

    if shape == "count":
        return lambda df: df.count()
    if shape == "agg":
        return lambda df: df.agg(F.sum("v"), F.count("*")).collect()
    if shape == "groupby":
        return lambda df: df.groupBy("k").agg(F.sum("v")).collect()
    if shape == "filter":
        return lambda df: df.filter(F.col("id") < rows // 100).count()
    if shape == "materialise":
        return lambda df: df.write.format("noop").mode("overwrite").save()
    raise ValueError(shape)


def data_files(path: Path) -> list[str]:
    """The live data files of the Delta table at ``path``, as absolute paths."""
    from urllib.parse import unquote

    import deltalog

    adds = deltalog.Table(str(path)).snapshot().add_files()
    return [str(path / unquote(p)) for p in adds.column("path").to_pylist()]


def build_read_tables(spark: Any, work: Path, rows: int, nfiles: int) -> dict[str, Any]:
    """The ``dv`` and ``cow`` tables of ``rows`` rows after the DELETE, and the files of each."""
    from dml_dv import generated_rows

    import deltalog
    from deltalog.spark import DeltaTable, write

    paths = {"dv": work / f"dv-{rows}", "cow": work / f"cow-{rows}"}
    df = generated_rows(spark, rows, nfiles)
    write(df, str(paths["dv"]), **{"delta.enableDeletionVectors": "true"})
    write(df, str(paths["cow"]))
    for p in paths.values():
        DeltaTable.forPath(spark, str(p)).delete(CONDITION)
    dvs = deltalog.Table(str(paths["dv"])).snapshot().add_files().column("deletionVector").to_pylist()
    cow = deltalog.Table(str(paths["cow"])).snapshot().add_files().column("deletionVector").to_pylist()
    if not all(dvs) or len(dvs) != nfiles or any(cow):
        raise SystemExit(f"expected a deletion vector on each of {nfiles} files of the DV table and none on the "
                         f"copy-on-write table, got {sum(map(bool, dvs))} of {len(dvs)} and {sum(map(bool, cow))}")
    return {"paths": paths, "dv_files": data_files(paths["dv"]), "cow_files": data_files(paths["cow"])}


def run_reads(spark: Any, jobs: Jobs, work: Path, rows: int, nfiles: int, shapes: Sequence[str], repeat: int,
              warmup: bool, emit: Callable[[dict[str, Any]], None], min_seconds: float = 0.0) -> None:
    """Each of ``shapes`` at ``rows`` rows, then planning alone; each cell handed to ``emit``."""
    from pyspark.sql import functions as F

    t = build_read_tables(spark, work, rows, nfiles)
    dv_path, cow_path = str(t["paths"]["dv"]), str(t["paths"]["cow"])
    dv_files, cow_files = t["dv_files"], t["cow_files"]
    schema = spark.read.parquet(*dv_files).schema  # given to the parquet readers: no footer-inference job
    frames: dict[str, Callable[[], Any]] = {
        "dv": lambda: spark.read.format("delta").load(dv_path),
        "floor": lambda: spark.read.schema(schema).parquet(*dv_files).where(F.col("_metadata.row_index") >= 0),
        "cow": lambda: spark.read.format("delta").load(cow_path),
        "parquet": lambda: spark.read.schema(schema).parquet(*cow_files),
    }
    live = rows - (rows + 92) // 100  # ids 0..rows-1 with id % 100 == 7 are gone
    counts = {name: frame().groupBy().count().collect()[0][0] for name, frame in frames.items()}
    if counts != {"dv": live, "floor": rows, "cow": live, "parquet": live}:
        raise SystemExit(f"row counts at {rows:,} rows: {counts} (expected {live:,} live, the floor {rows:,})")
    sums = {name: frames[name]().agg(F.sum("v")).collect()[0][0] for name in ("dv", "cow", "parquet")}
    if abs(sums["dv"] - sums["cow"]) > 1e-6 * abs(sums["cow"]) or abs(sums["cow"] - sums["parquet"]) > 1e-6 * abs(
            sums["cow"]):
        raise SystemExit(f"sum(v) differs at {rows:,} rows: {sums}")
    size = {"rows": rows, "files": nfiles}
    for shape in shapes:
        action = shape_fn(shape, rows)
        sides = {name: _then(frame, action) for name, frame in frames.items()}
        timed = rotate(jobs, sides, repeat=repeat, warmup=READ_WARMUP_ROUNDS if warmup else 0,
                       min_seconds=min_seconds)
        emit(cell("read", shape, "dv", "floor", timed, READ_TARGET, **size))
        emit(cell("read", shape, "dv", "cow", timed, None, **size))
        emit(cell("read", shape, "cow", "parquet", timed, None, **size))
    planned = rotate(jobs, {"dv": frames["dv"], "cow": frames["cow"]}, repeat=3 * repeat, warmup=warmup)
    c = cell("plan", "load()", "dv", "cow", planned, None, **size)
    c["difference_ms"] = round(1000 * (c["ours_s"] - c["anchor_s"]), 2)
    c["target_ms"] = PLAN_TARGET_MS
    c["holds"] = c["difference_ms"] <= PLAN_TARGET_MS
    emit(c)


def _then(frame: Callable[[], Any], action: Callable[[Any], Any]) -> Callable[[], Any]:
    """A call that makes the DataFrame and runs ``action`` on it."""
    return lambda: action(frame())


# --------------------------------------------------------------------------------------------------- MERGE


def run_merge(spark: Any, jobs: Jobs, work: Path, source_rows: int, target_rows: int, nfiles: int, repeat: int,
              warmup: bool, emit: Callable[[dict[str, Any]], None], min_seconds: float = 0.0) -> None:
    """One MERGE cell: the upsert against the hand-written full outer join + parquet write."""
    from pyspark.sql import functions as F

    from deltalog.spark import DeltaTable, write

    def cols(df: Any) -> Any:
        return df.select("id", (F.col("id") * 0.5).alias("v"),
                         F.concat(F.lit("s"), (F.col("id") % 1000).cast("string")).alias("s"))

    name = f"{source_rows}-{target_rows}"
    path = work / f"merge-target-{name}"
    write(cols(spark.range(0, target_rows, numPartitions=nfiles)), str(path))
    half = source_rows // 2
    step = max(1, target_rows // max(1, half))  # matched keys spread evenly over the target's key range
    matched = spark.range(0, half, numPartitions=1).select((F.col("id") * step).alias("id"))
    new = spark.range(target_rows, target_rows + (source_rows - half), numPartitions=1)
    src_path = work / f"merge-source-{name}.parquet"
    cols(matched.unionByName(new)).withColumn("v", F.col("v") + 1).coalesce(1).write.mode("overwrite").parquet(
        str(src_path))
    source = spark.read.parquet(str(src_path))
    table = DeltaTable.forPath(spark, str(path))
    first_files = data_files(path)
    if len(first_files) != nfiles:
        raise SystemExit(f"MERGE target of {target_rows:,} rows has {len(first_files)} files, expected {nfiles}")
    out = work / f"merge-hand-{name}"

    def ours() -> None:
        (table.alias("t").merge(source.alias("s"), "t.id = s.id")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    def hand() -> None:  # the same result from the original files
        t = spark.read.parquet(*first_files).alias("t")
        joined = t.join(source.alias("s"), F.col("t.id") == F.col("s.id"), "full_outer")
        pick = lambda c: F.when(F.col("s.id").isNotNull(), F.col(f"s.{c}")).otherwise(F.col(f"t.{c}"))  # noqa: E731
        joined.select(*[pick(c).alias(c) for c in ("id", "v", "s")]).write.mode("overwrite").parquet(str(out))

    def undo(side: str) -> None:
        if side == "merge":
            table.restoreToVersion(0)

    timed = rotate(jobs, {"merge": ours, "hand": hand}, repeat=repeat, warmup=warmup, before=undo,
                   min_seconds=min_seconds)
    expected = target_rows + (source_rows - half)
    got = (table.toDF().count(), spark.read.parquet(str(out)).count())
    if got != (expected, expected):
        raise SystemExit(f"MERGE {source_rows:,} into {target_rows:,}: rows (MERGE, hand-written) {got}, "
                         f"expected {expected:,}")
    c = cell("merge", "upsert", "merge", "hand", timed, MERGE_TARGET, rows=target_rows, source_rows=source_rows,
             target_rows=target_rows, files=nfiles)
    c["jobs_target"] = c["anchor_jobs"] + MERGE_EXTRA_JOBS
    c["holds"] = bool(c["holds"]) and c["ours_jobs"] <= c["jobs_target"]
    emit(c)
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------- plot


def plot(doc: dict[str, Any] | None, out: Path) -> bool:
    """Draw the sweep's two panels into ``out`` (False when there is nothing to draw or no matplotlib).

    Example:
        >>> plot(None, Path("/tmp/never.png"))
        False
    """
    cells = (doc or {}).get("cells") or []
    reads = [c for c in cells if c["kind"] == "read" and c["ours"] == "dv"]
    merges = [c for c in cells if c["kind"] == "merge"]
    if not reads and not merges:
        return False
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 6.2), dpi=110)
    colors = dict(zip(SHAPES, ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"), strict=True))
    for shape in SHAPES:
        for anchor, style in (("floor", "o-"), ("cow", "s--")):
            pts = sorted((c["rows"], c["ratio"]) for c in reads if c["shape"] == shape and c["anchor"] == anchor)
            if pts:
                left.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colors[shape],
                          label=f"{SHAPE_TEXT[shape]} vs {'floor' if anchor == 'floor' else 'copy-on-write'}")
    left.axhline(READ_TARGET, color="grey", linestyle=":", label=f"target vs floor ({READ_TARGET}×)")
    left.set_title("Deletion-vector reads (1% deleted, every file)")
    left.set_xlabel("rows")
    left.set_ylabel("ratio (DV read / anchor, log scale)")
    sources = sorted({c["source_rows"] for c in merges})
    for i, src in enumerate(sources):
        pts = sorted((c["target_rows"], c["ratio"]) for c in merges if c["source_rows"] == src)
        right.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=f"C{i}", label=f"source {src:,} rows")
    right.axhline(MERGE_TARGET, color="grey", linestyle=":", label=f"target ({MERGE_TARGET}×)")
    right.set_title("MERGE upsert (half matched) vs hand-written join + write")
    right.set_xlabel("target rows")
    right.set_ylabel("ratio (MERGE / hand-written)")
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    left.set_yscale("log")  # a log-answered count() against a scan spans 0.05x to 20x
    ratios = [c["ratio"] for c in reads] or [1.0]
    ticks = [t for t in (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64) if min(ratios) / 2 <= t <= max(ratios) * 2]
    left.yaxis.set_major_locator(FixedLocator(ticks))
    left.yaxis.set_minor_formatter(NullFormatter())
    right.set_ylim(bottom=0)
    for ax in (left, right):
        ax.set_xscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}×"))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------------------- main


def _merge_pair(text: str) -> tuple[int, int]:
    src, _, tgt = text.partition(":")
    return int(src), int(tgt)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(parser)
    parser.add_argument("--only", nargs="+", choices=("reads", "merge"), default=None)
    parser.add_argument("--rows", type=int, nargs="+", default=None,
                        help="table sizes of the reads (default 1M 4M 10M, quick: 20k 40k)")
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES),
                        help="query shapes of the reads (default all)")
    parser.add_argument("--files", type=int, default=8, help="data files of every table (default 8)")
    parser.add_argument("--merges", type=_merge_pair, nargs="+", default=None, metavar="SOURCE:TARGET",
                        help="MERGE sizes (default the issue's seven, quick: 100:1000 200:2000)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per side (default 3, quick 1)")
    parser.add_argument("--min-seconds", type=float, default=None,
                        help=f"more rounds for fast cells, until each side ran this long (default {MIN_SECONDS}, "
                             "quick 0)")
    parser.add_argument("--plot", type=Path, default=None, help="where to draw the plot")
    parser.add_argument("--lanes", nargs="*", default=None, metavar="VERSION",
                        help="run the sweep on the PySpark lanes of scripts/spark_lanes.py instead (default: all)")
    return parser.parse_args(argv)


LANES_DIR = "sweep-lanes"


def run_lanes(argv: Sequence[str], versions: Sequence[str], results_dir: Path) -> int:
    """The sweep (``argv`` without ``--lanes``) on each lane of ``versions`` (every lane when empty), one
    process each; each lane's sweep.json is kept as ``<results_dir>/sweep-lanes/<version>.json``. 1 when a lane
    could not run or missed a target."""
    import os
    import subprocess
    import sys

    sys.path.insert(0, str(harness.ROOT / "scripts"))
    import spark_lanes

    chosen = [v for v in spark_lanes.LANES if not versions or v in versions]
    unknown = sorted(set(versions) - set(spark_lanes.LANES))
    if unknown:
        raise SystemExit(f"sweep: no Spark lane {', '.join(unknown)} (lanes: {', '.join(spark_lanes.LANES)})")
    keep = results_dir / LANES_DIR
    keep.mkdir(parents=True, exist_ok=True)
    rest = without_lanes(argv)
    failed = 0
    for version in chosen:
        packages = spark_lanes.set_up(spark_lanes.LANES[version])
        out = Path(tempfile.mkdtemp(prefix=f"sweep-{version}-"))
        path = [str(packages), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
        print(f"sweep on the PySpark {version} lane ({packages.name})", flush=True)
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), *rest, "--results-dir", str(out),
                               "--plot", str(out / PLOT_NAME)], env=env)
        found = load(out)
        if found is not None:
            (keep / f"{version}.json").write_text(json.dumps(found, indent=1) + "\n")
        failed |= done.returncode != 0 or found is None or not found.get("complete") or \
            any(c["holds"] is False for c in found["cells"])
        shutil.rmtree(out, ignore_errors=True)
    return 1 if failed else 0


def without_lanes(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--lanes`` and the versions after it.

    Example:
        >>> without_lanes(["--only", "merge", "--lanes", "3.5", "4.0", "--repeat", "5"])
        ['--only', 'merge', '--repeat', '5']
    """
    rest: list[str] = []
    skip = False
    for a in argv:
        if a == "--lanes":
            skip = True
        elif not (skip and not a.startswith("-")):
            skip = False
            rest.append(a)
    return rest


def lane_docs(results_dir: Path) -> dict[str, dict[str, Any]]:
    """The lanes' kept sweeps (:func:`run_lanes`) by minor version."""
    keep = results_dir / LANES_DIR
    return {p.stem: json.loads(p.read_text()) for p in sorted(keep.glob("*.json"))} if keep.is_dir() else {}


def main(argv: Sequence[str] | None = None, *, spark: Any = None) -> int:
    """Run the sweep (see the module's docstring); ``spark`` is a session to use (and leave running) instead
    of a new one, as the suite's smoke test does.

    Example:
        >>> main(["--quick", "--only", "merge"])                                  # doctest: +SKIP
        0
    """
    args = parse(argv)
    if args.lanes is not None:
        import sys

        return run_lanes(list(sys.argv[1:] if argv is None else argv), args.lanes, harness.results_dir_for(args))
    pick = 1 if args.quick else 0
    sizes = args.rows or list(READ_ROWS[pick])
    merges = args.merges or list(MERGES[pick])
    repeat = args.repeat or (1 if args.quick else 3)
    min_seconds = args.min_seconds if args.min_seconds is not None else (0.0 if args.quick else MIN_SECONDS)
    parts = args.only or ["reads", "merge"]
    results_dir = harness.results_dir_for(args)
    results_dir.mkdir(parents=True, exist_ok=True)
    full_default = not args.quick and results_dir.resolve() == harness.RESULTS.resolve()
    plot_path = args.plot or (harness.ROOT / "docs" / PLOT_NAME if full_default else results_dir / PLOT_NAME)
    doc: dict[str, Any] = {
        "sweep": "issue 55", "quick": bool(args.quick), "complete": False, "repeat": repeat,
        "min_seconds": min_seconds, "max_rounds_factor": MAX_ROUNDS_FACTOR,
        "warmup": not args.quick, "read_warmup_rounds": 0 if args.quick else READ_WARMUP_ROUNDS,
        "files": args.files, "master": "local[2]", "delete": CONDITION,
        "environment": harness.environment(), "cells": [],
    }
    started = time.perf_counter()

    def emit(c: dict[str, Any]) -> None:
        doc["cells"].append(c)
        doc["seconds"] = round(time.perf_counter() - started, 1)
        (results_dir / SWEEP_FILE).write_text(json.dumps(doc, indent=1) + "\n")
        print(summary(c), flush=True)

    own = spark is None
    if own:
        spark = harness.spark_session("deltalog-sweep-bench", **{"spark.driver.memory": "4g"})
    args.data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sweep-", dir=args.data_dir))
    jobs = Jobs(spark)
    try:
        if "reads" in parts:
            for rows in sizes:
                run_reads(spark, jobs, work, rows, args.files, args.shapes, repeat, not args.quick, emit, min_seconds)
        if "merge" in parts:
            for src, tgt in merges:
                run_merge(spark, jobs, work, src, tgt, args.files, repeat, not args.quick, emit, min_seconds)
    finally:
        if own:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    doc["complete"] = True
    doc["seconds"] = round(time.perf_counter() - started, 1)
    (results_dir / SWEEP_FILE).write_text(json.dumps(doc, indent=1) + "\n")
    drew = plot(doc, plot_path)
    missed = [c for c in doc["cells"] if c["holds"] is False]
    print(f"sweep: {len(doc['cells'])} cells in {doc['seconds']:.0f} s, {len(missed)} targets missed; "
          f"wrote {results_dir / SWEEP_FILE}" + (f" and {plot_path}" if drew else ""), flush=True)
    return 0


def summary(c: dict[str, Any]) -> str:
    """One console line for a cell."""
    if c["kind"] == "merge":
        what = f"MERGE {c['source_rows']:,} into {c['target_rows']:,}"
        jobs = f", jobs {c['ours_jobs']} vs {c['anchor_jobs']} (at most {c['jobs_target']})"
    else:
        what = f"{SHAPE_TEXT.get(c['shape'], c['shape'])} {c['rows']:,} rows, {c['ours']} vs {c['anchor']}"
        jobs = f", jobs {c['ours_jobs']} vs {c['anchor_jobs']}"
    goal = ""
    if c.get("target_ms") is not None:
        goal = f", {c['difference_ms']:+.0f} ms (target <= +{c['target_ms']:.0f} ms: " \
               f"{'holds' if c['holds'] else 'MISSED'})"
    elif c["target"] is not None:
        goal = f" (target <= {c['target']}x: {'holds' if c['holds'] else 'MISSED'})"
    return (f"  {what}: {c['ours_s'] * 1000:,.0f} ms vs {c['anchor_s'] * 1000:,.0f} ms, "
            f"ratio {c['ratio']:.2f}x{goal}{jobs}")


def load(results_dir: Path) -> dict[str, Any] | None:
    """``<results_dir>/sweep.json``, or None."""
    p = results_dir / SWEEP_FILE
    if not p.exists():
        return None
    doc: dict[str, Any] = json.loads(p.read_text())
    return doc


if __name__ == "__main__":
    raise SystemExit(main())
