"""Simple filters: ``(column, op, value)`` conditions joined by AND.

They serve three purposes: partition pruning (on typed partition values, vectorized), file skipping
by min/max statistics, and finally the row filter itself.

Example:
    >>> from deltalog.protocol.schema import parse_schema
    >>> s = parse_schema('{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,'
    ...                  '"metadata":{}}]}')
    >>> normalize_filter([("x", ">", 3)], s, table="t")[0]
    [Condition(column='x', op='>', value=3)]
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import StructType, contains_variant, physical_name, type_string

#: ``[(column, op, value), ...]`` (AND) or a ``pyarrow.compute.Expression`` (rows only).
FilterLike = Sequence[tuple[str, str, Any]] | Any


class FileListing(Protocol):
    """What pruning needs of a table version (a :class:`~deltalog.Snapshot` is one): its name and version
    for messages, its schema, partition columns, column mapping mode and live files. The Arrow engine
    takes this instead of the ``Snapshot`` class, so the snapshot can read its rows through the engine
    without the two modules importing each other."""

    @property
    def table(self) -> str: ...

    @property
    def version(self) -> int: ...

    @property
    def schema(self) -> StructType: ...

    @property
    def partition_columns(self) -> tuple[str, ...]: ...

    @property
    def column_mapping_mode(self) -> str: ...

    def add_files(self) -> pa.Table: ...


OPS = {"=": "equal", "==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal",
       ">": "greater", ">=": "greater_equal", "in": "in", "not in": "not in"}


@dataclass(frozen=True)
class Condition:
    """One ``column op value`` condition; ``value`` is already converted to the column's type."""

    column: str
    op: str
    value: Any


def normalize_filter(
    filter: Any, schema: StructType, *, table: str
) -> tuple[list[Condition], pc.Expression | None]:
    """Validate a filter against the schema; returns conditions or a row-only Arrow expression."""
    if filter is None:
        return [], None
    if isinstance(filter, pc.Expression):
        return [], filter
    if isinstance(filter, tuple) and len(filter) == 3 and isinstance(filter[0], str):
        filter = [filter]
    if isinstance(filter, (str, bytes)) or not isinstance(filter, Sequence):
        raise InvalidArgumentError(
            f"filter must be a list of (column, op, value) tuples or a pyarrow Expression, got {filter!r}",
            table=table,
        )
    out = []
    arrow_schema = schema.to_arrow_schema()
    for cond in filter:
        if not (isinstance(cond, (tuple, list)) and len(cond) == 3):
            raise InvalidArgumentError(f"filter condition {cond!r} is not (column, op, value)", table=table)
        column, op, value = cond
        op = str(op).lower().strip()
        if column not in arrow_schema.names:
            raise InvalidArgumentError(
                f"filter column {column!r} is not in the table (columns: {arrow_schema.names})", table=table
            )
        if op not in OPS:
            raise InvalidArgumentError(f"filter op {op!r} is not one of {sorted(OPS)}", table=table)
        if contains_variant(schema.field(column).type):
            raise InvalidArgumentError(
                f"filter on column {column!r} of type {type_string(schema.field(column).type)}: variant values "
                "cannot be compared (nor files skipped by them); read the column and decode it with "
                "deltalog.protocol.variant.to_python instead",
                table=table,
            )
        atype = arrow_schema.field(column).type
        if op in ("in", "not in"):
            if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, set, frozenset)):
                raise InvalidArgumentError(f"'{op}' needs a list of values, got {value!r}", table=table)
            converted: Any = tuple(_literal(v, atype, column, table) for v in value)
        else:
            converted = _literal(value, atype, column, table)
        out.append(Condition(column, "=" if op == "==" else op, converted))
    return out, None


def _literal(value: Any, atype: pa.DataType, column: str, table: str) -> Any:
    if value is None:
        raise InvalidArgumentError(f"filter on {column!r} compares with None; nothing equals null", table=table)
    if isinstance(value, float) and pa.types.is_integer(atype) and not value.is_integer():
        return value  # 2.5 against an integer column: compare as a number, never truncate to 2
    try:
        if isinstance(value, str) and not pa.types.is_string(atype):
            if pa.types.is_timestamp(atype):
                return pa.array([value]).cast(pa.timestamp("us")).cast(atype)[0].as_py()
            return pa.array([value]).cast(atype)[0].as_py()
        return pa.scalar(value, atype).as_py()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
        raise InvalidArgumentError(
            f"filter value {value!r} cannot be compared with column {column!r} of type {atype}", table=table
        ) from None


