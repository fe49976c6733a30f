"""Columns bound to a DataFrame's plan (``df.id``, ``df["id"] > 3``) rewritten by name, so a step made with
them can be replayed on the frame planned again (:mod:`deltalog.spark.reads.skipping`); and frames planned again
given the column ids of the frames they stand for.

A classic ``Column`` made from a DataFrame (``df.id``) holds that frame's resolved attribute; on another
plan of the same table it no longer resolves (Spark's ``MISSING_ATTRIBUTES``). Where each such attribute is
one of the frame's own output columns, and its name is not shared with another of them, the column means
the same as the column of that name: ``col("id")``, or for an expression, ``expr`` of its SQL text
(comparisons, ``&`` / ``|`` / ``~``, arithmetic, ``isin``, named functions, casts, literals of the plain
types). ``asc()`` / ``desc()`` orderings keep their direction and null order, ``alias`` its name.

Nothing is taken on trust: the rewritten call is planned next to the original one and used only when
Spark's analyzer says both plans compute the same result (``sameResult``) with the same schema. Anything
else -- a column of another frame, a name two columns share, a lambda, a user function, a ``when`` --
stays as it was (the step is then not replayed, as before).

A Spark Connect column names its frame by a plan id on each column reference: the rewritten column is a copy
without the plan ids, whatever the expression around them, used only when the server analyses the rewritten
call to the same plan (``sameSemantics``) with the same schema. So there ``when``, lambdas and user functions
are rewritten too; a column whose name now means another column (one ``withColumn`` replaced, a self join) is
not.

The other way round, a frame planned again (a filter over fewer files, a scan with the row-tracking
``_metadata``) gets the ids of the columns it stands for: :func:`with_plan_ids` gives every column the id of
the plain frame's column, :func:`passed_through` those passed through from the frame it was built on --
a projection over the new plan, so ``df.id`` keeps resolving on what is built from it.

Example:
    >>> rebound(df, lambda a, k: df.filter(*a, **k), (df.id > 3,), {})          # doctest: +SKIP
    ((Column<'(`id` > 3)'>,), {}, DataFrame[id: bigint])
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from deltalog.spark.common.compat import COLUMN_NODES, jvm_dataset
from deltalog.spark.common.core import quoted

__all__ = ["MAX_ID_COLUMNS", "passed_through", "plan_ids", "rebound", "with_plan_ids"]

_BINARY = frozenset({"=", "<=>", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "and", "or", "&", "|", "^"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT32 = 2**31


class _Unbound(Exception):
    """The column cannot be written by name."""


class _Names:
    """The names of a frame's output columns, looked up by attribute: the attribute must be one of the
    frame's output (same expression id), and its name not shared with another of its columns."""

    def __init__(self, frame: Any) -> None:
        self._output = frame._jdf.queryExecution().analyzed().outputSet()
        self._columns: list[str] = list(frame.columns)

    def get(self, attribute: Any) -> str | None:
        if not self._output.contains(attribute):
            return None
        low = str(attribute.name()).lower()
        found = [c for c in self._columns if c.lower() == low]
        return found[0] if len(found) == 1 else None


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value) if -_INT32 <= value < _INT32 else f"{value}L"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Unbound("float")
        return f"{value!r}D"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if type(value).__name__ == "JavaObject" and str(value.getClass().getName()) in ("java.sql.Date",
                                                                                   "java.time.LocalDate"):
        return f"DATE '{value.toString()}'"
    raise _Unbound(type(value).__name__)


