"""delta-spark's streaming patterns: a Delta source into a Delta sink, and upserts with foreachBatch + MERGE;
conflicts caught through ``delta.exceptions``. Run unmodified by ``deltalog run`` in test_spark_run.py."""

import json
import sys

from delta.exceptions import ConcurrentAppendException, DeltaConcurrentModificationException
from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

work = sys.argv[1]
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
facts = {}
source, sink, upserted = f"{work}/source", f"{work}/sink", f"{work}/upserted"
spark.range(0, 6).selectExpr("id", "id % 3 AS key").write.format("delta").save(source)
spark.createDataFrame([], "key BIGINT, total BIGINT").write.format("delta").save(upserted)

query = (spark.readStream.format("delta").load(source)
         .writeStream.format("delta").option("checkpointLocation", f"{work}/cp1")
         .trigger(availableNow=True).start(sink))
query.awaitTermination()
facts["sink"] = spark.read.format("delta").load(sink).count()


def upsert(batch, batch_id):
    totals = batch.groupBy("key").sum("id").withColumnRenamed("sum(id)", "total")
    (DeltaTable.forPath(spark, upserted).alias("t")
     .merge(totals.alias("s"), "t.key = s.key")
     .whenMatchedUpdate(set={"total": "t.total + s.total"})
     .whenNotMatchedInsertAll()
     .execute())


query = (spark.readStream.format("delta").load(source).writeStream.format("delta")
         .foreachBatch(upsert).option("checkpointLocation", f"{work}/cp2").outputMode("update")
         .trigger(availableNow=True).start())
query.awaitTermination()
spark.range(6, 9).selectExpr("id", "id % 3 AS key").write.format("delta").mode("append").save(source)
query = (spark.readStream.format("delta").load(source).writeStream.format("delta")
         .foreachBatch(upsert).option("checkpointLocation", f"{work}/cp2").outputMode("update")
         .trigger(availableNow=True).start())
query.awaitTermination()
facts["totals"] = sorted(tuple(r) for r in spark.read.format("delta").load(upserted).collect())
facts["conflict_classes"] = issubclass(ConcurrentAppendException, DeltaConcurrentModificationException)
try:
    DeltaTable.forPath(spark, f"{work}/missing")
    facts["missing"] = "no error"
except AnalysisException as exc:
    facts["missing"] = "AnalysisException" if "missing" in str(exc) else str(exc)
print("FACTS " + json.dumps(facts))
