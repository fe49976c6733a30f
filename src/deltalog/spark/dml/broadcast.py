"""Whether a MERGE job broadcasts the source (:func:`broadcast_source`): the first job always may, the
write job when it left-joins the touched files with the source (no inserts; an upsert's full outer join
cannot be broadcast).

The first job joins the target's join keys with the source to find which target rows match. Spark
broadcasts a join side only when its *estimate* is under ``spark.sql.autoBroadcastJoinThreshold`` (10 MB),
and a parquet source's estimate is its compressed size: a source of a few million rows is joined by
shuffling and sorting every target row. Broadcasting the source instead lets each task probe its
target rows in place, and only matched rows are shuffled (for the multiple-match check): measured on
50M target rows and 5M source rows, the first job took 20-29 s instead of 51-55 s.

deltalog knows the source's row count (``numSourceRows``) before the job, and Spark's optimized plan
says which source columns the job keeps, so the broadcast's size is estimated as Spark sizes rows
(8 bytes plus each column's default size). The source is broadcast when that estimate is at most
``spark.deltalog.merge.sourceBroadcastThreshold`` (bytes, ``k``/``m``/``g`` suffixes allowed; ``-1``
never), by default an eighth of the driver's heap, at most 1 GiB. ``autoBroadcastJoinThreshold=-1``
(broadcasts turned off for the session) turns this off too.

Example:
    >>> parse_bytes("256m"), parse_bytes("-1")
    (268435456, -1)
"""

from __future__ import annotations

from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.spark.common.core import parse_size, session_setting

__all__ = ["SOURCE_BROADCAST_CONF", "broadcast_source", "estimated_bytes", "parse_bytes", "threshold"]

SOURCE_BROADCAST_CONF = "spark.deltalog.merge.sourceBroadcastThreshold"
_MAX_DEFAULT = 1 << 30


def parse_bytes(text: str, *, setting: str = SOURCE_BROADCAST_CONF) -> int:
    """A byte count as Spark writes them (``10485760``, ``256m``, ``1g``; ``-1`` stays ``-1``).

    Example:
        >>> parse_bytes("1g"), parse_bytes("512k"), parse_bytes("1000")
        (1073741824, 524288, 1000)
    """
    text = str(text).strip()
    size = parse_size(text[1:] if text.startswith("-") else text)
    if size is None:
        raise InvalidArgumentError(
            f"{setting}={text!r} is not a byte count: use a number of bytes, optionally with a k, m or g "
            "suffix (e.g. 256m), or -1 to turn it off"
        )
    return -1 if text.startswith("-") else size


def threshold(spark: Any) -> int:
    """The largest estimated source (bytes) a MERGE job broadcasts; ``-1``: never (see the module).

    Example:
        >>> threshold(spark)                                                        # doctest: +SKIP
        238551040
    """
    auto = session_setting(spark, "spark.sql.autoBroadcastJoinThreshold")
    if auto is not None and parse_bytes(auto, setting="spark.sql.autoBroadcastJoinThreshold") < 0:
        return -1
    own = session_setting(spark, SOURCE_BROADCAST_CONF)
    if own is not None:
        return parse_bytes(own)
    try:
        heap = int(spark._jvm.java.lang.Runtime.getRuntime().maxMemory())
    except Exception:  # no JVM at hand (Spark Connect): the driver's configured memory
        heap = parse_bytes(session_setting(spark, "spark.driver.memory") or "1g", setting="spark.driver.memory")
    return min(_MAX_DEFAULT, heap // 8)


def _seq(items: Any) -> list[Any]:
    return [items.apply(i) for i in range(items.size())]


def estimated_bytes(job: Any, rows: int) -> int | None:
    """Spark's size estimate of ``rows`` rows of the right side of the first join in ``job``'s optimized
    plan (the columns the job keeps of it); ``None`` when the plan cannot be inspected.

    Example:
        >>> estimated_bytes(target.join(source, "id"), 1_000_000)                  # doctest: +SKIP
        16000000
    """
    try:
        stack = [job._jdf.queryExecution().optimizedPlan()]
        while stack:
            node = stack.pop()
            if node.nodeName() == "Join":
                width = sum(int(a.dataType().defaultSize()) for a in _seq(node.right().output()))
                return rows * (8 + width)
            stack.extend(_seq(node.children()))
    except Exception:  # not a classic session (Spark Connect has no JVM plan at hand)
        return None
    return None


def broadcast_source(spark: Any, job: Any, rows: int) -> bool:
    """Whether ``job`` (the target joined with the source, the source on the right) should broadcast the
    source of ``rows`` rows (see the module docstring).

    Example:
        >>> broadcast_source(spark, target.join(source, "id"), 5_000_000)           # doctest: +SKIP
        True
    """
    limit = threshold(spark)
    if limit < 0:
        return False
    size = estimated_bytes(job, rows)
    return size is not None and size <= limit
