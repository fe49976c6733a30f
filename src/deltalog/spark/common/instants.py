"""Timestamps given to the Spark API read as delta-spark reads them.

delta-spark casts a time-travel timestamp (``timestampAsOf``, ``restoreToTimestamp``,
``cloneAtTimestamp``), a change-feed bound (``startingTimestamp`` / ``endingTimestamp``) and a stream's
``startingTimestamp`` to Spark's ``TIMESTAMP`` type, so a text without a zone (``'2024-05-01 12:00:00'``,
``'2024-05-01'``) is a time in the session time zone (``spark.sql.session.timeZone``, by default the JVM's
zone). The kernel takes such a text as UTC; :func:`session_instant` turns it into the instant Spark means
(evaluated by Spark itself, so every format Spark's cast accepts works), before the kernel sees it. A
``datetime`` or ``date`` without a zone is read the same way; one with a zone, and epoch milliseconds
(an ``int`` or a text of digits, which deltalog also takes), are passed on unchanged.

Example:
    >>> spark.conf.set("spark.sql.session.timeZone", "America/New_York")          # doctest: +SKIP
    >>> session_instant(spark, "2024-05-01 12:00:00")                             # doctest: +SKIP
    datetime.datetime(2024, 5, 1, 16, 0, tzinfo=datetime.timezone.utc)
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from deltalog.errors import InvalidArgumentError

__all__ = ["session_instant"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def session_instant(spark: Any, value: Any, *, option: str = "timestamp") -> Any:
    """``value`` as the instant delta-spark reads it (see the module docstring): an aware UTC ``datetime``
    for a text or a naive ``datetime`` / ``date``; anything else unchanged. ``option`` names the setting
    in the error for a text that is not a timestamp.

    Example:
        >>> session_instant(spark, "2024-05-01")                                  # doctest: +SKIP
        datetime.datetime(2024, 5, 1, 7, 0, tzinfo=datetime.timezone.utc)
        >>> session_instant(None, 1714521600000)  # epoch milliseconds: no session needed
        1714521600000
    """
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value
        text = value.isoformat(sep=" ")
    elif isinstance(value, dt.date):
        text = value.isoformat()
    elif isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():  # epoch milliseconds
            return value
    else:
        return value  # the kernel names what it cannot read
    from deltalog.spark.common.statements import original_sql

    micros = original_sql(spark)("SELECT unix_micros(try_cast(:ts AS TIMESTAMP))", {"ts": text}).first()[0]
    if micros is None:
        raise InvalidArgumentError(
            f"{option} {value!r} is not a timestamp Spark can read (e.g. '2024-05-01 12:00:00', in the session "
            "time zone, or with a zone: '2024-05-01T12:00:00Z')"
        )
    return _EPOCH + dt.timedelta(microseconds=int(micros))
