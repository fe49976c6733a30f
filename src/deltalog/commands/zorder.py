"""Z-ordering rows with Arrow (the kernel's ``OPTIMIZE ZORDER BY``; the Spark engine's for small partitions).

Each Z-order column becomes an order-preserving ``double`` key (numbers as themselves, dates and timestamps
as their day or microsecond numbers, strings and binaries by their first six bytes, nulls ``-inf``), the
keys are cut into ``2**bits`` ranges of equal row counts, and the range numbers' bits are interleaved into
one Z-value per row (:mod:`deltalog.commands.optimize_plan`); rows are sorted by it, ties kept in order.

A partition is sorted in memory (:func:`z_ordered`) up to :data:`IN_MEMORY_BYTES` of parquet. A larger one
is sorted through local spill files (:func:`spill_in_z_order`): the ranges come from a sample of the keys
(every row's when there are at most :data:`SAMPLE_ROWS`), the rows are read a few files at a time and
appended to one spill file per slice of the Z-curve, then each slice is read back, sorted and handed on --
the same rows in the same order as the in-memory sort when the sample holds every row, with at most one
slice in memory.

Example:
    >>> t = pa.table({"x": [3, 0, 2, 1], "y": [0, 1, 2, 3]})
    >>> z_ordered(t, ["x", "y"]).column("x").to_pylist()
    [0, 1, 3, 2]
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.commands.bins import bin_rows, windows
from deltalog.commands.optimize_plan import bits_per_column, interleave_bits, range_ids, range_probabilities
from deltalog.data.read import map_files, read_file_columns

if TYPE_CHECKING:
    from deltalog.data.read import ReadableSnapshot

__all__ = ["IN_MEMORY_BYTES", "MAX_SLICES", "SAMPLE_ROWS", "SpilledRows", "spill_in_z_order", "z_ordered"]

#: A partition of at most this many bytes of parquet is Z-ordered in memory.
IN_MEMORY_BYTES = 512 << 20
#: The most keys sampled to find the ranges of a partition Z-ordered through spill files.
SAMPLE_ROWS = 1 << 20
#: The most spill files (slices of the Z-curve) one partition is cut into.
MAX_SLICES = 256
_Z = "__deltalog_z"


def _z_key(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An order-preserving float per value (nulls ``-inf``, first): numbers as themselves, dates and
    timestamps as their day or microsecond numbers, strings and binaries by their first six bytes."""
    t = column.type
    if pa.types.is_boolean(t):
        column = pc.cast(column, pa.int8())
    elif pa.types.is_date(t):
        column = pc.cast(column, pa.int32())
    elif pa.types.is_timestamp(t):
        column = pc.cast(column, pa.int64())
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or \
            pa.types.is_large_binary(t):
        return _prefix_keys(column)
    floats = pc.fill_null(pc.cast(column, pa.float64()), -np.inf)
    return np.asarray(floats.to_numpy(zero_copy_only=False), dtype=np.float64)


