"""Typed file statistics: the struct type of a table's ``add.stats`` (:func:`stats_struct_type`) and a
vectorized parse of the JSON strings into it (:func:`parse_stats`), shared by the checkpoint writer
(``stats_parsed``), data skipping and the scans that need ``numRecords``.

The parse runs Arrow's JSON reader over all strings at once against the explicit type; a block it rejects
(``"NaN"`` bounds, decimal bounds wider than the column's scale, broken JSON) is converted value by value,
unusable values becoming null.

Example:
    >>> parse_stats(pa.array(['{"numRecords": 5}', None]), pa.struct([("numRecords", pa.int64())])).to_pylist()
    [{'numRecords': 5}, None]
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

if TYPE_CHECKING:
    from typing import TypeAlias

    from deltalog.protocol.schema import StructType

    Arr: TypeAlias = pa.Array[Any]
    Chunked: TypeAlias = pa.ChunkedArray[Any]
    Field: TypeAlias = pa.Field[Any]

log = logging.getLogger(__name__)

__all__ = ["parse_stats", "stats_struct_type"]


def _f(name: str, t: pa.DataType) -> Field:
    return pa.field(name, t, nullable=True)


def _has_min_max(t: pa.DataType) -> bool:
    """Column types that carry min/max statistics (numbers, dates, timestamps, strings)."""
    checks = (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal, pa.types.is_date)
    return any(c(t) for c in checks) or pa.types.is_timestamp(t) or pa.types.is_string(t)


def _stats_types(schema: StructType, mode: str, exclude: set[str]) -> tuple[pa.DataType, pa.DataType]:
    """(min/max struct, nullCount struct) of the table's physical columns; empty structs dropped."""
    from deltalog.protocol.schema import StructType, geo_spec, physical_name, to_arrow_type

    def build(st: StructType, top: bool) -> tuple[list[Field], list[Field]]:
        mm: list[Field] = []
        nc: list[Field] = []
        for fld in st.fields:
            if top and fld.name in exclude:
                continue
            name = physical_name(fld, mode)
            if isinstance(fld.type, StructType):
                sub_mm, sub_nc = build(fld.type, False)
                if sub_mm:
                    mm.append(_f(name, pa.struct(sub_mm)))
                if sub_nc:
                    nc.append(_f(name, pa.struct(sub_nc)))
                continue
            nc.append(_f(name, pa.int64()))
            if geo_spec(fld.type) is not None:  # bounding box corners as WKT points
                mm.append(_f(name, pa.string()))
                continue
            try:
                at = to_arrow_type(fld.type)
            except Exception:
                continue
            if _has_min_max(at) or pa.types.is_large_string(at):
                mm.append(_f(name, pa.string() if pa.types.is_large_string(at) else at))
        return mm, nc

    mm, nc = build(schema, True)
    return pa.struct(mm), pa.struct(nc)


def stats_struct_type(schema: StructType, mode: str, partition_columns: Sequence[str]) -> pa.StructType:
    """The typed statistics struct (``add.stats_parsed`` in a checkpoint) of a table with ``schema``,
    column mapping ``mode`` and ``partition_columns``: ``numRecords``, ``minValues`` / ``maxValues``
    (columns with min/max statistics), ``nullCount``, ``tightBounds``; physical column names, partition
    columns left out.

    Example:
        >>> from deltalog.protocol.schema import parse_schema
        >>> s = parse_schema('{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
        ...                  '{"name":"day","type":"string","nullable":true,"metadata":{}}]}')
        >>> stats_struct_type(s, "none", ["day"]).field("minValues").type
        StructType(struct<id: int64>)
    """
    mm, nc = _stats_types(schema, mode, set(partition_columns))
    fields = [_f("numRecords", pa.int64())]
    if mm.num_fields:
        fields += [_f("minValues", mm), _f("maxValues", mm)]
    if nc.num_fields:
        fields.append(_f("nullCount", nc))
    fields.append(_f("tightBounds", pa.bool_()))
    return pa.struct(fields)


def _json_type(t: Any) -> Any:
    """What Arrow's JSON reader can parse directly: dates are read as strings and cast afterwards."""
    if pa.types.is_struct(t):
        return pa.struct([_f(t.field(i).name, _json_type(t.field(i).type)) for i in range(t.num_fields)])
    return pa.string() if pa.types.is_date(t) else t


