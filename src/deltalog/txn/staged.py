"""What the commit step (:mod:`deltalog.txn.committer`) and the writer-rule checks (:mod:`deltalog.txn.validation`)
read and settle of a transaction, as a protocol (:class:`StagedTransaction`): the table and snapshot it read,
its operation, the actions it staged, what it learned while catching up, and where its commit stands. A
:class:`~deltalog.txn.transaction.Transaction` is one; typing those two modules against this protocol instead
of the class keeps the imports a line -- ``transaction`` -> ``committer``, ``validation`` -> ``staged`` -- with
no circle. Also :class:`TableOwner`, the table a transaction was started from.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> from deltalog.txn.operations import CreateTable
    >>> from deltalog.txn.transaction import Transaction
    >>> staged: StagedTransaction = Transaction(InMemoryLogStore(), None, CreateTable(), table="memory://staged")
    >>> staged.read_version, staged.discardable
    (-1, True)
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import TYPE_CHECKING

from deltalog.protocol.actions import Action, Add, Metadata, Protocol, Remove
from deltalog.snapshot_load import SnapshotSource
from deltalog.storage import LogStore
from deltalog.txn.conflicts import CurrentTransaction
from deltalog.txn.operation_base import Operation

if TYPE_CHECKING:
    from deltalog.log.paths import LogFile
    from deltalog.log.reader import FileActions
    from deltalog.snapshot import Snapshot

__all__ = ["StagedTransaction", "TableOwner"]


class TableOwner(SnapshotSource, typing.Protocol):
    """The table a transaction was started from (a :class:`~deltalog.table.Table`): it learns the committed
    snapshot, so its next ``snapshot()`` reads nothing it already knows."""

    verify_checksums: bool

    def _remember(self, snapshot: Snapshot) -> None:
        """Keep ``snapshot`` as the newest known state."""
        ...

    def _after_commit(self, version: int, operation: Operation, adds: list[Add]) -> list[str]:
        """Work the table asks for after a commit of ``operation`` that added ``adds`` landed as ``version``
        (maintenance, when its properties turn it on); returns what failed, never raises."""
        ...


class StagedTransaction(typing.Protocol):
    """A transaction as the commit step sees it (see the module docstring); the members are
    :class:`~deltalog.txn.transaction.Transaction`'s, documented there."""

    store: LogStore
    snapshot: Snapshot | None
    operation: Operation
    table: str
    engine_info: str
    user_metadata: str | None
    post_commit: bool
    keeps_row_ids: bool
    caught_up: list[tuple[LogFile, FileActions]]
    reconciled: dict[int, int]
    _owner: TableOwner | None
    _clock: Callable[[], int]
    _adds: list[Add]
    _removes: list[Remove]
    _others: list[Action]
    _metadata: list[Metadata]
    _protocol: list[Protocol]
    _outcome: str
    _row_id_floor: int

    @property
    def read_version(self) -> int:
        """The version read (``-1`` when the table does not exist yet)."""
        ...

    @property
    def metadata(self) -> Metadata | None:
        """The metadata the commit will leave."""
        ...

    @property
    def protocol(self) -> Protocol | None:
        """The staged protocol, else the snapshot's."""
        ...

    @property
    def discardable(self) -> bool:
        """True while no commit file of the transaction can exist."""
        ...

    def _current(self) -> CurrentTransaction:
        """What the conflict checks need of the transaction."""
        ...

    def _is_blind_append(self) -> bool:
        """Whether the transaction only appends, having read nothing."""
        ...

    def _landed(self, version: int) -> None:
        """Record that commit ``version`` is the transaction's."""
        ...
