"""Spark's own ``sql`` and the state of the SQL statement deltalog is running: :func:`original_sql` (kept by
the SQL front end when it patches ``SparkSession.sql``), a context in which ``spark.sql`` is Spark's own
(:func:`internal`), and the caller's DataFrames a statement names (:func:`user_frame`). Below the catalog, the
table API and the SQL front end, which all run statements of their own.

Example:
    >>> with internal():                                                    # doctest: +SKIP
    ...     original_sql(spark)("SHOW TABLES")
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ORIGINALS", "STATE", "internal", "original_sql", "user_frame"]

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
