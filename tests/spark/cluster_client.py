"""A driver against a standalone Spark cluster, run as a separate process by test_spark_cluster.py (the
test session's own SparkSession is local and a process has only one SparkContext).

    python cluster_client.py spark://127.0.0.1:PORT WORKDIR   -> prints one JSON line of facts
"""

from __future__ import annotations

import json
import os
import sys
import warnings

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")


def main(master: str, work: str) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import deltalog
    from deltalog.spark import DeltaTable, configure

    builder = (
        SparkSession.builder.master(master)
        .appName("deltalog-cluster-test")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.cores.max", "1")
        .config("spark.executor.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .config("spark.executor.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    facts: dict[str, object] = {"master": spark.sparkContext.master}
    p, flat = f"{work}/parts", f"{work}/flat"
    df = spark.range(0, 100, numPartitions=3).withColumn("k", (F.col("id") % 4).cast("int"))
    df.write.format("delta").partitionBy("k").save(p)
    df.filter("id < 50").write.format("delta").mode("append").option("userMetadata", "more").save(p)
    facts["count"] = spark.read.format("delta").load(p).count()
    facts["count_v0"] = spark.read.format("delta").option("versionAsOf", 0).load(p).count()
    facts["k1"] = spark.read.format("delta").load(p).filter("k = 1").count()
    facts["history"] = [r["userMetadata"] for r in DeltaTable.forPath(spark, p).history().collect()]
    facts["kernel_rows"] = deltalog.Table(p).snapshot().to_arrow().num_rows
    spark.range(10).write.format("delta").save(flat)
    spark.range(10, 15).write.format("delta").mode("append").save(flat)
    facts["flat"] = sorted(r["id"] for r in spark.read.format("delta").load(flat).collect())
    facts["flat_v0"] = spark.read.format("delta").option("versionAsOf", 0).load(flat).count()
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()  # driver + executors
    facts["executors"] = int(executors) - 1
    spark.stop()
    print(json.dumps(facts))


if __name__ == "__main__":
    main(*sys.argv[1:3])
