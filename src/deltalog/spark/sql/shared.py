"""What the SQL statement modules share with the front end (:mod:`deltalog.spark.sql.frontend`), below
both: Spark's own ``sql`` (:func:`original_sql`, kept by the front end when it patches ``SparkSession.sql``),
a context in which ``spark.sql`` is Spark's own (:func:`internal`), and the errors a Delta statement raises
(:func:`refuse`, :func:`syntax_error`).

Example:
    >>> str(refuse("VACUUM t RETAIN -1 HOURS", "the retention must not be negative"))
    'cannot run VACUUM t RETAIN -1 HOURS: the retention must not be negative'
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from deltalog.errors import InvalidArgumentError, SqlSyntaxError

__all__ = ["ORIGINALS", "STATE", "empty_result", "internal", "original_sql", "refuse", "syntax_error", "user_frame",
           "widened_columns"]

#: ``SparkSession.sql`` of each patched session class, before the front end patched it.
ORIGINALS: dict[Any, Callable[..., Any]] = {}
#: ``depth`` > 0 while deltalog runs its own statements (they go straight to Spark); ``user_frames``: the
#: DataFrames the caller's statement names through ``spark.sql(text, **kwargs)``, by deltalog's names for them.
STATE = threading.local()


def user_frame(name: str) -> Any:
    """The caller's DataFrame that the statement being run names ``name`` (``spark.sql("... {df} ...",
    df=df)``), or ``None``.

    Example:
        >>> user_frame("__deltalog_arg0_1a2b3c4d") is None                       # doctest: +SKIP
        False
    """
    frames = getattr(STATE, "user_frames", None)
    return frames.get(name) if frames else None


def _shown(statement: str) -> str:
    shown = " ".join(statement.split())
    return shown[:157] + "..." if len(shown) > 160 else shown


def original_sql(spark: Any) -> Callable[..., Any]:
    """Spark's own ``sql`` bound to ``spark`` (what deltalog uses for its internal statements).

    Example:
        >>> original_sql(spark)("SELECT 1").first()[0]                          # doctest: +SKIP
        1
    """
    for cls in type(spark).__mro__:
        if cls in ORIGINALS:
            original = ORIGINALS[cls]
            return lambda text, args=None, **kw: original(spark, text, args, **kw)
    return spark.sql  # type: ignore[no-any-return]


class _Internal:
    """While inside, ``spark.sql`` goes straight to Spark (deltalog's own catalog statements)."""

    def __enter__(self) -> None:
        STATE.depth = getattr(STATE, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        STATE.depth -= 1


def internal() -> _Internal:
    """A context in which ``spark.sql`` is Spark's own.

    Example:
        >>> with internal():                                                    # doctest: +SKIP
        ...     spark.sql("SHOW TABLES")
    """
    return _Internal()


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
    from deltalog.spark._conf import auto_merge
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
