"""Tests of the Delta schema model: JSON round trips, Arrow conversion, column mapping, to_logical."""

from __future__ import annotations

import datetime as dt
import json
import pickle
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.errors import InvalidArgumentError, SchemaError
from deltalog.protocol.conform import to_logical
from deltalog.protocol.schema import (
    COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_NESTED_IDS_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    VARIANT,
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    field_id,
    from_arrow_type,
    parse_data_type,
    parse_schema,
    physical_arrow_schema,
    physical_name,
    to_arrow_type,
    type_string,
)

CONFORMANCE = Path(__file__).parents[3] / "shared" / "conformance"
needs_corpus = pytest.mark.skipif(not CONFORMANCE.is_dir(), reason=f"conformance corpus not at {CONFORMANCE}")

P = PrimitiveType
UTC = dt.UTC

PRIMITIVES_TO_ARROW = [
    ("string", pa.string()),
    ("long", pa.int64()),
    ("integer", pa.int32()),
    ("short", pa.int16()),
    ("byte", pa.int8()),
    ("float", pa.float32()),
    ("double", pa.float64()),
    ("boolean", pa.bool_()),
    ("binary", pa.binary()),
    ("date", pa.date32()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestamp_ntz", pa.timestamp("us")),
    ("void", pa.null()),
    ("variant", pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])),
]


def field_json(name: str, type_: Any, nullable: bool = True, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": metadata or {}}


def schema_json(*fields: dict[str, Any]) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)}, separators=(",", ":"))


def cm(name: str, physical: str, fid: int | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {COLUMN_MAPPING_PHYSICAL_NAME_KEY: physical}
    if fid is not None:
        meta[COLUMN_MAPPING_ID_KEY] = fid
    meta.update(extra)
    return meta


def arrow_id(fid: int) -> dict[bytes, bytes]:
    return {b"PARQUET:field_id": str(fid).encode()}


# ------------------------------------------------------------------------------------------- JSON


@pytest.mark.parametrize("name", [n for n, _ in PRIMITIVES_TO_ARROW])
def test_every_primitive_round_trips(name: str) -> None:
    text = schema_json(field_json("c", name, False))
    schema = parse_schema(text)
    assert schema.field("c") == StructField("c", P(name), False, {})
    assert schema.to_json() == text


def test_variant_is_a_primitive() -> None:
    assert parse_data_type("variant") == VARIANT == P("variant")


def test_nested_types_round_trip_with_metadata() -> None:
    text = schema_json(
        field_json("id", "long", False, {"comment": "key", "delta.generationExpression": "1"}),
        field_json("price", "decimal(10,2)"),
        field_json(
            "s",
            {
                "type": "struct",
                "fields": [
                    field_json("a", {"type": "array", "elementType": "integer", "containsNull": False}),
                    field_json(
                        "m",
                        {
                            "type": "map",
                            "keyType": "string",
                            "valueType": {"type": "struct", "fields": [field_json("x", "date")]},
                            "valueContainsNull": True,
                        },
                    ),
                ],
            },
        ),
        field_json("t", "string", True, {"delta.typeChanges": [{"toType": "long", "fromType": "integer"}]}),
    )
    schema = parse_schema(text)
    assert schema.to_json() == text
    s_type = schema.field("s").type
    assert isinstance(s_type, StructType)
    assert s_type.field("a").type == ArrayType(P("integer"), False)
    assert s_type.field("m").type == MapType(P("string"), StructType((StructField("x", P("date")),)), True)
    assert schema.field("price").type == DecimalType(10, 2)
    assert schema.field("id").metadata["comment"] == "key"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("decimal", DecimalType(10, 0)), ("decimal(38,38)", DecimalType(38, 38)), ("decimal( 5 , 1 )", DecimalType(5, 1))],
)
def test_decimal_forms(text: str, expected: DecimalType) -> None:
    assert parse_data_type(text) == expected


def test_decimal_written_back_canonically() -> None:
    schema = parse_schema(schema_json(field_json("d", "decimal")))
    assert json.loads(schema.to_json())["fields"][0]["type"] == "decimal(10,0)"