def _expr(cond: Condition) -> pc.Expression:
    field = pc.field(cond.column)
    if cond.op == "in":
        return field.isin(list(cond.value))
    if cond.op == "not in":
        return ~field.isin(list(cond.value))
    fn = {"=": field.__eq__, "!=": field.__ne__, "<": field.__lt__, "<=": field.__le__,
          ">": field.__gt__, ">=": field.__ge__}[cond.op]
    result: pc.Expression = fn(cond.value)
    return result


def row_mask(table: pa.Table, conditions: Sequence[Condition]) -> pc.Expression:
    """The AND of all conditions as an Arrow expression (nulls never match)."""
    expr = _expr(conditions[0])
    for c in conditions[1:]:
        expr = expr & _expr(c)
    return expr


def prune_files(snapshot: FileListing, conditions: Sequence[Condition]) -> pa.Table:
    """The live files that may hold matching rows: partition pruning, then min/max skipping."""
    files = snapshot.add_files()
    if not conditions or files.num_rows == 0:
        return files
    schema = snapshot.schema
    mode = snapshot.column_mapping_mode
    part_cols = set(snapshot.partition_columns)
    keep = np.ones(files.num_rows, dtype=bool)
    part_conds = [c for c in conditions if c.column in part_cols]
    if part_conds:
        from deltalog.protocol.partitions import log_partition_array

        pv = files.column("partitionValues").combine_chunks()
        typed: dict[str, pa.Array] = {}
        for c in part_conds:
            field = schema.field(c.column)
            key = physical_name(field, mode)
            raw = pc.map_lookup(pv, pa.scalar(key, pa.string()), "first")
            if key != c.column and raw.null_count == len(raw):
                raw = pc.map_lookup(pv, pa.scalar(c.column, pa.string()), "first")
            typed[c.column] = log_partition_array(
                raw, field.type, column=c.column, table=snapshot.table, version=snapshot.version,
                paths=files.column("path"),
            )
        ptable = pa.table(typed)
        expr = row_mask(ptable, part_conds)
        sel = pc.fill_null(_evaluate(ptable, expr), False).to_numpy(zero_copy_only=False)
        keep &= sel
    stat_conds = [c for c in conditions if c.column not in part_cols and c.op not in ("!=", "not in")]
    if stat_conds and keep.any():
        keep &= stats_keep(files.column("stats"), stat_conds, schema, mode, keep=keep)
    return files.filter(pa.array(keep))


def stats_keep(stats: Any, conds: Sequence[Condition], schema: StructType, mode: str,
               keep: np.ndarray | None = None) -> np.ndarray:
    """Per file (``stats``: the JSON statistics column), whether its min/max statistics allow rows matching
    every condition of ``conds`` (data columns only); files already dropped by ``keep`` are not looked at.
    Numeric, string and date comparisons are vectorized, the others compared file by file.

    Example:
        >>> from deltalog.protocol.schema import parse_schema
        >>> s = parse_schema('{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,'
        ...                  '"metadata":{}}]}')
        >>> stats_keep(pa.array(['{"numRecords":2,"minValues":{"x":1},"maxValues":{"x":5}}']),
        ...            [Condition("x", ">", 7)], s, "none").tolist()
        [False]
    """
    n = len(stats)
    out = np.ones(n, dtype=bool) if keep is None else keep.copy()
    fast = [c for c in conds if _fast_value(schema.field(c.column).type, c)]
    slow = [c for c in conds if c not in fast]
    if fast:
        out &= ~_excluded_by_stats(stats, fast, schema, mode)
    if slow:
        values = stats.to_pylist()
        for i, s in enumerate(values):
            if out[i] and s:
                out[i] = _may_match(s, slow, schema, mode)
    return out


#: Column types whose min/max statistics are compared vectorized (Arrow's JSON reader parses them the
#: way :func:`deltalog.protocol.stats.stat_value` does); the others go through :func:`_may_match`.
_FAST_TYPES = {"byte": pa.int64(), "short": pa.int64(), "integer": pa.int64(), "long": pa.int64(),
               "float": pa.float64(), "double": pa.float64(), "string": pa.string(), "date": pa.date32()}


def _fast_type(dtype: Any) -> pa.DataType | None:
    from deltalog.protocol.schema import PrimitiveType

    return _FAST_TYPES.get(dtype.name) if isinstance(dtype, PrimitiveType) else None


def _fast_value(dtype: Any, cond: Condition) -> bool:
    """Whether ``cond`` compares a column of a vectorized type with values of exactly that kind (a fractional
    literal on an integer column, say, keeps the exact per-file comparison)."""
    t = _fast_type(dtype)
    if t is None:
        return False
    values = cond.value if cond.op == "in" else (cond.value,)
    if pa.types.is_integer(t):
        return all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    if pa.types.is_floating(t):
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    if pa.types.is_string(t):
        return all(isinstance(v, str) for v in values)
    return all(isinstance(v, dt.date) and not isinstance(v, dt.datetime) for v in values)


