"""``CLONE``: a new table holding a source table's rows, protocol and metadata at one version.

* **Shallow**: only a log is written. Every ``add`` of the source version is copied with its path
  turned into an absolute URI of the source's file (the protocol allows absolute paths in
  ``add.path``), keeping partition values, stats, tags and deletion vectors; a deletion vector stored
  relative to the source (``storageType 'u'``) becomes an absolute one (``'p'``). Later writes to the
  clone put their new files under the clone's own root.
* **Deep**: the data files (and deletion-vector files) are copied byte for byte into the target, in
  parallel, under the same relative paths when those are free; then the log is written. Stats stay
  valid since the bytes do not change. If a copy or the commit fails, the copies are deleted: nothing
  half-committed remains.

Protocol and metadata (schema, partitioning, configuration including column mapping, description)
are the source's at that version; ``properties`` override configuration entries. The clone gets a new
table id (a replaced target keeps its own), in-commit-timestamp enablement markers of the source are
dropped (they name source versions), and domain metadata is carried over. The commit is a ``CLONE``
with delta-spark's parameters (``source``, ``sourceVersion``, ``isShallow``) and metrics
(``sourceTableSize``, ``sourceNumOfFiles``, ``numRemovedFiles``, ``numCopiedFiles``, ``removedFilesSize``,
``copiedFilesSize``). A target that already holds a table, or a non-empty directory, is refused unless
``replace=True``; replacing removes every live file of the target table in the same commit.

VACUUM and shallow clones: :mod:`deltalog.commands.vacuum` only ever deletes files under the table
it runs on, so vacuuming a shallow clone never touches the source's files. Vacuuming the *source*,
however, deletes the files its own retained versions no longer need -- including files a shallow clone
still points to, which breaks the clone (as in Delta). Deep clones are independent of the source.

Example:
    >>> res = clone_table("/data/events", "/data/events_dev", shallow=True)        # doctest: +SKIP
    >>> res.version, res.source_version, res.num_copied_files                      # doctest: +SKIP
    (0, 12, 0)
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from deltalog.errors import DeltaError, InvalidArgumentError, InvalidArgumentTypeError, StorageError, TableNotFoundError
from deltalog.log.timestamps import TimestampLike
from deltalog.protocol.deletion_vectors import DeletionVectorDescriptor, local_path, z85_encode
from deltalog.txn.operations import Clone

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.storage import LogStore
    from deltalog.txn.commit import CommitResult
    from deltalog.txn.handle import TableHandle

__all__ = ["CloneResult", "clone_table"]

#: Properties naming versions of the source's history: not carried over.
_DROPPED = ("delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp")
_URI_SAFE = "/=-_.~!$&'()*+,;:@"


@dataclass(frozen=True)
class CloneResult:
    """What :func:`clone_table` committed, with delta-spark's metrics.

    Example:
        >>> CloneResult(version=0, source="/s", source_version=3, is_shallow=True, source_table_size=10,
        ...             source_num_files=1).num_copied_files
        0
    """

    version: int
    source: str
    source_version: int
    is_shallow: bool
    source_table_size: int
    source_num_files: int
    num_removed_files: int = 0
    removed_files_size: int = 0
    num_copied_files: int = 0
    copied_files_size: int = 0
    commit: CommitResult | None = field(default=None, repr=False)

    def metrics(self) -> dict[str, int]:
        """``commitInfo.operationMetrics`` of the clone (as numbers).

        Example:
            >>> CloneResult(0, "/s", 3, True, 10, 1).metrics()["sourceNumOfFiles"]
            1
        """
        return {
            "sourceTableSize": self.source_table_size,
            "sourceNumOfFiles": self.source_num_files,
            "numRemovedFiles": self.num_removed_files,
            "numCopiedFiles": self.num_copied_files,
            "removedFilesSize": self.removed_files_size,
            "copiedFilesSize": self.copied_files_size,
        }


# ------------------------------------------------------------------------------------------- paths


def _root_uri(store: LogStore) -> str:
    """The table root as a URI prefix ending in ``/`` (``file:///...`` for local tables)."""
    root = store.full_path("")
    if "://" in root:
        return root.rstrip("/") + "/"
    return "file://" + quote(os.path.abspath(root).rstrip("/") + "/", safe=_URI_SAFE)


def _absolute_uri(log_path: str, root_uri: str) -> str:
    """A log path of the source as an absolute URI (relative paths are already URL-encoded)."""
    if log_path.startswith("/"):
        return "file://" + quote(unquote(log_path), safe=_URI_SAFE)
    if "://" in log_path or log_path.startswith("file:"):
        return log_path
    return root_uri + log_path


def _local(log_path: str, snapshot: Snapshot) -> str:
    """Where a source data file is (a local path, or a URI for other stores)."""
    from deltalog.data.read import resolve_path

    return resolve_path(snapshot, log_path)


def _nested(a: str, b: str) -> bool:
    a = (a if "://" in a else os.path.abspath(a)).rstrip("/") + "/"
    b = (b if "://" in b else os.path.abspath(b)).rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a)


