"""deltalog: Delta Lake in Python — a JVM-free transaction-log kernel, with PySpark as the data engine.

Example:
    >>> import deltalog
    >>> snap = deltalog.Table("/data/events").snapshot()             # doctest: +SKIP
    >>> snap.to_arrow().num_rows                                    # doctest: +SKIP
    1000
"""

from __future__ import annotations

from deltalog.arrow.write import WriteResult, write_table
from deltalog.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    CorruptLogError,
    DeletionVectorError,
    DeltaError,
    InvalidArgumentError,
    InvalidTableError,
    MetadataChangedException,
    ProtocolChangedException,
    SchemaError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.feed.changes import ChangeDataNotRecordedError
from deltalog.snapshot import Snapshot
from deltalog.table import Table, read_changes
from deltalog.version import __version__

__all__ = [
    "ChangeDataNotRecordedError",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentModificationException",
    "ConcurrentTransactionException",
    "CorruptLogError",
    "DeletionVectorError",
    "DeltaError",
    "InvalidArgumentError",
    "InvalidTableError",
    "MetadataChangedException",
    "ProtocolChangedException",
    "SchemaError",
    "Snapshot",
    "Table",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "WriteResult",
    "__version__",
    "read_changes",
    "write_table",
]
