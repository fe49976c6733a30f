"""Spark scans of tables of many tiny files: deltalog against ``spark.read.parquet(dir)`` (issue 15).

    python bench/scan_planning.py [--files 10000 100000] [--repeat 3] [--quick] [--results-dir DIR]

Each table has ``N`` parquet files of 10 rows (``id`` long, ``x`` double; file ``i`` holds ids
``10i .. 10i+9``), written by Arrow, and one commit of ``N`` adds with the stats Spark writes; built once
into the data directory. Measured in one Spark session (local[2]):

* **full scan** (``sum(x)``, ``count``): ``deltalog.spark.read`` against ``spark.read.parquet(dir)`` on the
  same directory (Spark skips ``_delta_log``); runs alternate after a warm-up each. deltalog plans the scan
  from the log (:mod:`deltalog.spark.reads.log_index`); the same scan with explicit paths
  (``spark.deltalog.scan.fileIndex=paths``) is timed too;
* **status/list discoveries**: Spark's own counter of files found by listing or status calls
  (``HiveCatalogMetrics.filesDiscovered``) across deltalog's planning and run -- 0 means no file-system
  call per data file -- against the plain read (which lists the directory) and explicit paths;
* **driver memory** of the largest full scan: RSS of the Python driver and of its JVM after the scan;
* **selective scan** on the largest table: ``read(..., where=[("id", "<", 1% of ids)])``, timed from the
  call to a planned DataFrame (snapshot load, stats skipping and Spark's relation), and the files it reads
  (``inputFiles()``) against the files whose stats match.

* **an everyday many-file table** (issue 55, item 6): 3,000 files of 100 rows (``--everyday FILES:ROWS``),
  written as a user would (``df.repartition(3000).write.format("delta")``), read as a user would
  (``spark.read.format("delta").load``) against ``spark.read.parquet(dir)``: ``agg(sum(x), count)``,
  ``groupBy`` and a full materialisation (``noop``), target 1.1x each.

Saves ``spark-scan-files-<N>`` per size (anchor: the plain parquet read), ``spark-scan-everyday`` (the worst of the
three shapes; each shape's medians in ``extra``) and ``spark-scan-selective``
(planning against its 1 s budget), plus ``scan_files.json`` (the sweep that ``bench/report.py`` plots).
``bench/run.py`` runs it in full runs only.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed
from harness import Result, save

ROWS_PER_FILE = 10
_SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "x", "type": "double", "nullable": True, "metadata": {}},
]}


def build(files: int, data_dir: Path) -> Path:
    """The ``files``-file table (see the module docstring), built once.

    Example:
        >>> build(100, Path("/tmp/bench"))                                           # doctest: +SKIP
        PosixPath('/tmp/bench/scan_files_100')
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.dataset as pads

    path = data_dir / f"scan_files_{files}"
    if (path / ".complete").exists():
        return path
    if path.exists():
        import shutil

        shutil.rmtree(path)
    ids = np.arange(files * ROWS_PER_FILE, dtype=np.int64)
    pads.write_dataset(pa.table({"id": ids, "x": ids * 0.5}), path, format="parquet",
                       basename_template="part-{i}.snappy.parquet",
                       max_rows_per_file=ROWS_PER_FILE, max_rows_per_group=ROWS_PER_FILE, use_threads=False,
                       max_open_files=1024)
    now = int(time.time() * 1000)
    lines = [
        json.dumps({"commitInfo": {"timestamp": now, "operation": "WRITE", "operationParameters": {}}}),
        json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json.dumps({"metaData": {"id": f"00000000-0000-0000-0000-{files:012d}",
                                 "format": {"provider": "parquet", "options": {}},
                                 "schemaString": json.dumps(_SCHEMA), "partitionColumns": [],
                                 "configuration": {}, "createdTime": now}}),
    ]
    for i in range(files):
        name = f"part-{i}.snappy.parquet"
        st = os.stat(path / name)
        lo, hi = i * ROWS_PER_FILE, i * ROWS_PER_FILE + ROWS_PER_FILE - 1
        stats = json.dumps({"numRecords": ROWS_PER_FILE, "minValues": {"id": lo, "x": lo * 0.5},
                            "maxValues": {"id": hi, "x": hi * 0.5}, "nullCount": {"id": 0, "x": 0}})
        lines.append(json.dumps({"add": {"path": name, "partitionValues": {}, "size": st.st_size,
                                         "modificationTime": int(st.st_mtime * 1000), "dataChange": True,
                                         "stats": stats}}))
    (path / "_delta_log").mkdir()
    (path / "_delta_log" / "00000000000000000000.json").write_text("\n".join(lines) + "\n")
    (path / ".complete").write_text("")
    return path


