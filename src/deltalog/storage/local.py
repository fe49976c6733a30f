"""A :class:`~deltalog.storage.log_store.LogStore` on the local file system (or any POSIX mount).

Put-if-absent writes the data to a hidden temporary file in the target directory, flushes it to disk
and then publishes it with ``os.link(tmp, final)``: creating a hard link is atomic and fails with
``EEXIST`` when the target exists, so exactly one of any number of racing threads or processes wins
and the winner's file is complete the instant it becomes visible. Overwrite is a temporary file plus
``os.replace`` (atomic rename).

Example:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     store = LocalLogStore(tmp)
    ...     store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
    ...     [f.path for f in store.list_from("_delta_log/")]
    ['_delta_log/00000000000000000000.json']
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import pyarrow as pa

from deltalog.errors import InvalidArgumentError
from deltalog.storage.failures import storage_error
from deltalog.storage.log_store import FileInfo, OutputFile, is_temp_name, name_key, split_path

__all__ = ["OS_OPS", "FileOps", "LocalLogStore", "Staged"]

# errno values with which link(2) reports that the file system cannot make hard links at all.
_NO_LINK_ERRNOS = frozenset(
    {errno.EPERM, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP), errno.ENOSYS, errno.EXDEV}
)
# Windows: ERROR_INVALID_FUNCTION (FAT volumes), ERROR_NOT_SUPPORTED.
_NO_LINK_WINERRORS = frozenset({1, 50})


class FileOps:
    """Every file-system call by which the local store *changes* the disk, one method per step.

    The store never mutates files any other way, so this class is the seam where tests inject faults
    (a crash, an interrupt or a full disk before or after any step): they hand a subclass to
    :class:`LocalLogStore` or replace :data:`OS_OPS`. Each method may raise :class:`OSError`.

    Example:
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> OS_OPS.write_new(os.path.join(d, "a"), b"1"); sorted(os.listdir(d))
        ['a']
    """

    def makedirs(self, path: str) -> None:
        """Create ``path`` and its parents (existing ones are fine)."""
        os.makedirs(path, exist_ok=True)

    def write_new(self, path: str, data: bytes) -> None:
        """Create ``path`` exclusively (``FileExistsError`` if present), write ``data`` and fsync it."""
        with open(path, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def link(self, src: str, dst: str) -> None:
        """Hard-link ``src`` to ``dst``; ``FileExistsError`` if ``dst`` exists (the atomic publish)."""
        os.link(src, dst)

    def replace(self, src: str, dst: str) -> None:
        """Rename ``src`` over ``dst`` atomically."""
        os.replace(src, dst)

    def unlink(self, path: str) -> None:
        """Remove the file ``path``."""
        os.unlink(path)

    def fsync_dir(self, path: str) -> None:
        """Make the entries of directory ``path`` durable."""
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def open_output(self, path: str) -> Any:
        """A new binary file at ``path`` for streaming writes (``write``, ``tell``, ``close``)."""
        return pa.OSFile(path, "wb")

    def fsync_file(self, path: str) -> None:
        """Flush the content of the closed file ``path`` to disk."""
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: The :class:`FileOps` every :class:`LocalLogStore` uses unless it is given its own.
OS_OPS = FileOps()


class _LocalOutput:
    """A data file being written in place; ``close`` makes it durable (fsync) before anyone commits it."""

    def __init__(self, store: LocalLogStore, rel: str, full: str) -> None:
        self._store, self._rel, self._full = store, rel, full
        self._file = store._ops.open_output(full)
        self.closed = False

    def write(self, data: Any) -> int:
        with self._store._named(self._rel, "writing"):
            return int(self._file.write(data))

    def tell(self) -> int:
        return int(self._file.tell())

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self.closed:
            return
        with self._store._named(self._rel, "writing"):
            self._file.close()
            self.closed = True
            self._store._ops.fsync_file(self._full)

    def abort(self) -> None:
        self.closed = True
        with contextlib.suppress(Exception):
            self._file.close()
        with contextlib.suppress(Exception):
            self._store._ops.unlink(self._full)


@dataclass(frozen=True)
class Staged:
    """A file written by :meth:`LocalLogStore.stage` and not yet published: its store path, the temporary file
    that holds its fsynced content, and the content."""

    path: str
    tmp: str
    data: bytes


class LocalLogStore:
    """Local-file-system store rooted at ``root``: a path (``/data/t``, relative paths are made
    absolute) or a ``file:`` URI (``file:/data/t``, ``file:///data/t``, ``file://localhost/data/t``,
    percent-encoded). The root need not exist yet; writes create it.

    Put-if-absent uses a temporary file plus ``os.link`` (see the module docs). Only if the file system
    cannot make hard links (FAT, some network and FUSE mounts) does it fall back to an exclusive create
    (``open(path, "xb")``), write and fsync. The fallback still lets exactly one racer win, but with a
    *weaker guarantee*: a concurrent reader may see the winner's file while it is still being written
    (empty or truncated), and a crash mid-write can leave a partial file behind.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     store = LocalLogStore(tmp)
        ...     store.write("a/b.bin", b"xyz", overwrite=False)
        ...     store.read("a/b.bin"), store.stat("a/b.bin").size
        (b'xyz', 3)
    """

    def __init__(self, root: str | os.PathLike[str], *, ops: FileOps | None = None) -> None:
        self._root = _local_root(os.fspath(root))
        self._hard_links = hasattr(os, "link")
        self._own_ops = ops

    @property
    def _ops(self) -> FileOps:
        return self._own_ops if self._own_ops is not None else OS_OPS

    @contextlib.contextmanager
    def _named(self, path: str, doing: str) -> Iterator[None]:
        """Re-raise OS failures other than the contract's as named storage errors about ``path``."""
        try:
            yield
        except OSError as exc:
            named = storage_error(exc, table=self._root, path=path, doing=doing)
            if named is exc:
                raise
            raise named from exc

    @property
    def root(self) -> str:
        """The absolute local directory of the table.

        Example:
            >>> LocalLogStore("file:///data/my%20table").root
            '/data/my table'
        """
        return self._root

    def __repr__(self) -> str:
        return f"LocalLogStore({self._root!r})"

    # ------------------------------------------------------------------------------------------ paths

    def _abs(self, path: str, *, allow_root: bool = False) -> str:
        parts = split_path(path, allow_root=allow_root)
        if os.sep != "/" or os.altsep:
            for part in parts:
                if os.sep in part or (os.altsep and os.altsep in part) or ":" in part:
                    raise InvalidArgumentError(f"store path segment {part!r} is not valid on this platform")
        return os.path.join(self._root, *parts)

    def full_path(self, path: str) -> str:
        """Absolute local path of ``path`` (``""`` is the root); see :meth:`LogStore.full_path`.

        Example:
            >>> LocalLogStore("/data/t").full_path("_delta_log/00000000000000000000.json")
            '/data/t/_delta_log/00000000000000000000.json'
        """
        return self._abs(path, allow_root=True)

    # ---------------------------------------------------------------------------------------- listing

    def list_from(self, prefix: str) -> Iterator[FileInfo]:
        """Files of the prefix's directory with name >= the prefix's last component, sorted by name.

        See :meth:`LogStore.list_from`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     store = LocalLogStore(tmp)
            ...     for n in ("1", "2", "3"):
            ...         store.write(f"d/{n}", b"", overwrite=False)
            ...     [f.path for f in store.list_from("d/2")]
            ['d/2', 'd/3']
        """
        directory, _, start = prefix.rpartition("/")
        if "\x00" in start:
            raise InvalidArgumentError(f"store path must not contain NUL, got {prefix!r}")
        parts = split_path(directory, allow_root=True)
        if start.isascii():  # then comparing names as strings is comparing them as bytes: no per-name call
            return iter(self._scan(parts, recursive=False, at_least=start))
        start_key = name_key(start)
        return iter(self._scan(parts, recursive=False, keep=lambda name: name_key(name) >= start_key))

    def list_dir(self, directory: str, *, recursive: bool = False) -> Iterator[FileInfo]:
        """Files in (or with ``recursive``, below) ``directory``, sorted by path.

        See :meth:`LogStore.list_dir`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     store = LocalLogStore(tmp)
            ...     store.write("p=1/a", b"", overwrite=False)
            ...     [f.path for f in store.list_dir("", recursive=True)]
            ['p=1/a']
        """
        return iter(self._scan(split_path(directory, allow_root=True), recursive=recursive))

    def _scan(
        self, dir_parts: list[str], *, recursive: bool, keep: Callable[[str], bool] | None = None,
        at_least: str = "",
    ) -> list[FileInfo]:
        """Files below ``dir_parts`` sorted by path; ``keep`` and ``at_least`` (an ASCII name: names below it
        are skipped) filter by name *before* the ``stat`` call, which is most of a listing's cost in a long
        ``_delta_log``."""
        out: list[FileInfo] = []
        pending = [(os.path.join(self._root, *dir_parts), "/".join(dir_parts))]
        while pending:
            local_dir, rel_dir = pending.pop()
            try:
                entries = os.scandir(local_dir)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise storage_error(exc, table=self._root, path=rel_dir or ".", doing="listing") from exc
            with entries:
                for entry in entries:
                    if entry.name < at_least:
                        continue
                    rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                    try:
                        if entry.is_file():
                            if is_temp_name(entry.name) or (keep is not None and not keep(entry.name)):
                                continue
                            st = entry.stat()
                            out.append(FileInfo(rel, st.st_size, st.st_mtime_ns // 1_000_000))
                        elif recursive and entry.is_dir(follow_symlinks=False):
                            pending.append((entry.path, rel))
                    except FileNotFoundError:  # deleted while we were listing
                        continue
        out.sort(key=lambda f: name_key(f.path))
        return out

    # ---------------------------------------------------------------------------------------- reading

    def read(self, path: str) -> bytes:
        """The whole file; :class:`FileNotFoundError` if absent. See :meth:`LogStore.read`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     LocalLogStore(tmp).read("nope")
            Traceback (most recent call last):
            ...
            FileNotFoundError: ...
        """
        local = self._abs(path)
        with self._named(path, "reading"), open(local, "rb") as f:
            return f.read()

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``. See :meth:`LogStore.read_range`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     store = LocalLogStore(tmp)
            ...     store.write("x", b"abcdef", overwrite=False)
            ...     store.read_range("x", 1, 2)
            b'bc'
        """
        _check_range(offset, length)
        local = self._abs(path)
        with self._named(path, "reading"), open(local, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def open_input(self, path: str, *, size: int | None = None) -> Any:
        """The absolute local path (pyarrow reads local files natively). See :meth:`LogStore.open_input`.

        Example:
            >>> LocalLogStore("/data/t").open_input("p=1/a.parquet")
            '/data/t/p=1/a.parquet'
        """
        return self._abs(path)

    def exists(self, path: str) -> bool:
        """True if a regular file is at ``path``. See :meth:`LogStore.exists`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     LocalLogStore(tmp).exists("x")
            False
        """
        return os.path.isfile(self._abs(path))

    def stat(self, path: str) -> FileInfo:
        """Size and mtime (ms) of the file. See :meth:`LogStore.stat`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     store = LocalLogStore(tmp)
            ...     store.write("x", b"12", overwrite=False)
            ...     store.stat("x").size
            2
        """
        local = self._abs(path)
        with self._named(path, "reading"):
            st = os.stat(local)
        if stat_mod.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), local)
        return FileInfo("/".join(split_path(path)), st.st_size, st.st_mtime_ns // 1_000_000)

    # ---------------------------------------------------------------------------------------- writing

    def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
        """Atomic put-if-absent (``overwrite=False``) or atomic replace. See :meth:`LogStore.write`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     store = LocalLogStore(tmp)
            ...     store.write("x", b"1", overwrite=False)
            ...     store.write("x", b"2", overwrite=True)
            ...     store.read("x")
            b'2'
        """
        final = self._abs(path)
        parent, name = os.path.split(final)
        with self._named(path, "writing"):
            self._make_dirs(parent, final)
            if overwrite:
                tmp = self._write_temp(parent, name, data)
                try:
                    self._ops.replace(tmp, final)
                except BaseException:
                    self._unlink_quietly(tmp)
                    raise
                self._fsync_dir(parent)
            elif not self._hard_links or not self._put_linked(parent, name, final, data):
                self._put_exclusive(final, data)
                self._fsync_dir(parent)

    def _put_linked(self, parent: str, name: str, final: str, data: bytes) -> bool:
        """Publish via hard link; False (and remember it) if the file system cannot make hard links."""
        tmp = self._write_temp(parent, name, data)
        try:
            self._ops.link(tmp, final)
        except FileExistsError:
            raise _exists_error(final) from None
        except OSError as exc:
            if exc.errno not in _NO_LINK_ERRNOS and getattr(exc, "winerror", None) not in _NO_LINK_WINERRORS:
                raise
            self._hard_links = False
            return False
        finally:
            self._unlink_quietly(tmp)
        self._fsync_dir(parent)
        return True

    def write_fresh(self, path: str, data: bytes) -> None:
        """Create ``path`` in place (exclusive create, ``FileExistsError`` if present), write ``data`` and fsync
        it, *without* making its directory entry durable: :meth:`sync_dirs` does that, once for many files.

        Only for files under fresh names that nothing names until a later write, made after
        :meth:`sync_dirs`, does (UniForm's manifests, named by the metadata JSON): a crash may leave such a
        file partial or missing, and no reader looks for it.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     store = LocalLogStore(tmp)
            ...     store.write_fresh("m/a.avro", b"1"); store.sync_dirs(["m/a.avro"])
            ...     store.read("m/a.avro")
            b'1'
        """
        final = self._abs(path)
        with self._named(path, "writing"):
            self._make_dirs(os.path.dirname(final), final)
            self._put_exclusive(final, data)

    def sync_dirs(self, paths: Iterable[str]) -> None:
        """Make the directory entries of the files ``paths`` durable (one fsync per directory).

        Example:
            >>> LocalLogStore("/data/t").sync_dirs(["metadata/snap-1.avro"])            # doctest: +SKIP
        """
        for parent in sorted({os.path.dirname(self._abs(p)) for p in paths}):
            self._fsync_dir(parent)

    def stage(self, path: str, data: bytes) -> Staged:
        """The first half of :meth:`write`: ``data`` in a temporary file beside ``path``, fsynced (invisible to
        listings); :meth:`publish` or :meth:`discard` it. Lets a writer make several files' content durable
        at once (in parallel) and publish them in the order its readers need.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     store = LocalLogStore(tmp)
            ...     staged = store.stage("x", b"1")
            ...     store.exists("x"), store.publish(staged, overwrite=False), store.read("x")
            (False, None, b'1')
        """
        final = self._abs(path)
        parent, name = os.path.split(final)
        with self._named(path, "writing"):
            self._make_dirs(parent, final)
            return Staged(path, self._write_temp(parent, name, data), data)

    def publish(self, staged: Staged, *, overwrite: bool, sync_dir: bool = True) -> None:
        """The second half of :meth:`write`: put the staged file at its path, atomically, if absent
        (``FileExistsError`` otherwise) or replacing what is there; the temporary file is gone either way.

        ``sync_dir=False`` skips the directory fsync after the rename or link: the content is durable, but
        after a crash the path may still hold what it held before. Only for a file whose previous content
        stays valid (UniForm's ``version-hint.text``, which may lag behind the newest metadata).
        """
        final = self._abs(staged.path)
        parent = os.path.dirname(final)
        try:
            with self._named(staged.path, "writing"):
                if overwrite:
                    self._ops.replace(staged.tmp, final)
                elif not self._hard_links:
                    self._put_exclusive(final, staged.data)
                else:
                    try:
                        self._ops.link(staged.tmp, final)
                    except FileExistsError:
                        raise _exists_error(final) from None
                    except OSError as exc:
                        no_links = exc.errno in _NO_LINK_ERRNOS or getattr(exc, "winerror", None) in _NO_LINK_WINERRORS
                        if not no_links:
                            raise
                        self._hard_links = False
                        self._put_exclusive(final, staged.data)
        finally:
            self._unlink_quietly(staged.tmp)
        if sync_dir:
            self._fsync_dir(parent)

    def discard(self, staged: Staged) -> None:
        """Remove a staged file that will not be published."""
        self._unlink_quietly(staged.tmp)

    def open_output(self, path: str) -> OutputFile:
        """A new file at ``path`` written in place; see :meth:`LogStore.open_output`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     store = LocalLogStore(tmp)
            ...     out = store.open_output("p=1/part-0.parquet")
            ...     out.write(b"PAR1"); out.close()
            ...     store.read("p=1/part-0.parquet")
            4
            b'PAR1'
        """
        final = self._abs(path)
        with self._named(path, "writing"):
            self._make_dirs(os.path.dirname(final), final)
            return _LocalOutput(self, path, final)

    def delete(self, path: str) -> None:
        """Remove the file; a missing file is fine. See :meth:`LogStore.delete`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     LocalLogStore(tmp).delete("never-existed")
        """
        local = self._abs(path)
        with self._named(path, "deleting"), contextlib.suppress(FileNotFoundError):
            self._ops.unlink(local)

    # ------------------------------------------------------------------------------- write helpers

    def _make_dirs(self, parent: str, final: str) -> None:
        try:
            self._ops.makedirs(parent)
        except FileExistsError:  # ``parent`` exists as a file: do not let it look like "already written"
            raise NotADirectoryError(errno.ENOTDIR, "a parent of the path is a file", final) from None

    def _write_temp(self, parent: str, name: str, data: bytes) -> str:
        tmp = os.path.join(parent, _temp_name(name))
        try:
            self._ops.write_new(tmp, data)
        except BaseException:
            self._unlink_quietly(tmp)
            raise
        return tmp

    def _put_exclusive(self, final: str, data: bytes) -> None:
        """Weaker fallback put-if-absent: exclusive create, then write and fsync in place."""
        try:
            self._ops.write_new(final, data)
        except FileExistsError:
            raise _exists_error(final) from None
        except BaseException:
            self._unlink_quietly(final)  # we created it: do not leave a partial file claiming the path
            raise

    def _unlink_quietly(self, path: str) -> None:
        with contextlib.suppress(OSError):
            self._ops.unlink(path)

    def _fsync_dir(self, directory: str) -> None:
        """Best effort: make the new directory entry durable (not possible on every platform)."""
        with contextlib.suppress(OSError):
            self._ops.fsync_dir(directory)


# ---------------------------------------------------------------------------------------------- helpers


def _local_root(location: str) -> str:
    if not location:
        raise InvalidArgumentError("local table root must not be empty")
    if location[:5].lower() != "file:":
        return os.path.abspath(location)
    parts = urlsplit(location)
    if parts.netloc not in ("", "localhost"):
        raise InvalidArgumentError(
            f"file: URI {location!r} names host {parts.netloc!r}; only local files are supported",
            table=location,
        )
    path = url2pathname(parts.path)
    if not path:
        raise InvalidArgumentError(f"file: URI {location!r} has no path", table=location)
    return os.path.abspath(path)


def _check_range(offset: int, length: int) -> None:
    if offset < 0 or length < 0:
        raise InvalidArgumentError(f"read_range needs offset >= 0 and length >= 0, got {offset}, {length}")


def _temp_name(name: str) -> str:
    # keep well under NAME_MAX (255 bytes) whatever the length of ``name``
    short = name.encode("utf-8", "surrogateescape")[:120].decode("utf-8", "ignore")
    return f".{short}.{uuid.uuid4().hex}.tmp"


def _exists_error(final: str) -> OSError:
    if os.path.isdir(final):
        return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), final)
    return FileExistsError(errno.EEXIST, "file already exists", final)
