"""delta-spark 4.4's Python API, as a ported program observes it: values, DataFrame schemas and exception
types, one class per delta-spark class. The programs import ``delta.tables`` / ``delta.exceptions`` as
``deltalog run`` serves them. Every example of delta-spark's API docstrings is rewritten here as a test
(``test_docstring_*``), on tables of our own."""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sparkutil import rows, version

import deltalog

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def delta() -> Iterator[Any]:
    """delta-spark's modules as ``deltalog run`` serves them (restored afterwards)."""
    from deltalog.spark.run import install_delta_aliases

    saved = {k: v for k, v in sys.modules.items() if k == "delta" or k.startswith("delta.")}
    install_delta_aliases()
    import delta as package
    import delta.exceptions
    import delta.tables

    yield package
    for k in [k for k in sys.modules if k == "delta" or k.startswith("delta.")]:
        del sys.modules[k]
    sys.modules.update(saved)


def events(spark: Any, path: str, *partition_by: str) -> Any:
    """The table of delta-spark's docstring examples: events(date, eventId, eventType, data, count, missed_count)."""
    spark.createDataFrame(
        [(dt.date(2016, 12, 31), 1, "clck", "a", 1, 0), (dt.date(2017, 1, 2), 2, "view", "b", 1, 0),
         (dt.date(2017, 1, 3), 3, "clck", "c", 1, 0)],
        "date date, eventId int, eventType string, data string, count int, missed_count int",
    ).write.format("delta").partitionBy(*partition_by).save(path)


def updates(spark: Any) -> Any:
    return spark.createDataFrame([(dt.date(2017, 1, 3), 3, "c2"), (dt.date(2017, 1, 4), 4, "d")],
                                 "date date, eventId int, data string")