def everyday(spark: Any, data_dir: Path, files: int, rows: int, *, repeat: int, quick: bool) -> Result:
    """The everyday many-file table (see the module docstring): each shape through ``format("delta")`` against
    ``spark.read.parquet(dir)``, alternately; the result holds the worst shape's ratio.

    Example:
        >>> everyday(spark, Path("/tmp/bench"), 60, 6000, repeat=1, quick=True).ratio       # doctest: +SKIP
        1.02
    """
    from pyspark.sql import functions as F

    path = data_dir / f"scan_everyday_{files}_{rows}"
    if not (path / "_delta_log").exists():
        (spark.range(rows).withColumn("x", F.col("id") * 0.5).withColumn("s", (F.col("id") % 97).cast("string"))
         .repartition(files).write.format("delta").save(str(path)))
    shapes = {
        "agg": lambda df: df.agg(F.sum("x"), F.count(F.lit(1))).collect(),
        "groupby": lambda df: df.groupBy("s").agg(F.sum("x")).collect(),
        "materialise": lambda df: df.write.format("noop").mode("overwrite").save(),
    }
    extra: dict[str, Any] = {"files": files, "rows": rows}
    worst: tuple[float, str, list[float], list[float]] | None = None
    for name, action in shapes.items():
        plain_s, _, ours_s, _ = harness.time_interleaved(
            lambda a=action: a(spark.read.parquet(str(path))),
            lambda a=action: a(spark.read.format("delta").load(str(path))), repeat=repeat, warmup=0 if quick else 1)
        ratio = harness.median(ours_s) / harness.median(plain_s)
        extra[name] = {"deltalog_s": harness.median(ours_s), "anchor_s": harness.median(plain_s),
                       "ratio": round(ratio, 3)}
        print(f"  [everyday {files:,} files / {rows:,} rows, {name}: delta {harness.median(ours_s):.2f} s, "
              f"parquet {harness.median(plain_s):.2f} s, {ratio:.2f}x]", flush=True)
        if worst is None or ratio > worst[0]:
            worst = (ratio, name, ours_s, plain_s)
    assert worst is not None
    extra["worst_shape"] = worst[1]
    return Result(workload="spark-scan-everyday",
                  title=f"Spark read of a {files:,}-file, {rows:,}-row table (worst of agg / groupBy / noop)",
                  deltalog_median=harness.median(worst[2]), anchor_median=harness.median(worst[3]), target=1.1,
                  anchor="spark.read.parquet(dir)", deltalog_runs=worst[2], anchor_runs=worst[3],
                  params={"files": files, "rows": rows, "repeat": repeat}, extra=extra, quick=quick)


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(parser)
    parser.add_argument("--files", type=int, nargs="+", default=None,
                        help="table sizes in files (default 1000 10000 100000; quick: 50 200)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per side (default 3, quick 1)")
    parser.add_argument("--everyday", default=None, metavar="FILES:ROWS",
                        help="the everyday table (default 3000:300000; quick 60:6000)")
    parser.add_argument("--selective-only", action="store_true",
                        help="measure only the selective scan on the largest table (keeps the sweep's results)")
    args = parser.parse_args(argv)
    sizes = sorted(args.files or ([50, 200] if args.quick else [1_000, 10_000, 100_000]))
    repeat = args.repeat or (1 if args.quick else 3)

    from pyspark.sql import functions as F

    import deltalog
    from deltalog.spark import read
    from deltalog.spark.reads.log_index import FILE_INDEX_CONF

    results_dir = harness.results_dir_for(args)
    results_dir.mkdir(parents=True, exist_ok=True)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    tables = {n: build(n, args.data_dir) for n in sizes}
    spark = harness.spark_session("deltalog-scan-planning-bench", **{"spark.driver.memory": "4g"})
    jvm = spark.sparkContext._jvm
    discovered = jvm.org.apache.spark.metrics.source.HiveCatalogMetrics.METRIC_FILES_DISCOVERED()
    jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())

    def scan(frame: Any) -> tuple[float, int]:
        row = frame.agg(F.sum("x"), F.count(F.lit(1))).collect()[0]
        return float(row[0]), int(row[1])

    def counted(fn: Any) -> int:
        before = discovered.getCount()
        fn()
        return int(discovered.getCount() - before)

    points = []
    try:
        for n in ([] if args.selective_only else sizes):
            path = str(tables[n])
            runs = repeat if n < 100_000 else max(1, repeat - 1)
            plain_s, plain_r, ours_s, ours_r = harness.time_interleaved(
                lambda p=path: scan(spark.read.parquet(p)), lambda p=path: scan(read(spark, p)), repeat=runs,
                warmup=0 if args.quick else 1)
            if plain_r != ours_r:
                raise AssertionError(f"{n} files: deltalog read {ours_r}, plain parquet {plain_r}")
            spark.conf.set(FILE_INDEX_CONF, "paths")
            try:
                paths_s, _ = harness.time_calls(lambda p=path: scan(read(spark, p)), repeat=1, warmup=0)
                paths_found = counted(lambda p=path: read(spark, p))
            finally:
                spark.conf.unset(FILE_INDEX_CONF)
            ours_found = counted(lambda p=path: scan(read(spark, p)))
            plain_found = counted(lambda p=path: spark.read.parquet(p))
            point = {"files": n, "deltalog_s": harness.median(ours_s), "anchor_s": harness.median(plain_s),
                     "paths_s": paths_s[0], "deltalog_files_discovered": ours_found,
                     "anchor_files_discovered": plain_found, "paths_files_discovered": paths_found}
            extra: dict[str, Any] = dict(point)
            if n == sizes[-1]:
                extra["driver_python_rss_bytes"] = _rss_kb(os.getpid()) * 1024
                extra["driver_jvm_rss_bytes"] = _rss_kb(jvm_pid) * 1024
            points.append(point)
            r = Result(workload=f"spark-scan-files-{n}", title=f"Spark full scan + sum/count, {n:,} tiny files",
                       deltalog_median=point["deltalog_s"], anchor_median=point["anchor_s"], target=1.1,
                       anchor="spark.read.parquet(dir)", deltalog_runs=ours_s, anchor_runs=plain_s,
                       params={"files": n, "rows_per_file": ROWS_PER_FILE, "repeat": runs},
                       limits={"deltalog_files_discovered": 1}, extra=extra, quick=args.quick)
            print(f"  [{n:,} files: files discovered by status/list calls: deltalog {ours_found}, plain "
                               f"{plain_found}, explicit paths {paths_found}; explicit paths scan {paths_s[0]:.2f} s]",
                  flush=True)
            save(r, results_dir)

        if not args.selective_only:
            files_, rows_ = (int(x) for x in (args.everyday or ("60:6000" if args.quick else "3000:300000")).split(":"))
            save(everyday(spark, args.data_dir, files_, rows_, repeat=max(repeat, 1 if args.quick else 5),
                          quick=args.quick), results_dir)

        n = sizes[-1]
        path = str(tables[n])
        limit = n * ROWS_PER_FILE // 100
        matching = sum(1 for f in range(n) if f * ROWS_PER_FILE < limit)

        def plan() -> Any:
            return read(spark, path, where=[("id", "<", limit)])

        plan_s, frame = harness.time_calls(plan, repeat=repeat)
        read_files = len(frame.inputFiles())
        total = frame.count()
        if total != limit:
            raise AssertionError(f"selective scan counted {total} rows, expected {limit}")
        snap_s, _ = harness.time_calls(lambda: deltalog.Table(path).snapshot(), repeat=repeat)
        r = Result(workload="spark-scan-selective", title=f"selective scan planning, 1% of {n:,} files match",
                   deltalog_median=harness.median(plan_s), anchor_median=1.0, target=1.0,
                   anchor="1 s planning budget", deltalog_runs=plan_s,
                   params={"files": n, "matching_files": matching},
                   extra={"files_read": read_files, "matching_files": matching,
                          "snapshot_load_s": harness.median(snap_s)},
                   limits={"files_read_beyond_matching": 1}, quick=args.quick)
        r.extra["files_read_beyond_matching"] = max(0, read_files - matching)
        print(f"  [selective scan reads {read_files} files, {matching} match; snapshot load "
                           f"{harness.median(snap_s):.2f} s]", flush=True)
        save(r, results_dir)
    finally:
        spark.stop()
    if points:
        (results_dir / "scan_files.json").write_text(json.dumps({"points": points}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
