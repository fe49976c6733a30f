"""``RESTORE``: bring a table back to the files (and metadata) of an earlier version in one commit.

The commit re-adds (``add``, ``dataChange=true``, copied from the old version's ``add`` with stats,
tags and deletion vector) every file that was live then but is not now, and removes every file that
is live now but was not then; files are told apart by path *and* deletion vector, so a file whose
deletion vector changed since is swapped back to the old one. The old metadata (schema, partitioning,
properties) is restored when it differs -- except the in-commit-timestamp settings, which keep their
current values, as commit timestamps must stay monotonic. The protocol is never downgraded: the new
one supports every feature of the current *and* of the old protocol.

Before committing, every data file (and deletion-vector file) to re-add is checked to exist: if a
``VACUUM`` already deleted one, restore refuses and names it.

Example:
    >>> import deltalog
    >>> res = restore(deltalog.Table("/data/events"), version=3)          # doctest: +SKIP
    >>> res.version, res.metrics["numRestoredFiles"]                       # doctest: +SKIP
    (13, '4')
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from deltalog.errors import (
    DeltaError,
    InvalidArgumentError,
    TimestampAfterLatestError,
    TimestampBeforeEarliestError,
    VersionNotFoundError,
)
from deltalog.log.timestamps import TimestampLike
from deltalog.protocol.actions import Add, Metadata, Protocol
from deltalog.protocol.deletion_vectors import DeletionVectorDescriptor, local_path
from deltalog.protocol.features import reader_features, writer_features
from deltalog.txn.operations import Restore
from deltalog.txn.transaction import CommitResult

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["MissingRestoreFilesError", "RestoreResult", "merge_protocols", "restore"]

#: Properties that keep their current values: in-commit timestamps must not be switched back off.
_KEEP_CURRENT = (
    "delta.enableInCommitTimestamps",
    "delta.inCommitTimestampEnablementVersion",
    "delta.inCommitTimestampEnablementTimestamp",
)


class MissingRestoreFilesError(DeltaError):
    """Files the version to restore needs no longer exist (typically deleted by ``VACUUM``).

    Example:
        >>> str(MissingRestoreFilesError("gone", table="t"))
        'gone [table t]'
    """


@dataclass(frozen=True)
class RestoreResult:
    """Outcome of :func:`restore`: the new ``version``, the ``restored_version`` it copies, and Spark's
    metrics (``metrics`` holds them as strings, as written to ``commitInfo.operationMetrics``).

    Example:
        >>> r = RestoreResult(version=5, restored_version=2, num_restored_files=1, num_removed_files=2,
        ...                   restored_files_size=10, removed_files_size=20, num_files_after_restore=3,
        ...                   table_size_after_restore=30)
        >>> r.num_removed_files
        2
    """

    version: int
    restored_version: int
    num_restored_files: int
    num_removed_files: int
    restored_files_size: int
    removed_files_size: int
    num_files_after_restore: int
    table_size_after_restore: int
    metadata_restored: bool = False
    protocol_upgraded: bool = False
    metrics: Mapping[str, str] = field(default_factory=dict)
    commit: CommitResult | None = None


def merge_protocols(current: Protocol, other: Protocol) -> Protocol:
    """The smallest protocol supporting every feature of both, never below ``current``.

    Example:
        >>> merge_protocols(Protocol(1, 2), Protocol(1, 4))
        Protocol(minReaderVersion=1, minWriterVersion=4, readerFeatures=None, writerFeatures=None, extra={})
        >>> merge_protocols(Protocol(1, 2), Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)))
        Protocol(minReaderVersion=3, minWriterVersion=7, readerFeatures=('deletionVectors',), \
writerFeatures=('appendOnly', 'deletionVectors', 'invariants'), extra={})
    """
    reader = max(current.minReaderVersion, other.minReaderVersion)
    writer = max(current.minWriterVersion, other.minWriterVersion)
    if reader >= 3:
        writer = max(writer, 7)
    if writer < 7:
        if (reader, writer) == (current.minReaderVersion, current.minWriterVersion):
            return current
        return Protocol(minReaderVersion=reader, minWriterVersion=writer)
    rf = reader_features(current) | reader_features(other)
    wf = writer_features(current) | writer_features(other) | rf
    merged = Protocol(
        minReaderVersion=reader,
        minWriterVersion=writer,
        readerFeatures=tuple(sorted(rf)) if reader >= 3 else None,
        writerFeatures=tuple(sorted(wf)),
    )
    return current if merged == current else merged


def _key(row: Mapping[str, Any]) -> tuple[str, str | None]:
    dv = row.get("deletionVector")
    if not dv:
        return row["path"], None
    uid = f"{dv.get('storageType')}{dv.get('pathOrInlineDv')}"
    offset = dv.get("offset")
    return row["path"], uid if offset is None else f"{uid}@{offset}"


def _as_dict(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    return dict(value)


def add_from_row(row: Mapping[str, Any]) -> Add:
    dv = row.get("deletionVector")
    return Add(
        path=row["path"],
        partitionValues=_as_dict(row.get("partitionValues")) or {},
        size=int(row.get("size") or 0),
        modificationTime=int(row.get("modificationTime") or 0),
        dataChange=True,
        stats=row.get("stats"),
        tags=_as_dict(row.get("tags")),
        deletionVector={k: v for k, v in dv.items() if v is not None} if dv else None,
        baseRowId=row.get("baseRowId"),
        defaultRowCommitVersion=row.get("defaultRowCommitVersion"),
        clusteringProvider=row.get("clusteringProvider"),
    )


def _missing_files(snapshot: Snapshot, rows: list[dict[str, Any]]) -> list[str]:
    """Log paths (data files and deletion-vector files) of ``rows`` that do not exist."""
    from deltalog.commands.vacuum import store_relative_path

    store = snapshot.store
    root = store.root

    def exists(log_path: str) -> bool:
        rel = store_relative_path(log_path, root)
        if rel is not None:
            return store.exists(rel)
        if log_path.startswith(("file:", "/")):
            return os.path.isfile(local_path(log_path) if log_path.startswith("file:") else log_path)
        return True  # another file system: cannot be checked from here

    missing: list[str] = []
    for row in rows:
        if not exists(row["path"]):
            missing.append(row["path"])
        dv = row.get("deletionVector")
        if dv:
            descriptor = DeletionVectorDescriptor.from_dict(
                {k: v for k, v in dv.items() if v is not None},
                where={"table": snapshot.table, "version": snapshot.version, "file": row["path"]},
            )
            if descriptor.storageType == "u":
                rel_dv = descriptor.relative_path()
                if rel_dv is not None and not store.exists(rel_dv):
                    missing.append(rel_dv)
            elif descriptor.storageType == "p" and not exists(descriptor.pathOrInlineDv):
                missing.append(descriptor.pathOrInlineDv)
    return missing


def _restored_metadata(old: Metadata, current: Metadata) -> Metadata | None:
    conf = {k: v for k, v in old.configuration.items() if k not in _KEEP_CURRENT}
    conf.update({k: v for k, v in current.configuration.items() if k in _KEEP_CURRENT})
    target = replace(old, configuration=conf)
    return None if target == current else target


def _timestamp_text(ts: TimestampLike) -> str:
    if isinstance(ts, (dt.datetime, dt.date)):
        return ts.isoformat()
    return str(ts)


def _unreachable(
    exc: VersionNotFoundError, version: int | None, timestamp: TimestampLike | None
) -> VersionNotFoundError:
    """The time-travel error of a restore target, with delta-spark's error condition in front."""
    if version is not None:
        head = f"[DELTA_CANNOT_RESTORE_TABLE_VERSION] cannot restore the table to version {version}"
    elif isinstance(exc, TimestampAfterLatestError):
        head = f"[DELTA_CANNOT_RESTORE_TIMESTAMP_GREATER] cannot restore the table to timestamp {timestamp!s}"
    elif isinstance(exc, TimestampBeforeEarliestError):
        head = f"[DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER] cannot restore the table to timestamp {timestamp!s}"
    else:
        head = f"cannot restore the table to timestamp {timestamp!s}"
    return type(exc)(f"{head}: {exc.message}", table=exc.table,
                     version=exc.version, file=exc.file, line=exc.line)


