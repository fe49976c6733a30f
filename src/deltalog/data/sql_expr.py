"""A subset of Spark SQL boolean expressions, compiled to ``pyarrow.compute`` calls.

Used to evaluate CHECK constraints and column invariants on data being written. Supported:

* literals: integers, decimals/floats (``1.5``, ``1e3``), ``'strings'`` (``''`` escapes a quote) and
  ``"strings"``, ``TRUE``/``FALSE``/``NULL``, ``DATE '2024-01-01'``, ``TIMESTAMP '2024-01-01 00:00:00'``;
* column references, case-insensitive, ```back quoted```, nested struct fields as ``a.b``;
* ``= == != <> < <= > >= <=>``, ``AND OR NOT``, ``IS [NOT] NULL``, ``[NOT] IN (...)``,
  ``[NOT] BETWEEN ... AND ...``, ``[NOT] LIKE``, ``+ - * / %``, unary ``-``, parentheses;
* functions ``abs length char_length lower upper trim coalesce isnull isnotnull``, ``year month day
  dayofmonth hour minute second quarter dayofyear`` (of dates and timestamps, in UTC), ``to_date`` /
  ``date``, ``concat``, ``substring`` / ``substr`` (literal positions), ``startswith endswith contains``
  (literal patterns), ``date_add date_sub datediff``, ``current_date current_timestamp`` (now, in UTC);
* ``IS [NOT] DISTINCT FROM`` (null-safe comparison, as ``<=>``);
* ``CAST(x AS type)`` / ``TRY_CAST`` to the primitive types (``DATE`` of a timestamp is its UTC date).

SQL three-valued logic is kept (``AND``/``OR`` are Kleene operations, comparisons with null are null).
A string literal compared with a date, timestamp, number or boolean column is cast to that type, as
Spark does. Anything else raises :class:`UnsupportedExpressionError`.

Example:
    >>> import pyarrow as pa
    >>> compile_expression("x > 3 AND x IS NOT NULL").evaluate(pa.table({"x": [5, 1]})).to_pylist()
    [True, False]
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data.sql_parse import SqlNode, SqlParser, UnsupportedExpressionError

__all__ = [
    "Expression", "SqlNode", "SqlParser", "UnsupportedExpressionError", "compile_expression", "conjuncts", "literal_as",
    "sql_expr",
]


Value = Any  # pa.Array | pa.ChunkedArray | pa.Scalar
_Eval = Callable[[pa.Table], Value]


# ------------------------------------------------------------------------------------- evaluation


def _type_of(v: Value) -> pa.DataType:
    dtype: pa.DataType = v.type
    return dtype


def _literal(value: Any, like: Value | None) -> Value:
    """A literal as a scalar, cast to the type of the other operand when that is what SQL would do."""
    target = _type_of(like) if like is not None and not isinstance(like, pa.Scalar) else None
    if value is None:
        return pa.scalar(None, target if target is not None else pa.null())
    if (
        target is not None
        and isinstance(value, str)
        and not pa.types.is_string(target)
        and not (pa.types.is_large_string(target))
    ):
        try:
            if pa.types.is_timestamp(target):
                parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
                if target.tz is not None and parsed.tzinfo is None:
                    parsed = parsed.replace(tzinfo=dt.UTC)
                return pa.scalar(parsed, pa.timestamp("us", tz=target.tz))
            if pa.types.is_date(target):
                return pa.scalar(dt.date.fromisoformat(value.strip()), pa.date32())
            if pa.types.is_boolean(target):
                return pa.scalar(value.strip().lower() == "true", pa.bool_())
            cast: pa.Scalar[Any] = pa.array([value]).cast(target)[0]
            return cast
        except (ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise UnsupportedExpressionError(f"cannot compare {value!r} with a column of type {target}") from None
    if isinstance(value, dt.datetime):
        return pa.scalar(value, pa.timestamp("us", tz="UTC"))
    if (
        target is not None
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
        and pa.types.is_decimal(target)
    ):
        try:
            return pa.scalar(decimal.Decimal(str(value))).cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return pa.scalar(float(value))
    return pa.scalar(value)


def literal_as(value: Any, dtype: pa.DataType) -> Any:
    """A literal of the expression as a Python value of the kind it is compared as with a column of type
    ``dtype`` (a string compared with a date column is a date, ...); raises
    :class:`UnsupportedExpressionError` when it cannot be.

    Example:
        >>> literal_as("2024-01-31", pa.date32())
        datetime.date(2024, 1, 31)
    """
    return _literal(value, pa.array([], dtype)).as_py()


_CMP = {
    "=": "equal",
    "!=": "not_equal",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
}
_ARITH = {"+": "add_checked", "-": "subtract_checked", "*": "multiply_checked", "%": "remainder"}


def _call(name: str, *args: Value) -> Value:
    try:
        return pc.call_function(name, list(args))
    except pa.ArrowNotImplementedError:
        # Mixed numeric types (e.g. decimal vs float): compare as float64.
        cast = [a.cast(pa.float64()) if _numeric(_type_of(a)) else a for a in args]
        try:
            return pc.call_function(name, cast)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            pass
        types = ", ".join(str(_type_of(a)) for a in args)
        raise UnsupportedExpressionError(f"cannot apply {name} to values of types {types}") from None


def _nan_of(v: Value) -> Value:
    return pc.fill_null(pc.is_nan(v), False)


def _compare(op: str, lv: Value, rv: Value) -> Value:
    """``lv op rv`` with Spark's ordering of floating-point values: NaN equals NaN and is greater than
    every other number (IEEE, and Arrow, make every comparison with NaN false); null when either is null.

    Example:
        >>> nan = float("nan")
        >>> _compare(">", pa.array([nan, 1.0, None]), pa.scalar(5.0)).to_pylist()
        [True, False, None]
        >>> _compare("=", pa.array([nan, 1.0]), pa.scalar(nan)).to_pylist()
        [True, False]
    """
    ieee = _call(_CMP["=" if op == "!=" else op], lv, rv)
    if not (pa.types.is_floating(_type_of(lv)) or pa.types.is_floating(_type_of(rv))):
        return _call("invert", ieee) if op == "!=" else ieee
    ln = _nan_of(lv) if pa.types.is_floating(_type_of(lv)) else pa.scalar(False)
    rn = _nan_of(rv) if pa.types.is_floating(_type_of(rv)) else pa.scalar(False)
    return nan_ordered(op, ieee, ln, rn, pc.or_(pc.is_null(lv), pc.is_null(rv)))


def nan_ordered(op: str, ieee: Any, left_nan: Any, right_nan: Any, either_null: Any) -> Any:
    """Spark's ``left op right`` from the IEEE comparison ``ieee`` (of ``=`` for ``!=``), whether each side
    is NaN (never null) and whether either is null: NaN equals NaN and is above every other number. The
    arguments are Arrow arrays, scalars or ``pyarrow.compute`` expressions (filters pushed into a scan).

    Example:
        >>> nan_ordered(">", pa.array([False, False]), pa.array([True, False]), pa.scalar(False),
        ...             pa.array([False, False])).to_pylist()
        [True, False]
    """
    both = pc.and_kleene  # (the sides' NaN flags are never null; and_kleene is also an expression function)
    extra = {"=": both(left_nan, right_nan), "!=": both(left_nan, right_nan),
             ">": both(left_nan, pc.invert(right_nan)), ">=": left_nan,
             "<": both(pc.invert(left_nan), right_nan), "<=": right_nan}[op]
    null = pa.scalar(None, pa.bool_())
    if isinstance(either_null, pc.Expression):
        null = pc.scalar(null)
    result = pc.if_else(either_null, null, pc.or_kleene(ieee, extra))
    return pc.invert(result) if op == "!=" else result


def _numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


class Expression:
    """A compiled boolean (or value) SQL expression; :meth:`evaluate` runs it on a ``pyarrow.Table``.

    Example:
        >>> import pyarrow as pa
        >>> compile_expression("a + 1 IN (2, 3)").evaluate(pa.table({"a": [1, 5]})).to_pylist()
        [True, False]
    """

    def __init__(self, sql: str, node: SqlNode) -> None:
        self.sql = sql
        self._node = node

    def __repr__(self) -> str:
        return f"Expression({self.sql!r})"

    @property
    def node(self) -> SqlNode:
        """The parsed expression tree.

        Example:
            >>> compile_expression("a > 1").node.kind
            'binary'
        """
        return self._node

    def columns(self) -> list[tuple[str, ...]]:
        """Column paths the expression references.

        Example:
            >>> compile_expression("a.b > c").columns()
            [('a', 'b'), ('c',)]
        """
        out: list[tuple[str, ...]] = []

        def walk(n: Any) -> None:
            if isinstance(n, SqlNode):
                if n.kind == "col":
                    out.append(n.args)
                    return
                for a in n.args:
                    walk(a)
            elif isinstance(n, tuple):
                for a in n:
                    walk(a)

        walk(self._node)
        return out

    def evaluate(self, table: pa.Table) -> pa.Array[Any] | pa.ChunkedArray[Any]:
        """Evaluate on every row; a constant result is broadcast to the table's length.

        Example:
            >>> import pyarrow as pa
            >>> compile_expression("1 = 1").evaluate(pa.table({"a": [1, 2]})).to_pylist()
            [True, True]
        """
        result = self._eval(self._node, table)
        if isinstance(result, pa.Scalar):
            result = pa.repeat(result, table.num_rows)
        out: pa.Array[Any] | pa.ChunkedArray[Any] = result
        return out

    def _eval(self, n: SqlNode, t: pa.Table) -> Value:
        kind, args = n.kind, n.args
        if kind == "lit":
            return _literal(args[0], None)
        if kind == "col":
            return _column(t, args)
        if kind == "unary":
            inner = self._eval(args[1], t)
            return _call("invert", inner) if args[0] == "NOT" else _call("negate_checked", inner)
        if kind == "binary":
            return self._binary(args[0], args[1], args[2], t)
        if kind == "isnull":
            value = self._eval(args[0], t)
            return _call("is_valid" if args[1] else "is_null", value)
        if kind == "in":
            return self._in(args[0], args[1], args[2], t)
        if kind == "between":
            lo = self._binary(">=", args[0], args[1], t)
            hi = self._binary("<=", args[0], args[2], t)
            both = _call("and_kleene", lo, hi)
            return _call("invert", both) if args[3] else both
        if kind == "like":
            value = self._eval(args[0], t)
            if args[1].kind != "lit" or not isinstance(args[1].args[0], str):
                raise UnsupportedExpressionError("LIKE needs a string literal pattern")
            out = pc.match_like(value, args[1].args[0])
            return _call("invert", out) if args[2] else out
        if kind == "func":
            return self._func(args[0], args[1], t)
        if kind == "cast":
            return _cast(self._eval(args[0], t), args[1], safe=args[2])
        raise UnsupportedExpressionError(f"unsupported expression node {kind}")  # pragma: no cover

    def _operands(self, left: SqlNode, right: SqlNode, t: pa.Table) -> tuple[Value, Value]:
        lv = None if left.kind == "lit" else self._eval(left, t)
        rv = None if right.kind == "lit" else self._eval(right, t)
        if lv is None:
            lv = _literal(left.args[0], rv)
        if rv is None:
            rv = _literal(right.args[0], lv)
        return lv, rv

    def _binary(self, op: str, left: SqlNode, right: SqlNode, t: pa.Table) -> Value:
        if op in ("AND", "OR"):
            return _call("and_kleene" if op == "AND" else "or_kleene", self._eval(left, t), self._eval(right, t))
        lv, rv = self._operands(left, right, t)
        if op in _CMP:
            return _compare(op, lv, rv)
        if op == "<=>":
            eq = pc.fill_null(_compare("=", lv, rv), False)
            both_null = _call("and", _call("is_null", lv), _call("is_null", rv))
            return _call("or", eq, both_null)
        if op == "/":
            return _call("divide", _as_float(lv), _as_float(rv))
        return _call(_ARITH[op], lv, rv)

    def _in(self, left: SqlNode, items: tuple[SqlNode, ...], negate: bool, t: pa.Table) -> Value:
        value = self._eval(left, t)
        result: Value | None = None
        for item in items:
            lv, rv = (value, self._eval(item, t)) if item.kind != "lit" else (value, _literal(item.args[0], value))
            eq = _compare("=", lv, rv)
            result = eq if result is None else _call("or_kleene", result, eq)
        assert result is not None
        return _call("invert", result) if negate else result

    def _func(self, name: str, args: tuple[SqlNode, ...], t: pa.Table) -> Value:
        values = [self._eval(a, t) for a in args]
        unary = {
            "abs": "abs_checked",
            "length": "utf8_length",
            "char_length": "utf8_length",
            "lower": "utf8_lower",
            "upper": "utf8_upper",
            "trim": "utf8_trim_whitespace",
            "isnull": "is_null",
            "isnotnull": "is_valid",
        }
        if name in unary and len(values) == 1:
            return _call(unary[name], values[0])
        if name == "coalesce" and values:
            return _call("coalesce", *values)
        parts = {"year": "year", "month": "month", "day": "day", "dayofmonth": "day", "hour": "hour",
                 "minute": "minute", "second": "second", "quarter": "quarter", "dayofyear": "day_of_year"}
        if name in parts and len(values) == 1:
            value = values[0]
            if pa.types.is_string(_type_of(value)):
                value = _cast(value, pa.timestamp("us", tz="UTC"), safe=True)
            if pa.types.is_timestamp(_type_of(value)) and _type_of(value).tz is not None:
                value = _cast(value, pa.timestamp(_type_of(value).unit), safe=False)  # UTC wall clock
            return _cast(_call(parts[name], value), pa.int32(), safe=False)
        if name in ("to_date", "date") and len(values) == 1:
            return _cast(values[0], pa.date32(), safe=True)
        if name == "concat" and values:
            strings = [_cast(v, pa.string(), safe=False) for v in values]
            return _call("binary_join_element_wise", *strings, pa.scalar(""))
        if name in ("substring", "substr") and len(values) in (2, 3):
            return _substring(values)
        if name in _STRING_TESTS and len(values) == 2:
            pattern = values[1]
            if not isinstance(pattern, pa.Scalar) or not pa.types.is_string(pattern.type):
                raise UnsupportedExpressionError(f"{name}() needs a string literal as its second argument")
            try:
                return pc.call_function(_STRING_TESTS[name], [values[0]], pc.MatchSubstringOptions(pattern.as_py()))
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
                raise UnsupportedExpressionError(f"{name}() needs a string first argument, got "
                                                 f"{_type_of(values[0])}") from None
        if name in ("current_date", "curdate") and not values:
            return pa.scalar(dt.datetime.now(dt.UTC).date(), pa.date32())
        if name in ("current_timestamp", "now") and not values:
            return pa.scalar(dt.datetime.now(dt.UTC), pa.timestamp("us", tz="UTC"))
        if name in ("date_add", "date_sub") and len(values) == 2:
            days = _cast(values[1], pa.int32(), safe=False)
            start = _cast(values[0], pa.date32(), safe=True)
            shift = days if name == "date_add" else _call("negate_checked", days)
            as_days = _call("add_checked", _cast(start, pa.int32(), safe=False), shift)
            return _cast(as_days, pa.date32(), safe=False)
        if name == "datediff" and len(values) == 2:
            end, start = (_cast(_cast(v, pa.date32(), safe=True), pa.int32(), safe=False) for v in values)
            return _call("subtract_checked", end, start)
        raise UnsupportedExpressionError(f"function {name}() with {len(values)} argument(s) is not supported")


#: ``startswith(s, 'p')`` and the like: Arrow's substring matches with a literal pattern.
_STRING_TESTS = {"startswith": "starts_with", "endswith": "ends_with", "contains": "match_substring"}


def _cast(value: Value, target: pa.DataType, *, safe: bool) -> Value:
    """SQL ``CAST``: a string that does not parse is null for ``TRY_CAST`` (and for date parts of strings),
    an error otherwise; a timestamp becomes a date in UTC."""
    source = _type_of(value)
    if isinstance(value, pa.Scalar):
        return _cast(pa.array([value.as_py()], source), target, safe=safe)[0]
    if pa.types.is_timestamp(source) and pa.types.is_date(target):
        naive = value if source.tz is None else value.cast(pa.timestamp(source.unit))
        return naive.cast(pa.date32())
    try:
        return value.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        if not safe:
            raise UnsupportedExpressionError(f"cannot CAST {source} to {target}: {exc}") from None
    rows = [v for v in (value.to_pylist() if hasattr(value, "to_pylist") else [])]
    out = []
    for v in rows:
        try:
            out.append(pa.array([v]).cast(target)[0].as_py())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            out.append(None)
    return pa.array(out, target)


def _substring(values: list[Value]) -> Value:
    """Spark's ``substring(str, pos[, len])``: 1-based ``pos``, negative counts from the end."""
    text, pos = values[0], values[1]
    length = values[2] if len(values) == 3 else None
    if not isinstance(pos, pa.Scalar) or (length is not None and not isinstance(length, pa.Scalar)):
        raise UnsupportedExpressionError("substring() needs literal positions")
    start = int(pos.as_py() or 0)
    begin = start - 1 if start > 0 else (start if start < 0 else 0)
    if length is None:
        return pc.utf8_slice_codeunits(text, begin)
    n = int(length.as_py() or 0)
    if n <= 0:
        return pc.utf8_slice_codeunits(text, 0, 0)
    stop = begin + n
    if begin < 0 <= stop:
        return pc.utf8_slice_codeunits(text, begin)
    return pc.utf8_slice_codeunits(text, begin, stop)


