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
files of about ``max_file_size``, so that min/max statistics of each column skip files. A compacted bin is
read a few files at a time (:func:`~deltalog.commands.bins.bin_rows`); a partition is Z-ordered in memory up
to 512 MB of parquet, a larger one through local spill files (:mod:`deltalog.commands.zorder`).

``max_file_size`` defaults to ``delta.targetFileSize``, else 1 GiB (delta-spark's default), and
``min_file_size`` to ``max_file_size``. On a liquid-clustered table the files are compacted, not clustered
(the Spark engine's ``OPTIMIZE`` clusters them), and ``zorder_by`` is refused, as in delta-spark.

Example:
    >>> compact(deltalog.Table("/data/events"), max_file_size=128 << 20).num_files_removed   # doctest: +SKIP
    40
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

import deltalog.commands.zorder as z_order
from deltalog.commands.bins import bin_rows
from deltalog.commands.clustering import clustering_of
from deltalog.commands.optimize_plan import (
    DEFAULT_MAX_FILE_SIZE,
    Bin,
    PartitionKey,
    compaction_metrics,
    partition_key,
    plan_compaction,
    plan_zorder,
    zorder_fields,
)
from deltalog.data.filters import normalize_filter, prune_files
from deltalog.data.write_files import DataFileWriter, WrittenFile
from deltalog.errors import (
    ConcurrentModificationException,
    InvalidArgumentError,
    MetadataChangedException,
    ProtocolChangedException,
)
from deltalog.protocol.iceberg_compat import compat_version
from deltalog.protocol.schema import StructField
from deltalog.txn.operations import Optimize, Reorg
from deltalog.txn.row_tracking import tracked_fields, tracked_schema

if TYPE_CHECKING:
    from deltalog.data.filters import FilterLike
    from deltalog.data.read import ReadableSnapshot
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["CompactResult", "bin_pieces", "compact", "deleted_share", "purge", "replan_on_data_change"]

log = logging.getLogger(__name__)

#: How many times a compaction plans again after losing to a concurrent data change.
ATTEMPTS = 3
#: Bins compacted at once.
BIN_WORKERS = min(4, os.cpu_count() or 1)


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
    partitions: Iterable[Mapping[str, str | None]] | None = None,
    progress: Callable[[int], None] | None = None,
) -> CompactResult:
    """Compact the table's small files, or Z-order its partitions by ``zorder_by`` (see the module
    docstring), in one ``OPTIMIZE`` commit. ``partitions`` (partition values, as :attr:`PartitionHealth.values
    <deltalog.health.PartitionHealth.values>` give them) limits the compaction to those partitions besides
    ``partition_filter``; ``progress`` is called with the bytes of each bin once its new files are written.

    Example:
        >>> compact(deltalog.Table("/data/t"), partition_filter="day = '2024-05-01'").version  # doctest: +SKIP
        12
        >>> compact(deltalog.Table("/data/t"), zorder_by=["x", "y"]).num_files_added  # doctest: +SKIP
        8
    """
    if isinstance(zorder_by, str):
        raise InvalidArgumentError("zorder_by takes a list of column names", table=table.location)
    keys = None if partitions is None else {partition_key({"partitionValues": p}) for p in partitions}
    job = _Job(partition_filter, max_file_size, min_file_size, tuple(zorder_by), keys, None, progress)
    return replan_on_data_change(lambda: _compact_once(table, job, clock), table.location)


def purge(
    table: TableHandle,
    *,
    min_deleted_share: float = 0.0,
    partition_filter: FilterLike | None = None,
    partitions: Iterable[Mapping[str, str | None]] | None = None,
    clock: Callable[[], int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> CompactResult:
    """``REORG TABLE ... APPLY (PURGE)``: rewrite each file whose deletion vector deletes at least
    ``min_deleted_share`` of its rows (every file with a deletion vector by default) without the deleted
    rows, one new file per file, in one ``REORG`` commit (``dataChange=false``). ``partition_filter`` and
    ``partitions`` limit it as in :func:`compact`; a file whose row count is unknown (no statistics) is
    purged only when ``min_deleted_share`` is 0. Like a compaction, it plans again when it loses to a
    concurrent data change.

    Example:
        >>> purge(deltalog.Table("/data/t"), min_deleted_share=0.05).num_deleted_rows_purged  # doctest: +SKIP
        1200
    """
    if isinstance(min_deleted_share, bool) or not isinstance(min_deleted_share, (int, float)) or not (
            0.0 <= min_deleted_share <= 1.0):
        raise InvalidArgumentError(f"min_deleted_share must be a share between 0 and 1, got {min_deleted_share!r}",
                                   table=table.location)
    keys = None if partitions is None else {partition_key({"partitionValues": p}) for p in partitions}
    job = _Job(partition_filter, None, None, (), keys, float(min_deleted_share), progress)
    return replan_on_data_change(lambda: _compact_once(table, job, clock), table.location)


def deleted_share(row: Mapping[str, Any]) -> float | None:
    """The share of a file's rows its deletion vector deletes (0.0 without one; ``None`` when the file has
    a deletion vector but no row count in its statistics).

    Example:
        >>> deleted_share({"stats": '{"numRecords": 8}', "deletionVector": {"cardinality": 2}})
        0.25
    """
    dv = row.get("deletionVector")
    if not dv:
        return 0.0
    stats = row.get("stats")
    try:
        records = json.loads(stats).get("numRecords") if isinstance(stats, str) else None
    except ValueError:
        records = None
    if not isinstance(records, int) or records <= 0:
        return None
    return int(dv.get("cardinality") or 0) / records


@dataclass(frozen=True)
class _Job:
    """What one compaction (or purge) run asks for: the arguments, checked when the run plans."""

    partition_filter: Any
    max_file_size: int | None
    min_file_size: int | None
    zorder_by: tuple[str, ...]
    partitions: set[PartitionKey] | None
    #: A purge: the smallest deleted share of the files rewritten (``None``: a compaction).
    purge_share: float | None
    progress: Callable[[int], None] | None


def _purge_bins(files: Sequence[Mapping[str, Any]], share: float) -> list[Bin]:
    """One bin per file whose deletion vector deletes at least ``share`` of its rows."""
    out = []
    for f in files:
        found = deleted_share(f)
        if f.get("deletionVector") and ((found is None and share == 0.0) or (found is not None and found >= share)):
            out.append(Bin(partition_key(f), (f,)))
    return out


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


def _compact_once(table: TableHandle, job: _Job, clock: Callable[[], int] | None) -> CompactResult:
    snap = table.snapshot()
    loc = table.location
    partition_filter, zorder_by = job.partition_filter, job.zorder_by
    limit, small = _limits(snap, job.max_file_size, job.min_file_size)
    conditions, expression = normalize_filter(partition_filter, snap.schema, table=loc)
    outside = [c.column for c in conditions if c.column not in snap.partition_columns]
    if expression is not None or outside:
        raise InvalidArgumentError(
            f"partition_filter must compare partition columns {list(snap.partition_columns)} with values"
            + (f"; {outside[0]!r} is not one" if outside else ""), table=loc, version=snap.version)
    zorder = _zorder_fields(snap, zorder_by) if zorder_by else []
    files = prune_files(snap, conditions).to_pylist()
    if job.partitions is not None:
        files = [f for f in files if partition_key(f) in job.partitions]
    if job.purge_share is not None:
        bins = _purge_bins(files, job.purge_share)
    elif zorder:
        bins = plan_zorder(files, max_file_size=limit)
    else:
        bins = plan_compaction(files, max_file_size=limit, min_file_size=small)
    if not bins:
        return CompactResult(version=None)
    tracked = tracked_fields(snap.protocol, snap.metadata)  # the rows keep their ids and commit versions
    schema = tracked_schema(snap.schema, tracked)
    predicate = partition_filter if isinstance(partition_filter, str) else None
    op: Optimize | Reorg = (Reorg(predicate=predicate, apply_purge=True) if job.purge_share is not None
                            else Optimize(predicate=predicate, z_order_by=tuple(f.name for f in zorder)))
    txn = table.transaction(op, snapshot=snap, **({"clock": clock} if clock else {}))
    written: list[str] = []

    names = (tracked[0].name, tracked[1].name) if tracked is not None else None

    def discard() -> None:
        for rel in written:
            table.store.delete(rel)

    def write_bin(b: Bin) -> list[WrittenFile]:
        pieces, per_file = bin_pieces(snap, [dict(f) for f in b.files], names, [f.name for f in zorder],
                                      b.num_output_files)
        # a bin becomes one file (rolling over only at twice the limit), or its Z-ordered share of rows
        writer = DataFileWriter(table.store, schema, snap.partition_columns, target_file_size=2 * limit,
                                max_records_per_file=per_file, column_mapping=snap.column_mapping_mode,
                                iceberg_compat=compat_version(snap.metadata.configuration))
        try:
            for rows in pieces:
                writer.write(rows)
            done = writer.close()
        except BaseException:
            writer.abort()
            raise
        written.extend(f.rel_path for f in done)
        if job.progress is not None:
            job.progress(b.size)
        return done

    added: list[WrittenFile] = []
    with txn.discard_unless_committed(discard):
        # compacted bins side by side (pyarrow decodes and encodes without the GIL); a Z-ordered partition
        # may be held in memory, so those go one at a time
        for done in _map_bins(write_bin, bins, 1 if zorder else BIN_WORKERS):
            added.extend(done)
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


def _map_bins(write: Callable[[Bin], list[WrittenFile]], bins: Sequence[Bin], workers: int
              ) -> list[list[WrittenFile]]:
    """``write`` of each bin, in the bins' order, up to ``workers`` at once; on a failure the bins not
    started are dropped and the running ones finish (their files are recorded for the discard)."""
    if workers <= 1 or len(bins) < 2:
        return [write(b) for b in bins]
    pool = ThreadPoolExecutor(max_workers=min(workers, len(bins)))
    try:
        return list(pool.map(write, bins))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def bin_pieces(snap: ReadableSnapshot, files: Sequence[dict[str, Any]], row_tracking: tuple[str, str] | None,
               zorder: Sequence[str] = (), num_output_files: int = 1) -> tuple[Iterable[pa.Table], int | None]:
    """What a bin's new files hold: the pieces of rows to write, in order, and the most rows per file
    (``None``: no limit). Compacted, the bin's live rows file by file
    (:func:`~deltalog.commands.bins.bin_rows`); Z-ordered by ``zorder``, sorted by Z (in memory, or through
    spill files for a large partition: :mod:`deltalog.commands.zorder`), to be cut into ``num_output_files``
    files.

    Example:
        >>> pieces, per_file = bin_pieces(snap, files, None, ["x", "y"], 4)           # doctest: +SKIP
        >>> per_file                                                                     # doctest: +SKIP
        250
    """
    if not zorder:
        return bin_rows(snap, files, row_tracking), None
    if sum(int(f.get("size") or 0) for f in files) > z_order.IN_MEMORY_BYTES:  # through spill files
        spilled = z_order.spill_in_z_order(snap, files, row_tracking, zorder, num_output_files)
        return spilled.pieces(), max(1, -(-spilled.num_rows // num_output_files))
    rows = z_order.z_ordered(pa.concat_tables(list(bin_rows(snap, files, row_tracking))), zorder)
    return [rows], max(1, -(-rows.num_rows // num_output_files))


def _zorder_fields(snap: Snapshot, columns: Sequence[str]) -> list[StructField]:
    if clustering_of(snap):
        raise InvalidArgumentError(
            f"[DELTA_CLUSTERING_WITH_ZORDER_BY] the table is clustered by {clustering_of(snap)}: Z-ordering it is "
            "not allowed (the Spark engine's OPTIMIZE clusters it)", table=snap.table, version=snap.version)
    return zorder_fields(snap.schema, snap.partition_columns, snap.metadata.configuration, columns,
                         table=snap.table, version=snap.version)
