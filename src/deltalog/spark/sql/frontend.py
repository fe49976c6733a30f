"""The SQL front end: ``spark.sql(...)`` routed client-side.

Once a session is registered (:func:`deltalog.spark.register`), ``SparkSession.sql`` of this process --
classic and Spark Connect -- parses each statement with sqlglot (Spark dialect). Delta statements run
through deltalog; a query that reads Delta tables (``delta.`<path>```, catalog tables ``USING delta``,
time travel, ``table_changes``) runs in Spark with those tables replaced by views of deltalog's reads;
everything else -- and any text sqlglot cannot parse -- goes to Spark unchanged, so Spark's own errors and
semantics stay. A Delta statement deltalog cannot run raises an error naming the statement and why.

The statements: :mod:`deltalog.spark.sql.ddl` (``CREATE`` / ``REPLACE`` / ``CLONE`` / ``CONVERT`` /
``ALTER TABLE`` / ``SHOW TBLPROPERTIES`` / ``DESCRIBE TABLE``), :mod:`deltalog.spark.sql.dml` (``INSERT``,
``UPDATE``, ``DELETE``, ``MERGE``) and :mod:`deltalog.spark.sql.commands` (``DESCRIBE HISTORY`` /
``DETAIL``, ``OPTIMIZE``, ``VACUUM``, ``RESTORE``, ``GENERATE``, ``FSCK REPAIR TABLE``).

Example:
    >>> spark.sql("CREATE TABLE events (id BIGINT, day DATE) USING DELTA PARTITIONED BY (day)")  # doctest: +SKIP
    >>> spark.sql("DESCRIBE HISTORY events").select("version", "operation").show()            # doctest: +SKIP
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from deltalog.errors import InvalidArgumentError, SqlSyntaxError
from deltalog.spark.sql.dialect import DIALECT

__all__ = ["install", "original_sql", "refuse", "run_sql", "syntax_error", "uninstall"]


_ORIGINALS: dict[Any, Callable[..., Any]] = {}
_LOCK = threading.Lock()
_STATE = threading.local()
_KEYWORDS = ("delta", "vacuum", "optimize", "restore", "history", "detail", "convert", "generate", "fsck",
             "merge", "update", "delete", "insert", "create", "replace", "alter", "tblproperties", "table_changes",
             " as of", "@", "drop", "describe", "clone", "truncate")


def _session_classes() -> list[Any]:
    classes: list[Any] = []
    try:
        from pyspark.sql.session import SparkSession

        classes.append(SparkSession)
    except ImportError:  # pragma: no cover -- pyspark is there when this module is used
        pass
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        classes.append(ConnectSession)
    except ImportError:
        pass
    return classes


def install() -> None:
    """Patch ``SparkSession.sql`` (classic and Connect) to go through :func:`run_sql`; idempotent.

    Example:
        >>> install()                                                           # doctest: +SKIP
    """
    from deltalog.spark._errors import spark_errors

    with _LOCK:
        for cls in _session_classes():
            if cls in _ORIGINALS:
                continue
            original = cls.sql
            _ORIGINALS[cls] = original

            def routed(self: Any, sqlQuery: str, args: Any = None, *, _original: Any = original,
                       **kwargs: Any) -> Any:
                if getattr(_STATE, "depth", 0):  # deltalog's own statements go straight to Spark
                    return _original(self, sqlQuery, args, **kwargs)
                return run_sql(self, sqlQuery, args, **kwargs)

            functools.update_wrapper(routed, original)
            cls.sql = spark_errors(routed)


def uninstall() -> None:
    """Undo :func:`install`.

    Example:
        >>> uninstall()                                                         # doctest: +SKIP
    """
    with _LOCK:
        for cls, original in _ORIGINALS.items():
            cls.sql = original
        _ORIGINALS.clear()


def original_sql(spark: Any) -> Callable[..., Any]:
    """Spark's own ``sql`` bound to ``spark`` (what deltalog uses for its internal statements).

    Example:
        >>> original_sql(spark)("SELECT 1").first()[0]                          # doctest: +SKIP
        1
    """
    for cls in type(spark).__mro__:
        if cls in _ORIGINALS:
            original = _ORIGINALS[cls]
            return lambda text, args=None, **kw: original(spark, text, args, **kw)
    return spark.sql  # type: ignore[no-any-return]


class _Internal:
    """While inside, ``spark.sql`` goes straight to Spark (deltalog's own catalog statements)."""

    def __enter__(self) -> None:
        _STATE.depth = getattr(_STATE, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _STATE.depth -= 1


def internal() -> _Internal:
    """A context in which ``spark.sql`` is Spark's own.

    Example:
        >>> with internal():                                                    # doctest: +SKIP
        ...     spark.sql("SHOW TABLES")
    """
    return _Internal()


def _parse(text: str) -> Any:
    import logging

    import sqlglot

    from deltalog.spark.sql.refs import expand_at_syntax

    expanded = expand_at_syntax(text)
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # "falling back to parsing as a Command" is not the user's concern
    try:
        statements = [s for s in sqlglot.parse(expanded, dialect=DIALECT) if s is not None]
    except sqlglot.errors.ParseError:
        return None
    finally:
        logger.setLevel(level)
    if len(statements) != 1:
        return None
    return statements[0]


def run_sql(spark: Any, text: str, args: Any = None, **kwargs: Any) -> Any:
    """Run one SQL statement: Delta statements by deltalog, queries over Delta tables rewritten, the
    rest by Spark unchanged (see the module docstring).

    Example:
        >>> run_sql(spark, "SELECT count(*) FROM delta.`/data/events`").first()[0]   # doctest: +SKIP
        1000
    """
    if not isinstance(text, str):
        return original_sql(spark)(text, args, **kwargs)
    from deltalog.spark.sql.catalog import statement_scope

    with statement_scope():
        return _run(spark, text, args, kwargs)


def _run(spark: Any, text: str, args: Any, kwargs: dict[str, Any]) -> Any:
    lowered = text.lower()
    if not any(k in lowered for k in _KEYWORDS) and not _mentions_delta_tables(spark, text):
        return original_sql(spark)(text, args, **kwargs)
    expression = _parse(text)
    if expression is None:
        from deltalog.spark.sql.commands import run_command

        handled = run_command(spark, text)
        if handled is not None:
            return handled
        return original_sql(spark)(text, args, **kwargs)
    with internal():
        result = _dispatch(spark, expression, text, args, kwargs)
    return result


def _mentions_delta_tables(spark: Any, text: str) -> bool:
    """A query without any Delta keyword can still read catalog Delta tables: check its table names."""
    expression = _parse(text)
    if expression is None:
        return False
    from sqlglot import exp

    from deltalog.spark.sql.refs import resolve_table

    with internal():
        return any(resolve_table(spark, t) is not None for t in expression.find_all(exp.Table)
                   if not isinstance(t.this, (exp.Anonymous, exp.Func)))


def _dispatch(spark: Any, expression: Any, text: str, args: Any, kwargs: dict[str, Any]) -> Any:
    from sqlglot import exp

    from deltalog.spark.sql import commands, ddl, dml
    from deltalog.spark.sql.refs import rewrite_query

    if isinstance(expression, exp.Command):
        handled = commands.run_command(spark, text)
        if handled is not None:
            return handled
        return original_sql(spark)(text, args, **kwargs)
    handlers: list[Callable[[Any, Any, str], Any]] = [ddl.handle, dml.handle, commands.handle]
    for handler in handlers:
        result = handler(spark, expression, text)
        if result is not None:
            return result
    if isinstance(expression, (exp.Query, exp.Insert, exp.Create, exp.Describe)):
        rewritten = rewrite_query(spark, expression)
        if rewritten.frames:
            return rewritten.sql(spark, args, **kwargs)
    return original_sql(spark)(text, args, **kwargs)


def refuse(statement: str, why: str) -> InvalidArgumentError:
    """The error for a Delta statement deltalog cannot run: names the statement and why.

    Example:
        >>> str(refuse("ALTER TABLE t RENAME TO u", "renaming a Delta table is not supported"))
        'cannot run ALTER TABLE t RENAME TO u: renaming a Delta table is not supported'
    """
    shown = " ".join(statement.split())
    if len(shown) > 160:
        shown = shown[:157] + "..."
    return InvalidArgumentError(f"cannot run {shown}: {why}")


def syntax_error(statement: str, why: str) -> SqlSyntaxError:
    """The error for a Delta statement that does not parse (PySpark's ``ParseException`` at the Spark API,
    as delta-spark's parser raises): names the statement and what is wrong.

    Example:
        >>> str(syntax_error("DESCRIBE HISTORY", "a table name is missing"))
        '[PARSE_SYNTAX_ERROR] a table name is missing in: DESCRIBE HISTORY'
    """
    shown = " ".join(statement.split())
    if len(shown) > 160:
        shown = shown[:157] + "..."
    return SqlSyntaxError(f"[PARSE_SYNTAX_ERROR] {why} in: {shown}")
