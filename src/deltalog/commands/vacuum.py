"""``VACUUM``: delete data files under the table root that no retained version of the table needs.

A file is deleted only when all of these hold:

* it lies under the table root and no segment of its path starts with ``_`` or ``.`` -- so
  ``_delta_log`` and any other hidden directory or file is never touched. The exceptions, as in the
  reference implementation, are a partition directory of a partition column whose name starts with
  ``_`` (``_p=1``) and ``_change_data``: change data files are never live, so (as in delta-spark) they
  are deleted once older than the retention -- reading the change feed of versions older than the
  retention then fails naming the missing file, as it does in Delta;
* the latest snapshot does not reference it: neither as a live data file nor as the deletion-vector
  file of one;
* it is not a tombstone (``remove``) whose ``deletionTimestamp`` is at or after the cutoff
  ``now - retention`` (nor the deletion-vector file of such a tombstone), so time travel and readers
  of versions inside the retention window keep working;
* its modification time is before the cutoff, so files that in-flight transactions are still writing
  (not committed yet) are safe.

Paths in the log only ever *protect* files; candidates for deletion come from listing the table root (or
from an inventory of it, ``USING INVENTORY``), so a log path pointing outside the root (absolute, another
scheme, ``..``) can never cause a deletion.
The retention is what keeps concurrent operations safe: a transaction running longer than it (or a
``RESTORE`` re-adding files whose tombstones have expired) can still lose files to a concurrent vacuum.

The retention defaults to ``delta.deletedFileRetentionDuration`` (1 week); a shorter one is refused
unless ``enforce_retention_duration=False``. A real (not dry) run records ``VACUUM START`` and
``VACUUM END`` commits (``commitInfo`` only) and removes partition directories left empty.

Example:
    >>> import deltalog
    >>> res = vacuum(deltalog.Table("/data/events"))                      # doctest: +SKIP
    >>> res.dry_run, res.num_files_to_delete                              # doctest: +SKIP
    (True, 3)
"""

from __future__ import annotations

import logging
import math
import os
import posixpath
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import unquote

from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.log.cleanup import DEFAULT_DELETED_FILE_RETENTION, duration_property_ms
from deltalog.protocol.deletion_vectors import DeletionVectorDescriptor, local_path
from deltalog.storage import FileInfo, LogStore
from deltalog.txn.operations import VacuumEnd, VacuumStart
from deltalog.txn.writer_features import check_writable

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["InventoryEntry", "VacuumResult", "inventory_files", "protected_paths", "store_relative_path", "vacuum"]

#: One row of a vacuum inventory: ``(path, length, is_dir, modification_time)`` (delta-spark's columns
#: ``path``, ``length``, ``isDir``, ``modificationTime``; the time in epoch milliseconds).
InventoryEntry: TypeAlias = "tuple[str, int, bool, int]"

log = logging.getLogger(__name__)

#: The directory of change data files (``cdc`` actions); vacuumed, unlike other hidden directories.
CHANGE_DATA_DIR = "_change_data"

_HOUR_MS = 3_600_000
_DV_NAME = re.compile(r"deletion_vector_[0-9a-fA-F-]{36}\.bin$")


@dataclass(frozen=True)
class VacuumResult:
    """What :func:`vacuum` did (or, with ``dry_run``, would do).

    ``files_deleted`` lists store paths relative to the table root, sorted: the files deleted, or
    for a dry run the files that would be deleted. ``num_vacuumed_directories`` counts the
    directories scanned (the root included), like Spark's metric of that name;
    ``num_removed_directories`` the empty directories removed afterwards.

    Example:
        >>> VacuumResult(files_deleted=["a.parquet"], num_files_to_delete=1, size_of_data_to_delete=10,
        ...              num_deleted_files=0, num_vacuumed_directories=1, num_removed_directories=0,
        ...              retention_ms=604800000, cutoff_ms=0, dry_run=True).retention_hours
        168.0
    """

    files_deleted: list[str]
    num_files_to_delete: int
    size_of_data_to_delete: int
    num_deleted_files: int
    num_vacuumed_directories: int
    num_removed_directories: int
    retention_ms: int
    cutoff_ms: int
    dry_run: bool
    version: int = -1
    start_version: int | None = None
    end_version: int | None = None

    @property
    def retention_hours(self) -> float:
        """The retention used, in hours.

        Example:
            >>> VacuumResult([], 0, 0, 0, 1, 0, 3_600_000, 0, True).retention_hours
            1.0
        """
        return self.retention_ms / _HOUR_MS


