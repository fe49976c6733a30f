"""What changed in a table, read from its log: the change data feed planner (:mod:`deltalog.feed.changes`)
and the engine-free half of a streaming source (:mod:`deltalog.feed.tail`).

Both take a :class:`~deltalog.txn.handle.TableHandle` (a :class:`~deltalog.Table` is one) and read
snapshots and commits through it; the engines (:mod:`deltalog.arrow.changes`, :mod:`deltalog.spark.cdf`,
:mod:`deltalog.spark.streaming`) read the files they plan.

Example:
    >>> from deltalog.feed.changes import resolve_range
    >>> import deltalog, pyarrow as pa
    >>> _ = deltalog.write_table("memory://feed-doc", pa.table({"x": [1]}),
    ...                         properties={"delta.enableChangeDataFeed": "true"})
    >>> resolve_range(deltalog.Table("memory://feed-doc"), starting_version=0)
    (0, 0)
"""
