"""Per-file statistics (the ``add.stats`` JSON) taken from a written parquet file's footer.

Nothing is re-read: the writer hands over the footer (:class:`pyarrow.parquet.FileMetaData`) and the
Delta schema of the columns stored in the file. Rules:

* ``numRecords`` from the footer, ``tightBounds`` true;
* ``nullCount`` for every leaf of (nested) structs, summed over row groups (a variant counts as a leaf);
* ``minValues``/``maxValues`` for numbers, decimals (up to 15 digits, so JSON numbers stay exact),
  dates, timestamps and strings -- only when every row group has them. Not for booleans, binary,
  arrays or maps, nor for float columns holding NaN (``nan_columns``); a float leaf's counts and bounds
  may come from the writer instead (``float_bounds``, see :func:`stats_columns`);
* timestamps are written as ISO text truncated *down* to milliseconds (``2024-01-01T00:00:00.000Z``,
  without ``Z`` for ``timestamp_ntz``); strings are cut to 32 characters, and a cut maximum gets a
  ``U+10FFFF`` tie-breaker appended so it stays >= every value;
* a ``geometry`` column's bounds are the corners of its bounding box as WKT points, from the footer's
  geospatial statistics (:func:`deltalog.protocol.geospatial.bbox_stats`) -- when every row group holding
  values has them; a ``geography`` gets none. pyarrow writes no plain statistics for geospatial columns, so
  their null counts come from the writer (:func:`count_floats`).

Example:
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from deltalog.protocol.schema import StructType
    >>> t = pa.table({"x": [3, None, 1]})
    >>> sink = pa.BufferOutputStream()
    >>> w = pq.ParquetWriter(sink, t.schema); w.write_table(t); w.close()
    >>> stats_json(w.writer.metadata, StructType.from_arrow_schema(t.schema))
    '{"numRecords":3,"minValues":{"x":1},"maxValues":{"x":3},"nullCount":{"x":1},"tightBounds":true}'
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.protocol.geospatial import GeoBox, bbox_stats, box_of, is_geo_arrow_type
from deltalog.protocol.schema import VARIANT, DataType, DecimalType, PrimitiveType, StructType, geo_spec

__all__ = ["STRING_PREFIX", "FloatBounds", "count_floats", "float_leaves", "stats_columns", "stats_json",
           "stats_value"]

#: Length to which string min/max statistics are cut.
STRING_PREFIX = 32
_TIE_BREAKER = "\U0010ffff"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MINMAX_PRIMITIVES = frozenset(
    {"byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string"}
)


def _micros(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _format_ts(value: dt.datetime, ntz: bool) -> str:
    ms = _micros(value) // 1000  # floor: truncates down, also before 1970
    t = _EPOCH + dt.timedelta(milliseconds=ms)
    text = t.strftime("%Y-%m-%dT%H:%M:%S") + f".{t.microsecond // 1000:03d}"
    return text if ntz else text + "Z"


def stats_value(dtype: DataType, value: Any, *, is_max: bool) -> Any:
    """The JSON value of a min (``is_max=False``) or max statistic, or ``None`` when none is written.

    Example:
        >>> stats_value(PrimitiveType("string"), "x" * 40, is_max=True) == "x" * 32 + "\\U0010ffff"
        True
        >>> stats_value(PrimitiveType("timestamp"), dt.datetime(2024, 1, 1, 0, 0, 0, 999999), is_max=False)
        '2024-01-01T00:00:00.999Z'
    """
    if value is None:
        return None
    if isinstance(dtype, DecimalType):
        if dtype.precision > 15 or not isinstance(value, decimal.Decimal):
            return None
        return float(value)
    if not isinstance(dtype, PrimitiveType) or dtype.name not in _MINMAX_PRIMITIVES:
        return None
    name = dtype.name
    if name in ("float", "double"):
        f = float(value)
        return f if math.isfinite(f) else None
    if name in ("byte", "short", "integer", "long"):
        return int(value)
    if name == "date":
        return value.isoformat() if isinstance(value, dt.date) else None
    if name in ("timestamp", "timestamp_ntz"):
        return _format_ts(value, name == "timestamp_ntz") if isinstance(value, dt.datetime) else None
    if not isinstance(value, str):
        return None
    if len(value) <= STRING_PREFIX:
        return value
    return value[:STRING_PREFIX] + _TIE_BREAKER if is_max else value[:STRING_PREFIX]


def _leaves(schema: StructType, prefix: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], Any]]:
    for f in schema.fields:
        path = (*prefix, f.name)
        if isinstance(f.type, StructType):
            yield from _leaves(f.type, path)
        else:
            yield path, f.type


def _column_path(path: tuple[str, ...], dtype: Any) -> tuple[str, ...]:
    """The parquet column whose statistics stand for a leaf: a variant's required ``metadata`` binary is
    null exactly where the variant is (no min/max is written for variants)."""
    return (*path, "metadata") if dtype == VARIANT else path


def _put(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for p in path[:-1]:
        tree = tree.setdefault(p, {})
    tree[path[-1]] = value


def float_leaves(schema: StructType, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The paths of the ``float`` / ``double`` leaves of ``schema`` (inside structs too): the columns whose
    footer bounds leave NaN out, for ``nan_columns`` of :func:`stats_json`.

    Example:
        >>> import pyarrow as pa
        >>> float_leaves(StructType.from_arrow_schema(pa.schema([("x", pa.float64()), ("n", pa.int64())])))
        [('x',)]
    """
    out: list[tuple[str, ...]] = []
    for f in schema.fields:
        path = (*prefix, f.name)
        if isinstance(f.type, StructType):
            out += float_leaves(f.type, path)
        elif isinstance(f.type, PrimitiveType) and f.type.name in ("float", "double"):
            out.append(path)
    return out


