"""Variant tables through the Spark engine: ``format("delta")`` reads variant columns (top level and
nested) as Spark's ``VariantType`` exactly as Spark's parquet reader reads the same files; variant data
is written (unshredded) by appends, DML and the kernel; and the kernel's decoder agrees with the values
Spark encodes."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.protocol.schema import VARIANT, ArrayType, StructField, StructType
from deltalog.protocol.variant import to_python, to_python_list
from deltalog.spark import DeltaTable
from deltalog.spark.common.core import spark_type

pytestmark = pytest.mark.spark

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/conformance")

TABLE = "kernel-rs-data/unshredded-variant"
#: The corpus table's schema in Spark's DDL, written out independently of deltalog's type mapping.
DDL = (
    "id BIGINT, v VARIANT, array_of_variants ARRAY<VARIANT>, struct_of_variants STRUCT<v: VARIANT>, "
    "map_of_variants MAP<STRING, VARIANT>, array_of_struct_of_variants ARRAY<STRUCT<v: VARIANT>>, "
    "struct_of_array_of_variants STRUCT<v: ARRAY<VARIANT>>"
)
VARIANT_COLUMNS = [
    "v", "array_of_variants", "struct_of_variants", "map_of_variants", "array_of_struct_of_variants",
    "struct_of_array_of_variants",
]


def corpus(rel: str) -> Path:
    path = CORPUS / rel
    if not path.is_dir():
        pytest.skip(f"conformance corpus table {rel} is not available")
    return path


def as_json(df: Any) -> list[tuple[Any, ...]]:
    """``(id, to_json(column), ...)`` for every variant column, sorted."""
    cols = ["id", *[f"to_json(`{c}`) AS `{c}`" for c in VARIANT_COLUMNS]]
    return sorted(tuple(r) for r in df.selectExpr(*cols).collect())


def test_delta_variant_types_map_to_spark_variant_type() -> None:
    from pyspark.sql.types import ArrayType as SparkArray
    from pyspark.sql.types import StructType as SparkStruct
    from pyspark.sql.types import VariantType

    assert spark_type(VARIANT) == VariantType()
    nested = spark_type(StructType((StructField("a", ArrayType(VARIANT, True)),)))
    assert isinstance(nested, SparkStruct) and nested["a"].dataType == SparkArray(VariantType(), True)


def test_read_matches_spark_reading_the_parquet_files(spark: Any) -> None:
    from pyspark.sql.types import VariantType

    path = corpus(TABLE)
    df = spark.read.format("delta").load(str(path))
    assert df.schema["v"].dataType == VariantType()
    assert df.schema["map_of_variants"].dataType.valueType == VariantType()
    assert df.count() == 102
    snap = deltalog.Table(path).snapshot()
    files = [str(path / p) for p in snap.add_files().column("path").to_pylist()]
    direct = spark.read.schema(DDL).parquet(*files)
    got = as_json(df)
    assert got == as_json(direct)
    assert sorted(r[0] for r in got) == sorted([*range(100), 0, 1])
    assert got[-1][1:] == (
        '{"key":99}', '[{"key":99},null,{"key":99},null,{"key":99}]', '{"v":{"key":99}}',
        '{"99":{"key":99},"nullKey":null}', '[{"v":{"key":99}},{},null,{"v":{"key":99}},null,{"v":{"key":99}}]',
        '{"v":[null,{"key":99}]}',
    )
    # The kernel's Arrow reader and decoder see the same values Spark prints.
    kernel = snap.to_arrow(columns=["id", "v"])
    decoded = sorted(zip(kernel.column("id").to_pylist(), to_python_list(kernel.column("v"))))
    assert decoded == sorted((r[0], json.loads(r[1])) for r in got)


def test_time_travel_filters_and_variant_functions(spark: Any) -> None:
    path = str(corpus(TABLE))
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 100
    df = spark.read.format("delta").load(path)
    late = df.filter("id >= 98")
    assert late.count() == 2 and len(late.inputFiles()) == 1  # min/max skipping on id still applies
    assert df.filter("variant_get(v, '$.key', 'int') = 5").count() == 1
    assert df.selectExpr("sum(variant_get(struct_of_variants.v, '$.key', 'int'))").first()[0] == 4950 + 1


@pytest.fixture
def variant_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "variant"
    shutil.copytree(corpus(TABLE), dest)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def test_variant_tables_are_written(spark: Any, tmp_path: Path, variant_copy: Path) -> None:
    """New variant tables (``variantType``, unshredded), appends, DML and checkpoints through Spark, and
    appends through the kernel, on them and on a copy of the corpus ``variantType-preview`` table: Spark,
    the kernel's decoder and DuckDB read the same values after each step."""
    from readers import duckdb_rows

    new = str(tmp_path / "new")
    frame = spark.range(4).selectExpr("id", "parse_json(concat('{\"a\":', id, '}')) AS v",
                                      "named_struct('w', parse_json(cast(id AS string))) AS s")
    frame.write.format("delta").save(new)
    snap = deltalog.Table(new).snapshot()
    assert snap.protocol.readerFeatures == ("variantType",) and snap.schema.field("v").type == VARIANT
    assert all(json.loads(f["stats"])["nullCount"]["v"] == 0 for f in snap.add_files().to_pylist())

    def check(path: str, want: dict[int, Any]) -> None:
        got = {r.id: r.j and json.loads(r.j) for r in spark.read.format("delta").load(path).selectExpr(
            "id", "to_json(v) AS j").collect()}
        assert got == want
        kernel = deltalog.Table(path).snapshot().to_arrow(columns=["id", "v"]).to_pylist()
        assert {r["id"]: r["v"] and to_python(r["v"]["metadata"], r["v"]["value"]) for r in kernel} == want
        assert dict(duckdb_rows(path, ["id", "v"])) == want
        for file in deltalog.Table(path).snapshot().add_files().column("path").to_pylist():
            # Spark 4.3 shreds variants in parquet files by default; a table without variantShredding must not
            assert "typed_value" not in str(pq.read_schema(Path(path) / file)), file

    check(new, {i: {"a": i} for i in range(4)})
    spark.sql(f"INSERT INTO delta.`{new}` SELECT 9, parse_json('[1, 2]'), named_struct('w', parse_json('null'))")
    DeltaTable.forPath(spark, new).delete("id = 1")
    spark.sql(f"UPDATE delta.`{new}` SET v = parse_json('\"x\"') WHERE id = 2")
    spark.sql(f"MERGE INTO delta.`{new}` t USING (SELECT 3L AS id, parse_json('7') AS v) s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET v = s.v")
    deltalog.Table(new).checkpoint()
    check(new, {0: {"a": 0}, 2: "x", 3: 7, 9: [1, 2]})
    deltalog.write_table(new, deltalog.Table(new).snapshot().to_arrow().filter(pc.field("id") == 0),
                         mode="append")  # the kernel appends variants it read
    assert spark.read.format("delta").load(new).filter("id = 0").count() == 2
    with pytest.raises(Exception, match="v"):  # a string is not a variant
        spark.range(1).selectExpr("id", "'{}' AS v", "named_struct('w', parse_json('1')) AS s") \
            .write.format("delta").mode("append").save(new)

    ddl = str(tmp_path / "ddl")
    spark.sql(f"CREATE TABLE delta.`{ddl}` (id BIGINT, v VARIANT) USING DELTA")
    spark.sql(f"INSERT INTO delta.`{ddl}` VALUES (1, parse_json('{{\"k\": [true]}}')), (2, NULL)")
    check(ddl, {1: {"k": [True]}, 2: None})
    # Spark 4's colon path into a variant, in a query and in DML on the Delta table
    assert spark.sql(f"SELECT id, v:k[0]::boolean AS b FROM delta.`{ddl}` WHERE v:k[0]::boolean").collect() == \
        [(1, True)]
    spark.sql(f"UPDATE delta.`{ddl}` SET id = 10 WHERE v:k[0]::boolean")
    assert sorted(r.id for r in spark.read.format("delta").load(ddl).collect()) == [2, 10]

    # the corpus table Delta 3.3 made (variantType-preview): appends and DML keep the preview feature
    before = as_json(spark.read.format("delta").load(str(variant_copy)))
    loaded = spark.read.format("delta").load(str(variant_copy))
    loaded.filter("id < 2").write.format("delta").mode("append").save(str(variant_copy))
    DeltaTable.forPath(spark, str(variant_copy)).delete("id = 1")
    after = as_json(spark.read.format("delta").load(str(variant_copy)))
    want = sorted([r for r in before if r[0] != 1] + [r for r in before if r[0] == 0])
    assert after == want
    assert deltalog.Table(variant_copy).snapshot().protocol.readerFeatures == ("variantType-preview",)
    ids = sorted(r[0] for r in duckdb_rows(str(variant_copy), ["id"]))
    assert ids == sorted(r[0] for r in want)