# -------------------------------------------------------------------------------------------- copy


class _Copier:
    """Deep-clone file copies: plans target names, copies in parallel, undoes on failure."""

    def __init__(self, source: Snapshot, target: LogStore, where: str, max_workers: int) -> None:
        self.source = source
        self.target = target
        self.where = where
        self.max_workers = max_workers
        self.jobs: list[tuple[str, str]] = []  # (source file, target store path)
        self.taken: set[str] = set()
        self.copied: list[str] = []
        self.dv_targets: dict[str, dict[str, Any]] = {}

    def _free(self, rel: str) -> bool:
        return rel not in self.taken and not self.target.exists(rel)

    def data_file(self, log_path: str) -> str:
        """Plan the copy of one data file; returns its ``add.path`` in the target."""
        relative = not (log_path.startswith("/") or "://" in log_path or log_path.startswith("file:"))
        rel = posixpath.normpath(unquote(log_path)) if relative else posixpath.basename(local_path(log_path))
        if rel.startswith("../") or not self._free(rel):
            directory, name = posixpath.split(rel if not rel.startswith("../") else posixpath.basename(rel))
            rel = posixpath.join(directory, f"clone-{uuid.uuid4().hex[:12]}-{name}")
        self.taken.add(rel)
        self.jobs.append((_local(log_path, self.source), rel))
        return quote(rel, safe=_URI_SAFE)

    def deletion_vector(self, dv: Mapping[str, Any], data_path: str) -> dict[str, Any]:
        """Plan the copy of a DV file (once per file); returns the descriptor for the target."""
        descriptor = DeletionVectorDescriptor.from_dict(
            dict(dv), where={"table": self.source.table, "version": self.source.version, "file": data_path}
        )
        if descriptor.is_inline:
            return dict(dv)
        src = descriptor.absolute_path(self.source.store.full_path(""))
        assert src is not None
        planned = self.dv_targets.get(src)
        if planned is None:
            rel = descriptor.relative_path() if descriptor.storageType == "u" else None
            if rel is not None and self._free(rel):
                planned = {"storageType": "u", "pathOrInlineDv": descriptor.pathOrInlineDv}
            else:
                new = uuid.uuid4()
                rel = f"deletion_vector_{new}.bin"
                planned = {"storageType": "u", "pathOrInlineDv": z85_encode(new.bytes)}
            self.taken.add(rel)
            self.jobs.append((src, rel))
            self.dv_targets[src] = planned
        return {**dict(dv), **planned}

    def _copy_one(self, job: tuple[str, str]) -> None:
        src, rel = job
        if self.target.exists(rel):
            raise FileExistsError(errno.EEXIST, "the clone target already has this file", rel)
        out = self.target.open_output(rel)
        self.copied.append(rel)
        try:
            with self._open_source(src) as fh:
                while chunk := fh.read(_COPY_CHUNK):
                    out.write(bytes(chunk))
            out.close()
        except BaseException:
            out.abort()
            raise

    def _open_source(self, src: str) -> Any:
        """A readable binary file for a source file: through the source table's store when it lies below
        that table's root (object stores included), else the local file or a pyarrow-known URI."""
        root = self.source.store.full_path("").rstrip("/") + "/"
        if src.startswith(root):
            opened = self.source.store.open_input(src[len(root):])
            return open(opened, "rb") if isinstance(opened, str) else contextlib.closing(opened)
        return open(src, "rb") if "://" not in src else _open_uri(src)

    def run(self) -> None:
        """Copy every planned file (several at a time); on failure delete the copies and raise."""
        try:
            with ThreadPoolExecutor(max_workers=max(1, self.max_workers)) as pool:
                for _ in pool.map(self._copy_one, self.jobs):
                    pass
        except StorageError:
            self.undo()
            raise  # named already; the transaction adds that nothing was committed
        except (OSError, DeltaError) as exc:
            self.undo()
            raise DeltaError(f"deep clone could not copy a file, nothing was committed: {exc}",
                             table=self.where) from None

    def undo(self) -> None:
        """Delete the files copied so far (best effort)."""
        for rel in self.copied:
            with contextlib.suppress(OSError, DeltaError):
                self.target.delete(rel)
        self.copied = []


