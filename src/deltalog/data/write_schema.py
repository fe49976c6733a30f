"""Schema enforcement and evolution for writes.

:func:`resolve_schema` compares the data's schema with the table's and returns the schema to write
with (and whether the table's schema changes):

* no ``schema_mode``: the data must have exactly the table's columns with the same types (Arrow
  variants of one Delta type -- ``large_string`` for ``string``, nanosecond timestamps -- are the same
  type) or, at the top level, types that convert to them without loss (:func:`widens`: ``int32`` data
  into a ``long`` column, as delta-spark and delta-rs write it); otherwise
  :class:`~deltalog.errors.SchemaError` lists every differing column;
* ``"merge"``: new columns are added (nullable, also inside structs), missing columns are written as
  nulls, and data of a narrower type is widened to the table's type (``byte → short → integer →
  long``, ``float → double``, integers to ``double``/wide enough decimals, ``date`` to timestamps);
  a ``void`` column (only nulls so far) takes the data's type, as in delta-spark;
  a wider data type than the table's is refused -- unless ``widen`` (the table sets
  ``delta.enableTypeWidening``): then the column takes the data's type where
  :func:`deltalog.protocol.type_widening.can_widen` allows it, recorded in ``delta.typeChanges``;
* ``"overwrite"``: the data's schema replaces the table's.

Example:
    >>> import pyarrow as pa
    >>> from deltalog.protocol.schema import StructType
    >>> table = StructType.from_arrow_schema(pa.schema([("a", pa.int64())]))
    >>> resolve_schema(table, pa.schema([("a", pa.int32()), ("b", pa.string())]), "merge", table="t")
    ... # doctest: +ELLIPSIS
    (StructType(fields=(StructField(name='a', ...), StructField(name='b', ...))), True)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyarrow as pa

from deltalog.errors import SchemaError
from deltalog.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    from_arrow_field,
    geo_spec,
    is_void,
)
from deltalog.protocol.type_widening import can_widen, widened

__all__ = ["SchemaRemedies", "data_schema", "describe_type", "resolve_schema", "widens"]


@dataclass(frozen=True)
class SchemaRemedies:
    """How the caller's API says "merge the data's schema into the table's" (``merge``) and "replace the
    table's schema" (``overwrite``), for the advice of schema and partitioning mismatch errors. The
    defaults are the kernel's (:func:`deltalog.write_table`); Spark writes name their writer options.

    Example:
        >>> SchemaRemedies().merge
        'schema_mode="merge"'
    """

    merge: str = 'schema_mode="merge"'
    overwrite: str = 'mode="overwrite" with schema_mode="overwrite"'


_INT_RANK = {"byte": 1, "short": 2, "integer": 3, "long": 4}
_INT_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 20}


def describe_type(t: DataType) -> str:
    """A short type name for messages.

    Example:
        >>> describe_type(PrimitiveType("long"))
        'long'
    """
    if isinstance(t, PrimitiveType):
        return t.name
    if isinstance(t, DecimalType):
        return f"decimal({t.precision},{t.scale})"
    if isinstance(t, ArrayType):
        return f"array<{describe_type(t.element_type)}>"
    if isinstance(t, MapType):
        return f"map<{describe_type(t.key_type)},{describe_type(t.value_type)}>"
    return "struct<" + ",".join(f"{f.name}:{describe_type(f.type)}" for f in t.fields) + ">"


def data_schema(schema: pa.Schema, *, table: str | None = None) -> StructType:
    """The Delta schema of incoming Arrow data (unsupported Arrow types raise :class:`SchemaError`).

    Example:
        >>> data_schema(pa.schema([("t", pa.timestamp("ns"))])).fields[0].type
        PrimitiveType(name='timestamp_ntz')
    """
    fields = []
    seen: dict[str, str] = {}
    for f in schema:
        low = f.name.lower()
        if low in seen:
            raise SchemaError(f"data has duplicate columns {seen[low]!r} and {f.name!r}", table=table)
        seen[low] = f.name
        try:
            fields.append(StructField(f.name, from_arrow_field(f, f.name), f.nullable, {}))
        except SchemaError as exc:
            raise SchemaError(exc.message, table=table) from None
    return StructType(tuple(fields))


def _same(a: DataType, b: DataType) -> bool:
    """Equal types, ignoring nullability flags and field metadata."""
    if isinstance(a, StructType) and isinstance(b, StructType):
        return len(a.fields) == len(b.fields) and all(
            x.name == y.name and _same(x.type, y.type) for x, y in zip(a.fields, b.fields)
        )
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return _same(a.element_type, b.element_type)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return _same(a.key_type, b.key_type) and _same(a.value_type, b.value_type)
    return a == b


def widens(data: DataType, table: DataType) -> bool:
    """True when values of ``data`` convert to ``table`` without loss (Spark's safe up-casts); ``binary`` data
    goes into a geospatial column as the WKB it stores.

    Example:
        >>> int_, long_ = PrimitiveType("integer"), PrimitiveType("long")
        >>> widens(int_, long_), widens(long_, int_)
        (True, False)
    """
    if not isinstance(data, PrimitiveType):
        return False
    if is_void(data):  # a column of nulls fits any column
        return True
    if isinstance(table, DecimalType):
        digits = _INT_DIGITS.get(data.name)
        return digits is not None and table.precision - table.scale >= digits
    if not isinstance(table, PrimitiveType):
        return False
    d, t = data.name, table.name
    if geo_spec(table) is not None:
        return d == "binary"
    if d in _INT_RANK and t in _INT_RANK:
        return _INT_RANK[d] < _INT_RANK[t]
    if t == "double":
        return d in ("float", "byte", "short", "integer")
    if d == "date":
        return t in ("timestamp", "timestamp_ntz")
    return False


def _merge_type(table_t: DataType, data_t: DataType, path: str, problems: list[str]) -> DataType:
    if _same(table_t, data_t) or widens(data_t, table_t):
        return table_t
    if is_void(table_t):  # a column of nulls takes the data's type
        return _nullable_everywhere(data_t)
    if isinstance(table_t, StructType) and isinstance(data_t, StructType):
        return _merge_struct(table_t, data_t, path, problems)
    if isinstance(table_t, ArrayType) and isinstance(data_t, ArrayType):
        return replace(
            table_t, element_type=_merge_type(table_t.element_type, data_t.element_type, f"{path}.element", problems)
        )
    if isinstance(table_t, MapType) and isinstance(data_t, MapType):
        return replace(
            table_t,
            key_type=_merge_type(table_t.key_type, data_t.key_type, f"{path}.key", problems),
            value_type=_merge_type(table_t.value_type, data_t.value_type, f"{path}.value", problems),
        )
    problems.append(
        f"{path}: table {describe_type(table_t)} vs data {describe_type(data_t)} (cannot be merged: a wider "
        "type needs type widening -- set delta.enableTypeWidening=true -- and this change is not one it allows)"
    )
    return table_t


def _merge_struct(table_s: StructType, data_s: StructType, prefix: str, problems: list[str],
                  widen: bool = False) -> StructType:
    by_lower = {f.name.lower(): f for f in data_s.fields}
    out = []
    for f in table_s.fields:
        d = by_lower.pop(f.name.lower(), None)
        if d is None:
            out.append(f)
            continue
        path = f"{prefix}{f.name}"
        if widen and can_widen(f.type, d.type):  # type widening: the column takes the wider type
            out.append(widened(f, d.type))
        elif widen and isinstance(f.type, StructType) and isinstance(d.type, StructType):
            out.append(replace(f, type=_merge_struct(f.type, d.type, f"{path}.", problems, widen)))
        else:
            out.append(replace(f, type=_merge_type(f.type, d.type, path, problems)))
    for d in data_s.fields:
        if d.name.lower() in by_lower:
            out.append(StructField(d.name, _nullable_everywhere(d.type), True, {}))
    return StructType(tuple(out))


def _nullable_everywhere(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return StructType(tuple(StructField(f.name, _nullable_everywhere(f.type), True, {}) for f in t.fields))
    return t


def _fits(table_t: DataType, data_t: DataType) -> bool:
    """Whether ``data_t`` values are written in a ``table_t`` column without changing its type: structs
    (at any depth) whose fields come in another order, lack some of the table's (written as null) or hold
    narrower types -- as delta-spark accepts them without schema merging."""
    if not isinstance(table_t, (StructType, ArrayType, MapType)):
        return False  # (leaves: equal or narrower, checked by the caller)
    problems: list[str] = []
    merged = _merge_type(table_t, data_t, "", problems)
    return not problems and _same(merged, table_t)


def _strict_problems(table_s: StructType, data_s: StructType) -> list[str]:
    problems = []
    data_by_name = {f.name: f for f in data_s.fields}
    for f in table_s.fields:
        d = data_by_name.pop(f.name, None)
        if d is None:
            problems.append(f"{f.name}: table {describe_type(f.type)} vs data (missing)")
        elif not _same(f.type, d.type) and not widens(d.type, f.type) and not _fits(f.type, d.type):
            problems.append(f"{f.name}: table {describe_type(f.type)} vs data {describe_type(d.type)}")
    for d in data_by_name.values():
        problems.append(f"{d.name}: table (missing) vs data {describe_type(d.type)}")
    return problems


def resolve_schema(
    table_schema: StructType, data: pa.Schema, schema_mode: str | None, *, table: str | None = None,
    widen: bool = False, remedies: SchemaRemedies | None = None,
) -> tuple[StructType, bool]:
    """The schema to write with and whether it differs from ``table_schema`` (see the module docstring);
    ``remedies`` words the advice of a mismatch.

    Example:
        >>> t = StructType.from_arrow_schema(pa.schema([("a", pa.int64())]))
        >>> resolve_schema(t, pa.schema([("a", pa.string())]), None, table="t")
        Traceback (most recent call last):
        ...
        deltalog.errors.SchemaError: data does not match the table schema: a: table long vs data string; \
pass schema_mode="merge" to add new columns or widen types, or mode="overwrite" with \
schema_mode="overwrite" to replace the schema [table t]
    """
    remedies = remedies or SchemaRemedies()
    incoming = data_schema(data, table=table)
    if schema_mode == "overwrite":
        return incoming, not _same(incoming, table_schema)
    if schema_mode == "merge":
        problems: list[str] = []
        merged = _merge_struct(table_schema, incoming, "", problems, widen)
        if problems:
            raise SchemaError("cannot merge the data's schema into the table's: " + "; ".join(problems), table=table)
        return merged, not _same(merged, table_schema)
    problems = _strict_problems(table_schema, incoming)
    if problems:
        raise SchemaError(
            "data does not match the table schema: " + "; ".join(problems) + f"; pass {remedies.merge} to "
            f"add new columns or widen types, or {remedies.overwrite} to replace the schema",
            table=table,
        )
    return table_schema, False
