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
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit
from urllib.request import url2pathname

from deltalog.errors import InvalidArgumentError
from deltalog.storage.log_store import FileInfo, is_temp_name, name_key, split_path

__all__ = ["LocalLogStore"]

# errno values with which link(2) reports that the file system cannot make hard links at all.
_NO_LINK_ERRNOS = frozenset(
    {errno.EPERM, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP), errno.ENOSYS, errno.EXDEV}
)
# Windows: ERROR_INVALID_FUNCTION (FAT volumes), ERROR_NOT_SUPPORTED.
_NO_LINK_WINERRORS = frozenset({1, 50})


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

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = _local_root(os.fspath(root))
        self._hard_links = hasattr(os, "link")

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
        start_key = name_key(start)
        files = self._scan(
            split_path(directory, allow_root=True), recursive=False, keep=lambda name: name_key(name) >= start_key
        )
        return iter(files)

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
        self, dir_parts: list[str], *, recursive: bool, keep: Callable[[str], bool] | None = None
    ) -> list[FileInfo]:
        """Files below ``dir_parts`` sorted by path; ``keep`` filters by name *before* the ``stat`` call,
        which is most of a listing's cost in a long ``_delta_log``."""
        out: list[FileInfo] = []
        pending = [(os.path.join(self._root, *dir_parts), "/".join(dir_parts))]
        while pending:
            local_dir, rel_dir = pending.pop()
            try:
                entries = os.scandir(local_dir)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with entries:
                for entry in entries:
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
        with open(self._abs(path), "rb") as f:
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
        with open(self._abs(path), "rb") as f:
            f.seek(offset)
            return f.read(length)

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
        _make_dirs(parent, final)
        if overwrite:
            tmp = _write_temp(parent, name, data)
            try:
                os.replace(tmp, final)
            except BaseException:
                _unlink_quietly(tmp)
                raise
            _fsync_dir(parent)
        elif not self._hard_links or not self._put_linked(parent, name, final, data):
            _put_exclusive(final, data)
            _fsync_dir(parent)

    def _put_linked(self, parent: str, name: str, final: str, data: bytes) -> bool:
        """Publish via hard link; False (and remember it) if the file system cannot make hard links."""
        tmp = _write_temp(parent, name, data)
        try:
            os.link(tmp, final)
        except FileExistsError:
            raise _exists_error(final) from None
        except OSError as exc:
            if exc.errno not in _NO_LINK_ERRNOS and getattr(exc, "winerror", None) not in _NO_LINK_WINERRORS:
                raise
            self._hard_links = False
            return False
        finally:
            _unlink_quietly(tmp)
        _fsync_dir(parent)
        return True

    def delete(self, path: str) -> None:
        """Remove the file; a missing file is fine. See :meth:`LogStore.delete`.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as tmp:
            ...     LocalLogStore(tmp).delete("never-existed")
        """
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._abs(path))


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


def _make_dirs(parent: str, final: str) -> None:
    try:
        os.makedirs(parent, exist_ok=True)
    except FileExistsError:  # ``parent`` exists as a file: do not let it look like "already written"
        raise NotADirectoryError(errno.ENOTDIR, "a parent of the path is a file", final) from None


def _temp_name(name: str) -> str:
    # keep well under NAME_MAX (255 bytes) whatever the length of ``name``
    short = name.encode("utf-8", "surrogateescape")[:120].decode("utf-8", "ignore")
    return f".{short}.{uuid.uuid4().hex}.tmp"


def _write_temp(parent: str, name: str, data: bytes) -> str:
    tmp = os.path.join(parent, _temp_name(name))
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _put_exclusive(final: str, data: bytes) -> None:
    """Weaker fallback put-if-absent: exclusive create, then write and fsync in place."""
    try:
        f = open(final, "xb")  # noqa: SIM115 -- closed below; the create must be separate from the write
    except FileExistsError:
        raise _exists_error(final) from None
    try:
        with f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _unlink_quietly(final)  # we created it: do not leave a partial file claiming the path
        raise


def _exists_error(final: str) -> OSError:
    if os.path.isdir(final):
        return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), final)
    return FileExistsError(errno.EEXIST, "file already exists", final)


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _fsync_dir(directory: str) -> None:
    """Best effort: make the new directory entry durable (not possible on every platform)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
