"""Spark's table statements that change or hold a Delta table: ``TRUNCATE TABLE``, ``COMMENT ON TABLE`` /
``COMMENT ON COLUMN`` and ``CACHE TABLE``.

* ``TRUNCATE TABLE t`` removes every row as ``DELETE FROM t`` does (one ``DELETE`` commit that removes
  every file; the files stay for time travel until ``VACUUM``); with a ``PARTITION`` clause it is refused as
  by delta-spark (``DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED``: use ``DELETE``).
* ``COMMENT ON TABLE t IS '...' | NULL`` sets the table's description in the log (``DESCRIBE DETAIL``'s
  ``description``), as ``ALTER TABLE t SET TBLPROPERTIES ('comment' = '...')`` does; a catalog table's
  own comment follows. ``COMMENT ON COLUMN t.c IS '...'`` is ``ALTER TABLE t ALTER COLUMN c COMMENT '...'``.
* ``CACHE TABLE`` of a Delta table (or of a view over one) is refused, naming what to do instead: Spark's
  cache keys cached data by its query plan, and deltalog plans every read of the table anew (the latest
  version), so the cache would hold data no query reads. ``CACHE [LAZY] TABLE name AS SELECT ...`` over
  Delta tables caches the query's rows as they are now, under the temporary view ``name``.

Other tables go to Spark unchanged.

Example:
    >>> spark.sql("TRUNCATE TABLE events")                                        # doctest: +SKIP
    >>> spark.sql("COMMENT ON TABLE events IS 'clicks, one row per click'")       # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from typing import Any

from deltalog.spark.sql.catalog import raw_sql
from deltalog.spark.sql.dialect import DIALECT
from deltalog.spark.sql.refs import TableRef, resolve_table
from deltalog.spark.sql.shared import refuse

__all__ = ["handle"]


def handle(spark: Any, expression: Any, text: str) -> Any:
    """Run ``TRUNCATE TABLE`` / ``COMMENT ON`` / ``CACHE TABLE`` on a Delta table; ``None`` when the
    statement is none of them or names another table (Spark runs it).

    Example:
        >>> handle(spark, parse("TRUNCATE TABLE events"), "TRUNCATE TABLE events")      # doctest: +SKIP
        DataFrame[]
    """
    from sqlglot import exp

    if isinstance(expression, exp.TruncateTable):
        return _truncate(spark, expression, text)
    if isinstance(expression, exp.Comment):
        return _comment(spark, expression, text)
    if isinstance(expression, exp.Cache):
        return _cache(spark, expression, text)
    return None


def _empty(spark: Any) -> Any:
    from deltalog.spark.sql.shared import empty_result

    return empty_result(spark)


def _truncate(spark: Any, expression: Any, text: str) -> Any:
    from sqlglot import exp

    from deltalog.spark.dml import delete

    tables = [t for t in expression.expressions if isinstance(t, exp.Table)]
    refs = [resolve_table(spark, t) for t in tables]
    if len(tables) != 1 or refs[0] is None:
        if any(r is not None for r in refs):
            raise refuse(text, "TRUNCATE TABLE takes one table")
        return None
    ref = refs[0]
    if expression.args.get("partition") is not None:
        raise refuse(text, "[DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED] TRUNCATE TABLE on Delta tables does not "
                           f"support partition predicates; use DELETE FROM {ref.shown} WHERE ... to delete specific "
                           "partitions or rows")
    delete(spark, ref.location, None)
    return _empty(spark)


def _comment(spark: Any, expression: Any, text: str) -> Any:
    from sqlglot import exp

    value = expression.expression
    if not isinstance(value, exp.Literal) or not value.is_string:
        raise refuse(text, "a comment is a string literal or NULL")
    target = expression.this
    if not isinstance(target, (exp.Table, exp.Column)):
        return None
    return comment_on(spark, str(expression.args.get("kind") or ""), target.sql(dialect=DIALECT), value.name, text)


def comment_on(spark: Any, kind: str, target: str, comment: str | None, text: str) -> Any:
    """``COMMENT ON TABLE | COLUMN target IS comment`` (``None``: ``IS NULL``) on a Delta table; ``None`` when
    ``target`` is not one (Spark runs the statement).

    Example:
        >>> comment_on(spark, "TABLE", "events", "clicks", "COMMENT ON TABLE events IS 'clicks'")   # doctest: +SKIP
        DataFrame[]
    """
    from sqlglot import exp

    from deltalog.spark._common import open_table

    if kind.upper() == "TABLE":
        ref = resolve_table(spark, exp.to_table(target, dialect=DIALECT))
        if ref is None:
            return None
        table = open_table(ref.location)
        if comment is None:
            table.unset_properties(["comment"], if_exists=True)
        else:
            table.set_properties({"comment": comment})
        _catalog_too(spark, ref, text)
        return _empty(spark)
    if kind.upper() == "COLUMN":
        column = exp.to_column(target, dialect=DIALECT)
        if not isinstance(column, exp.Column) or not column.table:
            return None
        owner = exp.Table(this=exp.to_identifier(column.table),
                          db=exp.to_identifier(column.db) if column.db else None,
                          catalog=exp.to_identifier(column.catalog) if column.catalog else None)
        ref = resolve_table(spark, owner)
        if ref is None:
            return None
        open_table(ref.location).change_column(column.name, comment=comment or "")
        return _empty(spark)
    return None


def _catalog_too(spark: Any, ref: TableRef, text: str) -> None:
    """A catalog table's own comment follows the log's (``SHOW TABLE EXTENDED``, ``spark.catalog``)."""
    if ref.name is not None:
        with contextlib.suppress(Exception):  # the log holds the description; the catalog's is a courtesy
            raw_sql(spark, text)


def _cache(spark: Any, expression: Any, text: str) -> Any:
    from sqlglot import exp

    from deltalog.spark.sql.refs import delta_view

    target = expression.this
    if not isinstance(target, exp.Table):
        return None
    if expression.expression is not None:
        return _cache_query(spark, expression, target)
    ref = resolve_table(spark, target)
    if ref is None and delta_view(spark, target) is None:
        return None
    shown = target.sql(dialect=DIALECT)
    raise refuse(text, f"{shown} reads a Delta table, which deltalog reads anew at each query, so Spark's cache "
                       f"would hold rows no query reads; cache a DataFrame instead (df = spark.table('{shown}')"
                       ".cache()) and query it, or cache a snapshot with CACHE TABLE name AS SELECT ...")


def _cache_query(spark: Any, expression: Any, target: Any) -> Any:
    """``CACHE [LAZY] TABLE name AS SELECT ...`` over Delta tables: a temporary view of the query's rows now
    (deltalog's reads), cached by Spark."""
    from deltalog.spark.sql.refs import rewrite_query

    rewritten = rewrite_query(spark, expression.expression)
    if not rewritten.frames:
        return None
    rewritten.sql(spark).createTempView(target.sql(dialect=DIALECT))
    lazy = "LAZY " if expression.args.get("lazy") else ""
    raw_sql(spark, f"CACHE {lazy}TABLE {target.sql(dialect=DIALECT)}")
    return _empty(spark)