def _sql(node: Any, names: _Names) -> str:
    """SQL text of a classic ``ColumnNode`` with the frame's attributes written by their ``names``."""
    kind = str(node.getClass().getSimpleName())
    if kind == "ExpressionColumnNode":
        expression = node.expression()
        if str(expression.getClass().getSimpleName()) != "AttributeReference":
            raise _Unbound(kind)
        name = names.get(expression)
        if name is None:
            raise _Unbound("attribute of another frame")
        return quoted(name)
    if kind == "UnresolvedAttribute":
        if node.planId().isDefined() or node.isMetadataColumn():
            raise _Unbound(kind)
        parts = node.nameParts()
        return ".".join(quoted(str(parts.apply(i))) for i in range(parts.size()))
    if kind == "Literal":
        if node.dataType().isDefined():
            raise _Unbound("typed literal")
        return _literal(node.value())
    if kind == "SqlExpression":
        return f"({node.expression()})"
    seq = node.children()
    args = [_sql(seq.apply(i), names) for i in range(seq.size())]
    if kind == "Cast" and len(args) == 1 and node.evalMode().isEmpty():
        return f"CAST({args[0]} AS {node.dataType().sql()})"
    if kind == "UnresolvedExtractValue" and len(args) == 2:
        return f"{args[0]}[{args[1]}]"
    if kind != "UnresolvedFunction" or node.isUserDefinedFunction() or node.isInternal():
        raise _Unbound(kind)
    name = str(node.functionName())
    if node.isDistinct():
        if not _NAME.match(name):
            raise _Unbound(name)
        return f"{name}(DISTINCT {', '.join(args)})"
    if name == "!" and len(args) == 1:
        return f"(NOT {args[0]})"
    if name == "in" and len(args) >= 2:
        return f"({args[0]} IN ({', '.join(args[1:])}))"
    if name.lower() in _BINARY and len(args) == 2:
        return f"({args[0]} {name.upper()} {args[1]})"
    if _NAME.match(name):
        return f"{name}({', '.join(args)})"
    raise _Unbound(name)


def _column(column: Any, names: _Names) -> Any:
    """``column`` (bound to a plan) with the frame's attributes written by name: a new ``Column``."""
    if not COLUMN_NODES:
        return _catalyst_column(column._jc.expr(), names)
    node = column._jc.node()
    kind = str(node.getClass().getSimpleName())
    if kind == "SortOrder":
        seq = node.children()
        inner = _column_of_node(seq.apply(0), names)
        direction = "desc" if "Descending" in str(node.sortDirection()) else "asc"
        nulls = "first" if "NullsFirst" in str(node.nullOrdering()) else "last"
        return getattr(inner, f"{direction}_nulls_{nulls}")()
    if kind == "Alias" and node.name().size() == 1 and node.metadata().isEmpty():
        return _column_of_node(node.children().apply(0), names).alias(str(node.name().apply(0)))
    return _column_of_node(node, names)


def _column_of_node(node: Any, names: _Names) -> Any:
    from pyspark.sql import functions as F

    kind = str(node.getClass().getSimpleName())
    text = _sql(node, names)
    return F.col(text) if kind == "ExpressionColumnNode" else F.expr(text)


def _catalyst_column(expression: Any, names: _Names) -> Any:
    """Spark 3.5's form of :func:`_column`: a classic column holds a catalyst expression, written as Spark's own
    SQL text of it once each attribute in it is one of the frame's columns, made unqualified."""
    from pyspark.sql import functions as F

    kind = str(expression.getClass().getSimpleName())
    if kind == "SortOrder":
        inner = _catalyst_column(expression.child(), names)
        direction = "desc" if "Descending" in str(expression.direction()) else "asc"
        nulls = "first" if "NullsFirst" in str(expression.nullOrdering()) else "last"
        return getattr(inner, f"{direction}_nulls_{nulls}")()
    if kind == "AttributeReference":
        name = names.get(expression)
        if name is None:
            raise _Unbound("attribute of another frame")
        return F.col(quoted(name))
    return F.expr(_catalyst_sql(expression, names))


