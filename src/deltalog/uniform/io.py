"""Iceberg files through the table's own store: a pyiceberg ``FileIO`` over a :class:`LogStore`, and the
``metadata/`` layout (``vN.metadata.json``, ``version-hint.text``) of a table without a catalog.

Every file is made in memory and then put whole: manifests and manifest lists under fresh names, the
metadata JSON put-if-absent (two writers racing for version N: exactly one wins), the version hint
overwritten atomically. So the same code runs on local disk, S3, Azure and GCS, and a reader never sees a
partial file.

Example:
    >>> from deltalog.storage import store_for
    >>> store = store_for("memory://uniform-io-doc")
    >>> current_version(store) is None
    True
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile, OutputStream
from pyiceberg.serializers import FromByteStream
from pyiceberg.table.metadata import TableMetadata

from deltalog.storage import LogStore
from deltalog.storage.local import LocalLogStore, Staged

__all__ = [
    "HINT",
    "METADATA_DIR",
    "StoreFileIO",
    "current_version",
    "metadata_path",
    "publish_metadata",
    "read_metadata",
    "write_hint",
]

METADATA_DIR = "metadata"
HINT = f"{METADATA_DIR}/version-hint.text"
_NAME = re.compile(r"v(\d+)\.metadata\.json")


def metadata_path(version: int) -> str:
    """The store path of Iceberg metadata version ``version``.

    Example:
        >>> metadata_path(3)
        'metadata/v3.metadata.json'
    """
    return f"{METADATA_DIR}/v{version}.metadata.json"


class _Output(io.BytesIO):
    """Collects a file's bytes; ``close`` puts them in the store (put-if-absent unless ``overwrite``)."""

    def __init__(self, store: LogStore, path: str, overwrite: bool, fio: StoreFileIO | None = None) -> None:
        super().__init__()
        self._store, self._path, self._overwrite = store, path, overwrite
        self._fio = fio
        self._done = False

    def close(self) -> None:
        if not self._done and not self.closed:
            self._done = True
            data = self.getvalue()
            super().close()
            if self._fio is not None and self._fio.deferring:
                self._fio.defer(self._path, data)
                return
            self._store.write(self._path, data, overwrite=self._overwrite)
            return
        super().close()

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is not None:  # failed while writing: put nothing
            self._done = True
            super().close()
            return
        self.close()


class _StoreInput(InputFile):
    def __init__(self, fio: StoreFileIO, location: str) -> None:
        super().__init__(location)
        self._fio = fio

    def __len__(self) -> int:
        return self._fio.store.stat(self._fio.relative(self.location)).size

    def exists(self) -> bool:
        return self._fio.store.exists(self._fio.relative(self.location))

    def open(self, seekable: bool = True) -> InputStream:
        data = self._fio.store.read(self._fio.relative(self.location))
        stream: InputStream = io.BytesIO(data)
        return stream


class _StoreOutput(OutputFile):
    def __init__(self, fio: StoreFileIO, location: str) -> None:
        super().__init__(location)
        self._fio = fio
        self.written = 0

    def __len__(self) -> int:
        path = self._fio.relative(self.location)
        pending = self._fio.pending.get(path)
        return len(pending) if pending is not None else self._fio.store.stat(path).size

    def exists(self) -> bool:
        return self._fio.store.exists(self._fio.relative(self.location))

    def to_input_file(self) -> InputFile:
        return _StoreInput(self._fio, self.location)

    def create(self, overwrite: bool = False) -> OutputStream:
        out: OutputStream = _Output(self._fio.store, self._fio.relative(self.location), overwrite, self._fio)
        return out


