"""Spark Connect client run as a separate process by test_spark_connect.py (a remote session switches
pyspark's process-wide mode, which must not leak into the classic session of the other tests).

    python connect_client.py sc://127.0.0.1:PORT WORKDIR DV_TABLE   -> prints one JSON line of facts
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import sys
import warnings

import pyarrow.parquet as pq
from shipping import ship_deltalog

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")


def main(url: str, work: str, dv_table: str) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import deltalog
    from deltalog.spark import DeltaTable, read, register, write
    from deltalog.txn.constraints import ConstraintViolationError

    spark = register(SparkSession.builder.remote(url).getOrCreate())
    ship_deltalog(spark)
    facts: dict[str, object] = {"session": type(spark).__module__}
    p = f"{work}/t"
    df = spark.range(20).withColumn("k", (F.col("id") % 3).cast("int"))
    df.write.format("delta").partitionBy("k").save(p)
    df.write.format("delta").mode("append").option("userMetadata", "second").save(p)
    facts["count"] = spark.read.format("delta").load(p).count()
    facts["count_v0"] = spark.read.format("delta").option("versionAsOf", 0).load(p).count()
    facts["pruned_files"] = len(read(spark, p, where=[("k", "=", 1)]).inputFiles())
    facts["files_k1"] = sum(1 for v in deltalog.Table(p).snapshot().add_files().column("partitionValues").to_pylist()
                            if dict(v)["k"] == "1")
    facts["history"] = [r["userMetadata"] for r in DeltaTable.forPath(spark, p).history().collect()]
    # A filter on the loaded frame re-plans the scan with the log's stats (Connect Column and SQL string).
    loaded = spark.read.format("delta").load(p)
    facts["skip_files"] = [len(loaded.inputFiles()), len(loaded.filter(F.col("id") >= 18).inputFiles()),
                           len(spark.read.format("delta").load(p).where("id >= 18 AND k = 0").inputFiles())]
    facts["skip_rows"] = sorted(r["id"] for r in spark.read.format("delta").load(p).filter(F.col("id") >= 18).collect())
    # ... also after select / withColumn / another filter; a changed column's statistics are not used.
    chained = loaded.select("id", "k").withColumn("y", F.col("id") * 2).filter("k = 0").filter(F.col("id") >= 18)
    shadowed = loaded.withColumn("id", F.col("id") - 100).filter(F.col("id") >= 18)
    facts["chain_files"] = [len(chained.inputFiles()), len(shadowed.inputFiles())]
    facts["chain_rows"] = sorted((r["id"], r["y"]) for r in chained.collect())
    facts["shadow_rows"] = shadowed.count()
    bound = loaded.select(loaded.id, "k").filter("id >= 18")
    facts["bound"] = [len(bound.inputFiles()), sorted(r["id"] for r in bound.collect())]
    # The loaded frame's columns still resolve after a filter that skips files (the filtered frame is Spark's
    # plain filter on Connect, pruned at its actions); columns bound to it (loaded.id) are written by name where
    # the server analyses that the same, so frames built with them skip files too.
    skipping = loaded.filter(F.col("id") >= 18)
    after = skipping.select(loaded.id, (loaded.k + 1).alias("k1"))
    facts["after_filter"] = [len(skipping.inputFiles()), len(after.inputFiles()),
                             sorted(r["id"] for r in after.collect())]
    by_bound = loaded.filter(loaded.id >= 18)
    facts["bound_filter"] = [len(by_bound.inputFiles()), sorted(r["id"] for r in by_bound.collect())]
    # ... but not where the name means another column: here loaded.id is the column before withColumn replaced it
    shadow = loaded.withColumn("id", F.col("id") * 10).filter(loaded.id >= 18)
    facts["bound_shadowed"] = [len(shadow.inputFiles()), sorted(r["id"] for r in shadow.collect())]
    facts["dv_count"] = read(spark, dv_table).count()
    facts["dv_expected"] = deltalog.Table(dv_table).snapshot().to_arrow().num_rows
    write(spark.range(2), f"{work}/c", **{"delta.constraints.small": "id < 2"})
    try:
        write(spark.range(5), f"{work}/c", mode="append")
        facts["constraint"] = "not raised"
    except ConstraintViolationError as exc:
        facts["constraint"] = str(exc)
    facts["constraint_version"] = deltalog.Table(f"{work}/c").latest_version()
    # Spark's own parquet writer (unpartitioned, no row checks), the builder and the protocol methods.
    spark.range(7).write.format("delta").save(f"{work}/flat")
    facts["flat"] = spark.read.format("delta").load(f"{work}/flat").count()
    facts["flat_writer"] = str(pq.read_metadata(next(glob.iglob(f"{work}/flat/*.parquet"))).created_by)
    built = (DeltaTable.create(spark).location(f"{work}/built")
             .addColumn("id", "bigint", nullable=False, comment="key")
             .addColumn("day", "date").partitionedBy("day").execute())
    empty_read = built.toDF().schema  # an empty table's frame is made from the schema alone
    spark.createDataFrame([(1, dt.date(2024, 1, 1))], "id long, day date").write.format("delta").mode("append") \
        .save(f"{work}/built")
    facts["read_schema"] = [[f.name, f.nullable, dict(f.metadata)] for f in built.toDF().schema.fields]
    facts["empty_read_schema"] = [[f.name, f.nullable, dict(f.metadata)] for f in empty_read.fields]
    built.upgradeTableProtocol(1, 3)
    snap = deltalog.Table(f"{work}/built").snapshot()
    facts["built"] = [snap.schema.field_names, list(snap.partition_columns), snap.protocol.minWriterVersion]
    spark.stop()
    print(json.dumps(facts))


if __name__ == "__main__":
    main(*sys.argv[1:4])
