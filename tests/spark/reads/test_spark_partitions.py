"""Partitioned reads: partition columns from Spark's own discovery of the Hive directories when the driver
has verified that they spell exactly the log's values (so filters after ``load()`` prune files natively),
the broadcast join on ``_metadata.file_path`` otherwise -- and in every case the kernel's rows."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sparkutil import data_files, frame, to_arrow
from test_spark_read import corpus, same_rows

import deltalog
from deltalog.protocol.schema import physical_name
from deltalog.spark import read, write
from deltalog.spark.reads.hive import hive_layout_matches, spark_unescape

pytestmark = pytest.mark.spark

UTC = dt.UTC


def uses_hive(path: str) -> bool:
    snap = deltalog.Table(path).snapshot()
    fields = [snap.schema.field(c) for c in snap.partition_columns]
    keys = [physical_name(f, snap.column_mapping_mode) for f in fields]
    return hive_layout_matches(snap.add_files(), fields, keys)


def frame_of(spark: Any, table: pa.Table) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return frame(spark, table, from_arrow_schema(table.schema, prefer_timestamp_ntz=True))


def plan_text(df: Any, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    df.explain()
    return capsys.readouterr().out


def test_filter_after_load_prunes_files_natively(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pyspark.sql import functions as F

    p = str(tmp_path / "t")
    write(spark.range(0, 60, numPartitions=2).withColumn("k", (F.col("id") % 3).cast("int")), p, partitionBy="k")
    assert uses_hive(p)
    loaded = spark.read.format("delta").load(p)
    plan = plan_text(loaded.filter("k = 1"), capsys)
    assert "PartitionFilters: [isnotnull(k" in plan and "BroadcastHashJoin" not in plan
    # Make every file outside k=1 unreadable: the filtered query must never open them.
    for f in data_files(p):
        if "/k=1/" not in f:
            Path(f).write_bytes(b"not parquet")
    got = to_arrow(loaded.filter(F.col("k") == 1).select("id")).column("id").to_pylist()
    assert sorted(got) == list(range(1, 60, 3))
    assert spark.read.format("delta").load(p).where("k IN (1)").count() == 20
    with pytest.raises(Exception):  # noqa: B017 -- Spark's own error for the corrupted files
        loaded.filter("k != 1").collect()


ODD_STRINGS = ["a b", "a/b", "c=d", "50%", "a%2Fb", "x:y", "#?*", "back\\slash", "ü€😈", "tab\tnl\n",
               "__HIVE_DEFAULT_PARTITION__", "", None, "null", " lead", "{[]}^"]


def test_special_characters_and_nulls_match_the_kernel(spark: Any, tmp_path: Path) -> None:
    n = len(ODD_STRINGS) * 2
    source = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([ODD_STRINGS[i % len(ODD_STRINGS)] for i in range(n)], pa.string()),
        "i": pa.array([None if i % 5 == 0 else i % 4 - 2 for i in range(n)], pa.int32()),
        "v": pa.array([f"v{i}" for i in range(n)], pa.string()),
    })
    p = str(tmp_path / "t")
    write(frame_of(spark, source).repartition(2), p, partitionBy=["s", "i"])
    # The literal string __HIVE_DEFAULT_PARTITION__ reads as null from its directory: the join path is used.
    assert not uses_hive(p)
    same_rows(read(spark, p), deltalog.Table(p).snapshot().to_arrow())
    q = str(tmp_path / "u")
    kept = source.filter(pa.compute.not_equal(source.column("s"), "__HIVE_DEFAULT_PARTITION__"))
    write(frame_of(spark, kept).repartition(2), q, partitionBy=["s", "i"])
    assert uses_hive(q)
    expected = deltalog.Table(q).snapshot().to_arrow()
    same_rows(spark.read.format("delta").load(q), expected)
    got = to_arrow(spark.read.format("delta").load(q).filter("s = 'a/b' OR s IS NULL"))
    assert sorted(r["id"] for r in got.to_pylist()) == sorted(
        r["id"] for r in expected.to_pylist() if r["s"] in ("a/b", None)
    )


def test_typed_partitions_in_a_non_utc_session(spark: Any, tmp_path: Path) -> None:
    values: dict[str, tuple[pa.DataType, list[Any]]] = {
        "b": (pa.bool_(), [True, False]),
        "i8": (pa.int8(), [-128, 127]),
        "i64": (pa.int64(), [2**63 - 1, -5]),
        "f32": (pa.float32(), [0.1, -3.25]),
        "f64": (pa.float64(), [2.5, -1e10]),
        "dec": (pa.decimal128(10, 2), [decimal.Decimal("12345678.91"), decimal.Decimal("-3.10")]),
        "d": (pa.date32(), [dt.date(1969, 12, 31), dt.date(2024, 2, 29)]),
        "ts": (pa.timestamp("us", tz="UTC"), [dt.datetime(1960, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
                                             dt.datetime(2024, 1, 1, 12, 30, tzinfo=UTC)]),
        "ntz": (pa.timestamp("us"), [dt.datetime(2000, 1, 1, 1, 2, 3, 456789), dt.datetime(1900, 1, 1)]),
    }
    cols: dict[str, Any] = {"id": pa.array(range(6), pa.int64())}
    for name, (atype, vals) in values.items():
        cols[name] = pa.array([*vals, None, *vals, None], atype)
    source = pa.table(cols)
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        for i, parts in enumerate((["b", "i8", "f32", "d", "ts"], ["i64", "f64", "dec", "ntz"])):
            p = str(tmp_path / f"t{i}")
            write(frame_of(spark, source), p, partitionBy=parts)
            assert uses_hive(p)
            same_rows(read(spark, p), deltalog.Table(p).snapshot().to_arrow())
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_log_values_win_over_directory_names(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    p = tmp_path / "t"
    write(spark.range(0, 12, numPartitions=1).withColumn("k", (F.col("id") % 2).cast("int")), str(p), partitionBy="k")
    assert uses_hive(str(p))
    # Rewrite the log so one file's partition value disagrees with its directory (k=1 -> 7).
    log = p / "_delta_log" / "00000000000000000000.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for a in actions:
        if "add" in a and a["add"]["partitionValues"]["k"] == "1":
            a["add"]["partitionValues"]["k"] = "7"
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    assert not uses_hive(str(p))
    expected = deltalog.Table(str(p)).snapshot().to_arrow()
    assert set(expected.column("k").to_pylist()) == {0, 7}
    same_rows(read(spark, str(p)), expected)


def test_binary_partitions_take_the_join_path(spark: Any, tmp_path: Path) -> None:
    source = pa.table({"id": pa.array(range(4), pa.int64()),
                       "bin": pa.array([b"a/b", b"\x00\xff", None, b"a/b"], pa.binary())})
    p = str(tmp_path / "t")
    write(frame_of(spark, source), p, partitionBy="bin")
    assert not uses_hive(p)
    same_rows(read(spark, p), deltalog.Table(p).snapshot().to_arrow())


def test_spark_unescape_is_strict() -> None:
    assert spark_unescape("a%2Fb%3d") == "a/b="
    assert spark_unescape("%+1") is None and spark_unescape("%") is None and spark_unescape("%G0") is None


@pytest.mark.parametrize(
    "rel",
    [
        "kernel-rs-golden/data-reader-partition-values/delta",
        "kernel-rs-golden/data-reader-escaped-chars/delta",
        "kernel-rs-golden/kernel-timestamp-pst/delta",
        "kernel-rs-golden/basic-decimal-table/delta",
        "kernel-rs-golden/data-reader-timestamp_ntz/delta",
        "kernel-rs-golden/hive/delta/deltatbl-special-chars-in-partition-column",
        "kernel-rs-golden/dv-partitioned-with-checkpoint/delta",
        "delta-kernel-defaults/data-reader-partition-values-column-mapping-name",
        "dat-5b772f7/reader_tests/generated/multi_partitioned/delta",
        "kernel-rs-data/timestamp-partitioned-table",
        "kernel-rs-data/mixed-nulls",
    ],
)
def test_partitioned_corpus_tables_match_the_kernel(spark: Any, rel: str) -> None:
    path = corpus(rel)
    snap = deltalog.Table(path).snapshot()
    assert snap.partition_columns
    expected = snap.to_arrow()
    df = spark.read.format("delta").load(path)
    same_rows(df, expected)
    first = snap.partition_columns[0]
    value = next((v for v in expected.column(first).to_pylist() if v is not None), None)
    if value is not None and not isinstance(value, (float, bytes)):
        from pyspark.sql import functions as F

        want = sum(1 for v in expected.column(first).to_pylist() if v == value)
        assert df.filter(F.col(f"`{first}`") == F.lit(value)).count() == want

