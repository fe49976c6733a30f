"""An in-memory :class:`~deltalog.storage.log_store.LogStore` for tests and ephemeral tables.

It has the same semantics as the local store (atomic put-if-absent, atomic overwrite, sorted listings,
directories that exist once a file was written below them) behind one lock, plus a controllable clock
for modification times. ``memory://name`` locations map to process-global stores shared by name.

Example:
    >>> store = InMemoryLogStore("memory://memory-doc", clock=lambda: 1_000)
    >>> store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
    >>> store.stat("_delta_log/00000000000000000000.json")
    FileInfo(path='_delta_log/00000000000000000000.json', size=2, modification_time=1000)
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.storage.log_store import BufferedOutput, FileInfo, OutputFile, is_temp_name, name_key, split_path

__all__ = ["InMemoryLogStore", "memory_store"]

_Entry = tuple[bytes, int]  # (content, modification time in ms)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class InMemoryLogStore:
    """Thread-safe store keeping files in a dict; ``clock`` returns "now" in ms (default: wall clock).

    Example:
        >>> ticks = iter(range(100, 200))
        >>> store = InMemoryLogStore(clock=lambda: next(ticks))
        >>> store.write("a", b"1", overwrite=False)
        >>> store.write("b", b"22", overwrite=False)
        >>> [(f.path, f.size, f.modification_time) for f in store.list_dir("")]
        [('a', 1, 100), ('b', 2, 101)]
    """

    def __init__(self, root: str = "memory://", *, clock: Callable[[], int] | None = None) -> None:
        self._root = root
        self._clock = clock if clock is not None else _now_ms
        self._lock = threading.Lock()
        # directory ("" is the root) -> {file name -> entry}; directories stay once created, like on disk
        self._tree: dict[str, dict[str, _Entry]] = {"": {}}

    @property
    def root(self) -> str:
        """The root URI given at construction (``memory://`` by default).

        Example:
            >>> InMemoryLogStore("memory://t").root
            'memory://t'
        """
        return self._root

    def __repr__(self) -> str:
        return f"InMemoryLogStore({self._root!r})"

    def full_path(self, path: str) -> str:
        """``root`` joined with ``path``. See :meth:`LogStore.full_path`.

        Example:
            >>> InMemoryLogStore("memory://t").full_path("a/b")
            'memory://t/a/b'
        """
        rel = "/".join(split_path(path, allow_root=True))
        if not rel:
            return self._root
        return self._root + rel if self._root.endswith("/") else f"{self._root}/{rel}"

    # ---------------------------------------------------------------------------------------- listing

    def list_from(self, prefix: str) -> Iterator[FileInfo]:
        """Files of the prefix's directory with name >= the prefix's last component, sorted by name.

        See :meth:`LogStore.list_from`.

        Example:
            >>> store = InMemoryLogStore()
            >>> for n in ("1", "2", "3"):
            ...     store.write(f"d/{n}", b"", overwrite=False)
            >>> [f.path for f in store.list_from("d/2")]
            ['d/2', 'd/3']
        """
        directory, _, start = prefix.rpartition("/")
        if "\x00" in start:
            raise InvalidArgumentError(f"store path must not contain NUL, got {prefix!r}")
        rel_dir = "/".join(split_path(directory, allow_root=True))
        start_key = name_key(start)
        with self._lock:
            files = self._tree.get(rel_dir, {})
            out = [
                _info(rel_dir, name, entry)
                for name, entry in files.items()
                if name_key(name) >= start_key and not is_temp_name(name)
            ]
        out.sort(key=lambda f: name_key(f.path))
        return iter(out)

    def list_dir(self, directory: str, *, recursive: bool = False) -> Iterator[FileInfo]:
        """Files in (or with ``recursive``, below) ``directory``, sorted by path.

        See :meth:`LogStore.list_dir`.

        Example:
            >>> store = InMemoryLogStore()
            >>> store.write("p=1/a", b"", overwrite=False)
            >>> [f.path for f in store.list_dir("p=1")]
            ['p=1/a']
        """
        rel_dir = "/".join(split_path(directory, allow_root=True))
        below = f"{rel_dir}/" if rel_dir else ""
        with self._lock:
            if recursive:
                dirs = [d for d in self._tree if d == rel_dir or d.startswith(below)]
            else:
                dirs = [rel_dir] if rel_dir in self._tree else []
            out = [
                _info(d, name, entry)
                for d in dirs
                for name, entry in self._tree[d].items()
                if not is_temp_name(name)
            ]
        out.sort(key=lambda f: name_key(f.path))
        return iter(out)

    # ---------------------------------------------------------------------------------------- reading

    def _get(self, path: str) -> tuple[str, _Entry]:
        """(normalized path, entry); caller holds the lock."""
        rel = "/".join(split_path(path))
        directory, _, name = rel.rpartition("/")
        entry = self._tree.get(directory, {}).get(name)
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self.full_path(rel))
        return rel, entry

    def read(self, path: str) -> bytes:
        """The whole file; :class:`FileNotFoundError` if absent. See :meth:`LogStore.read`.

        Example:
            >>> InMemoryLogStore().read("nope")
            Traceback (most recent call last):
            ...
            FileNotFoundError: [Errno 2] No such file or directory: 'memory://nope'
        """
        with self._lock:
            return self._get(path)[1][0]

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``. See :meth:`LogStore.read_range`.

        Example:
            >>> store = InMemoryLogStore()
            >>> store.write("x", b"abcdef", overwrite=False)
            >>> store.read_range("x", 1, 2)
            b'bc'
        """
        if offset < 0 or length < 0:
            raise InvalidArgumentError(
                f"read_range needs offset >= 0 and length >= 0, got {offset}, {length}"
            )
        with self._lock:
            data = self._get(path)[1][0]
        return data[offset : offset + length]

    def exists(self, path: str) -> bool:
        """True if a file is at ``path``. See :meth:`LogStore.exists`.

        Example:
            >>> InMemoryLogStore().exists("x")
            False
        """
        rel = "/".join(split_path(path))
        directory, _, name = rel.rpartition("/")
        with self._lock:
            return name in self._tree.get(directory, {})

    def stat(self, path: str) -> FileInfo:
        """Size and modification time (ms) of the file. See :meth:`LogStore.stat`.

        Example:
            >>> store = InMemoryLogStore(clock=lambda: 7)
            >>> store.write("x", b"12", overwrite=False)
            >>> store.stat("x")
            FileInfo(path='x', size=2, modification_time=7)
        """
        with self._lock:
            rel, (data, mtime) = self._get(path)
        return FileInfo(rel, len(data), mtime)

    # ---------------------------------------------------------------------------------------- writing

    def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
        """Atomic put-if-absent (``overwrite=False``) or atomic replace. See :meth:`LogStore.write`.

        Example:
            >>> store = InMemoryLogStore()
            >>> store.write("x", b"1", overwrite=False)
            >>> store.write("x", b"2", overwrite=False)
            Traceback (most recent call last):
            ...
            FileExistsError: [Errno 17] file already exists: 'memory://x'
        """
        parts = split_path(path)
        rel = "/".join(parts)
        directory, _, name = rel.rpartition("/")
        payload = bytes(data)
        with self._lock:
            for i in range(len(parts) - 1):  # no ancestor may be a file
                ancestor_dir = "/".join(parts[:i])
                if parts[i] in self._tree.get(ancestor_dir, {}):
                    raise NotADirectoryError(
                        errno.ENOTDIR, "a parent of the path is a file", self.full_path(rel)
                    )
            if rel in self._tree:
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self.full_path(rel))
            files = self._tree.get(directory)
            if files is None:
                for i in range(1, len(parts)):
                    self._tree.setdefault("/".join(parts[:i]), {})
                files = self._tree[directory]
            if not overwrite and name in files:
                raise FileExistsError(errno.EEXIST, "file already exists", self.full_path(rel))
            files[name] = (payload, int(self._clock()))

    def open_input(self, path: str, *, size: int | None = None) -> Any:
        """The file's bytes as a seekable buffer. See :meth:`LogStore.open_input`.

        Example:
            >>> store = InMemoryLogStore(); store.write("x", b"abc", overwrite=False)
            >>> store.open_input("x").read()
            b'abc'
        """
        import io

        return io.BytesIO(self.read(path))

    def open_output(self, path: str) -> OutputFile:
        """A buffered file published at ``path`` on close. See :meth:`LogStore.open_output`.

        Example:
            >>> store = InMemoryLogStore()
            >>> out = store.open_output("d/x"); _ = out.write(b"1"); out.close()
            >>> store.read("d/x")
            b'1'
        """
        return BufferedOutput(self, path)

    def delete(self, path: str) -> None:
        """Remove the file; a missing file is fine. See :meth:`LogStore.delete`.

        Example:
            >>> InMemoryLogStore().delete("never-existed")
        """
        rel = "/".join(split_path(path))
        directory, _, name = rel.rpartition("/")
        with self._lock:
            self._tree.get(directory, {}).pop(name, None)

    def set_modification_time(self, path: str, modification_time: int) -> None:
        """Test helper: pretend the file was last written at ``modification_time`` (ms since epoch).

        Example:
            >>> store = InMemoryLogStore()
            >>> store.write("x", b"", overwrite=False)
            >>> store.set_modification_time("x", 42)
            >>> store.stat("x").modification_time
            42
        """
        with self._lock:
            rel, (data, _) = self._get(path)
            directory, _, name = rel.rpartition("/")
            self._tree[directory][name] = (data, int(modification_time))


def _info(directory: str, name: str, entry: _Entry) -> FileInfo:
    return FileInfo(f"{directory}/{name}" if directory else name, len(entry[0]), entry[1])


# --------------------------------------------------------------------------------------- named stores

_NAMED: dict[str, InMemoryLogStore] = {}
_NAMED_LOCK = threading.Lock()


def memory_store(location: str) -> InMemoryLogStore:
    """The process-global store for ``memory://name``, created on first use and shared by name.

    Trailing slashes are ignored (``memory://t/`` is ``memory://t``).

    Example:
        >>> memory_store("memory://shared-doc") is memory_store("memory://shared-doc/")
        True
    """
    if location[:7].lower() != "memory:":
        raise InvalidArgumentError(f"not a memory:// location: {location!r}", table=location)
    name = location[7:].strip("/")
    root = f"memory://{name}"
    with _NAMED_LOCK:
        store = _NAMED.get(root)
        if store is None:
            store = _NAMED[root] = InMemoryLogStore(root)
        return store
