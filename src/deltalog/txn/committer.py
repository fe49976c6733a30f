"""The commit step of a :class:`~deltalog.txn.transaction.Transaction` (typed against what it reads of one,
:class:`~deltalog.txn.staged.StagedTransaction`): rendering the commit file,
publishing it by put-if-absent with its outcome settled even when the put fails, reading the winners
of a lost race, and the post-commit work once a version landed.

The rule these functions keep: the data files written for a transaction belong to the table from the
moment its commit file may exist. :func:`publish` marks the transaction's outcome *unknown* before the
put, *landed* once the file is provably ours, and *pending* again only when another writer's file or no
file holds the version; writers delete their files only while the outcome is pending
(:attr:`Transaction.discardable`).

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> from deltalog.txn.operations import CreateTable
    >>> from deltalog.txn.transaction import Transaction
    >>> txn = Transaction(InMemoryLogStore(), None, CreateTable(), table="memory://committer-doc")
    >>> publish(txn, 0, b'{"commitInfo":{}}\\n'), txn.discardable
    (True, False)
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deltalog.errors import CommitOutcomeUnknownError, DeltaError, StorageError, StorageIOError
from deltalog.log.paths import LogFile, commit_name, commit_path
from deltalog.log.reader import metadata_partition_keys, read_commits, read_commits_each
from deltalog.log.segment import list_log
from deltalog.protocol.actions import Action, Add, CommitInfo, DomainMetadata, Metadata, Protocol, action_to_json
from deltalog.protocol.features import writer_features
from deltalog.snapshot_load import LogSnapshots, SnapshotSource, advance_snapshot, extend_snapshot
from deltalog.txn.commit import ABSENT, LANDED, TAKEN, previous_commit_timing, publish_commit
from deltalog.txn.conflicts import WinningCommit
from deltalog.txn.row_tracking import DOMAIN as ROW_TRACKING
from deltalog.txn.row_tracking import assign_row_ids, domain_configuration, high_water_mark
from deltalog.txn.staged import StagedTransaction
from deltalog.txn.writer_features import is_true

if TYPE_CHECKING:
    from deltalog.log.reader import FileActions
    from deltalog.snapshot import Snapshot

__all__ = [
    "after_commit", "committed_snapshot", "note_committed", "own_commit", "publish", "read_winners", "render_commit",
]

log = logging.getLogger(__name__)

_ICT = "delta.enableInCommitTimestamps"
_ICT_VERSION = "delta.inCommitTimestampEnablementVersion"
_ICT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
_PROTECT = "delta.requireCheckpointProtectionBeforeVersion"


def render_commit(
    txn: StagedTransaction,
    version: int,
    protocol: Protocol | None,
    metadata: Metadata,
    metrics: dict[str, str],
    txn_id: str,
) -> tuple[bytes, CommitInfo]:
    """The bytes of commit ``version`` (``commitInfo`` first, then protocol, metadata, other actions,
    removes, adds) and its ``commitInfo``; in-commit timestamps follow the previous commit's."""
    now = txn._clock()
    ict: int | None = None
    new_metadata = txn._metadata[-1] if txn._metadata else None
    if is_true(metadata.configuration, _ICT):
        prev_ict, prev_mtime = previous_commit_timing(txn.store, version - 1)
        floor = prev_ict if prev_ict is not None else prev_mtime
        ict = now if floor is None else max(now, floor + 1)
        was_enabled = txn.snapshot is not None and is_true(txn.snapshot.properties, _ICT)
        if not was_enabled and version > 0 and new_metadata is not None:
            conf = dict(new_metadata.configuration)
            conf[_ICT_VERSION] = str(version)
            conf[_ICT_TIMESTAMP] = str(ict)
            new_metadata = replace(new_metadata, configuration=conf)
    if new_metadata is not None and getattr(txn.operation, "protect_checkpoints", False):
        # DROP FEATURE without truncating history: versions before this commit keep the dropped feature
        new_metadata = replace(new_metadata, configuration={**new_metadata.configuration, _PROTECT: str(version)})
    info = CommitInfo(
        timestamp=now,
        inCommitTimestamp=ict,
        operation=txn.operation.name,
        operationParameters=txn.operation.commit_parameters(),
        readVersion=txn.read_version if txn.read_version >= 0 else None,
        isolationLevel=txn._current().effective_isolation,
        isBlindAppend=txn._is_blind_append(),
        operationMetrics=metrics,
        engineInfo=txn.engine_info,
        txnId=txn_id,
        userMetadata=txn.user_metadata,
        extra=_reconciled(txn),
    )
    actions: list[Action] = [info]
    if protocol is not None:
        actions.append(protocol)
    if new_metadata is not None:
        actions.append(new_metadata)
    actions.extend(txn._others)
    actions.extend(txn._removes)
    adds, domain = _row_ids(txn, protocol, version)
    if domain is not None:
        actions.append(domain)
    actions.extend(adds)
    text = "\n".join(action_to_json(a) for a in actions) + "\n"
    return text.encode("utf-8"), info


