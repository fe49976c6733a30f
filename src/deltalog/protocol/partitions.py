"""Partition values: the strings of ``add.partitionValues`` to typed values and back, and Hive paths.

The Delta protocol stores every partition value as a string (or null). An empty string is null for
every type, strings included. Timestamps are written ``YYYY-MM-DD HH:MM:SS[.ffffff]`` (read as UTC) or
as ISO-8601 with ``Z`` or an offset; binary values are strings whose characters are the byte values
(a string with characters above U+00FF cannot be that, and is read as UTF-8 text, as delta-rs writes it).

Example:
    >>> from deltalog.protocol.schema import PrimitiveType
    >>> parse_partition_value("2021-09-08 11:11:11", PrimitiveType("timestamp"))
    datetime.datetime(2021, 9, 8, 11, 11, 11, tzinfo=datetime.timezone.utc)
    >>> partition_path(["year", "city"], {"year": "2024", "city": "a/b"})
    'year=2024/city=a%2Fb/'
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from decimal import Context, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import CorruptLogError, InvalidArgumentError
from deltalog.protocol.schema import DataType, DecimalType, PrimitiveType, to_arrow_type, type_string

__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "escape_path_name",
    "log_partition_array",
    "parse_partition_value",
    "partition_array",
    "partition_path",
    "serialize_partition_value",
    "unescape_path_name",
]

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
_WIDE = Context(prec=100)  # decimal(38, s) needs more than the default 28 digits
_INT_RE = re.compile(r"[+-]?\d+")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
# A date may carry a time-of-day part, which is ignored (as Spark's string-to-date cast does).
_DATE_RE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ][0-9:.]*(?:Z|[+-][0-9:]+)?)?")
_TIMESTAMP_RE = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{0,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?"
)
# A zone designator after a time of day; used to split the vectorized timestamp parse.
_ZONE_SUFFIX = r"\d:\d{2}(?::\d{2}(?:\.\d*)?)?\s*(?:Z|[+-]\d{2}(?::?\d{2})?)$"


def _invalid(raw: object, dtype: DataType, why: str = "") -> InvalidArgumentError:
    extra = f" ({why})" if why else ""
    return InvalidArgumentError(f"invalid partition value {raw!r} for type {type_string(dtype)}{extra}")


def parse_timestamp_text(text: str, *, utc: bool) -> dt.datetime:
    """Parse a protocol timestamp string; ``utc`` gives an aware UTC result, else a naive one.

    Raises ``ValueError`` on malformed input (callers turn it into their own error).
    """
    m = _TIMESTAMP_RE.fullmatch(text.strip())
    if m is None:
        raise ValueError("not a timestamp")
    year, month, day, hour, minute, second, frac, zone = m.groups()
    micros = int((frac or "").ljust(6, "0")[:6])
    value = dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0), micros)
    if zone is None or zone == "Z":
        offset = dt.timedelta(0)
    else:
        if not utc:
            raise ValueError("a timestamp without time zone cannot carry an offset")
        digits = zone[1:].replace(":", "")
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        if zone[0] == "-":
            offset = -offset
    if not utc:
        return value
    return (value - offset).replace(tzinfo=dt.UTC)


def parse_date_text(text: str) -> dt.date:
    m = _DATE_RE.fullmatch(text.strip())
    if m is None:
        raise ValueError("not a date")
    return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))


def _parse_decimal(raw: str, dtype: DecimalType) -> Decimal:
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        raise ValueError("not a decimal number") from None
    if not value.is_finite():
        raise ValueError("not a finite number")
    quantum = Decimal(1).scaleb(-dtype.scale)
    try:
        scaled = value.quantize(quantum, context=_WIDE)
    except InvalidOperation:
        raise ValueError(f"more than {dtype.precision} digits") from None
    if scaled != value:
        raise ValueError(f"more than {dtype.scale} digits after the point")
    if len(scaled.as_tuple().digits) > dtype.precision and scaled != 0:
        raise ValueError(f"more than {dtype.precision} digits")
    return scaled


def parse_partition_value(raw: str | None, dtype: DataType) -> Any:
    """The Python value of a serialized partition value (None for a null or empty string).

    Raises :class:`InvalidArgumentError` naming the value and type when the string is malformed.

    Example:
        >>> from deltalog.protocol.schema import DecimalType, PrimitiveType
        >>> parse_partition_value("1.5", DecimalType(5, 2))
        Decimal('1.50')
        >>> parse_partition_value("TRUE", PrimitiveType("boolean")), parse_partition_value("", PrimitiveType("string"))
        (True, None)
    """
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise _invalid(raw, dtype, "partition values are strings")
    try:
        if isinstance(dtype, DecimalType):
            return _parse_decimal(raw, dtype)
        if not isinstance(dtype, PrimitiveType):
            raise _invalid(raw, dtype, "not a valid partition column type")
        name = dtype.name
        if name == "string":
            return raw
        if name in _INT_RANGES:
            if not _INT_RE.fullmatch(raw):
                raise ValueError("not an integer")
            value = int(raw)
            lo, hi = _INT_RANGES[name]
            if not lo <= value <= hi:
                raise ValueError("out of range")
            return value
        if name in ("float", "double"):
            if not _FLOAT_RE.fullmatch(raw):
                raise ValueError("not a number")
            return float(raw)
        if name == "boolean":
            if raw.lower() not in ("true", "false"):
                raise ValueError("expected true or false")
            return raw.lower() == "true"
        if name == "date":
            return parse_date_text(raw)
        if name in ("timestamp", "timestamp_ntz"):
            return parse_timestamp_text(raw, utc=name == "timestamp")
        if name == "binary":
            try:
                return raw.encode("latin-1")
            except UnicodeEncodeError:  # not code points: some writers (delta-rs) store the UTF-8 text
                return raw.encode("utf-8")
        if name == "void":
            return None
        raise _invalid(raw, dtype, "not a valid partition column type")
    except ValueError as e:
        raise _invalid(raw, dtype, str(e) or type(e).__name__) from None


# ------------------------------------------------------------------------------------------ vectorized


def _string_array(raw: pa.Array[Any] | pa.ChunkedArray[Any]) -> pa.Array[Any]:
    arr: Any = raw.combine_chunks() if isinstance(raw, pa.ChunkedArray) else raw
    if isinstance(arr, pa.DictionaryArray):
        arr = arr.dictionary_decode()
    if arr.type != pa.string():
        arr = arr.cast(pa.string())
    result: pa.Array[Any] = pc.if_else(pc.equal(arr, pa.scalar("", pa.string())), pa.scalar(None, pa.string()), arr)
    return result


def _all_true(mask: Any) -> bool:
    return bool(pc.all(mask).as_py() in (True, None))


def _fast_cast(strings: pa.Array[Any], dtype: DataType, target: pa.DataType) -> pa.Array[Any] | None:
    """Vectorized conversion, or None when only the per-value parser can decide."""
    if isinstance(dtype, DecimalType):
        return pc.cast(strings, target)  # type: ignore[call-overload,no-any-return,unused-ignore]
    name = dtype.name if isinstance(dtype, PrimitiveType) else ""
    if name == "string":
        return strings
    if name in _INT_RANGES or name in ("float", "double", "date", "timestamp_ntz"):
        return pc.cast(strings, target)  # type: ignore[call-overload,no-any-return,unused-ignore]
    if name == "boolean":
        lowered = pc.utf8_lower(strings)
        if not _all_true(pc.is_in(lowered, value_set=pa.array(["true", "false"]))):
            return None
        result: pa.Array[Any] = pc.equal(lowered, pa.scalar("true", pa.string()))
        return result
    if name == "timestamp":
        has_zone = pc.match_substring_regex(strings, _ZONE_SUFFIX)
        with_z = pc.binary_join_element_wise(strings, "Z", "")  # type: ignore[call-overload,unused-ignore]
        zoned = pc.if_else(has_zone, strings, with_z)
        return pc.cast(zoned, target)  # type: ignore[call-overload,no-any-return,return-value,unused-ignore]
    if name == "binary" and _all_true(pc.string_is_ascii(strings)):
        return pc.cast(strings, target)  # type: ignore[call-overload,no-any-return,unused-ignore]
    return None


def partition_array(raw: pa.Array[Any] | pa.ChunkedArray[Any], dtype: DataType) -> pa.Array[Any]:
    """Typed Arrow array (of ``to_arrow_type(dtype)``) for an array of serialized partition values.

    Conversion is vectorized; values Arrow cannot cast directly (odd timestamp forms, non-ASCII
    binary, ...) are parsed once per distinct value. Malformed values raise
    :class:`InvalidArgumentError` naming the value and type.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> partition_array(pa.array(["1", "", None, "7"]), PrimitiveType("integer")).to_pylist()
        [1, None, None, 7]
    """
    target = to_arrow_type(dtype)
    if not (isinstance(dtype, DecimalType) or (isinstance(dtype, PrimitiveType) and dtype.name != "variant")):
        raise InvalidArgumentError(f"type {type_string(dtype)} cannot be a partition column type")
    strings = _string_array(raw)
    if strings.null_count == len(strings) or target == pa.null():
        return pa.nulls(len(strings), target)  # type: ignore[call-overload,no-any-return,unused-ignore]
    try:
        fast = _fast_cast(strings, dtype, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        fast = None
    if fast is not None:
        return fast
    encoded: Any = strings.dictionary_encode()
    parsed = [parse_partition_value(v, dtype) for v in encoded.dictionary.to_pylist()]
    values: pa.Array[Any] = pa.array(parsed, type=target)
    return values.take(encoded.indices)


def log_partition_array(
    raw: pa.Array[Any] | pa.ChunkedArray[Any],
    dtype: DataType,
    *,
    column: str,
    table: str,
    version: int | None = None,
    paths: Sequence[str] | pa.Array[Any] | pa.ChunkedArray[Any] | None = None,
) -> pa.Array[Any]:
    """:func:`partition_array` for values read from the log: a value that is malformed for the column's
    type is a :class:`CorruptLogError` naming the table, version, column and (``paths``: the data file
    of each value) the file whose ``add`` carries it.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> log_partition_array(pa.array(["1", "x"]), PrimitiveType("integer"), column="k", table="t",
        ...                     version=3, paths=["a.parquet", "b.parquet"])
        Traceback (most recent call last):
        ...
        deltalog.errors.CorruptLogError: partition column 'k': invalid partition value 'x' for type integer \
