"""The SQL and catalog workflow in a session of its own, run as a subprocess by test_spark_sql_catalogs.py
(a Hive metastore in a temporary directory, two phases in two processes) and test_spark_connect.py (a
Spark Connect client):

    python sql_catalog_client.py hive-write WORK        -> one FACTS <json> line
    python sql_catalog_client.py hive-read WORK
    python sql_catalog_client.py connect WORK sc://127.0.0.1:PORT
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

from shipping import ship_deltalog

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")


def _hive_session(work: str) -> Any:
    from pyspark.sql import SparkSession

    from deltalog.spark import configure, register

    builder = (
        SparkSession.builder.master("local[2]").appName("hive-catalog")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", f"{work}/warehouse")
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={work}/metastore_db;create=true")
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work} -XX:+UseSerialGC")
        .enableHiveSupport()
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return register(spark)


def _rows(df: Any) -> list[list[Any]]:
    return [list(r) for r in df.collect()]


def hive_write(work: str) -> dict[str, Any]:
    from deltalog.spark import DeltaTable

    spark = _hive_session(work)
    facts: dict[str, Any] = {"catalog": spark.conf.get("spark.sql.catalogImplementation")}
    spark.sql("CREATE DATABASE sales")
    spark.sql("CREATE TABLE sales.orders (id INT, amount DOUBLE, day STRING) USING DELTA PARTITIONED BY (day)")
    spark.sql("INSERT INTO sales.orders VALUES (1, 10.0, 'mon'), (2, 20.0, 'mon'), (3, 5.0, 'tue')")
    spark.sql("UPDATE sales.orders SET amount = amount * 2 WHERE day = 'tue'")
    spark.sql("MERGE INTO sales.orders o USING (SELECT 2 AS id, 0.0 AS amount, 'mon' AS day "
              "UNION ALL SELECT 4, 40.0, 'wed') s ON o.id = s.id "
              "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *")
    facts["orders"] = _rows(spark.sql("SELECT id, amount, day FROM sales.orders ORDER BY id"))
    facts["v1"] = spark.sql("SELECT count(*) FROM sales.orders VERSION AS OF 1").first()[0]
    facts["history"] = [r.operation for r in spark.sql("DESCRIBE HISTORY sales.orders").collect()]
    spark.sql("CREATE TABLE sales.daily USING DELTA AS SELECT day, sum(amount) AS total FROM sales.orders GROUP BY day")
    spark.range(5).write.format("delta").saveAsTable("sales.numbers")
    spark.range(5, 8).write.insertInto("sales.numbers")
    facts["numbers"] = spark.table("sales.numbers").count()
    facts["forName"] = DeltaTable.forName(spark, "sales.orders").toDF().count()
    facts["tables"] = sorted(r.tableName for r in spark.sql("SHOW TABLES IN sales").collect())
    facts["provider"] = next(r.data_type for r in spark.sql("DESCRIBE TABLE EXTENDED sales.orders").collect()
                             if r.col_name == "Provider")
    spark.stop()
    return facts


def hive_read(work: str) -> dict[str, Any]:
    """A new process and session on the same metastore: the tables are there, readable and writable."""
    spark = _hive_session(work)
    facts: dict[str, Any] = {}
    facts["tables"] = sorted(r.tableName for r in spark.sql("SHOW TABLES IN sales").collect())
    facts["daily"] = _rows(spark.sql("SELECT day, total FROM sales.daily ORDER BY day"))
    spark.sql("DELETE FROM sales.numbers WHERE id >= 5")
    facts["numbers"] = spark.table("sales.numbers").count()
    location = spark.sql("DESCRIBE DETAIL sales.numbers").first().location
    facts["location"] = location
    spark.sql("DROP TABLE sales.numbers")
    facts["tables_after_drop"] = sorted(r.tableName for r in spark.sql("SHOW TABLES IN sales").collect())
    spark.stop()
    return facts


def connect(work: str, url: str) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    import deltalog
    from deltalog.spark import DeltaTable, register

    spark = register(SparkSession.builder.remote(url).getOrCreate())
    ship_deltalog(spark)
    facts: dict[str, Any] = {"session": type(spark).__module__}
    path = f"{work}/events"
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, kind STRING) USING DELTA "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    facts["update"] = spark.sql(f"UPDATE delta.`{path}` SET kind = 'B' WHERE id = 2").first()[0]
    facts["delete"] = spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3").first()[0]
    facts["rows"] = _rows(spark.sql(f"SELECT * FROM delta.`{path}` ORDER BY id"))
    facts["v1"] = spark.sql(f"SELECT count(*) FROM delta.`{path}` VERSION AS OF 1").first()[0]
    facts["changes"] = spark.sql(f"SELECT count(*) FROM table_changes_by_path('{path}', 2, 3)").first()[0]
    facts["history"] = [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()]
    spark.sql("CREATE TABLE remote_people (id INT, name STRING) USING DELTA")
    spark.sql("INSERT INTO remote_people VALUES (1, 'ann')")
    merged = spark.sql("MERGE INTO remote_people t USING (SELECT 1 AS id, 'ANN' AS name UNION ALL SELECT 2, 'bob') s "
                       "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").first()
    facts["merge"] = [merged.num_affected_rows, merged.num_updated_rows, merged.num_inserted_rows]
    facts["people"] = _rows(spark.sql("SELECT * FROM remote_people ORDER BY id"))
    spark.sql("CREATE VIEW remote_view AS SELECT * FROM remote_people WHERE id > {n}", n=1)  # PySpark's arguments
    facts["kwargs"] = _rows(spark.sql("SELECT v.name, s.x FROM remote_view v JOIN {s} s ON v.id = s.id",
                                      s=spark.createDataFrame([(2, "x")], "id INT, x STRING")))
    spark.sql("DROP VIEW remote_view")
    # temporary views (their text only DESCRIBE ... AS JSON shows on Connect), of views, and one replaced
    spark.sql("CREATE TEMP VIEW remote_tv AS SELECT * FROM remote_people WHERE id > 0")
    spark.sql("CREATE TEMP VIEW remote_tv2 AS SELECT name FROM remote_tv WHERE id = 2")
    spark.sql("CREATE GLOBAL TEMP VIEW remote_gv AS SELECT * FROM remote_people")
    facts["temp_views"] = [_rows(spark.sql("SELECT * FROM remote_tv ORDER BY id")), _rows(spark.table("remote_tv2")),
                           spark.sql("SELECT count(*) FROM global_temp.remote_gv").first()[0]]
    spark.range(1).createOrReplaceTempView("remote_tv")
    facts["replaced_view"] = _rows(spark.sql("SELECT * FROM remote_tv"))
    for view in ("remote_tv", "remote_tv2"):
        spark.catalog.dropTempView(view)
    spark.range(3).write.format("delta").saveAsTable("remote_numbers")
    facts["numbers"] = spark.table("remote_numbers").count()
    facts["zorder"] = spark.sql("OPTIMIZE remote_numbers ZORDER BY (id)").first().metrics.numFilesAdded
    facts["numbers_after"] = _rows(spark.sql("SELECT id FROM remote_numbers ORDER BY id"))
    facts["forName"] = DeltaTable.forName(spark, "remote_people").toDF().count()
    spark.sql("INSERT INTO remote_people VALUES (3, 'cy')")  # a second file at least
    facts["optimize"] = spark.sql("OPTIMIZE remote_people").first().metrics.numFilesRemoved
    facts["vacuum_dry"] = spark.sql("VACUUM remote_people RETAIN 200 HOURS DRY RUN").count()
    facts["log_version"] = deltalog.Table(path).latest_version()
    spark.sql("DROP TABLE remote_people")
    spark.sql("DROP TABLE remote_numbers")
    facts["tables_after_drop"] = [r.tableName for r in spark.sql("SHOW TABLES").collect()
                                  if r.tableName.startswith("remote_")]
    return facts


if __name__ == "__main__":
    mode, work = sys.argv[1], sys.argv[2]
    if mode == "hive-write":
        out = hive_write(work)
    elif mode == "hive-read":
        out = hive_read(work)
    else:
        out = connect(work, sys.argv[3])
    print("FACTS " + json.dumps(out))
