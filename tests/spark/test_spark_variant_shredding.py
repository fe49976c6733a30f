"""Shredded variants against Spark as the oracle: Spark writes parquet files whose variant column is shredded
by a forced schema (objects with nested arrays and objects, arrays, every primitive type), and the kernel's
reassembly (:func:`deltalog.protocol.shredding.unshred`) decodes to the same values as Spark's own read of the
same files; the corpus's shredded Delta tables read the same through ``format("delta")`` and the kernel."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

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

#: Shredding schemas Spark is told to write (``typed_value``'s type).
SCHEMAS = [
    "a bigint, b string, c array<bigint>",
    "a string, d struct<e: double, f: int>",
    "array<string>",
    "array<bigint>",
    "decimal(9,2)",
    "decimal(18,4)",
    "decimal(38,1)",
    "date",
    "timestamp",
    "timestamp_ntz",
    "binary",
    "double",
    "float",
    "boolean",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "string",
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


@pytest.mark.parametrize("index", range(len(SCHEMAS)), ids=SCHEMAS)
def test_reassembly_matches_spark_reading_the_same_file(spark: Any, shredded_files: list[Any], index: int) -> None:
    schema, directory = shredded_files[index]
    (path,) = glob.glob(f"{directory}/*.parquet")
    data = pq.read_table(path).sort_by("id")
    assert is_shredded(data.schema.field("v").type), f"Spark did not shred with {schema}"
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
