"""Vectorized facts about a snapshot's live files and tombstones, from its Arrow file index.

Everything here works on whole columns (Arrow kernels, numpy), never a Python loop over files: the row
counts come out of the ``stats`` JSON strings by reading the digits after a leading ``{"numRecords":``
straight from the string buffer (what deltalog, delta-spark and delta-rs write; eight digits at most, read
eight bytes at a time with SWAR arithmetic), the few other strings going through Arrow's JSON reader;
partitions are grouped by the dictionary codes of their values.

Example:
    >>> import pyarrow as pa
    >>> num_records(pa.chunked_array([['{"numRecords":12,"minValues":{}}', None, '{"x":1,"numRecords":3}']]))
    [12, None, 3]
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.log.histograms import group_sums

if TYPE_CHECKING:
    from numpy.typing import NDArray

    Ints = NDArray[np.int64]
    Bools = NDArray[np.bool_]

__all__ = ["FileFacts", "PartitionGroups", "SizeCells", "Tombstones", "file_facts", "group_partitions", "num_records",
           "num_records_array", "partition_values", "size_bins", "tombstone_facts", "zorder_tags"]

_PREFIX = b'{"numRecords":'
_DENSE_CELLS = 4_000_000  # partitions x bins counted in one dense array up to this many cells


def num_records(stats: pa.ChunkedArray | pa.Array) -> list[int | None]:
    """``numRecords`` of each stats JSON string (``None``: no statistics, or no row count in them).

    A thin wrapper over :func:`num_records_array` for small inputs and examples.

    Example:
        >>> num_records(pa.array(['{"numRecords":0}', '{"numRecords": 7}']))
        [0, 7]
    """
    values, known = num_records_array(stats)
    return [int(v) if k else None for v, k in zip(values.tolist(), known.tolist())]


def num_records_array(stats: pa.ChunkedArray | pa.Array) -> tuple[Ints, Bools]:
    """``(numRecords, known)`` of each stats JSON string as numpy arrays (unknown rows hold 0).

    Example:
        >>> values, known = num_records_array(pa.array(['{"numRecords":5}', None]))
        >>> values.tolist(), known.tolist()
        ([5, 0], [True, False])
    """
    chunks = stats.chunks if isinstance(stats, pa.ChunkedArray) else [stats]
    parts = [_num_records_chunk(c) for c in chunks if len(c)]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.bool_)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


_U = np.uint64
_HEAD = int(np.frombuffer(_PREFIX[:8], "<u8")[0])  # bytes 0-7 of the prefix, as one little-endian word
_MIDDLE = int(np.frombuffer(_PREFIX[8:] + b"\0\0", "<u8")[0])  # bytes 8-13, the low six bytes of a word
_LOW6 = (1 << 48) - 1
_ZEROS = 0x3030303030303030
_COMMA, _BRACE = ord(","), ord("}")
#: Three consecutive little-endian words at any byte offset of a buffer (a strided view, no copy).
_WORDS3 = np.dtype([("a", "<u8"), ("b", "<u8"), ("c", "<u8")])


def _digits(words: NDArray[np.uint64]) -> tuple[NDArray[np.int64], NDArray[np.uint64]]:
    """For words of 8 characters (little-endian): the number of leading ASCII digits (0-8) and their value,
    by SWAR arithmetic on the whole vector (the wrap-around of uint64 products is intended)."""
    x = words ^ _U(_ZEROS)  # digits become bytes 0-9
    # a byte above 9 gets its high bit from +0x76 (carries only spoil bytes after the first non-digit)
    nondigit = ((x + _U(0x7676767676767676)) | x) & _U(0x8080808080808080)
    lowest = nondigit & (~nondigit + _U(1))
    length = np.log2(np.maximum(lowest, _U(1)).astype(np.float64)).astype(np.int64) // 8  # bit 8j+7: byte j
    length[nondigit == 0] = 8
    v = x << ((_U(64) - _U(8) * length.astype(np.uint64)) & _U(63))  # the digits to the top bytes
    v[length >= 8] = x[length >= 8]
    v = ((v & _U(0x0F0F0F0F0F0F0F0F)) * _U(2561)) >> _U(8)
    v = ((v & _U(0x00FF00FF00FF00FF)) * _U(6553601)) >> _U(16)
    v = ((v & _U(0x0000FFFF0000FFFF)) * _U(42949672960001)) >> _U(32)
    return length, v


def _num_records_chunk(arr: pa.Array) -> tuple[Ints, Bools]:
    if not pa.types.is_string(arr.type) and not pa.types.is_large_string(arr.type):
        arr = pc.cast(arr, pa.string())
    n = len(arr)
    values = np.zeros(n, np.int64)
    known = np.zeros(n, np.bool_)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
    data_buffer = arr.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    if len(data) >= 32:
        offset_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
        offsets = np.frombuffer(arr.buffers()[1], dtype=offset_type)[arr.offset: arr.offset + n + 1].astype(np.int64)
        starts, lengths = offsets[:-1], np.diff(offsets)
        # the prefix, up to eight digits and the character after them, inside the string and the buffer
        fits = valid & (lengths >= len(_PREFIX) + 2) & (starts + 24 <= len(data))
        rows = None if fits.all() else np.flatnonzero(fits)
        s = starts if rows is None else starts[rows]
        words = np.ndarray((len(data) - 23,), dtype=_WORDS3, buffer=data, strides=(1,))[s]
        a, b, c = words["a"], words["b"], words["c"]
        digits = (b >> _U(48)) | (c << _U(16))  # bytes 14-21
        length, number = _digits(digits)
        after = np.where(length < 8, digits >> (_U(8) * np.minimum(length, 7).astype(np.uint64)),
                         c >> _U(48)) & _U(0xFF)  # byte 14 + length
        room = lengths if rows is None else lengths[rows]
        good = ((a == _U(_HEAD)) & ((b & _U(_LOW6)) == _U(_MIDDLE)) & (length > 0)
                & ((after == _U(_COMMA)) | (after == _U(_BRACE))) & (length < room - len(_PREFIX)))
        if rows is None and good.all():
            values, known = number.astype(np.int64), valid
        else:
            hit = np.flatnonzero(good) if rows is None else rows[good]
            values[hit] = number[good].astype(np.int64)
            known[hit] = True
    rest = np.flatnonzero(valid & ~known)  # other shapes, nine or more digits: the JSON reader
    if rest.size:
        from deltalog.log.stats_parsed import parse_stats

        parsed_rest = parse_stats(arr.take(pa.array(rest)), pa.struct([pa.field("numRecords", pa.int64())]))
        counts = pc.struct_field(parsed_rest, "numRecords")
        got = np.asarray(counts.is_valid().to_numpy(zero_copy_only=False))
        values[rest[got]] = np.asarray(pc.fill_null(counts, 0).to_numpy(zero_copy_only=False))[got]
        known[rest[got]] = True
    return values, known


def _ints(column: pa.ChunkedArray | pa.Array) -> Ints:
    """An integer column as int64 numpy (nulls 0)."""
    filled = pc.fill_null(pc.cast(column, pa.int64()), 0)
    return np.asarray(filled.to_numpy(), dtype=np.int64) if len(filled) else np.zeros(0, np.int64)


def _valid(column: pa.ChunkedArray | pa.Array) -> Bools:
    return np.asarray(column.is_valid().to_numpy(), dtype=np.bool_) if len(column) else np.zeros(0, np.bool_)


@dataclass(frozen=True)
class FileFacts:
    """Per-file columns of the live files (numpy), one entry per file of the snapshot's file index."""

    size: Ints
    records: Ints
    has_stats: Bools
    deleted: Ints
    has_dv: Bools
    small: Bools
    clustered: Bools


