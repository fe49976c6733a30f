"""Structured Streaming through deltalog: end-to-end latency per micro-batch, and admission control.

    python bench/streaming_latency.py [--commits 7] [--trigger-ms 100] [--quick] [--results-dir DIR]

1. **Latency of a 10-file commit.** A running ``readStream.format("delta")`` A → ``writeStream.format("delta")``
   B query (``processingTime`` trigger of ``--trigger-ms``); a commit of 10 files (100 rows each) is made to
   A, and the clock runs until B's log has the commit of those rows (polled every 5 ms). Median over
   ``--commits`` commits. Anchor, same run and trigger: Spark's own file stream source and sink
   (``readStream.parquet(dir)`` → ``writeStream.parquet``), 10 parquet files renamed into the source
   directory, clock stopped when the query's progress has counted their rows.
2. **maxFilesPerTrigger.** 100 files pending in A (10 commits of 10 files); an ``availableNow`` query per
   setting (10, 50, 1000) reports the number of micro-batches and files per batch (rows / 100) and the
   wall time of the query.

Numbers are for reading (no assertions); the machine's load moves them, both sides alike.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed
import pyarrow as pa
import pyarrow.parquet as pq
from harness import Result, save

import deltalog

ROWS_PER_FILE = 100
FILES_PER_COMMIT = 10
#: deltalog's source and sink: at most 1.5x the latency of Spark's own file source and sink.
TARGET = 1.5


def _session() -> Any:
    return harness.spark_session("deltalog-streaming-bench")


def _batch(start: int) -> pa.Table:
    """FILES_PER_COMMIT x ROWS_PER_FILE rows over FILES_PER_COMMIT partition values: one file each."""
    n = FILES_PER_COMMIT * ROWS_PER_FILE
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "k": pa.array([i % FILES_PER_COMMIT for i in range(n)], pa.int32())})


def _commit_10_files(path: str, start: int) -> None:
    deltalog.write_table(path, _batch(start), mode="append", partition_by=["k"])


def _wait(cond: Any, timeout: float = 120.0) -> float:
    deadline = time.perf_counter() + timeout
    while not cond():
        if time.perf_counter() > deadline:
            raise TimeoutError("the stream did not catch up")
        time.sleep(0.005)
    return time.perf_counter()


def delta_latency(spark: Any, work: Path, commits: int, trigger_ms: int) -> list[float]:
    a, b, chk = str(work / "a"), str(work / "b"), str(work / "chk")
    _commit_10_files(a, 0)
    q = (spark.readStream.format("delta").load(a).writeStream.format("delta").option("checkpointLocation", chk)
         .trigger(processingTime=f"{trigger_ms} milliseconds").start(b))
    log = Path(b) / "_delta_log"
    try:
        _wait(lambda: (log / f"{0:020d}.json").exists())  # the initial snapshot is in B
        out = []
        for i in range(commits + 1):  # the first round warms up
            nxt = deltalog.Table(b).latest_version() + 1
            _commit_10_files(a, (i + 1) * 10_000)
            t0 = time.perf_counter()
            t1 = _wait(lambda n=nxt: (log / f"{n:020d}.json").exists())
            if i:
                out.append(t1 - t0)
            time.sleep(0.2)  # not aligned with the trigger: commits land at varying points of its period
    finally:
        q.stop()
    rows = deltalog.Table(b).snapshot().to_arrow(columns=["id"]).num_rows
    assert rows == (commits + 2) * FILES_PER_COMMIT * ROWS_PER_FILE, rows
    return out


def file_stream_latency(spark: Any, work: Path, commits: int, trigger_ms: int) -> list[float]:
    src, out_dir, chk, stage = work / "src", work / "out", work / "fchk", work / "stage"
    src.mkdir()
    stage.mkdir()

    def land(start: int) -> None:
        table = _batch(start)
        staged = []
        for k in range(FILES_PER_COMMIT):
            name = f"part-{uuid.uuid4()}.parquet"
            part = table.filter(pa.compute.equal(table.column("k"), k))
            pq.write_table(part, stage / name)
            staged.append(name)
        for name in staged:
            os.rename(stage / name, src / name)

    land(0)
    schema = "id long, k int"
    q = (spark.readStream.schema(schema).parquet(str(src)).writeStream.format("parquet")
         .option("checkpointLocation", str(chk)).trigger(processingTime=f"{trigger_ms} milliseconds")
         .start(str(out_dir)))

    def counted() -> int:
        return sum(int(p["numInputRows"]) for p in q.recentProgress)

    per_round = FILES_PER_COMMIT * ROWS_PER_FILE
    try:
        _wait(lambda: counted() >= per_round)
        out = []
        for i in range(commits + 1):
            expected = (i + 2) * per_round
            land((i + 1) * 10_000)
            t0 = time.perf_counter()
            t1 = _wait(lambda e=expected: counted() >= e)
            if i:
                out.append(t1 - t0)
            time.sleep(0.2)
    finally:
        q.stop()
    return out


def admission(spark: Any, work: Path, settings: list[int]) -> list[dict[str, Any]]:
    a = str(work / "pending")
    for i in range(10):
        _commit_10_files(a, i * 10_000)  # 100 files pending
    results = []
    for max_files in settings:
        t0 = time.perf_counter()
        q = (spark.readStream.format("delta").option("maxFilesPerTrigger", max_files).load(a)
             .writeStream.format("noop").option("checkpointLocation", str(work / f"chk-{max_files}"))
             .trigger(availableNow=True).start())
        q.awaitTermination()
        elapsed = time.perf_counter() - t0
        files = [int(p["numInputRows"]) // ROWS_PER_FILE for p in q.recentProgress if p["numInputRows"]]
        results.append({"maxFilesPerTrigger": max_files, "batches": len(files), "files_per_batch": files,
                        "seconds": elapsed})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(parser)
    parser.add_argument("--commits", type=int, default=None, help="timed commits (default 7, quick: 3)")
    parser.add_argument("--trigger-ms", type=int, default=100)
    args = parser.parse_args(argv)
    commits = args.commits or (3 if args.quick else 7)
    spark = _session()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="stream-", dir=args.data_dir))
    try:
        delta = delta_latency(spark, work, commits, args.trigger_ms)
        files = file_stream_latency(spark, work, commits, args.trigger_ms)
        rows = admission(spark, work, [10, 50, 1000])
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
    d, f = statistics.median(delta), statistics.median(files)
    print(f"10-file commit -> rows committed downstream (trigger {args.trigger_ms} ms, median of {commits}):")
    for label, med, runs in (("deltalog Delta A -> Delta B", d, delta), ("Spark parquet dir -> parquet", f, files)):
        print(f"  {label:<31} {med * 1000:7.0f} ms   (runs: {', '.join(f'{x * 1000:.0f}' for x in runs)})")
    print(f"  ratio deltalog / Spark file stream: {d / f:.2f}")
    print("100 pending files, Trigger.AvailableNow:")
    for r in rows:
        print(f"  maxFilesPerTrigger={r['maxFilesPerTrigger']:<5} batches={r['batches']:<3} "
              f"files/batch={r['files_per_batch']}  {r['seconds']:.1f} s")
    extra: dict[str, Any] = {
        f"maxFilesPerTrigger={r['maxFilesPerTrigger']}": f"{r['batches']} batch{'es' if r['batches'] != 1 else ''} "
        f"of {r['files_per_batch']} files, "
        f"{r['seconds']:.1f} s" for r in rows
    }
    save(Result(
        workload="streaming",
        title=f"Structured Streaming: a 10-file commit to A committed in B (trigger {args.trigger_ms} ms)",
        deltalog_median=d,
        anchor_median=f,
        target=TARGET,
        anchor="Spark file stream (parquet dir -> parquet)",
        deltalog_runs=delta,
        anchor_runs=files,
        params={"commits": commits, "trigger_ms": args.trigger_ms, "files_per_commit": FILES_PER_COMMIT},
        extra=extra,
        quick=args.quick,
    ), harness.results_dir_for(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
