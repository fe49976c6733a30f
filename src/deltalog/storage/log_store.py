"""The storage contract the Delta log is written against, and the factory that picks a store for a location.

A :class:`LogStore` is bound to one table root and addresses files by *relative* paths with ``/``
separators (``_delta_log/00000000000000000003.json``, ``part-0001.parquet``). Everything the
transaction log needs from storage is here: an ordered listing from a prefix, whole and ranged reads,
an atomic put-if-absent (the commit primitive of the Delta protocol) and an atomic overwrite.

Example:
    >>> store = store_for("memory://log-store-doc")
    >>> store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
    >>> [f.path for f in store.list_from("_delta_log/0")]
    ['_delta_log/00000000000000000000.json']
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from deltalog.errors import InvalidArgumentError

__all__ = [
    "BufferedOutput",
    "FileInfo",
    "LogStore",
    "OutputFile",
    "StoreFactory",
    "StoreRef",
    "is_temp_name",
    "name_key",
    "register_scheme",
    "scheme_of",
    "split_path",
    "store_for",
    "store_of_uri",
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
            >>> store = store_for("memory://exists-doc")
            >>> store.write("d/x", b"", overwrite=False)
            >>> store.exists("d/x"), store.exists("d"), store.exists("y")
            (True, False, False)
        """
        ...

    def stat(self, path: str) -> FileInfo:
        """Size and modification time of the file; :class:`FileNotFoundError` if there is none.

        Example:
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
            >>> store_for("memory://full-path-doc").full_path("part-0.parquet")
            'memory://full-path-doc/part-0.parquet'
        """
        ...


# --------------------------------------------------------------------------------------------- helpers


class BufferedOutput:
    """An :class:`OutputFile` that collects the bytes and publishes them with one put-if-absent on
    ``close``: for stores that take whole objects (memory, or small files on any store).

    Example:
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


# -------------------------------------------------------------------------------------------- registry

StoreFactory = Callable[..., LogStore]
"""Builds a store from a full location string (``"memory://t"``, ``"file:///data/t"``), and the storage
options when it was registered with ``takes_options=True``."""

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_SCHEMES: dict[str, tuple[StoreFactory, bool]] = {}
_SCHEMES_LOCK = threading.Lock()


def scheme_of(location: str) -> str | None:
    """The lower-cased URI scheme of ``location``, or ``None`` for a plain path.

    Single-letter schemes are Windows drive letters (``C:\\data``) and count as plain paths.

    Example:
        >>> scheme_of("s3://bucket/t"), scheme_of("/data/t"), scheme_of("C:\\\\data"), scheme_of("file:/x")
        ('s3', None, None, 'file')
    """
    m = _SCHEME_RE.match(location)
    if m is None or len(m[1]) == 1:
        return None
    return m[1].lower()


def register_scheme(scheme: str, factory: StoreFactory, *, takes_options: bool = False) -> None:
    """Make :func:`store_for` build stores for ``scheme://...`` locations with ``factory``.

    The factory receives the full location string, and with ``takes_options`` also the storage options
    (a mapping, possibly empty). Registering a scheme again replaces the factory. The object stores
    (``s3``, ``az``, ``abfss``, ``gs``, ...) plug in this way.

    Example:
        >>> register_scheme("scratch", lambda loc: store_for("memory://" + loc.split("://", 1)[1]))
        >>> store_for("scratch://t1").root
        'memory://t1'
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-]+", scheme):
        raise InvalidArgumentError(f"invalid URI scheme {scheme!r}")
    if not callable(factory):
        raise InvalidArgumentError(f"store factory for scheme {scheme!r} must be callable")
    with _SCHEMES_LOCK:
        _SCHEMES[scheme.lower()] = (factory, takes_options)


