"""The storage contract the Delta log is written against (:mod:`deltalog.storage.locations` picks a store
for a location).

A :class:`LogStore` is bound to one table root and addresses files by *relative* paths with ``/``
separators (``_delta_log/00000000000000000003.json``, ``part-0001.parquet``). Everything the
transaction log needs from storage is here: an ordered listing from a prefix, whole and ranged reads,
an atomic put-if-absent (the commit primitive of the Delta protocol) and an atomic overwrite.

Example:
    >>> from deltalog.storage import store_for
    >>> store = store_for("memory://log-store-doc")
    >>> store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
    >>> [f.path for f in store.list_from("_delta_log/0")]
    ['_delta_log/00000000000000000000.json']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from deltalog.errors import InvalidArgumentError

__all__ = [
    "BufferedOutput",
    "FileInfo",
    "LogStore",
    "OutputFile",
    "is_temp_name",
    "name_key",
    "split_path",
]


@dataclass(frozen=True)
class FileInfo:
    """One file of a store: ``path`` relative to the store root ("/"-separated), ``size`` in bytes and
    ``modification_time`` in milliseconds since the epoch.

    Example:
        >>> info = FileInfo("_delta_log/00000000000000000000.json", 120, 1_700_000_000_000)
        >>> info.name
        '00000000000000000000.json'
    """

    path: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        """The last component of :attr:`path` (the file name).

        Example:
            >>> FileInfo("a/b/c.parquet", 1, 0).name
            'c.parquet'
        """
        return self.path.rpartition("/")[2]


@runtime_checkable
class OutputFile(Protocol):
    """A file being written by :meth:`LogStore.open_output`: a binary sink for pyarrow's writers.

    ``write`` appends bytes and returns their count, ``tell`` is the number of bytes written so far.
    ``close`` finishes the file: once it returns, the file is complete and durable at its path (a
    local file is fsynced, an object-store upload completed). ``abort`` gives up: nothing of the file
    stays behind (a partial local file is removed, an unfinished upload cancelled). Calling either
    again is a no-op. Failures raise :class:`~deltalog.errors.StorageError` subclasses.

    Example:
        >>> from deltalog.storage import store_for
        >>> out = store_for("memory://output-file-doc").open_output("part-0.parquet")
        >>> out.write(b"PAR1"), out.tell()
        (4, 4)
        >>> out.close()
    """

    closed: bool

    def write(self, data: bytes) -> int:
        """Append ``data``; returns ``len(data)``."""
        ...

    def tell(self) -> int:
        """Bytes written so far."""
        ...

    def flush(self) -> None:
        """No-op hook pyarrow calls; durability comes with :meth:`close`."""
        ...

    def close(self) -> None:
        """Finish the file (complete, durable, visible at its path)."""
        ...

    def abort(self) -> None:
        """Discard the file; nothing of it remains."""
        ...


@runtime_checkable
class LogStore(Protocol):
    """Storage bound to one table root; every path argument is relative to that root, "/"-separated.

    Paths must be non-empty, must not start with ``/`` and must not contain empty, ``.`` or ``..``
    segments (or NUL); violations raise :class:`~deltalog.errors.InvalidArgumentError`. Names are
    otherwise arbitrary Unicode (spaces, ``%``, non-ASCII are taken literally, never URL-decoded).

    Files whose name starts with ``.`` and ends with ``.tmp`` are in-flight temporary files of a
    store; they are never listed.

    Example:
        >>> from deltalog.storage import store_for
        >>> store = store_for("memory://log-store-protocol-doc")
        >>> isinstance(store, LogStore)
        True
        >>> store.write("a.txt", b"hi", overwrite=False)
        >>> store.read("a.txt")
        b'hi'
    """

    @property
    def root(self) -> str:
        """The table root this store is bound to: an absolute local path, or a URI such as
        ``memory://name``.

        Example:
            >>> from deltalog.storage import store_for
            >>> store_for("memory://root-doc").root
            'memory://root-doc'
        """
        ...

    def list_from(self, prefix: str) -> Iterator[FileInfo]:
        """Files of the directory of ``prefix`` whose *name* is >= the last component of ``prefix``.

        ``prefix`` is split at its last ``/``: the part before is the directory (empty for the root),
        the part after is the smallest file name to return. Names are compared, and results sorted
        ascending, in the byte order of their UTF-8 encoding (the same as code-point order). Only
        regular files are returned (no directories, not recursive). A missing directory yields
        nothing; it is not an error. A prefix ending in ``/`` lists the whole directory.

        This is the only listing primitive the log needs: listing from
        ``_delta_log/<20-digit version>`` returns that commit and everything after it in order.

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://list-from-doc")
            >>> for v in (9, 10, 11):
            ...     store.write(f"_delta_log/{v:020d}.json", b"{}", overwrite=False)
            >>> [f.name for f in store.list_from("_delta_log/00000000000000000010")]
            ['00000000000000000010.json', '00000000000000000011.json']
            >>> list(store.list_from("missing/0"))
            []
        """
        ...

    def list_dir(self, directory: str, *, recursive: bool = False) -> Iterator[FileInfo]:
        """Every file directly in ``directory`` (or, with ``recursive``, anywhere below it).

        Paths in the results are relative to the store root (not to ``directory``); results are sorted
        by path in UTF-8 byte order. ``""`` is the root itself. Directories are not returned; a missing
        directory yields nothing. Symbolic links to directories are not followed.

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://list-dir-doc")
            >>> store.write("p=1/a.parquet", b"", overwrite=False)
            >>> store.write("top.parquet", b"", overwrite=False)
            >>> [f.path for f in store.list_dir("", recursive=True)]
            ['p=1/a.parquet', 'top.parquet']
            >>> [f.path for f in store.list_dir("")]
            ['top.parquet']
        """
        ...

    def read(self, path: str) -> bytes:
        """The whole content of the file; raises :class:`FileNotFoundError` if it does not exist.

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://read-doc")
            >>> store.write("x", b"abc", overwrite=False)
            >>> store.read("x")
            b'abc'
        """
        ...

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes starting at byte ``offset``; shorter (possibly empty) when the file
        ends first. Negative ``offset`` or ``length`` raises
        :class:`~deltalog.errors.InvalidArgumentError`; a missing file :class:`FileNotFoundError`.

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://read-range-doc")
            >>> store.write("x", b"abcdef", overwrite=False)
            >>> store.read_range("x", 2, 3), store.read_range("x", 4, 100)
            (b'cde', b'ef')
        """
        ...

    def open_input(self, path: str, *, size: int | None = None) -> Any:
        """What pyarrow opens to read ``path`` piece by piece (parquet footers, column chunks): a local path,
        or a seekable binary file whose reads are ranged requests. ``size`` (when the log knows it) saves
        a request for it. Raises :class:`FileNotFoundError` for a missing file, at the latest on first read.

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://open-input-doc")
            >>> store.write("x.bin", b"abcdef", overwrite=False)
            >>> f = store.open_input("x.bin"); _ = f.seek(2); f.read(3)
            b'cde'
        """
        ...

    def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
        """Write ``data`` to ``path``, creating parent directories as needed.

        ``overwrite=False`` is an atomic put-if-absent: either the file appears, complete, holding
        ``data``, or :class:`FileExistsError` is raised and the existing file is left untouched. When
        several callers (threads or processes) race for the same path, exactly one succeeds. Readers
        never observe a partially written file.

        ``overwrite=True`` atomically replaces the file: concurrent readers see the old or the new
        content in full, never a mix or a truncated file.

        If a parent of ``path`` is a file, :class:`NotADirectoryError` is raised; if ``path`` is a
        directory, :class:`IsADirectoryError` (never :class:`FileExistsError`, which always means
        "a file is already there").

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://write-doc")
            >>> store.write("_delta_log/00000000000000000000.json", b"v0", overwrite=False)
            >>> try:
            ...     store.write("_delta_log/00000000000000000000.json", b"other", overwrite=False)
            ... except FileExistsError:
            ...     print("lost the race")
            lost the race
            >>> store.write("_delta_log/_last_checkpoint", b"{}", overwrite=True)
        """
        ...

    def open_output(self, path: str) -> OutputFile:
        """Start writing a new file at ``path`` (data files, deletion vectors: large, written in pieces).

        Parent directories are created as needed. The path must be new (data files have unique names);
        the file is complete at ``path`` once :meth:`OutputFile.close` returns. Unlike :meth:`write`
        it is not atomic: a reader may see a partial file before ``close`` on some stores, so only
        names nobody references yet may be written this way.

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://open-output-doc")
            >>> out = store.open_output("p=1/part-0.parquet")
            >>> _ = out.write(b"abc"); out.close()
            >>> store.read("p=1/part-0.parquet")
            b'abc'
        """
        ...

    def delete(self, path: str) -> None:
        """Remove the file; deleting a missing file is not an error. Directories are not removed.

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://delete-doc")
            >>> store.write("x", b"", overwrite=False)
            >>> store.delete("x"); store.delete("x")
            >>> store.exists("x")
            False
        """
        ...

    def exists(self, path: str) -> bool:
        """True if a *file* exists at ``path`` (a directory is not a file).

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://exists-doc")
            >>> store.write("d/x", b"", overwrite=False)
            >>> store.exists("d/x"), store.exists("d"), store.exists("y")
            (True, False, False)
        """
        ...

    def stat(self, path: str) -> FileInfo:
        """Size and modification time of the file; :class:`FileNotFoundError` if there is none.

        Example:
            >>> from deltalog.storage import store_for
            >>> store = store_for("memory://stat-doc")
            >>> store.write("x", b"1234", overwrite=False)
            >>> store.stat("x").size
            4
        """
        ...

    def full_path(self, path: str) -> str:
        """The absolute local path or URI of ``path`` for engines (pyarrow, Spark) to open directly.

        ``""`` returns the root itself.

        Example:
            >>> from deltalog.storage import store_for
            >>> store_for("memory://full-path-doc").full_path("part-0.parquet")
            'memory://full-path-doc/part-0.parquet'
        """
        ...