def _catalyst_sql(node: Any, names: _Names) -> str:
    """Spark's SQL text of a catalyst expression whose attributes are the frame's own columns; the outer alias and
    a ``DISTINCT`` aggregate written here (3.5's text of an unresolved function leaves ``DISTINCT`` out)."""
    kind = str(node.getClass().getSimpleName())
    if kind == "Alias":
        return f"{_catalyst_sql(node.child(), names)} AS {quoted(str(node.name()))}"
    if kind == "UnresolvedFunction" and node.isDistinct() and node.filter().isEmpty():
        parts, seq = node.nameParts(), node.children()
        name = str(parts.apply(parts.size() - 1))
        if not _NAME.match(name):
            raise _Unbound(name)
        return f"{name}(DISTINCT {', '.join(_catalyst_sql(seq.apply(i), names) for i in range(seq.size()))})"
    return str(_unqualified(node, names).sql())


_NOT_BY_NAME = frozenset({"ResolvedStar", "OuterReference", "CaseWhen", "If", "NamedLambdaVariable"})


def _unqualified(node: Any, names: _Names) -> Any:
    """``node`` with each attribute -- one of the frame's own columns, or :class:`_Unbound` -- without its qualifier
    (``t.id`` of a query's alias is ``id`` of the frame); what 4.x would not write by name is refused here too."""
    kind = str(node.getClass().getSimpleName())
    if kind == "AttributeReference":
        if names.get(node) is None:
            raise _Unbound("attribute of another frame")
        return node if node.qualifier().isEmpty() else node.withQualifier(node.qualifier().take(0))
    if kind in _NOT_BY_NAME or "Subquery" in kind or "UDF" in kind or "Lambda" in kind or (
            kind == "UnresolvedFunction" and node.isDistinct()):
        raise _Unbound(kind)  # as on 4.x: no CASE, lambda or user function is written by name
    seq = node.children()
    if seq.size() == 0:
        return node
    from pyspark import SparkContext

    jvm: Any = SparkContext._jvm
    children = jvm.java.util.ArrayList()
    for i in range(seq.size()):
        children.add(_unqualified(seq.apply(i), names))
    return node.withNewChildren(jvm.org.apache.spark.api.python.PythonUtils.toSeq(children))


def _bound(node: Any) -> bool:
    """Whether a classic column tree refers to a particular frame's plan."""
    kind = str(node.getClass().getSimpleName())
    if kind in ("ExpressionColumnNode", "AttributeReference", "ResolvedStar"):
        return True
    seq = node.children()
    return any(_bound(seq.apply(i)) for i in range(seq.size()))


def _bound_column(value: Any) -> bool:
    return type(value).__name__ == "Column" and "_jc" in value.__dict__ and _bound(
        value._jc.node() if COLUMN_NODES else value._jc.expr())


def _any_bound(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_any_bound(v) for v in value)
    if isinstance(value, dict):
        return any(_any_bound(v) for v in value.values())
    return _bound_column(value)


def _rewrite(value: Any, names: _Names) -> Any:
    if isinstance(value, list):
        return [_rewrite(v, names) for v in value]
    if isinstance(value, tuple):
        return tuple(_rewrite(v, names) for v in value)
    if isinstance(value, dict):
        return {k: _rewrite(v, names) for k, v in value.items()}
    if _bound_column(value):
        return _column(value, names)
    return value


def _same(a: Any, b: Any) -> bool:
    if a.schema != b.schema:
        return False
    return bool(a._jdf.queryExecution().analyzed().sameResult(b._jdf.queryExecution().analyzed()))


