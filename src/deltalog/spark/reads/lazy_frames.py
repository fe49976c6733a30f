"""Delta reads whose Spark plan is built when something first needs it.

A deletion-vector read's plan (the scan keyed by file and row index, and the anti join with the deleted
rows) costs tens of milliseconds of driver work and Spark analysis. Much of what users do with a fresh read
needs no plan at all: ``count()`` and ``min`` / ``max`` of columns with statistics are answered from the log
(:mod:`deltalog.spark.reads.log_answers`). So :func:`lazy_frame` returns a classic DataFrame without its Java
Dataset (``_jdf``); the tracked subclass (:mod:`deltalog.spark.reads.skipping`) builds it on first access
(:func:`materialise`, once, under a lock), as delta-spark's DataFrames read the deletion vectors only when a
query runs. Spark Connect frames are never lazy (their plan is a message the client builds anyway).

Example:
    >>> df = lazy_frame(spark, lambda: spark.range(3))                           # doctest: +SKIP
    >>> is_lazy(df), df.count(), is_lazy(df)                                       # doctest: +SKIP
    (True, 3, False)

May import: :mod:`deltalog.spark.common`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from deltalog.spark.common.core import LAZY_PLAN

__all__ = ["LAZY_PLAN", "is_lazy", "lazy_columns", "lazy_frame", "materialise"]

_COLUMNS = "__deltalog_lazy_columns__"

_LOCK = threading.RLock()


def lazy_frame(spark: Any, plan: Callable[[], Any], columns: Sequence[str] | None = None) -> Any | None:
    """A classic DataFrame whose ``_jdf`` is ``plan()._jdf``, built on first access; ``None`` where that cannot
    be (Spark Connect, another PySpark's internals). It must be given the tracked subclass before use.
    ``columns``: the names the plan will have, known to :func:`lazy_columns` without building it.

    Example:
        >>> lazy_frame(spark, lambda: spark.range(3)) is not None                # doctest: +SKIP
        True
    """
    from pyspark.sql import DataFrame

    from deltalog.spark.common.storage import is_connect

    if is_connect(spark):
        return None
    try:
        df = DataFrame(None, spark)
        if "_jdf" not in df.__dict__:
            return None
        del df.__dict__["_jdf"]
        df.__dict__[LAZY_PLAN] = plan
        if columns is not None:
            df.__dict__[_COLUMNS] = list(columns)
    except Exception:
        return None
    return df


def is_lazy(df: Any) -> bool:
    """Whether ``df``'s plan is not built yet.

    Example:
        >>> is_lazy(spark.range(3))                                                # doctest: +SKIP
        False
    """
    return LAZY_PLAN in getattr(df, "__dict__", {})


def lazy_columns(df: Any) -> list[str] | None:
    """The column names of ``df`` while its plan is not built (as :func:`lazy_frame` was told), else ``None``.

    Example:
        >>> lazy_columns(spark.range(3)) is None                                   # doctest: +SKIP
        True
    """
    got = getattr(df, "__dict__", {}).get(_COLUMNS)
    return list(got) if got is not None and is_lazy(df) else None


def materialise(df: Any) -> Any:
    """``df``'s Java Dataset, built now if it was not (once: concurrent callers wait for the first).

    Example:
        >>> materialise(df).schema().simpleString()                                # doctest: +SKIP
        'struct<id:bigint>'
    """
    from deltalog.errors import DeltaError
    from deltalog.spark.common.errors import as_spark_error

    with _LOCK:
        jdf = df.__dict__.get("_jdf")
        if jdf is not None:
            return jdf
        plan = df.__dict__[LAZY_PLAN]
        try:
            built = plan()
        except DeltaError as exc:
            raise as_spark_error(exc) from None
        except AttributeError as exc:  # raised inside __getattr__ it would read as a missing attribute
            raise RuntimeError(f"planning the Delta read failed: {exc}") from exc
        df.__dict__["_jdf"] = built._jdf
        df.__dict__.pop(LAZY_PLAN, None)
        df.__dict__.pop(_COLUMNS, None)
        return built._jdf
