"""Shredded variants against Spark as the oracle: Spark writes parquet files whose variant column is shredded
by a forced schema (objects with nested arrays and objects, an object of every primitive type, an array, bare
numbers), and the kernel's reassembly (:func:`deltalog.protocol.shredding.unshred`) decodes to the same values
as Spark's own read of the same files; the corpus's shredded Delta tables read the same through
``format("delta")`` and the kernel."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.protocol.shredding import is_shredded, unshred
from deltalog.protocol.variant import to_python, to_python_list

pytestmark = pytest.mark.spark

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/conformance")

#: One variant per row, of every kind the shredding schemas below type (and of kinds they do not).
VALUES = [
    "parse_json('{\"a\": 1, \"b\": \"x\", \"c\": [1, 2]}')",
    "parse_json('{\"a\": \"text\", \"b\": null, \"z\": {\"y\": [true]}}')",
    "parse_json('{\"b\": \"only b\", \"d\": {\"e\": 1.5, \"f\": 2}}')",
    "parse_json('{\"d\": {\"e\": \"not a double\"}, \"c\": [\"s\", 3]}')",
    "parse_json('[1, 2, \"z\", null, [3]]')",
    "parse_json('[]')",
    "parse_json('{}')",
    "parse_json('1.25')",
    "parse_json('12345678901234567890.5')",
    "parse_json('\"" + "long " * 20 + "\"')",
    "parse_json('null')",
    "parse_json('true')",
    "CAST(CAST(5 AS TINYINT) AS VARIANT)",
    "CAST(CAST(300 AS SMALLINT) AS VARIANT)",
    "CAST(70000 AS VARIANT)",
    "CAST(9000000000 AS VARIANT)",
    "CAST(1e300 AS VARIANT)",
    "CAST(CAST(1.5 AS FLOAT) AS VARIANT)",
    "CAST(DATE'2024-02-29' AS VARIANT)",
    "CAST(TIMESTAMP'2024-01-02 03:04:05.000006' AS VARIANT)",
    "CAST(TIMESTAMP_NTZ'2024-01-02 03:04:05.000006' AS VARIANT)",
    "CAST(CAST(1.25 AS DECIMAL(9,2)) AS VARIANT)",
    "CAST(CAST(123456789012.3456 AS DECIMAL(18,4)) AS VARIANT)",
    "CAST(CAST('1234567890123456789012345678901.5' AS DECIMAL(38,1)) AS VARIANT)",
    "CAST(X'00FF' AS VARIANT)",
    "CAST('short' AS VARIANT)",
    "CAST(NULL AS VARIANT)",
]

_TYPED_FIELDS = ("named_struct('i8', CAST(5 AS TINYINT), 'i16', CAST(300 AS SMALLINT), 'i32', 70000, 'i64', "
                 "9000000000, 'f', CAST(1.5 AS FLOAT), 'd', 1e300D, 'dec4', CAST(1.25 AS DECIMAL(9,2)), 'dec8', "
                 "CAST(123456789012.3456 AS DECIMAL(18,4)), 'dec16', "
                 "CAST('1234567890123456789012345678901.5' AS DECIMAL(38,1)), 'dt', DATE'2024-02-29', 'ts', "
                 "TIMESTAMP'2024-01-02 03:04:05.000006', 'ntz', TIMESTAMP_NTZ'2024-01-02 03:04:05.000006', "
                 "'bin', X'00FF', 'b', true, 's', 'text', 'extra', 1)")
VALUES += [
    f"to_variant_object({_TYPED_FIELDS})",  # every field of the second schema, typed as it says
    "to_variant_object(named_struct('i8', 'no', 'ts', 5, 'dec4', 1.5D, 'b', 'x', 'other', DATE'2000-01-01'))",
]

#: Shredding schemas Spark is told to write (``typed_value``'s type): objects (with nested arrays and
#: objects; with a field of every primitive type), an array, a bare number.
SCHEMAS = [
    "a bigint, b string, c array<bigint>, d struct<e: double, f: int>",
    "i8 tinyint, i16 smallint, i32 int, i64 bigint, f float, d double, dec4 decimal(9,2), dec8 decimal(18,4), "
    "dec16 decimal(38,1), dt date, ts timestamp, ntz timestamp_ntz, bin binary, b boolean, s string",
    "array<string>",
    "bigint",
    "decimal(38,1)",
]


def _spark_values(rows: list[Any]) -> list[Any]:
    return [None if r.v is None else to_python(r.v.metadata, r.v.value) for r in rows]


@pytest.fixture(scope="module")
def shredded_files(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    work = tmp_path_factory.mktemp("shredded")
    rows = " UNION ALL ".join(f"SELECT {i} AS id, {v} AS v" for i, v in enumerate(VALUES))
    out = []
    key = "spark.sql.variant.forceShreddingSchemaForTest"
    try:
        for i, schema in enumerate(SCHEMAS):
            spark.conf.set(key, schema)
            spark.sql(rows).coalesce(1).write.parquet(str(work / str(i)))
            out.append((schema, str(work / str(i))))
    finally:
        spark.conf.unset(key)
    return out


@pytest.mark.parametrize("index", range(len(SCHEMAS)), ids=[s.split(",")[0] for s in SCHEMAS])
def test_reassembly_matches_spark_reading_the_same_file(spark: Any, shredded_files: list[Any], index: int) -> None:
    schema, directory = shredded_files[index]
    (path,) = glob.glob(f"{directory}/*.parquet")
    data = pq.read_table(path).sort_by("id")
    assert is_shredded(data.schema.field("v").type), f"Spark did not shred with {schema}"
    typed = data.column("v").combine_chunks().field("typed_value")
    assert typed.null_count < len(typed), f"no row was shredded with {schema}"
    if pa.types.is_struct(typed.type) and typed.type.get_field_index("dec16") >= 0:  # every type was typed
        for i in range(typed.type.num_fields):
            assert typed.field(i).field("typed_value").null_count < len(typed), typed.type.field(i).name
    ours = to_python_list(unshred(data.column("v").combine_chunks(), "v"))
    theirs = _spark_values(spark.read.parquet(directory).orderBy("id").collect())
    assert len(ours) == len(VALUES)
    assert ours == theirs


def test_shredded_corpus_tables_read_alike_through_spark_and_the_kernel(spark: Any) -> None:
    """Spark's parquet reader reassembles the files itself (deletion vectors applied by deltalog's scan)."""
    for name in ["delta-spark/variant-stats-no-checkpoint", "delta-spark/variant-stats-state-reconstruction",
                 "delta-spark/variant-stats-with-struct-no-checkpoint"]:
        path = CORPUS / name
        if not path.is_dir():
            pytest.skip(f"conformance corpus table {name} is not available")
        through_delta = _spark_values(spark.read.format("delta").load(str(path)).select("v").collect())
        kernel = to_python_list(deltalog.Table(path).snapshot().to_arrow(columns=["v"]).column("v"))
        assert len(kernel) == len(through_delta) > 0
        assert sorted(map(repr, through_delta)) == sorted(map(repr, kernel))
