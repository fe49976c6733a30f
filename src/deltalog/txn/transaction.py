"""Optimistic transactions: record what was read, stage actions, commit by put-if-absent.

A :class:`Transaction` is bound to a table and the snapshot it read (none for a table that does not
exist yet). It records what it depends on -- read predicates, files, the whole table, application
transaction ids -- and stages actions. :meth:`Transaction.commit` validates the staged actions against
the writer rules (:mod:`deltalog.txn.validation`, :mod:`deltalog.txn.writer_features`), upgrades the
protocol when the metadata needs a feature, and writes ``_delta_log/<version>.json`` **only** with an
atomic put-if-absent. When another writer won that version, the commits between the read version and the
new latest are read and checked for logical conflicts (:mod:`deltalog.txn.conflicts`); without one, the
commit is retried at the next version after an exponential backoff with jitter, a bounded number of times.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> from deltalog.protocol.actions import Format, Metadata
    >>> from deltalog.txn.operations import CreateTable
    >>> store = InMemoryLogStore("memory://txn-doc")
    >>> txn = Transaction(store, None, CreateTable(), table="memory://txn-doc")
    >>> txn.update_metadata(Metadata(id="1", format=Format(), schemaString='{"type":"struct","fields":[]}'))
    >>> txn.commit().version
    0
"""

from __future__ import annotations

import contextlib
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.errors import (
    InvalidArgumentError,
    StorageError,
    TableNotFoundError,
)
from deltalog.protocol.actions import (
    Action,
    Add,
    AddCDCFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    Remove,
    Txn,
)
from deltalog.protocol.column_mapping import with_column_mapping
from deltalog.storage import LogStore
from deltalog.txn.commit import (
    CommitFailedError,
    CommitResult,
    RetryPolicy,
    operation_metrics,
    remove_action,
)
from deltalog.txn.committer import after_commit, publish, read_winners, render_commit
from deltalog.txn.conflicts import (
    ISOLATION_LEVELS,
    WRITE_SERIALIZABLE,
    CurrentTransaction,
    WinningCommit,
    check_conflicts,
)
from deltalog.txn.operations import Operation
from deltalog.txn.predicates import Column, ReadPredicate, columns_of, file_may_match
from deltalog.txn.row_tracking import with_materialized_names
from deltalog.txn.staged import TableOwner
from deltalog.txn.validation import already_committed, validate
from deltalog.txn.writer_features import check_never_writable
from deltalog.version import __version__

if TYPE_CHECKING:
    from deltalog.data.filters import Condition
    from deltalog.log.paths import LogFile
    from deltalog.log.reader import FileActions
    from deltalog.snapshot import Snapshot

__all__ = [
    "CommitFailedError",
    "CommitResult",
    "RetryPolicy",
    "Transaction",
    "remove_action",
    "start_transaction",
]


def default_engine_info() -> str:
    """The ``commitInfo.engineInfo`` this build writes, ``deltalog/<version>``.

    Example:
        >>> default_engine_info().startswith("deltalog/")
        True
    """
    return f"deltalog/{__version__}"




