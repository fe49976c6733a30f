"""Temporary views of deltalog's Delta reads, remembered by name.

``spark.read.format("delta").load(p).createOrReplaceTempView("events")`` is how many notebooks name a
Delta table for SQL. In delta-spark such a view reads the table as it is when each query runs; Spark plans
a view once, from the DataFrame's plan when it was registered (a scan of the files of that version). So when a tracked
read (:mod:`deltalog.spark.reads.skipping`: the scan plus the ``select`` / ``filter`` / ... steps since) is
registered as a temporary view, deltalog remembers how it was made, and the SQL front end and
``spark.table`` read the view again from the table's latest version
(:func:`deltalog.spark.sql.refs.frame_view`). A view of a time-travel read stays at its version.

An entry is used only while the session still holds the very plan registered under that name: a view
replaced by any other DataFrame, or dropped, is forgotten at its next lookup; a cached view (``CACHE
TABLE``, ``spark.catalog.cacheTable``) is Spark's to read, from its cache, as in Spark. Classic sessions only (a
Spark Connect client has no catalog to compare plans with): there, views keep Spark's plain behaviour.

Example:
    >>> df = spark.read.format("delta").load("/data/events")                  # doctest: +SKIP
    >>> df.createOrReplaceTempView("events")                                   # doctest: +SKIP
    >>> recall(spark, "events", None) is not None                              # doctest: +SKIP
    True
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["FrameView", "global_database", "recall", "remember"]

_LOCK = threading.Lock()


@dataclass(frozen=True)
class FrameView:
    """A remembered view: how the tracked frame was made (``state``, see ``frame_state.FrameState``), the plain
    DataFrame class its steps replay with, the plan the session registered (to tell a replaced view) and
    the view's columns then (a column the table gained since stays out of the view, as in Spark)."""

    state: Any
    base: type
    plan: Any
    columns: tuple[str, ...] = ()


_VIEWS: dict[tuple[str, str], FrameView] = {}


def _catalog(spark: Any) -> Any:
    jsession = getattr(spark, "_jsparkSession", None)
    return None if jsession is None else jsession.sessionState().catalog()


def global_database(spark: Any) -> str:
    """The database global temporary views live in (``spark.sql.globalTempDatabase``, ``global_temp``).

    Example:
        >>> global_database(spark)                                             # doctest: +SKIP
        'global_temp'
    """
    try:
        return str(spark.conf.get("spark.sql.globalTempDatabase", "global_temp")).lower()
    except Exception:  # a session whose conf cannot be read: Spark's default
        return "global_temp"


def _key(spark: Any, name: str, global_view: bool) -> tuple[str, str]:
    scope = "global" if global_view else str(spark._jsparkSession.sessionUUID())
    return scope, name.lower()


def _registered(catalog: Any, name: str, global_view: bool) -> Any:
    found = catalog.getGlobalTempView(name) if global_view else catalog.getTempView(name)
    return found.get() if found.isDefined() else None


def remember(spark: Any, name: str, *, global_view: bool, state: Any, base: type,
             columns: tuple[str, ...] = ()) -> None:
    """Note that the session just registered the tracked frame ``state`` describes (with ``columns``) as
    the temporary view ``name`` (a global one with ``global_view``); nothing for Spark Connect sessions.

    Example:
        >>> remember(spark, "events", global_view=False, state=state, base=DataFrame)   # doctest: +SKIP
    """
    catalog = _catalog(spark)
    if catalog is None or not isinstance(name, str):
        return
    try:
        plan = _registered(catalog, name, global_view)
    except Exception:  # a catalog this module does not understand: the view keeps Spark's behaviour
        return
    if plan is None:
        return
    with _LOCK:
        _VIEWS[_key(spark, name, global_view)] = FrameView(state, base, plan, columns)


def recall(spark: Any, name: str, database: str | None) -> FrameView | None:
    """The remembered view a query names (``name``, with ``database`` ``None`` for a session view or the
    global temporary database), or ``None``: not one, replaced or dropped since (then forgotten).

    Example:
        >>> recall(spark, "events", None).state.snapshot.table                 # doctest: +SKIP
        '/data/events'
    """
    lowered = name.lower()
    with _LOCK:
        remembered = any(known == lowered for _, known in _VIEWS)
    if not remembered:  # most names a query meets: no JVM call
        return None
    catalog = _catalog(spark)
    if catalog is None:
        return None
    if database is None:
        global_view = False
    elif database.lower() == global_database(spark):
        global_view = True
    else:
        return None
    key = _key(spark, name, global_view)
    with _LOCK:
        entry = _VIEWS.get(key)
    if entry is None:
        return None
    try:
        current = _registered(catalog, name, global_view)
        same = current is not None and bool(current.equals(entry.plan))
        # a cached view (CACHE TABLE, spark.catalog.cacheTable) is read from Spark's cache, as in Spark
        cached = same and bool(spark._jsparkSession.catalog().isCached(
            f"{global_database(spark)}.{name}" if global_view else name))
    except Exception:  # the catalog cannot be asked: do not guess
        same, cached = False, False
    if not same:
        with _LOCK:
            if _VIEWS.get(key) is entry:
                del _VIEWS[key]
        return None
    return None if cached else entry