def test_metadata_is_optional_when_parsing() -> None:
    schema = parse_schema('{"type":"struct","fields":[{"name":"a","type":"long","nullable":true}]}')
    assert schema.field("a").metadata == {}


def test_struct_type_api() -> None:
    schema = parse_schema(schema_json(field_json("b", "long"), field_json("Ab", "string")))
    assert schema.field_names == ["b", "Ab"]
    assert [f.name for f in schema] == ["b", "Ab"]
    assert len(schema) == 2
    assert "Ab" in schema and "ab" not in schema
    assert schema.get("ab") is None
    with pytest.raises(SchemaError, match=r"no column 'ab'.*b, Ab"):
        schema.field("ab")


def test_schema_objects_are_hashable_and_picklable() -> None:
    schema = parse_schema(schema_json(field_json("a", "long", True, {"k": [1, 2]})))
    assert hash(schema) == hash(parse_schema(schema.to_json()))
    assert pickle.loads(pickle.dumps(schema)) == schema


def test_metadata_is_copied() -> None:
    meta: dict[str, Any] = {"k": 1}
    f = StructField("a", P("long"), True, meta)
    meta["k"] = 2
    assert f.metadata == {"k": 1}


def test_type_string() -> None:
    dt_ = StructType((StructField("a", ArrayType(MapType(P("string"), DecimalType(3, 1)))),))
    assert type_string(dt_) == "struct<a:array<map<string,decimal(3,1)>>>"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ('"long"', "must be a struct"),
        (schema_json(field_json("a", "int")), "unknown data type 'int' at column 'a'"),
        (
            schema_json(field_json("s", {"type": "struct", "fields": [field_json("x", "varchar")]})),
            "unknown data type 'varchar' at column 's.x'",
        ),
        (
            schema_json(field_json("l", {"type": "array", "elementType": "bogus", "containsNull": True})),
            "'bogus' at column 'l.element'",
        ),
        (
            schema_json(
                field_json("m", {"type": "map", "keyType": "string", "valueType": "nope", "valueContainsNull": True})
            ),
            "'nope' at column 'm.value'",
        ),
        (schema_json(field_json("d", "decimal(40,2)")), r"invalid decimal precision/scale \(40,2\) at column 'd'"),
        (schema_json(field_json("d", "decimal(5,6)")), r"\(5,6\) at column 'd'"),
        (
            '{"type":"struct","fields":[{"name":"a","type":"long","metadata":{}}]}',
            "missing key 'nullable' at column 'a'",
        ),
        ('{"type":"struct","fields":[{"type":"long","nullable":true}]}', r"missing key 'name' at column '#0'"),
        ('{"type":"struct","fields":[{"name":"a","nullable":true}]}', "missing key 'type' at column 'a'"),
        ('{"type":"struct"}', "missing key 'fields' at the top level"),
        (
            schema_json(field_json("l", {"type": "array", "elementType": "long"})),
            "missing key 'containsNull' at column 'l'",
        ),
        (
            schema_json(field_json("m", {"type": "map", "keyType": "long", "valueType": "long"})),
            "missing key 'valueContainsNull' at column 'm'",
        ),
        (schema_json(field_json("m", {"type": "map", "valueType": "long"})), "missing key 'keyType' at column 'm'"),
        ('{"type":"struct","fields":[{"name":"a","type":"long","nullable":"yes"}]}', "'nullable' has the wrong"),
        ('{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":[]}]}', "'metadata'"),
        ('{"type":"struct","fields":[7]}', "field #0 of 'the schema' is not an object"),
        (schema_json(field_json("u", {"type": "udt"})), "unknown complex type 'udt' at column 'u'"),
        (schema_json(field_json("u", 5)), "wrong JSON type"),
        (schema_json(field_json("Id", "long"), field_json("id", "long")), "duplicate column name 'id'.*'Id'"),
        (
            schema_json(
                field_json("s", {"type": "struct", "fields": [field_json("a", "long"), field_json("A", "long")]})
            ),
            "duplicate column name 'A'.*in column 's'",
        ),
    ],
)
def test_malformed_schemas_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        parse_schema(text)


