"""Min/max file skipping vectorized over every file's statistics (:func:`deltalog.data.filters.prune_files`)
decides exactly as the file-by-file comparison does, for numeric, string and date columns, with missing,
null, all-null and unusable statistics, and with literals of another kind than the column (a fractional
value on an integer column is compared exactly, not truncated)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.data.filters import Condition, _may_match, stats_keep
from deltalog.protocol.schema import parse_schema

SCHEMA = parse_schema(json.dumps({"type": "struct", "fields": [
    {"name": n, "type": t, "nullable": True, "metadata": {}}
    for n, t in (("i", "long"), ("b", "byte"), ("d", "double"), ("s", "string"), ("day", "date"))]}))

_VALUES = {
    "i": st.integers(-50, 50), "b": st.integers(-5, 5), "d": st.floats(-10, 10, allow_nan=False),
    "s": st.text(alphabet="abcé\u00ff", max_size=3), "day": st.dates(dt.date(2024, 1, 1), dt.date(2024, 1, 20)),
}


def _stat(column: str, value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.date) else value


@st.composite
def _stats(draw: Any) -> str | None:
    kind = draw(st.sampled_from(["ok", "ok", "ok", "none", "empty", "bad"]))
    if kind != "ok":
        return {"none": None, "empty": "", "bad": "{not json"}[kind]
    n = draw(st.integers(0, 5))
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for column, values in _VALUES.items():
        if draw(st.booleans()):
            a, b = sorted([draw(values), draw(values)])
            mins[column], maxs[column] = _stat(column, a), _stat(column, b)
            if draw(st.integers(0, 9)) == 0:
                maxs[column] = None
        nulls[column] = draw(st.sampled_from([0, n, None]))
    return json.dumps({"numRecords": n, "minValues": mins, "maxValues": maxs, "nullCount": nulls})


@st.composite
def _conditions(draw: Any) -> list[Condition]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        column = draw(st.sampled_from(sorted(_VALUES)))
        op = draw(st.sampled_from(["=", "<", "<=", ">", ">=", "in"]))
        values = _VALUES[column]
        if column in ("i", "b") and draw(st.booleans()):  # fractional literals on integer columns
            values = st.floats(-60, 60, allow_nan=False)
        elif column == "d" and draw(st.booleans()):  # integers on a double column
            values = st.integers(-12, 12)
        value = draw(values)
        if op == "in":
            value = tuple([value, *draw(st.lists(values, max_size=2))])
        out.append(Condition(column, op, value))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(_stats(), min_size=1, max_size=12), _conditions())
def test_vectorized_skipping_matches_the_per_file_comparison(stats: list[str | None], conds: list[Condition]) -> None:
    kept = stats_keep(pa.array(stats, pa.string()), conds, SCHEMA, "none")
    want = [not s or _may_match(s, conds, SCHEMA, "none") for s in stats]
    assert kept.tolist() == want


def test_unreadable_statistics_parse_as_null_next_to_missing_ones() -> None:
    """A file whose stats are not JSON gets null parsed stats (checkpoint ``stats_parsed`` and skipping
    alike), not zeros -- zeros would claim an empty file."""
    from deltalog.log.stats_parsed import parse_stats

    target = pa.struct([pa.field("numRecords", pa.int64()), pa.field("minValues", pa.struct([("i", pa.int64())]))])
    parsed = parse_stats(pa.array([None, "{not json", '{"numRecords": 2, "minValues": {"i": 4}}'], pa.string()),
                         target)
    assert parsed.to_pylist() == [None, None, {"numRecords": 2, "minValues": {"i": 4}}]