# --------------------------------------------------------------------------------------------- paths


def store_relative_path(log_path: str, root: str) -> str | None:
    """The store path (relative to the table root, decoded) a log path points to, or ``None`` when it
    points outside the root (another scheme, an absolute path elsewhere, or ``..`` escaping the root).

    Example:
        >>> store_relative_path("p=a%20b/x.parquet", "/t")
        'p=a b/x.parquet'
        >>> store_relative_path("file:///t/x.parquet", "/t"), store_relative_path("/elsewhere/x", "/t")
        ('x.parquet', None)
        >>> store_relative_path("../t2/x.parquet", "/t") is None
        True
    """
    if not log_path:
        return None
    is_uri = "://" in log_path or log_path.startswith("file:")
    if is_uri or log_path.startswith("/"):
        if log_path.startswith("file:"):
            full = local_path(log_path)
        elif is_uri:
            full = log_path
        else:
            full = unquote(log_path)
        base = local_path(root).rstrip("/") + "/"
        if not full.startswith(base):
            return None
        rel = full[len(base) :]
    else:
        rel = unquote(log_path)
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        rel = posixpath.normpath(rel)
        if rel in (".", "..") or rel.startswith("../") or rel.startswith("/"):
            return None
    return rel


def inventory_files(entries: Iterable[InventoryEntry], root: str, *, table: str | None = None) -> Iterator[FileInfo]:
    """The files of an inventory that lie under the table ``root``, relative to it (directory entries are
    skipped: the files' paths name their directories). A path may name the root with another scheme of the
    same store (``s3a://`` for ``s3://``, ``file:/`` for a local path).

    Example:
        >>> list(inventory_files([("file:/t/a.parquet", 3, False, 5), ("/t/p=1", 0, True, 5),
        ...                       ("/elsewhere/b.parquet", 1, False, 5)], "/t"))
        [FileInfo(path='a.parquet', size=3, modification_time=5)]
    """
    base = _without_scheme(root)
    for number, entry in enumerate(entries, 1):
        try:
            path, length, is_dir, mtime = entry
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"vacuum inventory entry {number} is {entry!r}: expected (path, length, is_dir, modification_time)",
                table=table) from None
        if not isinstance(path, str) or not path:
            raise InvalidArgumentError(f"vacuum inventory entry {number} has no path: {entry!r}", table=table)
        if is_dir:
            continue
        rel = store_relative_path(path, root)
        if rel is None and "://" in path:  # the same bucket through another connector's scheme
            rel = store_relative_path("/" + _without_scheme(path), "/" + base)
        if not rel:  # outside the table, or the root itself
            continue
        if length is None or mtime is None:
            raise InvalidArgumentError(
                f"vacuum inventory entry {number} ({path}) has no length or modificationTime: vacuum needs both "
                "to tell what it may delete", table=table)
        yield FileInfo(rel, int(length), int(mtime))


def _without_scheme(uri: str) -> str:
    return uri.split("://", 1)[1].strip("/") if "://" in uri else local_path(uri).strip("/")


def _dv_paths(dv: Mapping[str, Any] | None, root: str, where: Mapping[str, Any]) -> list[str]:
    if not dv:
        return []
    descriptor = DeletionVectorDescriptor.from_dict({k: v for k, v in dv.items() if v is not None}, where=where)
    if descriptor.is_inline:
        return []
    if descriptor.storageType == "u":
        rel = descriptor.relative_path()
    else:
        rel = store_relative_path(descriptor.pathOrInlineDv, root)
    return [rel] if rel is not None else []


def _add_protected(out: set[str], log_path: str | None, root: str) -> None:
    if not log_path:
        return
    rel = store_relative_path(log_path, root)
    if rel is not None:
        out.add(rel)
    if "://" not in log_path and not log_path.startswith("/"):
        out.add(log_path)  # the undecoded form too: protection errs on the safe side


