"""What a command needs of a table (:class:`TableHandle`), so :mod:`deltalog.commands` and
:mod:`deltalog.feed` take a table without importing the :class:`~deltalog.table.Table` facade that calls them.

A :class:`~deltalog.table.Table` is a ``TableHandle``: its location and store, its snapshots (by version
or timestamp), its newest version, and transactions started on it (which tell it what they commit).

Example:
    >>> import deltalog
    >>> handle: TableHandle = deltalog.Table("memory://handle-doc")
    >>> handle.location
    'memory://handle-doc'
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

from deltalog.txn.staged import TableOwner

if TYPE_CHECKING:
    from deltalog.log.timestamps import TimestampLike
    from deltalog.snapshot import Snapshot
    from deltalog.txn.operations import Operation
    from deltalog.txn.transaction import Transaction

__all__ = ["TableHandle"]


class TableHandle(TableOwner, typing.Protocol):
    """A table the commands act on (see the module docstring)."""

    def snapshot(self, version: int | None = None, *, timestamp: TimestampLike | None = None) -> Snapshot:
        """The table at ``version`` or as of ``timestamp`` (latest by default)."""
        ...

    def latest_version(self) -> int:
        """The newest committed version."""
        ...

    def transaction(self, operation: Operation, **options: Any) -> Transaction:
        """A transaction on this table, reading its latest snapshot."""
        ...
