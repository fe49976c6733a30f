"""``SELECT count(*) FROM <Delta table>`` answered from the log, as delta-spark answers it.

A query of exactly that shape -- ``count(*)`` or ``count(1)`` (any alias), one Delta table (a path, a catalog
table, time travel too), no ``WHERE`` / ``GROUP BY`` / ``HAVING`` / ``ORDER BY`` / ``LIMIT`` / join / CTE /
``DISTINCT`` -- gives a one-row frame of the log's count (:mod:`deltalog.spark.reads.log_answers`: ``numRecords``
less deletion-vector cardinalities) when the log can prove it; no Spark job reads the data. Any other query,
or a table with a file without statistics, runs as Spark's. The frame follows its table at each action as the
frames of other queries do.

Example:
    >>> spark.sql("SELECT count(*) FROM delta.`/data/events`").first()[0]      # doctest: +SKIP
    1000

May import: the kernel, :mod:`deltalog.spark.common`, :mod:`deltalog.spark.reads`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["count_query_column", "logged_count_frame"]

_MODIFIERS = ("where", "group", "having", "order", "limit", "offset", "joins", "laterals", "distinct", "qualify",
              "windows", "with_", "with", "sort", "cluster", "distribute", "prewhere", "connect", "match", "pivots")


def count_query_column(expression: Any) -> str | None:
    """The output column name of ``expression`` (a sqlglot tree) when it is ``SELECT count(*)`` of one table and
    nothing else (``count(1)`` as Spark names it, or the alias), else ``None``.

    Example:
        >>> import sqlglot
        >>> count_query_column(sqlglot.parse_one("SELECT count(*) AS n FROM t", read="spark"))
        'n'
        >>> count_query_column(sqlglot.parse_one("SELECT count(*) FROM t WHERE x > 1", read="spark")) is None
        True
    """
    from sqlglot import exp

    if type(expression) is not exp.Select or len(expression.expressions) != 1:
        return None
    if any(expression.args.get(k) for k in _MODIFIERS):
        return None
    source = expression.args.get("from_") or expression.args.get("from")
    if source is None or not isinstance(source.this, exp.Table) or source.this.args.get("joins"):
        return None
    item = expression.expressions[0]
    alias = item.alias if isinstance(item, exp.Alias) else None
    count = item.this if isinstance(item, exp.Alias) else item
    if not isinstance(count, exp.Count) or count.args.get("distinct"):
        return None
    what = count.this
    if not (isinstance(what, exp.Star) or (isinstance(what, exp.Literal) and not what.is_string
                                           and what.this == "1")):
        return None
    return alias or "count(1)"


def logged_count_frame(spark: Any, column: str, frame: Any) -> Any | None:
    """A one-row frame ``column: bigint not null`` holding the log's count of ``frame`` (a tracked Delta read),
    or ``None`` when the log cannot prove it.

    Example:
        >>> logged_count_frame(spark, "count(1)", spark.read.format("delta").load("/t")).first()[0]  # doctest: +SKIP
        1000
    """
    from deltalog.spark.common.core import quoted
    from deltalog.spark.common.statements import original_sql
    from deltalog.spark.reads.skipping import count_from_log

    answer = count_from_log(frame)
    if answer is None:
        return None
    # a literal query: Spark makes it a local relation, so collecting it runs no job either
    return original_sql(spark)(f"SELECT {int(answer)}L AS {quoted(column)}")