def test_parse_schema_errors_carry_table_and_version() -> None:
    with pytest.raises(SchemaError) as info:
        parse_schema(schema_json(field_json("a", "int")), table="/t", version=4)
    assert info.value.table == "/t" and info.value.version == 4
    assert "column 'a'" in str(info.value) and "version 4" in str(info.value)


def test_constructors_validate() -> None:
    with pytest.raises(SchemaError, match="unknown primitive type 'int'"):
        P("int")
    with pytest.raises(SchemaError, match="duplicate column name 'X'"):
        StructType((StructField("x", P("long")), StructField("X", P("long"))))


# ------------------------------------------------------------------------------------------ Arrow


@pytest.mark.parametrize(("name", "arrow"), PRIMITIVES_TO_ARROW)
def test_to_arrow_primitives(name: str, arrow: pa.DataType) -> None:
    assert to_arrow_type(P(name)) == arrow


def test_to_arrow_nested_keeps_nullability() -> None:
    dt_ = StructType(
        (
            StructField("a", ArrayType(P("long"), False), False),
            StructField("m", MapType(P("string"), DecimalType(12, 3), False)),
        )
    )
    at = to_arrow_type(dt_)
    assert at == pa.struct(
        [
            pa.field("a", pa.list_(pa.field("element", pa.int64(), nullable=False)), nullable=False),
            pa.field("m", pa.map_(pa.string(), pa.field("value", pa.decimal128(12, 3), nullable=False))),
        ]
    )
    schema = StructType((StructField("top", dt_, False),))
    assert schema.to_arrow_schema().field("top").nullable is False


@pytest.mark.parametrize(
    ("arrow", "expected"),
    [
        (pa.string(), P("string")),
        (pa.large_string(), P("string")),
        (pa.string_view(), P("string")),
        (pa.binary(), P("binary")),
        (pa.large_binary(), P("binary")),
        (pa.binary(16), P("binary")),
        (pa.int8(), P("byte")),
        (pa.uint8(), P("short")),
        (pa.int16(), P("short")),
        (pa.uint16(), P("integer")),
        (pa.int32(), P("integer")),
        (pa.uint32(), P("long")),
        (pa.int64(), P("long")),
        (pa.uint64(), DecimalType(20, 0)),
        (pa.float16(), P("float")),
        (pa.float32(), P("float")),
        (pa.float64(), P("double")),
        (pa.bool_(), P("boolean")),
        (pa.date32(), P("date")),
        (pa.date64(), P("date")),
        (pa.null(), P("void")),
        (pa.decimal128(7, 3), DecimalType(7, 3)),
        (pa.dictionary(pa.int32(), pa.string()), P("string")),
        (pa.large_list(pa.int32()), ArrayType(P("integer"), True)),
        (pa.list_(pa.field("e", pa.int64(), nullable=False)), ArrayType(P("long"), False)),
        (pa.list_(pa.int8(), 3), ArrayType(P("byte"), True)),
        (pa.map_(pa.string(), pa.field("v", pa.int32(), nullable=False)), MapType(P("string"), P("integer"), False)),
    ]
    + [(pa.timestamp(u), P("timestamp_ntz")) for u in ("s", "ms", "us", "ns")]
    + [(pa.timestamp(u, tz=z), P("timestamp")) for u in ("s", "ms", "us", "ns") for z in ("UTC", "+01:00")],
)
def test_from_arrow_type(arrow: pa.DataType, expected: Any) -> None:
    assert from_arrow_type(arrow) == expected


@pytest.mark.parametrize(
    "arrow", [pa.time32("s"), pa.duration("us"), pa.decimal256(50, 2), pa.month_day_nano_interval()]
)
def test_from_arrow_unsupported_names_column(arrow: pa.DataType) -> None:
    schema = pa.schema([("ok", pa.int32()), ("s", pa.struct([("bad", arrow)]))])
    with pytest.raises(SchemaError, match=r"column 's\.bad' has Arrow type"):
        StructType.from_arrow_schema(schema)


def test_from_arrow_schema_round_trip() -> None:
    schema = parse_schema(
        schema_json(
            field_json("a", "long", False),
            field_json("b", {"type": "array", "elementType": "timestamp", "containsNull": False}),
            field_json(
                "c",
                {
                    "type": "map",
                    "keyType": "string",
                    "valueType": {"type": "struct", "fields": [field_json("d", "decimal(4,2)", False)]},
                    "valueContainsNull": True,
                },
            ),
            field_json("e", "timestamp_ntz"),
        )
    )
    assert StructType.from_arrow_schema(schema.to_arrow_schema()) == schema