(not an integer) [table t, version 3, file b.parquet]
    """
    try:
        return partition_array(raw, dtype)
    except InvalidArgumentError as exc:
        message, file = exc.message, None
        strings = _string_array(raw)
        encoded: Any = strings.dictionary_encode()
        for code, value in enumerate(encoded.dictionary.to_pylist()):
            try:
                parse_partition_value(value, dtype)
            except InvalidArgumentError as bad:
                message = bad.message
                if paths is not None:
                    rows = pc.equal(encoded.indices, pa.scalar(code, encoded.indices.type))
                    found: Any = paths[pc.index(rows, True).as_py()]
                    file = found.as_py() if isinstance(found, pa.Scalar) else found
                break
        raise CorruptLogError(
            f"partition column {column!r}: {message}", table=table, version=version, file=file
        ) from None


# ----------------------------------------------------------------------------------------- serialize


def _format_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def serialize_partition_value(value: Any, dtype: DataType) -> str | None:
    """The protocol string for a partition value (None stays None).

    Timestamps are written in UTC as ``YYYY-MM-DD HH:MM:SS.ffffff`` (naive ``timestamp`` values are
    taken as UTC); decimals keep the column's scale; binary becomes its code-point string. A string
    given for a non-string column is parsed first, so it is validated and normalized.

    Example:
        >>> import datetime
        >>> from deltalog.protocol.schema import DecimalType, PrimitiveType
        >>> serialize_partition_value(datetime.datetime(2024, 1, 2, 3, 4, 5), PrimitiveType("timestamp"))
        '2024-01-02 03:04:05.000000'
        >>> serialize_partition_value(Decimal("1.5"), DecimalType(5, 2))
        '1.50'
    """
    if value is None:
        return None
    name = dtype.name if isinstance(dtype, PrimitiveType) else ""
    if isinstance(value, str) and name != "string":
        return serialize_partition_value(parse_partition_value(value, dtype), dtype)
    try:
        if isinstance(dtype, DecimalType):
            if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
                raise ValueError("expected a number")
            return format(_parse_decimal(str(value), dtype), "f")
        if name == "string":
            if not isinstance(value, str):
                raise ValueError("expected str")
            return value
        if name in _INT_RANGES:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError("expected int")
            lo, hi = _INT_RANGES[name]
            if not lo <= value <= hi:
                raise ValueError("out of range")
            return str(value)
        if name in ("float", "double"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError("expected float")
            return _format_float(float(value))
        if name == "boolean":
            if not isinstance(value, bool):
                raise ValueError("expected bool")
            return "true" if value else "false"
        if name == "date":
            if not isinstance(value, dt.date):
                raise ValueError("expected datetime.date")
            day = value.date() if isinstance(value, dt.datetime) else value
            return day.isoformat()
        if name in ("timestamp", "timestamp_ntz"):
            if not isinstance(value, dt.datetime):
                raise ValueError("expected datetime.datetime")
            ts: dt.datetime = value
            if ts.tzinfo is not None:
                if name == "timestamp_ntz":
                    raise ValueError("timestamp_ntz values must be naive")
                ts = ts.astimezone(dt.UTC).replace(tzinfo=None)
            return ts.strftime("%Y-%m-%d %H:%M:%S.%f")
        if name == "binary":
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise ValueError("expected bytes")
            return bytes(value).decode("latin-1")
        raise ValueError("not a valid partition column type")
    except ValueError as e:
        raise _invalid(value, dtype, str(e)) from None


# ------------------------------------------------------------------------------------------ Hive paths

_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^") | frozenset(chr(c) for c in range(0x20))


def escape_path_name(name: str) -> str:
    """Percent-escape a partition column name or value for a Hive-style directory name.

    Example:
        >>> escape_path_name("a b/c:d=%")
        'a b%2Fc%3Ad%3D%25'
    """
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in name)


def unescape_path_name(name: str) -> str:
    """Undo :func:`escape_path_name`: every ``%XX`` with two hex digits becomes that character.

    Example:
        >>> unescape_path_name("a%2Fb%zz")
        'a/b%zz'
    """
    if "%" not in name:
        return name
    out: list[str] = []
    i = 0
    while i < len(name):
        c = name[i]
        hex_digits = name[i + 1 : i + 3]
        if c == "%" and len(hex_digits) == 2 and all(h in "0123456789abcdefABCDEF" for h in hex_digits):
            out.append(chr(int(hex_digits, 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def partition_path(partition_columns: Sequence[str], values: Mapping[str, str | None]) -> str:
    """The relative directory ``col=value/...`` for serialized partition values (null or "" → default).

    Raises :class:`InvalidArgumentError` when a partition column has no entry in ``values``.

    Example:
        >>> partition_path(["a", "b"], {"a": "1", "b": None})
        'a=1/b=__HIVE_DEFAULT_PARTITION__/'
    """
    parts = []
    for col in partition_columns:
        if col not in values:
            raise InvalidArgumentError(f"no value for partition column {col!r}")
        value = values[col]
        text = HIVE_DEFAULT_PARTITION if value is None or value == "" else escape_path_name(value)
        parts.append(f"{escape_path_name(col)}={text}/")
    return "".join(parts)
