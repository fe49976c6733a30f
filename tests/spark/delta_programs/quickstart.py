"""A delta-spark program as its users write it (quick start, DeltaTable API, utilities); run unmodified by
``deltalog run`` in test_spark_run.py. Prints one ``FACTS <json>`` line."""

import json
import sys

import pyspark
from delta import configure_spark_with_delta_pip
from delta.tables import DeltaTable
from pyspark.sql.functions import col, expr

work = sys.argv[1]
builder = (
    pyspark.sql.SparkSession.builder.appName("quickstart")
    .master("local[2]")
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.warehouse.dir", f"{work}/warehouse")
)
spark = configure_spark_with_delta_pip(builder).getOrCreate()
facts = {}
path = f"{work}/events"

spark.range(0, 5).write.format("delta").save(path)
spark.range(5, 10).write.format("delta").mode("overwrite").save(path)
facts["latest"] = sorted(r.id for r in spark.read.format("delta").load(path).collect())
facts["v0"] = sorted(r.id for r in spark.read.format("delta").option("versionAsOf", 0).load(path).collect())

table = DeltaTable.forPath(spark, path)
table.update(condition=expr("id % 2 == 0"), set={"id": expr("id + 100")})
table.delete(condition=expr("id % 2 == 0"))
updates = spark.range(0, 20).withColumnRenamed("id", "nid")
(table.alias("old")
 .merge(updates.alias("new"), "old.id = new.nid")
 .whenMatchedUpdate(set={"id": col("new.nid")})
 .whenNotMatchedInsert(values={"id": col("new.nid")})
 .execute())
facts["after_merge"] = table.toDF().count()
facts["operations"] = [r.operation for r in table.history().orderBy("version").collect()]
facts["last_operation"] = table.history(1).collect()[0]["operation"]

table.optimize().executeCompaction()
facts["files_after_optimize"] = table.detail().collect()[0]["numFiles"]
table.restoreToVersion(1)
facts["restored"] = table.toDF().count()
facts["is_delta"] = [DeltaTable.isDeltaTable(spark, path), DeltaTable.isDeltaTable(spark, f"{work}/nothing")]

spark.range(3).write.parquet(f"{work}/plain")
converted = DeltaTable.convertToDelta(spark, f"parquet.`{work}/plain`")
facts["converted"] = converted.toDF().count()

(DeltaTable.createIfNotExists(spark).tableName("people").addColumn("id", "INT").addColumn("name", "STRING")
 .property("description", "people table").execute())
spark.createDataFrame([(1, "ann")], "id INT, name STRING").write.format("delta").mode("append").saveAsTable("people")
facts["people"] = [tuple(r) for r in DeltaTable.forName(spark, "people").toDF().collect()]
facts["session_catalog"] = spark.conf.get("spark.sql.catalog.spark_catalog", None)
print("FACTS " + json.dumps(facts))
spark.stop()
