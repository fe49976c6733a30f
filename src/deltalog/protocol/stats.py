"""Per-file statistics: the ``add.stats`` JSON, checkpoint ``stats_parsed`` structs, and typed values.

``minValues``, ``maxValues`` and ``nullCount`` are nested dicts mirroring nested columns, keyed by
physical column names. JSON numbers that a float cannot hold exactly (wide decimals) are kept as
:class:`~decimal.Decimal` so that nothing is lost on a round trip.

Example:
    >>> s = FileStats.from_json('{"numRecords":2,"minValues":{"a":1},"maxValues":{"a":5},"nullCount":{"a":0}}')
    >>> s.num_records, s.max_values["a"]
    (2, 5)
    >>> s.to_json()
    '{"numRecords":2,"minValues":{"a":1},"maxValues":{"a":5},"nullCount":{"a":0}}'
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.geospatial import parse_point
from deltalog.protocol.partitions import parse_date_text, parse_timestamp_text
from deltalog.protocol.schema import DataType, DecimalType, PrimitiveType, geo_spec, type_string

__all__ = ["FileStats", "stat_value", "stats_parsed_to_json"]


def _parse_number(text: str) -> float | Decimal:
    """A JSON non-integer number as float when exact, else as Decimal."""
    value = float(text)
    if math.isfinite(value) and Decimal(repr(value)) != Decimal(text):
        return Decimal(text)
    return value


def _dump(value: Any) -> str:
    """Compact JSON text of ``value``; Decimals are written as plain numbers, dates/times as ISO text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f") if value.is_finite() else "NaN"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dt.datetime):
        return json.dumps(_iso_timestamp(value))
    if isinstance(value, dt.date):
        return json.dumps(value.isoformat())
    if isinstance(value, (bytes, bytearray, memoryview)):
        return json.dumps(bytes(value).decode("latin-1"), ensure_ascii=False)
    if isinstance(value, Mapping):
        items = (f"{json.dumps(str(k), ensure_ascii=False)}:{_dump(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    raise InvalidArgumentError(f"cannot write {value!r} ({type(value).__name__}) into statistics JSON")


def _iso_timestamp(value: dt.datetime) -> str:
    if value.tzinfo is None:
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f")
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclasses.dataclass(frozen=True)
class FileStats:
    """Statistics of one data file; absent parts are None / empty mappings.

    Example:
        >>> FileStats(num_records=3).to_json()
        '{"numRecords":3}'
    """

    num_records: int | None = None
    min_values: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)
    max_values: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)
    null_count: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)
    tight_bounds: bool | None = None

    @classmethod
    def from_json(
        cls,
        s: str | None,
        *,
        table: str | None = None,
        version: int | None = None,
        file: str | None = None,
        line: int | None = None,
    ) -> FileStats | None:
        """Parse ``add.stats``; None or "" give None, malformed JSON raises :class:`InvalidArgumentError`.

        The keyword arguments only locate errors.

        Example:
            >>> FileStats.from_json('{"numRecords":0,"tightBounds":true}')
            FileStats(num_records=0, min_values={}, max_values={}, null_count={}, tight_bounds=True)
            >>> FileStats.from_json(None) is None
            True
        """
        where: dict[str, Any] = {"table": table, "version": version, "file": file, "line": line}
        if s is None or s == "":
            return None
        try:
            obj = json.loads(s, parse_float=_parse_number)
        except (json.JSONDecodeError, TypeError, InvalidOperation) as e:
            raise InvalidArgumentError(f"statistics are not valid JSON ({e}): {s!r:.200}", **where) from None
        if not isinstance(obj, dict):
            raise InvalidArgumentError(f"statistics must be a JSON object, got {s!r:.200}", **where)
        num = obj.get("numRecords")
        if num is not None and (isinstance(num, bool) or not isinstance(num, int)):
            raise InvalidArgumentError(f"statistics numRecords must be an integer, got {num!r}", **where)
        tight = obj.get("tightBounds")
        if tight is not None and not isinstance(tight, bool):
            raise InvalidArgumentError(f"statistics tightBounds must be a boolean, got {tight!r}", **where)
        parts = []
        for key in ("minValues", "maxValues", "nullCount"):
            part = obj.get(key)
            if part is not None and not isinstance(part, dict):
                raise InvalidArgumentError(f"statistics {key} must be an object, got {part!r:.200}", **where)
            parts.append(part or {})
        return cls(num, parts[0], parts[1], parts[2], tight)

    def to_json(self) -> str:
        """Compact JSON with the protocol's keys; absent parts are left out.

        Example:
            >>> FileStats(1, {"d": Decimal("12345678901234567890.5")}, {}, {}, False).to_json()
            '{"numRecords":1,"minValues":{"d":12345678901234567890.5},"tightBounds":false}'
        """
        out: dict[str, Any] = {}
        if self.num_records is not None:
            out["numRecords"] = self.num_records
        for key, part in (("minValues", self.min_values), ("maxValues", self.max_values)):
            if part:
                out[key] = part
        if self.null_count:
            out["nullCount"] = self.null_count
        if self.tight_bounds is not None:
            out["tightBounds"] = self.tight_bounds
        return _dump(out)


# ----------------------------------------------------------------------------------------- stats_parsed


