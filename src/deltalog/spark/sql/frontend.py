"""The SQL front end: ``spark.sql(...)`` routed client-side.

Once a session is registered (:func:`deltalog.spark.register`), ``SparkSession.sql`` of this process --
classic and Spark Connect -- parses each statement with sqlglot (Spark dialect). Delta statements run
through deltalog; a query that reads Delta tables (``delta.`<path>```, catalog tables ``USING delta``,
time travel, ``table_changes``) runs in Spark with those tables replaced by views of deltalog's reads;
everything else -- and any text sqlglot cannot parse -- goes to Spark unchanged, so Spark's own errors and
semantics stay. A Delta statement deltalog cannot run raises an error naming the statement and why.

The statements: :mod:`deltalog.spark.sql.ddl` (``CREATE`` / ``REPLACE`` / ``CLONE`` / ``CONVERT`` /
``ALTER TABLE`` / ``SHOW TBLPROPERTIES`` / ``DESCRIBE TABLE``), :mod:`deltalog.spark.sql.dml` (``INSERT``,
``UPDATE``, ``DELETE``, ``MERGE``), :mod:`deltalog.spark.sql.commands` (``DESCRIBE HISTORY`` /
``DETAIL``, ``OPTIMIZE``, ``REORG TABLE``, ``VACUUM``, ``RESTORE``, ``GENERATE``, ``FSCK REPAIR TABLE``) and
:mod:`deltalog.spark.sql.table_ops` (``TRUNCATE TABLE``, ``COMMENT ON``, ``SHOW CREATE TABLE``, ``SHOW
PARTITIONS``, ``CACHE TABLE``); views over Delta tables are :mod:`deltalog.spark.sql.views`. PySpark's
``spark.sql(text, **kwargs)`` arguments are formatted as PySpark formats them, the DataFrames among them
passed to Spark with deltalog's reads.

Example:
    >>> spark.sql("CREATE TABLE events (id BIGINT, day DATE) USING DELTA PARTITIONED BY (day)")  # doctest: +SKIP
    >>> spark.sql("DESCRIBE HISTORY events").select("version", "operation").show()            # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from deltalog.spark.catalog.dialect import DIALECT
from deltalog.spark.common.statements import ORIGINALS, STATE, internal, original_sql

__all__ = ["install", "run_sql", "uninstall"]


_LOCK = threading.Lock()
_KEYWORDS = ("delta", "vacuum", "optimize", "reorg", "restore", "history", "detail", "convert", "generate", "fsck",
             "merge", "update", "delete", "insert", "create", "replace", "alter", "tblproperties", "table_changes",
             " as of", "@", "drop", "describe", "clone", "truncate", "comment", "cache", "show partitions")


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
    from deltalog.spark.common.errors import spark_errors

    with _LOCK:
        for cls in _session_classes():
            if cls in ORIGINALS:
                continue
            original = cls.sql
            ORIGINALS[cls] = original

            def routed(self: Any, sqlQuery: str, args: Any = None, *, _original: Any = original,
                       **kwargs: Any) -> Any:
                if getattr(STATE, "depth", 0):  # deltalog's own statements go straight to Spark
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
        for cls, original in ORIGINALS.items():
            cls.sql = original
        ORIGINALS.clear()


def _parse(text: str) -> Any:
    import logging

    import sqlglot

    from deltalog.spark.sql.refs import expand_at_syntax

    expanded = expand_at_syntax(text)
    evolve = _EVOLVE.match(expanded)  # MERGE WITH SCHEMA EVOLUTION INTO ...: sqlglot knows no such clause
    if evolve is not None:
        expanded = evolve.group(1) + expanded[evolve.end():]
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
    if evolve is not None:
        statements[0].meta["schema_evolution"] = True
    _identifiers(statements[0])
    return statements[0]


_EVOLVE = re.compile(r"(\s*MERGE\s+)WITH\s+SCHEMA\s+EVOLUTION\s+(?=INTO\b)", re.IGNORECASE)


def run_sql(spark: Any, text: str, args: Any = None, **kwargs: Any) -> Any:
    """Run one SQL statement: Delta statements by deltalog, queries over Delta tables rewritten, the
    rest by Spark unchanged (see the module docstring).

    Example:
        >>> run_sql(spark, "SELECT count(*) FROM delta.`/data/events`").first()[0]   # doctest: +SKIP
        1000
    """
    if not isinstance(text, str):
        return original_sql(spark)(text, args, **kwargs)
    from deltalog.spark.catalog.entries import statement_scope

    with statement_scope():
        try:
            return _run(spark, text, args, kwargs)
        except Exception as exc:
            _refuse_missing_provider(exc)
            raise


#: Spark's error when it meets a catalog Delta table itself and no ``delta`` data source is registered.
_NO_DELTA_SOURCE = "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: delta."


def _refuse_missing_provider(exc: BaseException) -> None:
    """On Spark 3.5 (no Python data sources), Spark's own analysis of a catalog Delta table -- the query of a
    ``CREATE VIEW``, a statement deltalog leaves to Spark -- finds no ``delta`` provider: said as what it is, not
    as a JVM trace."""
    from deltalog.spark.common import compat

    if compat.PYTHON_DATA_SOURCES or _NO_DELTA_SOURCE not in str(exc):
        return
    raise compat.UnsupportedSparkVersionError(
        "Spark's own analysis of a catalog Delta table (a view over one, or a statement deltalog leaves to Spark)",
        (4, 0), "has no Python data sources to register the delta provider with",
        "deltalog's own statements, reads and writes of the table work on this version: read it as a DataFrame "
        "(spark.table(name)) and make a temporary view of that (createOrReplaceTempView), or name it by path "
        "(delta.`/path/to/table`)") from exc


def _run(spark: Any, text: str, args: Any, kwargs: dict[str, Any]) -> Any:
    def as_given() -> Any:  # Spark runs the statement as the caller wrote it (PySpark formats ``kwargs``)
        return original_sql(spark)(text, args, **kwargs)

    with _user_frames(spark, text, kwargs) as work:
        lowered = work.lower()
        if not any(k in lowered for k in _KEYWORDS) and not _mentions_delta_tables(spark, work, args):
            return as_given()
        # IDENTIFIER('t') / IDENTIFIER(:n) spelled out first (sqlglot reads no INSERT INTO IDENTIFIER(...) (cols))
        work = _spelled_identifiers(work, args)
        expression = _parse(work)
        if expression is None:
            from deltalog.spark.sql.commands import run_command

            handled = run_command(spark, work)
            if handled is not None:
                return handled
            return as_given()
        from sqlglot import exp

        passed = args
        if args and isinstance(expression, (exp.Update, exp.Delete, exp.Merge, exp.Insert, exp.Create)):
            _bind(expression, args)  # deltalog runs these itself: Spark never sees the markers
            _identifiers(expression)  # IDENTIFIER(?)
            passed = None  # a rewritten statement carries no markers (as_given keeps the caller's text and args)
        with internal():
            return _dispatch(spark, expression, work, passed, as_given)


def _count_from_log(spark: Any, expression: Any, rewritten: Any) -> Any | None:
    """``SELECT count(*) / min(c) / max(c) ... FROM <Delta table>`` as a frame of the log's answer, following the
    table at each action (:mod:`deltalog.spark.sql.log_answers`), or ``None``."""
    from deltalog.spark.sql.log_answers import aggregate_query_specs, logged_aggregate_frame

    specs = aggregate_query_specs(expression)
    if specs is None or len(rewritten.frames) != 1:
        return None
    (frame,) = rewritten.frames.values()
    df = logged_aggregate_frame(spark, specs, frame)
    if df is None:
        return None
    from deltalog.spark.reads.skipping import attach_query

    def again(frames: dict[str, Any]) -> Any:
        (fresh,) = frames.values()
        return logged_aggregate_frame(spark, specs, fresh) or dataclasses.replace(rewritten, frames=frames).sql(spark)

    return attach_query(df, rewritten.frames, again)


def _bind(expression: Any, args: Any) -> None:
    """Replace the statement's parameter markers (``:name``, ``?``) by ``args`` (a dict for named markers, a
    list for positional ones) as SQL literals, in place; a value that is not a plain Python value (a
    ``Column``) leaves its marker for Spark."""
    import datetime as dt
    import decimal

    from sqlglot import exp

    def literal(value: Any) -> Any:
        if value is None:
            return exp.Null()
        if isinstance(value, bool):
            return exp.Boolean(this=value)
        if isinstance(value, (int, float, decimal.Decimal)):
            return exp.Literal.number(value)
        if isinstance(value, str):
            return exp.Literal.string(value)
        if isinstance(value, dt.datetime):
            return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), "TIMESTAMP")
        if isinstance(value, dt.date):
            return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
        return None

    markers = list(expression.find_all(exp.Placeholder, bfs=False))
    position = 0
    for marker in markers:
        name = marker.this  # None for ``?`` (whose .name is "?")
        if name and isinstance(args, dict) and name in args:
            value = literal(args[name])
        elif not name and isinstance(args, (list, tuple)) and position < len(args):
            value = literal(args[position])
            position += 1
        else:
            continue
        if value is not None:
            marker.replace(value)


def _spelled_identifiers(text: str, args: Any) -> str:
    """``text`` with each ``IDENTIFIER('db.t')`` (or ``IDENTIFIER(:name)`` with ``args``) written as the quoted
    name it spells (``IDENTIFIER(?)`` is left to :func:`_identifiers`, after the markers are bound).

    Example:
        >>> _spelled_identifiers("INSERT INTO IDENTIFIER(:n) (a) VALUES (1)", {"n": "db.t"})
        'INSERT INTO `db`.`t` (a) VALUES (1)'
    """
    if "identifier" not in text.lower():
        return text
    from sqlglot import exp
    from sqlglot.dialects.dialect import Dialect

    dialect = Dialect.get_or_raise(DIALECT)
    try:
        toks = dialect.tokenize(text)
        if toks and toks[0].token_type.name == "COMMAND":  # OPTIMIZE, VACUUM, ...: the rest comes as one string
            offset = toks[0].end + 1
            toks = [_shifted(t, offset) for t in dialect.tokenize(text[offset:])]
    except Exception:  # not SQL sqlglot reads: the parse that follows says so
        return text
    out, at = [], 0
    for i, tok in enumerate(toks):
        if tok.token_type.name != "VAR" or tok.text.upper() != "IDENTIFIER":
            continue
        rest = toks[i + 1:i + 5]
        name: str | None = None
        end = None
        if len(rest) >= 3 and rest[0].text == "(" and rest[1].token_type.name == "STRING" and rest[2].text == ")":
            name, end = rest[1].text, rest[2].end
        elif len(rest) >= 4 and rest[0].text == "(" and rest[1].text == ":" and rest[3].text == ")" \
                and isinstance(args, dict) and isinstance(args.get(rest[2].text), str):
            name, end = args[rest[2].text], rest[3].end
        if name is None or end is None:
            continue
        try:
            spelled = exp.to_table(name, dialect=DIALECT).sql(dialect=DIALECT, identify=True)
        except Exception:  # not a name: Spark names the error when it runs the statement
            continue
        out.append(text[at:tok.start] + spelled)
        at = end + 1
    return "".join(out) + text[at:] if out else text


def _shifted(tok: Any, offset: int) -> Any:
    """``tok`` (a sqlglot token of text that began at ``offset``) with its positions in the whole text.

    Example:
        >>> from sqlglot import Token, TokenType
        >>> _shifted(Token(TokenType.VAR, "x", start=0, end=0), 9).start
        9
    """
    from sqlglot import Token

    return Token(tok.token_type, tok.text, tok.line, tok.col, tok.start + offset, tok.end + offset, tok.comments)


def _identifiers(expression: Any, args: dict[str, Any] | None = None) -> None:
    """``IDENTIFIER('db.t')`` (or ``IDENTIFIER(:name)`` with ``args``) as the table name it spells (in place), so
    that a Delta table named so is found."""
    from sqlglot import exp

    for table in list(expression.find_all(exp.Table)):
        func = table.this
        if not (isinstance(func, exp.Anonymous) and str(func.name).upper() == "IDENTIFIER"
                and len(func.expressions) == 1):
            continue
        given = func.expressions[0]
        if isinstance(given, exp.Placeholder) and args and isinstance(args.get(given.this), str):
            given = exp.Literal.string(args[given.this])
        if isinstance(given, exp.Literal) and given.is_string:
            named = exp.to_table(given.this, dialect=DIALECT)
            if table.args.get("alias") is not None:
                named.set("alias", table.args["alias"])
            table.replace(named)


@contextlib.contextmanager
def _user_frames(spark: Any, text: str, kwargs: dict[str, Any]) -> Iterator[str]:
    """``text`` formatted with ``kwargs`` as PySpark formats them (``{x}`` becomes a SQL literal, a column
    reference or, for a DataFrame, a table name), except that a DataFrame gets a name of deltalog's, which
    the rewriting of the statement's tables replaces by the DataFrame itself (:func:`shared.user_frame`):
    the caller's DataFrames then reach Spark along with deltalog's reads, in one statement."""
    if not kwargs:
        yield text
        return
    import string

    from pyspark.sql import DataFrame

    if getattr(spark, "_jsparkSession", None) is None:
        from pyspark.sql.connect.sql_formatter import SQLStringFormatter as Formatter
    else:
        from pyspark.sql.sql_formatter import SQLStringFormatter as Formatter  # type: ignore[assignment]
    pyspark_formatter = Formatter(spark)
    frames: dict[str, Any] = {}

    def convert(value: Any, field: str) -> Any:
        if not isinstance(value, DataFrame):
            return pyspark_formatter._convert_value(value, field)
        for name, df in frames.items():
            if df is value:
                return name
        name = f"__deltalog_arg{len(frames)}_{uuid.uuid4().hex[:8]}"
        frames[name] = value
        return name

    class _Formatter(string.Formatter):
        def get_field(self, field_name: str, args: Any, kw: Any) -> Any:
            obj, first = super().get_field(field_name, args, kw)
            return convert(obj, field_name), first

    formatted = _Formatter().format(text, **kwargs)
    previous = getattr(STATE, "user_frames", None)
    STATE.user_frames = frames
    try:
        yield formatted
    finally:
        STATE.user_frames = previous


def _mentions_delta_tables(spark: Any, text: str, args: Any = None) -> bool:
    """A query without any Delta keyword can still read catalog Delta tables: check its table names."""
    expression = _parse(text)
    if expression is None:
        return False
    if isinstance(args, dict):
        _identifiers(expression, args)
    from deltalog.spark.sql.refs import reads_delta

    with internal():
        return reads_delta(spark, expression)


def _dispatch(spark: Any, expression: Any, text: str, args: Any, as_given: Callable[[], Any]) -> Any:
    from sqlglot import exp

    from deltalog.spark.sql.commands import handle as command
    from deltalog.spark.sql.commands import run_command
    from deltalog.spark.sql.ddl import handle as ddl
    from deltalog.spark.sql.dml import handle as dml
    from deltalog.spark.sql.refs import rewrite_query
    from deltalog.spark.sql.table_ops import handle as table_op

    if isinstance(expression, (exp.Command, exp.Analyze)):  # statements read word by word in sql/commands.py
        handled = run_command(spark, text)
        if handled is not None:
            return handled
        return as_given()
    if isinstance(expression, exp.Create) and str(expression.args.get("kind") or "").upper() == "VIEW":
        from deltalog.spark.sql.views import create_view

        return create_view(spark, expression, text, as_given)
    from deltalog.spark.sql.create_like import create_like

    handlers: list[Callable[[Any, Any, str], Any]] = [create_like, ddl, dml, command, table_op]
    for handler in handlers:
        result = handler(spark, expression, text)
        if result is not None:
            return result
    if isinstance(expression, (exp.Query, exp.Insert, exp.Create, exp.Describe, exp.Cache)):
        rewritten = rewrite_query(spark, expression)
        if rewritten.frames:
            counted = _count_from_log(spark, expression, rewritten)
            if counted is not None:
                return counted
            df = rewritten.sql(spark, args)
            if isinstance(expression, exp.Query):  # a query's frame reads its Delta tables as they are at each action
                from deltalog.spark.reads.skipping import attach_query

                df = attach_query(df, rewritten.frames,
                                  lambda frames: dataclasses.replace(rewritten, frames=frames).sql(spark, args))
            return df
    return as_given()