def protected_paths(snapshot: Snapshot, cutoff_ms: int) -> set[str]:
    """Store paths a vacuum with this cutoff must keep: live files, tombstones removed at or after
    ``cutoff_ms``, and the deletion-vector files of both.

    Example:
        >>> sorted(protected_paths(deltalog.Table("/data/t").snapshot(), 0))   # doctest: +SKIP
        ['part-0.parquet', 'part-1.parquet']
    """
    root = snapshot.store.root
    where = {"table": snapshot.table, "version": snapshot.version}
    out: set[str] = set()
    files = snapshot.add_files().select(["path", "deletionVector"])
    for row in files.to_pylist():
        _add_protected(out, row["path"], root)
        out.update(_dv_paths(row["deletionVector"], root, {**where, "file": row["path"]}))
    tombs = snapshot.tombstones().select(["path", "deletionTimestamp", "deletionVector"])
    for row in tombs.to_pylist():
        if (row["deletionTimestamp"] or 0) < cutoff_ms:
            continue  # expired: vacuum may delete it (Spark counts a missing timestamp as 0)
        _add_protected(out, row["path"], root)
        out.update(_dv_paths(row["deletionVector"], root, {**where, "file": row["path"]}))
    return out


ICEBERG_DIR = "metadata"


def _iceberg_protected(snapshot: Snapshot) -> set[str] | None:
    """With UniForm's Iceberg metadata beside the log (``metadata/``, see :mod:`deltalog.uniform`): the store
    paths of the data files its retained Iceberg snapshots read, which vacuum keeps while UniForm is enabled
    (once disabled, the metadata is no longer kept up to date and keeps nothing but itself); ``metadata/`` is
    never listed. None for a table without it."""
    from deltalog.uniform import enabled

    store = snapshot.store
    on = enabled(snapshot.properties)
    if not on and not store.exists(f"{ICEBERG_DIR}/version-hint.text"):
        return None
    if not on:
        return set()
    try:
        from deltalog.uniform.convert import referenced_data_files
    except ImportError:  # no pyiceberg: the Iceberg snapshots' files are not known, so nothing may go
        raise UnsupportedFeatureError(
            "VACUUM of a UniForm table must keep the data files its Iceberg snapshots read, and reading their "
            "manifests needs pyiceberg: pip install 'deltalog[iceberg]'", feature="pyiceberg", table=snapshot.table,
        ) from None
    root = store.full_path("").rstrip("/") + "/"
    return {loc[len(root):] for loc in referenced_data_files(store) if loc.startswith(root)}


def _hidden_prefixes(partition_columns: Iterable[str]) -> tuple[str, ...]:
    return tuple(f"{c}=" for c in partition_columns if c[:1] in ("_", "."))


def _is_hidden_name(name: str, *, is_dir: bool, partition_prefixes: tuple[str, ...]) -> bool:
    """Names starting with ``_`` or ``.`` are hidden, except partition directories (``_p=1``) of a
    partition column whose name starts that way."""
    if name[:1] not in ("_", "."):
        return False
    if is_dir and name == CHANGE_DATA_DIR:
        return False  # change data files are vacuumed once older than the retention, as in Delta
    return not (is_dir and partition_prefixes and name.startswith(partition_prefixes))


def _is_hidden(parts: list[str], partition_prefixes: tuple[str, ...]) -> bool:
    last = len(parts) - 1
    return any(
        _is_hidden_name(part, is_dir=i < last, partition_prefixes=partition_prefixes) for i, part in enumerate(parts)
    )


def _dv_suffix_protected(path: str, protected_dvs: set[tuple[str, str]]) -> bool:
    """DV files some writers store under a prefixed name (``<prefix>deletion_vector_<uuid>.bin``) are
    found by readers by their suffix (see :mod:`deltalog.data.read`); keep them as well."""
    directory, _, name = path.rpartition("/")
    m = _DV_NAME.search(name)
    return m is not None and (directory, m.group(0)) in protected_dvs


# -------------------------------------------------------------------------------------------- vacuum