def test_from_arrow_rejects_duplicate_names() -> None:
    with pytest.raises(SchemaError, match="duplicate column name 'A'"):
        StructType.from_arrow_schema(pa.schema([("a", pa.int32()), ("A", pa.int32())]))


# ---------------------------------------------------------------------------------- column mapping

NESTED_CM = parse_schema(
    schema_json(
        field_json("id", "long", True, cm("id", "col-id", 1)),
        field_json(
            "s",
            {
                "type": "struct",
                "fields": [
                    field_json("x", "integer", True, cm("x", "col-x", 3)),
                    field_json("y", "string", True, cm("y", "col-y", 4)),
                ],
            },
            True,
            cm("s", "col-s", 2),
        ),
        field_json(
            "l",
            {
                "type": "array",
                "elementType": {"type": "struct", "fields": [field_json("z", "long", True, cm("z", "col-z", 6))]},
                "containsNull": True,
            },
            True,
            cm("l", "col-l", 5, **{COLUMN_MAPPING_NESTED_IDS_KEY: {"col-l.element": 10}}),
        ),
        field_json(
            "m",
            {
                "type": "map",
                "keyType": "string",
                "valueType": {"type": "struct", "fields": [field_json("w", "double", True, cm("w", "col-w", 8))]},
                "valueContainsNull": True,
            },
            True,
            cm("m", "col-m", 7, **{COLUMN_MAPPING_NESTED_IDS_KEY: {"col-m.key": 11, "col-m.value": 12}}),
        ),
    )
)


def test_physical_name_and_field_id() -> None:
    f = NESTED_CM.field("id")
    assert physical_name(f, "name") == "col-id"
    assert physical_name(f, "id") == "col-id"
    assert physical_name(f, "none") == "id"
    assert physical_name(f, "NAME") == "col-id"
    assert field_id(f) == 1
    plain = StructField("p", P("long"))
    assert physical_name(plain, "name") == "p"
    assert field_id(plain) is None
    assert field_id(StructField("q", P("long"), True, {COLUMN_MAPPING_ID_KEY: "9"})) == 9


def test_column_mapping_errors() -> None:
    f = NESTED_CM.field("id")
    with pytest.raises(InvalidArgumentError, match="unknown column mapping mode 'path'"):
        physical_name(f, "path")
    with pytest.raises(SchemaError, match="column 'q' has an invalid column mapping id 'x'"):
        field_id(StructField("q", P("long"), True, {COLUMN_MAPPING_ID_KEY: "x"}))
    with pytest.raises(SchemaError, match="column 'q' has an invalid column mapping id True"):
        field_id(StructField("q", P("long"), True, {COLUMN_MAPPING_ID_KEY: True}))
    with pytest.raises(SchemaError, match="column 'q' has an invalid physical name 5"):
        physical_name(StructField("q", P("long"), True, {COLUMN_MAPPING_PHYSICAL_NAME_KEY: 5}), "name")


def test_physical_arrow_schema_id_mode() -> None:
    phys = physical_arrow_schema(NESTED_CM, "id")
    assert phys.names == ["col-id", "col-s", "col-l", "col-m"]
    assert phys.field("col-id").metadata == arrow_id(1)
    s_type = phys.field("col-s").type
    assert [s_type.field(i).name for i in range(s_type.num_fields)] == ["col-x", "col-y"]
    assert s_type.field(0).metadata == arrow_id(3)
    l_type = phys.field("col-l").type
    assert l_type.value_field.metadata == arrow_id(10)
    assert l_type.value_type.field(0).name == "col-z"
    assert l_type.value_type.field(0).metadata == arrow_id(6)
    m_type = phys.field("col-m").type
    assert m_type.key_field.metadata == arrow_id(11)
    assert m_type.item_field.metadata == arrow_id(12)
    assert m_type.item_type.field(0).name == "col-w"


