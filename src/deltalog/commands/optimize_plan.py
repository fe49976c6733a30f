"""Planning ``OPTIMIZE``: which files are rewritten together, and the Z-order curve. No engine, no IO.

* :func:`plan_compaction` -- per partition, the small files (below ``min_file_size``) and the files with
  deletion vectors are sorted by size and packed greedily into bins of at most ``max_file_size``
  bytes, as delta-spark does; each bin becomes one new file. A bin of a single file is left alone
  unless the file has a deletion vector (rewriting it purges the deleted rows);
* :func:`plan_zorder` -- one bin per partition holding every file of it, to be rewritten as about
  ``total size / max_file_size`` files ordered along the Z-curve;
* :func:`range_ids` and :func:`interleave_bits` -- the Z-value of a row: each column's value becomes
  its range number among the column's quantiles (range normalisation, so skewed or differently scaled
  columns weigh alike), and the bits of those numbers are interleaved, most significant first;
* :func:`stats_columns` -- the columns Delta collects min/max statistics for (Z-ordering by another
  column cannot help file skipping);
* :func:`size_summary` / :func:`size_percentiles` -- delta-spark's file-size metrics.

Example:
    >>> files = [{"path": f"{i}.parquet", "size": 10, "partitionValues": {}} for i in range(5)]
    >>> [len(b.files) for b in plan_compaction(files, max_file_size=30)]
    [3, 2]
    >>> interleave_bits([np.array([1]), np.array([0])], bits=1).tolist()
    [2]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import ArrayType, MapType, StructField, StructType

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "MAX_RANGE_BITS",
    "Bin",
    "bin_rows",
    "bits_per_column",
    "compaction_metrics",
    "fractions_for",
    "interleave_bits",
    "orderable",
    "partition_key",
    "plan_compaction",
    "plan_zorder",
    "range_ids",
    "range_probabilities",
    "sample_fractions",
    "size_percentiles",
    "size_summary",
    "stats_columns",
    "zorder_fields",
]

#: ``delta.targetFileSize`` / ``spark.databricks.delta.optimize.maxFileSize`` when neither is set: 1 GiB.
DEFAULT_MAX_FILE_SIZE = 1 << 30
#: At most this many bits (1,024 ranges) of each column go into a Z-value.
MAX_RANGE_BITS = 10
#: A Z-value is a non-negative int64: at most 62 bits in all.
_Z_BITS = 62

PartitionKey = tuple[tuple[str, str | None], ...]


def partition_key(row: Mapping[str, Any]) -> PartitionKey:
    """A file's partition values (an ``add_files()`` row's map, as pairs or a dict) as a sortable key.

    Example:
        >>> partition_key({"partitionValues": [("b", "2"), ("a", None)]})
        (('a', None), ('b', '2'))
    """
    values = row.get("partitionValues") or {}
    pairs = values.items() if isinstance(values, Mapping) else values
    return tuple(sorted((str(k), None if v is None else str(v)) for k, v in pairs))


def _has_dv(row: Mapping[str, Any]) -> bool:
    return bool(row.get("deletionVector"))


def _size(row: Mapping[str, Any]) -> int:
    return int(row.get("size") or 0)


@dataclass(frozen=True)
class Bin:
    """Files of one partition rewritten together into ``num_output_files`` new files.

    Example:
        >>> b = Bin((("p", "a"),), ({"path": "x", "size": 3}, {"path": "y", "size": 4}))
        >>> b.size, b.num_output_files, b.has_deletion_vectors
        (7, 1, False)
    """

    partition: PartitionKey
    files: tuple[Mapping[str, Any], ...]
    num_output_files: int = 1

    @property
    def size(self) -> int:
        """Total bytes of the bin's files.

        Example:
            >>> Bin((), ({"size": 2}, {"size": 5})).size
            7
        """
        return sum(_size(f) for f in self.files)

    @property
    def has_deletion_vectors(self) -> bool:
        """Whether any file of the bin has a deletion vector.

        Example:
            >>> Bin((), ({"size": 2, "deletionVector": {"cardinality": 1}},)).has_deletion_vectors
            True
        """
        return any(_has_dv(f) for f in self.files)


def _by_partition(files: Iterable[Mapping[str, Any]]) -> dict[PartitionKey, list[Mapping[str, Any]]]:
    groups: dict[PartitionKey, list[Mapping[str, Any]]] = {}
    for f in files:
        groups.setdefault(partition_key(f), []).append(f)
    return dict(sorted(groups.items(), key=lambda kv: tuple((k, v is not None, v or "") for k, v in kv[0])))


def _check_size(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive number of bytes, got {value!r}")


def plan_compaction(
    files: Iterable[Mapping[str, Any]], *, max_file_size: int, min_file_size: int | None = None
) -> list[Bin]:
    """Bins of files to compact (see the module docstring); ``min_file_size`` defaults to
    ``max_file_size``: files at least that large are left alone unless they have a deletion vector.

    Example:
        >>> fs = [{"path": "a", "size": 5, "partitionValues": {"p": "1"}},
        ...       {"path": "b", "size": 5, "partitionValues": {"p": "1"}},
        ...       {"path": "c", "size": 5, "partitionValues": {"p": "2"}}]
        >>> [(b.partition, [f["path"] for f in b.files]) for b in plan_compaction(fs, max_file_size=100)]
        [((('p', '1'),), ['a', 'b'])]
    """
    _check_size("max_file_size", max_file_size)
    small = max_file_size if min_file_size is None else min_file_size
    _check_size("min_file_size", small)
    bins: list[Bin] = []
    for key, group in _by_partition(files).items():
        chosen = sorted((f for f in group if _size(f) < small or _has_dv(f)), key=lambda f: (_size(f), str(f["path"])))
        current: list[Mapping[str, Any]] = []
        current_size = 0
        packed: list[list[Mapping[str, Any]]] = []
        for f in chosen:
            if current and current_size + _size(f) > max_file_size:
                packed.append(current)
                current, current_size = [], 0
            current.append(f)
            current_size += _size(f)
        if current:
            packed.append(current)
        for members in packed:
            if len(members) > 1 or any(_has_dv(f) for f in members):
                bins.append(Bin(key, tuple(members)))
    return bins


def plan_zorder(files: Iterable[Mapping[str, Any]], *, max_file_size: int) -> list[Bin]:
    """One bin per partition with all its files, to become ``max(1, size // max_file_size)`` files.

    Example:
        >>> fs = [{"path": str(i), "size": 40, "partitionValues": {}} for i in range(5)]
        >>> [(len(b.files), b.num_output_files) for b in plan_zorder(fs, max_file_size=50)]
        [(5, 4)]
    """
    _check_size("max_file_size", max_file_size)
    out = []
    for key, group in _by_partition(files).items():
        members = tuple(sorted(group, key=lambda f: str(f["path"])))
        total = sum(_size(f) for f in members)
        out.append(Bin(key, members, max(1, total // max_file_size)))
    return out


# ------------------------------------------------------------------------------------------ Z-order


def bits_per_column(num_columns: int) -> int:
    """Bits of each column's range number in a Z-value: at most :data:`MAX_RANGE_BITS`, and at most
    62 in all.

    Example:
        >>> bits_per_column(2), bits_per_column(7), bits_per_column(40)
        (10, 8, 1)
    """
    if num_columns < 1 or num_columns > _Z_BITS:
        raise ValueError(f"Z-ordering takes 1 to {_Z_BITS} columns, got {num_columns}")
    return max(1, min(MAX_RANGE_BITS, _Z_BITS // num_columns))


def range_probabilities(bits: int) -> list[float]:
    """The quantiles separating ``2**bits`` ranges of equal row counts.

    Example:
        >>> range_probabilities(2)
        [0.25, 0.5, 0.75]
    """
    ranges = 1 << bits
    return [k / ranges for k in range(1, ranges)]


def bin_rows(bins: Sequence[Bin]) -> list[int] | None:
    """Each bin's row count from its files' ``numRecords`` statistics; ``None`` when a file has none.

    Example:
        >>> bin_rows([Bin((), ({"path": "a", "size": 1, "stats": '{"numRecords": 7}'},))])
        [7]
    """
    counts = []
    for b in bins:
        rows = 0
        for f in b.files:
            try:
                n = json.loads(str(f.get("stats") or "{}")).get("numRecords")
            except ValueError:
                n = None
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                return None
            rows += n
        counts.append(rows)
    return counts


def sample_fractions(bins: Sequence[Bin], rows_per_bin: int) -> dict[int, float] | None:
    """Per bin (by index), the fraction of its rows to sample so that about ``rows_per_bin`` remain,
    from the files' ``numRecords`` statistics; ``None`` (use every row) when a file has no row count
    or no bin is larger than that.

    Example:
        >>> big = Bin((), ({"path": "a", "size": 1, "stats": '{"numRecords": 1000}'},))
        >>> small = Bin((), ({"path": "b", "size": 1, "stats": '{"numRecords": 10}'},))
        >>> sample_fractions([big, small], 100)
        {0: 0.1, 1: 1.0}
    """
    return fractions_for(bin_rows(bins), rows_per_bin)


def fractions_for(counts: Sequence[int] | None, rows_per_bin: int) -> dict[int, float] | None:
    """:func:`sample_fractions` from the bins' row counts (:func:`bin_rows`), when the caller has them.

    Example:
        >>> fractions_for([1000, 10], 100)
        {0: 0.1, 1: 1.0}
    """
    if not counts or max(counts) <= rows_per_bin:
        return None
    return {i: min(1.0, rows_per_bin / n) if n else 1.0 for i, n in enumerate(counts)}


def range_ids(keys: np.ndarray, bounds: np.ndarray | Sequence[float] | None) -> np.ndarray:
    """Each key's range number: how many of the sorted quantile ``bounds`` are below it (so keys up to
    the first bound are range 0). NaN ranks above everything, as in Spark; give nulls ``-inf``.

    Example:
        >>> range_ids(np.array([-np.inf, 1.0, 2.0, 2.5, 9.0, np.nan]), [2.0, 3.0]).tolist()
        [0, 0, 0, 1, 2, 2]
    """
    values = np.asarray(keys, dtype=np.float64)
    if bounds is None or len(bounds) == 0:
        return np.zeros(values.shape, dtype=np.int64)
    edges = np.sort(np.asarray(bounds, dtype=np.float64))
    return np.searchsorted(edges, values, side="left").astype(np.int64)


def interleave_bits(ids: Sequence[np.ndarray], *, bits: int) -> np.ndarray:
    """The Z-value of rows given each column's range numbers (``0 <= id < 2**bits``): bit by bit from
    the most significant, one bit of each column in turn (the first column's bit highest).

    Example:
        >>> interleave_bits([np.array([0b11, 0b00]), np.array([0b01, 0b10])], bits=2).tolist()
        [11, 4]
    """
    if not ids:
        raise ValueError("interleave_bits needs at least one column")
    if bits < 1 or bits * len(ids) > _Z_BITS:
        raise ValueError(f"{len(ids)} columns of {bits} bits do not fit a {_Z_BITS}-bit Z-value")
    columns = [np.asarray(a, dtype=np.int64) for a in ids]
    limit = 1 << bits
    for a in columns:
        if a.size and (int(a.min()) < 0 or int(a.max()) >= limit):
            raise ValueError(f"range numbers must lie in [0, {limit}), got {int(a.min())}..{int(a.max())}")
    z = np.zeros(columns[0].shape, dtype=np.int64)
    for shift in range(bits - 1, -1, -1):
        for a in columns:
            z = (z << 1) | ((a >> shift) & 1)
    return z


# -------------------------------------------------------------------------------------------- stats


def _leaf_names(schema: StructType, prefix: str = "") -> list[tuple[str, str]]:
    """(top-level column, leaf path) of every leaf, in schema order (arrays and maps are one leaf); the
    top-level name is the column's own, dots included."""
    out: list[tuple[str, str]] = []
    for f in schema.fields:
        path = f"{prefix}.{f.name}" if prefix else f.name
        if isinstance(f.type, StructType):
            out.extend((f.name if not prefix else top, leaf) for top, leaf in _leaf_names(f.type, path))
        else:
            out.append((f.name, path))
    return out


def _split_names(text: str) -> list[str]:
    """``delta.dataSkippingStatsColumns`` entries (comma separated, backticks allowed)."""
    names, current, quoted = [], "", False
    for ch in text:
        if ch == "`":
            quoted = not quoted
        elif ch == "," and not quoted:
            names.append(current.strip())
            current = ""
        else:
            current += ch
    names.append(current.strip())
    return [n for n in names if n]


def stats_columns(schema: StructType, partition_columns: Sequence[str], configuration: Mapping[str, str]) -> set[str]:
    """Top-level data columns (lower-cased) Delta collects statistics for: those named in
    ``delta.dataSkippingStatsColumns`` when set, else those with a leaf among the first
    ``delta.dataSkippingNumIndexedCols`` (default 32, ``-1`` all) leaves of the data columns.

    Example:
        >>> from deltalog.protocol.schema import parse_schema
        >>> s = parse_schema('{"type":"struct","fields":[' + ",".join(
        ...     f'{{"name":"c{i}","type":"long","nullable":true,"metadata":{{}}}}' for i in range(3)) + "]}")
        >>> sorted(stats_columns(s, [], {"delta.dataSkippingNumIndexedCols": "2"}))
        ['c0', 'c1']
    """
    parts = {p.lower() for p in partition_columns}
    data = StructType(tuple(f for f in schema.fields if f.name.lower() not in parts))
    listed = configuration.get("delta.dataSkippingStatsColumns")
    if listed:
        return {n.split(".")[0].lower() for n in _split_names(listed)}
    try:
        limit = int(configuration.get("delta.dataSkippingNumIndexedCols", "32"))
    except ValueError:
        limit = 32
    leaves = _leaf_names(data)
    if limit >= 0:
        leaves = leaves[:limit]
    return {top.lower() for top, _ in leaves}


def compaction_metrics(removed: Sequence[Mapping[str, Any]], added_sizes: Sequence[int]) -> dict[str, Any]:
    """The ``operationMetrics`` an ``OPTIMIZE`` commit adds to the transaction's own: the new files' size
    percentiles and the deletion vectors the rewritten files had (their rows are purged).

    Example:
        >>> m = compaction_metrics([{"deletionVector": {"cardinality": 2, "sizeInBytes": 34}}], [10])
        >>> m["numDeletionVectorRowsRemoved"], m["numDeletionVectorBytesRemoved"]
        (2, 34)
    """
    dvs = [f["deletionVector"] for f in removed if f.get("deletionVector")]
    return {
        **size_percentiles(list(added_sizes)),
        "numDeletionVectorsRemoved": len(dvs),
        "numDeletionVectorRowsRemoved": sum(int(d.get("cardinality") or 0) for d in dvs),
        "numDeletionVectorBytesRemoved": sum(int(d.get("sizeInBytes") or 0) for d in dvs),
    }


def zorder_fields(
    schema: StructType, partition_columns: Sequence[str], configuration: Mapping[str, str], columns: Sequence[str],
    *, require_stats: bool = True, stats_conf: str | None = None, table: str | None = None,
    version: int | None = None,
) -> list[StructField]:
    """The Z-order ``columns`` resolved (case-insensitively; ```a.b``` names a column called ``a.b``) to
    distinct, orderable data columns -- not partition columns, and (``require_stats``) columns Delta
    collects statistics for, without which Z-ordering cannot help skipping; errors name the column and the
    rule, with delta-spark's error classes (``stats_conf`` is the setting that turns the statistics check off).

    Example:
        >>> from deltalog.protocol.schema import parse_schema
        >>> s = parse_schema('{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]}')
        >>> [f.name for f in zorder_fields(s, [], {}, ["X"])]
        ['x']
    """
    where: dict[str, Any] = {"table": table, "version": version}
    if not columns:
        raise InvalidArgumentError("Z-ordering needs at least one column", **where)
    by_lower = {f.name.lower(): f for f in schema.fields}
    parts = {p.lower() for p in partition_columns}
    out: list[StructField] = []
    for name in columns:
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"Z-order columns must be column names, got {name!r}", **where)
        if len(name) > 2 and name.startswith("`") and name.endswith("`"):  # `a.b`: the column named a.b
            name = name[1:-1].replace("``", "`")
        if name.lower() in parts:
            raise InvalidArgumentError(
                f"[DELTA_ZORDERING_ON_PARTITION_COLUMN] {name} is a partition column; Z-ordering can only be "
                "performed on data columns", **where)
        f = by_lower.get(name.lower())
        if f is None:
            raise InvalidArgumentError(
                f"[DELTA_ZORDERING_COLUMN_DOES_NOT_EXIST] Z-order column {name} does not exist in the data schema "
                f"(top-level columns: {[c for c in schema.field_names if c.lower() not in parts]})", **where)
        if not orderable(f.type):
            raise InvalidArgumentError(f"cannot Z-order by column {f.name}: its type cannot be ordered", **where)
        if any(o.name == f.name for o in out):
            raise InvalidArgumentError(f"Z-order column {f.name} is listed twice", **where)
        out.append(f)
    with_stats = stats_columns(schema, partition_columns, configuration)
    missing = [f.name for f in out if f.name.lower() not in with_stats]
    if require_stats and missing:
        off = f"; set {stats_conf}=false to Z-order anyway" if stats_conf else ""
        raise InvalidArgumentError(
            f"[DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS] Z-ordering on {missing} will be ineffective: statistics "
            f"are not collected for these columns (see delta.dataSkippingNumIndexedCols and "
            f"delta.dataSkippingStatsColumns){off}", **where)
    bits_per_column(len(out))  # validates the count
    return out


