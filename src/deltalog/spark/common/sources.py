"""deltalog's Python data sources (the streaming source, the ``delta`` provider of catalog tables) are
registered with a session once, when first needed: the first registration in a JVM costs about 2 s
(Spark looks for data source plugins in a Python process of its own), later ones about 20 ms.

Example:
    >>> register_once(spark, "delta", make_source_class)                         # doctest: +SKIP
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["register_once"]

#: The data source names registered with each live session (sessions are held weakly: a stopped and
#: collected session's entry goes with it, and a new session never inherits it).
_REGISTERED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def register_once(spark: Any, name: str, make: Callable[[], type]) -> None:
    """Register the data source class ``make()`` builds, named ``name``, with ``spark`` (classic or
    Connect) unless this session already has it. A session that cannot be weakly referenced gets it
    registered every time (harmless, only repeated).

    Example:
        >>> register_once(spark, SOURCE_NAME, lambda: DeltaStreamDataSource)        # doctest: +SKIP
    """
    try:
        names = _REGISTERED.setdefault(spark, set())
    except TypeError:
        spark.dataSource.register(make())
        return
    if name not in names:
        spark.dataSource.register(make())
        names.add(name)