class TestDeltaTable:
    def test_docstring_for_path_and_convert_to_delta(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        DeltaTable = delta.tables.DeltaTable
        flat, parted = str(tmp_path / "flat"), str(tmp_path / "parted")
        spark.range(4).write.parquet(flat)
        spark.range(4).selectExpr("id", "CAST(id % 2 AS INT) AS part").write.partitionBy("part").parquet(parted)
        dt1 = DeltaTable.convertToDelta(spark, f"parquet.`{flat}`")
        dt2 = DeltaTable.convertToDelta(spark, f"parquet.`{parted}`", "part int")
        assert dt1.toDF().count() == 4 and sorted(r["part"] for r in rows(dt2.toDF())) == [0, 0, 1, 1]
        hadoop_conf = {"fs.s3a.access.key": "<access-key>", "fs.s3a.secret.key": "secret-key"}
        assert DeltaTable.forPath(spark, flat, hadoop_conf).toDF().count() == 4  # local paths accept them

    def test_docstring_delete_update_vacuum(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        from pyspark.errors import IllegalArgumentException
        from pyspark.sql.functions import col, lit

        path = str(tmp_path / "events")
        events(spark, path)
        deltaTable = delta.tables.DeltaTable.forPath(spark, path)
        assert deltaTable.delete("date < '2017-01-01'") is None
        deltaTable.delete(col("date") < "2017-01-03")
        assert [r["eventId"] for r in rows(deltaTable.toDF(), "eventId")] == [3]
        assert deltaTable.update(condition="eventType = 'clck'", set={"eventType": "'click'"}) is None
        deltaTable.update(condition=col("eventType") == "click", set={"eventType": lit("clicked")})
        assert rows(deltaTable.toDF(), "eventId")[0]["eventType"] == "clicked"
        done = deltaTable.vacuum()  # files older than 7 days: none yet
        assert done.columns == [] and done.count() == 0  # delta-spark returns spark.emptyDataFrame
        with pytest.raises(IllegalArgumentException, match="retention"):
            deltaTable.vacuum(100)  # below the 168 hours retention check, as in delta-spark

    def test_docstring_optimize_clone_and_is_delta_table(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        DeltaTable = delta.tables.DeltaTable
        path = str(tmp_path / "events")
        events(spark, path, "date")
        deltaTable = DeltaTable.forPath(spark, path)
        metrics = deltaTable.optimize().where("date='2017-01-02'").executeCompaction()
        assert metrics.columns == ["path", "metrics"]
        shallow = deltaTable.clone(str(tmp_path / "c1"), True, True)  # replace: allowed on a new target
        assert isinstance(shallow, DeltaTable) and shallow.toDF().count() == 3
        assert deltaTable.cloneAtVersion(0, str(tmp_path / "c2"), True).toDF().count() == 3
        stamp = deltaTable.history().first()["timestamp"]
        at = deltaTable.cloneAtTimestamp(stamp.strftime("%Y-%m-%d %H:%M:%S.%f"), str(tmp_path / "c3"), True)
        assert at.toDF().count() == 3
        assert DeltaTable.isDeltaTable(spark, path)

    def test_is_delta_table_on_what_is_not_one(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        DeltaTable = delta.tables.DeltaTable
        (tmp_path / "empty").mkdir()
        spark.range(3).write.parquet(str(tmp_path / "pq"))
        for candidate in ("missing", "empty", "pq"):
            assert DeltaTable.isDeltaTable(spark, str(tmp_path / candidate)) is False

    def test_upgrade_protocol_at_or_below_is_a_no_op(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        path = str(tmp_path / "t")
        spark.range(3).write.format("delta").save(path)
        table = delta.tables.DeltaTable.forPath(spark, path)
        table.upgradeTableProtocol(1, 3)
        v = version(path)
        for reader, writer in ((1, 1), (1, 2), (1, 3)):
            assert table.upgradeTableProtocol(reader, writer) is None
        assert version(path) == v
        with pytest.raises(ValueError, match="readerVersion needs to be an integer"):
            table.upgradeTableProtocol(1.5, 3)

    def test_returned_frames_have_delta_sparks_schemas(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        path = str(tmp_path / "t")
        spark.range(0, 3, 1, 1).write.format("delta").save(path)
        spark.range(3, 6, 1, 1).write.format("delta").mode("append").save(path)
        table = delta.tables.DeltaTable.forPath(spark, path)
        assert table.history().schema.simpleString() == (
            "struct<version:bigint,timestamp:timestamp,userId:string,userName:string,operation:string,"
            "operationParameters:map<string,string>,job:struct<jobId:string,jobName:string,jobRunId:string,"
            "runId:string,jobOwnerId:string,triggerType:string>,notebook:struct<notebookId:string>,"
            "clusterId:string,readVersion:bigint,isolationLevel:string,isBlindAppend:boolean,"
            "operationMetrics:map<string,string>,userMetadata:string,engineInfo:string>")
        assert table.history(1).count() == 1
        assert table.detail().schema.simpleString() == (  # delta-spark's columns, then deltalog's
            "struct<format:string,id:string,name:string,description:string,location:string,createdAt:timestamp,"
            "lastModified:timestamp,partitionColumns:array<string>,clusteringColumns:array<string>,"
            "numFiles:bigint,sizeInBytes:bigint,properties:map<string,string>,minReaderVersion:int,"
            "minWriterVersion:int,tableFeatures:array<string>,numRecords:bigint,numDeletedRecords:bigint,"
            "numFilesWithDeletionVectors:bigint,numSmallFiles:bigint,commitsSinceCheckpoint:bigint,"
            "icebergMetadataLocation:string,icebergConvertedDeltaVersion:bigint>")
        assert table.vacuum().schema.simpleString() == "struct<>"
        assert table.vacuum(dryRun=True).schema.simpleString() == "struct<path:string>"
        restored = table.restoreToVersion(0)
        assert restored.schema.simpleString() == (
            "struct<table_size_after_restore:bigint,num_of_files_after_restore:bigint,num_removed_files:bigint,"
            "num_restored_files:bigint,removed_files_size:bigint,restored_files_size:bigint>")
        assert restored.first()["num_removed_files"] == 1 and table.toDF().count() == 3
        ts = table.history().orderBy("version").first()["timestamp"].strftime("%Y-%m-%d %H:%M:%S.%f")
        assert table.restoreToTimestamp(ts).columns == restored.columns

    def test_schema_evolution_inside_structs(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        """``UPDATE SET *`` / ``INSERT *`` with schema evolution add the source's new struct fields (at any
        depth) to the target's struct column, as delta-spark; rows they do not set read them as null. With
        column mapping (the new fields get ids and physical names) and the change data feed (pre-images)."""
        props = {"delta.columnMapping.mode": "name", "delta.enableChangeDataFeed": "true"}
        path = str(tmp_path / "t")
        target = spark.createDataFrame([(1, (1, (1,))), (2, (2, (2,))), (3, None)],
                                       "id long, s struct<a: int, inner: struct<x: int>>")
        writer = target.coalesce(1).write.format("delta")
        for key, value in props.items():
            writer = writer.option(key, value)
        writer.save(path)
        src = spark.createDataFrame([(1, (10, (11, "y1"), "b1")), (4, (40, (41, "y4"), "b4"))],
                                    "id long, s struct<a: int, inner: struct<x: int, y: string>, b: string>")
        table = delta.tables.DeltaTable.forPath(spark, path)
        with pytest.raises(Exception, match="DELTA_UPDATE_SCHEMA_MISMATCH"):  # not without schema evolution
            table.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
        table.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll() \
            .withSchemaEvolution().execute()
        frame = table.toDF()
        assert frame.schema["s"].dataType.simpleString() == "struct<a:int,inner:struct<x:int,y:string>,b:string>"
        got = {r["id"]: r["s"] for r in rows(frame)}
        assert got == {1: {"a": 10, "inner": {"x": 11, "y": "y1"}, "b": "b1"},
                       2: {"a": 2, "inner": {"x": 2, "y": None}, "b": None},  # copied: the new fields null
                       3: None, 4: {"a": 40, "inner": {"x": 41, "y": "y4"}, "b": "b4"}}
        kernel = {r["id"]: r["s"] for r in deltalog.Table(path).snapshot().to_arrow().to_pylist()}
        assert kernel[2] == got[2] and kernel[4] == got[4]
        # the change feed's pre-image of the updated row has the new fields as null
        changes = {r["_change_type"]: r["s"] for r in deltalog.read_changes(path, starting_version=1).to_pylist()
                   if r["id"] == 1}
        assert changes["update_preimage"] == {"a": 1, "inner": {"x": 1, "y": None}, "b": None}
        assert changes["update_postimage"] == got[1]

    def test_argument_types(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        path = str(tmp_path / "t")
        spark.range(3).write.format("delta").save(path)
        table = delta.tables.DeltaTable.forPath(spark, path)
        for call in (lambda: table.delete(5), lambda: table.update(3, {"id": "1"}),
                     lambda: table.update(set={"id": 1}), lambda: table.update(set=[("id", "1")]),
                     lambda: table.update(set={1: "1"})):
            with pytest.raises(TypeError):
                call()
        for call in (lambda: table.update("id = 1"), lambda: table.clone(5), lambda: table.clone("x", "yes"),
                     lambda: table.clone("x", True, "no"), lambda: table.clone("x", True, False, [1]),
                     lambda: table.clone("x", True, False, {"k": 1}), lambda: table.cloneAtVersion("0", "x"),
                     lambda: table.cloneAtTimestamp(0, "x"), lambda: table.restoreToVersion("0"),
                     lambda: table.dropFeatureSupport(1), lambda: table.dropFeatureSupport("x", "yes"),
                     lambda: table.addFeatureSupport(1)):
            with pytest.raises(ValueError):
                call()
        assert version(path) == 0


    def test_argument_errors_say_what_delta_spark_says(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        """The exception type and the words of delta-spark's own argument checks (a hint may follow)."""
        path = str(tmp_path / "t")
        spark.range(3).write.format("delta").save(path)
        table = delta.tables.DeltaTable.forPath(spark, path)
        src = spark.range(2)
        expected: list[tuple[Any, type[Exception], str]] = [
            (lambda: table.update("id = 1"), ValueError, "'set' cannot be None"),
            (lambda: table.update(set=[("id", "1")]), TypeError, "'set' must be a dict, found to be <class 'list'>"),
            (lambda: table.update(set={1: "1"}), TypeError,
             "Keys of dict in 'set' must contain only strings with column names, found '1' of type '<class 'int'>'"),
            (lambda: table.update(set={"id": 1}), TypeError,
             "Values of dict in 'set' must contain only Spark SQL Columns or strings (expressions in SQL syntax) as "
             "values, found '1' of type '<class 'int'>'"),
            (lambda: table.update(3, {"id": "1"}), TypeError,
             "'condition' must be a Spark SQL Column or a string (expression in SQL syntax), found to be of type "
             "<class 'int'>"),
            (lambda: table.delete(5), TypeError, "'condition' must be a Spark SQL Column or a string"),
            (lambda: table.merge(None, "id = id"), ValueError, "'source' in merge cannot be None"),
            (lambda: table.merge([1], "id = id"), TypeError, "Type of 'source' in merge must be DataFrame."),
            (lambda: table.merge(src, None), ValueError, "'condition' in merge cannot be None"),
            (lambda: table.merge(src, "id = id").whenMatchedUpdate(set=None), ValueError,
             "'set' in whenMatchedUpdate cannot be None"),
            (lambda: table.merge(src, "id = id").whenNotMatchedInsert(values=[1]), TypeError,
             "'values' in whenNotMatchedInsert must be a dict"),
            (lambda: table.restoreToVersion("0"), ValueError, "version needs to be an int but got '<class 'str'>'."),
        ]
        for call, kind, words in expected:
            with pytest.raises(kind) as raised:
                call()
            assert str(raised.value).startswith(words), (words, str(raised.value))
        assert version(path) == 0


class TestDeltaMergeBuilder:
    def test_docstring_examples(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        from pyspark.sql.functions import col, expr, lit

        for n, style in enumerate(("sql", "columns")):
            path = str(tmp_path / f"events{n}")
            events(spark, path)
            deltaTable = delta.tables.DeltaTable.forPath(spark, path)
            updatesDF = updates(spark)
            if style == "sql":
                result = deltaTable.alias("events").merge(
                    source=updatesDF.alias("updates"), condition="events.eventId = updates.eventId",
                ).whenMatchedUpdate(set={"data": "updates.data", "count": "events.count + 1"}).whenNotMatchedInsert(
                    values={"date": "updates.date", "eventId": "updates.eventId", "data": "updates.data",
                            "count": "1", "missed_count": "0"},
                ).whenNotMatchedBySourceUpdate(set={"missed_count": "events.missed_count + 1"}).execute()
            else:
                result = deltaTable.alias("events").merge(
                    source=updatesDF.alias("updates"), condition=expr("events.eventId = updates.eventId"),
                ).whenMatchedUpdate(set={"data": col("updates.data"), "count": col("events.count") + 1}
                ).whenNotMatchedInsert(values={"date": col("updates.date"), "eventId": col("updates.eventId"),
                                               "data": col("updates.data"), "count": lit("1"),  # a string, cast
                                               "missed_count": lit(0)},
                ).whenNotMatchedBySourceUpdate(set={"missed_count": col("events.missed_count") + 1}).execute()
            assert result.columns == ["num_affected_rows", "num_updated_rows", "num_deleted_rows",
                                      "num_inserted_rows"]
            assert tuple(result.first()) == (4, 3, 0, 1)
            got = {r["eventId"]: (r["data"], r["count"], r["missed_count"]) for r in rows(deltaTable.toDF(), "eventId")}
            assert got == {1: ("a", 1, 1), 2: ("b", 1, 1), 3: ("c2", 2, 0), 4: ("d", 1, 0)}, style

    @pytest.mark.parametrize("mode", ["none", "name"])
    def test_schema_evolution_inside_arrays_and_maps(self, spark: Any, delta: Any, tmp_path: Path, mode: str) -> None:
        """Struct fields the source adds inside arrays and map values evolve the target too (they failed with
        DELTA_UPDATE_SCHEMA_MISMATCH); rows of files the MERGE does not touch read the new fields as null."""
        path = str(tmp_path / "t")
        schema = "id long, arr array<struct<k: int>>, m map<string, struct<x: int>>"
        for ids in ((1, 2), (3,)):  # two files: the second is not touched
            frame = spark.createDataFrame([(i, [(i,)], {"a": (i,)}) for i in ids], schema).coalesce(1)
            frame.write.format("delta").mode("append").option("delta.columnMapping.mode", mode).save(path)
        src = spark.createDataFrame([(1, [(10, "n1")], {"b": (11, True)}), (4, [(40, "n4")], None)],
                                    "id long, arr array<struct<k: int, n: string>>, "
                                    "m map<string, struct<x: int, y: boolean>>")
        table = delta.tables.DeltaTable.forPath(spark, path)
        table.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll() \
            .withSchemaEvolution().execute()
        frame = table.toDF()
        assert frame.schema["arr"].dataType.simpleString() == "array<struct<k:int,n:string>>"
        assert frame.schema["m"].dataType.simpleString() == "map<string,struct<x:int,y:boolean>>"
        want = {1: ([{"k": 10, "n": "n1"}], {"b": {"x": 11, "y": True}}),
                2: ([{"k": 2, "n": None}], {"a": {"x": 2, "y": None}}),  # rewritten beside row 1: widened
                3: ([{"k": 3, "n": None}], {"a": {"x": 3, "y": None}}),  # its file untouched
                4: ([{"k": 40, "n": "n4"}], None)}
        got = {r["id"]: (r["arr"], None if r["m"] is None else dict(r["m"])) for r in rows(frame)}
        assert got == want
        kernel = deltalog.Table(path).snapshot().to_arrow().to_pylist()
        assert {r["id"]: (r["arr"], None if r["m"] is None else dict(r["m"])) for r in kernel} == want

    def test_struct_values_are_matched_by_field_name(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        """MERGE and UPDATE store a struct by its fields' names, as delta-spark does by default
        (resolveMergeUpdateStructsByName): a source struct listing the fields in another order used to be
        stored by position -- each value in the other field, silently."""
        path = str(tmp_path / "t")
        spark.createDataFrame([(1, (1, 2), [(1, "x")])], "id long, s struct<a: int, b: int>, "
                              "arr array<struct<k: int, v: string>>").write.format("delta").save(path)
        table = delta.tables.DeltaTable.forPath(spark, path)
        src = spark.createDataFrame([(1, (20, 10), [("y", 5)]), (2, (40, 30), None)],
                                    "id long, s struct<b: int, a: int>, arr array<struct<v: string, k: int>>")
        table.alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll() \
            .execute()
        got = {r["id"]: (r["s"], r["arr"]) for r in rows(table.toDF())}
        assert got == {1: ({"a": 10, "b": 20}, [{"k": 5, "v": "y"}]), 2: ({"a": 30, "b": 40}, None)}
        table.update("id = 1", {"s": "named_struct('b', CAST(200 AS BIGINT), 'a', 100)"})  # names, then cast
        assert {r["id"]: r["s"] for r in rows(table.toDF())}[1] == {"a": 100, "b": 200}
        fewer = spark.createDataFrame([(1, (7,), None)], "id long, s struct<a: int>, "
                                      "arr array<struct<k: int, v: string>>")
        with pytest.raises(Exception, match="DELTA_UPDATE_SCHEMA_MISMATCH"):  # b would be lost: refused
            table.alias("t").merge(fewer.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
        other = spark.createDataFrame([(1, (7, 8), None)], "id long, s struct<a: int, c: int>, "
                                      "arr array<struct<k: int, v: string>>")
        with pytest.raises(Exception, match="DELTA_UPDATE_SCHEMA_MISMATCH"):  # no field c in the column
            table.alias("t").merge(other.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
        # with schema evolution the field the source lacks is null
        table.alias("t").merge(fewer.alias("s"), "t.id = s.id").whenMatchedUpdateAll().withSchemaEvolution() \
            .execute()
        assert {r["id"]: r["s"] for r in rows(table.toDF())} == {1: {"a": 7, "b": None}, 2: {"a": 30, "b": 40}}

    def test_schema_evolution_adds_columns_named_by_explicit_clauses(self, spark: Any, delta: Any,
                                                                      tmp_path: Path) -> None:
        from pyspark.sql import functions as F

        src = spark.createDataFrame([(2, "B", 20, "x"), (3, "C", 30, "y")], "id long, v string, extra int, tag string")
        cases = {
            "update": (lambda m: m.whenMatchedUpdate(set={"extra": "s.extra"}), {1: None, 2: 20}),
            "update-column": (lambda m: m.whenMatchedUpdate(set={"t.extra": F.col("s.extra") * 2}),
                              {1: None, 2: 40}),
            "insert": (lambda m: m.whenNotMatchedInsert(values={"id": "s.id", "extra": "s.extra"}),
                       {1: None, 2: None, 3: 30}),
        }
        for name, (clause, expected) in cases.items():
            path = str(tmp_path / name)
            spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string").write.format("delta").save(path)
            table = delta.tables.DeltaTable.forPath(spark, path)
            clause(table.alias("t").merge(src.alias("s"), "t.id = s.id").withSchemaEvolution()).execute()
            frame = table.toDF()
            assert frame.columns == ["id", "v", "extra"], name  # only the column named; tag stays out
            assert frame.schema["extra"].dataType.simpleString() == "int"
            assert {r["id"]: r["extra"] for r in rows(frame)} == expected, name
        # without schema evolution the unknown column is refused, naming it
        path = str(tmp_path / "update")
        with pytest.raises(Exception, match=r"DELTA_COLUMN_NOT_FOUND.*'tag'"):
            delta.tables.DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id") \
                .whenMatchedUpdate(set={"tag": "s.tag"}).execute()

    def test_argument_types(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        path = str(tmp_path / "t")
        spark.range(3).write.format("delta").save(path)
        table = delta.tables.DeltaTable.forPath(spark, path).alias("t")
        src = spark.range(2).alias("s")
        with pytest.raises(ValueError):
            table.merge(None, "t.id = s.id")
        with pytest.raises(ValueError):
            table.merge(src, None)
        for call in (lambda: table.merge([1], "t.id = s.id"), lambda: table.merge(src, 5)):
            with pytest.raises(TypeError):
                call()
        builder = table.merge(src, "t.id = s.id")
        for call in (lambda: builder.whenMatchedUpdate(set=[1]), lambda: builder.whenMatchedUpdate(set={"id": 1}),
                     lambda: builder.whenMatchedUpdate(set={1: "s.id"}), lambda: builder.whenMatchedDelete(1),
                     lambda: builder.whenNotMatchedInsert(values={"id": 2.5}),
                     lambda: builder.whenNotMatchedBySourceDelete(condition=[])):
            with pytest.raises(TypeError):
                call()
        for call in (lambda: builder.whenMatchedUpdate(set=None), lambda: builder.whenNotMatchedInsert()):
            with pytest.raises(ValueError):
                call()
        assert version(path) == 0


class TestDeltaTableBuilder:
    def test_docstring_examples(self, spark: Any, delta: Any) -> None:
        from pyspark.sql.types import IntegerType

        DeltaTable = delta.tables.DeltaTable
        name = "compat_builder_example"
        try:
            created = (DeltaTable.create(spark).tableName(name)
                       .addColumn("c1", dataType="INT", nullable=False)
                       .addColumn("c2", dataType=IntegerType(), generatedAlwaysAs="c1 + 1")
                       .partitionedBy("c1").execute())
            assert isinstance(created, DeltaTable)
            spark.createDataFrame([(1,), (2,)], "c1 int").write.format("delta").mode("append").saveAsTable(name)
            assert sorted(tuple(r) for r in spark.table(name).collect()) == [(1, 2), (2, 3)]
            assert created.detail().first()["partitionColumns"] == ["c1"]
            df = spark.createDataFrame([("a", 1.5)], "k string, x double")
            replaced = DeltaTable.replace(spark).tableName(name).addColumns(df.schema).execute()
            assert replaced.toDF().columns == ["k", "x"] and replaced.toDF().count() == 0
        finally:
            spark.sql(f"DROP TABLE IF EXISTS {name}")

    def test_every_add_column_option(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        from pyspark.sql.types import LongType, StructField, StructType

        tables = delta.tables
        path = str(tmp_path / "t")
        table = (tables.DeltaTable.createIfNotExists(spark).location(path).comment("events")
                 .addColumn("id", "BIGINT", generatedAlwaysAs=tables.IdentityGenerator(start=10, step=5))
                 .addColumn("seq", LongType(), generatedByDefaultAs=tables.IdentityGenerator())
                 .addColumn("v", "STRING", nullable=False, comment="the value")
                 .addColumn("n", "INT", generatedAlwaysAs="length(v)")
                 .addColumns([StructField("k", LongType())]).addColumns(StructType([StructField("z", LongType())]))
                 .clusterBy("k").property("delta.appendOnly", "false").execute())
        # one partition: identity values are start + step * (row * partitions + partition), as in delta-spark
        spark.createDataFrame([("ab", 1, 2)], "v string, k long, z long").coalesce(1).write.format("delta").mode(
            "append").save(path)
        row = table.toDF().first()
        assert (row["id"], row["seq"], row["n"]) == (10, 1, 2)
        field = deltalog.Table(path).snapshot().schema.field("v")  # docs/porting.md: read DataFrames show
        assert field.nullable is False and field.metadata.get("comment") == "the value"  # neither
        with pytest.raises(Exception, match=r"DELTA_NOT_NULL_CONSTRAINT_VIOLATED|NOT NULL"):
            spark.createDataFrame([(None, 1, 2)], "v string, k long, z long").write.format("delta").mode(
                "append").save(path)
        detail = table.detail().first()
        assert detail["description"] == "events" and detail["clusteringColumns"] == ["k"]
        assert detail["properties"]["delta.appendOnly"] == "false"
        again = tables.DeltaTable.createIfNotExists(spark).location(path).addColumn("other", "INT").execute()
        assert again.toDF().columns == table.toDF().columns  # existing table kept
        replaced = (tables.DeltaTable.createOrReplace(spark).location(path).addColumn("a", "INT")
                    .addColumn("b", "INT").partitionedBy(["a"]).execute())
        assert replaced.toDF().columns == ["a", "b"] and replaced.detail().first()["partitionColumns"] == ["a"]

    def test_argument_types(self, spark: Any, delta: Any) -> None:
        tables = delta.tables
        b = tables.DeltaTable.create(spark)
        for call in (lambda: b.tableName(1), lambda: b.location(1), lambda: b.comment(1),
                     lambda: b.addColumn(1, "int"), lambda: b.addColumn("a", 1),
                     lambda: b.addColumn("a", "int", nullable="yes"), lambda: b.addColumn("a", "int",
                                                                                          generatedAlwaysAs=5),
                     lambda: b.addColumn("a", "int", generatedByDefaultAs="x"),
                     lambda: b.addColumn("a", "int", comment=5), lambda: b.addColumns([1]),
                     lambda: b.addColumns("a int"), lambda: b.partitionedBy(1), lambda: b.partitionedBy(["a", 1]),
                     lambda: b.clusterBy(1), lambda: b.property("a", 1)):
            with pytest.raises(TypeError):
                call()
        for call in (lambda: b.addColumn("a", "bigint", generatedAlwaysAs=tables.IdentityGenerator(),
                                         generatedByDefaultAs=tables.IdentityGenerator()),
                     lambda: b.addColumn("a", "bigint", generatedAlwaysAs=tables.IdentityGenerator(1, 0))):
            with pytest.raises(ValueError):
                call()


class TestDeltaOptimizeBuilder:
    def test_z_order_and_argument_types(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        path = str(tmp_path / "t")
        spark.range(0, 40, 1, 4).selectExpr("id", "id % 7 AS x").write.format("delta").save(path)
        builder = delta.tables.DeltaTable.forPath(spark, path).optimize()
        for bad in ((1,), (["id", 1],)):
            with pytest.raises(TypeError):
                builder.executeZOrderBy(*bad)
        frame = builder.executeZOrderBy(["x", "id"])
        assert frame.columns == ["path", "metrics"]
        assert frame.first()["metrics"]["numFilesRemoved"] == 4
        assert frame.first()["metrics"]["zOrderStats"]["strategyName"] == "all"


class TestExceptions:
    def test_a_lost_race_raises_delta_sparks_exception(self, spark: Any, delta: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
        from pyspark.errors import PySparkException

        from deltalog.txn.transaction import Transaction

        path = str(tmp_path / "t")
        spark.range(0, 10, 1, 1).write.format("delta").save(path)
        commit = Transaction.commit
        raced = []

        def other_first(self: Transaction, *args: Any, **kwargs: Any) -> Any:
            if not raced:
                raced.append(True)
                deltalog.Table(path).delete([("id", "<", 3)])  # the winner rewrites the only file
            return commit(self, *args, **kwargs)

        monkeypatch.setattr(Transaction, "commit", other_first)
        table = delta.tables.DeltaTable.forPath(spark, path)
        # delta-spark checks added files first: the winner's rewrite holds rows the loser's DELETE reads
        with pytest.raises(delta.exceptions.ConcurrentAppendException) as caught:
            table.delete("id = 7")
        err = caught.value
        assert isinstance(err, PySparkException)
        assert isinstance(err, delta.exceptions.DeltaConcurrentModificationException)
        assert err.getCondition() == "DELTA_CONCURRENT_APPEND" and err.getSqlState() == "2D521"
        assert "version 1" in str(err)
        assert sorted(r["id"] for r in rows(spark.read.format("delta").load(path))) == list(range(3, 10))

    def test_refusals_are_analysis_exceptions(self, spark: Any, delta: Any, tmp_path: Path) -> None:
        from pyspark.errors import AnalysisException

        with pytest.raises(AnalysisException) as caught:
            delta.tables.DeltaTable.forPath(spark, str(tmp_path / "none"))
        assert caught.value.getCondition() == "DELTA_MISSING_DELTA_TABLE"
        os.makedirs(tmp_path / "x")
        with pytest.raises(AnalysisException):
            spark.range(1).write.format("delta").option("mergeSchema", "maybe").save(str(tmp_path / "x"))
        with pytest.raises(AnalysisException):
            spark.range(1).write.format("delta").option("mergeSchema", "maybe").saveAsTable("compat_refused")
        assert not spark.catalog.tableExists("compat_refused")
