"""``OPTIMIZE`` compaction in the kernel, executed with Arrow (delta-rs's ``optimize.compact()``).

Per partition, the files below ``min_file_size`` and the files with a deletion vector are packed into bins
of at most ``max_file_size`` bytes (:func:`deltalog.commands.optimize_plan.plan_compaction`, as the Spark
engine plans them); each bin's live rows are written as one new file and the bin's files removed, all in
one ``OPTIMIZE`` commit whose file actions have ``dataChange=false`` (readers of the change data feed and
streams see nothing new). Deleted rows are purged on the way, row ids and commit versions kept on tables
with row tracking. ``partition_filter`` (a SQL condition or ``(column, op, value)`` list on partition
columns) limits the partitions compacted. A compaction that loses to a concurrent data change plans again
on the new snapshot (up to three times) rather than fail; the files it wrote are deleted.

``max_file_size`` defaults to ``delta.targetFileSize``, else 1 GiB (delta-spark's default), and
``min_file_size`` to ``max_file_size``. On a liquid-clustered table the files are compacted, not clustered
(the Spark engine's ``OPTIMIZE`` clusters them); Z-ordering is the Spark engine's too.

Example:
    >>> compact(deltalog.Table("/data/events"), max_file_size=128 << 20).num_files_removed   # doctest: +SKIP
    40
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.commands.optimize_plan import DEFAULT_MAX_FILE_SIZE, plan_compaction, size_percentiles
from deltalog.data.filters import normalize_filter, prune_files
from deltalog.data.read import kept_rows, map_files, read_file_rows, with_row_tracking_columns
from deltalog.data.write_files import DataFileWriter
from deltalog.errors import (
    ConcurrentModificationException,
    InvalidArgumentError,
    MetadataChangedException,
    ProtocolChangedException,
)
from deltalog.protocol.schema import StructType
from deltalog.txn.operations import Optimize
from deltalog.txn.row_tracking import tracked_fields

if TYPE_CHECKING:
    from deltalog.data.filters import FilterLike
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["CompactResult", "compact"]

log = logging.getLogger(__name__)

#: How many times a compaction plans again after losing to a concurrent data change.
ATTEMPTS = 3


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
    clock: Callable[[], int] | None = None,
) -> CompactResult:
    """Compact the table's small files (see the module docstring) in one ``OPTIMIZE`` commit.

    Example:
        >>> compact(deltalog.Table("/data/t"), partition_filter="day = '2024-05-01'").version  # doctest: +SKIP
        12
    """
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _compact_once(table, partition_filter, max_file_size, min_file_size, clock)
        except ConcurrentModificationException as exc:
            if attempt == ATTEMPTS or isinstance(exc, (ProtocolChangedException, MetadataChangedException)):
                raise
            log.info("compaction of %s lost to a concurrent commit (%s); planning again", table.location,
                     exc.message)
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
    clock: Callable[[], int] | None,
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
    bins = plan_compaction(prune_files(snap, conditions).to_pylist(), max_file_size=limit, min_file_size=small)
    if not bins:
        return CompactResult(version=None)
    tracked = tracked_fields(snap.protocol, snap.metadata)  # the rows keep their ids and commit versions
    schema = StructType((*snap.schema.fields, *tracked)) if tracked else snap.schema
    predicate = partition_filter if isinstance(partition_filter, str) else None
    txn = table.transaction(Optimize(predicate=predicate), snapshot=snap, **({"clock": clock} if clock else {}))
    written: list[str] = []

    def live_rows(add: dict[str, Any]) -> pa.Table:
        data = read_file_rows(snap, add, apply_deletion_vector=False)
        if tracked is not None:
            data = with_row_tracking_columns(snap, add, data, (tracked[0].name, tracked[1].name))
        return data.filter(pa.array(kept_rows(snap, add, data.num_rows)))

    def discard() -> None:
        for rel in written:
            table.store.delete(rel)

    added = []
    with txn.discard_unless_committed(discard):
        for b in bins:  # one bin in memory at a time, its files read side by side
            writer = DataFileWriter(table.store, schema, snap.partition_columns, target_file_size=2 * limit,
                                    column_mapping=snap.column_mapping_mode)
            try:
                for rows in map_files(live_rows, [dict(f) for f in b.files]):
                    writer.write(rows)
                files = writer.close()
            except BaseException:
                writer.abort()
                raise
            written.extend(f.rel_path for f in files)
            added.extend(files)
        removed = [dict(f) for b in bins for f in b.files]
        txn.read_files(str(f["path"]) for f in removed)
        txn.remove_files(removed, data_change=False)
        for f in added:
            txn.add_file(f.to_add(data_change=False))
        txn.keeps_row_ids = tracked is not None
        dvs = [f["deletionVector"] for f in removed if f.get("deletionVector")]
        purged = sum(int(d.get("cardinality") or 0) for d in dvs)
        result = txn.commit(metrics={
            **size_percentiles([f.size for f in added]),
            "numDeletionVectorsRemoved": len(dvs), "numDeletionVectorRowsRemoved": purged,
        })
    return CompactResult(
        version=result.version, num_files_added=len(added), num_files_removed=len(removed),
        num_deleted_rows_purged=purged, partitions_optimized=len({b.partition for b in bins}),
        metrics=dict(result.operation_metrics),
    )