def _reconciled(txn: StagedTransaction) -> dict[str, Any]:
    """``commitInfo.rowLevelConcurrency``: the winning versions this commit was rebased onto and the
    number of files rebased (row-level concurrency, :mod:`deltalog.commands.dv_rebase`); nothing when
    no resolver rebased it."""
    if not txn.reconciled:
        return {}
    return {"rowLevelConcurrency": {"reconciledVersions": sorted(txn.reconciled),
                                    "rebasedFiles": sum(txn.reconciled.values())}}


def _row_ids(
    txn: StagedTransaction, protocol: Protocol | None, version: int
) -> tuple[list[Add], DomainMetadata | None]:
    """The adds with row ids assigned for ``version`` on row-tracking tables (see
    :mod:`deltalog.txn.row_tracking`), and the domain action recording the new high-water mark."""
    final = protocol if protocol is not None else txn.protocol
    if final is None or "rowTracking" not in writer_features(final) or not txn._adds:
        return list(txn._adds), None
    snap = txn.snapshot
    mark = max(txn._row_id_floor, high_water_mark(snap.domain_metadata(ROW_TRACKING) if snap is not None else None))
    previous: dict[str, dict[str, object]] = {}
    removed = {r.path for r in txn._removes}
    if removed and snap is not None:
        files = snap.add_files().select(["path", "baseRowId", "defaultRowCommitVersion"]).to_pylist()
        previous = {str(f["path"]): f for f in files if f["path"] in removed}
    adds, new_mark = assign_row_ids(txn._adds, previous, mark, version, table=txn.table)
    domain = DomainMetadata(domain=ROW_TRACKING, configuration=domain_configuration(new_mark), removed=False) \
        if new_mark != mark or snap is None else None
    return adds, domain


def read_winners(txn: StagedTransaction, start: int) -> list[WinningCommit]:
    """The commits from ``start`` to the latest, summarised for the conflict checks (and kept in
    :attr:`Transaction.caught_up`)."""
    listed = [f for f in list_log(txn.store, start) if f.kind == "commit"]
    last = max([f.version for f in listed], default=start)
    by_version = {f.version: f for f in listed}
    wanted = [by_version.get(v) or LogFile(commit_name(v), "commit", v) for v in range(start, last + 1)]
    actions = read_commits_each(txn.store, wanted, table=txn.table, partition_keys=_partition_keys(txn))
    txn.caught_up.extend(zip(wanted, actions, strict=True))
    return [WinningCommit.from_actions(fa) for fa in actions]


def _partition_keys(txn: StagedTransaction) -> frozenset[str]:
    return frozenset(metadata_partition_keys(txn.snapshot.metadata)) if txn.snapshot is not None else frozenset()


def own_commit(txn: StagedTransaction, version: int, payload: bytes) -> tuple[LogFile, FileActions]:
    """This writer's commit ``version`` (its bytes are ``payload``) as a log file and its actions, read
    from the bytes (one ``stat`` of the file for its modification time).

    Example:
        >>> own_commit(txn, 8, payload)[1].version                                   # doctest: +SKIP
        8
    """
    info = txn.store.stat(commit_path(version))
    own = LogFile(commit_name(version), "commit", version, size=info.size, modification_time=info.modification_time)
    return own, read_commits(txn.store, [own], table=txn.table, partition_keys=_partition_keys(txn), data=[payload])


def committed_snapshot(
    txn: StagedTransaction, version: int, payload: bytes, own: tuple[LogFile, FileActions] | None = None
) -> Snapshot | None:
    """The snapshot at ``version`` from what this writer holds: its read snapshot, the winners it read
    while catching up and its own commit's bytes (or ``own``, as :func:`own_commit` gives them) -- no
    listing, no log file read again. ``None`` when they do not cover every version since the read
    snapshot, or a winner changed the metadata (the caller then reads the log).

    Example:
        >>> committed_snapshot(txn, 8, payload).version                              # doctest: +SKIP
        8
    """
    base = txn.snapshot
    if base is None:
        return None
    caught = [(f, fa) for f, fa in txn.caught_up if f.version > base.version]
    if [f.version for f, _ in caught] != list(range(base.version + 1, version)):
        return None
    if any(isinstance(a, Metadata) for _, fa in caught for a in fa.others):
        return None
    mine_file, mine = own if own is not None else own_commit(txn, version, payload)
    return extend_snapshot(base, [*(f for f, _ in caught), mine_file],
                           actions=[mine, *(fa for _, fa in reversed(caught))])