def file_facts(files: pa.Table, small_file_threshold: int) -> FileFacts:
    """The numeric facts of each live file.

    Example:
        >>> dv = pa.array([None, {"cardinality": 1}], pa.struct([("cardinality", pa.int64())]))
        >>> t = pa.table({"size": [10, 500], "stats": ['{"numRecords":2}', None], "deletionVector": dv,
        ...               "clusteringProvider": pa.array([None, "liquid"])})
        >>> f = file_facts(t, 100)
        >>> f.records.tolist(), f.small.tolist(), f.deleted.tolist(), f.clustered.tolist()
        ([2, 0], [True, False], [0, 1], [False, True])
    """
    size = _ints(files.column("size"))
    records, has_stats = num_records_array(files.column("stats"))
    dv = files.column("deletionVector")
    has_dv = _valid(dv)
    deleted = _ints(pc.struct_field(dv, "cardinality")) if files.num_rows else np.zeros(0, np.int64)
    clustered = (_valid(files.column("clusteringProvider")) if "clusteringProvider" in files.column_names
                 else np.zeros(files.num_rows, np.bool_))
    return FileFacts(size, records, has_stats, deleted, has_dv, size < small_file_threshold, clustered)


def partition_values(column: pa.ChunkedArray | pa.Array, key: str) -> pa.Array:
    """The value of ``key`` in each row of a ``map<string, string>`` column (null where absent), without
    Arrow's per-row map lookup.

    Example:
        >>> m = pa.array([[("d", "1")], [("e", "x"), ("d", "2")], None], pa.map_(pa.string(), pa.string()))
        >>> partition_values(m, "d").to_pylist()
        ['1', '2', None]
    """
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = [_lookup(c, key) for c in chunks]
    if not parts:
        return pa.array([], pa.string())
    return pa.concat_arrays(parts) if len(parts) > 1 else parts[0]