#: (Spark SQL expression, the Python value the kernel's decoder must give for Spark's encoding).
ENCODED = {
    "int8": ("parse_json('7')", 7),
    "int16": ("parse_json('-300')", -300),
    "int32": ("parse_json('70000')", 70000),
    "int64": ("parse_json('1099511627776')", 1099511627776),
    "decimal4": ("parse_json('1.50')", Decimal("1.50")),
    "decimal8": ("parse_json('12345678901.25')", Decimal("12345678901.25")),
    "decimal16": ("parse_json('12345678901234567890123')", Decimal("12345678901234567890123")),
    "double": ("parse_json('1e300')", 1e300),
    "boolean": ("parse_json('true')", True),
    "json_null": ("parse_json('null')", None),
    "short_string": ("parse_json('\"hé\"')", "hé"),
    "long_string": ("parse_json('\"' || repeat('x', 100) || '\"')", "x" * 100),
    "object": ("""parse_json('{"b": [1, 2, {"c": null}], "a": "x"}')""", {"a": "x", "b": [1, 2, {"c": None}]}),
    "large_array": (
        "parse_json('[' || array_join(transform(sequence(1, 300), x -> cast(x AS string)), ',') || ']')",
        list(range(1, 301)),
    ),
    "large_object": (
        "parse_json('{' || array_join(transform(sequence(1, 300), x -> '\"k' || x || '\": ' || x), ',') || '}')",
        {f"k{i}": i for i in range(1, 301)},
    ),
    "date": ("cast(date'2024-02-29' AS variant)", dt.date(2024, 2, 29)),
    "timestamp": (
        "cast(timestamp'2024-02-29 12:34:56.123456' AS variant)",
        dt.datetime(2024, 2, 29, 12, 34, 56, 123456, tzinfo=dt.UTC),
    ),
    "timestamp_ntz": (
        "cast(timestamp_ntz'2024-02-29 12:34:56.123456' AS variant)", dt.datetime(2024, 2, 29, 12, 34, 56, 123456)
    ),
    "binary": ("cast(X'00FF' AS variant)", b"\x00\xff"),
    "float": ("cast(cast(1.5 AS float) AS variant)", 1.5),
    "decimal_cast": ("cast(cast(-3.141 AS decimal(10,3)) AS variant)", Decimal("-3.141")),
}


def test_the_decoder_reads_what_spark_encodes(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "encoded"
    select = ", ".join(f"{expr} AS {name}" for name, (expr, _) in ENCODED.items())
    key = "spark.sql.variant.writeShredding.enabled"
    spark.conf.set(key, "false")  # Spark 4.1+ shreds variants in plain parquet writes by default
    try:
        spark.sql(f"SELECT {select}").coalesce(1).write.parquet(str(out))
    finally:
        spark.conf.unset(key)
    row = pq.read_table(sorted(out.glob("*.parquet"))).to_pylist()[0]
    for name, (_, want) in ENCODED.items():
        got = to_python(row[name]["metadata"], row[name]["value"])
        assert got == want and type(got) is type(want), (name, got)
    assert list(to_python(row["large_object"]["metadata"], row["large_object"]["value"]))[:3] == ["k1", "k10", "k100"]
