"""Reading shredded variants: a data file's ``metadata`` / ``value`` / ``typed_value`` group put back
together as the unshredded encoding (``struct<value: binary, metadata: binary>``).

A writer of a table with the ``variantShredding`` feature may store part of a variant column in typed
Parquet columns (Parquet's variant shredding): next to the ``metadata`` dictionary, ``value`` holds what
was not shredded (variant-encoded) and ``typed_value`` the shredded part, as

* a primitive column (boolean, integers, float, double, decimal, date, time, timestamp with or without
  time zone, in micro- or nanoseconds, binary, string, UUID) when the row's value has that type;
* a struct of fields, each itself a ``value`` / ``typed_value`` pair, when the row's value is an object
  whose fields are shredded (``value`` then holds the object's other fields, if any);
* a list of such pairs when the row's value is an array.

Per pair: only ``value`` set is that (variant-encoded) value; only ``typed_value`` set is the typed value;
neither set is a missing object field (at the top level: a variant null); both set is only allowed for a
partly shredded object. :func:`unshred` encodes the typed parts column by column (fixed-width values
vectorized) and assembles objects and arrays row by row; anything else raises
:class:`~deltalog.errors.SchemaError` naming the column and the row.

Example:
    >>> import pyarrow as pa
    >>> shredded = pa.StructArray.from_arrays(
    ...     [pa.array([b"\\x01\\x00\\x00"] * 2), pa.array([None, b"\\x15hello"]), pa.array([7, None])],
    ...     names=["metadata", "value", "typed_value"])
    >>> from deltalog.protocol.variant import to_python_list
    >>> to_python_list(unshred(shredded, "v"))
    [7, 'hello']
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from decimal import Context, Decimal
from itertools import accumulate
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa

from deltalog.errors import SchemaError
from deltalog.protocol.variant import PRIMITIVES, SIZED, Malformed, dictionary, layout, read_uint

__all__ = ["is_shredded", "unshred"]

_NULL = b"\x00"
_EXACT = Context(prec=80)


def is_shredded(arr_type: pa.DataType) -> bool:
    """Whether a file's variant column type is shredded (a struct with a ``typed_value`` field).

    Example:
        >>> is_shredded(pa.struct([("metadata", pa.binary()), ("value", pa.binary())]))
        False
    """
    return bool(pa.types.is_struct(arr_type) and arr_type.get_field_index("typed_value") >= 0)


def _head(basic: int, header: int) -> bytes:
    return bytes([basic | (header << 2)])


def _width(n: int) -> int:
    return 1 if n < 1 << 8 else 2 if n < 1 << 16 else 3 if n < 1 << 24 else 4


def _sized(type_id: int, data: bytes) -> bytes:
    return _head(0, type_id) + len(data).to_bytes(4, "little") + data


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _head(1, len(data)) + data if len(data) < 64 else _sized(16, data)


_Column = list[bytes | None]
_Field = tuple[str, int, bytes]  # an object field: (name, field id, encoded value)


def _per_value(encode: Callable[[Any], bytes]) -> Callable[[pa.Array[Any]], _Column]:
    return lambda arr: [None if v is None else encode(v) for v in arr.to_pylist()]


def _decimal(type_id: int, width: int, scale: int) -> Callable[[pa.Array[Any]], _Column]:
    head = _head(0, type_id) + bytes([scale])

    def encode(value: Decimal) -> bytes:
        unscaled = int(value.scaleb(scale, _EXACT))  # the default context would round to 28 digits
        return head + unscaled.to_bytes(width, "little", signed=True)

    return _per_value(encode)


def _fixed(type_id: int, dtype: str, storage: pa.DataType) -> Callable[[pa.Array[Any]], _Column]:
    """Fixed-width values, encoded for the whole column at once: a header byte and the little-endian value."""
    record = np.dtype([("head", "u1"), ("value", dtype)])

    def encode(arr: pa.Array[Any]) -> _Column:
        values = arr.cast(storage) if arr.type != storage else arr
        packed = np.empty(len(arr), dtype=record)
        packed["head"] = type_id << 2
        packed["value"] = values.fill_null(0).to_numpy(zero_copy_only=False)
        buf, w = packed.tobytes(), record.itemsize
        out: _Column = [buf[i * w : i * w + w] for i in range(len(arr))]
        if arr.null_count:
            for i in np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False)):
                out[i] = None
        return out

    return encode


def _primitive(t: pa.DataType) -> Callable[[pa.Array[Any]], _Column] | None:
    """The column encoder of a primitive ``typed_value`` type (``None`` where the column is null)."""
    types = pa.types
    if types.is_boolean(t):
        true, false = _head(0, 1), _head(0, 2)
        return _per_value(lambda v: true if v else false)
    for check, type_id, dtype, storage in (
        (types.is_int8, 3, "<i1", pa.int8()), (types.is_int16, 4, "<i2", pa.int16()),
        (types.is_int32, 5, "<i4", pa.int32()), (types.is_int64, 6, "<i8", pa.int64()),
        (types.is_float64, 7, "<f8", pa.float64()), (types.is_float32, 14, "<f4", pa.float32()),
        (types.is_date32, 11, "<i4", pa.int32()), (types.is_time64, 17, "<i8", pa.int64()),
    ):
        if check(t) and (type_id != 17 or t.unit == "us"):
            return _fixed(type_id, dtype, storage)
    if types.is_timestamp(t) and t.unit in ("us", "ns"):
        nanos = t.unit == "ns"
        type_id = (18 if nanos else 12) if t.tz is not None else (19 if nanos else 13)
        return _fixed(type_id, "<i8", pa.int64())
    if types.is_decimal(t):
        if t.precision <= 9:
            return _decimal(8, 4, t.scale)
        return _decimal(9, 8, t.scale) if t.precision <= 18 else _decimal(10, 16, t.scale)
    if types.is_fixed_size_binary(t) and t.byte_width == 16:  # UUID (big-endian bytes, as stored)
        head = _head(0, 20)
        return _per_value(lambda v: head + bytes(v))
    if types.is_binary(t) or types.is_large_binary(t) or types.is_binary_view(t):
        return _per_value(lambda v: _sized(15, bytes(v)))
    if types.is_string(t) or types.is_large_string(t) or types.is_string_view(t):
        return _per_value(_string)
    return None


# -- reading the parts of an encoded value ---------------------------------------------------------------

def _size(buf: bytes, pos: int) -> int:
    """The number of bytes of the encoded value at ``pos``."""
    head = read_uint(buf, pos, 1)
    basic, header = head & 0x03, head >> 2
    if basic == 0:
        if header in SIZED:
            return 5 + read_uint(buf, pos + 1, 4)
        if header not in PRIMITIVES:
            raise Malformed(f"unknown primitive type id {header}")
        return 1 + PRIMITIVES[header][0]
    if basic == 1:
        return 1 + header
    count, _, _, offsets_at, offset_size = layout(buf, pos)
    data_at = offsets_at + offset_size * (count + 1)
    return data_at - pos + read_uint(buf, offsets_at + offset_size * count, offset_size)


def _object_fields(buf: bytes) -> list[tuple[int, bytes]]:
    """The (field id, encoded value) pairs of the object ``buf`` holds."""
    if not buf or buf[0] & 0x03 != 2:
        raise Malformed("value holds no object, but typed_value holds shredded object fields")
    count, ids_at, id_size, offsets_at, offset_size = layout(buf, 0)
    data_at = offsets_at + offset_size * (count + 1)
    fields = []
    for i in range(count):
        start = data_at + read_uint(buf, offsets_at + offset_size * i, offset_size)
        fields.append((read_uint(buf, ids_at + id_size * i, id_size), buf[start : start + _size(buf, start)]))
    return fields


# -- encoding objects and arrays -------------------------------------------------------------------------

def _offsets(values: list[bytes]) -> tuple[int, list[int]]:
    offsets = list(accumulate(map(len, values), initial=0))
    return _width(offsets[-1]), offsets


def _array(values: list[bytes]) -> bytes:
    offset_size, offsets = _offsets(values)
    if len(values) < 256 and offset_size == 1:  # the common small case: every size one byte
        return b"".join([b"\x03", bytes((len(values),)), bytes(offsets), *values])
    large = len(values) > 255
    out = [_head(3, (large << 2) | (offset_size - 1)), len(values).to_bytes(4 if large else 1, "little")]
    out += [o.to_bytes(offset_size, "little") for o in offsets]
    return b"".join(out + values)


def _object(fields: list[_Field]) -> bytes:
    """An object of (name, field id, encoded value) fields, ids in the order of their names."""
    fields.sort(key=itemgetter(0))
    values = [f[2] for f in fields]
    ids = [f[1] for f in fields]
    offset_size, offsets = _offsets(values)
    id_size = _width(max(ids, default=0))
    if len(fields) < 256 and offset_size == 1 and id_size == 1:  # the common small case
        return b"".join([b"\x02", bytes((len(fields),)), bytes(ids), bytes(offsets), *values])
    large = len(fields) > 255
    out = [_head(2, (large << 4) | ((id_size - 1) << 2) | (offset_size - 1)),
           len(fields).to_bytes(4 if large else 1, "little")]
    out += [i.to_bytes(id_size, "little") for i in ids]
    out += [o.to_bytes(offset_size, "little") for o in offsets]
    return b"".join(out + values)


class _Keys:
    """A row's metadata dictionary: key names by id and ids by name."""

    __slots__ = ("ids", "names")

    def __init__(self, metadata: bytes) -> None:
        self.names = dictionary(metadata)
        self.ids = {name: i for i, name in enumerate(self.names)}


