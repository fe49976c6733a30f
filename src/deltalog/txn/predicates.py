"""Read predicates of a transaction and whether a data file could hold rows matching them.

A read predicate is a conjunction of ``(column, op, value)`` conditions (ops ``= == != < <= > >= in
not in``) on top-level columns. :func:`file_may_match` answers, for one ``add`` action, "could this file
contain a row satisfying the predicate?":

* conditions on **partition columns** are evaluated exactly on the file's typed partition value
  (a null partition value matches nothing);
* conditions on **data columns** use the file's JSON ``stats``: the file may match unless its
  ``[minValues, maxValues]`` range (or an all-null ``nullCount``) proves no row can. A file without
  stats, or without stats for the column, may match. Timestamp maxima are widened by one millisecond
  (stats are truncated to milliseconds) and string maxima of 32 or more characters are compared on
  their prefix only (they may be truncated).

Everything here works on the schema's JSON and the action's JSON values; it needs no engine.

Example:
    >>> cols = columns_of('{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,'
    ...                   '"metadata":{}}]}', partition_columns=())
    >>> p = ReadPredicate.of([("x", ">", 10)], cols)
    >>> file_may_match({"partitionValues": {}, "stats": '{"numRecords":2,"minValues":{"x":1},'
    ...                 '"maxValues":{"x":5},"nullCount":{"x":0}}'}, p, cols)
    False
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.errors import InvalidArgumentError

__all__ = ["Column", "ReadPredicate", "columns_of", "file_may_match", "typed_value"]

_OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in")
_UTC = dt.UTC


@dataclass(frozen=True)
class Column:
    """A top-level column: logical ``name``, Delta ``type`` (a string for primitives), the
    ``physical`` name used in partition values and stats, and whether it is a partition column.

    Example:
        >>> Column("day", "date", "day", True).partition
        True
    """

    name: str
    type: Any
    physical: str
    partition: bool


def columns_of(
    schema_string: str | None, *, partition_columns: Sequence[str], mapping_mode: str = "none"
) -> dict[str, Column]:
    """Top-level columns of a ``schemaString`` keyed by logical name.

    Example:
        >>> sorted(columns_of('{"type":"struct","fields":[{"name":"d","type":"date","nullable":true,'
        ...                   '"metadata":{}}]}', partition_columns=["d"]))
        ['d']
    """
    try:
        obj = json.loads(schema_string or '{"fields":[]}')
    except ValueError:
        obj = {"fields": []}
    out: dict[str, Column] = {}
    parts = set(partition_columns)
    for f in obj.get("fields") or []:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            continue
        meta: dict[str, Any] = f["metadata"] if isinstance(f.get("metadata"), dict) else {}
        physical = f["name"]
        if mapping_mode in ("name", "id") and isinstance(meta.get("delta.columnMapping.physicalName"), str):
            physical = meta["delta.columnMapping.physicalName"]
        out[f["name"]] = Column(f["name"], f.get("type"), physical, f["name"] in parts)
    return out


def _parse_timestamp(text: str, ntz: bool) -> dt.datetime:
    s = text.strip().replace(" ", "T", 1)
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    value = dt.datetime.fromisoformat(s)
    if ntz:
        return value if value.tzinfo is None else value.astimezone(_UTC).replace(tzinfo=None)
    return value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)


def typed_value(dtype: Any, value: Any) -> Any:
    """Convert a predicate literal, partition value string or stats JSON value to a comparable Python
    value of Delta type ``dtype``. Raises ``ValueError``/``TypeError`` when it does not fit.

    Example:
        >>> typed_value("date", "2024-01-02")
        datetime.date(2024, 1, 2)
        >>> typed_value("timestamp", "2024-01-01T00:00:00.000Z")
        datetime.datetime(2024, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    if value is None or not isinstance(dtype, str):
        raise TypeError(f"cannot compare a value of type {dtype!r}")
    if dtype == "string":
        if isinstance(value, str):
            return value
        raise TypeError("string column needs a string value")
    if dtype in ("long", "integer", "short", "byte"):
        if isinstance(value, bool):
            raise TypeError("boolean is not an integer")
        if isinstance(value, float) and not value.is_integer():
            return value
        return int(value)
    if dtype in ("float", "double"):
        if isinstance(value, bool):
            raise TypeError("boolean is not a number")
        return float(value)
    if dtype.startswith("decimal"):
        if isinstance(value, bool):
            raise TypeError("boolean is not a number")
        return decimal.Decimal(str(value))
    if dtype == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise TypeError("not a boolean")
    if dtype == "date":
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        return dt.date.fromisoformat(str(value)[:10])
    if dtype in ("timestamp", "timestamp_ntz"):
        ntz = dtype == "timestamp_ntz"
        if isinstance(value, dt.datetime):
            if ntz:
                return value if value.tzinfo is None else value.astimezone(_UTC).replace(tzinfo=None)
            return value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)
        if isinstance(value, dt.date):
            value = dt.datetime(value.year, value.month, value.day)
            return value if ntz else value.replace(tzinfo=_UTC)
        return _parse_timestamp(str(value), ntz)
    if dtype == "binary":
        return value if isinstance(value, (bytes, str)) else str(value)
    raise TypeError(f"cannot compare values of type {dtype!r}")