def publish(txn: StagedTransaction, version: int, payload: bytes) -> bool:
    """Put ``payload`` as commit ``version``; True when it is ours, False when another writer has it.

    While the put runs its outcome is unknown; it is settled by :func:`publish_commit` (which reads
    the file back when the put raised). A landed commit whose put raised an interrupt re-raises
    the interrupt with a note naming the version; other failures raise named errors.
    """
    txn._outcome = "unknown"
    outcome, error = publish_commit(txn.store, version, payload)
    if outcome == LANDED:
        txn._landed(version)
        if error is not None and not isinstance(error, Exception):
            note_committed(error, txn, version, "before the commit call returned")
            raise error
        if error is not None:
            log.warning("table %s: the put of version %d raised %r but the commit file is ours; it landed",
                        txn.table, version, error)
        return True
    if outcome in (TAKEN, ABSENT):
        txn._outcome = "pending"
        if error is not None and not isinstance(error, Exception):
            raise error  # an interrupt before (or while losing) the race: nothing of ours was committed
        if outcome == TAKEN:
            return False
        assert error is not None  # ABSENT only comes from a put that raised
        if getattr(txn.store, "delayed_writes", False) and getattr(error, "request_may_apply", True):
            # On an object store a failed request may still be applied later: keep the data files it would
            # reference (VACUUM removes them if it never lands), and say so.
            txn._outcome = "kept"
            error.add_note(
                f"deltalog: {commit_path(version)} was not there when read back, so nothing was committed; the data "
                "files written for it were kept in case the failed request is still applied (VACUUM removes them "
                "otherwise)"
            )
        if isinstance(error, StorageError) or not isinstance(error, OSError):
            raise error
        raise StorageIOError(
            f"writing the commit file failed ({type(error).__name__}: {error}) and it was not created",
            table=txn.table, file=commit_path(version),
        ) from error
    # UNKNOWN: the file may or may not be ours; keep every data file
    raise CommitOutcomeUnknownError(
        f"writing commit file {commit_path(version)} failed ({type(error).__name__}: {error}) and reading it "
        f"back failed too, so it is unknown whether version {version} was committed by this "
        f"{txn.operation.name}; its data files were kept. Check with `deltalog check {txn.table}` and "
        "`deltalog history`: if the version is not this operation's, run it again",
        table=txn.table, version=version, file=commit_path(version),
    ) from error


def after_commit(txn: StagedTransaction, version: int, payload: bytes) -> tuple[str, ...]:
    """Post-commit work after ``version`` (whose bytes are ``payload``) landed; returns the failed
    steps, re-raises an interrupt (with a note that the version was committed) once the commit is
    recorded."""
    if not txn.post_commit:
        return ()
    from deltalog.log.post_commit import PostCommitReport, run_post_commit

    try:
        owner = txn._owner
        table: SnapshotSource = owner if owner is not None else LogSnapshots(txn.table, txn.store)
        after = None
        own = None
        if txn.snapshot is not None:
            try:  # the winners already read and our own commit; else only those are read, not the whole log
                own = own_commit(txn, version, payload)
                after = committed_snapshot(txn, version, payload, own)
                if after is None:
                    listing = list_log(txn.store, txn.snapshot.version + 1)
                    verify = owner is None or owner.verify_checksums
                    after = advance_snapshot(txn.snapshot, listing, version, verify_checksums=verify)
                    if after is None:  # a gap in the log (cleanup raced us): load the version
                        after = table.snapshot(version)
            except (DeltaError, FileNotFoundError):
                after = None  # post-commit loads the version itself
        if after is not None and after.version == version and owner is not None:
            owner._remember(after)
        commit = own[1] if own is not None else None
        report = run_post_commit(table, version, snapshot=after, clock=txn._clock, commit=commit,
                                 after=_uniform_step(txn, commit))
    except Exception as exc:  # run_post_commit never raises; loading the snapshot may
        report = PostCommitReport(version=version, errors=[f"load snapshot: {type(exc).__name__}: {exc}"])
    except BaseException as exc:
        note_committed(exc, txn, version, "while loading the committed snapshot")
        raise
    if report.interrupt is not None:
        note_committed(report.interrupt, txn, version, f"during the post-commit step {report.interrupted_step!r}")
        raise report.interrupt
    errors = list(report.errors)
    if txn._owner is not None and txn.operation.changes_data:  # maintenance's own commits change no data
        try:
            errors.extend(txn._owner._after_commit(version, txn.operation, txn._adds))
        except BaseException as exc:
            note_committed(exc, txn, version, "during the maintenance after it")
            raise
    return tuple(errors)


def _uniform_step(txn: StagedTransaction, commit: FileActions | None) -> list[tuple[str, Any]]:
    """The post-commit step keeping a UniForm table's Iceberg metadata current (:mod:`deltalog.uniform`; it does
    nothing for other tables)."""
    from deltalog.uniform import sync_after_commit

    return [("iceberg", lambda snap: sync_after_commit(snap, commit=commit, clock=txn._clock))]


def note_committed(exc: BaseException, txn: StagedTransaction, version: int, when: str) -> None:
    """Say on an interrupt that arrived after the commit landed that the version *was* committed."""
    exc.add_note(
        f"deltalog: {txn.operation.name} was committed as version {version} of {txn.table} before this "
        f"interrupt ({when}); the table holds its changes. Post-commit steps that did not run (checksum, "
        "checkpoint, log cleanup) are optional and run again with later commits."
    )
    exc.deltalog_committed_version = version  # type: ignore[attr-defined]