def stats_columns(schema: pa.Schema) -> list[str]:
    """The parquet columns (dotted paths) of files written with ``schema`` that get footer statistics: all
    but the floating-point ones. Arrow leaves NaN out of a row group's bounds, and Spark's parquet reader
    trusts them: a row group holding ``[1.0, NaN]`` would be skipped by ``x > 5`` (or ``x = NaN``) although
    Spark's NaN is greater than every number. parquet-mr writes NaN into the bounds instead. The writer keeps
    such a column's Delta statistics itself (:class:`FloatBounds`).

    Example:
        >>> stats_columns(pa.schema([("x", pa.float64()), ("s", pa.struct([("a", pa.int64()), ("f", pa.float32())]))]))
        ['s.a']
    """
    sink = pa.BufferOutputStream()
    writer = pq.ParquetWriter(sink, schema)
    writer.close()
    columns = writer.writer.metadata.schema
    return [columns.column(i).path for i in range(len(columns))
            if columns.column(i).physical_type not in ("FLOAT", "DOUBLE") and "Float16" not in
            str(columns.column(i).logical_type)]


@dataclass
class FloatBounds:
    """Null count, bounds (NaN left out) and whether NaN occurs, of one floating-point column of a file,
    added up batch by batch as the writer writes it.

    Example:
        >>> b = FloatBounds(); b.add(pa.array([1.5, None, -2.0])); b.add(pa.array([float("nan")]))
        >>> (b.nulls, b.lo, b.hi, b.nan)
        (1, -2.0, 1.5, True)
    """

    nulls: int = 0
    lo: float | None = None
    hi: float | None = None
    nan: bool = False

    def add(self, values: Any) -> None:
        """Count the values of an Arrow (chunked) array in."""
        self.nulls += values.null_count
        if values.null_count == len(values):
            return
        if pc.any(pc.is_nan(values)).as_py():
            self.nan = True
        found = pc.min_max(values)
        lo, hi = found["min"].as_py(), found["max"].as_py()
        if lo is not None and not math.isnan(lo):
            self.lo = lo if self.lo is None else min(self.lo, lo)
        if hi is not None and not math.isnan(hi):
            self.hi = hi if self.hi is None else max(self.hi, hi)


def count_floats(table: pa.Table, into: dict[tuple[str, ...], FloatBounds]) -> None:
    """Add the floating-point leaves of ``table`` (inside structs too; a field is null where its struct is,
    as parquet counts it) to their :class:`FloatBounds` in ``into``, keyed by path; geospatial leaves count
    their nulls only (pyarrow's footer has no statistics for them).

    Example:
        >>> found: dict[tuple[str, ...], FloatBounds] = {}
        >>> count_floats(pa.table({"s": pa.array([{"f": 1.0}, None])}), found); found
        {('s', 'f'): FloatBounds(nulls=1, lo=1.0, hi=1.0, nan=False)}
    """

    def visit(arr: Any, path: tuple[str, ...]) -> None:
        t = arr.type
        if pa.types.is_floating(t):
            into.setdefault(path, FloatBounds()).add(arr)
        elif is_geo_arrow_type(t):
            into.setdefault(path, FloatBounds()).nulls += arr.null_count
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(pc.struct_field(arr, [i]), (*path, t.field(i).name))

    for name in table.column_names:
        visit(table.column(name), (name,))