def _retention_ms(
    retention_hours: float | None, configured_ms: int, enforce: bool, table: str
) -> tuple[int, int | None]:
    if retention_hours is None:
        return configured_ms, None
    if isinstance(retention_hours, bool) or not isinstance(retention_hours, (int, float)):
        raise InvalidArgumentError(f"retention_hours must be a number, got {retention_hours!r}", table=table)
    if not math.isfinite(retention_hours) or retention_hours < 0:
        raise InvalidArgumentError(
            f"retention_hours must be a finite, non-negative number, got {retention_hours!r}", table=table
        )
    specified = int(retention_hours * _HOUR_MS)
    if enforce and specified < configured_ms:
        raise InvalidArgumentError(
            f"retention of {retention_hours:g} hours is shorter than the table's "
            f"delta.deletedFileRetentionDuration ({configured_ms / _HOUR_MS:g} hours). Vacuuming with it "
            "can delete files that concurrent readers and writers still use, and files that time travel "
            "to recent versions needs, which corrupts those readers or makes the versions unreadable. Use "
            "a retention of at least the table's setting or, if you are sure no operation on the table runs "
            "longer than the retention you give, turn the check off (enforce_retention_duration=False; in Spark "
            "the session setting spark.databricks.delta.retentionDurationCheck.enabled=false)",
            table=table,
        )
    return specified, specified


def vacuum(
    table: TableHandle,
    *,
    retention_hours: float | None = None,
    dry_run: bool = True,
    enforce_retention_duration: bool = True,
    lite: bool = False,
    inventory: Iterable[InventoryEntry] | None = None,
    clock: Callable[[], int] | None = None,
) -> VacuumResult:
    """Delete files no retained version of ``table`` needs (see the module docstring for the rules).

    ``dry_run`` (the default) only lists what would be deleted. ``clock`` returns "now" in epoch
    milliseconds (the cutoff is ``now - retention``) and also times the ``VACUUM`` commits. ``lite``
    (delta-spark's ``VACUUM LITE``) finds the files in the log instead of listing the table root: the
    files removed (and change data written) since the last completed vacuum's cutoff; it never finds files
    no commit names, and refuses (``DELTA_CANNOT_VACUUM_LITE``) when the log no longer holds every commit
    since that cutoff (run a full vacuum then). ``inventory`` (delta-spark's ``VACUUM ... USING INVENTORY``)
    replaces the listing of the table root by a listing made elsewhere (e.g. an S3 Inventory report): entries
    ``(path, length, is_dir, modification_time)``, paths absolute (URIs or local paths); entries outside the
    table root are ignored and the same rules decide what goes. Empty directories are left (nothing lists
    them).

    Example:
        >>> import deltalog
        >>> res = vacuum(deltalog.Table("/data/events"), retention_hours=200, dry_run=False)  # doctest: +SKIP
        >>> res.num_deleted_files, res.retention_hours                                       # doctest: +SKIP
        (3, 200.0)
    """
    snapshot = table.snapshot()
    loc = table.location
    # Vacuum deletes files, so it must understand every feature of the table, as a writer does (this is
    # all the ``vacuumProtocolCheck`` feature asks of it).
    check_writable(snapshot.protocol, snapshot.metadata, adds_data=False, table=loc, version=snapshot.version)
    configured_ms = duration_property_ms(
        snapshot.properties, "delta.deletedFileRetentionDuration", DEFAULT_DELETED_FILE_RETENTION
    )
    retention_ms, specified_ms = _retention_ms(retention_hours, configured_ms, enforce_retention_duration, loc)
    now = int(clock()) if clock is not None else time.time_ns() // 1_000_000
    cutoff = now - retention_ms

    store = snapshot.store
    protected = protected_paths(snapshot, cutoff)
    iceberg = _iceberg_protected(snapshot)
    if iceberg is not None:
        protected |= iceberg
    protected_dvs = {(p.rpartition("/")[0], m.group(0)) for p in protected if (m := _DV_NAME.search(p))}
    prefixes = _hidden_prefixes(snapshot.partition_columns)
    doomed: list[tuple[str, int]] = []
    directories: set[str] = set()
    if inventory is not None and lite:
        raise InvalidArgumentError("VACUUM LITE finds the files in the log: it takes no inventory", table=loc)
    listed: Iterable[FileInfo] = ()
    if inventory is not None:
        listed = inventory_files(inventory, store.full_path(""), table=loc)
    elif not lite:
        listed = store.list_dir("", recursive=True)
    if lite:
        doomed = [(p, n) for p, n in _lite_candidates(snapshot, cutoff).items()
                  if p not in protected and not _dv_suffix_protected(p, protected_dvs)
                  and not _is_hidden(p.split("/"), prefixes)]
    for info in listed:
        parts = info.path.split("/")
        if _is_hidden(parts, prefixes) or (iceberg is not None and len(parts) > 1 and parts[0] == ICEBERG_DIR):
            continue
        directories.update("/".join(parts[:i]) for i in range(1, len(parts)))
        if info.path in protected or info.modification_time >= cutoff:
            continue
        if _dv_suffix_protected(info.path, protected_dvs):
            continue
        doomed.append((info.path, info.size))
    doomed.sort()
    paths = [p for p, _ in doomed]
    size = sum(s for _, s in doomed)
    num_dirs = len(directories) + 1 if not lite else 0

    if dry_run:
        return VacuumResult(
            files_deleted=paths,
            num_files_to_delete=len(paths),
            size_of_data_to_delete=size,
            num_deleted_files=0,
            num_vacuumed_directories=num_dirs,
            num_removed_directories=0,
            retention_ms=retention_ms,
            cutoff_ms=cutoff,
            dry_run=True,
            version=snapshot.version,
        )

    from deltalog.txn.scope import OperationScope
    from deltalog.txn.transaction import start_transaction

    options: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        options["clock"] = clock
    scope = OperationScope("VACUUM", table_version=snapshot.version, table=loc)
    with scope:
        start = start_transaction(
            table,
            VacuumStart(
                retention_check_enabled=enforce_retention_duration,
                specified_retention_millis=specified_ms,
                default_retention_millis=configured_ms,
            ),
            **options,
        ).commit(metrics={"numFilesToDelete": len(paths), "sizeOfDataToDelete": size})
        scope.committed(start.version)
        dir_times = _local_dir_times(store, prefixes) if not lite and inventory is None else {}
        deleted = 0
        try:
            bulk = getattr(store, "delete_many", None)  # object stores: bulk delete requests
            for i in range(0, len(paths), 1000):
                chunk = paths[i:i + 1000]
                if bulk is not None and len(chunk) > 1:
                    bulk(chunk)
                    deleted += len(chunk)
                    continue
                for p in chunk:
                    try:
                        store.delete(p)
                    except FileNotFoundError:  # VACUUM LITE: a file the log names may be gone already
                        continue
                    deleted += 1
            removed_dirs = _remove_empty_dirs(store, dir_times, cutoff)
        except BaseException as failure:
            if isinstance(failure, Exception):  # an interrupt stops at once: no FAILED record
                try:
                    scope.committed(_end(table, options, "FAILED", deleted, num_dirs))
                except Exception as exc:  # keep the original error; the FAILED record is best effort
                    log.warning("vacuum of %s: could not commit VACUUM END (FAILED): %s", table.location, exc)
            raise
        end = _end(table, options, "COMPLETED", deleted, num_dirs)
    return VacuumResult(
        files_deleted=paths,
        num_files_to_delete=len(paths),
        size_of_data_to_delete=size,
        num_deleted_files=deleted,
        num_vacuumed_directories=num_dirs,
        num_removed_directories=removed_dirs,
        retention_ms=retention_ms,
        cutoff_ms=cutoff,
        dry_run=False,
        version=snapshot.version,
        start_version=start.version,
        end_version=end,
    )


