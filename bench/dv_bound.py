"""What dropping deleted rows costs inside Spark, part by part: the bound behind issue 55's deletion-vector target.

    python bench/dv_bound.py [--rows 1000000 4000000 10000000] [--files 8] [--repeat 5] [--quick] [--results-dir DIR]

The tables are ``bench/sweep.py``'s ``dv`` tables (``--files`` files, deletion vectors on every file after
``DELETE WHERE id % 100 = 7``), built once into the data directory. Every contender starts from the same scan --
Spark's parquet relation planned from the log, as a Delta read is (``deltalog.spark.reads.log_index``) -- and runs
``agg(sum(v), count(*))`` and a full materialisation (``write.format("noop")``), alternately in one run, the order
rotating each round, after three untimed rounds (``sweep.READ_WARMUP_ROUNDS``), medians of ``--repeat`` runs (5;
quick 1):

* ``floor`` -- the scan filtered on ``_metadata.row_index >= 0`` (issue 55's floor: the row index, no row dropped);
* ``told apart`` -- each row's packed key (row index and file id, from ``_metadata``, as ``dv_scan`` builds it)
  computed and filtered on (``key >= 0``), no row dropped: the cost of knowing which file a row comes from;
* ``one-key join`` -- the broadcast anti join of those keys against a single key: the fixed cost of any join (its
  broadcast job), whatever the deletion vectors hold;
* ``sized join`` -- the broadcast anti join against as many keys as there are deleted rows, each the real key with
  bit 62 set, so none matches: the cost of probing a hash map of the real size, with nothing dropped;
* ``bitmap`` -- no join: each row's bit tested in every file's deletion vector concatenated into one constant
  ``array<bigint>`` parsed from SQL text (per-file offsets from a CASE over the file id): Spark keeps it as
  boxed longs, deserialized in every task;
* ``binary bitmap`` -- the same test with both constants built in the JVM from bytes
  (:func:`deltalog.spark.common.compat.array_literal`), each file's region found by an array lookup: what
  deltalog's read does since 2026-12-03, here without deltalog's planning;
* ``reader floor`` -- the scan with the parquet reader's own row-index column in its read schema
  (``dv_scan.READER_ROW_INDEX``, what ``_metadata.row_index`` is built from) filtered on ``>= 0``: the row index
  without a ``_metadata`` struct per row;
* ``reader bitmap`` -- ``binary bitmap`` on that column (only the file id still comes from ``_metadata``):
  what deltalog's read does since 2026-12-04;
* ``dv`` -- ``spark.read.format("delta").load(path)``, deltalog's read.

Each contender's ratio to the floor is printed and saved as ``dv-bound-<rows>.json`` (deltalog = ``dv``, anchor =
``floor``, target 1.3; ``extra`` has every contender's medians, ratios and Spark jobs). The lowest of ``sized
join``, ``bitmap``, ``binary bitmap`` and ``reader bitmap`` is what dropping the rows in Spark's plan costs at the
table's real number of deleted rows, without a reader of our own in the JVM.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import harness  # puts src/ on sys.path when deltalog is not installed
from harness import Result, save
from sweep import READ_WARMUP_ROUNDS, Jobs, build_read_tables, rotate

READ_TARGET = 1.3


def contenders(spark: Any, path: str) -> dict[str, Callable[[], Any]]:
    """The frames above (see the module docstring), each made anew per call."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    import deltalog
    from deltalog.spark.common.compat import frame_from_arrow
    from deltalog.spark.reads import dv_scan
    from deltalog.spark.reads.files import file_keys
    from deltalog.spark.reads.log_index import log_indexed

    snap = deltalog.Table(path).snapshot()
    files = snap.add_files()
    deleted = dv_scan.deleted_rows_per_file(snap, files)
    sizes = files.column("size").to_numpy(zero_copy_only=False).astype(np.int64)
    unique = len(set(sizes.tolist())) == len(sizes)
    told = dv_scan.file_ids(files, unique, sizes_from_log=True)  # deltalog's own way of telling files apart
    if told is None:
        raise SystemExit(f"{path}: two files share size and modification time")
    file_id, ids, _ = told
    bits = int(ids.max()).bit_length()
    key = f"(shiftleft(_metadata.row_index, {bits}) | {file_id})"
    keys = np.concatenate([(rows.astype(np.int64) << bits) | ids[i] for i, rows in deleted])
    schema = spark.read.format("delta").load(path).schema
    uris, mtimes = file_keys(snap, files), files.column("modificationTime").to_pylist()

    def raw() -> Any:
        return log_indexed(spark, schema, uris, sizes.tolist(), mtimes, hive=False)

    def reader_raw() -> Any:  # the reader's own row-index column in the read schema
        return log_indexed(spark, reader_schema, uris, sizes.tolist(), mtimes, hive=False)

    one = F.broadcast(spark.createDataFrame([(int(keys[0]),)], "one_key BIGINT"))
    sized = F.broadcast(frame_from_arrow(spark, pa.table({"sized_key": pa.array(keys | (1 << 62), pa.int64())})))
    # one bitmap for every file: file id -> (first word, words)
    first, count, words = {}, {}, []
    for i, rows in deleted:
        w = dv_scan.bitmap_words(rows)
        first[int(ids[i])], count[int(ids[i])] = sum(len(x) for x in words), len(w)
        words.append(w)
    bitmap = f"from_json('{json.dumps(np.concatenate(words).tolist())}', 'array<bigint>')"
    start = " ".join(f"WHEN {file_id} = {k} THEN {v}" for k, v in first.items())
    size = " ".join(f"WHEN {file_id} = {k} THEN {v}" for k, v in count.items())
    word = "shiftright(_metadata.row_index, 6)"
    bit = (f"CASE WHEN {word} < (CASE {size} ELSE 0 END) THEN getbit(element_at({bitmap}, "
           f"CAST((CASE {start} END) + {word} + 1 AS INT)), CAST(_metadata.row_index & 63 AS INT)) ELSE 0 END")
    keep = dv_scan._bitmap_keep(spark, files, deleted, told)
    reader_sql = dv_scan.row_index_sql(True, path)
    reader_keep = dv_scan._bitmap_keep(spark, files, deleted, told, reader_sql)
    reader_schema = StructType([*schema.fields, StructField(dv_scan.READER_ROW_INDEX, LongType(), True)])
    if keep is None or reader_keep is None:
        raise SystemExit(f"{path}: the binary bitmap does not apply (Spark Connect, or row counts missing)")
    return {
        "floor": lambda: raw().where(F.col("_metadata.row_index") >= 0),
        "told apart": lambda: raw().where(F.expr(f"{key} >= 0")),
        "one-key join": lambda: raw().join(one, on=F.expr(f"{key} = one_key"), how="left_anti"),
        "sized join": lambda: raw().select("*", F.expr(key).alias("sized_key")).join(sized, "sized_key", "left_anti"),
        "bitmap": lambda: raw().where(F.expr(f"({bit}) = 0")),
        "binary bitmap": lambda: raw().where(keep),
        "reader floor": lambda: reader_raw().where(F.col(dv_scan.READER_ROW_INDEX) >= 0).drop(dv_scan.READER_ROW_INDEX),
        "reader bitmap": lambda: reader_raw().where(reader_keep).drop(dv_scan.READER_ROW_INDEX),
        "dv": lambda: spark.read.format("delta").load(path),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    harness.common_args(parser)
    parser.add_argument("--rows", type=int, nargs="+", default=None, help="table sizes (default 1M 4M 10M)")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=None)
    args = parser.parse_args(argv)
    sizes = args.rows or ([20_000] if args.quick else [1_000_000, 4_000_000, 10_000_000])
    repeat = args.repeat or (1 if args.quick else 5)
    from pyspark.sql import functions as F

    results_dir = harness.results_dir_for(args)
    results_dir.mkdir(parents=True, exist_ok=True)
    work = args.data_dir / "dv-bound"
    work.mkdir(parents=True, exist_ok=True)
    spark = harness.spark_session("deltalog-dv-bound", **{"spark.driver.memory": "4g"})
    jobs = Jobs(spark)
    shapes: dict[str, Callable[[Any], Any]] = {
        "agg": lambda df: df.agg(F.sum("v"), F.count("*")).collect(),
        "materialise": lambda df: df.write.format("noop").mode("overwrite").save(),
    }
    try:
        for rows in sizes:
            path = work / f"dv-{rows}"
            if not (path / "_delta_log").exists():
                build_read_tables(spark, work, rows, args.files)
            frames = contenders(spark, str(path))
            live = rows - (rows + 92) // 100
            counts = {k: f().groupBy().count().collect()[0][0] for k, f in frames.items()}
            want = {"floor": rows, "told apart": rows, "one-key join": rows - 1, "sized join": rows, "bitmap": live,
                    "binary bitmap": live, "reader floor": rows, "reader bitmap": live, "dv": live}
            if counts != want:
                raise SystemExit(f"{rows:,} rows: counted {counts}, expected {want}")
            extra: dict[str, Any] = {}
            for shape, action in shapes.items():
                timed = rotate(jobs, {k: (lambda f=f, a=action: a(f())) for k, f in frames.items()}, repeat=repeat,
                               warmup=0 if args.quick else READ_WARMUP_ROUNDS)
                floor = timed["floor"]["median"]
                extra[shape] = {k: {"median_s": v["median"], "ratio": round(v["median"] / floor, 3),
                                    "jobs": v["jobs"], "runs": v["runs"]} for k, v in timed.items()}
                print(f"  [{rows:,} rows, {shape}: " + ", ".join(
                    f"{k} {v['median'] * 1000:.0f} ms ({v['median'] / floor:.2f}x, {v['jobs']} jobs)"
                    for k, v in timed.items()) + "]", flush=True)
            agg = extra["agg"]
            bound = min(agg[k]["ratio"] for k in ("sized join", "bitmap", "binary bitmap", "reader bitmap"))
            extra["bound_ratio"] = bound
            r = Result(workload=f"dv-bound-{rows}", title=f"DV read vs the row-index floor, parts, {rows:,} rows",
                       deltalog_median=agg["dv"]["median_s"], anchor_median=agg["floor"]["median_s"],
                       target=READ_TARGET, anchor="row-index floor (agg)", deltalog_runs=agg["dv"]["runs"],
                       anchor_runs=agg["floor"]["runs"], params={"rows": rows, "files": args.files, "repeat": repeat},
                       extra=extra, quick=args.quick)
            save(r, results_dir)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
