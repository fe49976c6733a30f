"""Decoding unshredded variant values (the Parquet Variant binary encoding) into Python values.

A variant column reads as ``struct<value: binary, metadata: binary>`` (see
:mod:`deltalog.protocol.schema`). ``metadata`` holds the dictionary of object keys, ``value`` the value
itself: a primitive, a short string, an object (keys are dictionary ids) or an array.

Python values by variant type: null → ``None``, booleans → ``bool``, int8/16/32/64 → ``int``,
float/double → ``float``, decimal4/8/16 → :class:`~decimal.Decimal`, date → :class:`datetime.date`,
timestamp (UTC) → aware :class:`datetime.datetime`, timestamp without time zone → naive ``datetime``,
time → :class:`datetime.time`, binary → ``bytes``, string → ``str``, uuid → :class:`uuid.UUID`, object →
``dict`` (keys in the encoding's sorted order), array → ``list``. Nanosecond timestamps are truncated to
the microseconds a ``datetime`` holds. Malformed input raises :class:`~deltalog.errors.InvalidArgumentError`.

Example:
    >>> to_python(b"\\x01\\x01\\x00\\x03key", b"\\x02\\x01\\x00\\x00\\x02\\x0c\\x07")   # {"key": 7}
    {'key': 7}
"""

from __future__ import annotations

import datetime as dt
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa

from deltalog.errors import InvalidArgumentError

__all__ = ["to_python", "to_python_list"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NTZ = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)


class Malformed(Exception):
    """A variant's bytes break the encoding (raised by the readers here and in
    :mod:`deltalog.protocol.shredding`; the public functions turn it into a named error)."""


def _take(buf: bytes, pos: int, size: int) -> bytes:
    if pos < 0 or size < 0 or pos + size > len(buf):
        raise Malformed(f"reading {size} byte(s) at offset {pos} runs past the end ({len(buf)} bytes)")
    return buf[pos : pos + size]


def read_uint(buf: bytes, pos: int, size: int) -> int:
    """The little-endian unsigned integer of ``size`` bytes at ``pos`` (:class:`Malformed` past the end).

    Example:
        >>> read_uint(b"\\x01\\x02", 0, 2)
        513
    """
    return int.from_bytes(_take(buf, pos, size), "little")


def dictionary(metadata: bytes) -> list[str]:
    """The object keys of a ``metadata`` binary, by id.

    Example:
        >>> dictionary(b"\\x01\\x01\\x00\\x03key")
        ['key']
    """
    header = read_uint(metadata, 0, 1)
    if header & 0x0F != 1:
        raise Malformed(f"metadata version {header & 0x0F} is not 1")
    size = (header >> 6) + 1
    count = read_uint(metadata, 1, size)
    offsets = [read_uint(metadata, 1 + size * (i + 1), size) for i in range(count + 1)]
    start = 1 + size * (count + 2)
    strings = []
    for i in range(count):
        if offsets[i] > offsets[i + 1]:
            raise Malformed("metadata string offsets decrease")
        strings.append(_take(metadata, start + offsets[i], offsets[i + 1] - offsets[i]).decode("utf-8"))
    return strings


def layout(buf: bytes, pos: int) -> tuple[int, int, int, int, int]:
    """(count, ids at, id size, offsets at, offset size) of the object or array whose header byte is at
    ``pos``; arrays have no ids (size 0). The values start after the ``count + 1`` offsets.

    Example:
        >>> layout(b"\\x03\\x02\\x00\\x02\\x03\\x0c\\x01\\x00", 0)      # [1, null]
        (2, 2, 0, 2, 1)
    """
    head = read_uint(buf, pos, 1)
    basic, header = head & 0x03, head >> 2
    offset_size = (header & 0x03) + 1
    id_size = ((header >> 2) & 0x03) + 1 if basic == 2 else 0
    large = (header >> (4 if basic == 2 else 2)) & 0x01
    count_size = 4 if large else 1
    count = read_uint(buf, pos + 1, count_size)
    ids_at = pos + 1 + count_size
    return count, ids_at, id_size, ids_at + id_size * count, offset_size


def _int(raw: bytes) -> int:
    return int.from_bytes(raw, "little", signed=True)


def _float(raw: bytes) -> float:
    value: float = struct.unpack("<d" if len(raw) == 8 else "<f", raw)[0]
    return value


def _decimal(raw: bytes) -> Decimal:
    scale = raw[0]
    if scale > 38:
        raise Malformed(f"decimal scale {scale} is above 38")
    return Decimal(f"{_int(raw[1:])}E-{scale}")  # exact; scaleb would round to 28 digits


