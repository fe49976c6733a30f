"""The Delta table schema: Spark's JSON schema format (``metaData.schemaString``) as frozen dataclasses.

Besides parsing and printing the JSON form, this module converts schemas to and from Arrow and applies
Delta column mapping (physical names and Parquet field ids); :mod:`deltalog.protocol.conform` turns a
table read from a Parquet data file into the table's *logical* shape.

Variant is modelled as ``PrimitiveType("variant")`` (there is no separate class; :data:`VARIANT` is
that value); in Arrow it is the unshredded ``struct<value: binary not null, metadata: binary not null>``,
the field order Spark writes to Parquet. :mod:`deltalog.protocol.variant` decodes the two binaries.
The geospatial types are primitive types too, named by their text (``PrimitiveType("geometry(OGC:CRS84)")``,
one spelling: :func:`deltalog.protocol.geospatial.canonical_name`); in Arrow they are ``geoarrow.wkb``
(:class:`~deltalog.protocol.geospatial.GeoArrowWKB`).

Example:
    >>> s = parse_schema('{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,'
    ...                  '"metadata":{}}]}')
    >>> s.field("id")
    StructField(name='id', type=PrimitiveType(name='long'), nullable=False, metadata={})
    >>> s.to_arrow_schema()
    id: int64 not null
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeAlias

import pyarrow as pa

from deltalog.errors import InvalidArgumentError, SchemaError
from deltalog.protocol.geospatial import GeoArrowWKB, GeoSpec, canonical_name, geo_spec_of_field, parse_geo_type

# fmt: off
__all__ = [
    "COLUMN_MAPPING_ID_KEY",
    "COLUMN_MAPPING_NESTED_IDS_KEY",
    "COLUMN_MAPPING_PHYSICAL_NAME_KEY",
    "PRIMITIVE_TYPE_NAMES",
    "VARIANT",
    "VARIANT_ARROW_METADATA",
    "ArrayType",
    "DataType",
    "DecimalType",
    "MapType",
    "PrimitiveType",
    "StructField",
    "StructType",
    "bare_json",
    "contains_geo",
    "contains_variant",
    "field_id",
    "from_arrow_field",
    "from_arrow_type",
    "geo_spec",
    "is_variant_arrow_field",
    "is_void",
    "parse_data_type",
    "parse_schema",
    "physical_arrow_schema",
    "physical_name",
    "to_arrow_type",
    "type_string",
]
# fmt: on

COLUMN_MAPPING_ID_KEY = "delta.columnMapping.id"
COLUMN_MAPPING_PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
COLUMN_MAPPING_NESTED_IDS_KEY = "delta.columnMapping.nested.ids"
PARQUET_FIELD_ID = b"PARQUET:field_id"
_MODES = ("none", "name", "id")

PRIMITIVE_TYPE_NAMES = frozenset(
    {
        "string", "long", "integer", "short", "byte", "float", "double", "boolean", "binary",
        "date", "timestamp", "timestamp_ntz", "void", "variant",
    }
)  # fmt: skip
_DECIMAL_RE = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def _check_unique(names: Sequence[str], path: str) -> None:
    seen: dict[str, str] = {}
    for n in names:
        other = seen.get(n.lower())
        if other is not None:
            where = f" in column {path!r}" if path else ""
            raise SchemaError(f"duplicate column name {n!r} (clashes with {other!r} ignoring case){where}")
        seen[n.lower()] = n


def join_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


@dataclasses.dataclass(frozen=True)
class PrimitiveType:
    """An atomic type named as in the schema JSON (``"long"``, ``"timestamp_ntz"``, ``"variant"``,
    ``"geometry(OGC:CRS84)"``...); a geospatial name is kept in its one spelling.

    Example:
        >>> PrimitiveType("long")
        PrimitiveType(name='long')
        >>> PrimitiveType("geography(OGC:CRS84,SPHERICAL)")
        PrimitiveType(name='geography(OGC:CRS84, spherical)')
    """

    name: str

    def __post_init__(self) -> None:
        if self.name not in PRIMITIVE_TYPE_NAMES:
            geo = canonical_name(self.name) if isinstance(self.name, str) else None
            if geo is None:
                raise SchemaError(f"unknown primitive type {self.name!r}")
            object.__setattr__(self, "name", geo)


@dataclasses.dataclass(frozen=True)
class DecimalType:
    """A fixed-point decimal with ``precision`` digits in all, ``scale`` of them after the point.

    Example:
        >>> DecimalType(10, 2)
        DecimalType(precision=10, scale=2)
    """

    precision: int
    scale: int

    def __post_init__(self) -> None:
        if not 1 <= self.precision <= 38 or not 0 <= self.scale <= self.precision:
            raise SchemaError(f"invalid decimal precision/scale ({self.precision},{self.scale})")


@dataclasses.dataclass(frozen=True)
class ArrayType:
    """A list of ``element_type`` values; ``contains_null`` says whether elements may be null.

    Example:
        >>> ArrayType(PrimitiveType("integer"), True).element_type
        PrimitiveType(name='integer')
    """

    element_type: DataType
    contains_null: bool = True


@dataclasses.dataclass(frozen=True)
class MapType:
    """A map from ``key_type`` (never null) to ``value_type``.

    Example:
        >>> MapType(PrimitiveType("string"), PrimitiveType("long"), True).value_contains_null
        True
    """

    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True


@dataclasses.dataclass(frozen=True)
class StructField:
    """One named column of a struct, with its JSON ``metadata`` (column mapping, type changes, ...).

    The metadata is copied into a private dict; it takes part in ``==`` but not in ``hash``.

    Example:
        >>> StructField("a", PrimitiveType("long"), True, {"comment": "x"}).metadata["comment"]
        'x'
    """

    name: str
    type: DataType
    nullable: bool = True
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", dict(self.metadata))


@dataclasses.dataclass(frozen=True)
class StructType:
    """An ordered set of fields; names are unique ignoring case, lookups are case-sensitive.

    Example:
        >>> s = StructType((StructField("a", PrimitiveType("long")),))
        >>> s.field_names, [f.name for f in s], "a" in s, "A" in s
        (['a'], ['a'], True, False)
    """

    fields: tuple[StructField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        _check_unique([f.name for f in self.fields], "")

    @property
    def field_names(self) -> list[str]:
        """The column names in order.

        Example:
            >>> StructType((StructField("x", PrimitiveType("date")),)).field_names
            ['x']
        """
        return [f.name for f in self.fields]

    def field(self, name: str) -> StructField:
        """The field called exactly ``name``; raises :class:`SchemaError` naming it if absent.

        Example:
            >>> StructType((StructField("x", PrimitiveType("date")),)).field("x").type
            PrimitiveType(name='date')
        """
        found = self.get(name)
        if found is None:
            raise SchemaError(f"no column {name!r} in schema (columns: {', '.join(self.field_names)})")
        return found

    def get(self, name: str) -> StructField | None:
        """The field called exactly ``name``, or None.

        Example:
            >>> StructType().get("x") is None
            True
        """
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __iter__(self) -> Iterator[StructField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __contains__(self, name: object) -> bool:
        return any(f.name == name for f in self.fields)

    def to_json(self) -> str:
        """The compact Spark JSON form, as stored in ``metaData.schemaString``.

        Example:
            >>> StructType((StructField("a", PrimitiveType("long")),)).to_json()
            '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}'
        """
        return json.dumps(_to_obj(self), separators=(",", ":"), ensure_ascii=False)

    def to_arrow_schema(self) -> pa.Schema:
        """The logical Arrow schema (logical names, no metadata).

        Example:
            >>> StructType((StructField("t", PrimitiveType("timestamp")),)).to_arrow_schema()
            t: timestamp[us, tz=UTC]
        """
        return pa.schema([_arrow_field(f) for f in self.fields])

    @staticmethod
    def from_arrow_schema(schema: pa.Schema) -> StructType:
        """The Delta schema for an Arrow schema; unsupported types raise :class:`SchemaError`.

        Example:
            >>> StructType.from_arrow_schema(pa.schema([("a", pa.large_string())])).field("a").type
            PrimitiveType(name='string')
        """
        return _struct_from_arrow(list(schema), "")


DataType: TypeAlias = PrimitiveType | DecimalType | ArrayType | MapType | StructType

VARIANT = PrimitiveType("variant")
_BINARY = PrimitiveType("binary")
VARIANT_STRUCT = StructType((StructField("value", _BINARY, False), StructField("metadata", _BINARY, False)))


# ---------------------------------------------------------------------------------------------- JSON


def parse_schema(schema_string: str, *, table: str | None = None, version: int | None = None) -> StructType:
    """Parse a ``schemaString``; malformed input raises :class:`SchemaError` naming the field path.

    ``table`` and ``version`` only decorate error messages.

    Example:
        >>> parse_schema('{"type":"struct","fields":[]}')
        StructType(fields=())
    """
    try:
        obj = json.loads(schema_string)
    except (json.JSONDecodeError, TypeError) as e:
        raise SchemaError(f"schema string is not valid JSON: {e}", table=table, version=version) from None
    try:
        dt = parse_data_type(obj)
    except SchemaError as e:
        raise SchemaError(e.message, table=table, version=version) from None
    if not isinstance(dt, StructType):
        raise SchemaError(f"schema must be a struct, got {type_string(dt)}", table=table, version=version)
    return dt


_NOT_TYPE = frozenset({"nullable", "containsNull", "valueContainsNull", "metadata"})


def bare_json(node: Any) -> Any:
    """A schema or type in its JSON form (Delta's, which Spark's ``jsonValue()`` shares) without nullability
    and field metadata: what two types must share to be the same type.

    Example:
        >>> bare_json({"type": "array", "elementType": "long", "containsNull": True})
        {'type': 'array', 'elementType': 'long'}
    """
    if isinstance(node, dict):
        return {k: bare_json(v) for k, v in node.items() if k not in _NOT_TYPE}
    if isinstance(node, list):
        return [bare_json(v) for v in node]
    return node


def parse_data_type(obj: Any, path: str = "") -> DataType:
    """Parse one type from its decoded JSON (a type-name string or a struct/array/map object).

    ``path`` is the column path used in error messages.

    Example:
        >>> parse_data_type("decimal(5,1)")
        DecimalType(precision=5, scale=1)
        >>> parse_data_type({"type": "array", "elementType": "long", "containsNull": True})
        ArrayType(element_type=PrimitiveType(name='long'), contains_null=True)
    """
    where = f" at column {path!r}" if path else ""
    if isinstance(obj, str):
        if obj in PRIMITIVE_TYPE_NAMES:
            return PrimitiveType(obj)
        try:
            if parse_geo_type(obj) is not None:
                return PrimitiveType(obj)
        except SchemaError as e:
            raise SchemaError(e.message + where) from None
        if obj == "decimal":
            return DecimalType(10, 0)
        m = _DECIMAL_RE.fullmatch(obj)
        if m:
            try:
                return DecimalType(int(m.group(1)), int(m.group(2)))
            except SchemaError as e:
                raise SchemaError(e.message + where) from None
        raise SchemaError(f"unknown data type {obj!r}{where}")
    if not isinstance(obj, dict):
        raise SchemaError(f"a data type must be a string or an object, got {obj!r}{where}")
    kind = obj.get("type")
    if kind == "struct":
        raw = _require(obj, "fields", list, path)
        fields = tuple(_parse_field(f, path, i) for i, f in enumerate(raw))
        _check_unique([f.name for f in fields], path)
        return StructType(fields)
    if kind == "array":
        elem = parse_data_type(_require(obj, "elementType", (str, dict), path), join_path(path, "element"))
        return ArrayType(elem, _require(obj, "containsNull", bool, path))
    if kind == "map":
        key = parse_data_type(_require(obj, "keyType", (str, dict), path), join_path(path, "key"))
        value = parse_data_type(_require(obj, "valueType", (str, dict), path), join_path(path, "value"))
        return MapType(key, value, _require(obj, "valueContainsNull", bool, path))
    raise SchemaError(f"unknown complex type {kind!r}{where}")


def _require(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], path: str) -> Any:
    where = f" at column {path!r}" if path else " at the top level"
    if key not in obj:
        raise SchemaError(f"missing key {key!r}{where}")
    value = obj[key]
    if not isinstance(value, kind):
        raise SchemaError(f"key {key!r} has the wrong JSON type ({value!r}){where}")
    return value


def _parse_field(obj: Any, path: str, index: int) -> StructField:
    if not isinstance(obj, dict):
        raise SchemaError(f"field #{index} of {path or 'the schema'!r} is not an object")
    name = _require(obj, "name", str, join_path(path, f"#{index}"))
    fpath = join_path(path, name)
    dt = parse_data_type(_require(obj, "type", (str, dict), fpath), fpath)
    nullable = _require(obj, "nullable", bool, fpath)
    metadata = _require(obj, "metadata", dict, fpath) if "metadata" in obj else {}
    return StructField(name, dt, nullable, metadata)


def _to_obj(dt: DataType) -> Any:
    if isinstance(dt, PrimitiveType):
        return dt.name
    if isinstance(dt, DecimalType):
        return f"decimal({dt.precision},{dt.scale})"
    if isinstance(dt, ArrayType):
        return {"type": "array", "elementType": _to_obj(dt.element_type), "containsNull": dt.contains_null}
    if isinstance(dt, MapType):
        return {
            "type": "map",
            "keyType": _to_obj(dt.key_type),
            "valueType": _to_obj(dt.value_type),
            "valueContainsNull": dt.value_contains_null,
        }
    fields = [
        {"name": f.name, "type": _to_obj(f.type), "nullable": f.nullable, "metadata": dict(f.metadata)}
        for f in dt.fields
    ]
    return {"type": "struct", "fields": fields}


def type_string(dt: DataType) -> str:
    """A short readable name of a type, for messages.

    Example:
        >>> type_string(MapType(PrimitiveType("string"), ArrayType(DecimalType(5, 2), True), True))
        'map<string,array<decimal(5,2)>>'
    """
    if isinstance(dt, PrimitiveType):
        return dt.name
    if isinstance(dt, DecimalType):
        return f"decimal({dt.precision},{dt.scale})"
    if isinstance(dt, ArrayType):
        return f"array<{type_string(dt.element_type)}>"
    if isinstance(dt, MapType):
        return f"map<{type_string(dt.key_type)},{type_string(dt.value_type)}>"
    return "struct<" + ",".join(f"{f.name}:{type_string(f.type)}" for f in dt.fields) + ">"


def is_void(dt: DataType) -> bool:
    """True for ``void`` (Spark's ``NullType``): a column that holds only nulls. Data files leave such
    columns out, as delta-spark writes them; readers fill them with nulls.

    Example:
        >>> is_void(PrimitiveType("void")), is_void(PrimitiveType("long"))
        (True, False)
    """
    return isinstance(dt, PrimitiveType) and dt.name == "void"


def geo_spec(dt: DataType) -> GeoSpec | None:
    """The geospatial type ``dt`` is (:class:`~deltalog.protocol.geospatial.GeoSpec`), None for other types.

    Example:
        >>> geo_spec(PrimitiveType("geometry(EPSG:3857)"))
        GeoSpec(kind='geometry', crs='EPSG:3857', algorithm=None)
    """
    if not isinstance(dt, PrimitiveType) or dt.name in PRIMITIVE_TYPE_NAMES:
        return None
    return parse_geo_type(dt.name)


def contains_geo(dt: DataType) -> bool:
    """True when ``dt`` is or holds (in struct fields, elements, map keys or values) a geospatial type.

    Example:
        >>> contains_geo(ArrayType(PrimitiveType("geometry(OGC:CRS84)"), True))
        True
    """
    return _contains(dt, lambda t: geo_spec(t) is not None)


def _contains(dt: DataType, leaf: Any) -> bool:
    """Whether ``leaf`` holds for ``dt`` or any type inside it (struct fields, elements, map keys and values)."""
    if isinstance(dt, ArrayType):
        return _contains(dt.element_type, leaf)
    if isinstance(dt, MapType):
        return _contains(dt.key_type, leaf) or _contains(dt.value_type, leaf)
    if isinstance(dt, StructType):
        return any(_contains(f.type, leaf) for f in dt.fields)
    return bool(leaf(dt))


def contains_variant(dt: DataType) -> bool:
    """True when ``dt`` is ``variant`` or has a variant anywhere inside (struct fields, elements, map values).

    Example:
        >>> contains_variant(ArrayType(StructType((StructField("v", VARIANT),)), True))
        True
        >>> contains_variant(MapType(PrimitiveType("string"), PrimitiveType("long"), True))
        False
    """
    return _contains(dt, lambda t: t == VARIANT)


# --------------------------------------------------------------------------------------------- Arrow

# fmt: off
_TO_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(), "long": pa.int64(), "integer": pa.int32(), "short": pa.int16(), "byte": pa.int8(),
    "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(), "binary": pa.binary(),
    "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}
# fmt: on


def _map_type(key: pa.Field[Any] | pa.DataType, value: pa.Field[Any]) -> pa.DataType:
    return pa.map_(key, value)  # type: ignore[call-overload,no-any-return,unused-ignore]


def null_array(length: int, at: pa.DataType) -> pa.Array[Any]:
    return pa.nulls(length, at)  # type: ignore[call-overload,no-any-return,unused-ignore]


def to_arrow_type(dt: DataType) -> pa.DataType:
    """The Arrow type a column of Delta type ``dt`` is read as.

    Example:
        >>> to_arrow_type(ArrayType(PrimitiveType("short"), False))
        ListType(list<element: int16 not null>)
    """
    if isinstance(dt, PrimitiveType):
        if dt.name == "variant":
            return to_arrow_type(VARIANT_STRUCT)
        geo = geo_spec(dt)
        return _TO_ARROW[dt.name] if geo is None else GeoArrowWKB.of(geo)
    if isinstance(dt, DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, ArrayType):
        return pa.list_(_field_of("element", dt.element_type, dt.contains_null))
    if isinstance(dt, MapType):
        return _map_type(to_arrow_type(dt.key_type), _field_of("value", dt.value_type, dt.value_contains_null))
    return pa.struct([_arrow_field(f) for f in dt.fields])


#: Field metadata marking a struct of ``value`` / ``metadata`` binaries as a variant in Arrow (PySpark's
#: own marker, e.g. in ``mapInArrow`` batches).
VARIANT_ARROW_METADATA = {b"variant": b"true"}


def _arrow_field(f: StructField) -> pa.Field[Any]:
    return _field_of(f.name, f.type, f.nullable)


def _field_of(name: str, dt: DataType, nullable: bool) -> pa.Field[Any]:
    meta = VARIANT_ARROW_METADATA if dt == VARIANT else None
    return pa.field(name, to_arrow_type(dt), nullable=nullable, metadata=meta)


def is_variant_arrow_field(f: pa.Field[Any]) -> bool:
    """Whether an Arrow field holds variants: marked as PySpark marks them and a struct of exactly the
    binaries ``value`` and ``metadata``.

    Example:
        >>> is_variant_arrow_field(pa.field("v", to_arrow_type(VARIANT), metadata=VARIANT_ARROW_METADATA))
        True
    """
    if not f.metadata or f.metadata.get(b"variant", b"").lower() != b"true" or not pa.types.is_struct(f.type):
        return False
    kids = {f.type.field(i).name: f.type.field(i).type for i in range(f.type.num_fields)}
    return set(kids) == {"value", "metadata"} and all(pa.types.is_binary(t) or pa.types.is_large_binary(t)
                                                      for t in kids.values())


def from_arrow_field(f: pa.Field[Any], path: str = "") -> DataType:
    """The Delta type of an Arrow field: ``variant`` for a marked variant struct
    (:func:`is_variant_arrow_field`), a geospatial type for a ``geoarrow.wkb`` field or PySpark's geometry /
    geography struct (:func:`deltalog.protocol.geospatial.geo_spec_of_field`), else :func:`from_arrow_type`
    of its type.

    Example:
        >>> from_arrow_field(StructType((StructField("v", VARIANT),)).to_arrow_schema().field("v"))
        PrimitiveType(name='variant')
    """
    if is_variant_arrow_field(f):
        return VARIANT
    geo = geo_spec_of_field(f, path)
    return from_arrow_type(f.type, path) if geo is None else PrimitiveType(geo.name)


def from_arrow_type(at: pa.DataType, path: str = "") -> DataType:
    """The Delta type for an Arrow type; unsupported types raise :class:`SchemaError` naming ``path``.

    Unsigned integers widen (uint64 becomes ``decimal(20,0)``), large/view/dictionary types map to
    their plain type, timestamps of any unit map by whether they carry a time zone.

    Example:
        >>> from_arrow_type(pa.timestamp("ns"))
        PrimitiveType(name='timestamp_ntz')
        >>> from_arrow_type(pa.uint16())
        PrimitiveType(name='integer')
    """
    t = pa.types
    geo = geo_spec_of_field(pa.field("value", at), path) if isinstance(at, pa.BaseExtensionType) else None
    if geo is not None:
        return PrimitiveType(geo.name)
    simple = (
        ("string", (t.is_string, t.is_large_string, t.is_string_view)),
        ("binary", (t.is_binary, t.is_large_binary, t.is_binary_view, t.is_fixed_size_binary)),
        ("byte", (t.is_int8,)),
        ("short", (t.is_int16, t.is_uint8)),
        ("integer", (t.is_int32, t.is_uint16)),
        ("long", (t.is_int64, t.is_uint32)),
        ("float", (t.is_float16, t.is_float32)),
        ("double", (t.is_float64,)),
        ("boolean", (t.is_boolean,)),
        ("date", (t.is_date32, t.is_date64)),
        ("void", (t.is_null,)),
    )
    for name, preds in simple:
        if any(p(at) for p in preds):
            return PrimitiveType(name)
    if t.is_uint64(at):
        return DecimalType(20, 0)
    if t.is_timestamp(at):
        return PrimitiveType("timestamp" if at.tz is not None else "timestamp_ntz")
    if t.is_decimal(at) and at.precision <= 38 and at.scale >= 0:
        return DecimalType(at.precision, at.scale)
    if t.is_dictionary(at):
        return from_arrow_type(at.value_type, path)
    if any(p(at) for p in (t.is_list, t.is_large_list, t.is_fixed_size_list, t.is_list_view)) or (
        t.is_large_list_view(at)
    ):
        vf = at.value_field  # type: ignore[attr-defined,unused-ignore]
        return ArrayType(from_arrow_field(vf, join_path(path, "element")), vf.nullable)
    if t.is_map(at):
        key = from_arrow_type(at.key_type, join_path(path, "key"))
        return MapType(key, from_arrow_field(at.item_field, join_path(path, "value")), at.item_field.nullable)
    if t.is_struct(at):
        return _struct_from_arrow([at.field(i) for i in range(at.num_fields)], path)
    raise SchemaError(f"column {path or '<value>'!r} has Arrow type {at}, which Delta cannot store")


def _struct_from_arrow(fields: list[pa.Field[Any]], path: str) -> StructType:
    _check_unique([f.name for f in fields], path)
    out = [StructField(f.name, from_arrow_field(f, join_path(path, f.name)), f.nullable) for f in fields]
    return StructType(tuple(out))


# ------------------------------------------------------------------------------------ column mapping


def check_mapping_mode(mode: str) -> str:
    m = (mode or "none").lower()
    if m not in _MODES:
        raise InvalidArgumentError(f"unknown column mapping mode {mode!r} (expected none, name or id)")
    return m


def physical_name(field: StructField, mode: str) -> str:
    """The name the column has in data files under column-mapping ``mode`` (``none``/``name``/``id``).

    Example:
        >>> f = StructField("a", PrimitiveType("long"), True, {COLUMN_MAPPING_PHYSICAL_NAME_KEY: "col-1"})
        >>> physical_name(f, "name"), physical_name(f, "none")
        ('col-1', 'a')
    """
    if check_mapping_mode(mode) == "none":
        return field.name
    value = field.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY)
    if value is None:
        return field.name
    if not isinstance(value, str) or not value:
        raise SchemaError(f"column {field.name!r} has an invalid physical name {value!r}")
    return value


def field_id(field: StructField) -> int | None:
    """The column-mapping id of a field (``delta.columnMapping.id``), or None.

    Example:
        >>> field_id(StructField("a", PrimitiveType("long"), True, {COLUMN_MAPPING_ID_KEY: 7}))
        7
    """
    return _as_id(field.metadata.get(COLUMN_MAPPING_ID_KEY), field.name)


def _as_id(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SchemaError(f"column {what!r} has an invalid column mapping id {value!r}")
    try:
        return int(value)
    except ValueError:
        raise SchemaError(f"column {what!r} has an invalid column mapping id {value!r}") from None


def _id_metadata(fid: int | None) -> dict[bytes, bytes] | None:
    return None if fid is None else {PARQUET_FIELD_ID: str(fid).encode()}


def physical_arrow_schema(schema: StructType, mode: str) -> pa.Schema:
    """The Arrow schema of data files: physical names at every level, Parquet field ids where known.

    Ids of list elements and map keys/values come from ``delta.columnMapping.nested.ids``.

    Example:
        >>> f = StructField("a", PrimitiveType("long"), True,
        ...                 {COLUMN_MAPPING_ID_KEY: 3, COLUMN_MAPPING_PHYSICAL_NAME_KEY: "col-a"})
        >>> physical_arrow_schema(StructType((f,)), "id").field("col-a").metadata
        {b'PARQUET:field_id': b'3'}
    """
    m = check_mapping_mode(mode)
    return pa.schema([_physical_field(f, m) for f in schema.fields])


def _physical_field(f: StructField, mode: str) -> pa.Field[Any]:
    name = physical_name(f, mode)
    fid = field_id(f) if mode != "none" else None
    nested = f.metadata.get(COLUMN_MAPPING_NESTED_IDS_KEY) if mode != "none" else None
    at = _physical_type(f.type, mode, name, nested if isinstance(nested, Mapping) else {})
    return pa.field(name, at, nullable=f.nullable, metadata=_id_metadata(fid))


def _physical_type(dt: DataType, mode: str, path: str, nested: Mapping[str, Any]) -> pa.DataType:
    def child(name: str, ct: DataType, nullable: bool) -> pa.Field[Any]:
        cpath = f"{path}.{name}"
        at = _physical_type(ct, mode, cpath, nested)
        return pa.field(name, at, nullable=nullable, metadata=_id_metadata(_as_id(nested.get(cpath), cpath)))

    if isinstance(dt, StructType):
        return pa.struct([_physical_field(f, mode) for f in dt.fields])
    if isinstance(dt, ArrayType):
        return pa.list_(child("element", dt.element_type, dt.contains_null))
    if isinstance(dt, MapType):
        return _map_type(child("key", dt.key_type, False), child("value", dt.value_type, dt.value_contains_null))
    return to_arrow_type(dt)