def _prefix_keys(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Each value's first six bytes as a big-endian number (shorter values zero-padded; nulls ``-inf``),
    gathered from the Arrow buffers a byte position at a time."""
    heads = pc.binary_slice(pc.cast(column, pa.large_binary()), 0, 6)
    if isinstance(heads, pa.ChunkedArray):
        heads = heads.combine_chunks()
    n = len(heads)
    starts = np.frombuffer(heads.buffers()[1], dtype=np.int64)[heads.offset:heads.offset + n + 1]
    data = heads.buffers()[2]
    values = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    lengths = np.diff(starts)
    keys = np.zeros(n, dtype=np.uint64)
    for j in range(6):
        byte = np.zeros(n, dtype=np.uint64)
        has = lengths > j
        byte[has] = values[starts[:-1][has] + j]
        keys = (keys << np.uint64(8)) | byte
    out = keys.astype(np.float64)  # exact: 48 bits fit a double's 53
    out[np.asarray(heads.is_null().to_numpy(zero_copy_only=False))] = -np.inf
    return out


def _column(rows: pa.Table, name: str) -> pa.ChunkedArray:
    """The column ``name``, or the nested field the dotted path ``name`` names (``s.a``: field ``a`` of
    struct ``s``; null where a struct on the way is) when no top-level column has that name."""
    if name in rows.column_names:
        return rows.column(name)
    first, *rest = name.split(".")
    column = rows.column(first)
    for part in rest:
        column = pc.struct_field(column, part)
    return column


def _keys(rows: pa.Table, columns: Sequence[str]) -> list[np.ndarray]:
    return [_z_key(_column(rows, name)) for name in columns]


def _bounds(keys: np.ndarray, bits: int) -> np.ndarray | None:
    """The quantiles cutting ``keys`` (one column's) into ``2**bits`` ranges; ``None`` without a finite key."""
    known = keys[np.isfinite(keys)]
    return np.unique(np.quantile(known, range_probabilities(bits))) if len(known) else None


def _z_values(keys: Sequence[np.ndarray], bounds: Sequence[np.ndarray | None], bits: int) -> np.ndarray:
    return interleave_bits([range_ids(k, b) for k, b in zip(keys, bounds, strict=True)], bits=bits)


def z_ordered(rows: pa.Table, columns: Sequence[str]) -> pa.Table:
    """``rows`` sorted by the Z-value of ``columns`` (top-level names or dotted paths of nested fields):
    each column's values split into ``2**bits`` ranges of equal row counts, the range numbers' bits
    interleaved (the first column's bit highest).

    Example:
        >>> t = pa.table({"x": [3, 0, 2, 1], "y": [0, 1, 2, 3]})
        >>> z_ordered(t, ["x", "y"]).column("x").to_pylist()
        [0, 1, 3, 2]
    """
    bits = bits_per_column(len(columns))
    keys = _keys(rows, columns)
    order = np.argsort(_z_values(keys, [_bounds(k, bits) for k in keys], bits), kind="stable")
    return rows.take(pa.array(order))


class SpilledRows:
    """A partition's rows cut into spill files by slices of the Z-curve (see :func:`spill_in_z_order`):
    :attr:`num_rows` of them; :meth:`pieces` yields each slice sorted, in Z order, and deletes the files.

    Example:
        >>> spilled = spill_in_z_order(snap, files, None, ["x", "y"], 8)            # doctest: +SKIP
        >>> sum(t.num_rows for t in spilled.pieces()) == spilled.num_rows             # doctest: +SKIP
        True
    """

    def __init__(self, folder: tempfile.TemporaryDirectory[str], paths: list[str], num_rows: int) -> None:
        self._folder = folder
        self.paths = paths
        self.num_rows = num_rows

    def pieces(self) -> Iterator[pa.Table]:
        """Each slice's rows sorted by Z (ties in the order they were read), one slice in memory at a time."""
        try:
            for path in self.paths:
                if not os.path.exists(path):
                    continue
                rows = pq.read_table(path)
                os.remove(path)
                order = np.argsort(np.asarray(rows.column(_Z).to_numpy()), kind="stable")
                yield rows.take(pa.array(order)).drop_columns([_Z])
        finally:
            self._folder.cleanup()


def _sample(snap: ReadableSnapshot, files: Sequence[dict[str, Any]], columns: Sequence[str]) -> list[np.ndarray]:
    """Each column's keys of a sample of the live rows (every row's when there are few)."""
    names = set(snap.schema.field_names)
    tops = list(dict.fromkeys(c if c in names else c.split(".")[0] for c in columns))
    total = sum(int(f.get("size") or 0) for f in files) or 1
    keys: list[list[np.ndarray]] = [[] for _ in columns]

    def file_keys(add: dict[str, Any]) -> list[np.ndarray]:
        rows = read_file_columns(snap, add, tops)
        share = max(1, math.ceil(SAMPLE_ROWS * int(add.get("size") or 0) / total))
        step = max(1, rows.num_rows // share)
        return [k[::step] for k in _keys(rows, columns)]

    for window in windows([dict(f) for f in files]):
        for found in map_files(file_keys, window):
            for i, k in enumerate(found):
                keys[i].append(k)
    return [np.concatenate(k) if k else np.zeros(0) for k in keys]


def spill_in_z_order(snap: ReadableSnapshot, files: Sequence[dict[str, Any]], row_tracking: tuple[str, str] | None,
                     columns: Sequence[str], num_output_files: int) -> SpilledRows:
    """Cut a partition's live rows (``files``; row ids kept with ``row_tracking``) into local spill files by
    slices of the Z-curve of ``columns`` -- about ``num_output_files`` of them (at most
    :data:`MAX_SLICES`, and enough for each to be about :data:`IN_MEMORY_BYTES` or less) -- holding a few
    files' rows at a time; see the module docstring.

    Example:
        >>> spill_in_z_order(snap, files, None, ["x", "y"], 8).num_rows                # doctest: +SKIP
        4000000
    """
    bits = bits_per_column(len(columns))
    sample = _sample(snap, files, columns)
    bounds = [_bounds(k, bits) for k in sample]
    size = sum(int(f.get("size") or 0) for f in files)
    slices = max(1, min(MAX_SLICES, max(num_output_files, math.ceil(size / max(1, IN_MEMORY_BYTES)))))
    sampled_z = np.sort(_z_values(sample, bounds, bits)) if len(sample[0]) else np.zeros(0, np.int64)
    picks = [len(sampled_z) * i // slices for i in range(1, slices)]
    cuts = sampled_z[picks] if len(sampled_z) else np.zeros(0, np.int64)
    folder = tempfile.TemporaryDirectory(prefix="deltalog-zorder-")
    paths = [os.path.join(folder.name, f"slice-{i:05d}.parquet") for i in range(slices)]
    writers: dict[int, pq.ParquetWriter] = {}
    num_rows = 0
    written = False
    try:
        for rows in bin_rows(snap, files, row_tracking):
            if rows.num_rows == 0:
                continue
            z = _z_values(_keys(rows, columns), bounds, bits)
            where = np.searchsorted(cuts, z, side="right")
            order = np.argsort(where, kind="stable")
            ordered = rows.append_column(_Z, pa.array(z, pa.int64())).take(pa.array(order))
            sorted_where = where[order]
            for i in np.unique(sorted_where):
                begin, end = np.searchsorted(sorted_where, [i, i + 1])
                writer = writers.get(int(i))
                if writer is None:
                    writer = writers[int(i)] = pq.ParquetWriter(paths[int(i)], ordered.schema, compression="lz4")
                writer.write_table(ordered.slice(int(begin), int(end - begin)))
            num_rows += rows.num_rows
        written = True
    finally:
        for writer in writers.values():
            writer.close()
        if not written:
            folder.cleanup()
    return SpilledRows(folder, paths, num_rows)
