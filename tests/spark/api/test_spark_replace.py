"""``DeltaTable.replace`` / ``createOrReplace`` as delta-spark 4.4 runs them: REPLACE of a missing table is
refused with delta-spark's error (by name Spark's ``TABLE_OR_VIEW_NOT_FOUND``, checked before delta-spark's
command runs, as ``python/delta/tests/test_deltatable.py::test_replace_table_behavior`` expects; by path
``DELTA_CANNOT_REPLACE_MISSING_TABLE``), and a replace is one more commit of the same table: the history goes
on, every file is removed, the schema, partitioning, properties and comment are the new definition's only, the
protocol is never lowered and the clustering goes unless the new definition clusters, while other metadata
domains stay (``CreateDeltaTableCommand`` / ``DomainMetadataUtils.handleDomainMetadataForReplaceTable``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sparkutil import version

import deltalog
from deltalog.spark import DeltaTable

pytestmark = pytest.mark.spark


def build(builder: Any) -> Any:
    """delta-spark's test table definition (``__build_delta_table``)."""
    from pyspark.sql.types import IntegerType

    return (builder.addColumn("col1", "int", comment="foo", nullable=False)
            .addColumn("col2", IntegerType(), generatedAlwaysAs="col1 + 10")
            .property("foo", "bar").comment("comment").partitionedBy("col1").execute())


def test_replace_of_a_missing_table_is_refused(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    name = "replace_missing_table"
    try:
        with pytest.raises(AnalysisException) as caught:
            build(DeltaTable.replace(spark).tableName(name))
        message = str(caught.value)
        assert caught.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"
        assert message.startswith(f"[TABLE_OR_VIEW_NOT_FOUND] The table or view `default`.`{name}` cannot be found.")
        assert not spark.catalog.tableExists(name)
        created = build(DeltaTable.createOrReplace(spark).tableName(name))  # creates it
        assert created.toDF().columns == ["col1", "col2"] and created.history(1).first().operation == "CREATE TABLE"
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    path = str(tmp_path / "missing")
    with pytest.raises(AnalysisException) as caught:
        build(DeltaTable.replace(spark).location(path))
    assert caught.value.getCondition() == "DELTA_CANNOT_REPLACE_MISSING_TABLE"
    assert str(caught.value).startswith(
        f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] Table delta.`{deltalog.Table(path).location}` cannot be replaced as it "
        "does not exist. Use CREATE OR REPLACE TABLE to create the table.")
    assert not (tmp_path / "missing").exists()


def test_replace_keeps_the_history_and_only_the_new_definition(spark: Any, tmp_path: Path) -> None:
    from deltalog.txn.operations import Write
    from deltalog.txn.transaction import start_transaction

    path = str(tmp_path / "t")
    (DeltaTable.create(spark).location(path).addColumn("id", "long").addColumn("k", "string")
     .property("owner", "etl").property("delta.enableDeletionVectors", "true").comment("old").clusterBy("k")
     .execute())
    spark.createDataFrame([(1, "a"), (2, "b")], "id long, k string").write.format("delta").mode("append").save(path)
    txn = start_transaction(deltalog.Table(path), Write(mode="Append"))
    txn.set_domain_metadata("myapp.settings", '{"a":1}')
    txn.commit()
    before = deltalog.Table(path).snapshot()
    assert before.domain_metadata("delta.clustering") is not None and before.version == 2

    replaced = build(DeltaTable.replace(spark).location(path))
    snap = deltalog.Table(path).snapshot()
    assert snap.version == 3 and snap.num_files() == 0 and replaced.toDF().count() == 0
    assert [f["name"] for f in json.loads(snap.metadata.schemaString or "{}")["fields"]] == ["col1", "col2"]
    assert snap.partition_columns == ("col1",) and snap.metadata.description == "comment"
    assert dict(snap.properties) == {"foo": "bar"}  # the old properties go
    assert snap.protocol.minReaderVersion >= before.protocol.minReaderVersion  # never lowered
    assert set(before.protocol.writerFeatures or ()) <= set(snap.protocol.writerFeatures or ())
    assert snap.domain_metadata("delta.clustering") is None  # the clustering goes ...
    assert snap.domain_metadata("myapp.settings") == '{"a":1}'  # ... other domains stay
    assert replaced.detail().first()["clusteringColumns"] == []
    entry = replaced.history(1).first()
    assert entry.operation == "REPLACE TABLE" and entry.readVersion == 2
    assert deltalog.Table(path).snapshot(1).to_arrow().num_rows == 2  # the replaced versions stay readable
    # the generated column of the new definition works
    spark.createDataFrame([(1,)], "col1 int").write.format("delta").mode("append").save(path)
    assert [tuple(r) for r in replaced.toDF().collect()] == [(1, 11)]

    # createOrReplace of an existing table is the same replace; clustering again when the definition clusters
    again = (DeltaTable.createOrReplace(spark).location(path).addColumn("x", "long").addColumn("y", "long")
             .clusterBy("y").execute())
    assert version(path) == 5 and again.history(1).first().operation == "CREATE OR REPLACE TABLE"
    assert again.detail().first()["clusteringColumns"] == ["y"] and again.toDF().count() == 0
    assert deltalog.Table(path).snapshot().domain_metadata("myapp.settings") == '{"a":1}'