def test_physical_arrow_schema_none_mode_is_logical() -> None:
    phys = physical_arrow_schema(NESTED_CM, "none")
    assert phys.names == ["id", "s", "l", "m"]
    assert phys.field("id").metadata is None
    assert phys.remove_metadata() == NESTED_CM.to_arrow_schema()


def _nested_rows() -> list[dict[str, Any]]:
    return [
        {"id": 1, "s": {"x": 1, "y": "a"}, "l": [{"z": 1}, None], "m": [("k", {"w": 1.5})]},
        {"id": 2, "s": None, "l": None, "m": None},
        {"id": 3, "s": {"x": None, "y": "c"}, "l": [], "m": [("k2", None)]},
    ]


def _physical_rows() -> list[dict[str, Any]]:
    return [
        {
            "col-id": r["id"],
            "col-s": None if r["s"] is None else {"col-x": r["s"]["x"], "col-y": r["s"]["y"]},
            "col-l": None if r["l"] is None else [None if e is None else {"col-z": e["z"]} for e in r["l"]],
            "col-m": None if r["m"] is None else [(k, None if v is None else {"col-w": v["w"]}) for k, v in r["m"]],
        }
        for r in _nested_rows()
    ]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_to_logical_through_parquet(tmp_path: Path, mode: str) -> None:
    phys = physical_arrow_schema(NESTED_CM, mode)
    path = tmp_path / "f.parquet"
    pq.write_table(pa.Table.from_pylist(_physical_rows(), schema=phys), path)
    logical = to_logical(pq.read_table(path), NESTED_CM, mode)
    assert logical.schema == NESTED_CM.to_arrow_schema()
    assert logical.to_pylist() == _nested_rows()


def test_id_mode_matches_by_id_not_name() -> None:
    schema = parse_schema(
        schema_json(
            field_json("a", "long", True, cm("a", "col-new-a", 1)), field_json("b", "long", True, cm("b", "p", 2))
        )
    )
    file_schema = pa.schema(
        [pa.field("col-old-a", pa.int64(), metadata=arrow_id(1)), pa.field("p", pa.int64(), metadata=arrow_id(9))]
    )
    data = pa.table([pa.array([1]), pa.array([2])], schema=file_schema)
    # a is found by id despite another physical name; b's name matches but its id does not: missing
    assert to_logical(data, schema, "id").to_pylist() == [{"a": 1, "b": None}]


def test_id_mode_falls_back_to_physical_names_without_ids() -> None:
    schema = parse_schema(schema_json(field_json("a", "long", True, cm("a", "col-a", 1))))
    data = pa.table({"col-a": pa.array([5]), "a": pa.array([6])})
    assert to_logical(data, schema, "id").to_pylist() == [{"a": 5}]


def test_name_mode_ignores_logical_names() -> None:
    schema = parse_schema(schema_json(field_json("a", "long", True, cm("a", "col-a", 1))))
    data = pa.table({"a": pa.array([6])})
    assert to_logical(data, schema, "name").to_pylist() == [{"a": None}]


# -------------------------------------------------------------------------------------- to_logical


def test_to_logical_reorders_drops_and_fills() -> None:
    schema = parse_schema(
        schema_json(field_json("b", "string"), field_json("a", "long"), field_json("new", "decimal(5,2)"))
    )
    data = pa.table({"a": pa.array([1, 2], pa.int64()), "extra": [9, 9], "b": ["x", "y"]})
    out = to_logical(data, schema, "none")
    assert out.schema == schema.to_arrow_schema()
    assert out.to_pydict() == {"b": ["x", "y"], "a": [1, 2], "new": [None, None]}


def test_to_logical_case_insensitive_fallback() -> None:
    schema = parse_schema(schema_json(field_json("Name", "string")))
    assert to_logical(pa.table({"name": ["v"]}), schema, "none").to_pylist() == [{"Name": "v"}]
    ambiguous = pa.table([pa.array(["1"]), pa.array(["2"])], names=["NAME", "name"])
    assert to_logical(ambiguous, schema, "none").to_pylist() == [{"Name": None}]


