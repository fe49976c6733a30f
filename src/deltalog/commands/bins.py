"""Reading the live rows of a bin of files (OPTIMIZE's unit of work) a few files at a time.

Example:
    >>> sum(t.num_rows for t in bin_rows(snap, snap.add_files().to_pylist(), None))  # doctest: +SKIP
    1000
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.data.read import kept_rows, map_files, read_file_rows, with_row_tracking_columns

if TYPE_CHECKING:
    from deltalog.data.read import ReadableSnapshot

__all__ = ["WINDOW_BYTES", "WINDOW_FILES", "bin_rows", "size_groups", "windows"]

#: Files of a bin read at once, and the most bytes of parquet read at once when they are large.
WINDOW_FILES = 8
WINDOW_BYTES = 128 << 20


def size_groups(files: Sequence[dict[str, Any]], *, max_bytes: int, max_files: int | None = None
                ) -> Iterator[list[dict[str, Any]]]:
    """``files`` (rows of ``add_files()``) in consecutive groups of at most ``max_files`` files and
    ``max_bytes`` of parquet -- a larger file is a group of its own.

    Example:
        >>> [len(g) for g in size_groups([{"size": 3}] * 5, max_bytes=7)]
        [2, 2, 1]
    """
    group: list[dict[str, Any]] = []
    size = 0
    for f in files:
        full = max_files is not None and len(group) == max_files
        if group and (full or size + int(f.get("size") or 0) > max_bytes):
            yield group
            group, size = [], 0
        group.append(f)
        size += int(f.get("size") or 0)
    if group:
        yield group


def windows(files: Sequence[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """``files`` in consecutive groups of at most :data:`WINDOW_FILES` files or :data:`WINDOW_BYTES` (what is
    read at once).

    Example:
        >>> [len(w) for w in windows([{"size": 1}] * 10)]
        [8, 2]
    """
    return size_groups(files, max_bytes=WINDOW_BYTES, max_files=WINDOW_FILES)


def bin_rows(snap: ReadableSnapshot, files: Sequence[dict[str, Any]], row_tracking: tuple[str, str] | None
             ) -> Iterator[pa.Table]:
    """The live rows of a bin's ``files`` (rows of ``add_files()``), a table per file in their order: deleted
    rows dropped and, with ``row_tracking`` (the materialized columns' names), each row's id and commit
    version appended. A window of files is read at once (side by side: an object store answers each
    after a round trip), so a bin is never held in memory whole. The Spark engine's compaction tasks
    read their bins with it too.

    Example:
        >>> sum(t.num_rows for t in bin_rows(snap, snap.add_files().to_pylist(), None))  # doctest: +SKIP
        1000
    """
    def live_rows(add: dict[str, Any]) -> pa.Table:
        data = read_file_rows(snap, add, apply_deletion_vector=False)
        if row_tracking is not None:
            data = with_row_tracking_columns(snap, add, data, row_tracking)
        return data.filter(pa.array(kept_rows(snap, add, data.num_rows)))

    for window in windows(files):
        yield from map_files(live_rows, window)