_COPY_CHUNK = 8 * 1024 * 1024


def _open_uri(uri: str) -> Any:
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(uri)
    return fs.open_input_stream(path)


# ------------------------------------------------------------------------------------------- clone


def _source_snapshot(source: TableHandle, version: int | None, timestamp: TimestampLike | None) -> Snapshot:
    if version is not None and timestamp is not None:
        raise InvalidArgumentError("clone takes a version or a timestamp, not both", table=source.location)
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidArgumentError(f"clone version must be an int, got {version!r}", table=source.location)
        return source.snapshot(version)
    if timestamp is not None:
        return source.snapshot(timestamp=timestamp)
    return source.snapshot()


def _target_state(target: TableHandle, replace_target: bool) -> Snapshot | None:
    """The target's current snapshot when replacing a table; refuses an occupied target otherwise."""
    try:
        snapshot = target.snapshot()
    except TableNotFoundError:
        snapshot = None
    if snapshot is not None:
        if not replace_target:
            raise InvalidArgumentError(
                f"[DELTA_TABLE_ALREADY_EXISTS] the clone target already holds a Delta table (version "
                f"{snapshot.version}); pass replace=True to replace it",
                table=target.location,
            )
        return snapshot
    store = target.store
    if not replace_target and any(True for _ in store.list_dir("", recursive=True)):
        raise InvalidArgumentError(
            "the clone target location is not empty (and holds no Delta table); pass replace=True to clone "
            "into it anyway, or pick an empty location",
            table=target.location,
        )
    return None


