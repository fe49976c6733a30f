"""deltalog: Delta Lake in Python — a JVM-free transaction-log kernel, with PySpark as the data engine.

Example:
    >>> import deltalog
    >>> snap = deltalog.Table("/data/events").snapshot()             # doctest: +SKIP
    >>> snap.to_arrow().num_rows                                    # doctest: +SKIP
    1000
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
from deltalog.version import __version__

if TYPE_CHECKING:
    from deltalog.arrow.create import create_table
    from deltalog.arrow.write import WriteResult, write_table
    from deltalog.data.sql_expr import sql_expr
    from deltalog.feed.changes import ChangeDataNotRecordedError
    from deltalog.snapshot import Snapshot
    from deltalog.table import Table, read_changes

#: Names imported on first use (PEP 562), so ``import deltalog`` -- and every process that only needs part
#: of it, such as the CLI's ``--help`` or a streaming source's Python worker -- skips what it does not use.
_LAZY = {
    "create_table": "deltalog.arrow.create",
    "WriteResult": "deltalog.arrow.write",
    "write_table": "deltalog.arrow.write",
    "ChangeDataNotRecordedError": "deltalog.feed.changes",
    "Snapshot": "deltalog.snapshot",
    "Table": "deltalog.table",
    "read_changes": "deltalog.table",
    "sql_expr": "deltalog.data.sql_expr",
}


def __getattr__(name: str) -> Any:
    """The lazily imported name ``name`` (imported once, then kept in the module).

    Example:
        >>> import deltalog
        >>> deltalog.Table.__name__
        'Table'
    """
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'deltalog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the lazily imported ones included.

    Example:
        >>> import deltalog
        >>> "write_table" in dir(deltalog)
        True
    """
    return sorted({*globals(), *_LAZY})


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
    "create_table",
    "read_changes",
    "sql_expr",
    "write_table",
]
