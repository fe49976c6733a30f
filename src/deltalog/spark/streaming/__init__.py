"""Structured Streaming with Delta tables: ``readStream.format("delta")`` and ``writeStream.format("delta")``.

* :mod:`deltalog.spark.streaming.source` -- the streaming source (a Python streaming data source
  planned by the kernel's :class:`deltalog.feed.tail.LogTail`); imports pyspark, so it is loaded only
  when a stream is read;
* :mod:`deltalog.spark.streaming.sink` -- the exactly-once sink (``foreachBatch`` + ``txn``).

May import: the kernel and the floors below: :mod:`deltalog.spark.common`, ``columns``, ``reads``, ``jobs``,
``layout``, ``writes``.

Both are reached through the ``format("delta")`` routing of :func:`deltalog.spark.register`; for
idempotent MERGE inside your own ``foreachBatch`` see :func:`deltalog.spark.idempotent_batch`.

Example:
    >>> (spark.readStream.format("delta").load("/data/a")
    ...  .writeStream.format("delta").option("checkpointLocation", "/chk/a2b")
    ...  .trigger(availableNow=True).start("/data/b").awaitTermination())            # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

__all__ = ["register_source"]


def register_source(spark: Any) -> None:
    """Register the Delta streaming source with ``spark`` (classic or Connect) under
    :data:`~deltalog.spark.streaming.source.SOURCE_NAME`; done once per session.

    Example:
        >>> register_source(spark)                                       # doctest: +SKIP
    """
    from deltalog.spark.common.sources import register_once
    from deltalog.spark.streaming.source import SOURCE_NAME, DeltaStreamDataSource

    register_once(spark, SOURCE_NAME, lambda: DeltaStreamDataSource)
