"""Wrong arguments to the ``DeltaTable`` API are refused as delta-spark 4.4 refuses them: the same exception
type (``ValueError`` / ``TypeError`` from its Python checks, ``AnalysisException``, ``IllegalArgumentException``
or ``UnsupportedOperationException`` from its JVM) and its words first -- deltalog may add the table and a hint
after them. The expected texts are delta-spark's (``python/delta/tables.py``, its tests in
``python/delta/tests/test_deltatable.py`` and ``delta-error-classes.json``); nothing is committed by a refused
call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sparkutil import version

import deltalog
from deltalog.spark import DeltaTable
from deltalog.spark.tables import IdentityGenerator

pytestmark = pytest.mark.spark

Call = Callable[[], Any]


def refused(call: Call, kind: type[BaseException], words: str, condition: str | None = None) -> BaseException:
    """``call`` raises ``kind`` whose text starts with ``words`` (and whose ``getCondition()`` is ``condition``)."""
    with pytest.raises(kind) as raised:
        call()
    assert str(raised.value).startswith(words), (words, str(raised.value))
    if condition is not None:
        assert raised.value.getCondition() == condition  # type: ignore[attr-defined]
    return raised.value


@pytest.fixture()
def tables(spark: Any, tmp_path: Path) -> tuple[str, str]:
    """delta-spark's test tables: ``key, value`` unpartitioned, and partitioned by ``key``."""
    flat, parted = str(tmp_path / "flat"), str(tmp_path / "parted")
    df = spark.createDataFrame([("a", 1), ("b", 2)], "key string, value int")
    df.write.format("delta").save(flat)
    df.write.format("delta").partitionBy("key").save(parted)
    return flat, parted


def test_update_checks_set_before_the_condition(spark: Any, tables: tuple[str, str]) -> None:
    dt = DeltaTable.forPath(spark, tables[0])
    refused(lambda: dt.update(condition=1), ValueError, "'set' cannot be None")  # delta-spark: set first
    refused(lambda: dt.update(1, {"value": "1"}), TypeError, "'condition' must be a Spark SQL Column or a string")
    refused(lambda: dt.update(1, {}), TypeError, "'condition' must be a Spark SQL Column")  # the condition first
    assert version(tables[0]) == 0


def test_restore_to_timestamp_takes_a_timestamp_string(spark: Any, tables: tuple[str, str]) -> None:
    from pyspark.errors import AnalysisException

    dt = DeltaTable.forPath(spark, tables[0])
    refused(lambda: dt.restoreToTimestamp(12342323232), ValueError,
            "timestamp needs to be a string but got '<class 'int'>'.")
    refused(lambda: dt.restoreToTimestamp([]), ValueError, "timestamp needs to be a string but got '<class 'list'>'.")
    err = refused(lambda: dt.restoreToTimestamp("05/04/1999"), AnalysisException,
                  "[DELTA_TIMESTAMP_INVALID] The provided timestamp ('05/04/1999') cannot be converted to a valid "
                  "timestamp.", "DELTA_TIMESTAMP_INVALID")
    assert tables[0] in str(err)  # deltalog names the table after delta-spark's words
    assert version(tables[0]) == 0