def clone_table(
    source: TableHandle,
    target: TableHandle,
    *,
    shallow: bool = False,
    version: int | None = None,
    timestamp: TimestampLike | None = None,
    replace: bool = False,
    properties: Mapping[str, str] | None = None,
    clock: Callable[[], int] | None = None,
    max_workers: int = 8,
) -> CloneResult:
    """Clone ``source`` (latest, or at ``version`` / ``timestamp``) into ``target`` (see the module
    docstring); returns the metrics. ``max_workers`` deep-clone copies run at a time.

    Example:
        >>> clone_table(deltalog.Table("/data/events"), deltalog.Table("/backup/events"),
        ...             version=12).num_copied_files                                 # doctest: +SKIP
        48
    """
    from deltalog.commands.restore import merge_protocols
    from deltalog.txn.transaction import start_transaction

    for name, given in (("source", source), ("target", target)):
        if isinstance(given, (str, os.PathLike)):
            raise InvalidArgumentTypeError(
                f"clone {name} must be a table (deltalog.Table({os.fspath(given)!r})), not a path; "
                "Table.clone(target) takes a path for the target"
            )
    src_table, dst_table = source, target
    loc = dst_table.location
    src_root, dst_root = src_table.store.full_path(""), dst_table.store.full_path("")
    if _nested(src_root, dst_root):
        raise InvalidArgumentError(
            f"clone target {loc} and source {src_table.location} are the same location or one lies inside "
            "the other (a VACUUM of one would delete the other's files); pick a separate location",
            table=loc,
        )
    if properties is not None and not isinstance(properties, Mapping):
        raise InvalidArgumentError(f"clone properties must be a mapping, got {type(properties).__name__}", table=loc)
    snap = _source_snapshot(src_table, version, timestamp)
    current = _target_state(dst_table, replace)
    rows = snap.add_files().to_pylist()

    now = clock() if clock is not None else time.time_ns() // 1_000_000
    conf = {k: v for k, v in snap.metadata.configuration.items() if k not in _DROPPED}
    conf.update({str(k): str(v) for k, v in (properties or {}).items()})
    metadata = _clone_metadata(snap, conf, current, now)
    protocol = snap.protocol if current is None else merge_protocols(current.protocol, snap.protocol)

    from deltalog.commands.restore import add_from_row

    copier = None if shallow else _Copier(snap, dst_table.store, loc, max_workers)
    root_uri = _root_uri(src_table.store)
    adds = []
    for row in rows:
        add = add_from_row(row)
        dv = add.deletionVector
        if copier is not None:
            new_dv = copier.deletion_vector(dv, add.path) if dv else None
            add = _moved(add, copier.data_file(add.path), new_dv)
        else:
            add = _moved(add, _absolute_uri(add.path, root_uri), _absolute_dv(dv, snap, add.path))
        adds.append(add)

    op = Clone(source=f"delta.`{src_table.location}`", source_version=snap.version)
    options: dict[str, Any] = {"snapshot": current}
    if clock is not None:
        options["clock"] = clock
    txn = start_transaction(dst_table, op, **options)
    if current is None and txn.snapshot is not None:
        raise InvalidArgumentError("a Delta table appeared at the clone target meanwhile", table=loc)
    if current is not None:
        txn.read_whole_table()
        removed = current.add_files().to_pylist()
        txn.remove_files(removed, data_change=True)
    else:
        removed = []
    if protocol != (current.protocol if current is not None else None):
        txn.update_protocol(protocol)
    txn.update_metadata(metadata)
    for domain, config in snap.domains.items():
        txn.set_domain_metadata(domain, config)
    txn.add_actions(adds)

    size = sum(int(r.get("size") or 0) for r in rows)
    result = CloneResult(
        version=-1,
        source=src_table.location,
        source_version=snap.version,
        is_shallow=shallow,
        source_table_size=size,
        source_num_files=len(rows),
        num_removed_files=len(removed),
        removed_files_size=sum(int(r.get("size") or 0) for r in removed),
        num_copied_files=0 if shallow else len(rows),
        copied_files_size=0 if shallow else size,
    )
    with txn.discard_unless_committed(copier.undo if copier is not None else lambda: None):
        if copier is not None:
            copier.run()
        committed = txn.commit(metrics=result.metrics())
    return _with_commit(result, committed)


def _with_commit(result: CloneResult, committed: CommitResult) -> CloneResult:
    return _replace(result, version=committed.version, commit=committed)


def _clone_metadata(snap: Snapshot, conf: dict[str, str], current: Snapshot | None, now: int) -> Any:
    """The clone's metadata: the source's, with ``conf``, a new id (or the replaced target's) and now as
    creation time."""
    table_id = current.metadata.id if current is not None else str(uuid.uuid4())
    return _replace(snap.metadata, id=table_id, configuration=conf, createdTime=now)


def _moved(add: Any, path: str, dv: Mapping[str, Any] | None) -> Any:
    """``add`` pointing at ``path`` with deletion vector ``dv``, as a new data change."""
    return _replace(add, path=path, deletionVector=dict(dv) if dv else None, dataChange=True)


def _absolute_dv(dv: Mapping[str, Any] | None, snap: Snapshot, data_path: str) -> dict[str, Any] | None:
    """A shallow clone's DV descriptor: a relative ('u') one becomes absolute ('p', a URI)."""
    if not dv:
        return None
    descriptor = DeletionVectorDescriptor.from_dict(
        dict(dv), where={"table": snap.table, "version": snap.version, "file": data_path}
    )
    if descriptor.storageType != "u":
        return dict(dv)
    rel = descriptor.relative_path()
    assert rel is not None
    return {**dict(dv), "storageType": "p", "pathOrInlineDv": _root_uri(snap.store) + quote(rel, safe=_URI_SAFE)}