def parse_stats(stats: Arr | Chunked, target: pa.StructType) -> Arr:
    """Parse JSON statistics strings into ``target`` (see :func:`stats_struct_type`); rows with null
    stats are null. Vectorized through Arrow's JSON reader; blocks it rejects (e.g. ``"NaN"`` bounds,
    decimal bounds wider than the column's scale) are converted value by value, unusable values
    becoming null.

    Example:
        >>> t = pa.struct([("numRecords", pa.int64())])
        >>> parse_stats(pa.array(['{"numRecords": 5}', None]), t).to_pylist()
        [{'numRecords': 5}, None]
    """
    if isinstance(stats, pa.ChunkedArray):
        stats = stats.combine_chunks() if stats.num_chunks != 1 else stats.chunk(0)
    strings: Any = stats.cast(pa.string())
    n = len(strings)
    if n == 0:
        return pa.array([], target)
    step = 1 << 20
    pieces = [_parse_block(strings.slice(i, step), target) for i in range(0, n, step)]
    out: Any = pa.concat_arrays(pieces) if len(pieces) > 1 else pieces[0]
    if strings.null_count:  # null stats stay null (and so do the rows no parse could read)
        out = pa.StructArray.from_arrays(
            [out.field(i) for i in range(target.num_fields)], fields=list(target),
            mask=pc.or_(strings.is_null(), out.is_null()),
        )
    result: Arr = out
    return result


def _parse_block(stats: Any, target: pa.StructType) -> Arr:
    compute: Any = pc
    filled = compute.fill_null(stats, "{}")
    data = filled.buffers()[2]
    if data is not None and (np.frombuffer(data, np.uint8) == 10).any():  # pretty-printed JSON: newlines are blanks
        filled = compute.replace_substring(filled, "\n", " ")
    empty = compute.equal(compute.binary_length(filled), 0)
    if compute.any(empty).as_py():
        filled = compute.if_else(empty, "{}", filled)
    lines: Any = pc.binary_join_element_wise(filled, pa.scalar("\n"), "")
    offs = np.frombuffer(lines.buffers()[1], np.int32)
    blob = lines.buffers()[2][int(offs[lines.offset]) : int(offs[lines.offset + len(lines)])]
    longest = int(pc.max(pc.binary_length(lines)).as_py() or 0)
    try:
        source: Any = pa.BufferReader(blob)
        parsed = pj.read_json(
            source,
            read_options=pj.ReadOptions(use_threads=True, block_size=max(1 << 20, 2 * longest + 2)),
            parse_options=pj.ParseOptions(
                explicit_schema=pa.schema(list(_json_type(target))), unexpected_field_behavior="ignore"
            ),
        )
        if parsed.num_rows != len(stats):
            raise ValueError("row count mismatch")
        arrays = [parsed.column(f.name).combine_chunks() for f in target]
        return pa.StructArray.from_arrays(arrays, fields=list(_json_type(target))).cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError):
        log.debug("vectorized stats parsing failed for a block; converting value by value")
        return _parse_slow(stats.to_pylist(), target)


def _parse_slow(values: Sequence[str | None], target: pa.StructType) -> Arr:
    rows: list[dict[str, Any] | None] = []
    for text in values:
        try:
            obj = json.loads(text) if text else None
        except ValueError:
            obj = None
        rows.append(_conform(obj, target) if isinstance(obj, dict) else None)
    return pa.array(rows, target)


def _conform(obj: dict[str, Any], t: pa.StructType) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in t:
        value = obj.get(f.name)
        if pa.types.is_struct(f.type):
            out[f.name] = _conform(value, f.type) if isinstance(value, dict) else None
        else:
            out[f.name] = _leaf(value, f.type)
    return out


def _leaf(value: Any, t: pa.DataType) -> Any:
    if value is None or isinstance(value, (dict, list)):
        return None
    try:
        if pa.types.is_date(t):
            value = dt.date.fromisoformat(str(value)[:10])
        elif pa.types.is_timestamp(t):
            ts = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            value = ts if ts.tzinfo is None or t.tz else ts.replace(tzinfo=None)
        elif pa.types.is_floating(t):
            value = float(value)
        elif pa.types.is_decimal(t):
            value = decimal.Decimal(str(value))
        return pa.scalar(value, t).as_py()
    except (ValueError, TypeError, ArithmeticError, pa.ArrowException):
        return None
