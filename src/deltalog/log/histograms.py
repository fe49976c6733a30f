"""The histograms of a version checksum file (the protocol's "Version Checksum File" section).

* :class:`FileSizeHistogram` (the ``.crc`` field ``fileSizeHistogram``; delta-spark wrote it as
  ``histogramOpt`` before following the protocol's name): live files and their bytes per size bin. Bin ``i``
  holds the sizes from ``sortedBinBoundaries[i]`` (inclusive) to the next boundary (exclusive), the last bin
  is open-ended and the first boundary is 0. :data:`FILE_SIZE_BIN_BOUNDARIES` are the boundaries Delta's
  writers use (delta-spark, the Java and Rust kernels), so the histograms of all of them line up.
* :class:`DeletedRecordCountsHistogram` (``deletedRecordCountsHistogramOpt``): live files per number of rows
  their deletion vector deletes, in ten decades (:data:`DELETED_RECORD_BIN_STARTS`): no deleted row, 1-9,
  10-99, ..., 10,000,000 up to 2**31 - 2, and 2**31 - 1 or more. A file without a deletion vector counts in
  bin 0, so the counts add up to the number of live files.

Both are computed vectorized from Arrow/numpy columns (:meth:`FileSizeHistogram.of`) and moved forward by a
commit's added and removed files (:meth:`FileSizeHistogram.plus` / :meth:`~FileSizeHistogram.minus`), which
is how the checksum of the next version is kept incrementally.

Example:
    >>> h = FileSizeHistogram.of([100, 10_000, 5 * MIB])
    >>> h.num_files, h.num_bytes, h.counts_by_bin()[:3]
    (3, 5252980, [(0, 1, 100), (8192, 1, 10000), (4194304, 1, 5242880)])
    >>> DeletedRecordCountsHistogram.of([0, 3, None, 250]).deleted_record_counts[:4]
    (2, 1, 0, 1)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "DELETED_RECORD_BIN_STARTS",
    "FILE_SIZE_BIN_BOUNDARIES",
    "GIB",
    "KIB",
    "MIB",
    "DeletedRecordCountsHistogram",
    "FileSizeHistogram",
    "bin_indexes",
    "group_sums",
]

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


def _default_boundaries() -> tuple[int, ...]:
    """0; powers of two from 8 KiB to 4 MiB; steps of 4 MiB to 40 MiB, 8 MiB to 120 MiB, 4 MiB to 144 MiB,
    16 MiB to 576 MiB, 64 MiB to 1408 MiB, 128 MiB to 2 GiB, 256 MiB to 4 GiB; powers of two to 256 GiB."""
    out = [0, *(8 * KIB << i for i in range(10))]
    for start, stop, step in ((8, 40, 4), (48, 120, 8), (124, 144, 4), (160, 576, 16), (640, 1408, 64),
                              (1536, 2048, 128), (2304, 4096, 256)):
        out += [m * MIB for m in range(start, stop + 1, step)]
    out += [g * GIB for g in (8, 16, 32, 64, 128, 256)]
    return tuple(out)


#: The bin boundaries Delta's writers use for ``fileSizeHistogram`` (95 bins, see :func:`_default_boundaries`).
FILE_SIZE_BIN_BOUNDARIES: tuple[int, ...] = _default_boundaries()
#: The first deleted-row count of each of the ten bins of ``deletedRecordCountsHistogramOpt``.
DELETED_RECORD_BIN_STARTS: tuple[int, ...] = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000,
                                              2_147_483_647)

if TYPE_CHECKING:
    from typing import TypeAlias

    ArrayLike: TypeAlias = pa.Array[Any] | pa.ChunkedArray[Any] | np.ndarray[Any, Any] | Sequence[int | None]


def _int64(values: ArrayLike) -> np.ndarray:
    """``values`` as an int64 numpy array, nulls as 0."""
    if isinstance(values, np.ndarray):
        return values.astype(np.int64, copy=False)
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, pa.int64())
    if len(arr) == 0:
        return np.zeros(0, np.int64)
    filled = pc.fill_null(pc.cast(arr, pa.int64()), 0)
    if isinstance(filled, pa.ChunkedArray):
        filled = filled.combine_chunks()
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64)


def bin_indexes(values: ArrayLike, starts: Sequence[int]) -> np.ndarray:
    """The bin of each value: the index of the last start at or below it (values below the first start,
    and nulls, go to bin 0).

    Example:
        >>> bin_indexes([0, 8191, 8192, None, 10**13], FILE_SIZE_BIN_BOUNDARIES).tolist()
        [0, 0, 1, 0, 94]
    """
    idx = np.searchsorted(np.asarray(starts, np.int64), _int64(values), side="right") - 1
    return np.maximum(idx, 0)


_EXACT = 2**53  # float64 sums are exact up to here


def group_sums(idx: np.ndarray, weights: np.ndarray | None, n: int) -> np.ndarray:
    """Per group ``0..n-1`` (``idx`` per value): the count of values, or the exact sum of ``weights``
    (int64; a float bincount when no sum can pass 2**53, else integer accumulation).

    Example:
        >>> group_sums(np.array([0, 2, 2]), np.array([5, 1, 2]), 3).tolist()
        [5, 0, 3]
    """
    if weights is None:
        return np.bincount(idx, minlength=n).astype(np.int64)
    w = np.asarray(weights, np.int64)
    if len(w) == 0 or (int(np.abs(w).max()) * len(w) < _EXACT):
        return np.rint(np.bincount(idx, weights=w, minlength=n)).astype(np.int64)
    out = np.zeros(n, np.int64)
    np.add.at(out, idx, w)
    return out


_sums = group_sums


def _ints(obj: Mapping[str, Any], key: str) -> tuple[int, ...]:
    value = obj.get(key)
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise TypeError(f"{key!r} must be a list of integers, got {value!r:.80}")
    return tuple(value)


@dataclass(frozen=True)
class FileSizeHistogram:
    """Files and bytes per size bin (see the module docstring); the three tuples have one entry per bin.

    Example:
        >>> h = FileSizeHistogram.of([1, 2, 9000], boundaries=(0, 8192))
        >>> h.to_dict()
        {'sortedBinBoundaries': [0, 8192], 'fileCounts': [2, 1], 'totalBytes': [3, 9000]}
        >>> h.plus([5]).minus([9000]).file_counts
        (3, 0)
    """

    sorted_bin_boundaries: tuple[int, ...]
    file_counts: tuple[int, ...]
    total_bytes: tuple[int, ...]

    def __post_init__(self) -> None:
        b = self.sorted_bin_boundaries
        if not b or b[0] != 0:
            raise ValueError("a file size histogram's first bin boundary must be 0")
        if any(x >= y for x, y in itertools.pairwise(b)):
            raise ValueError("a file size histogram's bin boundaries must be strictly increasing")
        if not len(self.file_counts) == len(self.total_bytes) == len(b):
            raise ValueError(f"a file size histogram needs one count and one byte total per bin ({len(b)} bins, "
                             f"{len(self.file_counts)} counts, {len(self.total_bytes)} totals)")
        if any(c < 0 for c in self.file_counts) or any(t < 0 for t in self.total_bytes):
            raise ValueError("a file size histogram cannot hold negative counts or totals")

    @classmethod
    def of(cls, sizes: ArrayLike, boundaries: Sequence[int] = FILE_SIZE_BIN_BOUNDARIES) -> FileSizeHistogram:
        """The histogram of ``sizes`` (an Arrow or numpy column, or a list) over ``boundaries``.

        Example:
            >>> FileSizeHistogram.of([10, 20]).file_counts[0]
            2
        """
        values = _int64(sizes)
        return cls.of_bins(bin_indexes(values, boundaries), values, boundaries)

    @classmethod
    def of_bins(cls, bins: np.ndarray, sizes: np.ndarray, boundaries: Sequence[int]) -> FileSizeHistogram:
        """The histogram of ``sizes`` (int64) whose bins (:func:`bin_indexes`) are known already.

        Example:
            >>> FileSizeHistogram.of_bins(np.array([0, 1]), np.array([3, 9]), (0, 8)).total_bytes
            (3, 9)
        """
        n = len(boundaries)
        return cls(tuple(int(b) for b in boundaries), tuple(_sums(bins, None, n).tolist()),
                   tuple(_sums(bins, sizes, n).tolist()))

    @classmethod
    def from_dict(cls, obj: Any) -> FileSizeHistogram:
        """Parse the JSON object of a ``.crc`` file; raises ``TypeError`` / ``ValueError`` when it is not one.

        Example:
            >>> FileSizeHistogram.from_dict({"sortedBinBoundaries": [0, 9], "fileCounts": [1, 0],
            ...                              "totalBytes": [4, 0]}).num_bytes
            4
        """
        if not isinstance(obj, Mapping):
            raise TypeError("a file size histogram must be a JSON object")
        return cls(_ints(obj, "sortedBinBoundaries"), _ints(obj, "fileCounts"), _ints(obj, "totalBytes"))

    def to_dict(self) -> dict[str, list[int]]:
        """The JSON object of a ``.crc`` file (see the class example)."""
        return {"sortedBinBoundaries": list(self.sorted_bin_boundaries), "fileCounts": list(self.file_counts),
                "totalBytes": list(self.total_bytes)}

    @property
    def num_files(self) -> int:
        """Files in all bins.

        Example:
            >>> FileSizeHistogram.of([1, 10**9]).num_files
            2
        """
        return sum(self.file_counts)

    @property
    def num_bytes(self) -> int:
        """Bytes in all bins.

        Example:
            >>> FileSizeHistogram.of([1, 10**9]).num_bytes
            1000000001
        """
        return sum(self.total_bytes)

    def _shifted(self, sizes: ArrayLike, sign: int) -> FileSizeHistogram:
        values = _int64(sizes)
        idx = bin_indexes(values, self.sorted_bin_boundaries)
        n = len(self.sorted_bin_boundaries)
        counts = np.asarray(self.file_counts, np.int64) + sign * _sums(idx, None, n)
        totals = np.asarray(self.total_bytes, np.int64) + sign * _sums(idx, values, n)
        return FileSizeHistogram(self.sorted_bin_boundaries, tuple(counts.tolist()), tuple(totals.tolist()))

    def plus(self, sizes: ArrayLike) -> FileSizeHistogram:
        """This histogram with files of ``sizes`` added (a commit's ``add`` actions).

        Example:
            >>> FileSizeHistogram.of([]).plus([3]).num_bytes
            3
        """
        return self._shifted(sizes, 1)

    def minus(self, sizes: ArrayLike) -> FileSizeHistogram:
        """This histogram without files of ``sizes`` (a commit's ``remove`` actions); raises ``ValueError``
        when a bin would go negative (the files were not in it).

        Example:
            >>> FileSizeHistogram.of([3]).minus([3]).num_files
            0
        """
        return self._shifted(sizes, -1)

    def counts_by_bin(self) -> list[tuple[int, int, int]]:
        """``(bin start, files, bytes)`` of every bin holding a file, smallest first.

        Example:
            >>> FileSizeHistogram.of([5, 20_000]).counts_by_bin()
            [(0, 1, 5), (16384, 1, 20000)]
        """
        return [(b, c, t) for b, c, t in zip(self.sorted_bin_boundaries, self.file_counts, self.total_bytes) if c]


@dataclass(frozen=True)
class DeletedRecordCountsHistogram:
    """Live files per number of rows deleted by their deletion vector, in the ten bins of
    :data:`DELETED_RECORD_BIN_STARTS`.

    Example:
        >>> h = DeletedRecordCountsHistogram.of([0, 0, 12])
        >>> h.to_dict()
        {'deletedRecordCounts': [2, 0, 1, 0, 0, 0, 0, 0, 0, 0]}
        >>> h.minus([12]).plus([5]).deleted_record_counts[:3]
        (2, 1, 0)
    """

    deleted_record_counts: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.deleted_record_counts) != len(DELETED_RECORD_BIN_STARTS):
            raise ValueError(f"a deleted record counts histogram has {len(DELETED_RECORD_BIN_STARTS)} bins, "
                             f"got {len(self.deleted_record_counts)}")
        if any(c < 0 for c in self.deleted_record_counts):
            raise ValueError("a deleted record counts histogram cannot hold negative counts")

    @classmethod
    def of(cls, cardinalities: ArrayLike) -> DeletedRecordCountsHistogram:
        """The histogram of the files' deleted-row counts (null: no deletion vector, bin 0).

        Example:
            >>> DeletedRecordCountsHistogram.of([None, 10**10]).deleted_record_counts[-1]
            1
        """
        idx = bin_indexes(cardinalities, DELETED_RECORD_BIN_STARTS)
        return cls(tuple(_sums(idx, None, len(DELETED_RECORD_BIN_STARTS)).tolist()))

    @classmethod
    def from_dict(cls, obj: Any) -> DeletedRecordCountsHistogram:
        """Parse the JSON object of a ``.crc`` file; raises ``TypeError`` / ``ValueError`` when it is not one.

        Example:
            >>> DeletedRecordCountsHistogram.from_dict({"deletedRecordCounts": [1] + [0] * 9}).num_files
            1
        """
        if not isinstance(obj, Mapping):
            raise TypeError("a deleted record counts histogram must be a JSON object")
        return cls(_ints(obj, "deletedRecordCounts"))

    def to_dict(self) -> dict[str, list[int]]:
        """The JSON object of a ``.crc`` file (see the class example)."""
        return {"deletedRecordCounts": list(self.deleted_record_counts)}

    @property
    def num_files(self) -> int:
        """Files in all bins (every live file).

        Example:
            >>> DeletedRecordCountsHistogram.of([1, 2]).num_files
            2
        """
        return sum(self.deleted_record_counts)

    def _shifted(self, cardinalities: ArrayLike, sign: int) -> DeletedRecordCountsHistogram:
        idx = bin_indexes(cardinalities, DELETED_RECORD_BIN_STARTS)
        shift = sign * _sums(idx, None, len(DELETED_RECORD_BIN_STARTS))
        counts = np.asarray(self.deleted_record_counts, np.int64) + shift
        return DeletedRecordCountsHistogram(tuple(counts.tolist()))

    def plus(self, cardinalities: ArrayLike) -> DeletedRecordCountsHistogram:
        """With files of these deleted-row counts added.

        Example:
            >>> DeletedRecordCountsHistogram.of([]).plus([None]).deleted_record_counts[0]
            1
        """
        return self._shifted(cardinalities, 1)

    def minus(self, cardinalities: ArrayLike) -> DeletedRecordCountsHistogram:
        """Without files of these deleted-row counts; ``ValueError`` when a bin would go negative.

        Example:
            >>> DeletedRecordCountsHistogram.of([4]).minus([4]).num_files
            0
        """
        return self._shifted(cardinalities, -1)

