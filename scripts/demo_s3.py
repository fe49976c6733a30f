"""deltalog on S3, end to end, against a local S3 emulator (moto) this script starts and stops.

    make demo-s3                     (= python scripts/demo_s3.py)
    python scripts/demo_s3.py --no-spark

1. the kernel: ``write_table`` / ``Table`` on ``s3://`` with delta-rs-style storage options, time travel,
   a DELETE, the history;
2. the command line: ``deltalog describe s3://... --option KEY=VALUE``;
3. Spark (plain ``pip install pyspark``, no Hadoop S3 connector): the same bucket configured only through
   the ``spark.hadoop.fs.s3a.*`` settings Spark users already write -- a partitioned write, a read, a
   MERGE, an OPTIMIZE and a stream from one table to another.

Against real S3 leave out the endpoint and give credentials the usual ways (environment, profile, role).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the emulator helpers the test suite uses

import deltalog  # noqa: E402
import emulators  # noqa: E402


def kernel(uri: str, options: dict[str, str]) -> None:
    print(f"\n== the kernel on {uri}")
    events = pa.table({"id": pa.array(range(6), pa.int64()), "day": ["2024-05-01"] * 3 + ["2024-05-02"] * 3})
    deltalog.write_table(uri, events, partition_by=["day"], storage_options=options)
    deltalog.write_table(uri, pa.table({"id": pa.array([6, 7], pa.int64()), "day": ["2024-05-03"] * 2}),
                         mode="append", storage_options=options)
    table = deltalog.Table(uri, storage_options=options)
    print("version", table.snapshot().version, "rows", table.snapshot().to_arrow().num_rows,
          "| version 0 had", table.snapshot(0).to_arrow().num_rows)
    table.delete([("day", "=", "2024-05-01")])
    print("after DELETE:", sorted(table.snapshot().to_arrow().column("id").to_pylist()))
    print("history:", [(h["version"], h["operation"]) for h in table.history()])


def cli(uri: str, options: dict[str, str]) -> None:
    print("\n== deltalog describe", uri)
    flags = [f"--option={k}={v}" for k, v in options.items()]
    subprocess.run([sys.executable, "-m", "deltalog.cli", "describe", uri, *flags], check=True)


def spark(bucket: str, emulator: emulators.Emulator) -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    from deltalog.spark import DeltaTable, local_session

    conf = {  # what Spark users already set for s3a -- nothing deltalog-specific
        "spark.hadoop.fs.s3a.endpoint": emulator.endpoint,
        "spark.hadoop.fs.s3a.access.key": emulators.ACCESS_KEY,
        "spark.hadoop.fs.s3a.secret.key": emulators.SECRET_KEY,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": emulators.REGION,
    }
    session = local_session("deltalog-demo-s3", conf=conf, lean_jvm=True)
    try:
        uri = f"s3a://{bucket}/spark/orders"
        print(f"\n== Spark on {uri} (Arrow tasks: no Hadoop S3 connector installed)")
        orders = session.range(0, 1000).selectExpr("id", "id % 4 as region", "cast(id as double) * 1.5 as amount")
        orders.write.format("delta").partitionBy("region").save(uri)
        df = session.read.format("delta").load(uri)
        print("rows", df.count(), "| region 1:", df.filter("region = 1").count())
        updates = session.range(990, 1010).selectExpr("id", "id % 4 as region", "-1.0 as amount")
        (DeltaTable.forPath(session, uri).alias("t").merge(updates.alias("s"), "t.id = s.id")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        changed = session.read.format("delta").load(uri).filter("amount = -1").count()
        print("after MERGE:", changed, "rows updated/added")
        DeltaTable.forPath(session, uri).optimize().executeCompaction()
        copy = f"s3a://{bucket}/spark/orders_copy"
        with tempfile.TemporaryDirectory() as checkpoint:
            (session.readStream.format("delta").load(uri).writeStream.format("delta")
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start(copy).awaitTermination())
        print("streamed copy:", session.read.format("delta").load(copy).count(), "rows")
        ops = [r["operation"] for r in DeltaTable.forPath(session, uri).history().collect()]
        print("history:", ops)
    finally:
        session.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-spark", action="store_true", help="only the kernel and the command line")
    args = parser.parse_args(argv)
    emulator = emulators.start_moto()
    try:
        bucket = emulators.new_bucket(emulator)
        print(f"S3 emulator at {emulator.endpoint}, bucket {bucket}")
        options = dict(emulator.options)  # AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ... as delta-rs spells them
        uri = f"s3://{bucket}/events"
        kernel(uri, options)
        cli(uri, options)
        if not args.no_spark:
            spark(bucket, emulator)
    finally:
        emulator.stop()
    print("\ndone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
