"""delta-spark's SQL, as a pipeline written in SQL uses it (catalog tables, path tables, MERGE, time travel,
utilities); run unmodified by ``deltalog run`` in test_spark_run.py. Prints one ``FACTS <json>`` line."""

import json
import sys

from pyspark.sql import SparkSession

work = sys.argv[1]
spark = (
    SparkSession.builder.master("local[2]").appName("sql-pipeline")
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.warehouse.dir", f"{work}/warehouse")
    .getOrCreate()
)
facts = {}
spark.sql("CREATE TABLE student (id INT, name STRING, age INT) USING DELTA PARTITIONED BY (age)")
spark.sql("INSERT INTO student VALUES (1, 'ann', 20), (2, 'bob', 21), (3, 'cy', 20)")
spark.sql("UPDATE student SET name = 'BOB' WHERE id = 2")
spark.sql("DELETE FROM student WHERE id = 3")
spark.sql("CREATE TABLE updates USING DELTA AS SELECT 1 AS id, 'ann2' AS name, 20 AS age "
          "UNION ALL SELECT 4, 'dee', 22")
merged = spark.sql("""
    MERGE INTO student AS s USING updates AS u ON s.id = u.id
    WHEN MATCHED THEN UPDATE SET *
    WHEN NOT MATCHED THEN INSERT *
""").collect()[0]
facts["merge"] = [merged.num_affected_rows, merged.num_updated_rows, merged.num_inserted_rows]
facts["student"] = [tuple(r) for r in spark.sql("SELECT * FROM student ORDER BY id").collect()]
facts["v1"] = spark.sql("SELECT count(*) FROM student VERSION AS OF 1").collect()[0][0]
facts["history"] = [r.operation for r in spark.sql("DESCRIBE HISTORY student").collect()]
location = spark.sql("DESCRIBE DETAIL student").collect()[0].location
facts["location_in_warehouse"] = location.rstrip("/").endswith("warehouse/student")

path = f"{work}/events"
spark.range(10).selectExpr("id", "id % 2 AS parity").write.format("delta").save(path)
spark.sql(f"DELETE FROM delta.`{path}` WHERE parity = 1")
facts["path_count"] = spark.sql(f"SELECT count(*) FROM delta.`{path}`").collect()[0][0]
facts["path_history"] = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count()
vacuumed = spark.sql(f"VACUUM '{path}' RETAIN 169 HOURS").collect()
facts["vacuum"] = len(vacuumed)
facts["optimize"] = spark.sql(f"OPTIMIZE delta.`{path}` ZORDER BY (id)").collect()[0].metrics.numFilesAdded
facts["restore"] = spark.sql(f"RESTORE TABLE delta.`{path}` TO VERSION AS OF 0").collect()[0][0] is not None
facts["restored_count"] = spark.read.format("delta").load(path).count()
spark.sql("ALTER TABLE student ADD CONSTRAINT adult CHECK (age >= 18)")
try:
    spark.sql("INSERT INTO student VALUES (9, 'kid', 5)")
    facts["constraint"] = "accepted"
except Exception as exc:  # delta-spark raises a DeltaInvariantViolationException-like error here
    facts["constraint"] = type(exc).__name__
spark.sql("CREATE TABLE clone_of_student SHALLOW CLONE student")
facts["clone"] = spark.table("clone_of_student").count()
facts["tables"] = sorted(r.tableName for r in spark.sql("SHOW TABLES").collect())
spark.sql("DROP TABLE updates")
facts["tables_after_drop"] = sorted(r.tableName for r in spark.sql("SHOW TABLES").collect())
events = spark.read.format("delta").load(path)  # a notebook's way to name a path table for SQL
events.createOrReplaceTempView("events_view")
spark.range(100, 103).selectExpr("id", "id % 2 AS parity").write.format("delta").mode("append").save(path)
facts["view_sees_append"] = spark.sql("SELECT count(*) FROM events_view").collect()[0][0]
spark.sql("DELETE FROM events_view WHERE id >= 100")
facts["view_after_delete"] = spark.table("events_view").count()

from delta.tables import DeltaTable  # noqa: E402

facts["vacuum_api_columns"] = DeltaTable.forPath(spark, path).vacuum(200).columns
print("FACTS " + json.dumps(facts))