def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Transaction:
    """One optimistic transaction on a table (see the module docstring).

    ``snapshot`` is the version read (``None``: the table does not exist yet and this transaction
    creates it). Options are keyword-only: ``isolation_level`` overrides ``delta.isolationLevel``;
    ``retry`` bounds the commit loop; ``sleep``, ``clock`` (milliseconds) and ``rng`` are injectable for
    tests.

    Example:
        >>> txn = start_transaction(table, Write(mode="Append"))          # doctest: +SKIP
        >>> txn.add_file(add)                                             # doctest: +SKIP
        >>> txn.commit().version                                          # doctest: +SKIP
        8
    """

    def __init__(
        self,
        store: LogStore,
        snapshot: Snapshot | None,
        operation: Operation,
        *,
        table: str | None = None,
        isolation_level: str | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], int] = _now_ms,
        rng: random.Random | None = None,
        engine_info: str | None = None,
        user_metadata: str | None = None,
        post_commit: bool = True,
        owner: TableOwner | None = None,
    ) -> None:
        self.store = store
        #: The :class:`~deltalog.table.Table` that started this transaction: it learns the committed
        #: snapshot, so its next ``snapshot()`` reads nothing it already knows.
        self._owner = owner
        #: Run the post-commit hooks (``.crc``, checkpoint every ``delta.checkpointInterval``, log
        #: cleanup) after a successful commit; they never fail the commit.
        self.post_commit = post_commit
        self.snapshot = snapshot
        self.operation = operation
        self.table = table if table is not None else (snapshot.table if snapshot is not None else store.root)
        if snapshot is not None:  # refused now, not after the data files are written
            check_never_writable(snapshot.protocol, table=self.table, version=snapshot.version)
        self.retry = retry or RetryPolicy()
        self._sleep, self._clock = sleep, clock
        self._rng = rng or random.Random()
        self.engine_info = engine_info if engine_info is not None else default_engine_info()
        self.user_metadata = user_metadata
        conf = snapshot.properties if snapshot is not None else {}
        level = isolation_level or conf.get("delta.isolationLevel") or WRITE_SERIALIZABLE
        if level not in ISOLATION_LEVELS:
            raise InvalidArgumentError(
                f"isolation level {level!r} is not one of {list(ISOLATION_LEVELS)}", table=self.table
            )
        self.isolation_level = level
        self._predicates: list[ReadPredicate] = []
        self._read_whole = False
        self._read_files: set[str] = set()
        self._read_app_ids: set[str] = set()
        self._adds: list[Add] = []
        self._removes: list[Remove] = []
        self._others: list[Action] = []
        self._row_id_floor = -1  # row tracking: the highest mark a winning commit recorded
        #: Called with each winning commit before the conflict checks: a resolver may rebase this
        #: transaction's staged actions onto the winner (e.g. merge deletion vectors of disjoint rows,
        #: :mod:`deltalog.commands.dv_rebase`) and returns the winner without what it resolved.
        self.conflict_resolvers: list[Callable[[Transaction, WinningCommit], WinningCommit]] = []
        #: Store paths written while resolving conflicts: deleted with the transaction's own files when
        #: nothing is committed.
        self.resolver_files: list[str] = []
        #: Winning versions a resolver rebased this transaction onto and the files it rebased (recorded
        #: in ``commitInfo.rowLevelConcurrency``), and, per file, the rows a resolver found changed by
        #: both (named in the conflict's message).
        self.reconciled: dict[int, int] = {}
        self.row_overlaps: dict[str, str] = {}
        #: The winning commits read while catching up (oldest first): with its own commit they advance
        #: the snapshot after the commit without reading the log again.
        self.caught_up: list[tuple[LogFile, FileActions]] = []
        #: Row tracking: the new files carry the moved rows' ids in the materialized columns (set by
        #: writers that preserve them, see :func:`deltalog.txn.row_tracking.materialized_fields`).
        self.keeps_row_ids = False
        self._metadata: list[Metadata] = []
        self._protocol: list[Protocol] = []
        self._committed = False
        #: Whether a commit file of this transaction may exist: "pending" (no put attempted, or every
        #: attempt lost to another writer), "landed", "unknown" (a put failed and could not be read back)
        #: or "kept" (a failed put on an object store, absent when read back but possibly applied later).
        self._outcome = "pending"
        self._committed_version: int | None = None

    # ------------------------------------------------------------------------------------- reading

    @property
    def committed(self) -> bool:
        """True once :meth:`commit` wrote (or skipped, for an idempotent ``txn``) this transaction."""
        return self._committed

    @property
    def discardable(self) -> bool:
        """True while no commit file of this transaction can exist: before :meth:`commit` published
        anything, or after every attempt provably lost. Only then may the files written for it be
        deleted; once a commit landed (or its outcome is unknown) they belong to the table.

        Example:
            >>> txn.discardable                                           # doctest: +SKIP
            True
        """
        return self._outcome == "pending" and not self._committed

    @contextlib.contextmanager
    def discard_unless_committed(self, cleanup: Callable[[], None]) -> Iterator[None]:
        """Run the block; if it fails, call ``cleanup`` (delete the files written for this transaction)
        only when :attr:`discardable`, and re-raise. Storage errors are re-raised naming the operation and
        whether a version was committed.

        Example:
            >>> with txn.discard_unless_committed(writer.abort):          # doctest: +SKIP
            ...     files = writer.close()
            ...     txn.add_actions(f.to_add() for f in files)
            ...     txn.commit()
        """
        try:
            yield
        except StorageError as exc:
            if self.discardable:
                with contextlib.suppress(Exception):
                    cleanup()
                self._discard_resolver_files()
            raise self.storage_error(exc) from exc.__cause__
        except BaseException:
            if self.discardable:
                with contextlib.suppress(Exception):
                    cleanup()
                self._discard_resolver_files()
            raise

    def _discard_resolver_files(self) -> None:
        for path in self.resolver_files:
            with contextlib.suppress(Exception):
                self.store.delete(path)

    def storage_error(self, exc: StorageError) -> StorageError:
        """``exc`` with this transaction's operation and commit outcome in its message.

        Example:
            >>> txn.storage_error(err).message                            # doctest: +SKIP
            'WRITE failed: the disk is full ...; nothing was committed, the table is still at version 3'
        """
        return exc.in_context(
            operation=self.operation.name,
            committed_version=self._committed_version,
            table_version=self.read_version,
        )

    @property
    def read_version(self) -> int:
        """The version read (``-1`` when the table does not exist yet).

        Example:
            >>> Transaction(InMemoryLogStore(), None, CreateTable()).read_version  # doctest: +SKIP
            -1
        """
        return self.snapshot.version if self.snapshot is not None else -1

    @property
    def metadata(self) -> Metadata | None:
        """The metadata this commit will leave: the staged one, else the snapshot's.

        Example:
            >>> txn.metadata.partitionColumns                            # doctest: +SKIP
            ('day',)
        """
        if self._metadata:
            return self._metadata[-1]
        return self.snapshot.metadata if self.snapshot is not None else None

    @property
    def protocol(self) -> Protocol | None:
        """The staged protocol, else the snapshot's (before any automatic upgrade).

        Example:
            >>> txn.protocol                                             # doctest: +SKIP
            Protocol(minReaderVersion=1, minWriterVersion=2, ...)
        """
        if self._protocol:
            return self._protocol[-1]
        return self.snapshot.protocol if self.snapshot is not None else None

    def _columns(self) -> dict[str, Column]:
        md = self.snapshot.metadata if self.snapshot is not None else self.metadata
        if md is None:
            return {}
        mode = md.configuration.get("delta.columnMapping.mode", "none")
        return columns_of(md.schemaString, partition_columns=md.partitionColumns, mapping_mode=mode)

    def read_predicate(self, conditions: Iterable[Sequence[Any]]) -> ReadPredicate:
        """Record that the transaction read the rows matching ``(column, op, value)`` conditions (AND).

        An empty list means the whole table. Returns the validated, typed predicate.

        Example:
            >>> txn.read_predicate([("day", "=", "2024-01-01")])          # doctest: +SKIP
        """
        pred = ReadPredicate.of(list(conditions), self._columns())
        if pred.is_whole_table:
            self._read_whole = True
        else:
            self._predicates.append(pred)
        return pred

    def read_whole_table(self) -> None:
        """Record that the transaction depends on every row of the table.

        Example:
            >>> txn.read_whole_table()                                    # doctest: +SKIP
        """
        self._read_whole = True

    def read_files(self, paths: Iterable[str]) -> None:
        """Record files (log paths) the transaction read; removing them concurrently conflicts.

        Example:
            >>> txn.read_files(["part-0.parquet"])                        # doctest: +SKIP
        """
        self._read_files.update(paths)

    def read_candidates(self, conditions: Sequence[Condition], *, exact: bool = True) -> pa.Table:
        """The live files of the read snapshot that kernel ``conditions`` (already typed, from
        :func:`~deltalog.data.filters.normalize_filter` or a SQL condition) may match, by partition values
        and min/max stats, recorded as read. The conditions are recorded as the read predicate when they
        say everything the read depends on; with none, or ``exact=False`` (the read also filters rows by
        something no predicate can name), the whole table is.

        Example:
            >>> txn.read_candidates([Condition("day", "=", "2024-01-01")]).num_rows   # doctest: +SKIP
            3
        """
        from deltalog.data.filters import prune_files

        if self.snapshot is None:
            raise InvalidArgumentError("there is no table to read candidate files from", table=self.table)
        if exact:
            self.read_predicate([(c.column, c.op, c.value) for c in conditions])
        else:
            self.read_whole_table()
        candidates = prune_files(self.snapshot, conditions)
        self.read_files(candidates.column("path").to_pylist())
        return candidates

    def scan_files(self, conditions: Iterable[Sequence[Any]] | None = None) -> pa.Table:
        """The live files that may hold rows matching ``conditions``, recording the predicate and the
        files as read. Partition conditions prune exactly; data conditions use min/max stats.

        Example:
            >>> txn.scan_files([("day", "=", "2024-01-01")]).num_rows     # doctest: +SKIP
            3
        """
        pred = self.read_predicate(conditions or [])
        if self.snapshot is None:
            return pa.table({"path": pa.array([], pa.string())})
        files = self.snapshot.add_files()
        if not pred.is_whole_table and files.num_rows:
            cols = self._columns()
            rows = files.select(["partitionValues", "stats"]).to_pylist()
            keep = [file_may_match(r, pred, cols) for r in rows]
            files = files.filter(pa.array(keep, pa.bool_()))
        self._read_files.update(str(p) for p in files.column("path").to_pylist())
        return files

    def txn_version(self, app_id: str) -> int | None:
        """The latest version committed by ``app_id`` (recorded as read: a concurrent ``txn`` for it
        conflicts).

        Example:
            >>> txn.txn_version("nightly")                                # doctest: +SKIP
            41
        """
        self._read_app_ids.add(app_id)
        return self.snapshot.txn_version(app_id) if self.snapshot is not None else None

    # ------------------------------------------------------------------------------------- staging

    def add_action(self, action: Action) -> None:
        """Stage any action (``add``, ``remove``, ``metaData``, ``protocol``, ``txn``, ``cdc``, domain).

        Example:
            >>> txn.add_action(Txn(appId="etl", version=3))               # doctest: +SKIP
        """
        if self._committed:
            raise InvalidArgumentError("this transaction has already committed", table=self.table)
        if isinstance(action, Add):
            self._adds.append(action)
        elif isinstance(action, Remove):
            self._removes.append(action)
        elif isinstance(action, Metadata):
            self._metadata.append(action)
        elif isinstance(action, Protocol):
            self._protocol.append(action)
        elif isinstance(action, CommitInfo):
            raise InvalidArgumentError("commitInfo is written by the transaction itself", table=self.table)
        elif isinstance(action, (Txn, DomainMetadata, AddCDCFile)):
            self._others.append(action)
        else:
            raise InvalidArgumentError(
                f"{type(action).__name__} actions cannot be committed in a commit file", table=self.table
            )

    def add_actions(self, actions: Iterable[Action]) -> None:
        """Stage several actions.

        Example:
            >>> txn.add_actions([add1, add2])                             # doctest: +SKIP
        """
        for a in actions:
            self.add_action(a)

    def add_file(self, add: Add) -> None:
        """Stage an ``add`` action.

        Example:
            >>> txn.add_file(Add("a.parquet", {}, 10, 0, True))           # doctest: +SKIP
        """
        self.add_action(add)

    def remove_file(self, remove: Remove) -> None:
        """Stage a ``remove`` action.

        Example:
            >>> txn.remove_file(Remove("a.parquet", True))                # doctest: +SKIP
        """
        self.add_action(remove)

    def remove_files(self, files: pa.Table | Iterable[Mapping[str, Any]], *, data_change: bool = True) -> int:
        """Stage a ``remove`` for each live-file row (e.g. from :meth:`scan_files`); returns the count.

        Example:
            >>> txn.remove_files(txn.scan_files([("day", "=", "2024-01-01")]))  # doctest: +SKIP
            3
        """
        rows = files.to_pylist() if isinstance(files, pa.Table) else list(files)
        now = self._clock()
        for row in rows:
            self.add_action(remove_action(row, deletion_timestamp=now, data_change=data_change))
        return len(rows)

    def update_metadata(self, metadata: Metadata) -> None:
        """Stage a new ``metaData`` action (at most one per commit). Under column mapping, fields without a
        column id or physical name get them here (see :mod:`deltalog.protocol.column_mapping`).

        Example:
            >>> txn.update_metadata(new_metadata)                         # doctest: +SKIP
        """
        previous = self.snapshot.metadata if self.snapshot is not None else None
        replacing = "REPLACE TABLE" in self.operation.name  # REPLACE / CREATE OR REPLACE [TABLE AS SELECT]
        metadata = with_column_mapping(metadata, previous, table=self.table, replacing=replacing)
        conf = with_materialized_names(metadata.configuration)  # row tracking: delta-spark's column names
        self.add_action(replace(metadata, configuration=conf) if conf != dict(metadata.configuration) else metadata)

    def update_protocol(self, protocol: Protocol) -> None:
        """Stage a new ``protocol`` action (at most one per commit).

        Example:
            >>> txn.update_protocol(Protocol(1, 3))                       # doctest: +SKIP
        """
        self.add_action(protocol)

    def set_app_transaction(self, app_id: str, version: int) -> None:
        """Stage a ``txn`` action for idempotent writes; the commit is skipped when the table already
        has ``version`` (or a newer one) for ``app_id``.

        Example:
            >>> txn.set_app_transaction("nightly", 42)                    # doctest: +SKIP
        """
        self._read_app_ids.add(app_id)
        self.add_action(Txn(appId=app_id, version=version, lastUpdated=self._clock()))

    def set_domain_metadata(self, domain: str, configuration: str, *, removed: bool = False) -> None:
        """Stage a ``domainMetadata`` action (the ``domainMetadata`` feature is added when needed).

        Example:
            >>> txn.set_domain_metadata("myapp.settings", '{"a":1}')      # doctest: +SKIP
        """
        self.add_action(DomainMetadata(domain=domain, configuration=configuration, removed=removed))

    def _current(self) -> CurrentTransaction:
        changes_data = any(a.dataChange for a in self._adds) or any(r.dataChange for r in self._removes)
        return CurrentTransaction(
            table=self.table,
            read_version=self.read_version,
            isolation_level=self.isolation_level,
            columns=self._columns(),
            predicates=tuple(self._predicates),
            read_whole_table=self._read_whole,
            read_files=frozenset(self._read_files),
            read_app_ids=frozenset(self._read_app_ids),
            removed_files=frozenset(r.path for r in self._removes),
            domains=frozenset(o.domain for o in self._others if isinstance(o, DomainMetadata)),
            is_blind_append=self._is_blind_append(),
            changes_data=changes_data,
            metadata_changed=bool(self._metadata or self._protocol),
        )

    def _is_blind_append(self) -> bool:
        return (
            self.operation.is_blind_append
            and not self._removes
            and not self._predicates
            and not self._read_whole
            and not self._read_files
            and all(a.dataChange for a in self._adds)
        )

    # ------------------------------------------------------------------------------------ committing

    def commit(self, *, metrics: Mapping[str, Any] | None = None, user_metadata: str | None = None) -> CommitResult:
        """Validate, then commit at the next version by put-if-absent, retrying after conflict checks.

        ``metrics`` are added to (and override) the computed ``operationMetrics``. Raises a
        :class:`~deltalog.errors.ConcurrentModificationException` subclass on a logical conflict,
        :class:`CommitFailedError` once ``retry.max_attempts`` attempts lost the race, a
        :class:`~deltalog.errors.StorageError` naming the operation when storage fails before the commit
        landed, and :class:`~deltalog.errors.CommitOutcomeUnknownError` when a failed put cannot be read
        back. Once the commit landed nothing turns it into a failure: post-commit steps that fail are
        listed in :attr:`CommitResult.post_commit_errors`, and an interrupt that arrives after the
        commit landed is re-raised with a note naming the committed version.

        Example:
            >>> txn.commit(metrics={"numOutputRows": 10}).version         # doctest: +SKIP
            8
        """
        if self._committed:
            raise InvalidArgumentError("this transaction has already committed", table=self.table)
        started = time.monotonic()
        if user_metadata is not None:
            self.user_metadata = user_metadata
        if already_committed(self):
            self._committed = True
            return CommitResult(version=self.read_version, operation=self.operation.name, skipped=True, attempts=0)
        protocol, metadata = validate(self)
        op_metrics = operation_metrics(self.operation, self._adds, self._removes, metrics)
        txn_id = str(uuid.uuid4())
        current = self._current()
        version = self.read_version + 1
        winners: list[int] = []
        for attempt in range(1, self.retry.max_attempts + 1):
            try:
                payload, info = render_commit(self, version, protocol, metadata, op_metrics, txn_id)
                landed = publish(self, version, payload)
                if not landed:
                    delay = self.retry.delay(attempt, self._rng) if attempt < self.retry.max_attempts else 0.0
                    if delay > 0:
                        # back off *before* catching up with the winners, so the retry follows right
                        # after reading the latest version (waiting after it would let more commits in)
                        self._sleep(delay)
                    for winner in read_winners(self, version):
                        for resolve in self.conflict_resolvers:
                            winner = resolve(self, winner)
                        if self.conflict_resolvers:  # a resolver may have restated this transaction's files
                            current = self._current()
                        if self.row_overlaps:
                            current = replace(current, overlaps=dict(self.row_overlaps))
                        check_conflicts(current, winner)
                        winners.append(winner.version)
                        if winner.row_id_high_water_mark is not None:  # row ids are rebased above it
                            self._row_id_floor = max(self._row_id_floor, winner.row_id_high_water_mark)
                    version = winners[-1] + 1
                    continue
            except StorageError as exc:
                raise self.storage_error(exc) from exc.__cause__ or exc
            errors = after_commit(self, version, payload)
            return CommitResult(
                version=version,
                operation=self.operation.name,
                attempts=attempt,
                winning_versions=tuple(winners),
                operation_metrics=op_metrics,
                timestamp=info.timestamp,
                in_commit_timestamp=info.inCommitTimestamp,
                txn_id=txn_id,
                duration_ms=int((time.monotonic() - started) * 1000),
                post_commit_errors=errors,
            )
        raise CommitFailedError(
            f"gave up committing {self.operation.name} after {self.retry.max_attempts} attempts: each "
            f"time another writer had just taken the version (last tried {version - 1}); nothing was "
            "committed -- retry later or allow more attempts",
            table=self.table,
        )

    def _landed(self, version: int) -> None:
        self._outcome = "landed"
        self._committed = True
        self._committed_version = version

def start_transaction(
    table: TableOwner,
    operation: Operation,
    *,
    isolation_level: str | None = None,
    snapshot: Snapshot | None = None,
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], int] = _now_ms,
    rng: random.Random | None = None,
    user_metadata: str | None = None,
    post_commit: bool = True,
) -> Transaction:
    """Begin a transaction on ``table`` reading its latest snapshot (or ``snapshot``); a table that does
    not exist yet gives a transaction that creates it.

    Example:
        >>> import deltalog
        >>> from deltalog.txn.operations import Write
        >>> txn = start_transaction(deltalog.Table("memory://start-doc"), Write(mode="Append"))
        >>> txn.read_version
        -1
    """
    if snapshot is None:
        try:
            snapshot = table.snapshot()
        except TableNotFoundError:
            snapshot = None
    return Transaction(
        table.store,
        snapshot,
        operation,
        table=table.location,
        isolation_level=isolation_level,
        retry=retry,
        sleep=sleep,
        clock=clock,
        rng=rng,
        user_metadata=user_metadata,
        post_commit=post_commit,
        owner=table,
    )
