"""CHECK constraints, column invariants and NOT NULL columns."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pyarrow as pa
import pytest

from deltalog.protocol.actions import Format, Metadata
from deltalog.txn.constraints import (
    ConstraintViolationError,
    UnsupportedExpressionError,
    check_expressions,
    check_not_null,
    check_table_constraints,
    compile_expression,
    table_constraints,
)

DATA = pa.table(
    {
        "id": pa.array([1, 2, 3, None], pa.int64()),
        "name": ["a", "bob", None, "it's"],
        "price": pa.array(
            [decimal.Decimal("1.50"), decimal.Decimal("2.00"), None, decimal.Decimal("0.10")], pa.decimal128(10, 2)
        ),
        "ratio": [0.5, 1.5, 2.5, None],
        "flag": [True, False, None, True],
        "day": pa.array([dt.date(2024, 1, 1), dt.date(2023, 6, 1), None, dt.date(1899, 1, 1)], pa.date32()),
        "ts": pa.array(
            [dt.datetime(2024, 1, 1, 12), None, None, dt.datetime(2020, 1, 1)], pa.timestamp("us", tz="UTC")
        ),
        "s": pa.array([{"x": 1}, {"x": 5}, None, {"x": None}], pa.struct([("x", pa.int32())])),
    }
)


def ev(sql: str, data: pa.Table = DATA) -> list[Any]:
    return compile_expression(sql).evaluate(data).to_pylist()


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("id > 1", [False, True, True, None]),
        ("id >= 2 AND id <> 3", [False, True, False, None]),
        ("id = 1 OR id IS NULL", [True, False, False, True]),
        ("NOT (id < 2)", [False, True, True, None]),
        ("id IS NOT NULL", [True, True, True, False]),
        ("id IN (1, 3)", [True, False, True, None]),
        ("id NOT IN (1, 3)", [False, True, False, None]),
        ("id BETWEEN 2 AND 3", [False, True, True, None]),
        ("id NOT BETWEEN 2 AND 3", [True, False, False, None]),
        ("id + 1 = 2 * id", [True, False, False, None]),
        ("id % 2 = 1", [True, False, True, None]),
        ("id / 2 = 0.5", [True, False, False, None]),
        ("-id < 0", [True, True, True, None]),
        ("(id - 1) * 2 >= 2", [False, True, True, None]),
        ("name = 'bob'", [False, True, None, False]),
        ("name = 'it''s'", [False, False, None, True]),
        ('name = "a"', [True, False, None, False]),
        ("name LIKE 'b%'", [False, True, None, False]),
        ("name NOT LIKE 'b%'", [True, False, None, True]),
        ("length(name) = 3", [False, True, None, False]),
        ("upper(name) = 'BOB'", [False, True, None, False]),
        ("price > 1", [True, True, None, False]),
        ("price >= 1.5", [True, True, None, False]),
        ("ratio < 1.0E0", [True, False, False, None]),
        ("flag", [True, False, None, True]),
        ("flag = true", [True, False, None, True]),
        ("flag = 'false'", [False, True, None, False]),
        ("day > '1900-01-01'", [True, True, None, False]),
        ("day >= DATE '2024-01-01'", [True, False, None, False]),
        ("ts > '2021-01-01'", [True, None, None, False]),
        ("ts < TIMESTAMP '2021-01-01 00:00:00'", [False, None, None, True]),
        ("s.x > 2", [False, True, None, None]),
        ("`ID` > 2", [False, False, True, None]),
        ("coalesce(id, 0) >= 0", [True, True, True, True]),
        ("id <=> NULL", [False, False, False, True]),
        ("abs(-id) = id", [True, True, True, None]),
        ("isnull(name)", [False, False, True, False]),
        ("startswith(name, 'b')", [False, True, None, False]),
        ("endswith(name, 's')", [False, False, None, True]),
        ("contains(name, 'o')", [False, True, None, False]),
        ("id IS DISTINCT FROM 2", [True, False, True, True]),
        ("id IS NOT DISTINCT FROM NULL", [False, False, False, True]),
        ("date_add(day, 1) = DATE '2024-01-02'", [True, False, None, False]),
        ("date_sub(day, 365) < '2023-01-02'", [True, True, None, True]),
        ("datediff(day, '2023-12-31') = 1", [True, False, None, False]),
        ("day < current_date()", [True, True, None, True]),
        ("ts < current_timestamp()", [True, None, None, True]),
    ],
)
def test_expression_subset(sql: str, expected: list[Any]) -> None:
    assert ev(sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "id >",
        "id = (1",
        "foo(id) > 1",
        "missing > 1",
        "CASE WHEN id > 1 THEN true END",
        "id @ 3",
        "s.y = 1",
        "name LIKE id",
        "startswith(name, name)",
        "startswith(id, 'a')",
        "id IS DISTINCT 2",
        "",
    ],
)
def test_unsupported_or_malformed_expressions_raise(sql: str) -> None:
    with pytest.raises(UnsupportedExpressionError):
        check_expressions(DATA, {"CHECK constraint c": sql})


def test_unsupported_constraint_error_names_it() -> None:
    with pytest.raises(UnsupportedExpressionError, match=r"CHECK constraint fancy \(regexp_like\(name, 'a'\)\)"):
        check_expressions(DATA, {"CHECK constraint fancy": "regexp_like(name, 'a')"}, table_name="t")


def test_non_boolean_constraint_refused() -> None:
    with pytest.raises(UnsupportedExpressionError, match="boolean"):
        check_expressions(DATA, {"c": "id + 1"})


def test_violation_message_names_constraint_and_row() -> None:
    with pytest.raises(ConstraintViolationError) as err:
        check_expressions(DATA, {"CHECK constraint small": "id < 3"}, table_name="t")
    msg = str(err.value)
    assert "CHECK constraint small (id < 3)" in msg and "2 of 4 rows" in msg and "id = 3" in msg


def test_null_result_is_a_violation() -> None:
    with pytest.raises(ConstraintViolationError, match="1 of 4 rows"):
        check_expressions(DATA, {"c": "id > 0"})


def _metadata(schema_fields: list[dict[str, Any]], **conf: str) -> Metadata:
    return Metadata(
        id="t",
        format=Format(),
        schemaString=json.dumps({"type": "struct", "fields": schema_fields}),
        configuration=conf,
    )


def test_invariants_and_check_constraints_from_metadata() -> None:
    inv = json.dumps({"expression": {"expression": "x > 3"}})
    md = _metadata(
        [
            {"name": "x", "type": "integer", "nullable": True, "metadata": {"delta.invariants": inv}},
            {
                "name": "st",
                "type": {
                    "type": "struct",
                    "fields": [
                        {
                            "name": "y",
                            "type": "integer",
                            "nullable": True,
                            "metadata": {"delta.invariants": json.dumps({"expression": {"expression": "st.y < 10"}})},
                        },
                    ],
                },
                "nullable": True,
                "metadata": {},
            },
        ],
        **{"delta.constraints.even": "x % 2 = 0", "other.prop": "1"},
    )
    assert table_constraints(md) == {
        "CHECK constraint even": "x % 2 = 0",
        "invariant on column x": "x > 3",
        "invariant on column st.y": "st.y < 10",
    }
    good = pa.table({"x": [4, 6], "st": [{"y": 1}, {"y": 2}]})
    check_table_constraints(good, md)
    with pytest.raises(ConstraintViolationError, match="invariant on column x"):
        check_table_constraints(pa.table({"x": [2], "st": [{"y": 1}]}), md)
    with pytest.raises(ConstraintViolationError, match="even"):
        check_table_constraints(pa.table({"x": [5], "st": [{"y": 1}]}), md)
    with pytest.raises(ConstraintViolationError, match=r"st\.y"):
        check_table_constraints(pa.table({"x": [4], "st": [{"y": 11}]}), md)


def test_malformed_invariant_refused() -> None:
    md = _metadata([{"name": "x", "type": "integer", "nullable": True, "metadata": {"delta.invariants": "x > 3"}}])
    with pytest.raises(UnsupportedExpressionError, match="invariant on column x"):
        table_constraints(md)


def test_not_null_columns_including_nested() -> None:
    schema = json.dumps(
        {
            "type": "struct",
            "fields": [
                {"name": "id", "type": "long", "nullable": False, "metadata": {}},
                {
                    "name": "st",
                    "type": {
                        "type": "struct",
                        "fields": [{"name": "y", "type": "integer", "nullable": False, "metadata": {}}],
                    },
                    "nullable": True,
                    "metadata": {},
                },
            ],
        }
    )
    check_not_null(pa.table({"id": [1], "st": pa.array([None], pa.struct([("y", pa.int32())]))}), schema)
    with pytest.raises(ConstraintViolationError, match="NOT NULL constraint violated for column id"):
        check_not_null(pa.table({"id": [1, None], "st": [{"y": 1}, {"y": 2}]}), schema)
    with pytest.raises(ConstraintViolationError, match=r"column st\.y"):
        check_not_null(pa.table({"id": [1], "st": [{"y": None}]}), schema)


def test_char_and_varchar_lengths_are_checked_on_every_kernel_write(tmp_path: Any) -> None:
    """A ``string`` column with Spark's ``__CHAR_VARCHAR_TYPE_STRING`` metadata (``CHAR(n)`` / ``VARCHAR(n)``)
    refuses longer values; characters past ``n`` that are all spaces pass, as in Spark."""
    import deltalog
    from deltalog.protocol.schema import PrimitiveType, StructField, StructType

    text = PrimitiveType("string")
    schema = StructType((StructField("id", PrimitiveType("long"), True, {}),
                         StructField("c", text, True, {"__CHAR_VARCHAR_TYPE_STRING": "char(3)"}),
                         StructField("v", text, True, {"__CHAR_VARCHAR_TYPE_STRING": "VARCHAR(5)"})))
    path = str(tmp_path / "t")
    table = deltalog.create_table(path, schema)
    ok = pa.table({"id": [1, 2, 3], "c": ["abc", "ab   ", None], "v": ["", "abcde  ", "héllo"]})
    deltalog.write_table(path, ok, mode="append")
    with pytest.raises(ConstraintViolationError,
                       match=r"EXCEED_LIMIT_LENGTH\] column v is varchar\(5\): 1 of 2 rows .*'abcdef' \(6 char"):
        deltalog.write_table(path, pa.table({"id": [4, 5], "c": ["a", "b"], "v": ["a", "abcdef"]}), mode="append")
    with pytest.raises(ConstraintViolationError, match=r"column c is char\(3\)"):
        table.update_rows("id = 1", {"c": "abcd"})
    assert table.latest_version() == 1
    assert sorted(table.snapshot().to_arrow().column("v").to_pylist()) == ["", "abcde  ", "héllo"]