def test_clone_arguments(spark: Any, tables: tuple[str, str], tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    dt, target = DeltaTable.forPath(spark, tables[0]), str(tmp_path / "clone")
    cases: list[tuple[Call, type[BaseException], str]] = [
        (lambda: dt.clone(10), ValueError, "target needs to be a string but got '<class 'int'>'."),
        (lambda: dt.clone(target, isShallow=10), ValueError,
         "isShallow needs to be a boolean but got '<class 'int'>'."),
        (lambda: dt.clone(target, False, replace=10), ValueError,
         "replace needs to be a boolean but got '<class 'int'>'."),
        (lambda: dt.clone(target, False, False, properties=10), ValueError,
         "properties needs to be a dict but got '<class 'int'>'."),
        (lambda: dt.clone(target, False, False, properties={"key": 10}), ValueError,
         "All property values including 10 needs to be a string but got '<class 'int'>'."),
        (lambda: dt.clone(target, False, False, properties={1: "a"}), ValueError,
         "All property keys including 1 needs to be a string but got '<class 'int'>'."),
        (lambda: dt.cloneAtVersion("0", target, False, False), ValueError,
         "version needs to be an int but got '<class 'str'>'."),
        (lambda: dt.cloneAtTimestamp(10, target, False, False), ValueError,
         "timestamp needs to be a string but got '<class 'int'>'."),
        # delta-spark checks every type before it reads the timestamp
        (lambda: dt.cloneAtTimestamp("05/04/1999", target, isShallow="yes"), ValueError,
         "isShallow needs to be a boolean but got '<class 'str'>'."),
        (lambda: dt.cloneAtTimestamp("05/04/1999", target), AnalysisException,
         "[DELTA_TIMESTAMP_INVALID] The provided timestamp ('05/04/1999') cannot be converted to a valid timestamp."),
    ]
    for call, kind, words in cases:
        refused(call, kind, words)
    assert not (tmp_path / "clone").exists()


def test_feature_generate_and_vacuum_arguments(spark: Any, tables: tuple[str, str]) -> None:
    from pyspark.errors import AnalysisException, IllegalArgumentException

    dt = DeltaTable.forPath(spark, tables[0])
    refused(lambda: dt.addFeatureSupport("abc"), AnalysisException,
            "[DELTA_UNSUPPORTED_FEATURES_IN_CONFIG] Table features configured in the following Spark configs or Delta "
            "table properties are not recognized by this version of Delta Lake: delta.feature.abc.",
            "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG")
    for bad in (12345, [12345], {}, []):
        refused(lambda bad=bad: dt.addFeatureSupport(bad), ValueError, "featureName needs to be a string")
    refused(lambda: dt.generate("x"), IllegalArgumentException,
            "[DELTA_MODE_NOT_SUPPORTED] Specified mode 'x' is not supported. Supported modes are: "
            "symlink_format_manifest", "DELTA_MODE_NOT_SUPPORTED")
    for bad in ("x", [1]):  # delta-spark passes float(retentionHours) to the JVM: float's own errors
        with pytest.raises(Exception) as expected:
            float(bad)  # type: ignore[arg-type]
        refused(lambda bad=bad: dt.vacuum(bad), type(expected.value), str(expected.value))
    before = deltalog.Table(tables[0]).snapshot().protocol
    dt.addFeatureSupport("APPENDONLY")  # names match case-insensitively; (1, 2) has appendOnly: nothing to add
    assert deltalog.Table(tables[0]).snapshot().protocol == before


def test_optimize_refuses_data_columns_in_where_and_partition_columns_in_z_order(
        spark: Any, tables: tuple[str, str]) -> None:
    from pyspark.errors import AnalysisException

    flat, parted = (DeltaTable.forPath(spark, p) for p in tables)
    refused(lambda: flat.optimize().where("key = 'a'").executeCompaction(), AnalysisException,
            "[DELTA_NON_PARTITION_COLUMN_REFERENCE] Predicate references non-partition column 'key'. Only the "
            "partition columns may be referenced: []", "DELTA_NON_PARTITION_COLUMN_REFERENCE")
    refused(lambda: parted.optimize().where("value = 1").executeCompaction(), AnalysisException,
            "[DELTA_NON_PARTITION_COLUMN_REFERENCE] Predicate references non-partition column 'value'. Only the "
            "partition columns may be referenced: [key]")
    refused(lambda: parted.optimize().where("key = 'a'").executeZOrderBy(["key"]), AnalysisException,
            "[DELTA_ZORDERING_ON_PARTITION_COLUMN] key is a partition column. Z-Ordering can only be performed on "
            "data columns", "DELTA_ZORDERING_ON_PARTITION_COLUMN")
    refused(lambda: parted.optimize().executeZOrderBy("nope"), AnalysisException,
            "[DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST] Z-Ordering column nope does not exist in data schema.")
    refused(lambda: parted.optimize().executeZOrderBy("value", 1), TypeError,
            "Z-order column must be str. Found 1 with type <class 'int'>")
    assert (version(tables[0]), version(tables[1])) == (0, 0)


def test_add_column_checks_in_delta_sparks_order_and_words(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import ParseException, UnsupportedOperationException

    b = DeltaTable.create(spark).location(str(tmp_path / "t"))
    cases: list[tuple[Call, type[BaseException], str]] = [
        # the type is parsed before nullable is looked at
        (lambda: b.addColumn("a", "1", nullable=1), ParseException, ""),
        (lambda: b.addColumn("a", "bigint", generatedAlwaysAs="", generatedByDefaultAs=IdentityGenerator()),
         ValueError, "generatedByDefaultAs and generatedAlwaysAs cannot both be set."),
        (lambda: b.addColumn("a", "int", generatedAlwaysAs=1), TypeError,
         "Generated always as expression must be str or IdentityGenerator. Found 1 with type <class 'int'>"),
        (lambda: b.addColumn("a", "bigint", generatedByDefaultAs=""), TypeError,
         "Generated by default expression must be IdentityGenerator. Found  with type <class 'str'>"),
        (lambda: b.addColumn("a", "bigint", generatedAlwaysAs=IdentityGenerator(step=0)), ValueError,
         "Column identity generation requires step to be non-zero."),
        (lambda: b.addColumn("a", "bigint", generatedByDefaultAs=IdentityGenerator(step=0), comment=1), ValueError,
         "Column identity generation requires step to be non-zero."),
        (lambda: b.addColumn("a", "bigint", comment=1), TypeError, "Column comment must be str. Found 1 with type"),
    ]
    for call, kind, words in cases:
        refused(call, kind, words)
    for generated in ({"generatedAlwaysAs": IdentityGenerator()}, {"generatedByDefaultAs": IdentityGenerator(5)}):
        refused(lambda generated=generated: b.addColumn("a", "int", **generated), UnsupportedOperationException,
                "[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE] DataType integer is not supported for IDENTITY "
                "columns.", "DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE")
    refused(lambda: b.addColumn("a", "decimal(10,2)", generatedAlwaysAs=IdentityGenerator()),
            UnsupportedOperationException, "[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE] DataType decimal(10,2) is "
            "not supported")
    b.addColumn("id", "bigint", generatedAlwaysAs=IdentityGenerator(start=2, step=-1)).execute()
    assert version(str(tmp_path / "t")) == 0


def test_column_builder_checks_at_build(spark: Any) -> None:
    from pyspark.errors import AnalysisException, UnsupportedOperationException

    refused(lambda: DeltaTable.columnBuilder(spark, "value").generatedAlwaysAs("true").nullable(True).build(),
            AnalysisException, "The data type of the column value is not provided")
    refused(lambda: DeltaTable.columnBuilder(spark, "id").dataType("long").generatedAlwaysAsIdentity(1, 0).build(),
            AnalysisException, "[DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP] IDENTITY column step cannot be 0.",
            "DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP")
    refused(lambda: DeltaTable.columnBuilder(spark, "id").dataType("int").generatedByDefaultAsIdentity().build(),
            UnsupportedOperationException,
            "[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE] DataType integer is not supported for IDENTITY columns.")
    refused(lambda: DeltaTable.columnBuilder(spark, "id").dataType("long").generatedAlwaysAs("1")
            .generatedAlwaysAsIdentity().build(), AnalysisException,
            "[DELTA_IDENTITY_COLUMNS_WITH_GENERATED_EXPRESSION] IDENTITY column cannot be specified with a generated "
            "column expression.")


def test_execute_needs_a_name_or_location_and_the_columns_it_partitions_by(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    refused(lambda: DeltaTable.create(spark).addColumn("c1", "int").execute(), AnalysisException,
            "[DELTA_CREATE_TABLE_MISSING_TABLE_NAME_OR_LOCATION] Table name or location has to be specified")
    path = str(tmp_path / "t")
    refused(lambda: DeltaTable.create(spark).location(path).addColumn("c1", "int").partitionedBy("c2").execute(),
            AnalysisException,
            "[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Couldn't find column c2 in:\nroot\n"
            " |-- c1: integer (nullable = true)\n")
    assert version(path) == -1


def test_a_path_identifier_names_the_path_based_table(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    path, other = str(tmp_path / "t"), str(tmp_path / "other")
    refused(lambda: DeltaTable.create(spark).tableName(f"delta.`{path}`").addColumn("c1", "int").location(other)
            .execute(), AnalysisException,
            "[DELTA_CREATE_TABLE_IDENTIFIER_LOCATION_MISMATCH] Creating path-based Delta table with a different "
            f"location isn't supported. Identifier: delta.`{path}`, Location: {other}")
    assert (version(path), version(other)) == (-1, -1)
    created = DeltaTable.create(spark).tableName(f"delta.`{path}`").addColumn("c1", "int").location(path).execute()
    assert created.path == DeltaTable.forPath(spark, path).path and version(path) == 0
    DeltaTable.createOrReplace(spark).tableName(f"DELTA.`{path}`").addColumn("c2", "long").execute()
    assert DeltaTable.forPath(spark, path).toDF().columns == ["c2"] and version(path) == 1
