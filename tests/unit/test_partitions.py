"""Tests of partition value parsing/serialization (scalar and vectorized) and Hive path escaping."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.partitions import (
    HIVE_DEFAULT_PARTITION,
    escape_path_name,
    parse_partition_value,
    partition_array,
    partition_path,
    serialize_partition_value,
    unescape_path_name,
)
from deltalog.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    PrimitiveType,
    StructType,
    parse_schema,
    physical_name,
    to_arrow_type,
)

CONFORMANCE = Path(__file__).parents[3] / "shared" / "conformance"
needs_corpus = pytest.mark.skipif(not CONFORMANCE.is_dir(), reason=f"conformance corpus not at {CONFORMANCE}")

P = PrimitiveType
UTC = dt.UTC

ALL_TYPES: list[DataType] = [
    P(n)
    for n in (
        "string",
        "long",
        "integer",
        "short",
        "byte",
        "float",
        "double",
        "boolean",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
        "void",
    )
] + [DecimalType(10, 2)]

VALID = [
    ("string", "null", "null"),
    ("string", " a b ", " a b "),
    ("long", "-9223372036854775808", -(2**63)),
    ("long", "+12", 12),
    ("integer", "2147483647", 2**31 - 1),
    ("short", "-32768", -32768),
    ("byte", "127", 127),
    ("float", "1.5", 1.5),
    ("double", "-1E10", -1e10),
    ("double", ".5", 0.5),
    ("double", "Infinity", math.inf),
    ("double", "-Infinity", -math.inf),
    ("boolean", "true", True),
    ("boolean", "FALSE", False),
    ("date", "2021-09-08", dt.date(2021, 9, 8)),
    ("date", "0001-01-01", dt.date(1, 1, 1)),
    ("date", "1969-12-31 00:00:00", dt.date(1969, 12, 31)),
    ("date", "2021-01-02T10:11:12.5Z", dt.date(2021, 1, 2)),
    ("timestamp", "2021-09-08 11:11:11", dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC)),
    ("timestamp", "2013-07-05 17:01:00.123456", dt.datetime(2013, 7, 5, 17, 1, 0, 123456, tzinfo=UTC)),
    ("timestamp", "2024-01-01T10:00:00.000000Z", dt.datetime(2024, 1, 1, 10, tzinfo=UTC)),
    ("timestamp", "2024-01-01T10:00:00+02:00", dt.datetime(2024, 1, 1, 8, tzinfo=UTC)),
    ("timestamp", "2024-01-01T10:00:00.5-0130", dt.datetime(2024, 1, 1, 11, 30, 0, 500000, tzinfo=UTC)),
    ("timestamp", "2020-01-01 08:09:10.001", dt.datetime(2020, 1, 1, 8, 9, 10, 1000, tzinfo=UTC)),
    ("timestamp", "2020-01-01 00:00:00.123456789", dt.datetime(2020, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
    ("timestamp", "2020-01-01", dt.datetime(2020, 1, 1, tzinfo=UTC)),
    ("timestamp_ntz", "2021-11-18 02:30:00.123456", dt.datetime(2021, 11, 18, 2, 30, 0, 123456)),
    ("timestamp_ntz", "2021-11-18T02:30:00", dt.datetime(2021, 11, 18, 2, 30)),
    ("binary", "\u0001\u00ffa", b"\x01\xffa"),
    ("binary", "\U0001f608", "\U0001f608".encode()),
    ("void", "anything", None),
]


@pytest.mark.parametrize(("type_name", "raw", "expected"), VALID)
def test_parse_valid_values(type_name: str, raw: str, expected: Any) -> None:
    value = parse_partition_value(raw, P(type_name))
    assert value == expected
    assert type(value) is type(expected)


def test_parse_nan_and_decimals() -> None:
    assert math.isnan(parse_partition_value("NaN", P("double")))
    assert parse_partition_value("-2342342.23423", DecimalType(12, 5)) == Decimal("-2342342.23423")
    value = parse_partition_value("1", DecimalType(5, 2))
    assert value == Decimal("1.00") and str(value) == "1.00"
    assert parse_partition_value("0", DecimalType(1, 0)) == Decimal(0)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=str)
def test_null_and_empty_are_null_for_every_type(dtype: DataType) -> None:
    assert parse_partition_value(None, dtype) is None
    assert parse_partition_value("", dtype) is None
    assert partition_array(pa.array(["", None], pa.string()), dtype).to_pylist() == [None, None]
    assert serialize_partition_value(None, dtype) is None


INVALID = [
    (P("integer"), "1.0", "not an integer"),
    (P("integer"), "1_000", "not an integer"),
    (P("integer"), " 1", "not an integer"),
    (P("integer"), "2147483648", "out of range"),
    (P("byte"), "-129", "out of range"),
    (P("long"), "abc", "not an integer"),
    (P("double"), "1.0.0", "not a number"),
    (P("float"), "1_0", "not a number"),
    (P("boolean"), "1", "expected true or false"),
    (P("boolean"), "yes", "expected true or false"),
    (P("date"), "2021-02-30", "day is out of range"),
    (P("date"), "2021/01/01", "not a date"),
    (P("date"), "2021-01-01 noon", "not a date"),
    (P("timestamp"), "yesterday", "not a timestamp"),
    (P("timestamp"), "2021-01-01 25:00:00", "hour must be"),
    (P("timestamp_ntz"), "2021-01-01T00:00:00Z+01:00", "not a timestamp"),
    (P("timestamp_ntz"), "2021-01-01T00:00:00+01:00", "cannot carry an offset"),
    (DecimalType(5, 2), "1.234", "more than 2 digits after the point"),
    (DecimalType(3, 1), "1234", "more than 3 digits"),
    (DecimalType(38, 0), "1" * 39, "more than 38 digits"),
    (DecimalType(38, 2), "1e200", "more than 38 digits"),
    (DecimalType(5, 2), "abc", "not a decimal number"),
    (DecimalType(5, 2), "NaN", "not a finite number"),
    (P("variant"), "x", "not a valid partition column type"),
    (ArrayType(P("long")), "x", "not a valid partition column type"),
]


@pytest.mark.parametrize(("dtype", "raw", "why"), INVALID, ids=lambda x: str(x)[:30])
def test_invalid_values_name_value_and_type(dtype: DataType, raw: str, why: str) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid partition value") as info:
        parse_partition_value(raw, dtype)
    message = str(info.value)
    assert repr(raw) in message
    assert why in message


@pytest.mark.parametrize(("dtype", "raw", "why"), INVALID[:-2], ids=lambda x: str(x)[:30])
def test_invalid_values_fail_vectorized_too(dtype: DataType, raw: str, why: str) -> None:
    good = {"integer": "1", "byte": "1", "long": "1", "double": "1", "float": "1", "boolean": "true"}
    other = good.get(getattr(dtype, "name", ""))
    with pytest.raises(InvalidArgumentError, match=why) as info:
        partition_array(pa.array([other, raw, raw]), dtype)
    assert repr(raw) in str(info.value)


def test_partition_array_rejects_nested_types() -> None:
    with pytest.raises(InvalidArgumentError, match="array<long> cannot be a partition column type"):
        partition_array(pa.array(["1"]), ArrayType(P("long")))
    with pytest.raises(InvalidArgumentError, match="variant"):
        partition_array(pa.array(["1"]), P("variant"))


@pytest.mark.parametrize(("type_name", "raw", "expected"), VALID)
def test_partition_array_matches_scalar_parse(type_name: str, raw: str, expected: Any) -> None:
    dtype = P(type_name)
    arr = partition_array(pa.array([raw, None, "", raw], pa.string()), dtype)
    assert arr.type == to_arrow_type(dtype)
    assert arr.to_pylist() == [expected, None, None, expected]


def test_partition_array_mixed_timestamp_forms() -> None:
    raw = pa.array(["2021-01-01 00:00:00", "2021-01-01T00:00:00.123456Z", "2021-01-01 10:00:00+08:00", None])
    arr = partition_array(raw, P("timestamp"))
    assert arr.type == pa.timestamp("us", tz="UTC")
    assert arr.to_pylist() == [
        dt.datetime(2021, 1, 1, tzinfo=UTC),
        dt.datetime(2021, 1, 1, 0, 0, 0, 123456, tzinfo=UTC),
        dt.datetime(2021, 1, 1, 2, tzinfo=UTC),
        None,
    ]


def test_partition_array_inputs() -> None:
    dtype = DecimalType(6, 3)
    expected = [Decimal("1.500"), None, Decimal("-2.000")]
    chunked = pa.chunked_array([pa.array(["1.5"]), pa.array([None, "-2"])])
    assert partition_array(chunked, dtype).to_pylist() == expected
    assert partition_array(pa.array(["1.5", "", "-2"]).dictionary_encode(), dtype).to_pylist() == expected
    assert partition_array(pa.array(["1.5", None, "-2"], pa.large_string()), dtype).to_pylist() == expected
    assert partition_array(pa.array([], pa.string()), dtype).to_pylist() == []


def test_partition_array_binary_code_points_and_booleans() -> None:
    binary = partition_array(pa.array(["ab", "\u00e9", None]), P("binary"))
    assert binary.to_pylist() == [b"ab", b"\xe9", None]
    booleans = partition_array(pa.array(["True", "false", "TRUE", None]), P("boolean"))
    assert booleans.to_pylist() == [True, False, True, None]


def test_partition_array_large_input_uses_few_distinct_values() -> None:
    raw = pa.array(["2021-01-01T00:00:00+01:00", "2021-01-02 00:00:00.5Z"] * 5000)
    arr = partition_array(raw, P("timestamp"))
    assert len(arr) == 10000
    assert arr[1].as_py() == dt.datetime(2021, 1, 2, 0, 0, 0, 500000, tzinfo=UTC)


# ------------------------------------------------------------------------------------------ serialize

SERIALIZE = [
    (P("string"), "x y", "x y"),
    (P("long"), 2**40, "1099511627776"),
    (P("byte"), -3, "-3"),
    (P("double"), 1.5, "1.5"),
    (P("float"), 2, "2.0"),
    (P("double"), math.nan, "NaN"),
    (P("double"), -math.inf, "-Infinity"),
    (P("boolean"), True, "true"),
    (P("boolean"), False, "false"),
    (P("date"), dt.date(2021, 1, 2), "2021-01-02"),
    (P("date"), dt.datetime(2021, 1, 2, 5), "2021-01-02"),
    (P("timestamp"), dt.datetime(2021, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "2021-01-02 03:04:05.000006"),
    (
        P("timestamp"),
        dt.datetime(2021, 1, 2, 3, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "2021-01-02 01:00:00.000000",
    ),
    (P("timestamp"), dt.datetime(2021, 1, 2, 3), "2021-01-02 03:00:00.000000"),
    (P("timestamp_ntz"), dt.datetime(2021, 1, 2, 3, 0, 0, 120000), "2021-01-02 03:00:00.120000"),
    (DecimalType(10, 2), Decimal("1.5"), "1.50"),
    (DecimalType(10, 2), 3, "3.00"),
    (DecimalType(10, 2), Decimal("-0.01"), "-0.01"),
    (DecimalType(38, 0), Decimal("12345678901234567890123456789"), "12345678901234567890123456789"),
    (P("binary"), b"\x00\xff", "\u0000\u00ff"),
    (P("timestamp"), "2024-01-01T10:00:00Z", "2024-01-01 10:00:00.000000"),
    (P("integer"), "007", "7"),
]


@pytest.mark.parametrize(("dtype", "value", "expected"), SERIALIZE, ids=lambda x: str(x)[:30])
def test_serialize(dtype: DataType, value: Any, expected: str) -> None:
    text = serialize_partition_value(value, dtype)
    assert text == expected
    again = parse_partition_value(text, dtype)
    assert serialize_partition_value(again, dtype) == text


@pytest.mark.parametrize(
    ("dtype", "value", "why"),
    [
        (P("integer"), 2**31, "out of range"),
        (P("integer"), True, "expected int"),
        (P("long"), 1.0, "expected int"),
        (P("boolean"), 1, "expected bool"),
        (P("date"), 20210101, "expected datetime.date"),
        (P("timestamp_ntz"), dt.datetime(2021, 1, 1, tzinfo=UTC), "must be naive"),
        (P("timestamp"), dt.date(2021, 1, 1), "expected datetime.datetime"),
        (DecimalType(3, 1), Decimal("100.5"), "more than 3 digits"),
        (DecimalType(3, 1), Decimal("1.25"), "more than 1 digits after the point"),
        (P("binary"), 5, "expected bytes"),
        (P("string"), 5, "expected str"),
        (P("integer"), "x", "not an integer"),
        (StructType(()), 1, "not a valid partition column type"),
    ],
    ids=lambda x: str(x)[:30],
)
def test_serialize_errors(dtype: DataType, value: Any, why: str) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid partition value") as info:
        serialize_partition_value(value, dtype)
    assert why in str(info.value)


# ---------------------------------------------------------------------------------------- Hive paths


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("plain value-1_2.3", "plain value-1_2.3"),
        ("a/b", "a%2Fb"),
        ("/%20%f", "%2F%2520%25f"),
        ("1969-01-01 00:00:00", "1969-01-01 00%3A00%3A00"),
        ("\"#%'*/:=?\\\x7f{[]^", "%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%5E"),
        ("\x00\x01\n\x1f", "%00%01%0A%1F"),
        ("é😈 }~!", "é😈 }~!"),
    ],
)
def test_escape_round_trip(raw: str, escaped: str) -> None:
    assert escape_path_name(raw) == escaped
    assert unescape_path_name(escaped) == raw


def test_unescape_leaves_malformed_escapes() -> None:
    assert unescape_path_name("100%") == "100%"
    assert unescape_path_name("%4") == "%4"
    assert unescape_path_name("%G1%41") == "%G1A"
    assert unescape_path_name("%2f") == "/"


def test_partition_path() -> None:
    assert partition_path([], {}) == ""
    values = {"a": "1", "b": None, "c": "", "d=x": "p/q"}
    assert partition_path(["a", "b", "c", "d=x"], values) == (
        f"a=1/b={HIVE_DEFAULT_PARTITION}/c={HIVE_DEFAULT_PARTITION}/d%3Dx=p%2Fq/"
    )
    with pytest.raises(InvalidArgumentError, match="no value for partition column 'zz'"):
        partition_path(["a", "zz"], values)


# ---------------------------------------------------------------------------------------- conformance


def _corpus_adds() -> list[tuple[str, StructType, str, list[str], dict[str, Any], str]]:
    """(table, schema, mode, partition columns, partitionValues, path) of every partitioned add."""
    out = []
    for log in sorted(CONFORMANCE.rglob("_delta_log")) if CONFORMANCE.is_dir() else []:
        meta = None
        schema = None
        for commit in sorted(log.glob("*.json")):
            for line in commit.read_text().splitlines():
                if not line.strip():
                    continue
                action = json.loads(line)
                if "metaData" in action:
                    meta = action["metaData"]
                    try:
                        schema = parse_schema(meta["schemaString"])
                    except Exception:
                        schema = None
                if "add" in action and meta and schema and meta.get("partitionColumns"):
                    mode = meta.get("configuration", {}).get("delta.columnMapping.mode", "none")
                    add = action["add"]
                    table = str(log.parent.relative_to(CONFORMANCE))
                    out.append((table, schema, mode, meta["partitionColumns"], add["partitionValues"], add["path"]))
    return out


@needs_corpus
def test_corpus_partition_values_parse_alike_scalar_and_vectorized() -> None:
    adds = _corpus_adds()
    assert len(adds) > 50
    columns: dict[tuple[str, str], tuple[DataType, list[str | None]]] = {}
    for table, schema, mode, cols, values, _ in adds:
        for c in cols:
            f = schema.field(c)
            raw = values.get(physical_name(f, mode), values.get(c))
            columns.setdefault((table, c), (f.type, []))[1].append(raw)
    for (table, c), (dtype, raws) in columns.items():
        scalar = [parse_partition_value(r, dtype) for r in raws]
        vector = partition_array(pa.array(raws, pa.string()), dtype).to_pylist()
        assert vector == scalar, (table, c)
        for value in scalar:
            again = parse_partition_value(serialize_partition_value(value, dtype), dtype)
            assert again == value or (again != again and value != value), (table, c, value)


@needs_corpus
def test_corpus_partition_directories() -> None:
    checked = 0
    for table, schema, mode, cols, values, path in _corpus_adds():
        if mode != "none" or "=" not in path or "://" in path or path.startswith("/"):
            continue
        iso_ts = any(
            schema.field(c).type in (P("timestamp"), P("timestamp_ntz")) and "T" in (values.get(c) or "") for c in cols
        )
        if iso_ts:  # the directory was named from a differently formatted timestamp than the value
            continue
        assert unquote(path).startswith(partition_path(cols, values)), (table, path)
        checked += 1
    assert checked > 20


@needs_corpus
def test_dat_multi_partitioned_table_values() -> None:
    base = CONFORMANCE / "dat-5b772f7" / "reader_tests" / "generated" / "multi_partitioned"
    expected = pq.read_table(base / "expected" / "latest" / "table_content.parquet").to_pylist()
    want = {(r["letter"], r["date"], r["data"]) for r in expected}
    dirs = {p.name for p in (base / "delta").iterdir() if p.name.startswith("letter=")}
    assert "letter=%2F%2520%25f" in dirs
    assert unescape_path_name("%2F%2520%25f") == "/%20%f"
    seen = set()
    for table, schema, _, cols, values, _ in _corpus_adds():
        if table.endswith("multi_partitioned/delta"):
            typed = tuple(parse_partition_value(values.get(c), schema.field(c).type) for c in cols)
            seen.add(typed)
    assert want <= seen


@needs_corpus
@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("kernel-rs-golden/kernel-timestamp-int96/delta", "part"),
        ("kernel-rs-golden/kernel-timestamp-pst/delta", "part"),
        ("delta-golden-extra/kernel-timestamp-partition-col-ISO8601", "ts"),
    ],
)
def test_timestamp_partition_values_are_utc(table: str, column: str) -> None:
    facts = json.loads((CONFORMANCE / "EXPECTED.json").read_text())[table]
    index = facts["columns"].index(column)
    want = {row[index] for row in facts["rows_sorted"]}
    raws = [values.get(column) for t, _, _, _, values, _ in _corpus_adds() if t == table]
    typed = partition_array(pa.array(raws, pa.string()), P("timestamp"))
    micros = typed.cast(pa.int64()).to_pylist()
    assert set(micros) == want