def _lookup(arr: Any, key: str) -> pa.Array:
    n = len(arr)
    offsets = np.asarray(arr.offsets.to_numpy(), np.int64)
    keys, items = arr.keys, arr.items
    first = offsets[0]
    hits = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(keys, key), False).to_numpy(zero_copy_only=False)))
    hits = hits[(hits >= first) & (hits < offsets[-1])]
    if len(hits) == n and offsets[-1] - first == n and arr.null_count == 0:
        # one entry per row, each the key asked for: the items as they are
        return items.slice(first, n)
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))  # the row of each map entry
    row = owner[hits - first]
    row_ok = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))[row] if len(row) else np.zeros(0, np.bool_)
    row, hits = row[row_ok], hits[row_ok]
    index = np.full(n, -1, np.int64)
    index[row[::-1]] = hits[::-1]  # the first entry of a row wins
    return items.take(pa.array(index, mask=index < 0))


def zorder_tags(tags: pa.ChunkedArray | pa.Array) -> tuple[list[tuple[str, ...] | None], Ints]:
    """The ``ZCUBE_ZORDER_BY`` tag of each file (the columns an ``OPTIMIZE ZORDER BY`` or a clustering run
    wrote it by, as delta-spark and Databricks tag them): the distinct column lists, and each file's index
    into them (-1: no tag).

    Example:
        >>> t = pa.array([[("ZCUBE_ZORDER_BY", '["a"]')], None, [("ZCUBE_ZORDER_BY", '["a"]')]],
        ...              pa.map_(pa.string(), pa.string()))
        >>> zorder_tags(t)[0], zorder_tags(t)[1].tolist()
        ([('a',)], [0, -1, 0])
    """
    values = partition_values(tags, "ZCUBE_ZORDER_BY")
    if values.null_count == len(values):
        return [], np.full(len(values), -1, np.int64)
    encoded = pc.dictionary_encode(values)
    columns: list[tuple[str, ...] | None] = []
    for text in encoded.dictionary.to_pylist():
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        columns.append(tuple(str(c) for c in parsed) if isinstance(parsed, list) else None)
    index = np.asarray(pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False), np.int64)
    return columns, index


@dataclass(frozen=True)
class PartitionGroups:
    """Files grouped by partition: ``code`` (the partition of each file, 0..n-1) and each partition's values."""

    code: Ints
    values: list[dict[str, str | None]]


def group_partitions(columns: Sequence[tuple[str, pa.Array]]) -> PartitionGroups:
    """Group the files by the values of their partition columns (``(name, values)`` pairs, values one
    per file); partitions come in order of their values (nulls last).

    Example:
        >>> g = group_partitions([("d", pa.array(["b", "a", "b", None]))])
        >>> g.code.tolist(), g.values
        ([1, 0, 1, 2], [{'d': 'a'}, {'d': 'b'}, {'d': None}])
    """
    n = len(columns[0][1]) if columns else 0
    if n == 0:
        return PartitionGroups(np.zeros(0, np.int64), [])
    combined: Ints | None = None
    for _, values in columns:
        encoded = pc.dictionary_encode(values, null_encoding="encode")
        dictionary: list[str | None] = encoded.dictionary.to_pylist()
        order = sorted(range(len(dictionary)), key=lambda i: (dictionary[i] is None, dictionary[i] or ""))
        rank = np.empty(len(dictionary), np.int64)
        rank[order] = np.arange(len(dictionary))
        codes = rank[np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)]
        if combined is None:
            combined = codes  # every dictionary entry occurs: the codes are dense already
        else:  # sorted by (earlier columns, this one); renumbered densely
            combined = np.unique(combined * len(dictionary) + codes, return_inverse=True)[1].astype(np.int64)
    assert combined is not None
    groups = int(combined.max()) + 1
    first_at = np.empty(groups, np.int64)
    first_at[combined[::-1]] = np.arange(n - 1, -1, -1)  # the first file of each partition
    first = pa.array(first_at)
    picked = {name: values.take(first).to_pylist() for name, values in columns}
    rows = [{name: picked[name][i] for name, _ in columns} for i in range(len(first))]
    return PartitionGroups(combined, rows)


@dataclass(frozen=True)
class Tombstones:
    """The ``remove`` actions of the state whose files are not live again, and those past the retention."""

    count: int
    num_bytes: int
    expired: int
    reclaimable_bytes: int
    without_size: int


