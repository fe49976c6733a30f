"""Tests of per-file statistics: JSON parsing/writing, checkpoint stats_parsed, typed stat values."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    PrimitiveType,
    StructType,
    parse_schema,
    physical_name,
)
from deltalog.protocol.stats import FileStats, stat_value, stats_parsed_to_json

CONFORMANCE = Path(__file__).parents[3] / "shared" / "conformance"
needs_corpus = pytest.mark.skipif(not CONFORMANCE.is_dir(), reason=f"conformance corpus not at {CONFORMANCE}")

P = PrimitiveType
UTC = dt.UTC

SPARK_STATS = (
    '{"numRecords":3,"minValues":{"id":0,"s":{"x":"a"},"d":"2000-01-01","t":"2000-01-01T00:00:00.000-08:00"},'
    '"maxValues":{"id":2,"s":{"x":"z"},"d":"2000-01-03","t":"2000-01-02T00:00:00.000-08:00"},'
    '"nullCount":{"id":0,"s":{"x":1},"d":0,"t":3}}'
)


# ------------------------------------------------------------------------------------------ FileStats


def test_from_json_reads_every_part() -> None:
    stats = FileStats.from_json(SPARK_STATS)
    assert stats is not None
    assert stats.num_records == 3
    assert stats.min_values["s"] == {"x": "a"}
    assert stats.max_values["id"] == 2
    assert stats.null_count == {"id": 0, "s": {"x": 1}, "d": 0, "t": 3}
    assert stats.tight_bounds is None
    assert stats.to_json() == SPARK_STATS


@pytest.mark.parametrize("text", [None, ""])
def test_absent_stats(text: str | None) -> None:
    assert FileStats.from_json(text) is None


def test_to_json_omits_absent_parts_and_keeps_key_order() -> None:
    assert FileStats().to_json() == "{}"
    stats = FileStats(tight_bounds=False, null_count={"a": 1}, num_records=5)
    assert stats.to_json() == '{"numRecords":5,"nullCount":{"a":1},"tightBounds":false}'
    assert FileStats.from_json(stats.to_json()) == stats


def test_wide_decimals_and_special_floats_survive_a_round_trip() -> None:
    text = (
        '{"numRecords":1,"minValues":{"d":-12345678901234567890.123456789,"f":0.1,"n":NaN,"e":1e300},'
        '"maxValues":{"i":Infinity,"j":-Infinity,"u":"é\\"x"}}'
    )
    stats = FileStats.from_json(text)
    assert stats is not None
    assert stats.min_values["d"] == Decimal("-12345678901234567890.123456789")
    assert isinstance(stats.min_values["f"], float)
    assert math.isnan(stats.min_values["n"])
    again = FileStats.from_json(stats.to_json())
    assert again is not None
    assert again.min_values["d"] == Decimal("-12345678901234567890.123456789")
    assert again.min_values["e"] == 1e300
    assert again.max_values == {"i": math.inf, "j": -math.inf, "u": 'é"x'}


def test_file_stats_is_hashable_by_scalars() -> None:
    assert hash(FileStats(1, {"a": 1})) == hash(FileStats(1, {"a": 2}))
    assert FileStats(1, {"a": 1}) != FileStats(1, {"a": 2})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "statistics are not valid JSON"),
        ('{"numRecords":1', "statistics are not valid JSON"),
        ("[1,2]", "statistics must be a JSON object"),
        ('{"numRecords":"1"}', "numRecords must be an integer, got '1'"),
        ('{"numRecords":true}', "numRecords must be an integer, got True"),
        ('{"numRecords":1.5}', "numRecords must be an integer, got 1.5"),
        ('{"minValues":[1]}', "minValues must be an object"),
        ('{"nullCount":3}', "nullCount must be an object"),
        ('{"tightBounds":"yes"}', "tightBounds must be a boolean"),
    ],
)
def test_malformed_stats_raise_with_location(text: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as info:
        FileStats.from_json(text, table="/t", version=7, file="_delta_log/7.json", line=3)
    assert info.value.version == 7 and info.value.line == 3
    assert "file _delta_log/7.json, line 3" in str(info.value)


def test_to_json_rejects_unknown_values() -> None:
    with pytest.raises(InvalidArgumentError, match="cannot write"):
        FileStats(1, {"a": object()}).to_json()


def test_to_json_writes_python_dates_and_bytes() -> None:
    stats = FileStats(
        1,
        {"d": dt.date(2021, 1, 2), "t": dt.datetime(2021, 1, 2, 3, tzinfo=UTC), "n": dt.datetime(2021, 1, 2)},
        {"b": b"\x01a", "l": [1, (2, None)]},
    )
    assert json.loads(stats.to_json()) == {
        "numRecords": 1,
        "minValues": {"d": "2021-01-02", "t": "2021-01-02T03:00:00.000000Z", "n": "2021-01-02T00:00:00.000000"},
        "maxValues": {"b": "\u0001a", "l": [1, [2, None]]},
    }


# --------------------------------------------------------------------------------------- stats_parsed


def _stats_parsed_array() -> pa.StructArray:
    values_type = pa.struct(
        [
            ("i", pa.int32()),
            ("s", pa.string()),
            ("d", pa.date32()),
            ("t", pa.timestamp("us", tz="UTC")),
            ("tms", pa.timestamp("ms", tz="UTC")),
            ("ntz", pa.timestamp("us")),
            ("ns", pa.timestamp("ns", tz="UTC")),
            ("dec", pa.decimal128(25, 3)),
            ("f", pa.float64()),
            ("nested", pa.struct([("x", pa.int64()), ("when", pa.date32())])),
        ]
    )
    count_type = pa.struct([("i", pa.int64()), ("nested", pa.struct([("x", pa.int64())]))])
    typ = pa.struct(
        [
            ("numRecords", pa.int64()),
            ("minValues", values_type),
            ("maxValues", values_type),
            ("nullCount", count_type),
            ("tightBounds", pa.bool_()),
        ]
    )
    ts = dt.datetime(2021, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    full = {
        "i": 1,
        "s": 'a"b',
        "d": dt.date(2021, 1, 2),
        "t": ts,
        "tms": dt.datetime(2021, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        "ntz": dt.datetime(2021, 1, 2, 3, 4, 5),
        "ns": ts,
        "dec": Decimal("1234567890123456789012.345"),
        "f": 0.5,
        "nested": {"x": 7, "when": dt.date(1969, 12, 31)},
    }
    sparse = {k: None for k in full} | {"i": 5, "nested": {"x": None, "when": None}}
    rows = [
        None,
        {"numRecords": 2, "minValues": full, "maxValues": sparse, "nullCount": {"i": 0, "nested": {"x": 1}}},
        {"numRecords": 0, "minValues": None, "maxValues": None, "nullCount": None, "tightBounds": False},
    ]
    return pa.array(rows, typ)  # type: ignore[return-value]


EXPECTED_ROW = {
    "numRecords": 2,
    "minValues": {
        "i": 1,
        "s": 'a"b',
        "d": "2021-01-02",
        "t": "2021-01-02T03:04:05.678901Z",
        "tms": "2021-01-02T03:04:05.678Z",
        "ntz": "2021-01-02T03:04:05.000000",
        "ns": "2021-01-02T03:04:05.678901Z",
        "dec": Decimal("1234567890123456789012.345"),
        "f": Decimal("0.5"),
        "nested": {"x": 7, "when": "1969-12-31"},
    },
    "maxValues": {"i": 5},
    "nullCount": {"i": 0, "nested": {"x": 1}},
}


def test_stats_parsed_to_json() -> None:
    out = stats_parsed_to_json(_stats_parsed_array())
    assert out.type == pa.string()
    rows = out.to_pylist()
    assert rows[0] is None
    assert json.loads(rows[1], parse_float=Decimal) == EXPECTED_ROW
    assert '"dec":1234567890123456789012.345' in rows[1]
    assert rows[2] == '{"numRecords":0,"tightBounds":false}'
    parsed = FileStats.from_json(rows[1])
    assert parsed is not None and parsed.min_values["dec"] == Decimal("1234567890123456789012.345")


def test_stats_parsed_to_json_sliced_and_chunked() -> None:
    arr = _stats_parsed_array()
    whole = stats_parsed_to_json(arr).to_pylist()
    assert stats_parsed_to_json(arr.slice(1)).to_pylist() == whole[1:]
    chunked = pa.chunked_array([arr.slice(0, 2), arr.slice(2)])
    assert stats_parsed_to_json(chunked).to_pylist() == whole


def test_stats_parsed_to_json_empty() -> None:
    assert stats_parsed_to_json(pa.array([], pa.struct([("numRecords", pa.int64())]))).to_pylist() == []


# ------------------------------------------------------------------------------------------ stat_value

STAT_VALUES = [
    (P("string"), "abc", "abc"),
    (P("long"), 9223372036854775807, 2**63 - 1),
    (P("integer"), 3.0, 3),
    (P("short"), "12", 12),
    (P("byte"), -1, -1),
    (P("double"), 1, 1.0),
    (P("float"), 0.25, 0.25),
    (P("double"), "Infinity", math.inf),
    (P("double"), Decimal("0.5"), 0.5),
    (P("boolean"), True, True),
    (P("date"), "2000-01-01", dt.date(2000, 1, 1)),
    (P("timestamp"), "2000-01-01T00:00:00.000-08:00", dt.datetime(2000, 1, 1, 8, tzinfo=UTC)),
    (P("timestamp"), "1970-01-01T00:00:01.000Z", dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)),
    (P("timestamp"), "1970-01-01T00:00:01.123456", dt.datetime(1970, 1, 1, 0, 0, 1, 123456, tzinfo=UTC)),
    (P("timestamp_ntz"), "2021-11-18T02:30:00.123", dt.datetime(2021, 11, 18, 2, 30, 0, 123000)),
    (P("timestamp_ntz"), "2021-11-18T02:30:00.123+01:00", dt.datetime(2021, 11, 18, 1, 30, 0, 123000)),
    (DecimalType(5, 2), 1.5, Decimal("1.5")),
    (DecimalType(5, 2), 0.1, Decimal("0.1")),
    (DecimalType(5, 0), 3, Decimal(3)),
    (DecimalType(38, 3), "12345678901234567890123.456", Decimal("12345678901234567890123.456")),
    (DecimalType(38, 3), Decimal("1.5"), Decimal("1.5")),
    (P("binary"), "\u0001a", b"\x01a"),
    (P("variant"), "0rJld6c{^fC42", "0rJld6c{^fC42"),
]


@pytest.mark.parametrize(("dtype", "raw", "expected"), STAT_VALUES, ids=lambda x: str(x)[:30])
def test_stat_value(dtype: DataType, raw: Any, expected: Any) -> None:
    value = stat_value(dtype, raw)
    assert value == expected
    assert type(value) is type(expected)


def test_stat_value_none_and_nan() -> None:
    assert stat_value(P("long"), None) is None
    assert math.isnan(stat_value(P("double"), math.nan))
    assert math.isnan(stat_value(P("double"), "NaN"))


@pytest.mark.parametrize(
    ("dtype", "raw", "why"),
    [
        (P("string"), 5, "expected a string"),
        (P("long"), True, "expected an integer"),
        (P("long"), 1.5, "not integral"),
        (P("long"), "x", "invalid literal"),
        (P("long"), math.inf, "OverflowError"),
        (P("double"), [1], "expected a number"),
        (P("boolean"), "true", "expected a boolean"),
        (P("date"), 20000101, "expected a string"),
        (P("date"), "2000-13-01", "month must be"),
        (P("timestamp"), "noon", "not a timestamp"),
        (DecimalType(5, 2), "abc", "ConversionSyntax"),
        (DecimalType(5, 2), False, "expected a number"),
        (ArrayType(P("long")), [1], "no min/max statistics"),
        (StructType(()), {}, "no min/max statistics"),
    ],
    ids=lambda x: str(x)[:30],
)
def test_stat_value_errors_name_value_and_type(dtype: DataType, raw: Any, why: str) -> None:
    with pytest.raises(InvalidArgumentError, match="invalid statistics value") as info:
        stat_value(dtype, raw)
    message = str(info.value)
    assert repr(raw) in message
    assert why in message or (why == "OverflowError" and "infinity" in message)


# ----------------------------------------------------------------------------------------- conformance


def _typed(stats: dict[str, Any], schema: StructType, mode: str) -> dict[str, Any]:
    """min/max values converted with stat_value, keyed by logical names, recursing into structs."""
    out: dict[str, Any] = {}
    for f in schema:
        key = physical_name(f, mode)
        if key not in stats:
            continue
        raw = stats[key]
        if isinstance(f.type, StructType) and isinstance(raw, dict):
            out[f.name] = _typed(raw, f.type, mode)
        elif not isinstance(raw, dict) and f.type != P("variant"):
            out[f.name] = stat_value(f.type, raw)
    return out


def _logs() -> list[Path]:
    return sorted(CONFORMANCE.rglob("_delta_log")) if CONFORMANCE.is_dir() else []


def _json_adds(log: Path) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The last metaData of the JSON commits and the stats of every added path."""
    meta = None
    stats: dict[str, str] = {}
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "metaData" in action:
                meta = action["metaData"]
            if "add" in action and action["add"].get("stats"):
                stats[action["add"]["path"]] = action["add"]["stats"]
    return meta, stats