class StoreFileIO(FileIO):
    """pyiceberg's ``FileIO`` for the files below one table root, read and written through its store.

    Locations are absolute (``store.full_path``); a location outside the root raises ``ValueError``.

    Example:
        >>> from deltalog.storage import store_for
        >>> fio = StoreFileIO(store_for("memory://fio-doc"))
        >>> fio.relative(fio.location("metadata/v1.metadata.json"))
        'metadata/v1.metadata.json'
    """

    def __init__(self, store: LogStore) -> None:
        super().__init__()
        self.store = store
        self.root = store.full_path("").rstrip("/")
        #: While :attr:`deferring`, finished files wait here (store path -> bytes) for :meth:`flush`.
        self.pending: dict[str, bytes] = {}
        self.deferring = False
        #: On a local disk the deferred files are written at once in the background (not yet named by
        #: anything, so not yet needed durable): :meth:`flush` / :func:`publish_metadata` wait for these.
        self.started: dict[str, Future[None]] = {}

    def defer(self, path: str, data: bytes) -> None:
        """Keep a finished file for :meth:`flush` (files under fresh names: put whole, never overwritten); on
        a local disk its write starts now, so its fsync overlaps the work that builds the files naming it."""
        self.pending[path] = data
        if isinstance(self.store, LocalLogStore):
            self.started[path] = _writers().submit(self.store.write_fresh, path, data)

    def _take(self) -> tuple[list[str], list[Future[None]], list[tuple[str, bytes]]]:
        """The deferred files' paths, the writes of them already started and the files not started yet, handed
        over (and forgotten here)."""
        items, self.pending = list(self.pending.items()), {}
        started, self.started = self.started, {}
        return ([path for path, _ in items], [started[path] for path, _ in items if path in started],
                [(path, data) for path, data in items if path not in started])

    def flush(self) -> None:
        """Put every deferred file, in parallel (each is durable before this returns); an error is raised once
        every put has finished or failed.

        They have fresh names that nothing names yet, so they need not be published atomically: on a local
        disk each is created in place and fsynced, and one fsync of ``metadata/`` then makes their entries
        durable (instead of a temporary file, a link and a directory fsync each); on an object store each is
        one PUT.

        Example:
            >>> fio.flush()                                                       # doctest: +SKIP
        """
        paths, started, items = self._take()
        store = self.store
        if isinstance(store, LocalLogStore):
            local = store
            _parallel([functools.partial(local.write_fresh, path, data) for path, data in items])
            _wait(started)
            if paths:  # one directory fsync for them all, before a metadata JSON names them
                local.sync_dirs(paths)
            return
        _wait(started)
        _parallel([functools.partial(store.write, path, data, overwrite=False) for path, data in items])

    def location(self, path: str) -> str:
        """The absolute location of a store path."""
        return self.store.full_path(path)

    def relative(self, location: str) -> str:
        """The store path of an absolute location below the root."""
        prefix = self.root + "/"
        if location.startswith(prefix):
            return location[len(prefix):]
        raise ValueError(f"{location} is not below the table root {self.root}")

    def new_input(self, location: str) -> InputFile:
        return _StoreInput(self, location)

    def new_output(self, location: str) -> OutputFile:
        return _StoreOutput(self, location)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        loc = location if isinstance(location, str) else location.location
        with contextlib.suppress(FileNotFoundError):
            self.store.delete(self.relative(loc))


_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _writers() -> ThreadPoolExecutor:
    """The threads that put a commit's manifests in parallel: made once per process (starting threads on
    every commit cost more than the small local writes themselves), again in a forked child (whose copy of
    the parent's pool has no threads)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=8, thread_name_prefix="deltalog-iceberg"))
        return _pool[1]


def _parallel(calls: Sequence[Callable[[], object]]) -> None:
    """Run ``calls`` at once (the first in this thread, the others in the pool); when some fail, the first
    failure is raised once every call has finished."""
    _, errors = _parallel_settled(calls)
    if errors:
        raise errors[0]


def _wait(futures: Sequence[Future[None]]) -> None:
    """Wait for every one of ``futures``; the first failure is raised once all have finished."""
    error: BaseException | None = None
    for f in futures:
        try:
            f.result()
        except BaseException as exc:
            error = error or exc
    if error is not None:
        raise error


def _parallel_settled(calls: Sequence[Callable[[], Any]]) -> tuple[list[Any], list[BaseException]]:
    """Run ``calls`` at once; every call's result (None for a failed one) and the failures."""
    futures = [_writers().submit(c) for c in calls[1:]] if len(calls) > 1 else []
    results: list[Any] = []
    errors: list[BaseException] = []
    for k, call in enumerate(calls):
        try:
            results.append(call() if k == 0 else futures[k - 1].result())
        except BaseException as exc:
            results.append(None)
            errors.append(exc)
    return results, errors