@dataclass(frozen=True)
class Condition:
    """One typed condition; ``value`` is a tuple for ``in`` / ``not in``.

    Example:
        >>> Condition("x", ">", 3).op
        '>'
    """

    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class ReadPredicate:
    """A conjunction of conditions a transaction read the table with (empty: the whole table).

    Example:
        >>> ReadPredicate((Condition("x", ">", 3),)).describe()
        'x > 3'
    """

    conditions: tuple[Condition, ...]

    @classmethod
    def of(cls, conditions: Iterable[Sequence[Any]], columns: Mapping[str, Column]) -> ReadPredicate:
        """Validate ``(column, op, value)`` tuples against ``columns`` and type their values.

        Example:
            >>> cols = columns_of('{"fields":[{"name":"p","type":"integer","metadata":{}}]}',
            ...                   partition_columns=["p"])
            >>> ReadPredicate.of([("p", "in", ["1", 2])], cols).conditions[0].value
            (1, 2)
        """
        out = []
        for cond in conditions:
            if not (isinstance(cond, (tuple, list)) and len(cond) == 3):
                raise InvalidArgumentError(f"predicate condition {cond!r} is not (column, op, value)")
            name, op, value = cond
            op = "=" if str(op).strip().lower() == "==" else str(op).strip().lower()
            if op not in _OPS:
                raise InvalidArgumentError(f"predicate op {op!r} is not one of {list(_OPS)}")
            col = columns.get(name)
            if col is None:
                raise InvalidArgumentError(
                    f"predicate column {name!r} is not in the table (columns: {sorted(columns)})"
                )
            try:
                if op in ("in", "not in"):
                    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                        raise InvalidArgumentError(f"'{op}' needs a list of values, got {value!r}")
                    typed: Any = tuple(typed_value(col.type, v) for v in value)
                else:
                    typed = typed_value(col.type, value)
            except (TypeError, ValueError, ArithmeticError):
                raise InvalidArgumentError(
                    f"predicate value {value!r} cannot be compared with column {name!r} of type {col.type!r}"
                ) from None
            out.append(Condition(name, op, typed))
        return cls(tuple(out))

    @property
    def is_whole_table(self) -> bool:
        """True for the empty predicate.

        Example:
            >>> ReadPredicate(()).is_whole_table
            True
        """
        return not self.conditions

    def describe(self) -> str:
        """Human-readable form for messages, e.g. ``day = 2024-01-01 AND x > 3``.

        Example:
            >>> ReadPredicate(()).describe()
            'the whole table'
        """
        if not self.conditions:
            return "the whole table"
        return " AND ".join(f"{c.column} {c.op} {c.value!s}" for c in self.conditions)


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "=":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    if op == ">=":
        return bool(left >= right)
    if op == "in":
        return left in right
    return left not in right