def _add_box(boxes: dict[tuple[str, ...], GeoBox | None], path: tuple[str, ...], col: Any, rows: int) -> None:
    """Fold a geometry column chunk's bounding box into ``boxes[path]``; a chunk that holds values but has no
    box (say, WKB its writer could not read) leaves the file without one (None)."""
    if path in boxes and boxes[path] is None:
        return
    st = col.statistics
    if st is not None and st.has_null_count and st.null_count == rows:
        return  # only nulls
    found = getattr(col, "geo_statistics", None)
    box = box_of(found)
    if box is None:
        if found is not None and not found.geospatial_types and found.xmin is None:
            return  # no geometry at all (only nulls), as pyarrow reports it
        boxes[path] = None
        return
    seen = boxes.get(path)
    boxes[path] = box if seen is None else seen.union(box)


def stats_json(metadata: pq.FileMetaData, schema: StructType, *, nan_columns: Iterable[tuple[str, ...]] = (),
               float_bounds: Mapping[tuple[str, ...], FloatBounds] | None = None) -> str:
    """The ``stats`` JSON string of a file from its footer; ``schema`` lists the stored columns.

    Example:
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> t = pa.table({"s": pa.array([{"a": 1}], pa.struct([("a", pa.int64())]))})
        >>> sink = pa.BufferOutputStream()
        >>> w = pq.ParquetWriter(sink, t.schema); w.write_table(t); w.close()
        >>> stats_json(w.writer.metadata, StructType.from_arrow_schema(t.schema))
        '{"numRecords":1,"minValues":{"s":{"a":1}},"maxValues":{"s":{"a":1}},"nullCount":{"s":{"a":0}},\
"tightBounds":true}'
    """
    leaves = dict(_leaves(schema))
    by_column = {_column_path(p, t): p for p, t in leaves.items()}
    skip_minmax = set(nan_columns)
    acc: dict[tuple[str, ...], dict[str, Any]] = {}
    geometry = {p for p, t in leaves.items() if (g := geo_spec(t)) is not None and g.kind == "geometry"}
    boxes: dict[tuple[str, ...], GeoBox | None] = {}
    for rg_index in range(metadata.num_row_groups):
        rg = metadata.row_group(rg_index)
        for ci in range(rg.num_columns):
            col = rg.column(ci)
            path = by_column.get(tuple(col.path_in_schema.split(".")), ())
            if not path:
                continue  # list/map internals: no stats
            entry = acc.setdefault(path, {"nulls": 0, "min": None, "max": None, "minmax": True})
            st = col.statistics
            if path in geometry:
                _add_box(boxes, path, col, rg.num_rows)
            if st is None:
                entry["nulls"] = None
                entry["minmax"] = False
                continue
            if entry["nulls"] is not None and st.has_null_count:
                entry["nulls"] += st.null_count
            elif not st.has_null_count:
                entry["nulls"] = None
            if not st.has_min_max:
                if not (st.has_null_count and st.null_count == rg.num_rows):
                    entry["minmax"] = False  # values present but no bounds recorded
                continue
            lo, hi = st.min, st.max
            try:
                entry["min"] = lo if entry["min"] is None or lo < entry["min"] else entry["min"]
                entry["max"] = hi if entry["max"] is None or hi > entry["max"] else entry["max"]
            except TypeError:
                entry["minmax"] = False
    for path, kept in (float_bounds or {}).items():  # counted by the writer (no footer statistics)
        acc[path] = {"nulls": kept.nulls, "min": kept.lo, "max": kept.hi, "minmax": kept.lo is not None}
        if kept.nan:
            skip_minmax.add(path)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for path, dtype in leaves.items():
        found = acc.get(path)
        if found is None:
            if metadata.num_row_groups == 0:
                _put(nulls, path, 0)
            continue
        entry = found
        if entry["nulls"] is not None:
            _put(nulls, path, entry["nulls"])
        box = boxes.get(path)
        if box is not None:  # a geometry: its bounding box (no plain bounds)
            low, high = bbox_stats(box)
            _put(mins, path, low)
            _put(maxs, path, high)
            continue
        if not entry["minmax"] or path in skip_minmax:
            continue
        lo = stats_value(dtype, entry["min"], is_max=False)
        hi = stats_value(dtype, entry["max"], is_max=True)
        if lo is not None and hi is not None:
            _put(mins, path, lo)
            _put(maxs, path, hi)
    out: dict[str, Any] = {"numRecords": metadata.num_rows}
    out["minValues"] = mins
    out["maxValues"] = maxs
    out["nullCount"] = nulls
    out["tightBounds"] = True
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)