# --------------------------------------------------------------------------------------------- helpers


class BufferedOutput:
    """An :class:`OutputFile` that collects the bytes and publishes them with one put-if-absent on
    ``close``: for stores that take whole objects (memory, or small files on any store).

    Example:
        >>> from deltalog.storage import store_for
        >>> store = store_for("memory://buffered-output-doc")
        >>> out = BufferedOutput(store, "a.bin")
        >>> out.write(b"12"), out.write(b"3"), out.tell()
        (2, 1, 3)
        >>> out.close(); store.read("a.bin")
        b'123'
    """

    def __init__(self, store: LogStore, path: str) -> None:
        split_path(path)
        self._store, self._path = store, path
        self._chunks: list[bytes] = []
        self._size = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        """Append ``data`` (kept in memory until :meth:`close`)."""
        if self.closed:
            raise InvalidArgumentError(f"output {self._path} is already closed")
        chunk = bytes(data)
        self._chunks.append(chunk)
        self._size += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        """Bytes written so far."""
        return self._size

    def flush(self) -> None:
        """Nothing to do before :meth:`close`."""

    def close(self) -> None:
        """Publish the bytes at the path (put-if-absent)."""
        if self.closed:
            return
        self.closed = True
        payload = b"".join(self._chunks)
        self._chunks.clear()
        self._store.write(self._path, payload, overwrite=False)

    def abort(self) -> None:
        """Drop the bytes; nothing was published."""
        self.closed = True
        self._chunks.clear()



