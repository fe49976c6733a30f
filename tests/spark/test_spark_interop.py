"""Tables written by the Spark engine open in delta-rs (``deltalake``) with identical content. Every
delta-rs call runs in one spawned worker process (see ``spark_deltars_worker``)."""

from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import spark_deltars_worker
from sparkutil import arrow_rows, rows

import deltalog
from deltalog.spark import write

pytestmark = pytest.mark.spark

UTC = dt.UTC


def source_table() -> pa.Table:
    n = 40
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "p": pa.array([["a b", "ü/€", None, "x=y"][i % 4] for i in range(n)], pa.string()),
            "day": pa.array([dt.date(2024, 1, 1 + i % 3) for i in range(n)], pa.date32()),
            "amount": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(12, 2)),
            "ratio": pa.array([None if i % 5 == 0 else i / 7 for i in range(n)], pa.float64()),
            "ts": pa.array([dt.datetime(2024, 5, 1, i % 24, tzinfo=UTC) for i in range(n)], pa.timestamp("us", "UTC")),
            "flag": pa.array([i % 2 == 0 for i in range(n)], pa.bool_()),
            "tags": pa.array([[f"t{i}", None] if i % 3 else None for i in range(n)], pa.list_(pa.string())),
            "nested": pa.array([{"a": i, "b": f"n{i}"} for i in range(n)],
                               pa.struct([("a", pa.int32()), ("b", pa.string())])),
        }
    )


@pytest.mark.parametrize("partition_by", [None, ["p"], ["day", "p"]])
def test_delta_rs_reads_what_spark_wrote(
    spark: Any, rs: cf.ProcessPoolExecutor, tmp_path: Path, partition_by: list[str] | None
) -> None:
    from pyspark.sql.pandas.types import from_arrow_schema

    source = source_table()
    p = str(tmp_path / "t")
    df = spark.createDataFrame(source, schema=from_arrow_schema(source.schema)).repartition(3)
    write(df, p, partitionBy=partition_by)
    write(df.filter("id < 10"), p, mode="append", partitionBy=partition_by)
    expected = arrow_rows(pa.concat_tables([source, source.slice(0, 10)]).sort_by("id"))
    ours = deltalog.Table(p).snapshot().to_arrow()
    assert rs.submit(spark_deltars_worker.version, p).result(timeout=120) == 1
    theirs: pa.Table = rs.submit(spark_deltars_worker.read_table, p).result(timeout=120)
    theirs = theirs.select(ours.column_names).cast(ours.schema)
    key = sorted(expected, key=repr)
    assert sorted(arrow_rows(theirs), key=repr) == key
    assert sorted(rows(spark.read.format("delta").load(p)), key=repr) == key