def _micros(epoch: dt.datetime, micros: int) -> dt.datetime:
    return epoch + dt.timedelta(microseconds=micros)


# Primitive type id -> (bytes after the header byte, decoder of those bytes); binary (15) and string (16)
# are sized: a 4-byte length, then the bytes.
PRIMITIVES: dict[int, tuple[int, Callable[[bytes], Any]]] = {
    0: (0, lambda r: None),
    1: (0, lambda r: True),
    2: (0, lambda r: False),
    3: (1, _int),
    4: (2, _int),
    5: (4, _int),
    6: (8, _int),
    7: (8, _float),
    8: (5, _decimal),  # a scale byte, then the unscaled value
    9: (9, _decimal),
    10: (17, _decimal),
    11: (4, lambda r: _EPOCH_DATE + dt.timedelta(days=_int(r))),
    12: (8, lambda r: _micros(_EPOCH, _int(r))),
    13: (8, lambda r: _micros(_EPOCH_NTZ, _int(r))),
    14: (4, _float),
    17: (8, lambda r: _micros(_EPOCH_NTZ, _int(r)).time()),
    18: (8, lambda r: _micros(_EPOCH, _int(r) // 1000)),
    19: (8, lambda r: _micros(_EPOCH_NTZ, _int(r) // 1000)),
    20: (16, lambda r: uuid.UUID(bytes=r)),
}
SIZED: dict[int, Callable[[bytes], Any]] = {15: bytes, 16: lambda r: r.decode("utf-8")}


def _value(buf: bytes, pos: int, keys: list[str], depth: int) -> Any:
    if depth > 500:
        raise Malformed("values are nested more than 500 levels deep")
    head = read_uint(buf, pos, 1)
    basic, header = head & 0x03, head >> 2
    if basic == 0:
        if header in SIZED:
            return SIZED[header](_take(buf, pos + 5, read_uint(buf, pos + 1, 4)))
        if header not in PRIMITIVES:
            raise Malformed(f"unknown primitive type id {header}")
        width, decode = PRIMITIVES[header]
        return decode(_take(buf, pos + 1, width))
    if basic == 1:
        return _take(buf, pos + 1, header).decode("utf-8")
    count, ids_at, id_size, offsets_at, offset_size = layout(buf, pos)
    data_at = offsets_at + offset_size * (count + 1)
    offsets = [read_uint(buf, offsets_at + offset_size * i, offset_size) for i in range(count + 1)]
    values = [_value(buf, data_at + offsets[i], keys, depth + 1) for i in range(count)]
    if basic == 3:
        return values
    out: dict[str, Any] = {}
    for i, v in enumerate(values):
        key_id = read_uint(buf, ids_at + id_size * i, id_size)
        if key_id >= len(keys):
            raise Malformed(f"object field id {key_id} is not in the metadata dictionary ({len(keys)} keys)")
        if keys[key_id] in out:
            raise Malformed(f"object has the key {keys[key_id]!r} twice")
        out[keys[key_id]] = v
    return out


def to_python(metadata: bytes, value: bytes) -> Any:
    """The Python value of one variant, given its ``metadata`` and ``value`` binaries.

    Example:
        >>> to_python(b"\\x01\\x00\\x00", b"\\x15hello")       # a short string, empty dictionary
        'hello'
        >>> to_python(b"\\x01\\x00\\x00", b"\\x03\\x02\\x00\\x02\\x03\\x0c\\x01\\x00")   # [1, null]
        [1, None]
        >>> to_python(b"\\x01\\x00\\x00", b"\\x20\\x02\\x96\\x00\\x00\\x00")   # decimal4 1.50
        Decimal('1.50')
    """
    if metadata is None or value is None:
        raise InvalidArgumentError("malformed variant (null metadata or value: a shredded or null variant?)")
    try:
        keys = dictionary(bytes(metadata))
        return _value(bytes(value), 0, keys, 0)
    except (Malformed, UnicodeDecodeError, OverflowError, ValueError, struct.error) as exc:
        raise InvalidArgumentError(f"malformed variant ({exc})") from None


def to_python_list(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Decode a whole variant column (as :meth:`deltalog.Snapshot.to_arrow` returns it); null rows stay
    ``None`` (a variant holding JSON null decodes to ``None`` too).

    Example:
        >>> arr = pa.array([{"value": b"\\x0c\\x2a", "metadata": b"\\x01\\x00\\x00"}, None])
        >>> to_python_list(arr)
        [42, None]
    """
    rows: list[Any] = column.to_pylist()
    return [None if r is None else to_python(r["metadata"], r["value"]) for r in rows]