def publish_metadata(fio: StoreFileIO, version: int, data: bytes) -> bool:
    """Put the files deferred in ``fio`` (a commit's manifests and manifest list), then Iceberg metadata version
    ``version`` (put-if-absent), then point the version hint at it. Returns False when another writer put
    that version first (nothing of ours names the manifests then).

    Order is what keeps readers safe: a file is durable before one that names it can be seen. On an object
    store that is one PUT after the other (the manifests in parallel). On a local disk the content of all of
    them is written and fsynced at once, in parallel (the manifests in place under their fresh names, each as
    soon as it was made, see :meth:`StoreFileIO.defer`; the metadata JSON and the hint as temporary files),
    and then three steps publish them in order: one fsync of
    ``metadata/`` for the manifests' entries; the metadata JSON's link and an fsync of ``metadata/``; the
    hint's rename, whose entry is left to the next directory fsync -- after a crash the hint may name the
    version before, which readers open as they would have a moment earlier (deltalog looks past it).

    Example:
        >>> publish_metadata(fio, 8, md.model_dump_json().encode())              # doctest: +SKIP
        True
    """
    store = fio.store
    if not isinstance(store, LocalLogStore):
        fio.flush()
        try:
            store.write(metadata_path(version), data, overwrite=False)
        except FileExistsError:
            return False
        write_hint(store, version)
        return True
    local = store
    paths, started, items = fio._take()
    calls: list[Callable[[], Staged | None]] = [
        lambda: local.stage(metadata_path(version), data),
        lambda: local.stage(HINT, str(version).encode("ascii")),
        *[functools.partial(local.write_fresh, path, body) for path, body in items],
    ]
    results, errors = _parallel_settled(calls)
    staged_md, staged_hint = results[0], results[1]
    try:
        try:
            _wait(started)
        except BaseException as exc:
            errors.append(exc)
        if errors:
            raise errors[0]
        assert staged_md is not None and staged_hint is not None
        if paths:
            local.sync_dirs(paths)
        try:
            local.publish(staged_md, overwrite=False)
        except FileExistsError:
            return False
        finally:
            staged_md = None
        current = _hint(store)
        if current is None or current <= version or not store.exists(metadata_path(current)):
            local.publish(staged_hint, overwrite=True, sync_dir=False)
            staged_hint = None
        return True
    finally:
        for left in (staged_md, staged_hint):
            if left is not None:
                local.discard(left)


def _hint(store: LogStore) -> int | None:
    try:
        text = store.read(HINT).decode("utf-8").strip()
    except FileNotFoundError:
        return None
    if text.isdigit():
        return int(text)
    m = _NAME.fullmatch(text)
    return int(m.group(1)) if m else None


def _listed(store: LogStore) -> int | None:
    best = None
    for info in store.list_dir(METADATA_DIR):
        m = _NAME.fullmatch(info.name)
        if m:
            best = max(best or 0, int(m.group(1)))
    return best


def current_version(store: LogStore) -> int | None:
    """The newest Iceberg metadata version of the table (None when there is none): the version hint, then
    any later ``vN.metadata.json`` (a writer that stopped before moving the hint); without a readable hint,
    the highest version listed.

    Example:
        >>> current_version(store)                                              # doctest: +SKIP
        7
    """
    n = _hint(store)
    if n is None or not store.exists(metadata_path(n)):
        return _listed(store)
    while store.exists(metadata_path(n + 1)):
        n += 1
    return n


def read_metadata(store: LogStore, version: int) -> TableMetadata:
    """Iceberg table metadata version ``version`` of the table.

    Example:
        >>> read_metadata(store, 7).current_snapshot_id                         # doctest: +SKIP
        5270357101873372357
    """
    return FromByteStream.table_metadata(io.BytesIO(store.read(metadata_path(version))))


def write_hint(store: LogStore, version: int) -> None:
    """Point ``version-hint.text`` at ``version`` (the number alone, no newline), unless a newer version is
    already there.

    Example:
        >>> write_hint(store, 8)                                                # doctest: +SKIP
    """
    current = _hint(store)
    if current is not None and current > version and store.exists(metadata_path(current)):
        return
    store.write(HINT, str(version).encode("ascii"), overwrite=True)
