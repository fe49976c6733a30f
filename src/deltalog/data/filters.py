"""Filters: ``(column, op, value)`` conditions joined by AND, a SQL condition string, or a pyarrow expression.

Conditions serve three purposes: partition pruning (on typed partition values, vectorized), file skipping
by min/max statistics, and finally the row filter itself. A SQL string (``"id > 5 AND day = '2024-01-01'"``,
the subset of :mod:`deltalog.data.sql_expr`) filters the rows with the SQL evaluator, and its top-level
``AND`` terms of the form ``column <op> literal`` (also ``IN`` and ``BETWEEN``) prune and skip files as the
conditions do. A pyarrow expression filters rows only.

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
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data.sql_expr import (
    Expression,
    SqlNode,
    UnsupportedExpressionError,
    compile_expression,
    conjuncts,
    literal_as,
    nan_ordered,
)
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import StructType, contains_variant, geo_spec, physical_name, type_string

#: ``[(column, op, value), ...]`` (AND), a SQL condition ``str``, or a ``pyarrow.compute.Expression`` (rows only).
FilterLike = Sequence[tuple[str, str, Any]] | str | Any

#: What filters rows beyond the conditions: a pyarrow expression, or a compiled SQL condition (whose
#: conditions, when :func:`normalize_filter` gives both, are implied by it and serve pruning only).
RowFilter: TypeAlias = "pc.Expression | Expression"


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
) -> tuple[list[Condition], RowFilter | None]:
    """Validate a filter against the schema; returns its conditions (for pruning, skipping and the rows)
    and what else filters the rows: a pyarrow expression, or a SQL condition with the conditions it implies.

    Example:
        >>> from deltalog.protocol.schema import parse_schema
        >>> s = parse_schema('{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,'
        ...                  '"metadata":{}}]}')
        >>> normalize_filter("X > 3 AND x % 2 = 0", s, table="t")
        ([Condition(column='x', op='>', value=3)], Expression('X > 3 AND x % 2 = 0'))
    """
    if filter is None:
        return [], None
    if isinstance(filter, pc.Expression):
        return [], filter
    if isinstance(filter, str):
        return sql_filter(filter, schema, table=table)
    if isinstance(filter, tuple) and len(filter) == 3 and isinstance(filter[0], str):
        filter = [filter]
    if isinstance(filter, bytes) or not isinstance(filter, Sequence):
        raise InvalidArgumentError(
            "filter must be a SQL condition string, a list of (column, op, value) tuples or a pyarrow "
            f"Expression, got {filter!r}",
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
        if geo_spec(schema.field(column).type) is not None:
            raise InvalidArgumentError(
                f"filter on column {column!r} of type {type_string(schema.field(column).type)}: geospatial values "
                f"have no order and cannot be compared; filter with a SQL condition such as \"{column} IS NOT NULL\" "
                "or on other columns",
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


def sql_filter(sql: str, schema: StructType, *, table: str) -> tuple[list[Condition], Expression | None]:
    """A SQL condition checked against the schema (columns exist, literals fit, the result is a boolean):
    the conditions its top-level ``AND`` terms imply (``column <op> literal``, ``IN``, ``BETWEEN``), and
    the compiled condition itself unless those conditions say all of it.

    Example:
        >>> from deltalog.protocol.schema import parse_schema
        >>> s = parse_schema('{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,'
        ...                  '"metadata":{}}]}')
        >>> sql_filter("x BETWEEN 1 AND 5", s, table="t")
        ([Condition(column='x', op='>=', value=1), Condition(column='x', op='<=', value=5)], None)
        >>> sql_filter("x = 1 OR x IS NULL", s, table="t")
        ([], Expression('x = 1 OR x IS NULL'))
    """
    logical = schema.to_arrow_schema()
    try:
        expr = compile_expression(sql)
        result = expr.evaluate(logical.empty_table())
    except UnsupportedExpressionError as exc:
        raise InvalidArgumentError(f"filter {sql!r}: {exc.message}", table=table) from None
    if not (pa.types.is_boolean(result.type) or pa.types.is_null(result.type)):
        raise InvalidArgumentError(
            f"filter {sql!r} is not a condition: it gives {result.type} values, not true or false", table=table
        )
    by_lower = {f.name.lower(): f for f in schema.fields}
    for path in expr.columns():
        field = by_lower[path[0].lower()]  # the evaluation above found every column
        if contains_variant(field.type):
            raise InvalidArgumentError(
                f"filter {sql!r} uses column {field.name!r} of type {type_string(field.type)}: variant values "
                "cannot be compared (nor files skipped by them)",
                table=table,
            )
    conditions: list[Condition] = []
    complete = True  # every term is said exactly by its conditions
    for term in conjuncts(expr.node):
        implied = _implied(term, logical, table)
        complete = complete and bool(implied) and all(c.op != "not in" for c in implied)  # NOT IN: nulls
        conditions += implied
    return conditions, None if complete else expr


_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _implied(term: SqlNode, logical: pa.Schema, table: str) -> list[Condition]:
    """The conditions one ``AND`` term of a SQL filter implies; none when it is not a simple comparison of
    a top-level column of a primitive type with literals (the SQL evaluator still filters the rows)."""
    kind, args = term.kind, term.args
    column: SqlNode | None = None
    pairs: list[tuple[str, Any]] = []  # (op, literal)
    if kind == "binary" and args[0] in _FLIPPED:
        op, left, right = args
        if left.kind == "col" and right.kind == "lit":
            column, pairs = left, [(op, right.args[0])]
        elif left.kind == "lit" and right.kind == "col":
            column, pairs = right, [(_FLIPPED[op], left.args[0])]
    elif kind == "in" and args[0].kind == "col" and all(item.kind == "lit" for item in args[1]):
        column, pairs = args[0], [("not in" if args[2] else "in", tuple(item.args[0] for item in args[1]))]
    elif kind == "between" and not args[3] and args[0].kind == "col" and args[1].kind == args[2].kind == "lit":
        column, pairs = args[0], [(">=", args[1].args[0]), ("<=", args[2].args[0])]
    if column is None or len(column.args) != 1:
        return []
    names = {n.lower(): n for n in logical.names}
    name = names[column.args[0].lower()]
    atype = logical.field(name).type
    if not (pa.types.is_integer(atype) or pa.types.is_floating(atype) or pa.types.is_decimal(atype)
            or pa.types.is_string(atype) or pa.types.is_date(atype) or pa.types.is_timestamp(atype)
            or pa.types.is_boolean(atype)):
        return []
    out = []
    for op, value in pairs:
        values = value if isinstance(value, tuple) else (value,)
        if any(v is None for v in values):
            return []  # a comparison with NULL is never true: the evaluator says so row by row
        try:  # each literal as the evaluator compares it, then typed as a condition
            typed = tuple(_literal(literal_as(v, atype), atype, name, table) for v in values)
        except (UnsupportedExpressionError, InvalidArgumentError):
            return []
        if pa.types.is_decimal(atype) and any(isinstance(v, float) for v in typed):
            return []  # compared as floats by the evaluator; not a decimal bound
        out.append(Condition(name, op, typed if isinstance(value, tuple) else typed[0]))
    return out


def matching_rows(data: pa.Table, conditions: Sequence[Condition], expression: RowFilter | None) -> np.ndarray:
    """Which rows of ``data`` the filter matches (a null result does not match).

    Example:
        >>> matching_rows(pa.table({"x": [1, 5, None]}), [Condition("x", ">", 3)], None).tolist()
        [False, True, False]
    """
    if not conditions and expression is None:
        return np.ones(data.num_rows, dtype=bool)
    if isinstance(expression, Expression):  # the conditions are implied by it
        mask = expression.evaluate(data)
    else:
        expr = row_mask(data, conditions) if conditions else expression
        if conditions and expression is not None:
            expr = expr & expression
        mask = _evaluate(data, expr)
    return np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool)


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


def _expr(cond: Condition, floating: bool = False) -> pc.Expression:
    field = pc.field(cond.column)
    if cond.op == "in":
        return field.isin(list(cond.value))
    if cond.op == "not in":
        return ~field.isin(list(cond.value))
    fn = {"=": field.__eq__, "!=": field.__ne__, "<": field.__lt__, "<=": field.__le__,
          ">": field.__gt__, ">=": field.__ge__}[cond.op]
    result: pc.Expression = fn(cond.value)
    if not floating:
        return result
    # Spark's order of floating-point values: NaN equals NaN and is above every other number (IEEE and
    # Arrow make each comparison with NaN false); the value is never null here
    ieee = field == cond.value if cond.op == "!=" else result
    value_nan = pc.scalar(isinstance(cond.value, float) and math.isnan(cond.value))
    ordered: pc.Expression = nan_ordered(cond.op, ieee, pc.coalesce(pc.is_nan(field), pc.scalar(False)), value_nan,
                                         pc.is_null(field))
    return ordered


def row_mask(table: pa.Table, conditions: Sequence[Condition]) -> pc.Expression:
    """The AND of all conditions as an Arrow expression (nulls never match)."""

    def floating(column: str) -> bool:
        index = table.schema.get_field_index(column)
        return index >= 0 and bool(pa.types.is_floating(table.schema.field(index).type))

    expr = _expr(conditions[0], floating(conditions[0].column))
    for c in conditions[1:]:
        expr = expr & _expr(c, floating(c.column))
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


__all__ = ["Condition", "FileListing", "FilterLike", "RowFilter", "matching_rows", "normalize_filter", "prune_files",
           "row_mask", "sql_filter", "stats_keep"]