def _temporal_as_text(arr: Any) -> Any:
    """Replace timestamp and date leaves of a (struct) array by their ISO strings, vectorized."""
    t = arr.type
    if pa.types.is_struct(t):
        children = [_temporal_as_text(arr.field(i)) for i in range(t.num_fields)]
        if not children:
            return arr
        names = [t.field(i).name for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, names=names, mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_timestamp(t):
        naive = arr.cast(pa.timestamp(t.unit)) if t.unit in ("s", "ms", "us") else None
        if naive is None:  # nanoseconds: keep microseconds, like the rest of Delta
            naive = pc.cast(arr, options=pc.CastOptions(pa.timestamp("us"), allow_time_truncate=True))  # type: ignore[call-overload,unused-ignore]
        text = pc.strftime(naive, format="%Y-%m-%dT%H:%M:%S")
        return pc.binary_join_element_wise(text, "Z", "") if t.tz is not None else text
    if pa.types.is_date(t):
        return arr.cast(pa.string())
    return arr


def _prune(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            pv = _prune(v)
            if pv is not None and pv != {}:
                out[k] = pv
        return out
    return value


def stats_parsed_to_json(arr: pa.Array[Any] | pa.ChunkedArray[Any]) -> pa.Array[Any]:
    """JSON statistics strings for a checkpoint's ``stats_parsed`` struct column; null rows stay null.

    Dates become ``YYYY-MM-DD``, timestamps ISO text (``...Z`` when the column carries a time zone),
    decimals plain numbers; null leaves are left out.

    Example:
        >>> import datetime
        >>> sp = pa.array([{"numRecords": 1, "minValues": {"d": datetime.date(2021, 1, 2)}}, None])
        >>> stats_parsed_to_json(sp).to_pylist()
        ['{"numRecords":1,"minValues":{"d":"2021-01-02"}}', None]
    """
    flat: Any = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    rows = _temporal_as_text(flat).to_pylist()
    result: pa.Array[Any] = pa.array([None if r is None else _dump(_prune(r)) for r in rows], pa.string())
    return result


# ------------------------------------------------------------------------------------------ stat_value

_INTEGRAL = frozenset({"byte", "short", "integer", "long"})


def stat_value(dtype: DataType, json_value: Any) -> Any:
    """The Python value of a JSON min/max statistic for a column of type ``dtype``.

    Dates and timestamps come from strings (timestamps as aware UTC datetimes; ``timestamp_ntz`` naive);
    decimals from numbers or strings; variant statistics are returned as stored; a geometry's bounds (WKT
    points, the corners of its bounding box) as unordered :class:`~deltalog.protocol.geospatial.GeoPoint` values.
    Note that writers truncate timestamp statistics to milliseconds.
    Values that do not fit the type raise :class:`InvalidArgumentError` naming value and type.

    Example:
        >>> stat_value(PrimitiveType("timestamp"), "2000-01-01T00:00:00.000-08:00")
        datetime.datetime(2000, 1, 1, 8, 0, tzinfo=datetime.timezone.utc)
        >>> stat_value(DecimalType(5, 2), 1.5)
        Decimal('1.5')
    """
    if json_value is None:
        return None
    try:
        return _stat_value(dtype, json_value)
    except (ValueError, TypeError, InvalidOperation, UnicodeEncodeError, OverflowError) as e:
        raise InvalidArgumentError(
            f"invalid statistics value {json_value!r} for type {type_string(dtype)} ({e})"
        ) from None


def _stat_value(dtype: DataType, v: Any) -> Any:
    if isinstance(dtype, DecimalType):
        if isinstance(v, bool):
            raise TypeError("expected a number")
        if isinstance(v, float):
            return Decimal(repr(v))
        if isinstance(v, (int, str, Decimal)):
            return Decimal(v)
        raise TypeError("expected a number")
    name = dtype.name if isinstance(dtype, PrimitiveType) else ""
    if name == "string":
        if not isinstance(v, str):
            raise TypeError("expected a string")
        return v
    if name in _INTEGRAL:
        if isinstance(v, bool) or not isinstance(v, (int, float, Decimal, str)):
            raise TypeError("expected an integer")
        if isinstance(v, str):
            return int(v)
        if v != int(v):
            raise ValueError("not integral")
        return int(v)
    if name in ("float", "double"):
        if isinstance(v, bool) or not isinstance(v, (int, float, Decimal, str)):
            raise TypeError("expected a number")
        return float(v)
    if name == "boolean":
        if not isinstance(v, bool):
            raise TypeError("expected a boolean")
        return v
    if name in ("date", "timestamp", "timestamp_ntz", "binary") and not isinstance(v, str):
        raise TypeError("expected a string")
    if name == "date":
        return parse_date_text(v)
    if name == "timestamp":
        return parse_timestamp_text(v, utc=True)
    if name == "timestamp_ntz":
        try:
            return parse_timestamp_text(v, utc=False)
        except ValueError:  # a writer that put an offset on it: keep the UTC wall clock
            return parse_timestamp_text(v, utc=True).replace(tzinfo=None)
    if name == "binary":
        return v.encode("latin-1")
    if name == "variant":  # an encoded variant value; not comparable with literals, returned as stored
        return v
    if geo_spec(dtype) is not None:
        if not isinstance(v, str):
            raise TypeError("expected a WKT point")
        return parse_point(v)
    raise TypeError("columns of this type have no min/max statistics")