def _end(table: TableHandle, options: dict[str, Any], status: str, deleted: int, num_dirs: int) -> int:
    from deltalog.txn.transaction import start_transaction

    opts = {k: v for k, v in options.items() if k != "snapshot"}  # commit on top of VACUUM START
    result = start_transaction(table, VacuumEnd(status=status), **opts).commit(
        metrics={"numDeletedFiles": deleted, "numVacuumedDirectories": num_dirs}
    )
    return result.version


# --------------------------------------------------------------------------------------------- lite


def _lite_candidates(snapshot: Snapshot, cutoff: int) -> dict[str, int]:
    """VACUUM LITE's candidates (store path -> size): the files the log says were removed before ``cutoff``
    and after the last completed vacuum's cutoff (that vacuum dealt with older ones), their deletion-vector
    files, and change data files committed before ``cutoff``. Raises when commits since that cutoff have
    left the log (their removes are unknown)."""
    from deltalog.errors import DeltaError
    from deltalog.log.reader import read_commits_each
    from deltalog.log.segment import list_log
    from deltalog.protocol.actions import AddCDCFile

    store, loc, root = snapshot.store, snapshot.table, snapshot.store.root
    commits = [f for f in list_log(store) if f.kind == "commit" and f.version <= snapshot.version]
    each = read_commits_each(store, commits, table=loc) if commits else []

    def stamp(fa: Any, f: Any) -> int:
        info = fa.commit_info
        ts = (info.inCommitTimestamp or info.timestamp) if info is not None else None
        return int(ts) if ts is not None else int(f.modification_time)

    since = _last_vacuum_cutoff(each, stamp, commits)
    truncated = not commits or commits[0].version > 0  # older commits were cleaned up
    # complete when the log starts at version 0, or the last vacuum's cutoff is after the oldest commit kept
    if truncated and (since is None or since < stamp(each[0], commits[0])):
        raise DeltaError(
            "[DELTA_CANNOT_VACUUM_LITE] VACUUM LITE cannot find every file eligible for deletion: commits since the "
            f"last completed vacuum's cutoff are no longer in the log (it starts at version "
            f"{commits[0].version if commits else snapshot.version}); run a full VACUUM", table=loc)
    where = {"table": loc, "version": snapshot.version}
    out: dict[str, int] = {}
    tables = [snapshot.tombstones(), *(fa.removes for fa in each)]
    for removes in tables:
        for row in removes.select([c for c in ("path", "deletionTimestamp", "deletionVector", "size")
                                   if c in removes.column_names]).to_pylist():
            ts = row.get("deletionTimestamp") or 0
            if ts >= cutoff or (since is not None and ts < since):
                continue
            rel = store_relative_path(row["path"], root)
            if rel is not None:
                out[rel] = int(row.get("size") or 0)
            for dv in _dv_paths(row.get("deletionVector"), root, {**where, "file": row["path"]}):
                out.setdefault(dv, 0)
    for fa, f in zip(each, commits, strict=True):
        if stamp(fa, f) >= cutoff or (since is not None and stamp(fa, f) < since):
            continue
        for action in fa.others:
            if isinstance(action, AddCDCFile):
                rel = store_relative_path(action.path, root)
                if rel is not None:
                    out[rel] = int(action.size or 0)
    return out