def split_path(path: str, *, allow_root: bool = False) -> list[str]:
    """Validate a store-relative path and return its segments.

    With ``allow_root`` an empty path (the root, as ``[]``) and one trailing ``/`` are accepted, for
    directory arguments.

    Example:
        >>> split_path("_delta_log/00000000000000000000.json")
        ['_delta_log', '00000000000000000000.json']
        >>> split_path("", allow_root=True)
        []
    """
    if not isinstance(path, str):
        raise InvalidArgumentError(f"store path must be a str, got {type(path).__name__}")
    if allow_root:
        if path == "":
            return []
        if path.endswith("/"):
            path = path[:-1]
    if path == "":
        raise InvalidArgumentError("store path must not be empty")
    if path.startswith("/"):
        raise InvalidArgumentError(f"store path must be relative to the table root, got {path!r}")
    if "\x00" in path:
        raise InvalidArgumentError(f"store path must not contain NUL, got {path!r}")
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise InvalidArgumentError(
                f"store path must not contain empty, '.' or '..' segments, got {path!r}"
            )
    return parts


def is_temp_name(name: str) -> bool:
    """True for the names of in-flight temporary files (``.<anything>.tmp``), which listings skip.

    Example:
        >>> is_temp_name(".00000000000000000001.json.3f2a.tmp"), is_temp_name("a.tmp")
        (True, False)
    """
    return name.startswith(".") and name.endswith(".tmp")


def name_key(name: str) -> bytes:
    """Sort key giving the UTF-8 byte order of a name (undecodable OS names keep their raw bytes).

    Example:
        >>> sorted(["b", "a", "\u00e9"], key=name_key)
        ['a', 'b', 'é']
    """
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")
