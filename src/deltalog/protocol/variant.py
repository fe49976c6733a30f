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


class _Malformed(Exception):
    pass


def _take(buf: bytes, pos: int, size: int) -> bytes:
    if pos < 0 or size < 0 or pos + size > len(buf):
        raise _Malformed(f"reading {size} byte(s) at offset {pos} runs past the end ({len(buf)} bytes)")
    return buf[pos : pos + size]


def _uint(buf: bytes, pos: int, size: int) -> int:
    return int.from_bytes(_take(buf, pos, size), "little")


def _int(buf: bytes, pos: int, size: int) -> int:
    return int.from_bytes(_take(buf, pos, size), "little", signed=True)


def _float(buf: bytes, pos: int, size: int) -> float:
    value: float = struct.unpack("<d" if size == 8 else "<f", _take(buf, pos, size))[0]
    return value


def _dictionary(metadata: bytes) -> list[str]:
    header = _uint(metadata, 0, 1)
    if header & 0x0F != 1:
        raise _Malformed(f"metadata version {header & 0x0F} is not 1")
    size = (header >> 6) + 1
    count = _uint(metadata, 1, size)
    offsets = [_uint(metadata, 1 + size * (i + 1), size) for i in range(count + 1)]
    start = 1 + size * (count + 2)
    strings = []
    for i in range(count):
        if offsets[i] > offsets[i + 1]:
            raise _Malformed("metadata string offsets decrease")
        strings.append(_take(metadata, start + offsets[i], offsets[i + 1] - offsets[i]).decode("utf-8"))
    return strings


def _decimal(buf: bytes, pos: int, width: int) -> Decimal:
    scale = _uint(buf, pos, 1)
    if scale > 38:
        raise _Malformed(f"decimal scale {scale} is above 38")
    return Decimal(f"{_int(buf, pos + 1, width)}E-{scale}")  # exact; scaleb would round to 28 digits


def _sized(buf: bytes, pos: int) -> bytes:
    return _take(buf, pos + 4, _uint(buf, pos, 4))


def _micros(epoch: dt.datetime, micros: int) -> dt.datetime:
    return epoch + dt.timedelta(microseconds=micros)


_PRIMITIVES: dict[int, Callable[[bytes, int], Any]] = {
    0: lambda b, p: None,
    1: lambda b, p: True,
    2: lambda b, p: False,
    3: lambda b, p: _int(b, p, 1),
    4: lambda b, p: _int(b, p, 2),
    5: lambda b, p: _int(b, p, 4),
    6: lambda b, p: _int(b, p, 8),
    7: lambda b, p: _float(b, p, 8),
    8: lambda b, p: _decimal(b, p, 4),
    9: lambda b, p: _decimal(b, p, 8),
    10: lambda b, p: _decimal(b, p, 16),
    11: lambda b, p: _EPOCH_DATE + dt.timedelta(days=_int(b, p, 4)),
    12: lambda b, p: _micros(_EPOCH, _int(b, p, 8)),
    13: lambda b, p: _micros(_EPOCH_NTZ, _int(b, p, 8)),
    14: lambda b, p: _float(b, p, 4),
    15: _sized,
    16: lambda b, p: _sized(b, p).decode("utf-8"),
    17: lambda b, p: _micros(_EPOCH_NTZ, _int(b, p, 8)).time(),
    18: lambda b, p: _micros(_EPOCH, _int(b, p, 8) // 1000),
    19: lambda b, p: _micros(_EPOCH_NTZ, _int(b, p, 8) // 1000),
    20: lambda b, p: uuid.UUID(bytes=_take(b, p, 16)),
}


def _value(buf: bytes, pos: int, keys: list[str], depth: int) -> Any:
    if depth > 500:
        raise _Malformed("values are nested more than 500 levels deep")
    head = _uint(buf, pos, 1)
    basic, header = head & 0x03, head >> 2
    if basic == 0:
        decode = _PRIMITIVES.get(header)
        if decode is None:
            raise _Malformed(f"unknown primitive type id {header}")
        return decode(buf, pos + 1)
    if basic == 1:
        return _take(buf, pos + 1, header).decode("utf-8")
    offset_size = (header & 0x03) + 1
    if basic == 2:
        id_size = ((header >> 2) & 0x03) + 1
        large = (header >> 4) & 0x01
    else:
        id_size = 0
        large = (header >> 2) & 0x01
    count_size = 4 if large else 1
    count = _uint(buf, pos + 1, count_size)
    ids_at = pos + 1 + count_size
    offsets_at = ids_at + id_size * count
    data_at = offsets_at + offset_size * (count + 1)
    offsets = [_uint(buf, offsets_at + offset_size * i, offset_size) for i in range(count + 1)]
    values = [_value(buf, data_at + offsets[i], keys, depth + 1) for i in range(count)]
    if basic == 3:
        return values
    out: dict[str, Any] = {}
    for i, v in enumerate(values):
        key_id = _uint(buf, ids_at + id_size * i, id_size)
        if key_id >= len(keys):
            raise _Malformed(f"object field id {key_id} is not in the metadata dictionary ({len(keys)} keys)")
        if keys[key_id] in out:
            raise _Malformed(f"object has the key {keys[key_id]!r} twice")
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
        keys = _dictionary(bytes(metadata))
        return _value(bytes(value), 0, keys, 0)
    except (_Malformed, UnicodeDecodeError, OverflowError, ValueError, struct.error) as exc:
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
