"""What a failed or interrupted operation tells its caller about what it committed.

Commands that are more than one commit (``VACUUM`` commits a start and an end record around its
deletes) or no commit at all (writing a checkpoint) run inside an :class:`OperationScope`. A storage
failure inside it leaves as the same :class:`~deltalog.errors.StorageError` class with the operation's
name and what was committed in its message; an interrupt (``KeyboardInterrupt``, ``SystemExit``) after
a version was committed gets a note naming that version. Single-commit operations get the same from
:meth:`Transaction.discard_unless_committed <deltalog.txn.transaction.Transaction.discard_unless_committed>`.

Example:
    >>> from deltalog.errors import StorageFullError
    >>> try:
    ...     with OperationScope("VACUUM", table_version=7) as scope:
    ...         scope.committed(8)                      # VACUUM START landed
    ...         raise StorageFullError("the disk is full while deleting a.parquet", file="a.parquet")
    ... except StorageFullError as err:
    ...     print(err.message)
    VACUUM failed: the disk is full while deleting a.parquet; version 8 was committed by this operation \
before the failure
"""

from __future__ import annotations

from types import TracebackType

from deltalog.errors import StorageError

__all__ = ["OperationScope"]


class OperationScope:
    """Context manager naming ``operation`` in storage errors and noting committed versions on
    interrupts (see the module docstring). ``table_version`` is the version the table was at.

    Example:
        >>> with OperationScope("CHECKPOINT", table_version=3):
        ...     pass
    """

    def __init__(self, operation: str, *, table_version: int | None = None, table: str | None = None) -> None:
        self.operation = operation
        self.table_version = table_version
        self.table = table
        self.committed_version: int | None = None

    def committed(self, version: int) -> None:
        """Record that ``version`` was committed by this operation.

        Example:
            >>> s = OperationScope("VACUUM"); s.committed(4); s.committed_version
            4
        """
        self.committed_version = version

    def __enter__(self) -> OperationScope:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            return
        if isinstance(exc, StorageError):
            named = exc.in_context(
                operation=self.operation, committed_version=self.committed_version, table_version=self.table_version
            )
            if named is not exc:
                raise named from exc.__cause__ or exc
            return
        noted = getattr(exc, "deltalog_committed_version", None) is not None
        if not isinstance(exc, Exception) and self.committed_version is not None and not noted:
            where = f" of {self.table}" if self.table else ""
            exc.add_note(
                f"deltalog: {self.operation} had committed version {self.committed_version}{where} before "
                "this interrupt; the table holds what that version records."
            )
            exc.deltalog_committed_version = self.committed_version  # type: ignore[attr-defined]
