"""The typed result of a health check (:class:`TableHealth`), its JSON document and its thresholds.

Counts are exact sums over the log's ``add`` / ``remove`` actions at the version; shares and ratios are
derived from them (``docs/health.md`` says what each number means). Rows come from the ``numRecords``
statistic, so files without statistics are counted apart (``files_without_stats``) and left out of every row
count and row share.

Example:
    >>> h = TableHealth.empty("t", 0)
    >>> h.small_file_share, h.read_amplification, [str(b) for b in h.breaches(max_small_file_share=0.5)]
    (0.0, None, [])
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from deltalog.log.histograms import DeletedRecordCountsHistogram, FileSizeHistogram

__all__ = ["Breach", "CommitRef", "PartitionHealth", "TableHealth"]


@dataclass(frozen=True)
class CommitRef:
    """A commit of the table's history: its version, time (``inCommitTimestamp``, else the ``commitInfo``
    timestamp, else the file's modification time; epoch ms), operation and parameters.

    Example:
        >>> CommitRef(7, 1_700_000_000_000, "OPTIMIZE", {"zOrderBy": '["id"]'}).operation
        'OPTIMIZE'
    """

    version: int
    timestamp: int | None
    operation: str | None
    parameters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionHealth:
    """The live files of one partition: counts, rows and the non-empty bins of their size histogram,
    ``(bin start, files, bytes)`` over the table histogram's boundaries.

    Example:
        >>> p = PartitionHealth({"day": "2024-05-01"}, 4, 400, 40, 0, 3, 0, ((0, 4, 400),))
        >>> p.small_file_share
        0.75
    """

    values: Mapping[str, str | None]
    num_files: int
    num_bytes: int
    num_rows: int
    num_deleted_rows: int
    num_small_files: int
    num_dv_files: int
    size_bins: tuple[tuple[int, int, int], ...]

    @property
    def small_file_share(self) -> float:
        """Small files over files (0.0 for none).

        Example:
            >>> PartitionHealth({}, 0, 0, 0, 0, 0, 0, ()).small_file_share
            0.0
        """
        return self.num_small_files / self.num_files if self.num_files else 0.0


@dataclass(frozen=True)
class Breach:
    """A threshold a health check passed: ``metric`` is ``value``, more than ``limit``.

    Example:
        >>> str(Breach("small_file_share", 0.8, 0.5))
        'small_file_share is 0.8, above the limit 0.5'
    """

    metric: str
    value: float
    limit: float

    def __str__(self) -> str:
        return f"{self.metric} is {self.value:g}, above the limit {self.limit:g}"


@dataclass(frozen=True)
class TableHealth:
    """What the log says about a table's layout and upkeep at one version (see the module docstring and
    ``docs/health.md``). Get one from :meth:`deltalog.Table.health`.

    Example:
        >>> h = deltalog.Table("/data/events").health()                       # doctest: +SKIP
        >>> h.num_files, h.small_file_share, h.deleted_row_share              # doctest: +SKIP
        (1200, 0.62, 0.31)
    """

    table: str
    version: int
    #: When the version was committed (epoch ms), and when the check ran.
    timestamp: int | None = None
    measured_at: int = 0
    min_reader_version: int = 1
    min_writer_version: int = 2
    reader_features: tuple[str, ...] = ()
    writer_features: tuple[str, ...] = ()
    partition_columns: tuple[str, ...] = ()
    # ---- files and rows
    num_files: int = 0
    num_bytes: int = 0
    #: Live rows (``numRecords`` less deleted rows) and rows in the data files, over files with statistics.
    num_rows: int = 0
    num_physical_rows: int = 0
    #: Rows deletion vectors delete, over every file.
    num_deleted_rows: int = 0
    files_without_stats: int = 0
    bytes_without_stats: int = 0
    file_size_histogram: FileSizeHistogram = field(default_factory=lambda: FileSizeHistogram.of([]))
    #: ``"crc"`` when the version's checksum file gave the histogram, ``"log"`` when it was computed.
    file_size_histogram_source: str = "log"
    deleted_record_counts_histogram: DeletedRecordCountsHistogram = field(
        default_factory=lambda: DeletedRecordCountsHistogram.of([]))
    # ---- small files
    target_file_size: int = 0
    small_file_threshold: int = 0
    num_small_files: int = 0
    small_file_bytes: int = 0
    # ---- deletion vectors
    dv_files: int = 0
    dv_bytes: int = 0
    #: Rows in the data files that carry a deletion vector (files with statistics).
    dv_physical_rows: int = 0
    #: Bytes a full scan reads for deleted rows: each file's size times its deleted share.
    deleted_bytes_estimate: int = 0
    # ---- partitions
    partitions: tuple[PartitionHealth, ...] = field(default=(), repr=False)
    # ---- clustering
    clustering_columns: tuple[str, ...] | None = None
    clustered_files: int = 0
    clustered_bytes: int = 0
    zorder_columns: tuple[str, ...] | None = None
    zordered_files: int = 0
    zordered_bytes: int = 0
    # ---- tombstones and VACUUM
    deleted_file_retention_ms: int = 0
    num_tombstones: int = 0
    tombstone_bytes: int = 0
    expired_tombstones: int = 0
    reclaimable_bytes: int = 0
    tombstones_without_size: int = 0
    # ---- the log
    checkpoint_version: int | None = None
    checkpoint_timestamp: int | None = None
    commits_since_checkpoint: int = 0
    checkpoint_interval: int = 10
    log_files: int = 0
    log_bytes: int = 0
    last_optimize: CommitRef | None = None
    last_zorder: CommitRef | None = None
    last_vacuum: CommitRef | None = None
    history_commits_scanned: int = 0
    history_complete: bool = True

    @classmethod
    def empty(cls, table: str, version: int) -> TableHealth:
        """The health of a table with no file (a start for tests and examples).

        Example:
            >>> TableHealth.empty("t", 3).version
            3
        """
        return cls(table=table, version=version)

    def with_(self, **changes: Any) -> TableHealth:
        """A copy with some fields changed.

        Example:
            >>> TableHealth.empty("t", 0).with_(num_files=2).num_files
            2
        """
        return replace(self, **changes)

    # ------------------------------------------------------------------------------------ derived

    @property
    def small_file_share(self) -> float:
        """Files below :attr:`small_file_threshold` over live files (0.0 for an empty table).

        Example:
            >>> TableHealth.empty("t", 0).with_(num_files=4, num_small_files=1).small_file_share
            0.25
        """
        return self.num_small_files / self.num_files if self.num_files else 0.0

    @property
    def deleted_row_share(self) -> float:
        """Rows deleted by deletion vectors over the rows in the data files (files with statistics).

        Example:
            >>> TableHealth.empty("t", 0).with_(num_physical_rows=10, num_rows=7).deleted_row_share
            0.3
        """
        return (self.num_physical_rows - self.num_rows) / self.num_physical_rows if self.num_physical_rows else 0.0

    @property
    def read_amplification(self) -> float | None:
        """Rows a full scan reads per row it returns (1.0 without deletion vectors; ``None`` when no row is
        live or no file has statistics).

        Example:
            >>> TableHealth.empty("t", 0).with_(num_physical_rows=10, num_rows=8).read_amplification
            1.25
        """
        return self.num_physical_rows / self.num_rows if self.num_rows else None

    @property
    def partition_skew(self) -> float | None:
        """The largest partition's bytes over the median partition's (1.0: even; ``None`` when the table is
        not partitioned or the median partition is empty).

        Example:
            >>> parts = tuple(PartitionHealth({"p": str(i)}, 1, b, 0, 0, 0, 0, ()) for i, b in enumerate([1, 2, 9]))
            >>> TableHealth.empty("t", 0).with_(partitions=parts).partition_skew
            4.5
        """
        if not self.partitions:
            return None
        median = statistics.median(p.num_bytes for p in self.partitions)
        return max(p.num_bytes for p in self.partitions) / median if median else None

    @property
    def clustered_share(self) -> float | None:
        """Bytes in files written clustered (``clusteringProvider``) over live bytes; ``None`` when the table
        has no clustering columns.

        Example:
            >>> TableHealth.empty("t", 0).clustered_share is None
            True
        """
        if not self.clustering_columns:
            return None
        return self.clustered_bytes / self.num_bytes if self.num_bytes else 0.0

    @property
    def zordered_share(self) -> float | None:
        """Bytes in files written by ``OPTIMIZE ZORDER BY`` :attr:`zorder_columns` over live bytes; ``None``
        when no Z-order was found in the history scanned.

        Example:
            >>> TableHealth.empty("t", 0).with_(zorder_columns=("id",), num_bytes=10, zordered_bytes=5).zordered_share
            0.5
        """
        if not self.zorder_columns:
            return None
        return self.zordered_bytes / self.num_bytes if self.num_bytes else 0.0

    # ---------------------------------------------------------------------------------- thresholds

    def breaches(
        self,
        *,
        max_small_file_share: float | None = None,
        max_deleted_share: float | None = None,
        max_commits_since_checkpoint: int | None = None,
        max_reclaimable_bytes: int | None = None,
    ) -> list[Breach]:
        """The thresholds given that the table passes (``None``: not checked): the share of small files, the
        share of deleted rows, the commits a reader replays after the last checkpoint, and the bytes a VACUUM
        would reclaim.

        Example:
            >>> h = TableHealth.empty("t", 0).with_(num_files=10, num_small_files=9, commits_since_checkpoint=3)
            >>> [b.metric for b in h.breaches(max_small_file_share=0.5, max_commits_since_checkpoint=5)]
            ['small_file_share']
        """
        checks: list[tuple[str, float, float | None]] = [
            ("small_file_share", self.small_file_share, max_small_file_share),
            ("deleted_row_share", self.deleted_row_share, max_deleted_share),
            ("commits_since_checkpoint", self.commits_since_checkpoint, max_commits_since_checkpoint),
            ("reclaimable_bytes", self.reclaimable_bytes, max_reclaimable_bytes),
        ]
        return [Breach(name, value, limit) for name, value, limit in checks if limit is not None and value > limit]

    # ------------------------------------------------------------------------------------ document

    def to_dict(self, *, partitions: bool = True) -> dict[str, Any]:
        """The JSON document ``deltalog health --json`` prints (``docs/health.md`` describes it); without
        ``partitions`` the per-partition list is left out.

        Example:
            >>> sorted(TableHealth.empty("t", 0).to_dict())[:4]
            ['clustering', 'deletion_vectors', 'file_size_histogram', 'files']
        """
        hist = self.file_size_histogram.to_dict()
        out: dict[str, Any] = {
            "table": self.table,
            "version": self.version,
            "timestamp": self.timestamp,
            "measured_at": self.measured_at,
            "protocol": {
                "min_reader_version": self.min_reader_version, "min_writer_version": self.min_writer_version,
                "reader_features": list(self.reader_features), "writer_features": list(self.writer_features),
            },
            "files": {
                "num_files": self.num_files, "num_bytes": self.num_bytes, "num_rows": self.num_rows,
                "num_physical_rows": self.num_physical_rows, "num_deleted_rows": self.num_deleted_rows,
                "files_without_stats": self.files_without_stats, "bytes_without_stats": self.bytes_without_stats,
            },
            "file_size_histogram": {**hist, "source": self.file_size_histogram_source},
            "small_files": {
                "target_file_size": self.target_file_size, "threshold": self.small_file_threshold,
                "num_files": self.num_small_files, "num_bytes": self.small_file_bytes,
                "share": self.small_file_share,
            },
            "deletion_vectors": {
                "num_files": self.dv_files, "num_bytes": self.dv_bytes, "num_physical_rows": self.dv_physical_rows,
                "num_deleted_rows": self.num_deleted_rows, "deleted_row_share": self.deleted_row_share,
                "read_amplification": self.read_amplification,
                "deleted_bytes_estimate": self.deleted_bytes_estimate,
                "deleted_record_counts_histogram": list(self.deleted_record_counts_histogram.deleted_record_counts),
            },
            "partitions": {
                "columns": list(self.partition_columns), "num_partitions": len(self.partitions),
                "skew": self.partition_skew,
            },
            "clustering": {
                "clustering_columns": _list(self.clustering_columns), "clustered_files": self.clustered_files,
                "clustered_bytes": self.clustered_bytes, "clustered_share": self.clustered_share,
                "zorder_columns": _list(self.zorder_columns), "zordered_files": self.zordered_files,
                "zordered_bytes": self.zordered_bytes, "zordered_share": self.zordered_share,
            },
            "tombstones": {
                "retention_ms": self.deleted_file_retention_ms, "num_tombstones": self.num_tombstones,
                "num_bytes": self.tombstone_bytes, "expired": self.expired_tombstones,
                "reclaimable_bytes": self.reclaimable_bytes, "without_size": self.tombstones_without_size,
            },
            "log": {
                "checkpoint_version": self.checkpoint_version, "checkpoint_timestamp": self.checkpoint_timestamp,
                "commits_since_checkpoint": self.commits_since_checkpoint,
                "checkpoint_interval": self.checkpoint_interval, "num_files": self.log_files,
                "num_bytes": self.log_bytes,
                "last_optimize": _ref(self.last_optimize), "last_zorder": _ref(self.last_zorder),
                "last_vacuum": _ref(self.last_vacuum),
                "history_commits_scanned": self.history_commits_scanned, "history_complete": self.history_complete,
            },
        }
        if partitions:
            out["partitions"]["list"] = [
                {**asdict(p), "values": dict(p.values), "size_bins": [list(b) for b in p.size_bins],
                 "small_file_share": p.small_file_share}
                for p in self.partitions
            ]
        return out


def _list(values: tuple[str, ...] | None) -> list[str] | None:
    return None if values is None else list(values)


def _ref(ref: CommitRef | None) -> dict[str, Any] | None:
    if ref is None:
        return None
    return {**{f.name: getattr(ref, f.name) for f in fields(ref)}, "parameters": dict(ref.parameters)}