def _pairs(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    return dict(value)  # list of (key, value) pairs from an Arrow map


def _partition_matches(cond: Condition, col: Column, pvals: Mapping[str, Any]) -> bool:
    raw = pvals.get(col.physical, pvals.get(col.name))
    if raw is None or raw == "":
        return False  # null partition: no comparison is true
    try:
        return _compare(cond.op, typed_value(col.type, raw), cond.value)
    except (TypeError, ValueError, ArithmeticError):
        return True  # cannot tell: count it as a match


def _stats_may_match(cond: Condition, col: Column, stats: Mapping[str, Any]) -> bool:
    mins = stats.get("minValues") or {}
    maxs = stats.get("maxValues") or {}
    nulls = stats.get("nullCount") or {}
    n = stats.get("numRecords")
    key = col.physical
    if isinstance(n, int) and n > 0 and nulls.get(key) == n:
        return False  # every row is null here: no comparison can be true
    if isinstance(n, int) and n == 0:
        return False
    if cond.op in ("!=", "not in"):
        return True
    lo_raw, hi_raw = mins.get(key), maxs.get(key)
    if lo_raw is None or hi_raw is None or isinstance(lo_raw, (dict, list)):
        return True
    try:
        lo = typed_value(col.type, lo_raw)
        hi = typed_value(col.type, hi_raw)
    except (TypeError, ValueError, ArithmeticError):
        return True
    if isinstance(hi, dt.datetime):
        hi = hi + dt.timedelta(milliseconds=1)
    truncated = col.type == "string" and isinstance(hi, str) and len(hi) >= 32

    def upto_hi(v: Any, strict: bool = False) -> bool:
        if truncated:  # the true maximum may be longer than the stored prefix
            return bool(v[: len(hi)] <= hi)
        return bool(v < hi) if strict else bool(v <= hi)

    try:
        if cond.op in ("=", "in"):
            values = cond.value if cond.op == "in" else (cond.value,)
            return any(lo <= v and upto_hi(v) for v in values)
        if cond.op == "<":
            return bool(lo < cond.value)
        if cond.op == "<=":
            return bool(lo <= cond.value)
        if cond.op == ">":
            return upto_hi(cond.value, strict=True)
        return upto_hi(cond.value)
    except TypeError:
        return True


def file_may_match(add: Mapping[str, Any], predicate: ReadPredicate, columns: Mapping[str, Column]) -> bool:
    """Could the file described by ``add`` (an action dict or an Arrow row) hold a matching row?

    Example:
        >>> cols = columns_of('{"fields":[{"name":"p","type":"string","metadata":{}}]}',
        ...                   partition_columns=["p"])
        >>> pred = ReadPredicate.of([("p", "=", "a")], cols)
        >>> file_may_match({"partitionValues": {"p": "a"}}, pred, cols)
        True
        >>> file_may_match({"partitionValues": [("p", "b")]}, pred, cols)
        False
    """
    if not predicate.conditions:
        return True
    pvals = _pairs(add.get("partitionValues"))
    stats: Mapping[str, Any] | None = None
    for cond in predicate.conditions:
        col = columns.get(cond.column)
        if col is None:
            continue
        if col.partition:
            if not _partition_matches(cond, col, pvals):
                return False
            continue
        if stats is None:
            raw = add.get("stats")
            try:
                parsed = json.loads(raw) if isinstance(raw, str) and raw else {}
            except ValueError:
                parsed = {}
            stats = parsed if isinstance(parsed, dict) else {}
        if stats and not _stats_may_match(cond, col, stats):
            return False
    return True
