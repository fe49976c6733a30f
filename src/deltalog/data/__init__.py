"""The kernel's data-file engine, in Arrow: file pruning by partition values and stats (:mod:`.filters`),
deletion vectors (:mod:`.deletion_vectors`), reading a snapshot's files (:mod:`.read`), and writing data
files with their stats (:mod:`.write_files`, :mod:`.write_schema`, :mod:`.write_stats`, :mod:`.write_variants`).

It sits below :mod:`deltalog.snapshot`: it reads and writes against the log's types and small protocols, never
the ``Snapshot``, the transactions or the ``Table`` facade, so the snapshot, the commands and the engines on
top (``deltalog.arrow``, ``deltalog.spark``) all use it.

Example:
    >>> from deltalog.data.filters import normalize_filter
    >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
    >>> schema = StructType((StructField("x", PrimitiveType("long")),))
    >>> normalize_filter([("x", ">", 1)], schema, table="/data/t")
    ([Condition(column='x', op='>', value=1)], None)
"""