def rebound(frame: Any, run: Callable[[tuple[Any, ...], dict[str, Any]], Any], args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any], Any] | None:
    """``(args, kwargs, result)`` with the columns in ``args`` / ``kwargs`` that are bound to ``frame``'s plan
    written by name, ``result`` being ``run(args, kwargs)`` (a DataFrame method of ``frame`` applied to
    them); ``None`` when some column cannot be, or when Spark does not plan the rewritten call the same
    as ``run`` with the original arguments.

    Example:
        >>> args, _, out = rebound(df, lambda a, k: df.filter(*a, **k), (df.id > 3,), {})  # doctest: +SKIP
        >>> args                                                                   # doctest: +SKIP
        (Column<'(`id` > 3)'>,)
    """
    if "_jdf" not in frame.__dict__:
        return _connect_rebound(frame, run, args, kwargs)
    try:
        if not (_any_bound(args) or _any_bound(kwargs)):
            return None
        names = _Names(frame)
        new_args, new_kwargs = _rewrite(args, names), _rewrite(kwargs, names)
        result = run(new_args, new_kwargs)
        if type(result).__name__ != "DataFrame" or not _same(run(args, kwargs), result):
            return None
    except Exception:  # not rewritable (or not the same plan): the caller keeps the original
        return None
    return new_args, new_kwargs, result


def _connect_nodes(value: Any) -> Iterator[Any]:
    """Every expression node in ``value`` (a Connect expression, a window spec, or lists of them)."""
    from pyspark.sql.connect.expressions import Expression, SubqueryExpression

    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _connect_nodes(item)
        return
    if isinstance(value, SubqueryExpression):
        raise _Unbound("subquery")
    if isinstance(value, Expression) or type(value).__module__ == "pyspark.sql.connect.window":
        yield value
        for item in vars(value).values():
            yield from _connect_nodes(item)


def _plan_bound(message: Any) -> bool:
    """Whether a Connect protobuf message names a plan anywhere (a column bound to a frame, a subquery)."""
    for field, value in message.ListFields():
        if field.name == "plan_id":
            return True
        if field.message_type is None:
            continue
        items = [value] if hasattr(value, "ListFields") else value.values() if hasattr(value, "values") else value
        if any(hasattr(i, "ListFields") and _plan_bound(i) for i in items):
            return True
    return False


def _connect_rewrite(value: Any, client: Any, rewritten: list[Any]) -> Any:
    """``value`` (an argument) with each Connect column bound to a plan copied without its plan ids (each
    appended to ``rewritten``); the others as they are."""
    import copy

    if isinstance(value, list):
        return [_connect_rewrite(v, client, rewritten) for v in value]
    if isinstance(value, tuple):
        return tuple(_connect_rewrite(v, client, rewritten) for v in value)
    if isinstance(value, dict):
        return {k: _connect_rewrite(v, client, rewritten) for k, v in value.items()}
    if type(value).__name__ != "Column" or "_expr" not in value.__dict__:
        return value
    if not _plan_bound(value._expr.to_plan(client)):
        return value
    expr = copy.deepcopy(value._expr)
    for node in list(_connect_nodes(expr)):
        if getattr(node, "_plan_id", None) is not None:
            node._plan_id = None
    if _plan_bound(expr.to_plan(client)):  # a plan id somewhere the walk did not reach
        raise _Unbound("plan id left")
    rewritten.append(expr)
    return type(value)(expr)


def _connect_rebound(frame: Any, run: Callable[[tuple[Any, ...], dict[str, Any]], Any], args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any], Any] | None:
    """:func:`rebound` on Spark Connect: the columns' plan ids dropped (so each names its column), the rewritten
    call kept where the server analyses it to the same plan (``sameSemantics``) with the same schema."""
    try:
        client, rewritten = frame.sparkSession.client, list[Any]()
        new_args, new_kwargs = _connect_rewrite(args, client, rewritten), _connect_rewrite(kwargs, client, rewritten)
        if not rewritten:
            return None
        result, original = run(new_args, new_kwargs), run(args, kwargs)
        if type(result).__name__ != "DataFrame" or result.schema != original.schema or \
                not result.sameSemantics(original):
            return None
    except Exception:  # not rewritable (or not the same plan): the caller keeps the original
        return None
    return new_args, new_kwargs, result


#: :func:`with_plan_ids` gives up above this many columns (each costs a few calls into the JVM, ~0.2 ms
#: each: ~1 s for 300 columns); the caller then keeps Spark's plain frame.
MAX_ID_COLUMNS = 64


