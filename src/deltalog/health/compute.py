""":func:`table_health`: a snapshot's :class:`~deltalog.health.model.TableHealth`, from its log alone.

The small-file threshold defaults to a quarter of the table's target file size (``delta.targetFileSize``,
else :data:`DEFAULT_TARGET_FILE_SIZE`, 128 MiB: the file size delta-spark's auto compaction and optimized
writes aim for), so 32 MiB by default: four such files fit in one target-sized file, so compacting them cuts
their number at least four times, while files between a quarter of the target and the target gain little
from a rewrite. OPTIMIZE's own default (``delta.targetFileSize``, else 1 GiB, with every file below it a
candidate) is a write target, not a measure of "small": with it nearly every table would be all small files.

Example:
    >>> import deltalog, pyarrow as pa
    >>> _ = deltalog.write_table("memory://compute-doc", pa.table({"id": [1, 2], "p": ["a", "b"]}),
    ...                          partition_by=["p"])
    >>> h = table_health(deltalog.Table("memory://compute-doc").snapshot())
    >>> h.num_files, [p.values for p in h.partitions], h.partition_skew
    (2, [{'p': 'a'}, {'p': 'b'}], 1.0)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.health.files import (
    FileFacts,
    file_facts,
    group_partitions,
    partition_values,
    size_bins,
    tombstone_facts,
    zorder_tags,
)
from deltalog.health.log_facts import log_size, scan_history
from deltalog.health.model import PartitionHealth, TableHealth
from deltalog.log.cleanup import DEFAULT_DELETED_FILE_RETENTION, duration_property_ms, now_ms
from deltalog.log.crc import read_crc
from deltalog.log.histograms import (
    DELETED_RECORD_BIN_STARTS,
    FILE_SIZE_BIN_BOUNDARIES,
    MIB,
    DeletedRecordCountsHistogram,
    FileSizeHistogram,
    bin_indexes,
    group_sums,
)
from deltalog.log.post_commit import checkpoint_interval
from deltalog.log.segment import list_log
from deltalog.protocol.features import reader_features, writer_features

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["DEFAULT_HISTORY_DEPTH", "DEFAULT_TARGET_FILE_SIZE", "default_small_file_threshold", "table_health",
           "target_file_size"]

#: The target file size when the table sets no ``delta.targetFileSize``.
DEFAULT_TARGET_FILE_SIZE = 128 * MIB
#: Commits scanned (newest first) for the last OPTIMIZE / Z-order / VACUUM.
DEFAULT_HISTORY_DEPTH = 1000

CLUSTERING_DOMAIN = "delta.clustering"


def target_file_size(properties: Mapping[str, str]) -> int:
    """``delta.targetFileSize`` in bytes, else :data:`DEFAULT_TARGET_FILE_SIZE` (an invalid value too).

    Example:
        >>> target_file_size({"delta.targetFileSize": "268435456"}), target_file_size({})
        (268435456, 134217728)
    """
    raw = properties.get("delta.targetFileSize")
    try:
        value = int(str(raw).strip()) if raw is not None else 0
    except ValueError:
        value = 0
    return value if value > 0 else DEFAULT_TARGET_FILE_SIZE


def default_small_file_threshold(properties: Mapping[str, str]) -> int:
    """The default small-file threshold: a quarter of :func:`target_file_size` (see the module docstring).

    Example:
        >>> default_small_file_threshold({}) // MIB
        32
    """
    return max(1, target_file_size(properties) // 4)


def table_health(
    snapshot: Snapshot,
    *,
    small_file_threshold: int | None = None,
    clock: Callable[[], int] | None = None,
    history_depth: int = DEFAULT_HISTORY_DEPTH,
    use_crc: bool = True,
) -> TableHealth:
    """The health of ``snapshot``'s table (see :mod:`deltalog.health`); no data file is read.

    ``small_file_threshold``: files below this many bytes are small (default: :func:`default_small_file_threshold`).
    ``clock``: epoch milliseconds now, for the tombstones past the retention (default: the system clock).
    ``history_depth``: at most this many commits are scanned for the last OPTIMIZE / VACUUM. ``use_crc``: take
    the file-size histogram from the version's ``.crc`` file when it is valid for the snapshot.

    Example:
        >>> table_health(deltalog.Table("/data/events").snapshot(), small_file_threshold=8 << 20)  # doctest: +SKIP
        TableHealth(table='/data/events', version=12, ...)
    """
    props = snapshot.properties
    threshold = small_file_threshold if small_file_threshold is not None else default_small_file_threshold(props)
    if threshold <= 0:
        from deltalog.errors import InvalidArgumentError

        raise InvalidArgumentError(f"small_file_threshold must be positive, got {threshold}", table=snapshot.table)
    files = snapshot.add_files()
    facts = file_facts(files, threshold)
    crc_histogram = _crc_histogram(snapshot, facts) if use_crc else None
    boundaries = crc_histogram.sorted_bin_boundaries if crc_histogram is not None else FILE_SIZE_BIN_BOUNDARIES
    bins = bin_indexes(facts.size, boundaries)
    partitions, summed = _partitions(snapshot, files, facts, bins, boundaries)
    histogram = crc_histogram or summed or FileSizeHistogram.of_bins(bins, facts.size, boundaries)
    clustering = _clustering_columns(snapshot)
    segment = snapshot.segment
    commits = [c for c in segment.all_commits if c.version <= snapshot.version]
    if history_depth > len(commits) and (not commits or commits[0].version > 0):
        # the segment lists the commits after its checkpoint only: the history goes further back
        start = max(0, snapshot.version - history_depth + 1)
        commits = [f for f in list_log(snapshot.store, start) if f.kind == "commit" and f.version <= snapshot.version]
    history = scan_history(snapshot.store, commits, table=snapshot.table, depth=history_depth,
                           need_zorder=not clustering)
    zorder_columns, zordered = _zorder(files, history.zorder_columns, history.zorder_paths, bool(clustering))
    retention = duration_property_ms(props, "delta.deletedFileRetentionDuration", DEFAULT_DELETED_FILE_RETENTION)
    now = now_ms(clock)
    tombs = tombstone_facts(snapshot.tombstones(), files.column("path"), now - retention, live_dvs=facts.has_dv)
    size = log_size(snapshot.store, snapshot.version)  # a checkpoint written after the snapshot was loaded counts
    stats, dv, small = facts.has_stats, facts.has_dv, facts.small
    deleted_with_stats = int(facts.deleted[stats].sum())
    physical = int(facts.records[stats].sum())
    dv_stats = dv & stats & (facts.records > 0)
    info = snapshot.commit_info
    checkpoint = size.checkpoint_version if size.checkpoint_version is not None else segment.checkpoint_version
    return TableHealth(
        table=snapshot.table,
        version=snapshot.version,
        timestamp=None if info is None else (info.inCommitTimestamp or info.timestamp),
        measured_at=now,
        min_reader_version=snapshot.protocol.minReaderVersion,
        min_writer_version=snapshot.protocol.minWriterVersion,
        reader_features=tuple(sorted(reader_features(snapshot.protocol))),
        writer_features=tuple(sorted(writer_features(snapshot.protocol))),
        partition_columns=snapshot.partition_columns,
        num_files=files.num_rows,
        num_bytes=int(facts.size.sum()),
        num_rows=physical - deleted_with_stats,
        num_physical_rows=physical,
        num_deleted_rows=int(facts.deleted.sum()),
        files_without_stats=int((~stats).sum()),
        bytes_without_stats=int(facts.size[~stats].sum()),
        file_size_histogram=histogram,
        file_size_histogram_source="crc" if crc_histogram is not None else "log",
        deleted_record_counts_histogram=DeletedRecordCountsHistogram.of(facts.deleted) if dv.any() else
        DeletedRecordCountsHistogram((files.num_rows, *(0,) * (len(DELETED_RECORD_BIN_STARTS) - 1))),
        target_file_size=target_file_size(props),
        small_file_threshold=threshold,
        num_small_files=int(small.sum()),
        small_file_bytes=int(facts.size[small].sum()),
        dv_files=int(dv.sum()),
        dv_bytes=int(facts.size[dv].sum()),
        dv_physical_rows=int(facts.records[dv & stats].sum()),
        deleted_bytes_estimate=int(np.round(
            (facts.size[dv_stats] * (facts.deleted[dv_stats] / facts.records[dv_stats])).sum())),
        partitions=partitions,
        clustering_columns=clustering,
        clustered_files=int(facts.clustered.sum()),
        clustered_bytes=int(facts.size[facts.clustered].sum()),
        zorder_columns=zorder_columns,
        zordered_files=int(zordered.sum()),
        zordered_bytes=int(facts.size[zordered].sum()),
        deleted_file_retention_ms=retention,
        num_tombstones=tombs.count,
        tombstone_bytes=tombs.num_bytes,
        expired_tombstones=tombs.expired,
        reclaimable_bytes=tombs.reclaimable_bytes,
        tombstones_without_size=tombs.without_size,
        checkpoint_version=checkpoint,
        checkpoint_timestamp=size.checkpoint_timestamp,
        commits_since_checkpoint=snapshot.version - (checkpoint if checkpoint is not None else -1),
        checkpoint_interval=checkpoint_interval(snapshot),
        log_files=size.num_files,
        log_bytes=size.num_bytes,
        last_optimize=history.last_optimize,
        last_zorder=history.last_zorder,
        last_vacuum=history.last_vacuum,
        history_commits_scanned=history.scanned,
        history_complete=history.complete,
    )


def _zorder(files: pa.Table, columns: tuple[str, ...] | None, paths: list[str], clustered: bool
            ) -> tuple[tuple[str, ...] | None, Any]:
    """The Z-order columns and which live files are Z-ordered by them: written by the ``OPTIMIZE ZORDER BY``
    commits the history scan found, or tagged ``ZCUBE_ZORDER_BY`` with those columns (the columns of the
    most files, when the history named none). A liquid-clustered table's tags are its clustering's."""
    zordered = np.zeros(files.num_rows, np.bool_)
    if paths and files.num_rows:
        zordered = np.asarray(pc.is_in(files.column("path"), value_set=pa.array(paths))
                              .to_numpy(zero_copy_only=False), np.bool_)
    if clustered or "tags" not in files.column_names or files.num_rows == 0:
        return columns, zordered
    tagged, index = zorder_tags(files.column("tags"))
    if not tagged:
        return columns, zordered
    if columns is None:
        counts = np.bincount(index[index >= 0], minlength=len(tagged))
        best = max((i for i, c in enumerate(tagged) if c), key=lambda i: counts[i], default=None)
        columns = tagged[best] if best is not None else None
    matching = [i for i, c in enumerate(tagged) if c is not None and c == columns]
    return columns, zordered | np.isin(index, matching)


def _crc_histogram(snapshot: Snapshot, facts: FileFacts) -> FileSizeHistogram | None:
    """The version's ``.crc`` histogram when it holds exactly the snapshot's files and bytes."""
    crc = read_crc(snapshot.store, snapshot.version, table=snapshot.table)  # also when the listing missed it
    hist = crc.file_size_histogram if crc is not None else None
    if hist is not None and hist.num_files == len(facts.size) and hist.num_bytes == int(facts.size.sum()):
        return hist
    return None


def _partitions(
    snapshot: Snapshot, files: pa.Table, facts: FileFacts, bins: Any, boundaries: tuple[int, ...]
) -> tuple[tuple[PartitionHealth, ...], FileSizeHistogram | None]:
    """Each partition's health, and the table's size histogram over ``boundaries`` summed from theirs
    (``None`` for a table that is not partitioned)."""
    if not snapshot.partition_columns or files.num_rows == 0:
        return (), None
    from deltalog.protocol.schema import physical_name

    mode = snapshot.column_mapping_mode
    column = files.column("partitionValues")
    keyed = [(name, partition_values(column, physical_name(snapshot.schema.field(name), mode)))
             for name in snapshot.partition_columns]
    groups = group_partitions(keyed)
    n, code = len(groups.values), groups.code
    cells = size_bins(code, facts.size, bins, boundaries, n)
    stats, dv = facts.has_stats, facts.has_dv
    live = facts.records - facts.deleted
    rows = (group_sums(code, live, n) if stats.all() else group_sums(code[stats], live[stats], n)).tolist()
    zeros = [0] * n
    deleted = group_sums(code, facts.deleted, n).tolist() if dv.any() else zeros
    dvs = np.bincount(code[dv], minlength=n).tolist() if dv.any() else zeros
    small = np.bincount(code[facts.small], minlength=n).tolist()
    histogram = FileSizeHistogram(tuple(boundaries), tuple(cells.table_files.tolist()),
                                  tuple(cells.table_bytes.tolist()))
    return tuple(PartitionHealth(groups.values[i], cells.files[i], cells.bytes[i], rows[i], deleted[i], small[i],
                                 dvs[i], cells.bins[i]) for i in range(n)), histogram


def _clustering_columns(snapshot: Snapshot) -> tuple[str, ...] | None:
    """The liquid clustering columns (logical dotted names) of the ``delta.clustering`` domain, ``None`` when
    the table is not clustered (or the domain is unreadable)."""
    domain = snapshot.domain_metadata(CLUSTERING_DOMAIN)
    if domain is None:
        return None
    try:
        paths = json.loads(domain)["clusteringColumns"]
        from deltalog.protocol.schema import StructType, physical_name

        mode = snapshot.column_mapping_mode
        names = []
        for path in paths:
            struct: Any = snapshot.schema
            parts = []
            for part in path:
                found = next(f for f in struct.fields if physical_name(f, mode) == part)
                parts.append(found.name)
                struct = found.type if isinstance(found.type, StructType) else None
            names.append(".".join(parts))
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError):
        return None
    return tuple(names) or None