def orderable(field_type: Any) -> bool:
    """Whether a column type can be Z-ordered (atomic types; not arrays, maps or structs, nor variant, void and
    geospatial ones, which have no order).

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> orderable(PrimitiveType("long")), orderable(PrimitiveType("variant"))
        (True, False)
    """
    if isinstance(field_type, (ArrayType, MapType, StructType)):
        return False
    name = getattr(field_type, "name", None)
    return name not in ("variant", "void") and not str(name).startswith(("geometry(", "geography("))


# ------------------------------------------------------------------------------------------ metrics


def size_summary(sizes: Sequence[int]) -> dict[str, Any]:
    """delta-spark's ``FileSizeMetrics``: ``min``, ``max`` (``None`` without files), ``avg``,
    ``totalFiles``, ``totalSize``.

    Example:
        >>> size_summary([4, 8])
        {'min': 4, 'max': 8, 'avg': 6.0, 'totalFiles': 2, 'totalSize': 12}
    """
    total = int(sum(sizes))
    return {
        "min": int(min(sizes)) if sizes else None,
        "max": int(max(sizes)) if sizes else None,
        "avg": total / len(sizes) if sizes else 0.0,
        "totalFiles": len(sizes),
        "totalSize": total,
    }


def size_percentiles(sizes: Sequence[int]) -> dict[str, int]:
    """The file-size histogram of an ``OPTIMIZE`` commit's ``operationMetrics`` (empty without files).

    Example:
        >>> size_percentiles([1, 2, 3, 4])
        {'minFileSize': 1, 'p25FileSize': 2, 'p50FileSize': 3, 'p75FileSize': 4, 'maxFileSize': 4}
    """
    if not sizes:
        return {}
    s = sorted(int(x) for x in sizes)
    n = len(s)
    return {
        "minFileSize": s[0],
        "p25FileSize": s[n // 4],
        "p50FileSize": s[n // 2],
        "p75FileSize": s[n * 3 // 4],
        "maxFileSize": s[-1],
    }
