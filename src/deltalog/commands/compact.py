"""``OPTIMIZE`` compaction and ``ZORDER BY`` in the kernel, executed with Arrow (delta-rs's
``optimize.compact()`` / ``optimize.z_order()``).

Per partition, the files below ``min_file_size`` and the files with a deletion vector are packed into bins
of at most ``max_file_size`` bytes (:func:`deltalog.commands.optimize_plan.plan_compaction`, as the Spark
engine plans them); each bin's live rows are written as one new file and the bin's files removed, all in
one ``OPTIMIZE`` commit whose file actions have ``dataChange=false`` (readers of the change data feed and
streams see nothing new). Deleted rows are purged on the way, row ids and commit versions kept on tables
with row tracking. ``partition_filter`` (a SQL condition or ``(column, op, value)`` list on partition
columns) limits the partitions compacted. A compaction that loses to a concurrent data change plans again
on the new snapshot (up to three times) rather than fail; the files it wrote are deleted.

With ``zorder_by`` every file of each selected partition is rewritten instead, its rows ordered along
the Z-curve of those columns (each column's values mapped to ranges of equal row counts, the range numbers'
bits interleaved, as the Spark engine computes it; :mod:`deltalog.commands.optimize_plan`) and cut into
files of about ``max_file_size``, so that min/max statistics of each column skip files. A partition is held
in memory while it is Z-ordered; a compacted bin is read a few files at a time (:func:`bin_rows`).

``max_file_size`` defaults to ``delta.targetFileSize``, else 1 GiB (delta-spark's default), and
``min_file_size`` to ``max_file_size``. On a liquid-clustered table the files are compacted, not clustered
(the Spark engine's ``OPTIMIZE`` clusters them), and ``zorder_by`` is refused, as in delta-spark.

Example:
    >>> compact(deltalog.Table("/data/events"), max_file_size=128 << 20).num_files_removed   # doctest: +SKIP
    40
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.commands.clustering import clustering_of
from deltalog.commands.optimize_plan import (
    DEFAULT_MAX_FILE_SIZE,
    bits_per_column,
    compaction_metrics,
    interleave_bits,
    plan_compaction,
    plan_zorder,
    range_ids,
    range_probabilities,
    zorder_fields,
)
from deltalog.data.filters import normalize_filter, prune_files
from deltalog.data.read import kept_rows, map_files, read_file_rows, with_row_tracking_columns
from deltalog.data.write_files import DataFileWriter
from deltalog.errors import (
    ConcurrentModificationException,
    InvalidArgumentError,
    MetadataChangedException,
    ProtocolChangedException,
)
from deltalog.protocol.schema import StructField, StructType
from deltalog.txn.operations import Optimize
from deltalog.txn.row_tracking import tracked_fields

if TYPE_CHECKING:
    from deltalog.data.filters import FilterLike
    from deltalog.data.read import ReadableSnapshot
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["CompactResult", "bin_pieces", "bin_rows", "compact", "replan_on_data_change", "z_ordered"]

log = logging.getLogger(__name__)

#: How many times a compaction plans again after losing to a concurrent data change.
ATTEMPTS = 3
#: Files of a bin read at once, and the most bytes of parquet read at once when they are large.
WINDOW_FILES = 8
WINDOW_BYTES = 128 << 20


@dataclass(frozen=True)
class CompactResult:
    """What a compaction did; ``version`` is ``None`` when there was nothing to compact.

    Example:
        >>> CompactResult(version=None).num_files_removed
        0
    """

    version: int | None
    num_files_added: int = 0
    num_files_removed: int = 0
    num_deleted_rows_purged: int = 0
    partitions_optimized: int = 0
    metrics: Mapping[str, Any] = field(default_factory=dict)


def compact(
    table: TableHandle,
    *,
    partition_filter: FilterLike | None = None,
    max_file_size: int | None = None,
    min_file_size: int | None = None,
    zorder_by: Sequence[str] = (),
    clock: Callable[[], int] | None = None,
) -> CompactResult:
    """Compact the table's small files, or Z-order its partitions by ``zorder_by`` (see the module
    docstring), in one ``OPTIMIZE`` commit.

    Example:
        >>> compact(deltalog.Table("/data/t"), partition_filter="day = '2024-05-01'").version  # doctest: +SKIP
        12
        >>> compact(deltalog.Table("/data/t"), zorder_by=["x", "y"]).num_files_added  # doctest: +SKIP
        8
    """
    if isinstance(zorder_by, str):
        raise InvalidArgumentError("zorder_by takes a list of column names", table=table.location)
    return replan_on_data_change(
        lambda: _compact_once(table, partition_filter, max_file_size, min_file_size, tuple(zorder_by), clock),
        table.location)


_T = TypeVar("_T")


def replan_on_data_change(run: Callable[[], _T], location: str) -> _T:
    """``run()`` (a whole compaction: plan, write, commit), again on the new snapshot when it lost to a
    concurrent data change -- compaction is never worth failing a job for -- up to :data:`ATTEMPTS` times;
    protocol and metadata changes are raised at once. The Spark engine's OPTIMIZE runs through it too.

    Example:
        >>> replan_on_data_change(lambda: 7, "/data/t")
        7
    """
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return run()
        except ConcurrentModificationException as exc:
            if attempt == ATTEMPTS or isinstance(exc, (ProtocolChangedException, MetadataChangedException)):
                raise
            log.info("compaction of %s lost to a concurrent commit (%s); planning again", location, exc.message)
    raise AssertionError("unreachable")  # pragma: no cover


def _size(value: Any, name: str, loc: str) -> int:
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be a number of bytes, got {value!r}", table=loc) from None
    if size <= 0:
        raise InvalidArgumentError(f"{name} must be positive, got {size}", table=loc)
    return size


def _limits(snap: Snapshot, max_file_size: int | None, min_file_size: int | None) -> tuple[int, int]:
    loc = snap.table
    conf = snap.metadata.configuration.get("delta.targetFileSize")
    limit = (_size(max_file_size, "max_file_size", loc) if max_file_size is not None
             else _size(conf, "delta.targetFileSize", loc) if conf is not None else DEFAULT_MAX_FILE_SIZE)
    small = _size(min_file_size, "min_file_size", loc) if min_file_size is not None else limit
    return limit, small


def _compact_once(
    table: TableHandle, partition_filter: Any, max_file_size: int | None, min_file_size: int | None,
    zorder_by: tuple[str, ...], clock: Callable[[], int] | None,
) -> CompactResult:
    snap = table.snapshot()
    loc = table.location
    limit, small = _limits(snap, max_file_size, min_file_size)
    conditions, expression = normalize_filter(partition_filter, snap.schema, table=loc)
    outside = [c.column for c in conditions if c.column not in snap.partition_columns]
    if expression is not None or outside:
        raise InvalidArgumentError(
            f"partition_filter must compare partition columns {list(snap.partition_columns)} with values"
            + (f"; {outside[0]!r} is not one" if outside else ""), table=loc, version=snap.version)
    zorder = _zorder_fields(snap, zorder_by) if zorder_by else []
    files = prune_files(snap, conditions).to_pylist()
    bins = plan_zorder(files, max_file_size=limit) if zorder else plan_compaction(
        files, max_file_size=limit, min_file_size=small)
    if not bins:
        return CompactResult(version=None)
    tracked = tracked_fields(snap.protocol, snap.metadata)  # the rows keep their ids and commit versions
    schema = StructType((*snap.schema.fields, *tracked)) if tracked else snap.schema
    predicate = partition_filter if isinstance(partition_filter, str) else None
    op = Optimize(predicate=predicate, z_order_by=tuple(f.name for f in zorder))
    txn = table.transaction(op, snapshot=snap, **({"clock": clock} if clock else {}))
    written: list[str] = []

    names = (tracked[0].name, tracked[1].name) if tracked is not None else None

    def discard() -> None:
        for rel in written:
            table.store.delete(rel)

    added = []
    with txn.discard_unless_committed(discard):
        for b in bins:
            pieces, per_file = bin_pieces(snap, [dict(f) for f in b.files], names, [f.name for f in zorder],
                                          b.num_output_files)
            # a bin becomes one file (rolling over only at twice the limit), or its Z-ordered share of rows
            writer = DataFileWriter(table.store, schema, snap.partition_columns, target_file_size=2 * limit,
                                    max_records_per_file=per_file, column_mapping=snap.column_mapping_mode)
            try:
                for rows in pieces:
                    writer.write(rows)
                written_files = writer.close()
            except BaseException:
                writer.abort()
                raise
            written.extend(f.rel_path for f in written_files)
            added.extend(written_files)
        removed = [dict(f) for b in bins for f in b.files]
        txn.read_files(str(f["path"]) for f in removed)
        txn.remove_files(removed, data_change=False)
        for f in added:
            txn.add_file(f.to_add(data_change=False))
        txn.keeps_row_ids = tracked is not None
        metrics = compaction_metrics(removed, [f.size for f in added])
        purged = int(metrics["numDeletionVectorRowsRemoved"])
        result = txn.commit(metrics=metrics)
    return CompactResult(
        version=result.version, num_files_added=len(added), num_files_removed=len(removed),
        num_deleted_rows_purged=purged, partitions_optimized=len({b.partition for b in bins}),
        metrics=dict(result.operation_metrics),
    )


def _windows(files: Sequence[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """``files`` in consecutive groups of at most :data:`WINDOW_FILES` files or :data:`WINDOW_BYTES`."""
    window: list[dict[str, Any]] = []
    size = 0
    for f in files:
        if window and (len(window) == WINDOW_FILES or size + int(f.get("size") or 0) > WINDOW_BYTES):
            yield window
            window, size = [], 0
        window.append(f)
        size += int(f.get("size") or 0)
    if window:
        yield window


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

    for window in _windows(files):
        yield from map_files(live_rows, window)


def bin_pieces(snap: ReadableSnapshot, files: Sequence[dict[str, Any]], row_tracking: tuple[str, str] | None,
               zorder: Sequence[str] = (), num_output_files: int = 1) -> tuple[Iterable[pa.Table], int | None]:
    """What a bin's new files hold: the pieces of rows to write, in order, and the most rows per file
    (``None``: no limit). Compacted, the bin's live rows file by file (:func:`bin_rows`); Z-ordered by
    ``zorder``, all of them in memory, sorted by Z, to be cut into ``num_output_files`` files.

    Example:
        >>> pieces, per_file = bin_pieces(snap, files, None, ["x", "y"], 4)           # doctest: +SKIP
        >>> per_file                                                                     # doctest: +SKIP
        250
    """
    pieces = bin_rows(snap, files, row_tracking)
    if not zorder:
        return pieces, None
    rows = z_ordered(pa.concat_tables(list(pieces)), zorder)
    return [rows], max(1, -(-rows.num_rows // num_output_files))


def _zorder_fields(snap: Snapshot, columns: Sequence[str]) -> list[StructField]:
    if clustering_of(snap):
        raise InvalidArgumentError(
            f"[DELTA_CLUSTERING_WITH_ZORDER_BY] the table is clustered by {clustering_of(snap)}: Z-ordering it is "
            "not allowed (the Spark engine's OPTIMIZE clusters it)", table=snap.table, version=snap.version)
    return zorder_fields(snap.schema, snap.partition_columns, snap.metadata.configuration, columns,
                         table=snap.table, version=snap.version)


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
    ids = []
    for name in columns:
        keys = _z_key(_column(rows, name))
        known = keys[np.isfinite(keys)]
        bounds = np.unique(np.quantile(known, range_probabilities(bits))) if len(known) else None
        ids.append(range_ids(keys, bounds))
    order = np.argsort(interleave_bits(ids, bits=bits), kind="stable")
    return rows.take(pa.array(order))
