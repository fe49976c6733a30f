"""What changed in a table, read from its log: the change data feed planner (:mod:`deltalog.feed.changes`)
and the engine-free half of a streaming source (:mod:`deltalog.feed.tail`).

Both take a :class:`~deltalog.txn.handle.TableHandle` (a :class:`~deltalog.Table` is one) and read
snapshots and commits through it. :mod:`deltalog.feed.rows` reads the planned files into one Arrow table
(``Table.read_changes``); Spark's engine (:mod:`deltalog.spark.reads.changes`, :mod:`deltalog.spark.streaming`) reads
them in its own tasks.

Example:
    >>> from deltalog.feed.changes import resolve_range
    >>> import deltalog, pyarrow as pa
    >>> _ = deltalog.write_table("memory://feed-doc", pa.table({"x": [1]}),
    ...                         properties={"delta.enableChangeDataFeed": "true"})
    >>> resolve_range(deltalog.Table("memory://feed-doc"), starting_version=0)
    (0, 0)
"""