def _comparable(a: Any, b: Any) -> bool:
    if isinstance(a, float) and (math.isnan(a) or (isinstance(b, float) and math.isnan(b))):
        return False
    return type(a) is type(b) and not isinstance(a, (dict, bytes))


@needs_corpus
def test_corpus_stats_parse_type_and_order() -> None:
    checked = 0
    for log in _logs():
        meta, all_stats = _json_adds(log)
        if meta is None:
            continue
        try:
            schema = parse_schema(meta["schemaString"])
        except Exception:
            continue
        mode = meta.get("configuration", {}).get("delta.columnMapping.mode", "none")
        for text in all_stats.values():
            stats = FileStats.from_json(text)
            assert stats is not None
            original = {k: v for k, v in json.loads(text).items() if v not in ({}, None)}
            assert json.loads(stats.to_json()) == original  # empty parts are left out
            lo, hi = _typed(dict(stats.min_values), schema, mode), _typed(dict(stats.max_values), schema, mode)
            for name, low in lo.items():
                high = hi.get(name)
                if _comparable(low, high):
                    assert low <= high, (log, name, low, high)
                    checked += 1
    assert checked > 100


@needs_corpus
def test_corpus_stats_parsed_agree_with_json_stats() -> None:
    compared = 0
    for log in _logs():
        checkpoints = [p for p in log.glob("*.checkpoint*.parquet")]
        meta, json_stats = _json_adds(log)
        if not checkpoints or meta is None:
            continue
        try:
            schema = parse_schema(meta["schemaString"])
        except Exception:
            continue
        mode = meta.get("configuration", {}).get("delta.columnMapping.mode", "none")
        for cp in checkpoints:
            table = pq.read_table(cp)
            if "add" not in table.column_names:
                continue
            adds = table.column("add").combine_chunks()
            if adds.type.get_field_index("stats_parsed") < 0:
                continue
            ours = stats_parsed_to_json(adds.field("stats_parsed")).to_pylist()
            for path, text in zip(adds.field("path").to_pylist(), ours, strict=True):
                if path is None or text is None or path not in json_stats:
                    continue
                mine, theirs = FileStats.from_json(text), FileStats.from_json(json_stats[path])
                assert mine is not None and theirs is not None
                assert mine.num_records == theirs.num_records
                assert mine.null_count == theirs.null_count
                for a, b in ((mine.min_values, theirs.min_values), (mine.max_values, theirs.max_values)):
                    assert _typed(dict(a), schema, mode) == _typed(dict(b), schema, mode), (cp, path)
                compared += 1
    assert compared >= 5
