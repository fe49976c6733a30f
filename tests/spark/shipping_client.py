"""A Spark Connect client run as a separate process by test_spark_connect.py's deployment test
(docs/deployment.md#spark-connect), against a server whose Python cannot import deltalog.

    python shipping_client.py sc://127.0.0.1:PORT WORKDIR DELTALOG_ZIP   -> prints one JSON line of facts
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from typing import Any

from cluster_client import seen_failure

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")


def _append(spark: Any, path: str) -> int:
    """A partitioned append (Arrow tasks in the server's Python workers); the rows the log then has."""
    import deltalog

    df = spark.range(20).selectExpr("id", "id % 2 AS p")
    df.write.format("delta").mode("append").partitionBy("p").save(path)
    return int(deltalog.Table(path).snapshot().to_arrow().num_rows)


def _started(start: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        start().stop()  # not reached when the server cannot run the stream's foreachBatch

    return run


def main(url: str, work: str, deltalog_zip: str) -> None:
    from pyspark.sql import SparkSession

    from deltalog.spark import register

    spark = register(SparkSession.builder.remote(url).getOrCreate())
    facts: dict[str, object] = {}
    # 1. The server's Python has PySpark's packages and deltalog's dependencies, not deltalog.
    facts["bare"] = seen_failure(lambda: _append(spark, f"{work}/bare"))
    # 2. deltalog shipped with the session.
    spark.addArtifacts(deltalog_zip, pyfile=True)
    facts["shipped"] = _append(spark, f"{work}/shipped")
    # 3. ... which does not reach the process the server runs a stream's foreachBatch in (the Delta sink).
    stream = spark.readStream.format("rate").load()
    facts["sink"] = seen_failure(_started(lambda: stream.writeStream.format("delta")
                                      .option("checkpointLocation", f"{work}/chk").start(f"{work}/sink")))
    spark.stop()
    print(json.dumps(facts))


if __name__ == "__main__":
    main(*sys.argv[1:4])