_NO_KEYS = _Keys(b"\x01\x00\x00")


class _BadRow(Exception):
    """A :class:`~deltalog.protocol.variant.Malformed` at a position of the array being encoded."""

    def __init__(self, row: int, why: str) -> None:
        super().__init__(why)
        self.row = row


_Encode = Callable[[Any, list[_Keys]], _Column]


def _typed(t: pa.DataType, path: str) -> _Encode:
    """The column encoder of a ``typed_value`` of type ``t`` other than shredded object fields (those are
    :func:`_shredded_object`'s): the encoded values, ``None`` where null;
    ``keys`` holds each position's metadata dictionary."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _shredded_array(t, path)
    primitive = _primitive(t)
    if primitive is None:
        raise SchemaError(f"column {path!r}: typed_value of type {t} is not a shredded variant type")
    return lambda arr, keys: primitive(arr)


def _shredded_array(t: pa.ListType, path: str) -> _Encode:
    element = _pair(t.value_type, f"{path}.element")

    def encode(arr: pa.Array[Any], keys: list[_Keys]) -> _Column:
        lengths = arr.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)])
        parents = np.repeat(np.arange(len(arr)), lengths)
        try:
            items = element(arr.flatten(), [keys[i] for i in parents])
        except _BadRow as bad:  # an element's position -> its array's row
            raise _BadRow(int(parents[bad.row]), bad.args[0]) from None
        out: _Column = []
        for i, valid in enumerate(arr.is_valid().to_pylist()):
            values = items[starts[i] : starts[i + 1]]
            if not valid:
                out.append(None)
            elif any(v is None for v in values):
                raise _BadRow(i, "an array element is missing (neither value nor typed_value is set)")
            else:
                out.append(_array(values))  # type: ignore[arg-type]
        return out

    return encode


def _pair(t: pa.DataType, path: str) -> _Encode:
    """The column encoder of shredded fields or elements (structs of ``value`` and ``typed_value``);
    ``None`` where the field is missing."""
    if not pa.types.is_struct(t) or (t.get_field_index("value") < 0 and t.get_field_index("typed_value") < 0):
        raise SchemaError(f"column {path!r}: a shredded field must be a struct of value and typed_value, not {t}")
    typed_type = t.field("typed_value").type if t.get_field_index("typed_value") >= 0 else None
    shredded_object = None
    typed = None
    if typed_type is not None and pa.types.is_struct(typed_type):
        shredded_object = _shredded_object(typed_type, f"{path}.typed_value")
    elif typed_type is not None:
        typed = _typed(typed_type, f"{path}.typed_value")
    has_value = t.get_field_index("value") >= 0

    def encode(arr: pa.Array[Any], keys: list[_Keys]) -> _Column:
        valid = arr.is_valid().to_pylist()
        children = dict(zip([f.name for f in arr.type], arr.flatten(), strict=True))  # null where arr is null
        values = children["value"].to_pylist() if has_value else [None] * len(arr)
        if shredded_object is not None:
            return shredded_object(children["typed_value"], keys, valid, values)
        encoded = typed(children["typed_value"], keys) if typed is not None else [None] * len(arr)
        out: _Column = []
        for i, (ok, value, typed_value) in enumerate(zip(valid, values, encoded, strict=True)):
            if not ok or typed_value is None:
                out.append(None if not ok or value is None else bytes(value))
            elif value is None:
                out.append(typed_value)
            else:
                raise _BadRow(i, "both value and typed_value are set for a value that is not an object")
        return out

    return encode


def _unshredded_fields(value: bytes, shredded: list[_Field], keys: _Keys) -> list[_Field]:
    """The fields of a partly shredded object kept in ``value``; none may be shredded as well."""
    taken = {fid for _, fid, _ in shredded}
    out = []
    for fid, raw in _object_fields(value):
        if fid >= len(keys.names):
            raise Malformed(f"value names a field id beyond the metadata dictionary ({len(keys.names)} keys)")
        if fid in taken:
            raise Malformed(f"the field {keys.names[fid]!r} is both shredded and in value")
        out.append((keys.names[fid], fid, raw))
    return out


def _shredded_object(t: pa.StructType, path: str) -> Callable[[Any, list[_Keys], list[bool], list[Any]], _Column]:
    """The column encoder of a pair whose ``typed_value`` holds shredded object fields: given the pair's
    validity and ``value`` column, the encoded objects. Where ``value`` is set too, the object is partly
    shredded and its other fields are in ``value``; where ``typed_value`` is null, ``value`` is the value."""
    names = [t.field(i).name for i in range(t.num_fields)]
    fields = [_pair(t.field(i).type, f"{path}.{name}") for i, name in enumerate(names)]

    def encode(arr: pa.Array[Any], keys: list[_Keys], valid: list[bool], values: list[Any]) -> _Column:
        columns = [field(child, keys) for child, field in zip(arr.flatten(), fields, strict=True)]
        out: _Column = []
        for row, (ok, typed_ok, value) in enumerate(zip(valid, arr.is_valid().to_pylist(), values, strict=True)):
            if not ok or not typed_ok:
                out.append(None if not ok or value is None else bytes(value))
                continue
            present = []
            for name, column in zip(names, columns, strict=True):
                encoded = column[row]
                if encoded is None:
                    continue
                fid = keys[row].ids.get(name)
                if fid is None:
                    raise _BadRow(row, f"the shredded field {name!r} is not in the row's metadata dictionary")
                present.append((name, fid, encoded))
            if value is not None:
                try:
                    present += _unshredded_fields(bytes(value), present, keys[row])
                except Malformed as bad:
                    raise _BadRow(row, str(bad)) from None
            out.append(_object(present))
        return out

    return encode


def unshred(arr: pa.Array[Any], path: str) -> pa.StructArray:
    """The unshredded variant column (``struct<value, metadata>``, binaries) of a shredded one read from a
    data file; null rows stay null, and a row with neither ``value`` nor ``typed_value`` reads as a variant
    null. ``path`` names the column in errors.

    Example:
        >>> meta = b"\\x01\\x01\\x00\\x01a"                    # the dictionary ["a"]
        >>> obj = pa.StructArray.from_arrays([pa.array([b"\\x0c\\x05"]), pa.array([None], pa.int8())],
        ...                                   names=["value", "typed_value"])
        >>> shredded = pa.StructArray.from_arrays(
        ...     [pa.array([meta]), pa.array([None], pa.binary()), pa.StructArray.from_arrays([obj], names=["a"])],
        ...     names=["metadata", "value", "typed_value"])
        >>> from deltalog.protocol.variant import to_python_list
        >>> to_python_list(unshred(shredded, "v"))
        [{'a': 5}]
    """
    t = arr.type
    if t.get_field_index("metadata") < 0:
        raise SchemaError(f"column {path!r}: a shredded variant needs a metadata column, the file has {t}")
    parts = [f.name for f in t if f.name != "metadata"]
    encode = _pair(pa.struct([t.field(n) for n in parts]), path)
    metadatas = arr.field("metadata").to_pylist()
    valid = arr.is_valid().to_pylist()
    cache: dict[bytes, _Keys] = {}
    keys = []
    try:
        for row, (ok, metadata) in enumerate(zip(valid, metadatas, strict=True)):
            if not ok or metadata is None:
                keys.append(_NO_KEYS)
                continue
            try:
                found = cache.get(metadata)
                if found is None:
                    found = cache[metadata] = _Keys(metadata)
            except (Malformed, UnicodeDecodeError) as exc:
                raise _BadRow(row, str(exc)) from None
            keys.append(found)
        top = pa.StructArray.from_arrays([arr.field(n) for n in parts], names=parts,  # null rows: not looked at
                                         mask=arr.is_null() if arr.null_count else None)
        values = encode(top, keys)
    except _BadRow as bad:
        raise SchemaError(f"column {path!r}: row {bad.row} is not a valid shredded variant ({bad.args[0]})") from None
    except (Malformed, IndexError, UnicodeDecodeError, OverflowError, struct.error) as exc:
        raise SchemaError(f"column {path!r}: a row is not a valid shredded variant ({exc})") from None
    out = [None if not ok else (_NULL if v is None else v) for ok, v in zip(valid, values, strict=True)]
    return pa.StructArray.from_arrays(
        [pa.array(out, pa.binary()), pa.array([m if ok else None for ok, m in zip(valid, metadatas, strict=True)],
                                              pa.binary())],
        names=["value", "metadata"], mask=arr.is_null() if arr.null_count else None)
