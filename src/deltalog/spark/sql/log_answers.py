"""Aggregate queries of one Delta table answered from the log, as delta-spark answers them.

A query of exactly the shape ``SELECT <aggregates> FROM <Delta table>`` -- each item ``count(*)`` / ``count(1)``
/ ``count(c)`` / ``min(c)`` / ``max(c)`` of a column (any alias), one Delta table (a path, a catalog table, time
travel too), no ``WHERE`` / ``GROUP BY`` / ``HAVING`` / ``ORDER BY`` / ``LIMIT`` / join / CTE / ``DISTINCT`` --
gives a one-row frame of the log's answer (:mod:`deltalog.spark.reads.log_answers`: ``numRecords`` less
deletion-vector cardinalities, null counts, exact min / max statistics) when the log can prove every item;
no data file is read. Any other query, or a table whose log cannot prove it (a file without statistics, a
column type without exact bounds, bounds of a file with a deletion vector), runs as Spark's. The frame follows
its table at each action as the frames of other queries do.

Example:
    >>> spark.sql("SELECT count(*), max(id) FROM delta.`/data/events`").first()    # doctest: +SKIP
    Row(count(1)=1000, max(id)=999)

May import: the kernel, :mod:`deltalog.spark.common`, :mod:`deltalog.spark.reads`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["aggregate_query_specs", "logged_aggregate_frame"]

_MODIFIERS = ("where", "group", "having", "order", "limit", "offset", "joins", "laterals", "distinct", "qualify",
              "windows", "with_", "with", "sort", "cluster", "distribute", "prewhere", "connect", "match", "pivots")


def aggregate_query_specs(expression: Any) -> list[tuple[str | None, str, str | None]] | None:
    """The aggregates of ``expression`` (a sqlglot tree) when it is ``SELECT <count / min / max>`` of one table
    and nothing else (see :func:`deltalog.spark.reads.log_answers.aggregate_specs`), else ``None``.

    Example:
        >>> import sqlglot
        >>> aggregate_query_specs(sqlglot.parse_one("SELECT count(*) AS n FROM t", read="spark"))
        [('n', 'count', None)]
        >>> aggregate_query_specs(sqlglot.parse_one("SELECT count(*) FROM t WHERE x > 1", read="spark")) is None
        True
    """
    from sqlglot import exp

    from deltalog.spark.reads.log_answers import aggregate_specs

    if type(expression) is not exp.Select or any(expression.args.get(k) for k in _MODIFIERS):
        return None
    source = expression.args.get("from_") or expression.args.get("from")
    if source is None or not isinstance(source.this, exp.Table) or source.this.args.get("joins"):
        return None
    return aggregate_specs(expression.expressions)


def logged_aggregate_frame(spark: Any, specs: list[tuple[str | None, str, str | None]], frame: Any) -> Any | None:
    """A one-row frame of ``specs`` over ``frame`` (a tracked Delta read) from the log, or ``None`` when the log
    cannot prove them.

    Example:
        >>> logged_aggregate_frame(spark, [(None, "count", None)], spark.read.format("delta").load("/t")).first()
        ... # doctest: +SKIP
        Row(count(1)=1000)
    """
    from deltalog.spark.reads.log_answers import answer_frame
    from deltalog.spark.reads.skipping import aggregates_sql_from_log

    text = aggregates_sql_from_log(frame, specs)
    return None if text is None else answer_frame(spark, text, specs)  # one literal row: no file is read