def _last_vacuum_cutoff(each: list[Any], stamp: Callable[[Any, Any], int], commits: list[Any]) -> int | None:
    """The cutoff of the newest vacuum whose ``VACUUM END`` says ``COMPLETED`` (its start time minus its
    retention), or ``None`` when the log holds none."""
    ended = False
    for fa, f in zip(reversed(each), reversed(commits), strict=True):
        info = fa.commit_info
        op = info.operation if info is not None else None
        params = dict(info.operationParameters or {}) if info is not None else {}
        if op == "VACUUM END":
            ended = str(params.get("status", "")).upper() == "COMPLETED"
        elif op == "VACUUM START" and ended:
            retention = params.get("specifiedRetentionMillis")  # delta-spark writes numbers (0 included)
            if retention is None:
                retention = params.get("defaultRetentionMillis")
            if retention is not None:
                return stamp(fa, f) - int(retention)
            ended = False
    return None


# --------------------------------------------------------------------------------- empty directories


def _local_dir_times(store: LogStore, partition_prefixes: tuple[str, ...]) -> dict[str, int]:
    """Modification times (ms) of the non-hidden directories below a local table root, before deleting."""
    root = store.full_path("")
    if "://" in root or not os.path.isdir(root):
        return {}  # object and in-memory stores have no directories to remove
    out: dict[str, int] = {}
    pending = [(root, "")]
    while pending:
        local_dir, rel_dir = pending.pop()
        try:
            entries = list(os.scandir(local_dir))
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if not entry.is_dir(follow_symlinks=False) or _is_hidden_name(
                    entry.name, is_dir=True, partition_prefixes=partition_prefixes
                ):
                    continue
                out[rel] = entry.stat(follow_symlinks=False).st_mtime_ns // 1_000_000
            except OSError:
                continue
            pending.append((entry.path, rel))
    return out


def _remove_empty_dirs(store: LogStore, dir_times: Mapping[str, int], cutoff: int) -> int:
    """Remove, deepest first, directories that are empty now and had not changed since before the
    cutoff when the vacuum started (a directory a writer has just created is left alone)."""
    removed = 0
    for rel in sorted(dir_times, key=lambda d: d.count("/"), reverse=True):
        if dir_times[rel] >= cutoff:
            continue
        try:
            os.rmdir(store.full_path(rel))  # fails unless empty
        except OSError:
            continue
        removed += 1
    return removed
