"""write_table: round trips through our reader, modes, schema enforcement, constraints and stats."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.arrow.write import TableExistsError, write_table
from deltalog.data.write_files import DataFileWriter
from deltalog.errors import InvalidArgumentError, SchemaError
from deltalog.protocol.schema import StructType
from deltalog.storage import InMemoryLogStore, LocalLogStore
from deltalog.txn.constraints import ConstraintViolationError, UnsupportedExpressionError
from deltalog.txn.writer_features import AppendOnlyError

UTC = dt.UTC

PRIMITIVES: dict[str, tuple[pa.DataType, list[Any]]] = {
    "boolean": (pa.bool_(), [True, False, None]),
    "byte": (pa.int8(), [-128, 127, None]),
    "short": (pa.int16(), [-5, 32000, None]),
    "integer": (pa.int32(), [-(2**31), 2**31 - 1, None]),
    "long": (pa.int64(), [-(2**63), 2**63 - 1, None]),
    "float": (pa.float32(), [1.5, -0.25, None]),
    "double": (pa.float64(), [1e300, -2.5, None]),
    "decimal": (pa.decimal128(10, 2), [decimal.Decimal("12345678.91"), decimal.Decimal("-0.01"), None]),
    "string": (pa.string(), ["a b/c=d%", "ü€", None]),
    "binary": (pa.binary(), [b"\x00\x01", b"xyz", None]),
    "date": (pa.date32(), [dt.date(1969, 12, 31), dt.date(2024, 2, 29), None]),
    "timestamp": (
        pa.timestamp("us", tz="UTC"),
        [dt.datetime(1960, 1, 1, 0, 0, 0, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, 12, 30, tzinfo=UTC), None],
    ),
    "timestamp_ntz": (pa.timestamp("us"), [dt.datetime(2000, 1, 1, 1, 2, 3, 456789), dt.datetime(1900, 1, 1), None]),
}


def read(path: Path | str, **kwargs: Any) -> pa.Table:
    return deltalog.Table(str(path)).snapshot().to_arrow(**kwargs)


def sorted_rows(t: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: r[key])


def data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def log_actions(path: Path, version: int) -> list[dict[str, Any]]:
    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line]


def adds(path: Path, version: int) -> list[dict[str, Any]]:
    return [a["add"] for a in log_actions(path, version) if "add" in a]


# --------------------------------------------------------------------------------------- round trips


def test_round_trip_every_primitive_and_nested_type(tmp_path: Path) -> None:
    cols: dict[str, pa.Array[Any]] = {"id": pa.array([0, 1, 2], pa.int64())}
    for name, (atype, values) in PRIMITIVES.items():
        cols[f"c_{name}"] = pa.array(values, atype)
    cols["c_struct"] = pa.array(
        [{"a": 1, "b": "x"}, None, {"a": None, "b": "y"}], pa.struct([("a", pa.int32()), ("b", pa.string())])
    )
    cols["c_list"] = pa.array([[1, 2], None, []], pa.list_(pa.int64()))
    cols["c_map"] = pa.array([[("k", 1)], None, [("a", None), ("b", 2)]], pa.map_(pa.string(), pa.int64()))
    cols["c_nested"] = pa.array([[{"x": [1.5]}], [], None], pa.list_(pa.struct([("x", pa.list_(pa.float64()))])))
    data = pa.table(cols)
    res = write_table(tmp_path, data)
    assert res.version == 0 and res.num_rows == 3 and res.num_files == 1
    out = read(tmp_path)
    assert out.column_names == data.column_names
    assert sorted_rows(out) == sorted_rows(data)
    for name, (atype, _) in PRIMITIVES.items():
        assert out.schema.field(f"c_{name}").type == atype
    protocol = deltalog.Table(str(tmp_path)).snapshot().protocol
    assert (protocol.minReaderVersion, protocol.minWriterVersion) == (3, 7)  # timestamp_ntz
    assert protocol.readerFeatures == ("timestampNtz",) and protocol.writerFeatures == ("timestampNtz",)


def test_default_protocol_and_metadata(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1]}), name="t1", description="d", properties={"k": "v"})
    actions = log_actions(tmp_path, 0)
    assert list(actions[0]) == ["commitInfo"]
    assert actions[1] == {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    md = actions[2]["metaData"]
    assert md["name"] == "t1" and md["description"] == "d" and md["configuration"] == {"k": "v"}
    assert md["partitionColumns"] == [] and isinstance(md["createdTime"], int)
    assert re.fullmatch(r"[0-9a-f-]{36}", md["id"])
    assert actions[0]["commitInfo"]["operationParameters"]["mode"] == "ErrorIfExists"


@pytest.mark.parametrize("type_name", sorted(PRIMITIVES))
def test_partitioned_by_each_primitive_type_with_nulls(tmp_path: Path, type_name: str) -> None:
    atype, values = PRIMITIVES[type_name]
    data = pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "p": pa.array(values + values, atype),
            "v": ["a", "b", "c", "d", "e", "f"],
        }
    )
    write_table(tmp_path, data, partition_by=["p"])
    write_table(tmp_path, data.slice(0, 2).set_column(0, "id", pa.array([6, 7], pa.int64())), mode="append")
    out = read(tmp_path)
    expected = pa.concat_tables([data, data.slice(0, 2).set_column(0, "id", pa.array([6, 7], pa.int64()))])
    assert sorted_rows(out) == sorted_rows(expected)
    assert out.schema.field("p").type == atype
    files = adds(tmp_path, 0)
    assert len(files) == 3  # two values and null
    null_files = [f for f in files if f["partitionValues"]["p"] is None]
    assert len(null_files) == 1 and null_files[0]["path"].startswith("p=__HIVE_DEFAULT_PARTITION__/")
    for f in files:  # partition columns are not stored in the data files
        assert pq.read_schema(tmp_path / _unquote(f["path"])).names == ["id", "v"]
        assert re.search(r"/part-\d{5}-[0-9a-f-]{36}-c000\.snappy\.parquet$", f["path"])
        assert "p" not in json.loads(f["stats"])["minValues"]


def _unquote(p: str) -> str:
    from urllib.parse import unquote

    return unquote(p)


def test_special_partition_values_are_escaped(tmp_path: Path) -> None:
    data = pa.table({"id": [1, 2, 3], "p": ["a b/c=d%", "x:y", ""]})
    write_table(tmp_path, data, partition_by=["p"])
    files = {f["partitionValues"]["p"]: f["path"] for f in adds(tmp_path, 0)}
    assert files["a b/c=d%"].startswith("p=a%20b%252Fc%253Dd%2525/")
    assert None in files  # an empty string partition value is null in the protocol
    out = sorted_rows(read(tmp_path))
    assert [r["p"] for r in out] == ["a b/c=d%", "x:y", None]


def test_input_kinds(tmp_path: Path) -> None:
    table = pa.table({"id": [1, 2], "s": ["a", "b"]})
    write_table(tmp_path / "t", table)
    write_table(tmp_path / "t", pa.RecordBatchReader.from_batches(table.schema, table.to_batches()), mode="append")
    write_table(tmp_path / "t", table.to_batches(), mode="append")
    write_table(tmp_path / "t", (b for b in table.to_batches()), mode="append")
    write_table(tmp_path / "t", pd.DataFrame({"id": [9], "s": ["z"]}), mode="append")
    assert read(tmp_path / "t").num_rows == 9
    with pytest.raises(InvalidArgumentError, match="RecordBatch"):
        write_table(tmp_path / "u", [1, 2, 3])


def test_target_file_size_rolls_files(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array(range(20_000), pa.int64()), "s": [f"row-{i}" for i in range(20_000)]})
    res = write_table(tmp_path, data.to_batches(max_chunksize=2_000), target_file_size=50_000)
    assert res.num_files > 2
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds(tmp_path, 0)) == 20_000
    assert read(tmp_path).num_rows == 20_000


def test_target_file_size_splits_one_large_batch(tmp_path: Path) -> None:
    """A batch far larger than the target (a Spark task's chunk of up to a million rows) is split into row
    groups, so the files roll over near the target instead of holding the whole batch."""
    n = 300_000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"row-{i % 977}" for i in range(n)]})
    target = 256 << 10
    res = write_table(tmp_path, data, target_file_size=target)
    sizes = [a["size"] for a in adds(tmp_path, 0)]
    assert res.num_files == len(sizes) > 2
    assert max(sizes) < 2 * target, sizes  # at most one row group past the target
    assert read(tmp_path).num_rows == n


# ------------------------------------------------------------------------------------------- modes


def test_unknown_mode(tmp_path: Path) -> None:
    with pytest.raises(
        InvalidArgumentError,
        match=r"unknown write mode 'upsert'.*'append', 'overwrite', 'error', "
        r"'ignore'",
    ):
        write_table(tmp_path, pa.table({"id": [1]}), mode="upsert")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "upsert"}, "unknown write mode"),
        ({"mode": "append", "schema_mode": "mergee"}, "unknown schema_mode"),
        ({"mode": "append", "schema_mode": "overwrite"}, "needs mode"),
        ({"mode": "append", "predicate": [("id", "=", 1)]}, "needs mode"),
        ({"mode": "append", "txn": ("app", "x")}, "txn must be"),
        ({"mode": "append", "properties": {"delta.feature.fooBar": "supported"}}, "unknown to deltalog"),
    ],
)
def test_argument_and_feature_refusals_name_the_table(tmp_path: Path, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(deltalog.DeltaError, match=match) as err:
        write_table(tmp_path, pa.table({"id": [1]}), **kwargs)
    assert err.value.table == str(tmp_path) and f"[table {tmp_path}" in str(err.value)


def test_error_and_ignore_modes(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1]}), mode="error")
    with pytest.raises(TableExistsError, match="already exists"):
        write_table(tmp_path, pa.table({"id": [2]}), mode="error")
    res = write_table(tmp_path, pa.table({"id": [2]}), mode="ignore")
    assert res.skipped and res.version == 0
    assert read(tmp_path).to_pylist() == [{"id": 1}]
    res = write_table(tmp_path / "new", pa.table({"id": [3]}), mode="ignore")
    assert not res.skipped and read(tmp_path / "new").num_rows == 1


def test_overwrite(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"])
    res = write_table(tmp_path, pa.table({"id": [3], "p": ["c"]}), mode="overwrite")
    assert res.version == 1 and res.num_removed_files == 2
    assert read(tmp_path).to_pylist() == [{"id": 3, "p": "c"}]
    actions = log_actions(tmp_path, 1)
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(removes) == 2 and all(r["dataChange"] for r in removes)
    info = actions[0]["commitInfo"]
    assert info["operationParameters"]["mode"] == "Overwrite" and info["isBlindAppend"] is False
    assert deltalog.Table(str(tmp_path)).snapshot().version == 1


def test_overwrite_with_predicate(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1, 2, 3], "p": ["a", "b", "c"]}), partition_by=["p"])
    res = write_table(
        tmp_path, pa.table({"id": [10, 11], "p": ["a", "a"]}), mode="overwrite", predicate=[("p", "=", "a")]
    )
    assert res.num_removed_files == 1
    assert sorted_rows(read(tmp_path)) == [
        {"id": 2, "p": "b"},
        {"id": 3, "p": "c"},
        {"id": 10, "p": "a"},
        {"id": 11, "p": "a"},
    ]
    assert log_actions(tmp_path, 1)[0]["commitInfo"]["operationParameters"]["predicate"] == "p = 'a'"
    write_table(tmp_path, pa.table({"id": [20], "p": ["b"]}), mode="overwrite", predicate=[("p", "in", ["b", "z"])])
    assert sorted(r["id"] for r in read(tmp_path).to_pylist()) == [3, 10, 11, 20]
    before = data_files(tmp_path)
    with pytest.raises(InvalidArgumentError, match=r"1 row\(s\) of the data do not match the overwrite predicate"):
        write_table(
            tmp_path, pa.table({"id": [30, 31], "p": ["c", "d"]}), mode="overwrite", predicate=[("p", "=", "c")]
        )
    assert deltalog.Table(str(tmp_path)).latest_version() == 2 and data_files(tmp_path) == before
    with pytest.raises(InvalidArgumentError, match="needs mode"):
        write_table(tmp_path, pa.table({"id": [1], "p": ["c"]}), mode="append", predicate=[("p", "=", "c")])


def test_overwrite_with_a_sql_predicate(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1, 2, 3], "p": ["a", "b", "c"]}), partition_by=["p"])
    res = write_table(tmp_path, pa.table({"id": [10], "p": ["b"]}), mode="overwrite",
                      predicate="P IN ('b', 'z') AND p >= 'b'")
    assert res.num_removed_files == 1
    assert sorted(r["id"] for r in read(tmp_path).to_pylist()) == [1, 3, 10]
    assert log_actions(tmp_path, 1)[0]["commitInfo"]["operationParameters"]["predicate"] == (
        "P IN ('b', 'z') AND p >= 'b'"  # replaceWhere's text as given, as delta-spark records it
    )
    with pytest.raises(InvalidArgumentError, match="column 'q' does not exist"):
        write_table(tmp_path, pa.table({"id": [1], "p": ["a"]}), mode="overwrite", predicate="q = 1")
    assert deltalog.Table(str(tmp_path)).latest_version() == 1


def test_overwrite_with_a_predicate_on_data_columns_replaces_rows(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for p in ("a", "b"):
        write_table(path, pa.table({"id": pa.array(range(10), pa.int64()) if p == "a" else
                                    pa.array(range(10, 20), pa.int64()), "p": [p] * 10}),
                    mode="append", partition_by=["p"], properties={"delta.enableRowTracking": "true"})
    table = deltalog.Table(str(path))
    ids_before = {r["id"]: r for r in table.snapshot().to_arrow().to_pylist()}
    res = write_table(path, pa.table({"id": pa.array([2, 100], pa.int64()), "p": ["a", "b"]}), mode="overwrite",
                      predicate="id < 3 OR id >= 100")
    assert res.num_removed_files == 1  # only partition a's file held matching rows
    got = sorted(r["id"] for r in table.snapshot().to_arrow().to_pylist())
    assert got == [2, *range(3, 20), 100] and len(ids_before) == 20
    info = log_actions(path, 2)[0]["commitInfo"]
    assert info["operation"] == "WRITE" and info["operationParameters"]["predicate"] == "id < 3 OR id >= 100"
    assert info["operationMetrics"]["numDeletedRows"] == "3" and info["operationMetrics"]["numCopiedRows"] == "7"
    from readers import duckdb_rows

    assert [r[0] for r in duckdb_rows(str(path), ["id"])] == got
    before = data_files(path)
    with pytest.raises(InvalidArgumentError, match=r"DELTA_REPLACE_WHERE_MISMATCH\] 1 row"):
        write_table(path, pa.table({"id": pa.array([5, 50], pa.int64()), "p": ["a", "a"]}), mode="overwrite",
                    predicate=[("id", "<", 10)])
    assert table.latest_version() == 2 and data_files(path) == before  # nothing written or left behind


# ------------------------------------------------------------------------------------------ schema


def test_schema_mismatch_lists_every_column(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1], "name": ["a"], "score": [1.5]}))
    before = data_files(tmp_path)
    bad = pa.table({"id": pa.array([2], pa.int64()), "name": [3], "extra": [True]})
    with pytest.raises(SchemaError) as err:
        write_table(tmp_path, bad, mode="append")
    msg = str(err.value)
    assert "name: table string vs data long" in msg
    assert "score: table double vs data (missing)" in msg
    assert "extra: table (missing) vs data boolean" in msg
    assert 'pass schema_mode="merge"' in msg  # the advice names this API's options
    assert deltalog.Table(str(tmp_path)).latest_version() == 0 and data_files(tmp_path) == before


def test_narrower_types_are_converted_without_schema_mode(tmp_path: Path) -> None:
    # int32 into a long column (and a column of nulls) was refused unless schema_mode="merge"; delta-spark
    # and delta-rs write it, converting without loss
    write_table(tmp_path, pa.table({"id": pa.array([1], pa.int64()), "x": [1.5], "d": pa.array([0], pa.date32())}))
    write_table(tmp_path, pa.table({"id": pa.array([2], pa.int32()), "x": pa.array([2.5], pa.float32()),
                                    "d": pa.array([None], pa.null())}), mode="append")
    snap = deltalog.Table(str(tmp_path)).snapshot()
    assert snap.schema.to_json() == deltalog.Table(str(tmp_path)).snapshot(version=0).schema.to_json()  # unchanged
    assert sorted_rows(read(tmp_path)) == [{"id": 1, "x": 1.5, "d": dt.date(1970, 1, 1)},
                                           {"id": 2, "x": 2.5, "d": None}]
    with pytest.raises(SchemaError, match="id: table long vs data double"):  # a lossy conversion is not made
        write_table(tmp_path, pa.table({"id": [3.0], "x": [1.0], "d": pa.array([0], pa.date32())}), mode="append")


def test_nested_fields_reordered_missing_or_narrower_without_schema_mode(tmp_path: Path) -> None:
    # a struct (also in an array or map) whose fields come in another order, lack some of the table's or
    # hold narrower types was refused unless schema_mode="merge"; delta-spark writes it by field name, the
    # table's schema unchanged
    item = pa.struct([("k", pa.int32()), ("v", pa.string())])
    first = pa.table({"s": pa.array([{"a": 1, "b": 2, "arr": [{"k": 1, "v": "x"}]}],
                                    pa.struct([("a", pa.int64()), ("b", pa.int32()), ("arr", pa.list_(item))]))})
    write_table(tmp_path, first)
    reordered = pa.array([{"b": 60, "a": 50, "arr": [{"v": "y", "k": 7}]}], pa.struct(
        [("b", pa.int32()), ("a", pa.int32()), ("arr", pa.list_(pa.struct([("v", pa.string()), ("k", pa.int32())])))]))
    write_table(tmp_path, pa.table({"s": reordered}), mode="append")
    write_table(tmp_path, pa.table({"s": pa.array([{"a": 70}], pa.struct([("a", pa.int64())]))}), mode="append")
    table = deltalog.Table(str(tmp_path))
    assert table.snapshot().schema.to_json() == table.snapshot(version=0).schema.to_json()
    assert sorted(read(tmp_path).to_pylist(), key=lambda r: r["s"]["a"]) == [
        {"s": {"a": 1, "b": 2, "arr": [{"k": 1, "v": "x"}]}},
        {"s": {"a": 50, "b": 60, "arr": [{"k": 7, "v": "y"}]}},
        {"s": {"a": 70, "b": None, "arr": None}},
    ]
    for bad in (pa.array([{"a": 1, "zz": "x"}]),  # a field the table lacks
                pa.array([{"a": "one"}])):  # a type that does not convert
        with pytest.raises(SchemaError, match="s: table struct"):
            write_table(tmp_path, pa.table({"s": bad}), mode="append")
    assert table.latest_version() == 2


def test_merge_schema(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1], "st": [{"a": 1}]}))
    more = pa.table({"id": pa.array([2], pa.int32()), "st": [{"a": 2, "b": "x"}], "new": ["n"]})
    res = write_table(tmp_path, more, mode="append", schema_mode="merge")
    snap = deltalog.Table(str(tmp_path)).snapshot()
    assert snap.schema.field_names == ["id", "st", "new"]
    assert res.version == 1 and snap.schema.field("new").nullable
    assert sorted_rows(read(tmp_path)) == [
        {"id": 1, "st": {"a": 1, "b": None}, "new": None},
        {"id": 2, "st": {"a": 2, "b": "x"}, "new": "n"},
    ]
    # missing columns are written as nulls under merge
    write_table(tmp_path, pa.table({"id": [3]}), mode="append", schema_mode="merge")
    assert read(tmp_path).num_rows == 3
    with pytest.raises(SchemaError, match="type widening"):
        write_table(tmp_path, pa.table({"id": [4], "new": [1.5]}), mode="append", schema_mode="merge")


def test_void_column_is_left_out_of_files_and_evolves(tmp_path: Path) -> None:
    # a column of nulls (Spark's NullType, Delta's "void") is not stored in the data files, as delta-spark
    # writes it; a later merge gives it the data's type and the old files read it as null
    write_table(tmp_path, pa.table({"id": [1, 2], "b": pa.nulls(2)}))
    assert [pq.read_schema(p).names for p in tmp_path.glob("*.parquet")] == [["id"]]
    assert deltalog.Table(str(tmp_path)).snapshot().schema.field("b").type.name == "void"
    write_table(tmp_path, pa.table({"id": [3], "b": ["x"]}), mode="append", schema_mode="merge")
    assert deltalog.Table(str(tmp_path)).snapshot().schema.field("b").type.name == "string"
    want = [(1, None), (2, None), (3, "x")]
    assert [(r["id"], r["b"]) for r in sorted_rows(read(tmp_path))] == want
    from readers import delta_rs_rows, duckdb_rows

    assert sorted(delta_rs_rows(str(tmp_path), ["id", "b"])) == want
    assert sorted(duckdb_rows(str(tmp_path), ["id", "b"])) == want
    # a table of void columns alone keeps them in its files (a parquet file needs a column to count rows)
    write_table(tmp_path / "only", pa.table({"b": pa.nulls(3)}))
    assert read(tmp_path / "only").num_rows == 3


def test_overwrite_schema(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1], "p": ["a"]}), partition_by=["p"])
    with pytest.raises(InvalidArgumentError, match='needs mode="overwrite"'):
        write_table(tmp_path, pa.table({"x": ["a"]}), mode="append", schema_mode="overwrite")
    write_table(
        tmp_path, pa.table({"x": ["a"], "q": [1]}), mode="overwrite", schema_mode="overwrite", partition_by=["q"]
    )
    snap = deltalog.Table(str(tmp_path)).snapshot()
    assert snap.schema.field_names == ["x", "q"] and snap.partition_columns == ("q",)
    assert read(tmp_path).to_pylist() == [{"x": "a", "q": 1}]
    with pytest.raises(InvalidArgumentError, match=r'partitioned by.*write with mode="overwrite" with schema_mode='):
        write_table(tmp_path, pa.table({"x": ["b"], "q": [2]}), mode="append", partition_by=["x"])


def test_nullability_enforced(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    write_table(tmp_path, pa.table({"id": [1], "v": ["a"]}, schema=schema))
    assert not deltalog.Table(str(tmp_path)).snapshot().schema.field("id").nullable
    before = data_files(tmp_path)
    with pytest.raises(ConstraintViolationError, match="NOT NULL constraint violated for column id"):
        write_table(tmp_path, pa.table({"id": [2, None], "v": ["b", "c"]}), mode="append")
    assert deltalog.Table(str(tmp_path)).latest_version() == 0 and data_files(tmp_path) == before


def test_check_constraints_and_cleanup(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1]}), properties={"delta.constraints.positive": "id > 0"})
    protocol = deltalog.Table(str(tmp_path)).snapshot().protocol
    assert (protocol.minReaderVersion, protocol.minWriterVersion) == (1, 3)
    before = data_files(tmp_path)
    batches = [pa.record_batch({"id": [5, 6]}), pa.record_batch({"id": [7, -1]})]
    with pytest.raises(ConstraintViolationError, match=r"CHECK constraint positive \(id > 0\)"):
        write_table(tmp_path, batches, mode="append", target_file_size=1)
    assert data_files(tmp_path) == before  # files of the first batch were removed
    write_table(tmp_path, pa.table({"id": [2]}), mode="append")
    assert read(tmp_path).num_rows == 2


def test_unsupported_constraint_never_passes(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedExpressionError, match=r"CHECK constraint odd \(id RLIKE '1'\)"):
        write_table(tmp_path, pa.table({"id": [1]}), properties={"delta.constraints.odd": "id RLIKE '1'"})
    assert data_files(tmp_path) == set() and not (tmp_path / "_delta_log").exists()


def test_append_only_overwrite_refused_before_writing(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1]}), properties={"delta.appendOnly": "true"})
    before = data_files(tmp_path)
    with pytest.raises(AppendOnlyError):
        write_table(tmp_path, pa.table({"id": [2]}), mode="overwrite")
    assert data_files(tmp_path) == before
    write_table(tmp_path, pa.table({"id": [2]}), mode="append")
    assert read(tmp_path).num_rows == 2


def test_idempotent_txn(tmp_path: Path) -> None:
    write_table(tmp_path, pa.table({"id": [1]}), txn=("job", 1))
    res = write_table(tmp_path, pa.table({"id": [1]}), mode="append", txn=("job", 1))
    assert res.skipped and "already at version 1" in (res.skip_reason or "")
    assert read(tmp_path).num_rows == 1
    write_table(tmp_path, pa.table({"id": [2]}), mode="append", txn=("job", 2))
    assert read(tmp_path).num_rows == 2
    assert deltalog.Table(str(tmp_path)).snapshot().txn_version("job") == 2


def test_in_memory_store(tmp_path: Path) -> None:
    store = InMemoryLogStore("memory://write-test")
    res = write_table("memory://write-test", pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"], store=store)
    snap = deltalog.Table("memory://write-test", store=store).snapshot()
    assert snap.num_files() == 2 and res.version == 0
    for row in snap.add_files().to_pylist():
        assert pq.read_table(pa.BufferReader(store.read(_unquote(row["path"])))).column_names == ["id"]


# ------------------------------------------------------------------------------------------- stats


def test_float_columns_get_delta_bounds_but_no_footer_bounds(tmp_path: Path) -> None:
    # Arrow's footer bounds leave NaN out, and Spark's parquet reader trusts them: it skipped the row group of
    # [1.0, NaN] for x > 5 (Spark's NaN is above every number). The files now carry no float footer bounds;
    # the Delta statistics still bound the floats (across batches, inside structs, nulls counted).
    writer = DataFileWriter(LocalLogStore(str(tmp_path)), StructType.from_arrow_schema(pa.schema(
        [("x", pa.float64()), ("s", pa.struct([("f", pa.float32()), ("n", pa.int64())]))])), [])
    writer.write(pa.table({"x": [1.0, None], "s": pa.array([{"f": 2.5, "n": 1}, None],
                                                           pa.struct([("f", pa.float32()), ("n", pa.int64())]))}))
    writer.write(pa.table({"x": [-3.0, 4.0], "s": pa.array([{"f": float("nan"), "n": 7}, {"f": None, "n": 2}],
                                                           pa.struct([("f", pa.float32()), ("n", pa.int64())]))}))
    (written,) = writer.close()
    stats = json.loads(written.stats or "")
    assert stats["minValues"] == {"x": -3.0, "s": {"n": 1}} and stats["maxValues"] == {"x": 4.0, "s": {"n": 7}}
    assert stats["nullCount"] == {"x": 1, "s": {"f": 2, "n": 1}}  # s.f holds NaN: no bounds, nulls counted
    footer = pq.ParquetFile(tmp_path / written.rel_path).metadata.row_group(0)
    bounded = {footer.column(i).path_in_schema: footer.column(i).statistics is not None for i in range(3)}
    assert bounded == {"x": False, "s.f": False, "s.n": True}


def test_stats_content(tmp_path: Path) -> None:
    long_a, long_b = "a" * 40, "b" * 31 + "\u00e9" * 9
    data = pa.table(
        {
            "i": pa.array([3, None, -7], pa.int32()),
            "s": [long_b, None, long_a],
            "short": ["x", "y", None],
            "d": pa.array([dt.date(2024, 1, 2), dt.date(2020, 5, 6), None]),
            "ts": pa.array(
                [
                    dt.datetime(2024, 1, 1, 0, 0, 0, 999999, tzinfo=UTC),
                    None,
                    dt.datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=UTC),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "ntz": pa.array([dt.datetime(2024, 1, 1, 1), None, None], pa.timestamp("us")),
            "f": [1.5, float("nan"), 0.5],
            "b": [True, False, None],
            "dec": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.50")], pa.decimal128(5, 2)),
            "st": pa.array([{"x": 1}, None, {"x": 9}], pa.struct([("x", pa.int64())])),
            "l": pa.array([[1], None, [2]], pa.list_(pa.int64())),
        }
    )
    write_table(tmp_path, data)
    stats = json.loads(adds(tmp_path, 0)[0]["stats"])
    assert stats["numRecords"] == 3 and stats["tightBounds"] is True
    mins, maxs, nulls = stats["minValues"], stats["maxValues"], stats["nullCount"]
    assert (mins["i"], maxs["i"], nulls["i"]) == (-7, 3, 1)
    assert mins["s"] == "a" * 32 and maxs["s"] == "b" * 31 + "\u00e9" + "\U0010ffff" and nulls["s"] == 1
    assert maxs["s"] >= long_b and mins["s"] <= long_a
    assert (mins["short"], maxs["short"]) == ("x", "y")
    assert (mins["d"], maxs["d"]) == ("2020-05-06", "2024-01-02")
    assert (mins["ts"], maxs["ts"]) == ("1969-12-31T23:59:59.999Z", "2024-01-01T00:00:00.999Z")
    assert (mins["ntz"], maxs["ntz"]) == ("2024-01-01T01:00:00.000", "2024-01-01T01:00:00.000")
    assert "f" not in mins and nulls["f"] == 0  # NaN present: no bounds
    assert "b" not in mins and nulls["b"] == 1
    assert (mins["dec"], maxs["dec"]) == (-3.5, 1.25)
    assert mins["st"] == {"x": 1} and maxs["st"] == {"x": 9} and nulls["st"] == {"x": 1}
    assert "l" not in mins
    # data skipping works with these stats
    assert read(tmp_path, columns=["i"], filter=[("i", ">", 100)]).num_rows == 0


def test_commit_info_metrics(tmp_path: Path) -> None:
    res = write_table(tmp_path, pa.table({"id": [1, 2, 3]}), user_metadata="hello")
    info = log_actions(tmp_path, 0)[0]["commitInfo"]
    assert info["operationMetrics"]["numOutputRows"] == "3"
    assert info["operationMetrics"]["numFiles"] == "1"
    assert info["operationMetrics"]["numOutputBytes"] == str(res.num_bytes)
    assert info["userMetadata"] == "hello"
    assert os.path.getsize(tmp_path / _unquote(adds(tmp_path, 0)[0]["path"])) == res.num_bytes


def test_concurrent_appends_all_commit(tmp_path: Path) -> None:
    import concurrent.futures as cf

    write_table(tmp_path, pa.table({"id": pa.array([], pa.int64()), "w": pa.array([], pa.int64())}))

    def worker(w: int) -> list[int]:
        return [
            write_table(tmp_path, pa.table({"id": [w * 10 + i], "w": [w]}), mode="append").version for i in range(3)
        ]

    with cf.ThreadPoolExecutor(4) as pool:
        versions = sorted(v for vs in pool.map(worker, range(4)) for v in vs)
    assert versions == list(range(1, 13))  # contiguous, no version taken twice
    assert sorted(r["id"] for r in read(tmp_path).to_pylist()) == sorted(w * 10 + i for w in range(4) for i in range(3))
    for v in range(1, 13):
        info = log_actions(tmp_path, v)[0]["commitInfo"]
        assert info["readVersion"] < v and info["isBlindAppend"] is True


def test_many_partitions_limit_open_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.data import write_files

    monkeypatch.setattr(write_files, "MAX_OPEN_FILES", 3)
    batch = pa.record_batch({"id": pa.array(range(10), pa.int64()), "p": [i % 10 for i in range(10)]})
    res = write_table(tmp_path, [batch, batch], partition_by=["p"])
    assert res.num_files >= 10 and read(tmp_path).num_rows == 20
