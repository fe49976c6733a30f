"""``DeltaTable.create`` / ``createIfNotExists`` / ``replace`` / ``createOrReplace`` builders and the
protocol methods, with delta-spark's names, arguments and error wording; every commit is the kernel's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sparkutil import rows, version

import deltalog
from deltalog.arrow.write import TableExistsError
from deltalog.errors import DeltaError, InvalidArgumentError, TableNotFoundError
from deltalog.protocol.features import writer_features
from deltalog.spark import DeltaTable, write
from deltalog.txn.constraints import ConstraintViolationError

pytestmark = pytest.mark.spark


def schema_json(path: str) -> dict[str, Any]:
    return json.loads(deltalog.Table(path).snapshot().metadata.schemaString or "{}")


def last_op(path: str) -> dict[str, Any]:
    return deltalog.Table(path).history(limit=1)[0]


def test_create_with_columns_partitions_properties_and_comment(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import ArrayType, StringType

    p = str(tmp_path / "t")
    dt = (
        DeltaTable.create(spark)
        .location(p)
        .addColumn("id", "BIGINT", nullable=False, comment="the key")
        .addColumn("day", "date")
        .addColumn("price", "decimal(10, 2)")
        .addColumn("tags", ArrayType(StringType()))
        .addColumn("info", "struct<a: int, b: map<string, double>>")
        .partitionedBy("day")
        .property("delta.APPENDONLY", "TRUE")
        .property("owner", "etl")
        .comment("daily prices")
        .execute()
    )
    assert isinstance(dt, DeltaTable) and dt.path == deltalog.Table(p).location
    snap = deltalog.Table(p).snapshot()
    assert version(p) == 0 and snap.num_files() == 0
    fields = schema_json(p)["fields"]
    assert [(f["name"], f["type"] if isinstance(f["type"], str) else f["type"]["type"], f["nullable"])
            for f in fields] == [("id", "long", False), ("day", "date", True), ("price", "decimal(10,2)", True),
                                 ("tags", "array", True), ("info", "struct", True)]
    assert fields[0]["metadata"] == {"comment": "the key"}
    assert snap.partition_columns == ("day",)
    assert dict(snap.properties) == {"delta.appendOnly": "true", "owner": "etl"}
    assert snap.metadata.description == "daily prices"
    assert (snap.protocol.minReaderVersion, snap.protocol.minWriterVersion) == (1, 2)
    entry = last_op(p)
    assert entry["operation"] == "CREATE TABLE"
    assert entry["operationParameters"]["partitionBy"] == '["day"]'
    assert dt.toDF().columns == ["id", "day", "price", "tags", "info"] and dt.toDF().count() == 0
    # The table takes data through format("delta"); NOT NULL is enforced.
    df = spark.sql("SELECT 1L AS id, DATE'2024-01-01' AS day, 2.5BD AS price, array('a') AS tags, "
                   "named_struct('a', 1, 'b', map('x', 1.0D)) AS info")
    df = df.selectExpr("id", "day", "CAST(price AS decimal(10,2)) AS price", "tags", "info")
    df.write.format("delta").mode("append").save(p)
    assert [r["id"] for r in rows(DeltaTable.forPath(spark, p).toDF())] == [1]
    with pytest.raises(ConstraintViolationError, match="NOT NULL"):
        write(df.selectExpr("CAST(NULL AS bigint) AS id", "day", "price", "tags", "info"), p, mode="append")


def test_builder_modes(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    DeltaTable.createIfNotExists(spark).location(p).addColumn("id", "long").execute()
    assert version(p) == 0
    DeltaTable.createIfNotExists(spark).location(p).addColumn("other", "string").execute()
    assert version(p) == 0 and [f["name"] for f in schema_json(p)["fields"]] == ["id"]
    with pytest.raises(TableExistsError, match="DELTA_TABLE_ALREADY_EXISTS"):
        DeltaTable.create(spark).location(p).addColumn("id", "long").execute()
    write(spark.range(5), p, mode="append")
    old_id = deltalog.Table(p).snapshot().metadata.id
    DeltaTable.replace(spark).location(p).addColumn("name", "string").addColumn("n", "int").execute()
    snap = deltalog.Table(p).snapshot()
    assert snap.version == 2 and snap.num_files() == 0 and snap.metadata.id == old_id
    assert snap.schema.field_names == ["name", "n"]
    assert last_op(p)["operation"] == "REPLACE TABLE"
    assert deltalog.Table(p).snapshot(1).to_arrow().num_rows == 5  # history stays readable
    DeltaTable.createOrReplace(spark).location(p).addColumn("x", "double").execute()
    assert last_op(p)["operation"] == "CREATE OR REPLACE TABLE" and version(p) == 3
    q = str(tmp_path / "new")
    with pytest.raises(TableNotFoundError, match="DELTA_CANNOT_REPLACE_MISSING_TABLE"):
        DeltaTable.replace(spark).location(q).addColumn("id", "long").execute()
    DeltaTable.createOrReplace(spark).location(q).addColumn("id", "long").execute()
    assert last_op(q)["operation"] == "CREATE TABLE"


def test_builder_errors(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import LongType, StructField, StructType

    p = str(tmp_path / "t")
    with pytest.raises(TypeError):
        DeltaTable.create(spark).tableName(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="location"):
        DeltaTable.create(spark).addColumn("id", "long").execute()
    with pytest.raises(InvalidArgumentError, match="DELTA_SCHEMA_NOT_PROVIDED"):
        DeltaTable.create(spark).location(p).execute()
    with pytest.raises(InvalidArgumentError, match=r"unknown table property 'delta\.appendOnyl'"):
        DeltaTable.create(spark).location(p).addColumn("id", "long").property("delta.appendOnyl", "true").execute()
    with pytest.raises(InvalidArgumentError, match="partition column 'nope'"):
        DeltaTable.create(spark).location(p).addColumn("id", "long").partitionedBy(["nope"]).execute()
    with pytest.raises(InvalidArgumentError, match="twice"):
        DeltaTable.create(spark).location(p).addColumn("id", "long").addColumn("ID", "int").execute()
    with pytest.raises(TypeError, match="str or IdentityGenerator"):
        DeltaTable.create(spark).location(p).addColumn("y", "int", generatedAlwaysAs=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="CHAR/VARCHAR inside a struct, array or map"):
        DeltaTable.create(spark).location(p).addColumn("c", "array<varchar(3)>")  # top-level: a checked string
    with pytest.raises(TypeError, match="Column data type must be str or DataType"):
        DeltaTable.create(spark).location(p).addColumn("id", 5)
    with pytest.raises(TypeError, match="Schema must be StructType"):
        DeltaTable.create(spark).location(p).addColumns("id long")
    with pytest.raises(Exception, match=r"(?i)parse|syntax|unsupported"):
        DeltaTable.create(spark).location(p).addColumn("id", "no such type")
    assert version(p) == -1
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "data.parquet").write_bytes(b"x")
    with pytest.raises(InvalidArgumentError, match="DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION"):
        DeltaTable.create(spark).location(str(tmp_path / "plain")).addColumn("id", "long").execute()
    # addColumns keeps each field's nullability and comment.
    schema = StructType([StructField("a", StructType([StructField("b", LongType())]), False, {"comment": "nested"})])
    DeltaTable.create(spark).location(p).addColumns(schema).execute()
    (field,) = schema_json(p)["fields"]
    assert field["nullable"] is False and field["metadata"] == {"comment": "nested"}


def test_protocol_properties_upgrade_and_features(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    dt = (DeltaTable.create(spark).location(p).addColumn("id", "long")
          .property("delta.feature.deletionVectors", "supported").execute())
    proto = deltalog.Table(p).snapshot().protocol
    assert (proto.minReaderVersion, proto.minWriterVersion) == (3, 7)
    assert "deletionVectors" in (proto.readerFeatures or ())
    assert "delta.feature.deletionVectors" not in deltalog.Table(p).snapshot().properties

    q = str(tmp_path / "u")
    dt = DeltaTable.create(spark).location(q).addColumn("id", "long").execute()
    dt.upgradeTableProtocol(1, 3)
    proto = deltalog.Table(q).snapshot().protocol
    assert (proto.minReaderVersion, proto.minWriterVersion) == (1, 3)
    entry = last_op(q)
    assert entry["operation"] == "UPGRADE PROTOCOL"
    assert json.loads(entry["operationParameters"]["newProtocol"]) == {"minReaderVersion": 1, "minWriterVersion": 3}
    dt.upgradeTableProtocol(1, 3)
    assert version(q) == 1  # nothing to do, nothing committed
    dt.upgradeTableProtocol(1, 2)  # below the table's versions: a no-op, as in delta-spark
    assert version(q) == 1 and deltalog.Table(q).snapshot().protocol.minWriterVersion == 3
    with pytest.raises(ValueError, match="readerVersion needs to be an integer"):
        dt.upgradeTableProtocol("1", 3)  # type: ignore[arg-type]
    dt.upgradeTableProtocol(1, 7)
    proto = deltalog.Table(q).snapshot().protocol
    assert proto.minWriterVersion == 7 and {"appendOnly", "invariants", "checkConstraints"} <= set(
        writer_features(proto)
    )
    dt.addFeatureSupport("deletionVectors")
    proto = deltalog.Table(q).snapshot().protocol
    assert proto.minReaderVersion == 3 and "deletionVectors" in (proto.readerFeatures or ())
    assert last_op(q)["operation"] == "SET TBLPROPERTIES"
    before = version(q)
    with pytest.raises(DeltaError):
        dt.addFeatureSupport("icebergCompatV3")  # a feature deltalog cannot write
    with pytest.raises(DeltaError, match="unknown"):
        dt.addFeatureSupport("noSuchFeature")
    assert version(q) == before
    write(spark.range(3), q, mode="append")  # the upgraded table still takes writes
    assert dt.toDF().count() == 3