def test_to_logical_nested_missing_fields_and_null_structs() -> None:
    schema = parse_schema(
        schema_json(
            field_json(
                "s",
                {
                    "type": "struct",
                    "fields": [field_json("a", "long"), field_json("added", "string"), field_json("b", "integer")],
                },
            )
        )
    )
    data = pa.table(
        {
            "s": pa.array(
                [{"b": 1, "a": 2, "gone": 0}, None],
                pa.struct([("b", pa.int16()), ("a", pa.int32()), ("gone", pa.int8())]),
            )
        }
    )
    out = to_logical(data, schema, "none")
    assert out.to_pylist() == [{"s": {"a": 2, "added": None, "b": 1}}, {"s": None}]
    assert out.schema == schema.to_arrow_schema()


@pytest.mark.parametrize(
    ("file_array", "delta_type", "expected"),
    [
        (pa.array([1, None], pa.int16()), "integer", [1, None]),
        (pa.array([1], pa.int8()), "long", [1]),
        (pa.array([2**31 - 1], pa.int32()), "long", [2**31 - 1]),
        (pa.array([1.5], pa.float32()), "double", [1.5]),
        (pa.array([3], pa.int32()), "double", [3.0]),
        (pa.array([dt.date(2024, 9, 9)], pa.date32()), "timestamp_ntz", [dt.datetime(2024, 9, 9)]),
        (pa.array([Decimal("1.25")], pa.decimal128(5, 2)), "decimal(10,4)", [Decimal("1.2500")]),
        (pa.array([7], pa.int32()), "decimal(12,1)", [Decimal("7.0")]),
        (pa.array([1_000], pa.timestamp("ms", tz="UTC")), "timestamp", [dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)]),
        (pa.array([1_500], pa.timestamp("ns")), "timestamp", [dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)]),
        (pa.array([10**6], pa.timestamp("us")), "timestamp", [dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)]),
        (
            pa.array([0], pa.timestamp("us", tz="America/Los_Angeles")),
            "timestamp",
            [dt.datetime(1970, 1, 1, tzinfo=UTC)],
        ),
        (pa.array([2_000_999], pa.timestamp("ns")), "timestamp_ntz", [dt.datetime(1970, 1, 1, 0, 0, 0, 2000)]),
        (pa.array(["a", None], pa.large_string()), "string", ["a", None]),
        (pa.array(["x", "x", None]).dictionary_encode(), "string", ["x", "x", None]),
        (pa.array([b"\x00"], pa.large_binary()), "binary", [b"\x00"]),
        (pa.array([None, None], pa.null()), "date", [None, None]),
        (pa.array([None], pa.int32()), "void", [None]),
    ],
)
def test_to_logical_casts(file_array: pa.Array, delta_type: str, expected: list[Any]) -> None:
    schema = parse_schema(schema_json(field_json("c", delta_type)))
    out = to_logical(pa.table({"c": file_array}), schema, "none")
    assert out.schema == schema.to_arrow_schema()
    assert out.column("c").to_pylist() == expected


def test_to_logical_widens_inside_nested_types() -> None:
    schema = parse_schema(
        schema_json(
            field_json("l", {"type": "array", "elementType": "long", "containsNull": True}),
            field_json("m", {"type": "map", "keyType": "long", "valueType": "double", "valueContainsNull": True}),
        )
    )
    data = pa.table(
        {
            "l": pa.array([[1, None], None], pa.large_list(pa.int16())),
            "m": pa.array([[(1, 2.5)], None], pa.map_(pa.int32(), pa.float32())),
        }
    )
    out = to_logical(data, schema, "none")
    assert out.schema == schema.to_arrow_schema()
    assert out.to_pylist() == [{"l": [1, None], "m": [(1, 2.5)]}, {"l": None, "m": None}]