def restore(
    table: TableHandle,
    *,
    version: int | None = None,
    timestamp: TimestampLike | None = None,
    clock: Callable[[], int] | None = None,
) -> RestoreResult:
    """Restore ``table`` to ``version`` or to the version current at ``timestamp``, in one commit.

    Raises :class:`MissingRestoreFilesError` when a file the old version needs was deleted (e.g. by
    ``VACUUM``), :class:`~deltalog.errors.VersionNotFoundError` for a version the log cannot
    reconstruct, and a concurrency exception when another writer changed the table meanwhile.

    Example:
        >>> import deltalog
        >>> restore(deltalog.Table("/data/events"), timestamp="2024-05-01T00:00:00Z").restored_version  # doctest: +SKIP
        7
    """
    if (version is None) == (timestamp is None):
        raise InvalidArgumentError("restore needs exactly one of version= or timestamp=", table=table.location)
    current = table.snapshot()
    try:
        target = table.snapshot(version=version) if version is not None else table.snapshot(timestamp=timestamp)
    except VersionNotFoundError as exc:
        raise _unreachable(exc, version, timestamp) from None
    if target.version > current.version:  # a commit landed between the two reads
        current = table.snapshot()

    old_rows = target.add_files().to_pylist()
    now_rows = current.add_files().to_pylist()
    old_keys = {_key(r) for r in old_rows}
    now_keys = {_key(r) for r in now_rows}
    to_add = [r for r in old_rows if _key(r) not in now_keys]
    to_remove = [r for r in now_rows if _key(r) not in old_keys]

    missing = _missing_files(current, to_add)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise MissingRestoreFilesError(
            f"cannot restore to version {target.version}: {len(missing)} file(s) it needs no longer exist "
            f"({shown}); they were probably deleted by VACUUM -- restore to a newer version instead",
            table=table.location,
            version=target.version,
        )

    from deltalog.txn.transaction import start_transaction

    op = Restore(version=target.version) if timestamp is None else Restore(timestamp=_timestamp_text(timestamp))
    options: dict[str, Any] = {"snapshot": current}
    if clock is not None:
        options["clock"] = clock
    txn = start_transaction(table, op, **options)
    txn.read_whole_table()  # any concurrent change to the files conflicts

    protocol = merge_protocols(current.protocol, target.protocol)
    protocol_upgraded = protocol != current.protocol
    if protocol_upgraded:
        txn.update_protocol(protocol)
    new_metadata = _restored_metadata(target.metadata, current.metadata)
    if new_metadata is not None:
        txn.update_metadata(new_metadata)
    txn.remove_files(to_remove, data_change=True)
    for row in to_add:
        txn.add_file(add_from_row(row))

    restored_size = sum(int(r.get("size") or 0) for r in to_add)
    removed_size = sum(int(r.get("size") or 0) for r in to_remove)
    metrics = {
        "tableSizeAfterRestore": sum(int(r.get("size") or 0) for r in old_rows),
        "numOfFilesAfterRestore": len(old_rows),
        "numRemovedFiles": len(to_remove),
        "numRestoredFiles": len(to_add),
        "removedFilesSize": removed_size,
        "restoredFilesSize": restored_size,
    }
    result = txn.commit(metrics=metrics)
    return RestoreResult(
        version=result.version,
        restored_version=target.version,
        num_restored_files=len(to_add),
        num_removed_files=len(to_remove),
        restored_files_size=restored_size,
        removed_files_size=removed_size,
        num_files_after_restore=len(old_rows),
        table_size_after_restore=metrics["tableSizeAfterRestore"],
        metadata_restored=new_metadata is not None,
        protocol_upgraded=protocol_upgraded,
        metrics=dict(result.operation_metrics),
        commit=result,
    )