def tombstone_facts(
    tombstones: pa.Table, live_paths: pa.ChunkedArray | pa.Array, cutoff_ms: int, *, live_dvs: Bools | None = None
) -> Tombstones:
    """Tombstones not shadowed by a live file of the same path (a file whose deletion vector changed is
    removed and added again), and those removed at or before ``cutoff_ms`` (now less the retention; a
    tombstone without a deletion time counts as expired, as the checkpoint writer drops it). ``live_dvs``
    (which live files carry a deletion vector) narrows the search: a path can only be both live and a
    tombstone under two different deletion vectors, so when no tombstone has one, only live files with one
    can shadow it.

    Example:
        >>> t = pa.table({"path": ["a", "b", "c"], "size": [1, 2, None], "deletionTimestamp": [5, 50, 5]})
        >>> tombstone_facts(t, pa.array(["b"]), cutoff_ms=10)
        Tombstones(count=2, num_bytes=1, expired=2, reclaimable_bytes=1, without_size=1)
    """
    if tombstones.num_rows == 0:
        return Tombstones(0, 0, 0, 0, 0)
    paths = tombstones.column("path")
    tomb_dvs = "deletionVector" in tombstones.column_names and tombstones.column("deletionVector").null_count < \
        tombstones.num_rows
    if live_dvs is not None and not tomb_dvs:
        live_paths = pc.filter(live_paths, pa.array(live_dvs)) if live_dvs.any() else pa.array([], pa.string())
    live_hits = pc.filter(live_paths, pc.is_in(live_paths, value_set=pc.unique(paths))) if len(live_paths) else \
        pa.array([], pa.string())
    dead = np.asarray(pc.invert(pc.is_in(paths, value_set=pc.unique(live_hits))).to_numpy(zero_copy_only=False)) \
        if len(live_hits) else np.ones(tombstones.num_rows, np.bool_)
    sizes = tombstones.column("size")
    has_size = _valid(sizes)
    size = _ints(sizes)
    stamps = tombstones.column("deletionTimestamp")
    expired = dead & ~(_valid(stamps) & (_ints(stamps) > cutoff_ms))
    return Tombstones(
        count=int(dead.sum()),
        num_bytes=int(size[dead].sum()),
        expired=int(expired.sum()),
        reclaimable_bytes=int(size[expired].sum()),
        without_size=int((dead & ~has_size).sum()),
    )


@dataclass(frozen=True)
class SizeCells:
    """Files and bytes per (partition, size bin): each partition's non-empty bins ``(start, files, bytes)``,
    its files and bytes, and the table's files and bytes per bin -- all from one pass over the files."""

    bins: list[tuple[tuple[int, int, int], ...]]
    files: list[int]
    bytes: list[int]
    table_files: Ints
    table_bytes: Ints


def size_bins(code: Ints, size: Ints, bins: Ints, boundaries: Sequence[int], groups: int) -> SizeCells:
    """Sizes per (partition, bin): ``code`` is each file's partition (``0..groups-1``), ``bins`` its bin
    (:func:`~deltalog.log.histograms.bin_indexes` over ``boundaries``).

    Example:
        >>> c = size_bins(np.array([0, 0, 1]), np.array([1, 9000, 5]), np.array([0, 1, 0]), (0, 8192), 2)
        >>> c.bins, c.files, c.bytes, c.table_files.tolist(), c.table_bytes.tolist()
        ([((0, 1, 1), (8192, 1, 9000)), ((0, 1, 5),)], [2, 1], [9001, 5], [2, 1], [6, 9000])
    """
    nbins = len(boundaries)
    key = np.asarray(code, np.int64) * nbins + bins
    if groups * nbins <= min(_DENSE_CELLS, 4 * len(key)):
        counts = np.bincount(key, minlength=groups * nbins)
        totals = group_sums(key, size, groups * nbins)
        cells = np.flatnonzero(counts)
        counts, totals = counts[cells], totals[cells]
    else:
        cells, inverse = np.unique(key, return_inverse=True)
        counts = np.bincount(inverse, minlength=len(cells))
        totals = group_sums(inverse, size, len(cells))
    part, bin_of = cells // nbins, cells % nbins
    starts: list[int] = np.asarray(boundaries, np.int64)[bin_of].tolist()
    c, t = counts.tolist(), totals.tolist()
    edges = np.searchsorted(part, np.arange(groups + 1)).tolist()  # the cells come sorted by key
    return SizeCells(
        bins=[tuple(zip(starts[a:b], c[a:b], t[a:b])) for a, b in itertools.pairwise(edges)],
        files=group_sums(part, counts, groups).tolist(),
        bytes=group_sums(part, totals, groups).tolist(),
        table_files=group_sums(bin_of, counts, nbins),
        table_bytes=group_sums(bin_of, totals, nbins),
    )
