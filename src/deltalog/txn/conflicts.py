"""The conflict checker: may a transaction that lost the race for a version still commit on top of
the commits that won it?

Each winning commit is checked by a chain of small named checks (:data:`CHECKS`); the first one that
finds a logical conflict raises a subclass of :class:`ConcurrentModificationException`. Every message
names the winning version, its operation (from its ``commitInfo``) and what to do next.

Rules (those of the reference implementation unless marked otherwise):

1. :func:`check_protocol` -- a winner that changed the protocol conflicts (this includes a table
   created concurrently by a writer that also started from "no table").
2. :func:`check_metadata` -- a winner that changed the metadata (schema, partitioning, properties)
   conflicts.
3. :func:`check_added_files` -- files the winner added with ``dataChange=true`` conflict when they fall
   in what this transaction read (the whole table, or a read predicate). Which winners count depends
   on the isolation level:

   * ``Serializable``: every data-changing add;
   * ``WriteSerializable`` (default, table property ``delta.isolationLevel``): adds of winners that
     are **not** blind appends -- a concurrent plain ``INSERT`` never fails a DELETE/UPDATE/MERGE --
     unless this transaction changes the metadata (e.g. ADD CONSTRAINT, which checked every row it
     read): then blind appends count too;
   * ``SnapshotIsolation`` (used automatically when this transaction changes no data and writes no
     ``metaData`` / ``protocol`` action, e.g. OPTIMIZE): no added file conflicts.

   A transaction that is itself a blind append read nothing, so it never conflicts here, and a
   winner's ``dataChange=false`` adds (compaction) never do.

   **Beyond the reference:** predicate conditions on *data* columns (or on any column of an
   unpartitioned table) are checked against the winner's per-file statistics: an added file conflicts
   only if its ``[minValues, maxValues]`` range could satisfy the predicate (see
   :func:`deltalog.txn.predicates.file_may_match`). Files without stats always conflict. The reference
   treats every added file as matching a data-column predicate.
4. :func:`check_deleted_files_read` -- the winner removed (with or without ``dataChange``) a file this
   transaction read, or removed any file while this transaction read the whole table.
5. :func:`check_delete_delete` -- the winner removed a file this transaction removes too.
6. :func:`check_app_transactions` -- the winner wrote a ``txn`` for an application id this transaction
   read (or writes).
7. :func:`check_domains` -- the winner changed a metadata domain this transaction also writes.

Example:
    >>> from deltalog.txn.predicates import columns_of
    >>> me = CurrentTransaction(table="t", read_version=4, isolation_level="WriteSerializable",
    ...                         read_whole_table=True, columns=columns_of(None, partition_columns=()))
    >>> winner = WinningCommit(version=5, operation="OPTIMIZE", removed=({"path": "a.parquet"},))
    >>> check_conflicts(me, winner)
    Traceback (most recent call last):
    ...
    deltalog.errors.ConcurrentDeleteReadException: this transaction read the whole table \
(version 4), but the concurrent commit at version 5 (OPTIMIZE) removed file a.parquet; retry the \
operation: it will read the table as it is now [table t, version 5]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deltalog.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    MetadataChangedException,
    ProtocolChangedException,
)
from deltalog.protocol.actions import CommitInfo, DomainMetadata, Metadata, Protocol, Txn
from deltalog.txn.predicates import Column, ReadPredicate, file_may_match

_ROW_TRACKING = "delta.rowTracking"  # deltalog.txn.row_tracking.DOMAIN

if TYPE_CHECKING:
    from deltalog.log.reader import FileActions

__all__ = [
    "CHECKS",
    "ISOLATION_LEVELS",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentModificationException",
    "ConcurrentTransactionException",
    "CurrentTransaction",
    "MetadataChangedException",
    "ProtocolChangedException",
    "WinningCommit",
    "check_added_files",
    "check_app_transactions",
    "check_conflicts",
    "check_delete_delete",
    "check_deleted_files_read",
    "check_domains",
    "check_metadata",
    "check_protocol",
]

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
#: Isolation levels a table (``delta.isolationLevel``) or a transaction may ask for.
ISOLATION_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE)


#: What a winner's adds keep: the checks need the first five, resolvers rebuild a file's action from all.
_ADD_COLUMNS = ("path", "partitionValues", "stats", "dataChange", "deletionVector", "size", "modificationTime",
                "tags", "baseRowId", "defaultRowCommitVersion")


@dataclass(frozen=True)
class WinningCommit:
    """What a concurrent commit did, summarised for the checks.

    ``added`` / ``removed`` hold one mapping per file action with at least ``path`` (adds also
    ``partitionValues``, ``stats`` and ``dataChange``; read from a commit, also ``size``,
    ``modificationTime``, ``tags``, ``deletionVector``, ``baseRowId`` and ``defaultRowCommitVersion``).

    Example:
        >>> WinningCommit(version=7, operation="OPTIMIZE", removed=({"path": "a.parquet"},)).removed[0]
        {'path': 'a.parquet'}
    """

    version: int
    operation: str = "unknown operation"
    is_blind_append: bool = False
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    added: tuple[Mapping[str, Any], ...] = ()
    removed: tuple[Mapping[str, Any], ...] = ()
    app_ids: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()
    commit_info: CommitInfo | None = None
    #: The row-tracking high-water mark the commit recorded (``None``: it recorded none).
    row_id_high_water_mark: int | None = None

    @classmethod
    def from_actions(cls, fa: FileActions) -> WinningCommit:
        """Summarise one commit read with :func:`deltalog.log.reader.read_commit`.

        Example:
            >>> from deltalog.storage import InMemoryLogStore
            >>> from deltalog.log.paths import parse_log_name
            >>> from deltalog.log.reader import read_commit
            >>> s = InMemoryLogStore()
            >>> s.write("_delta_log/00000000000000000003.json",
            ...         b'{"commitInfo":{"operation":"DELETE"}}\\n', overwrite=False)
            >>> w = WinningCommit.from_actions(read_commit(s, parse_log_name(
            ...     "00000000000000000003.json"), table="t"))
            >>> w.version, w.operation
            (3, 'DELETE')
        """
        info = fa.commit_infos.get(fa.version)
        protocol = next((a for a in fa.others if isinstance(a, Protocol)), None)
        metadata = next((a for a in fa.others if isinstance(a, Metadata)), None)
        app_ids = frozenset(a.appId for a in fa.others if isinstance(a, Txn))
        domains = frozenset(a.domain for a in fa.others if isinstance(a, DomainMetadata))
        marks = [a.configuration for a in fa.others if isinstance(a, DomainMetadata) and a.domain == _ROW_TRACKING]
        operation = info.operation if info is not None and isinstance(info.operation, str) else None
        return cls(
            version=fa.version,
            operation=operation or "unknown operation",
            is_blind_append=bool(info is not None and info.isBlindAppend is True),
            protocol=protocol,
            metadata=metadata,
            added=tuple(fa.adds.select([c for c in _ADD_COLUMNS if c in fa.adds.column_names]).to_pylist()),
            removed=tuple(fa.removes.select(["path", "dataChange", "deletionVector"]).to_pylist()),
            app_ids=app_ids,
            domains=domains,
            commit_info=info,
            row_id_high_water_mark=int(json.loads(marks[-1])["rowIdHighWaterMark"]) if marks else None,
        )


@dataclass(frozen=True)
class CurrentTransaction:
    """What the losing transaction read and wrote, as the checks need it.

    ``isolation_level`` is the configured level; :attr:`effective_isolation` lowers it to
    ``SnapshotIsolation`` when the transaction changes no data and no metadata (``metadata_changed``:
    it writes a ``metaData`` or ``protocol`` action).

    Example:
        >>> CurrentTransaction(table="t", read_version=3, changes_data=False).effective_isolation
        'SnapshotIsolation'
    """

    table: str
    read_version: int
    isolation_level: str = WRITE_SERIALIZABLE
    columns: Mapping[str, Column] = field(default_factory=dict)
    predicates: tuple[ReadPredicate, ...] = ()
    read_whole_table: bool = False
    read_files: frozenset[str] = frozenset()
    read_app_ids: frozenset[str] = frozenset()
    removed_files: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()
    is_blind_append: bool = False
    changes_data: bool = True
    metadata_changed: bool = False
    #: Why row-level concurrency could not reconcile a file (``path -> "both deleted or updated rows 4, 7
    #: of it"``): added to the conflict's message.
    overlaps: Mapping[str, str] = field(default_factory=dict)

    @property
    def effective_isolation(self) -> str:
        """``SnapshotIsolation`` for transactions without data or metadata changes, else the
        configured level (delta-spark does not reorder a commit that changes the metadata).

        Example:
            >>> CurrentTransaction("t", 0, isolation_level="Serializable").effective_isolation
            'Serializable'
            >>> CurrentTransaction("t", 0, changes_data=False, metadata_changed=True).effective_isolation
            'WriteSerializable'
        """
        return self.isolation_level if self.changes_data or self.metadata_changed else SNAPSHOT_ISOLATION


Check = Callable[[CurrentTransaction, WinningCommit], None]


def _where(me: CurrentTransaction, winner: WinningCommit) -> dict[str, Any]:
    return {"table": me.table, "version": winner.version, "operation": winner.operation}


def _by(winner: WinningCommit) -> str:
    return f"the concurrent commit at version {winner.version} ({winner.operation})"


def _read(me: CurrentTransaction) -> str:
    return f"version {me.read_version}" if me.read_version >= 0 else "no table yet"


def _overlap(me: CurrentTransaction, path: str) -> str:
    note = me.overlaps.get(path)
    return f" ({note})" if note else ""


def check_protocol(me: CurrentTransaction, winner: WinningCommit) -> None:
    """Raise :class:`ProtocolChangedException` when the winner wrote a ``protocol`` action.

    Example:
        >>> check_protocol(CurrentTransaction("t", 1), WinningCommit(2, "WRITE"))
    """
    if winner.protocol is None:
        return
    if me.read_version < 0:
        raise ProtocolChangedException(
            f"the table was created concurrently: {_by(winner)} created it while this transaction "
            "was creating it too; check the new table's schema and retry as a write to it",
            **_where(me, winner),
        )
    raise ProtocolChangedException(
        f"{_by(winner)} changed the table protocol after this transaction read {_read(me)}; "
        "reload the table and retry the operation",
        **_where(me, winner),
    )


def check_metadata(me: CurrentTransaction, winner: WinningCommit) -> None:
    """Raise :class:`MetadataChangedException` when the winner wrote a ``metaData`` action.

    Example:
        >>> check_metadata(CurrentTransaction("t", 1), WinningCommit(2, "WRITE"))
    """
    if winner.metadata is None:
        return
    raise MetadataChangedException(
        f"{_by(winner)} changed the table metadata (schema, partitioning or properties) after this "
        f"transaction read {_read(me)}; reload the table and retry the operation",
        **_where(me, winner),
    )


def _conflicting_adds(me: CurrentTransaction, winner: WinningCommit) -> list[Mapping[str, Any]]:
    level = me.effective_isolation
    if level == SNAPSHOT_ISOLATION or me.is_blind_append:
        return []
    if level == WRITE_SERIALIZABLE and winner.is_blind_append and not me.metadata_changed:
        return []
    return [a for a in winner.added if a.get("dataChange") is not False]


def check_added_files(me: CurrentTransaction, winner: WinningCommit) -> None:
    """Raise :class:`ConcurrentAppendException` when the winner added files in what this transaction
    read (see the module docstring for the isolation rules and the statistics-based refinement).

    Example:
        >>> from deltalog.txn.predicates import columns_of
        >>> cols = columns_of('{"fields":[{"name":"p","type":"string","metadata":{}}]}',
        ...                   partition_columns=["p"])
        >>> me = CurrentTransaction("t", 1, columns=cols,
        ...                         predicates=(ReadPredicate.of([("p", "=", "a")], cols),))
        >>> check_added_files(me, WinningCommit(2, "MERGE", added=(
        ...     {"path": "p=b/f.parquet", "partitionValues": {"p": "b"}, "dataChange": True},)))
    """
    candidates = _conflicting_adds(me, winner)
    if not candidates:
        return
    hit: Mapping[str, Any] | None = None
    if me.read_whole_table:
        hit, scope = candidates[0], "the whole table"
    else:
        scope = ""
        for pred in me.predicates:
            hit = next((a for a in candidates if file_may_match(a, pred, me.columns)), None)
            if hit is not None:
                scope = f"the rows matching {pred.describe()}"
                break
    if hit is None:
        return
    raise ConcurrentAppendException(
        f"{_by(winner)} added file {hit['path']} to {scope}, which this transaction read at "
        f"{_read(me)} (isolation level {me.effective_isolation}){_overlap(me, hit['path'])}; retry the "
        "operation: it will read the new files",
        **_where(me, winner),
    )


def check_deleted_files_read(me: CurrentTransaction, winner: WinningCommit) -> None:
    """Raise :class:`ConcurrentDeleteReadException` when the winner removed a file this transaction
    read (whatever its ``dataChange``), or any file while this transaction read the whole table.

    Example:
        >>> me = CurrentTransaction("t", 1, read_files=frozenset({"a"}))
        >>> check_deleted_files_read(me, WinningCommit(2, "DELETE", removed=({"path": "b"},)))
    """
    for r in winner.removed:
        if r["path"] in me.read_files:
            raise ConcurrentDeleteReadException(
                f"this transaction read file {r['path']} at {_read(me)}, but {_by(winner)} removed it"
                f"{_overlap(me, r['path'])}; retry the operation: it will read the table as it is now",
                **_where(me, winner),
            )
    if me.read_whole_table and winner.removed:
        raise ConcurrentDeleteReadException(
            f"this transaction read the whole table ({_read(me)}), but {_by(winner)} removed file "
            f"{winner.removed[0]['path']}; retry the operation: it will read the table as it is now",
            **_where(me, winner),
        )


def check_delete_delete(me: CurrentTransaction, winner: WinningCommit) -> None:
    """Raise :class:`ConcurrentDeleteDeleteException` when both transactions remove the same file.

    Example:
        >>> me = CurrentTransaction("t", 1, removed_files=frozenset({"a"}))
        >>> check_delete_delete(me, WinningCommit(2, "DELETE", removed=({"path": "b"},)))
    """
    for r in winner.removed:
        if r["path"] in me.removed_files:
            raise ConcurrentDeleteDeleteException(
                f"this transaction removes file {r['path']}, which {_by(winner)} already removed"
                f"{_overlap(me, r['path'])}; retry the operation: it will see the rows as they are now",
                **_where(me, winner),
            )


def check_app_transactions(me: CurrentTransaction, winner: WinningCommit) -> None:
    """Raise :class:`ConcurrentTransactionException` when the winner wrote a ``txn`` for an application
    id this transaction read or writes (two runs of an idempotent job raced).

    Example:
        >>> me = CurrentTransaction("t", 1, read_app_ids=frozenset({"etl"}))
        >>> check_app_transactions(me, WinningCommit(2, "WRITE", app_ids=frozenset({"other"})))
    """
    both = sorted(me.read_app_ids & winner.app_ids)
    if both:
        raise ConcurrentTransactionException(
            f"{_by(winner)} committed a transaction for application id {both[0]!r}, which this "
            f"transaction depends on (read at {_read(me)}); the same job probably ran twice "
            "concurrently -- check the table's txn version for that id before retrying",
            **_where(me, winner),
        )


def check_domains(me: CurrentTransaction, winner: WinningCommit) -> None:
    """Raise :class:`MetadataChangedException` when both transactions write the same metadata domain.

    Example:
        >>> check_domains(CurrentTransaction("t", 1, domains=frozenset({"a"})), WinningCommit(2))
    """
    both = sorted((me.domains & winner.domains) - {_ROW_TRACKING})  # row ids are rebased, not conflicts
    if both:
        raise MetadataChangedException(
            f"{_by(winner)} changed metadata domain {both[0]!r}, which this transaction writes too; "
            "reload the table and retry the operation",
            **_where(me, winner),
        )


#: The checks run, in order, against every winning commit.
CHECKS: tuple[Check, ...] = (
    check_protocol,
    check_metadata,
    check_added_files,
    check_deleted_files_read,
    check_delete_delete,
    check_app_transactions,
    check_domains,
)


def check_conflicts(me: CurrentTransaction, winner: WinningCommit, *, checks: Sequence[Check] = CHECKS) -> None:
    """Run every check; the first conflict found is raised.

    Example:
        >>> check_conflicts(CurrentTransaction("t", 0, is_blind_append=True),
        ...                 WinningCommit(1, "WRITE", added=({"path": "x", "dataChange": True},)))
    """
    for check in checks:
        check(me, winner)