def test_to_logical_handles_sliced_and_chunked_columns() -> None:
    schema = parse_schema(
        schema_json(
            field_json("l", {"type": "array", "elementType": "long", "containsNull": True}),
            field_json("m", {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True}),
            field_json("s", {"type": "struct", "fields": [field_json("a", "long")]}),
        )
    )
    rows = [
        {"l": [1], "m": [("a", 1)], "s": {"a": 1}},
        {"l": None, "m": None, "s": None},
        {"l": [2, 3], "m": [("b", 2), ("c", 3)], "s": {"a": 2}},
        {"l": [], "m": [], "s": {"a": None}},
    ]
    file_schema = pa.schema(
        [
            ("l", pa.list_(pa.int32())),
            ("m", pa.map_(pa.string(), pa.int32())),
            ("s", pa.struct([("a", pa.int32())])),
        ]
    )
    table = pa.Table.from_pylist(rows, schema=file_schema)
    sliced = table.slice(1)
    assert to_logical(sliced, schema, "none").to_pylist() == rows[1:]
    chunked = pa.concat_tables([table.slice(0, 1), table.slice(1, 2), table.slice(3)])
    out = to_logical(chunked, schema, "none")
    assert out.to_pylist() == rows
    assert out.column("l").num_chunks == 3


def test_to_logical_variant_struct_in_any_order() -> None:
    schema = parse_schema(schema_json(field_json("v", "variant")))
    data = pa.table({"v": pa.array([{"metadata": b"m", "value": b"v"}, None])})
    out = to_logical(data, schema, "none")
    assert out.to_pylist() == [{"v": {"value": b"v", "metadata": b"m"}}, {"v": None}]


def test_to_logical_empty_table_and_empty_struct() -> None:
    schema = parse_schema(schema_json(field_json("a", "long"), field_json("e", {"type": "struct", "fields": []})))
    empty = to_logical(pa.table({"a": pa.array([], pa.int32())}), schema, "none")
    assert empty.num_rows == 0 and empty.schema == schema.to_arrow_schema()
    data = pa.table({"a": [1, 2], "e": pa.array([{}, None], pa.struct([]))})
    assert to_logical(data, schema, "none").column("e").to_pylist() == [{}, None]


@pytest.mark.parametrize(
    ("file_array", "delta_type", "message"),
    [
        (pa.array(["x"]), "long", r"column 's\.c': cannot read file type string as long"),
        (
            pa.array([1]),
            {"type": "struct", "fields": [field_json("q", "long")]},
            r"column 's\.c': file type int64 does not match",
        ),
        (
            pa.array([1]),
            {"type": "array", "elementType": "long", "containsNull": True},
            r"'s\.c': file type int64 does not match table type array<long>",
        ),
        (
            pa.array([[1]]),
            {"type": "map", "keyType": "long", "valueType": "long", "valueContainsNull": True},
            "does not match table type map<long,long>",
        ),
        (
            pa.array([["x"]]),
            {"type": "array", "elementType": "long", "containsNull": True},
            r"column 's\.c\.element': cannot read",
        ),
    ],
)
def test_to_logical_incompatible_data_names_column(file_array: pa.Array, delta_type: Any, message: str) -> None:
    schema = parse_schema(schema_json(field_json("s", {"type": "struct", "fields": [field_json("c", delta_type)]})))
    data = pa.table({"s": pa.StructArray.from_arrays([file_array], names=["c"])})
    with pytest.raises(SchemaError, match=message):
        to_logical(data, schema, "none")


def test_to_logical_rejects_unknown_mode() -> None:
    with pytest.raises(InvalidArgumentError, match="'weird'"):
        to_logical(pa.table({"a": [1]}), parse_schema(schema_json(field_json("a", "long"))), "weird")


# ------------------------------------------------------------------------------------ conformance