def with_plan_ids(frame: Any, like: Any) -> Any | None:
    """``frame`` with its output columns given the expression ids of ``like``'s (a frame of the same
    columns, e.g. the plain filter ``frame`` is planned again for): what refers to ``like``'s columns, or to
    the columns of the frames ``like`` is built on (``df.id``), resolves on it the same way. ``None`` on
    Spark Connect, when the columns differ, above :data:`MAX_ID_COLUMNS` columns, or when this Spark's
    planner classes do not take the call.

    Example:
        >>> with_plan_ids(pruned, df.filter("id > 3")).select(df.id).count()      # doctest: +SKIP
        96
    """
    if "_jdf" not in frame.__dict__ or "_jdf" not in like.__dict__:
        return None
    schema = like.schema
    if len(schema.fields) > MAX_ID_COLUMNS or frame.schema != schema:
        return None
    try:
        theirs = like._jdf.queryExecution().analyzed().output()
        out = plan_ids(frame, [theirs.apply(i) for i in range(theirs.size())], like)
    except Exception:  # another Spark's internals: the caller keeps the plain frame
        return None
    return out if out is not None and out.schema == schema else None


def passed_through(frame: Any, source: Any, names: frozenset[str]) -> Any:
    """``frame`` with each output column whose (lower-case) name is in ``names`` -- a column of ``source``
    that ``frame`` passes through unchanged -- given the expression id of ``source``'s column of that name,
    so that ``source``'s columns (``df.id``) resolve on ``frame``; ``frame`` itself where that cannot be
    done (a name ``source`` or ``frame`` has twice, Spark Connect, another Spark's internals).

    Example:
        >>> passed_through(rebuilt, df, frozenset({"id"})).select(df.id).count()      # doctest: +SKIP
        20
    """
    if "_jdf" not in frame.__dict__ or "_jdf" not in source.__dict__:
        return frame
    try:
        output = source._jdf.queryExecution().analyzed().output()
        lowered = [c.lower() for c in source.columns]
        mine = [c.lower() for c in frame.columns]
        ids = [output.apply(lowered.index(c)) if c in names and lowered.count(c) == 1 and mine.count(c) == 1
               else None for c in mine]
        if not any(a is not None for a in ids):
            return frame
        out = plan_ids(frame, ids, frame)
    except Exception:  # another Spark's internals: the caller keeps the frame
        return frame
    return out if out is not None and out.schema == frame.schema else frame


def plan_ids(frame: Any, ids: list[Any], like: Any) -> Any | None:
    """``frame`` (classic) projected so that output column ``i`` carries the expression id and qualifier of
    the JVM attribute ``ids[i]`` under ``frame``'s name for it (kept as it is where ``ids[i]`` is ``None``); a
    DataFrame of ``like``'s class. ``None`` when the counts differ."""
    jvm = frame.sparkSession._jvm
    mine = frame._jdf.queryExecution().analyzed()
    ours = mine.output()
    names = frame.columns
    if ours.size() != len(ids) or len(names) != len(ids):
        return None
    catalyst = jvm.org.apache.spark.sql.catalyst
    to_seq = jvm.org.apache.spark.api.python.PythonUtils.toSeq
    alias = catalyst.expressions.Alias
    no_metadata, no_keys = jvm.scala.Option.empty(), to_seq(jvm.java.util.ArrayList())
    projection = jvm.java.util.ArrayList()
    for i, want in enumerate(ids):
        mine_i = ours.apply(i)
        projection.add(mine_i if want is None else
                       alias(mine_i, names[i], want.exprId(), want.qualifier(), no_metadata, no_keys))
    plan = catalyst.plans.logical.Project(to_seq(projection), mine)
    jdf = jvm_dataset(jvm).ofRows(frame.sparkSession._jsparkSession, plan)
    return type(like)(jdf, like.sparkSession)
