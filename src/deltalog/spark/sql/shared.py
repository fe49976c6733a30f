"""What the SQL statement modules share with the front end (:mod:`deltalog.spark.sql.frontend`), below
both: the errors a Delta statement raises (:func:`refuse`, :func:`syntax_error`), an empty result, and the
columns a statement widens (Spark's own ``sql`` and the statement's state are in
:mod:`deltalog.spark.common.statements`).

Example:
    >>> str(refuse("VACUUM t RETAIN -1 HOURS", "the retention must not be negative"))
    'cannot run VACUUM t RETAIN -1 HOURS: the retention must not be negative'
"""

from __future__ import annotations

from typing import Any

from deltalog.errors import InvalidArgumentError, SqlSyntaxError

__all__ = ["empty_result", "refuse", "syntax_error", "widened_columns"]

def _shown(statement: str) -> str:
    shown = " ".join(statement.split())
    return shown[:157] + "..." if len(shown) > 160 else shown


def refuse(statement: str, why: str) -> InvalidArgumentError:
    """The error for a Delta statement deltalog cannot run: names the statement and why.

    Example:
        >>> str(refuse("ALTER TABLE t RENAME TO u", "renaming a Delta table is not supported"))
        'cannot run ALTER TABLE t RENAME TO u: renaming a Delta table is not supported'
    """
    return InvalidArgumentError(f"cannot run {_shown(statement)}: {why}")


def syntax_error(statement: str, why: str) -> SqlSyntaxError:
    """The error for a Delta statement that does not parse (PySpark's ``ParseException`` at the Spark API,
    as delta-spark's parser raises): names the statement and what is wrong.

    Example:
        >>> str(syntax_error("DESCRIBE HISTORY", "a table name is missing"))
        '[PARSE_SYNTAX_ERROR] a table name is missing in: DESCRIBE HISTORY'
    """
    return SqlSyntaxError(f"[PARSE_SYNTAX_ERROR] {why} in: {_shown(statement)}")


def empty_result(spark: Any) -> Any:
    """What DDL statements return: an empty DataFrame without columns, as Spark's.

    Example:
        >>> empty_result(spark).columns                                           # doctest: +SKIP
        []
    """
    from pyspark.sql.types import StructType

    return spark.createDataFrame([], StructType([]))


def widened_columns(spark: Any, snapshot: Any, df: Any, source_of: dict[str, str]) -> set[str]:
    """The table columns (lower-case) an INSERT writes with the query's own, wider type so that the write
    widens them, as delta-spark does under ``spark.databricks.delta.schema.autoMerge.enabled`` on a table with
    ``delta.enableTypeWidening``: ``source_of`` maps each column to the ``df`` column that fills it.

    Example:
        >>> widened_columns(spark, snap, df, {"v": "_insert_col1"})                  # doctest: +SKIP
        {'v'}
    """
    import json

    from deltalog.protocol.schema import parse_data_type
    from deltalog.protocol.type_widening import can_widen
    from deltalog.spark.common.conf import auto_merge
    from deltalog.txn.writer_features import is_true

    if not is_true(snapshot.metadata.configuration, "delta.enableTypeWidening") or not auto_merge(spark):
        return set()
    types = {f.name: f.dataType for f in df.schema.fields}
    out = set()
    for f in snapshot.schema.fields:
        column = source_of.get(f.name.lower())
        if column is None:
            continue
        try:
            given = parse_data_type(json.loads(types[column].json()))
        except Exception:  # a type the log cannot name: cast as usual
            continue
        if can_widen(f.type, given):
            out.add(f.name.lower())
    return out