def _log_metadata(table_dir: Path) -> list[dict[str, Any]]:
    found = []
    for commit in sorted((table_dir / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            if '"metaData"' in line:
                action = json.loads(line)
                if "metaData" in action:
                    found.append(action["metaData"])
    return found


def _all_schema_strings() -> list[str]:
    if not CONFORMANCE.is_dir():
        return []
    strings = set()
    for log in CONFORMANCE.rglob("_delta_log"):
        for meta in _log_metadata(log.parent):
            if isinstance(meta.get("schemaString"), str):
                strings.add(meta["schemaString"])
    return sorted(strings)


@needs_corpus
def test_every_corpus_schema_round_trips() -> None:
    strings = _all_schema_strings()
    assert len(strings) > 50
    for text in strings:
        schema = parse_schema(text)
        assert json.loads(schema.to_json()) == json.loads(text)
        assert len(schema.to_arrow_schema()) == len(schema)
        mode = "id" if any(field_id(f) is not None for f in schema) else "none"
        assert physical_arrow_schema(schema, mode).remove_metadata().names == [physical_name(f, mode) for f in schema]


@needs_corpus
def test_iceberg_compat_physical_schema_matches_data_file() -> None:
    table_dir = CONFORMANCE / "delta-golden-extra" / "table-with-icebegCompatV2Enabled"
    schema = parse_schema(_log_metadata(table_dir)[-1]["schemaString"])
    data_file = sorted(table_dir.glob("*.parquet"))[0]
    file_schema = pq.read_schema(data_file).remove_metadata()
    ours = physical_arrow_schema(schema, "id")

    def ids(t: pa.DataType | pa.Schema) -> list[Any]:
        fields = list(t) if isinstance(t, pa.Schema) else [t.field(i) for i in range(t.num_fields)]
        out: list[Any] = []
        for f in fields:
            out.append((f.name, (f.metadata or {}).get(b"PARQUET:field_id")))
            if pa.types.is_struct(f.type) or pa.types.is_map(f.type) or pa.types.is_list(f.type):
                children = f.type if pa.types.is_struct(f.type) else None
                if pa.types.is_list(f.type):
                    children = pa.struct([f.type.value_field])
                if pa.types.is_map(f.type):
                    children = pa.struct([f.type.key_field, f.type.item_field])
                assert children is not None
                out.append(ids(children))
        return out

    assert ids(ours) == ids(file_schema)


def _golden_cases() -> list[str]:
    if not CONFORMANCE.is_dir():
        return []
    facts = json.loads((CONFORMANCE / "EXPECTED.json").read_text())
    cases = []
    for key, f in sorted(facts.items()):
        if not key.startswith("kernel-rs-golden/") or "expected_dir" not in f or f.get("must_error"):
            continue
        if f.get("partition_columns") or set(f.get("needs", [])) - {"columnMapping", "timestampNtz"}:
            continue
        if f.get("active_files") and _log_metadata(CONFORMANCE / key):
            cases.append(key)
    return cases


@needs_corpus
@pytest.mark.parametrize("key", _golden_cases() or ["<none>"])
def test_golden_tables_read_as_spark_does(key: str) -> None:
    facts = json.loads((CONFORMANCE / "EXPECTED.json").read_text())[key]
    meta = _log_metadata(CONFORMANCE / key)[-1]
    schema = parse_schema(meta["schemaString"])
    mode = meta.get("configuration", {}).get("delta.columnMapping.mode", "none")
    got = [to_logical(pq.read_table(CONFORMANCE / key / f), schema, mode) for f in facts["active_files"]]
    for t in got:
        assert t.schema == schema.to_arrow_schema()
    expected_files = sorted((CONFORMANCE / facts["expected_dir"]).rglob("*.parquet"))
    expected = pa.concat_tables([pq.read_table(p) for p in expected_files]).to_pylist()
    rows = pa.concat_tables(got).to_pylist()
    assert sorted(map(repr, rows)) == sorted(map(repr, expected))


@needs_corpus
@pytest.mark.parametrize("name", ["type-widening", "type-widening-nested"])
def test_type_widening_tables(name: str) -> None:
    table_dir = CONFORMANCE / "delta-golden-extra" / name
    facts = json.loads((CONFORMANCE / "EXPECTED.json").read_text())[f"delta-golden-extra/{name}"]
    schema = parse_schema(_log_metadata(table_dir)[-1]["schemaString"])
    tables = [to_logical(pq.read_table(table_dir / f), schema, "none") for f in facts["active_files"]]
    merged = pa.concat_tables(tables)
    assert merged.num_rows == int(facts["row_count"])
    rows = sorted(merged.to_pylist(), key=repr)
    if name == "type-widening":
        old = next(r for r in rows if r["byte_long"] == 1)
        assert old["int_decimal"] == Decimal("3.0")
        assert old["decimal_decimal_greater_scale"] == Decimal("67.89000")
        assert old["date_timestamp_ntz"] == dt.datetime(2024, 9, 9)
    else:
        old = next(r for r in rows if r["struct"]["a"] == 1)
        assert old == {"struct": {"a": 1}, "map": [(2, 3)], "array": [4, 5]}
