"""Object-store benchmarks on S3 (moto on loopback, started here), deltalog against its anchors in one run.

Workloads (ratios are deltalog / anchor):

* ``s3-load`` -- load the latest snapshot and list its live files, 100k files (a delta-rs checkpoint +
  50 JSON commits), deltalog against delta-rs on the same bucket (target <= 0.8x); the HTTP requests of
  one load of each reader are counted from the emulator's request log;
* ``s3-commits`` -- 200 sequential one-row appends, deltalog's ``write_table`` against delta-rs'
  ``write_deltalake``, each on its own table (throughput, target >= 1.0x);
* ``s3-spark-scan`` -- (full runs only) ``spark.read.format("delta").load(...)`` + aggregate over a
  10k-file table on S3 through deltalog's Arrow tasks (no Hadoop connector), against the same scan of a
  local copy; reports the requests per data file (target: no HEAD or LIST per file).

    python bench/object_store.py            # full sizes
    python bench/object_store.py --quick    # tiny sizes, no Spark
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import deltalake  # noqa: F401 -- delta-rs before pyarrow.parquet (see tests/interop/deltars_worker.py)
import harness
import pyarrow as pa
import pyarrow.parquet as pq
from harness import Result, median, save, time_interleaved
from synth import LogSpec, build

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the emulator helpers the test suite uses
import emulators  # noqa: E402

LOAD = LogSpec(files=100_000, commits=50, adds_per_commit=20, removes_per_commit=2, checkpoint=True)
LOAD_QUICK = LogSpec(files=2_000, commits=5, adds_per_commit=20, removes_per_commit=2, checkpoint=True)


class RequestLog:
    """Counts the HTTP requests moto served (from its request log) between two marks."""

    def __init__(self, emulator: Any) -> None:
        self.path = os.path.join(emulator.workdir, "moto.log")

    def _lines(self) -> int:
        with open(self.path, "rb") as f:
            return sum(1 for line in f if b"HTTP/1.1" in line)  # (moto colours its log lines)

    def count(self, fn: Any) -> tuple[int, Any]:
        before = self._lines()
        result = fn()
        time.sleep(0.5)  # let the server flush its log
        return self._lines() - before, result


def upload(local: Path, uri: str, options: dict[str, str], *, only_log: bool = False) -> None:
    """Copy a local table (or only its ``_delta_log``) to ``uri``."""
    from deltalog.storage import store_for

    store = store_for(uri, options=options)
    files = [p for p in local.rglob("*") if p.is_file() and not p.name.startswith(".")]
    if only_log:
        files = [p for p in files if "_delta_log" in p.parts]

    def put(p: Path) -> None:
        store.write(p.relative_to(local).as_posix(), p.read_bytes(), overwrite=True)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(put, files))


def run_load(em: Any, data_dir: Path, *, quick: bool, repeat: int) -> Result:
    import deltalake as dl

    import deltalog

    spec = LOAD_QUICK if quick else LOAD
    local = build(spec, data_dir)
    bucket = emulators.new_bucket(em)
    uri, opts = f"s3://{bucket}/load", dict(em.options)
    upload(local, uri, opts, only_log=True)
    requests = RequestLog(em)

    def ours() -> int:
        return int(deltalog.Table(uri, storage_options=opts).snapshot().add_files().num_rows)

    def theirs() -> int:
        return int(dl.DeltaTable(uri, storage_options=opts).get_add_actions(flatten=False).num_rows)

    ours_requests, n_ours = requests.count(ours)
    theirs_requests, n_theirs = requests.count(theirs)
    assert n_ours == n_theirs == spec.live_files, (n_ours, n_theirs, spec.live_files)
    a, _, b, _ = time_interleaved(ours, theirs, repeat=repeat)
    return Result(
        workload="s3-load", title=f"S3: load + list files, {spec.live_files:,} files, checkpoint + {spec.commits} "
        "commits", deltalog_median=median(a), anchor_median=median(b), target=0.8, deltalog_runs=a, anchor_runs=b,
        params={"files": spec.live_files, "commits": spec.commits}, quick=quick,
        extra={"deltalog_requests_per_load": ours_requests, "deltars_requests_per_load": theirs_requests},
    )


def run_commits(em: Any, *, quick: bool) -> Result:
    import deltalake as dl

    import deltalog

    n = 20 if quick else 200
    bucket = emulators.new_bucket(em)
    opts = dict(em.options)
    ours_uri, theirs_uri = f"s3://{bucket}/ours", f"s3://{bucket}/theirs"
    row = pa.table({"id": pa.array([1], pa.int64()), "name": ["x"]})
    deltalog.write_table(ours_uri, row, storage_options=opts)
    dl.write_deltalake(theirs_uri, row, storage_options=opts)
    t0 = time.perf_counter()
    for _ in range(n):
        deltalog.write_table(ours_uri, row, mode="append", storage_options=opts)
    ours = n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(n):
        dl.write_deltalake(theirs_uri, row, mode="append", storage_options=opts)
    theirs = n / (time.perf_counter() - t0)
    assert deltalog.Table(ours_uri, storage_options=opts).snapshot().version == n
    return Result(
        workload="s3-commits", title=f"S3: {n} sequential one-row appends (throughput)", deltalog_median=ours,
        anchor_median=theirs, target=1.0, metric="throughput", unit="commits/s", params={"commits": n}, quick=quick,
    )


def _many_files(path: Path, files: int) -> None:
    """A table of ``files`` small parquet files (10 rows each), one commit."""
    import deltalog
    from deltalog.data.write_stats import stats_json
    from deltalog.protocol.actions import Add, Format, Metadata
    from deltalog.protocol.schema import StructType
    from deltalog.txn.operations import Write

    schema = pa.schema([("id", pa.int64()), ("v", pa.float64())])
    path.mkdir(parents=True)
    table = deltalog.Table(str(path))
    txn = table.transaction(Write(mode="Append"))
    delta_schema = StructType.from_arrow_schema(schema)
    txn.update_metadata(Metadata(id="bench", format=Format(), schemaString=delta_schema.to_json()))
    for i in range(files):
        name = f"part-{i:06d}.parquet"
        data = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                         "v": pa.array([float(j) for j in range(10)])}, schema=schema)
        pq.write_table(data, path / name)
        md = pq.read_metadata(path / name)
        txn.add_file(Add(path=name, partitionValues={}, size=(path / name).stat().st_size,
                         modificationTime=int(time.time() * 1000), dataChange=True, stats=stats_json(md, delta_schema)))
    txn.commit()


def run_spark_scan(em: Any, data_dir: Path, *, repeat: int) -> Result:
    files = 10_000
    local = data_dir / f"spark_scan_{files}"
    if not (local / ".complete").exists():
        import shutil

        shutil.rmtree(local, ignore_errors=True)
        _many_files(local, files)
        (local / ".complete").write_text("")
    bucket = emulators.new_bucket(em)
    uri = f"s3a://{bucket}/scan"
    upload(local, uri, dict(em.options))
    conf = {"spark.hadoop.fs.s3a.endpoint": em.endpoint, "spark.hadoop.fs.s3a.access.key": emulators.ACCESS_KEY,
            "spark.hadoop.fs.s3a.secret.key": emulators.SECRET_KEY, "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.endpoint.region": emulators.REGION}
    spark = harness.spark_session("bench-object-store", **conf)
    try:
        def scan(location: str) -> Any:
            return spark.read.format("delta").load(location).selectExpr("sum(id)", "count(*)").collect()[0]

        requests = RequestLog(em)
        per_scan, got = requests.count(lambda: scan(uri))
        assert got[1] == files * 10, got
        a, _, b, _ = time_interleaved(lambda: scan(uri), lambda: scan(str(local)), repeat=repeat)
    finally:
        spark.stop()
    return Result(
        workload="s3-spark-scan", title=f"Spark scan of a {files:,}-file table on S3 (Arrow tasks) vs local files",
        deltalog_median=median(a), anchor_median=median(b), target=float("inf"), anchor="the same scan, local files",
        deltalog_runs=a, anchor_runs=b, params={"files": files},
        extra={"requests_per_scan": per_scan, "requests_per_data_file": round(per_scan / files, 2)},
        limits={"requests_per_data_file": 1.5},  # one GET per (small) file: no HEAD, no LIST per file
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(p)
    p.add_argument("--repeat", type=int, default=None)
    p.add_argument("--workload", choices=["s3-load", "s3-commits", "s3-spark-scan"], action="append")
    args = p.parse_args(argv)
    results_dir = harness.results_dir_for(args)
    repeat = args.repeat or (1 if args.quick else 5)
    wanted = args.workload or ["s3-load", "s3-commits", *([] if args.quick else ["s3-spark-scan"])]
    em = emulators.start_moto()
    try:
        if "s3-load" in wanted:
            save(run_load(em, args.data_dir, quick=args.quick, repeat=repeat), results_dir)
        if "s3-commits" in wanted:
            save(run_commits(em, quick=args.quick), results_dir)
        if "s3-spark-scan" in wanted:
            save(run_spark_scan(em, args.data_dir, repeat=min(repeat, 3)), results_dir)
    finally:
        em.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