def _as_float(v: Value) -> Value:
    return v.cast(pa.float64()) if _numeric(_type_of(v)) else v


def _column(t: pa.Table, path: tuple[str, ...]) -> Value:
    names = {n.lower(): n for n in t.column_names}
    name = names.get(path[0].lower())
    if name is None:
        raise UnsupportedExpressionError(f"column {'.'.join(path)!r} does not exist (columns: {t.column_names})")
    value: Value = t.column(name)
    for part in path[1:]:
        vtype = _type_of(value)
        if not pa.types.is_struct(vtype):
            raise UnsupportedExpressionError(f"{'.'.join(path)!r}: {part!r} is not a field of a struct")
        fields = {vtype.field(i).name.lower(): i for i in range(vtype.num_fields)}
        if part.lower() not in fields:
            raise UnsupportedExpressionError(f"column {'.'.join(path)!r} does not exist")
        value = pc.struct_field(value, [fields[part.lower()]])
    return value


def compile_expression(sql: str) -> Expression:
    """Parse a SQL expression of the supported subset (see the module docstring).

    Example:
        >>> compile_expression("NOT (a BETWEEN 1 AND 3)")
        Expression('NOT (a BETWEEN 1 AND 3)')
    """
    if not isinstance(sql, str) or not sql.strip():
        raise UnsupportedExpressionError(f"empty constraint expression {sql!r}")
    return Expression(sql, SqlParser(sql).parse())


def conjuncts(node: SqlNode) -> list[SqlNode]:
    """The terms of a chain of ``AND`` (the node itself when it is not one).

    Example:
        >>> [n.kind for n in conjuncts(compile_expression("a = 1 AND (b > 2 AND c IS NULL)").node)]
        ['binary', 'binary', 'isnull']
    """
    if node.kind == "binary" and node.args[0] == "AND":
        return conjuncts(node.args[1]) + conjuncts(node.args[2])
    return [node]


def sql_expr(sql: str) -> Expression:
    """A SQL expression of the row's columns, as a value for the kernel's UPDATE (``Table.update_rows``):
    ``{"v": sql_expr("v * 2")}`` sets ``v`` to twice its old value (plain values are literals).

    Example:
        >>> import pyarrow as pa
        >>> sql_expr("upper(name)").evaluate(pa.table({"name": ["a"]})).to_pylist()
        ['A']
    """
    return compile_expression(sql)
