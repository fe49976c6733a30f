"""A table read from a Parquet data file, conformed to the table's *logical* schema (:func:`to_logical`):
columns matched by name, physical name or Parquet field id, renamed, widened, shredded variants put back
together (:mod:`deltalog.protocol.shredding`), geospatial values taken as WKB
(:func:`deltalog.protocol.geospatial.wkb_storage`), and those missing from the file filled with nulls.

Example:
    >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
    >>> s = StructType((StructField("n", PrimitiveType("long")),))
    >>> to_logical(pa.table({"n": pa.array([1], pa.int32())}), s, "none").schema
    n: int64
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import SchemaError
from deltalog.protocol.geospatial import wkb_storage
from deltalog.protocol.schema import (
    PARQUET_FIELD_ID,
    VARIANT,
    VARIANT_STRUCT,
    ArrayType,
    DataType,
    MapType,
    StructType,
    check_mapping_mode,
    field_id,
    geo_spec,
    join_path,
    null_array,
    physical_name,
    to_arrow_type,
    type_string,
)
from deltalog.protocol.shredding import is_shredded, unshred

__all__ = ["to_logical"]


def to_logical(data: pa.Table, schema: StructType, mode: str) -> pa.Table:
    """Conform a table read from a Parquet data file to the table schema.

    Columns are matched by logical name (mode ``none``: exact, then unique case-insensitive), physical
    name (``name``) or Parquet field id (``id``, falling back to physical names where the file has no
    ids), recursively through structs, lists and maps. Missing columns become nulls, extra ones are
    dropped, and types are cast (widened) to the schema's Arrow types. Incompatible data raises
    :class:`SchemaError` naming the column path.

    Example:
        >>> from deltalog.protocol.schema import COLUMN_MAPPING_PHYSICAL_NAME_KEY, PrimitiveType, StructField
        >>> f = StructField("n", PrimitiveType("long"), True, {COLUMN_MAPPING_PHYSICAL_NAME_KEY: "col-n"})
        >>> s = StructType((f, StructField("m", PrimitiveType("string"))))
        >>> to_logical(pa.table({"col-n": pa.array([1, 2], pa.int32())}), s, "name").to_pydict()
        {'n': [1, 2], 'm': [None, None]}
    """
    m = check_mapping_mode(mode)
    matches = _match_fields(list(data.schema), schema, m)
    columns: list[pa.ChunkedArray[Any]] = []
    for f, idx in zip(schema.fields, matches, strict=True):
        at = to_arrow_type(f.type)
        if idx is None:
            chunks = [null_array(data.num_rows, at)]
        else:
            chunks = [_conform(c, f.type, m, f.name) for c in data.column(idx).chunks]
        columns.append(pa.chunked_array(chunks, type=at))  # type: ignore[call-overload,unused-ignore]
    return pa.Table.from_arrays(columns, schema=schema.to_arrow_schema())


def _arrow_field_id(f: pa.Field[Any]) -> int | None:
    raw = (f.metadata or {}).get(PARQUET_FIELD_ID)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _match_fields(file_fields: list[pa.Field[Any]], target: StructType, mode: str) -> list[int | None]:
    by_id: dict[int, int] = {}
    if mode == "id":
        for i, ff in enumerate(file_fields):
            fid = _arrow_field_id(ff)
            if fid is not None:
                by_id.setdefault(fid, i)
    by_name: dict[str, int] = {}
    by_lower: dict[str, list[int]] = {}
    for i, ff in enumerate(file_fields):
        by_name.setdefault(ff.name, i)
        by_lower.setdefault(ff.name.lower(), []).append(i)
    out: list[int | None] = []
    for f in target.fields:
        fid = field_id(f) if by_id else None
        if fid is not None:
            out.append(by_id.get(fid))
            continue
        key = physical_name(f, mode)
        idx = by_name.get(key)
        if idx is None and mode == "none" and len(by_lower.get(key.lower(), ())) == 1:
            idx = by_lower[key.lower()][0]
        out.append(idx)
    return out


def _conform(arr: pa.Array[Any], dt: DataType, mode: str, path: str) -> pa.Array[Any]:
    if isinstance(arr, pa.DictionaryArray):
        arr = arr.dictionary_decode()
    target = to_arrow_type(dt)
    if dt == VARIANT:
        if is_shredded(arr.type):
            arr = unshred(arr, path)
        _check_unshredded(arr, path)
        return _conform_struct(arr, VARIANT_STRUCT, target, "none", path)
    if isinstance(dt, StructType):
        return _conform_struct(arr, dt, target, mode, path)
    if geo_spec(dt) is not None:
        return pa.ExtensionArray.from_storage(target, wkb_storage(arr, path))
    if isinstance(dt, (ArrayType, MapType)):
        return _conform_nested(arr, dt, target, mode, path)
    if pa.types.is_null(arr.type) or arr.null_count == len(arr):
        return null_array(len(arr), target)
    if arr.type == target:
        return arr
    try:
        options = pc.CastOptions(target, allow_time_truncate=True)
        return pc.cast(arr, options=options)  # type: ignore[call-overload,no-any-return,unused-ignore]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"column {path!r}: cannot read file type {arr.type} as {type_string(dt)}: {e}") from None


def _check_unshredded(arr: pa.Array[Any], path: str) -> None:
    """A variant must be stored unshredded: a struct of binary ``value`` and ``metadata`` (any order)."""
    at = arr.type
    if pa.types.is_null(at):
        return
    names = [at.field(i).name for i in range(at.num_fields)] if pa.types.is_struct(at) else []
    binary = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view)
    if sorted(names) != ["metadata", "value"] or not all(
        any(p(at.field(n).type) for p in binary) for n in names
    ):
        raise SchemaError(
            f"column {path!r}: file type {at} is not an unshredded variant "
            "(struct of binary value and metadata)"
        )


def _mismatch(arr: pa.Array[Any], dt: DataType, path: str) -> SchemaError:
    return SchemaError(f"column {path!r}: file type {arr.type} does not match table type {type_string(dt)}")


def _conform_struct(arr: pa.Array[Any], dt: StructType, target: pa.DataType, mode: str, path: str) -> pa.Array[Any]:
    if pa.types.is_null(arr.type):
        return null_array(len(arr), target)
    if not isinstance(arr, pa.StructArray):
        raise _mismatch(arr, dt, path)
    file_fields = [arr.type.field(i) for i in range(arr.type.num_fields)]
    children = []
    for f, idx in zip(dt.fields, _match_fields(file_fields, dt, mode), strict=True):
        if idx is None:
            children.append(null_array(len(arr), to_arrow_type(f.type)))
        else:
            children.append(_conform(arr.field(idx), f.type, mode, join_path(path, f.name)))
    mask = arr.is_null() if arr.null_count else None
    if not children:  # an empty struct: nothing to zip, build from the validity alone
        validity = None if mask is None else pc.invert(mask).buffers()[1]
        return pa.Array.from_buffers(target, len(arr), [validity])
    fields = [target.field(i) for i in range(target.num_fields)]
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def _conform_nested(
    arr: pa.Array[Any], dt: ArrayType | MapType, target: pa.DataType, mode: str, path: str
) -> pa.Array[Any]:
    t = pa.types
    if t.is_null(arr.type):
        return null_array(len(arr), target)
    nested: Any = arr  # a list-like or map array; the stubs type the common base only
    if isinstance(dt, MapType):
        if not t.is_map(arr.type):
            raise _mismatch(arr, dt, path)
    elif t.is_fixed_size_list(arr.type) or t.is_list_view(arr.type) or t.is_large_list_view(arr.type):
        nested = nested.cast(pa.list_(nested.type.value_field))
    elif not (t.is_list(arr.type) or t.is_large_list(arr.type)):
        raise _mismatch(arr, dt, path)
    # Rebase the offsets to start at 0 and slice the child to the entries this (maybe sliced) array uses:
    # Arrow cannot combine a validity mask with offsets that are themselves a slice.
    raw_offsets = nested.offsets
    start, end = raw_offsets[0].as_py(), raw_offsets[-1].as_py()
    offsets = pc.cast(pc.subtract(raw_offsets, pa.scalar(start, raw_offsets.type)), pa.int32())
    mask = nested.is_null() if nested.null_count else None
    result: pa.Array[Any]
    if isinstance(dt, MapType):
        k = _conform(nested.keys.slice(start, end - start), dt.key_type, mode, join_path(path, "key"))
        v = _conform(nested.items.slice(start, end - start), dt.value_type, mode, join_path(path, "value"))
        result = pa.MapArray.from_arrays(offsets, k, v, type=target, mask=mask)  # type: ignore[call-overload,unused-ignore]
    else:
        child = nested.values.slice(start, end - start)
        values = _conform(child, dt.element_type, mode, join_path(path, "element"))
        result = pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    return result