def store_for(
    location: str, *, store: LogStore | None = None, options: Mapping[str, Any] | None = None
) -> LogStore:
    """The store for a table ``location``, or ``store`` itself when the caller supplies one.

    * ``memory://name`` -- a process-global in-memory store shared by everyone using the same name;
    * plain paths and ``file:`` URIs (``file:/x``, ``file:///x``, percent-encoded) -- a
      :class:`~deltalog.storage.local.LocalLogStore`;
    * ``s3://`` / ``s3a://``, ``az://`` / ``abfs[s]://`` / ``azure://`` / ``adl://``, ``gs://`` / ``gcs://``
      -- an :class:`~deltalog.storage.object_store.ObjectLogStore` configured by ``options`` (storage
      options as delta-rs spells them) and the environment;
    * any scheme added with :func:`register_scheme`.

    Local and in-memory stores ignore ``options``. Any other scheme raises
    :class:`~deltalog.errors.InvalidArgumentError` naming the schemes that are supported.

    Example:
        >>> a = store_for("memory://store-for-doc")
        >>> a.write("x", b"1", overwrite=False)
        >>> store_for("memory://store-for-doc").read("x")
        b'1'
        >>> try:
        ...     store_for("ftp://host/table")
        ... except InvalidArgumentError as err:
        ...     print("unsupported storage scheme 'ftp'" in str(err))
        True
    """
    if store is not None:
        if not isinstance(store, LogStore):
            raise InvalidArgumentError(
                f"store must implement the LogStore protocol, got {type(store).__name__}", table=location
            )
        return store
    if not isinstance(location, str) or not location:
        raise InvalidArgumentError(f"table location must be a non-empty string, got {location!r}")
    scheme = scheme_of(location)
    with _SCHEMES_LOCK:
        entry = _SCHEMES.get("file" if scheme is None else scheme)
        known = sorted(_SCHEMES)
    if entry is None:
        raise InvalidArgumentError(
            f"unsupported storage scheme {scheme!r} in {location!r}: deltalog reads and writes local paths, "
            f"file: URIs and {', '.join(s + '://' for s in known if s != 'file')}",
            table=location,
        )
    factory, takes_options = entry
    return factory(location, dict(options or {})) if takes_options else factory(location)


@dataclass(frozen=True)
class StoreRef:
    """A picklable way to reach a store again: its location and storage options (what Spark tasks get, so
    each executor opens the same table with the same credentials; in-memory stores cannot travel).

    Example:
        >>> ref = StoreRef.of(store_for("memory://store-ref-doc"))
        >>> ref.location, ref.open() is store_for("memory://store-ref-doc")
        ('memory://store-ref-doc', True)
    """

    location: str
    options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, store: LogStore) -> StoreRef:
        """The reference of ``store`` (its root and, for object stores, its options)."""
        options = getattr(store, "options", None) or {}
        return cls(store.root, tuple(sorted((str(k), str(v)) for k, v in options.items())))

    def open(self) -> LogStore:
        """The store (one per location and options in each process)."""
        return store_for(self.location, options=dict(self.options))

    def __repr__(self) -> str:  # never print the options: they may hold credentials
        return f"StoreRef({self.location!r}, options={[k for k, _ in self.options]})"


def store_of_uri(uri: str, *, options: Mapping[str, Any] | None = None) -> tuple[LogStore, str]:
    """The store of the bucket or container an absolute object-store ``uri`` names, and the key within it:
    for files a table's log points at outside its own root (shallow clones), read with the table's options.

    Example:
        >>> store, key = store_of_uri("s3://bucket/src/part-0.parquet", options={"AWS_REGION": "eu-west-1"})
        >>> store.root, key
        ('s3://bucket', 'src/part-0.parquet')
    """
    scheme = scheme_of(uri)
    if scheme is None or scheme in ("file", "memory") or "://" not in uri:
        raise InvalidArgumentError(f"{uri!r} is not an object-store URI")
    head, _, rest = uri.partition("://")
    netloc, _, key = rest.partition("/")
    return store_for(f"{head}://{netloc}", options=options), key


def _local_factory(location: str) -> LogStore:
    from deltalog.storage.local import LocalLogStore

    return LocalLogStore(location)


def _memory_factory(location: str) -> LogStore:
    from deltalog.storage.memory import memory_store

    return memory_store(location)


_OBJECT_STORES: dict[tuple[str, tuple[tuple[str, str], ...]], LogStore] = {}


def _object_factory(location: str, options: Mapping[str, Any]) -> LogStore:
    """One store (one HTTP client) per location and options, shared by every Table in the process."""
    from deltalog.storage.object_store import ObjectLogStore

    key = (location.rstrip("/"), tuple(sorted((str(k), str(v)) for k, v in options.items())))
    with _SCHEMES_LOCK:
        found = _OBJECT_STORES.get(key)
    if found is not None:
        return found
    made = ObjectLogStore(location, options)
    with _SCHEMES_LOCK:
        if len(_OBJECT_STORES) > 256:
            _OBJECT_STORES.clear()
        return _OBJECT_STORES.setdefault(key, made)


register_scheme("file", _local_factory)
register_scheme("memory", _memory_factory)
for _scheme in ("s3", "s3a", "az", "abfs", "abfss", "azure", "adl", "gs", "gcs"):
    register_scheme(_scheme, _object_factory, takes_options=True)
