"""A driver against a standalone Spark cluster, run as a separate process by test_spark_cluster.py (the
test session's own SparkSession is local and a process has only one SparkContext).

    python cluster_client.py spark://127.0.0.1:PORT WORKDIR BARE_PYTHON ENV_TGZ DEPS_TGZ DELTALOG_ZIP NATIVE_ZIP
        -> prints one JSON line of facts

It writes, reads and time-travels through ``format("delta")`` with the executors running this interpreter,
then gives them one that cannot import deltalog and ships deltalog in each way docs/deployment.md#executors
tells (the archives are named by the builder, the interpreter of each step by ``sc.pythonExec``, which is what
``spark.pyspark.python`` sets).
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")


def main(master: str, work: str, bare: str, env_tgz: str, deps_tgz: str, deltalog_zip: str, native_zip: str) -> None:
    from pyspark.sql import SparkSession

    from deltalog.spark import configure

    started = time.monotonic()
    lean = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
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
        .config("spark.task.maxFailures", "1")  # a worker that cannot import fails its job at once
        .config("spark.driver.extraJavaOptions", lean)
        .config("spark.executor.extraJavaOptions", lean)
        # docs/deployment.md: a packed environment and a dependency directory, unpacked on every executor
        .config("spark.archives", f"{env_tgz}#env,{deps_tgz}#deps")
        .config("spark.pyspark.python", "./env/bin/python")
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    sc = spark.sparkContext
    facts: dict[str, object] = {"master": sc.master, "python": sc.pythonExec}
    seconds = {"session": round(time.monotonic() - started, 1)}
    facts["seconds"] = seconds  # where a slow run spent its time
    # The executors run this interpreter (deltalog installed), with this checkout on its path.
    sc.pythonExec = sys.executable
    sc.environment["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    began = time.monotonic()
    formats(spark, work, facts)
    seconds["formats"] = round(time.monotonic() - began, 1)

    def step(name: str, run: Callable[[], object]) -> None:
        began = time.monotonic()
        facts[name] = run()
        seconds[name] = round(time.monotonic() - began, 1)

    # 1. The packed environment's interpreter: spark.pyspark.python=./env/bin/python.
    sc.pythonExec = "./env/bin/python"
    del sc.environment["PYTHONPATH"]
    step("env", lambda: _append(spark, f"{work}/env"))
    # 2. An interpreter that has PySpark's packages but neither deltalog nor pyroaring: deltalog's error.
    sc.pythonExec = bare
    step("bare", lambda: seen_failure(lambda: _append(spark, f"{work}/bare")))
    # 3. The same interpreter with the dependency directory on its path (spark.executorEnv.PYTHONPATH=./deps).
    sc.environment["PYTHONPATH"] = "./deps"
    step("deps", lambda: _append(spark, f"{work}/deps"))
    # 4. spark.submit.pyFiles: deltalog itself arrives, its native dependency does not, zipped as it is.
    del sc.environment["PYTHONPATH"]
    sc.addPyFile(deltalog_zip)
    sc.addPyFile(native_zip)
    step("pyfiles", lambda: seen_failure(lambda: _append(spark, f"{work}/pyfiles")))
    spark.stop()
    print(json.dumps(facts))


def formats(spark: Any, work: str, facts: dict[str, object]) -> None:
    from pyspark.sql import functions as F

    import deltalog
    from deltalog.spark import DeltaTable

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


def _append(spark: Any, path: str) -> int:
    """A partitioned append (Arrow tasks in Spark's Python workers); the rows the log then has."""
    import deltalog

    df = spark.range(20).selectExpr("id", "id % 2 AS p")
    df.write.format("delta").mode("append").partitionBy("p").save(path)
    return int(deltalog.Table(path).snapshot().to_arrow().num_rows)


def seen_failure(run: Callable[[], object]) -> str:
    """What the user sees of a failure: deltalog's own error (a PySpark ``AnalysisException``) and its first
    line, or another exception's class and first line."""
    try:
        run()
    except Exception as exc:
        from pyspark.errors import AnalysisException

        from deltalog.errors import DeltaError

        kind = "deltalog" if isinstance(exc, DeltaError) and isinstance(exc, AnalysisException) else type(exc).__name__
        return f"{kind}: {str(exc).splitlines()[0]}"
    return "no failure"


if __name__ == "__main__":
    main(*sys.argv[1:8])
