"""Filter conditions as SQL text, for file skipping on Delta DataFrames (:mod:`deltalog.spark.reads.skipping`).

A condition given to ``filter`` / ``where`` is read as the SQL text of its top-level conjuncts: a SQL string
as given; a ``Column`` built from ``col`` / ``lit`` / comparison operators / ``isin`` / ``between`` / ``expr``
(classic or Connect) through its expression tree, anything else in it being left out. A column bound to
one particular DataFrame (``df.id``, a subquery) cannot be moved to another frame: then there is no text.
The same reading tells whether a tracked method's arguments can be replayed on a frame planned again
(:func:`portable`) and which column a ``select`` argument passes through (:func:`plain_name`).

Example:
    >>> condition_sql("id > 3 AND k = 1")
    ['id > 3 AND k = 1']
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from typing import TYPE_CHECKING, Any

from deltalog.spark.common.compat import COLUMN_NODES
from deltalog.spark.common.core import quoted

if TYPE_CHECKING:
    from deltalog.data.filters import Condition
    from deltalog.snapshot import Snapshot

__all__ = ["condition_sql", "flat_columns", "plain_name", "portable", "skipping_conditions"]

_COMPARISONS = {"=": "=", "==": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "!=": "!=", "<>": "!="}
_EPOCH = dt.date(1970, 1, 1)


class _Unportable(Exception):
    """The condition refers to a column of one particular DataFrame."""



def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _sql_literal(value: Any, type_name: str) -> str | None:
    """A Python literal value as SQL text, or ``None`` when it is not one the pruning rules use."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if type_name == "DateType" and isinstance(value, int):
        return f"DATE '{(_EPOCH + dt.timedelta(days=value)).isoformat()}'"  # Connect: days since the epoch
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return _sql_string(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return f"DATE '{value.isoformat()}'"
    return None


# A condition tree in neutral form: ("col", sql) | ("lit", sql or None) | ("sql", text) | ("fn", name, args)
# | ("other",). Both readers below produce it; :func:`_render` turns it into SQL.
Node = tuple[Any, ...]


def _render(node: Node, *, negate: bool = False) -> str | None:
    """SQL of a neutral node, or ``None`` when it is not a simple comparison / IN / SQL text."""
    kind = node[0]
    if kind == "sql" and not negate:
        return f"({node[1]})"
    if kind != "fn":
        return None
    name, args = node[1], node[2]
    if name in ("not", "!") and len(args) == 1 and not negate:
        return _render(args[0], negate=True)
    simple = (name in _COMPARISONS and len(args) == 2) or (name == "in" and len(args) >= 2)
    if not simple or not all(a[0] in ("col", "lit") and a[1] is not None for a in args):
        return None
    if name == "in":
        return f"({args[0][1]} {'NOT IN' if negate else 'IN'} ({', '.join(a[1] for a in args[1:])}))"
    return None if negate else f"({args[0][1]} {_COMPARISONS[name]} {args[1][1]})"


def _conjuncts(node: Node) -> list[Node]:
    if node[0] == "fn" and node[1] == "and":
        return [c for a in node[2] for c in _conjuncts(a)]
    return [node]


class _Classic:
    """Reads a classic ``Column``: its JVM ``ColumnNode`` tree, through py4j (a few calls per node)."""

    def root(self, column: Any) -> Any:
        return column._jc.node()

    def _children(self, node: Any) -> list[Any]:
        seq = node.children()
        return [seq.apply(i) for i in range(seq.size())]

    def neutral(self, node: Any) -> Node:
        kind = str(node.getClass().getSimpleName())
        if kind == "ExpressionColumnNode":
            raise _Unportable(kind)  # e.g. df.id: an attribute resolved against that frame's plan
        if kind == "UnresolvedAttribute":
            if node.planId().isDefined():
                raise _Unportable(kind)
            seq = node.nameParts()
            return ("col", ".".join(quoted(str(seq.apply(i))) for i in range(seq.size())))
        if kind == "Literal":
            value = node.value()
            if value is not None and type(value).__name__ == "JavaObject":
                if str(value.getClass().getName()) in ("java.sql.Date", "java.time.LocalDate"):
                    return ("lit", f"DATE '{value.toString()}'")
                return ("lit", None)
            return ("lit", _sql_literal(value, ""))
        if kind == "SqlExpression":
            return ("sql", str(node.expression()))
        children = [self.neutral(c) for c in self._children(node)]  # checks every node for portability
        if kind == "UnresolvedFunction":
            return ("fn", str(node.functionName()).lower(), children)
        return ("other",)


#: Spark 3.5's catalyst classes of the conditions :func:`_render` writes, as the function names 4.x's nodes carry.
_CATALYST_FUNCTIONS = {"EqualTo": "=", "LessThan": "<", "LessThanOrEqual": "<=", "GreaterThan": ">",
                       "GreaterThanOrEqual": ">=", "Not": "not", "And": "and", "In": "in"}
#: Column trees that hold an attribute resolved against one frame's plan (or a star of its columns).
_BOUND_KINDS = frozenset({"ExpressionColumnNode", "AttributeReference", "ResolvedStar", "OuterReference"})


class _Catalyst:
    """Reads a classic ``Column`` of Spark 3.5: its catalyst ``Expression`` tree, through py4j (``df.id`` is a
    resolved ``AttributeReference`` there; comparisons are classes of their own)."""

    def root(self, column: Any) -> Any:
        return column._jc.expr()

    def neutral(self, node: Any) -> Node:
        kind = str(node.getClass().getSimpleName())
        if kind in _BOUND_KINDS or "Subquery" in kind:
            raise _Unportable(kind)
        if kind == "UnresolvedAttribute":
            seq = node.nameParts()
            return ("col", ".".join(quoted(str(seq.apply(i))) for i in range(seq.size())))
        if kind == "Literal":
            return ("lit", self._literal(node.value(), str(node.dataType().typeName())))
        seq = node.children()
        children = [self.neutral(seq.apply(i)) for i in range(seq.size())]  # checks every node for portability
        if kind == "UnresolvedFunction":
            parts = node.nameParts()
            return ("fn", str(parts.apply(parts.size() - 1)).lower(), children)
        name = _CATALYST_FUNCTIONS.get(kind)
        return ("other",) if name is None else ("fn", name, children)

    @staticmethod
    def _literal(value: Any, type_name: str) -> str | None:
        if value is None:
            return None
        if type_name == "string":  # a UTF8String
            return _sql_string(str(value.toString()))
        if type_name == "date":  # days since the epoch
            return _sql_literal(int(value), "DateType")
        if type_name in ("boolean", "byte", "short", "integer", "long", "float", "double"):
            return _sql_literal(value, "")
        return None


def _classic_reader() -> _Classic | _Catalyst:
    return _Classic() if COLUMN_NODES else _Catalyst()


def _classic_root(column: Any) -> Any:
    return column._jc.node() if COLUMN_NODES else column._jc.expr()


class _Connect:
    """Reads a Spark Connect ``Column``: its Python expression tree."""

    def root(self, column: Any) -> Any:
        return column._expr

    def neutral(self, node: Any) -> Node:
        kind = type(node).__name__
        if kind == "ColumnReference":
            if getattr(node, "_plan_id", None) is not None:
                raise _Unportable(kind)  # e.g. df.id: bound to that frame's plan
            return ("col", str(node._unparsed_identifier))
        if kind == "LiteralExpression":
            return ("lit", _sql_literal(node._value, type(node._dataType).__name__))
        if kind == "SQLExpression":
            return ("sql", str(node._expr))
        args = getattr(node, "children", None) or getattr(node, "_args", None) or []  # 3.5: _args only
        children = [self.neutral(c) for c in args]
        if kind == "UnresolvedFunction":
            return ("fn", str(node._name).lower(), children)
        return ("other",)


def condition_sql(condition: Any) -> list[str] | None:
    """The SQL text of a filter condition's top-level conjuncts that can be written as SQL (others are
    left out), or ``None`` when the condition cannot be applied to another DataFrame (it refers to a
    column of a particular one, e.g. ``df.id``) or is neither a SQL string nor a ``Column``.

    Example:
        >>> condition_sql("id > 3 AND k = 1")
        ['id > 3 AND k = 1']
        >>> condition_sql((F.col("id") > 3) & F.col("k").isin("a", "b"))          # doctest: +SKIP
        ['(`id` > 3)', "(`k` IN ('a', 'b'))"]
    """
    if isinstance(condition, str):
        return [condition] if condition.strip() else None
    if type(condition).__name__ != "Column":
        return None
    reader: _Classic | _Catalyst | _Connect = _classic_reader() if hasattr(condition, "_jc") else _Connect()
    try:
        tree = reader.neutral(reader.root(condition))
    except _Unportable:
        return None
    except Exception:  # an unexpected tree shape (another PySpark version): no skipping, never an error
        return []
    parts = [_render(node) for node in _conjuncts(tree)]
    return [p for p in parts if p is not None]


def skipping_conditions(condition: Any, snapshot: Snapshot) -> list[Condition] | None:
    """Kernel conditions implied by a Spark filter condition (for partition pruning and min/max
    skipping only; Spark still applies the condition itself); ``None`` when the condition cannot be
    moved to another DataFrame (see :func:`condition_sql`).

    Example:
        >>> skipping_conditions("id >= 10 AND upper(s) = 'A'", snap)             # doctest: +SKIP
        [Condition(column='id', op='>=', value=10)]
    """
    from deltalog.spark.reads.target import pruning_conditions

    texts = condition_sql(condition)
    if texts is None:
        return None
    out: list[Condition] = []
    for text in texts:
        conds, _ = pruning_conditions(text, snapshot)
        out.extend(c for c in conds if c not in out)
    return out


# ------------------------------------------------ arguments of the tracked DataFrame methods


def portable(value: Any) -> bool:
    """Whether ``value`` (an argument of a tracked method) means the same on a re-planned frame: plain
    Python values and SQL strings do; a ``Column`` does unless it refers to a particular DataFrame
    (``df.id``, ``df["*"]``, a subquery); anything unexpected does not.

    Example:
        >>> portable(["id", 3, {"x": "id + 1"}])
        True
        >>> portable(object())
        False
    """
    if isinstance(value, (str, int, float, bool)) or value is None:
        return True
    if isinstance(value, (list, tuple)):
        return all(portable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and portable(v) for k, v in value.items())
    if type(value).__name__ != "Column":
        return False
    # a Column never changes: its tree is walked once (Py4J calls per node); read from __dict__, as a Column's
    # unknown attribute is a field of it
    known = getattr(value, "__dict__", {}).get(_PORTABLE)
    if known is not None:
        return bool(known)
    try:
        found = _classic_portable(_classic_root(value)) if hasattr(value, "_jc") else _connect_portable(value._expr)
    except Exception:  # an unexpected tree shape: not replayed
        found = False
    with contextlib.suppress(Exception):  # a Column class without a __dict__: asked again next time
        value.__dict__[_PORTABLE] = found
    return found


_PORTABLE = "_deltalog_portable"


def _classic_portable(node: Any) -> bool:
    kind = str(node.getClass().getSimpleName())
    if kind in _BOUND_KINDS or "Subquery" in kind:
        return False
    if COLUMN_NODES and kind in ("UnresolvedAttribute", "UnresolvedStar", "UnresolvedRegex") and \
            node.planId().isDefined():
        return False
    seq = node.children()
    return all(_classic_portable(seq.apply(i)) for i in range(seq.size()))


def _connect_portable(node: Any) -> bool:
    if getattr(node, "_plan_id", None) is not None or "Subquery" in type(node).__name__:
        return False
    return all(_connect_portable(c) for c in (getattr(node, "children", None) or []))


def plain_name(value: Any) -> str | None:
    """The column name a ``select`` argument passes through unchanged (``"id"``, ``col("id")``), ``"*"``
    for a star, ``None`` for anything computed or nested.

    Example:
        >>> [plain_name(v) for v in ("id", "`a b`", "*", "s.x")]
        ['id', 'a b', '*', None]
    """
    if isinstance(value, str):
        if value == "*":
            return value
        if value.startswith("`") and value.endswith("`") and len(value) > 1 and "`" not in value[1:-1]:
            return value[1:-1]
        return None if "." in value or "`" in value else value
    if type(value).__name__ != "Column":
        return None
    if not hasattr(value, "_jc"):
        expr = value._expr
        kind = type(expr).__name__
        if kind == "UnresolvedStar" and getattr(expr, "_unparsed_target", None) is None:
            return "*"
        return plain_name(str(expr._unparsed_identifier)) if kind == "ColumnReference" else None
    node = _classic_root(value)
    kind = str(node.getClass().getSimpleName())
    if kind == "UnresolvedStar" and (node.unparsedTarget() if COLUMN_NODES else node.target()).isEmpty():
        return "*"
    if kind != "UnresolvedAttribute":
        return None
    parts = node.nameParts()
    return str(parts.apply(0)) if parts.size() == 1 else None


def flat_columns(args: tuple[Any, ...]) -> list[Any]:
    """A ``select``'s columns, given one by one or as one list.

    Example:
        >>> flat_columns((["a", "b"],)), flat_columns(("a", "b"))
        (['a', 'b'], ['a', 'b'])
    """
    return list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