def _excluded_by_stats(stats: Any, conds: Sequence[Condition], schema: StructType, mode: str) -> np.ndarray:
    """Per file, whether its min/max statistics prove that no row matches ``conds`` (all of them numeric,
    string or date columns): one vectorized parse of every file's statistics, as :func:`_may_match`
    decides file by file (a missing, null or unusable statistic never excludes a file)."""
    from deltalog.log.stats_parsed import parse_stats

    keys = {c.column: physical_name(schema.field(c.column), mode) for c in conds}
    types = {keys[c.column]: _fast_type(schema.field(c.column).type) for c in conds}
    bounds = pa.struct([pa.field(k, t) for k, t in types.items()])
    target = pa.struct([pa.field("numRecords", pa.int64()), pa.field("minValues", bounds),
                        pa.field("maxValues", bounds),
                        pa.field("nullCount", pa.struct([pa.field(k, pa.int64()) for k in types]))])
    parsed = parse_stats(stats, target)
    out = np.zeros(len(parsed), dtype=bool)

    def column(group: str, key: str) -> Any:
        return pc.struct_field(pc.struct_field(parsed, group), key)

    records = pc.struct_field(parsed, "numRecords")
    for c in conds:
        key = keys[c.column]
        every_null = pc.and_(pc.equal(column("nullCount", key), records), pc.greater(records, 0))
        lo, hi = column("minValues", key), column("maxValues", key)
        known = pc.and_(pc.is_valid(lo), pc.is_valid(hi))
        t = types[key]
        try:
            if c.op in ("=", "in"):
                values = c.value if c.op == "in" else (c.value,)
                outside = None
                for v in values:
                    v_s = pa.scalar(v, t)
                    one = pc.or_(pc.less(v_s, lo), pc.greater(v_s, hi))
                    outside = one if outside is None else pc.and_(outside, one)
                cannot = outside if outside is not None else pa.scalar(False)
            else:
                v_s = pa.scalar(c.value, t)
                if c.op in ("<", "<="):
                    cannot = (pc.greater_equal if c.op == "<" else pc.greater)(lo, v_s)
                else:
                    cannot = (pc.less_equal if c.op == ">" else pc.less)(hi, v_s)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            cannot = pa.scalar(False)  # a value the column's type cannot hold: only all-null files go
        excluded = pc.or_(pc.fill_null(every_null, False), pc.fill_null(pc.and_(known, cannot), False))
        out |= np.asarray(excluded.to_numpy(zero_copy_only=False), dtype=bool)
    return out


def _evaluate(table: pa.Table, expr: pc.Expression) -> pa.Array:
    import pyarrow.dataset as ds

    result = ds.dataset(table).to_table(columns={"m": expr}).column("m")
    return result.combine_chunks()


def _may_match(stats_json: str, conds: Sequence[Condition], schema: StructType, mode: str) -> bool:
    from deltalog.protocol.stats import stat_value

    try:
        stats = json.loads(stats_json)
    except ValueError:
        return True
    mins, maxs = stats.get("minValues") or {}, stats.get("maxValues") or {}
    nulls, n = stats.get("nullCount") or {}, stats.get("numRecords")
    for c in conds:
        field = schema.field(c.column)
        if contains_variant(field.type):
            continue  # variant min/max statistics (shredded tables only) are never used to skip files
        key = physical_name(field, mode)
        if n is not None and isinstance(nulls.get(key), int) and nulls[key] == n and n > 0:
            return False  # every row is null in this column: no comparison can be true
        if key not in mins or key not in maxs or mins[key] is None or maxs[key] is None:
            continue
        try:
            lo = stat_value(field.type, mins[key])
            hi = stat_value(field.type, maxs[key])
            if isinstance(hi, dt.datetime):
                hi = hi + dt.timedelta(milliseconds=1)  # stats truncate timestamps to milliseconds
            values = c.value if c.op == "in" else (c.value,)
            if c.op in ("=", "in") and all(v < lo or v > hi for v in values):
                return False
            if (c.op == "<" and lo >= c.value) or (c.op == "<=" and lo > c.value):
                return False
            if (c.op == ">" and hi <= c.value) or (c.op == ">=" and hi < c.value):
                return False
        except (TypeError, ValueError, ArithmeticError):
            continue  # incomparable stats: keep the file
    return True


__all__ = ["Condition", "FileListing", "FilterLike", "normalize_filter", "prune_files", "row_mask", "stats_keep"]
