"""What ``maintain`` would do to a table now: :func:`plan_maintenance` reads the table's health and its
policy and returns a :class:`MaintenancePlan`, a list of :class:`MaintenanceStep` with the files and bytes
each step would rewrite or delete. Nothing is written while planning.

The steps, in the order they run:

1. ``compact``: the partitions (or the unpartitioned table) where at least ``small_file_share`` of the files,
   and at least ``min_small_files`` files, are below the small-file threshold: their small files and the
   files with deletion vectors are packed into files of up to the target size (``delta.targetFileSize``,
   else 128 MiB), as ``OPTIMIZE`` does;
2. ``purge``: elsewhere, the files whose deletion vector deletes at least ``deleted_row_share`` of their
   rows are rewritten without those rows (``REORG ... APPLY (PURGE)``);
3. ``checkpoint``: when at least ``checkpoint_commits`` commits follow the last checkpoint;
4. ``cleanup-log``: log files older than ``delta.logRetentionDuration`` that no retained version needs;
5. ``vacuum``: data files removed longer ago than ``delta.deletedFileRetentionDuration`` -- found in the log
   (``VACUUM LITE``) when the log still holds every commit since the last vacuum, else by listing the table.

Example:
    >>> plan = plan_maintenance(deltalog.Table("/data/events"))                          # doctest: +SKIP
    >>> [(s.action, s.num_files, s.num_bytes) for s in plan.steps]                       # doctest: +SKIP
    [('compact', 40, 5242880), ('checkpoint', 0, 0)]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.commands.compact import deleted_share
from deltalog.commands.optimize_plan import PartitionKey, partition_key, plan_compaction
from deltalog.commands.vacuum import vacuum
from deltalog.errors import DeltaError
from deltalog.health import table_health
from deltalog.log.cleanup import cleanup_expired_logs
from deltalog.maintenance.policy import MaintenancePolicy

if TYPE_CHECKING:
    from deltalog.health import TableHealth
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["ACTIONS", "MaintenancePlan", "MaintenanceStep", "plan_maintenance"]

#: The steps ``maintain`` knows, in the order they run.
ACTIONS = ("compact", "purge", "checkpoint", "cleanup-log", "vacuum")
#: History scanned by the health check a plan starts from (the plan needs no last OPTIMIZE / VACUUM).
_HISTORY = 0


@dataclass(frozen=True)
class MaintenanceStep:
    """One step of a plan: ``action`` (one of :data:`ACTIONS`), why, and the files and bytes it rewrites
    (``compact``, ``purge``) or deletes (``cleanup-log``, ``vacuum``); ``partitions`` are the partition values
    compacted (as the log writes them), ``paths`` the files a purge rewrites or a cleanup / vacuum deletes.

    Example:
        >>> MaintenanceStep("checkpoint", "12 commits since the last checkpoint (limit 10)").describe()
        'checkpoint: 12 commits since the last checkpoint (limit 10)'
    """

    action: str
    reason: str
    num_files: int = 0
    num_bytes: int = 0
    partitions: tuple[Mapping[str, str | None], ...] = ()
    paths: tuple[str, ...] = field(default=(), repr=False)
    #: ``vacuum``: whether the files were found in the log (``VACUUM LITE``) rather than by a listing.
    lite: bool = False
    #: ``compact``: the size of the files written, and below which a file counts as small.
    max_file_size: int | None = None
    min_file_size: int | None = None

    @property
    def rewrites(self) -> bool:
        """Whether the step rewrites data files (``compact``, ``purge``) rather than deleting files.

        Example:
            >>> MaintenanceStep("purge", "x").rewrites, MaintenanceStep("vacuum", "x").rewrites
            (True, False)
        """
        return self.action in ("compact", "purge")

    def describe(self) -> str:
        """One line: the action, what it touches and why.

        Example:
            >>> MaintenanceStep("vacuum", "3 files removed over 7 days ago", 3, 3 << 20).describe()
            'vacuum: delete 3 files (3.0 MiB); 3 files removed over 7 days ago'
        """
        if self.action == "checkpoint":
            return f"checkpoint: {self.reason}"
        verb = "rewrite" if self.rewrites else "delete"
        return f"{self.action}: {verb} {self.num_files} files ({_size(self.num_bytes)}); {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """The step as JSON-ready data (``paths`` left out: they can be many).

        Example:
            >>> MaintenanceStep("checkpoint", "why").to_dict()["action"]
            'checkpoint'
        """
        out: dict[str, Any] = {"action": self.action, "reason": self.reason, "numFiles": self.num_files,
                               "numBytes": self.num_bytes}
        if self.partitions:
            out["partitions"] = [dict(p) for p in self.partitions]
        if self.action == "vacuum":
            out["lite"] = self.lite
        return out


@dataclass(frozen=True)
class MaintenancePlan:
    """What ``maintain`` would do to ``table`` at ``version``, with the ``policy`` and ``health`` it was
    planned from; ``steps`` is empty for a table in good health.

    Example:
        >>> plan = plan_maintenance(deltalog.Table("/data/events"))                      # doctest: +SKIP
        >>> plan.bytes_rewritten, plan.bytes_deleted                                     # doctest: +SKIP
        (5242880, 1048576)
    """

    table: str
    version: int
    policy: MaintenancePolicy
    health: TableHealth = field(repr=False)
    steps: tuple[MaintenanceStep, ...] = ()

    @property
    def bytes_rewritten(self) -> int:
        """Bytes of data files the plan rewrites (compaction and purge).

        Example:
            >>> MaintenancePlan("t", 0, MaintenancePolicy(), None, (MaintenanceStep("purge", "x", 1, 9),)
            ...                 ).bytes_rewritten                                        # doctest: +SKIP
            9
        """
        return sum(s.num_bytes for s in self.steps if s.rewrites)

    @property
    def bytes_deleted(self) -> int:
        """Bytes of files the plan deletes (expired log files and vacuumed data files).

        Example:
            >>> plan_maintenance(deltalog.Table("/data/events")).bytes_deleted           # doctest: +SKIP
            1048576
        """
        return sum(s.num_bytes for s in self.steps if not s.rewrites)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data.

        Example:
            >>> plan_maintenance(deltalog.Table("/data/events")).to_dict()["steps"]       # doctest: +SKIP
            []
        """
        return {"table": self.table, "version": self.version, "steps": [s.to_dict() for s in self.steps],
                "bytesRewritten": self.bytes_rewritten, "bytesDeleted": self.bytes_deleted}


def plan_maintenance(
    table: TableHandle,
    policy: MaintenancePolicy | None = None,
    *,
    actions: Sequence[str] = ACTIONS,
    partitions: Sequence[Mapping[str, str | None]] | None = None,
    clock: Callable[[], int] | None = None,
) -> MaintenancePlan:
    """Plan the maintenance of ``table``'s latest version (see the module docstring): ``policy`` defaults to
    the one its properties set (:meth:`MaintenancePolicy.from_properties`); ``actions`` limits the steps
    considered, ``partitions`` (partition values as the log writes them) the partitions compacted or purged;
    ``clock`` gives "now" (epoch ms) for the retention periods.

    Example:
        >>> [s.action for s in plan_maintenance(deltalog.Table("/data/events")).steps]  # doctest: +SKIP
        ['compact', 'vacuum']
    """
    unknown = [a for a in actions if a not in ACTIONS]
    if unknown:
        raise DeltaError(f"unknown maintenance step {unknown[0]!r}: the steps are {', '.join(ACTIONS)}",
                         table=table.location)
    snap = table.snapshot()
    if policy is None:
        policy = MaintenancePolicy.from_properties(snap.properties, table=table.location)
    health = table_health(snap, small_file_threshold=policy.small_file_threshold, clock=clock,
                          history_depth=_HISTORY)
    wanted = None if partitions is None else {partition_key({"partitionValues": p}) for p in partitions}
    steps: list[MaintenanceStep] = []
    compacted: set[PartitionKey] = set()
    if "compact" in actions and health.num_files:
        step = _compaction(snap, health, policy, wanted)
        if step is not None:
            steps.append(step)
            compacted = {partition_key({"partitionValues": p}) for p in step.partitions}
    if "purge" in actions and health.dv_files:
        step = _purge(snap, policy, compacted, wanted)
        if step is not None:
            steps.append(step)
    if "checkpoint" in actions:
        limit = policy.checkpoint_commits or health.checkpoint_interval
        if health.commits_since_checkpoint >= limit:
            where = (f"since the checkpoint at version {health.checkpoint_version}"
                     if health.checkpoint_version is not None else "and no checkpoint")
            steps.append(MaintenanceStep("checkpoint", f"{health.commits_since_checkpoint} commits {where} "
                                                       f"(limit {limit})"))
    if "cleanup-log" in actions and policy.cleanup_log:
        expired = cleanup_expired_logs(snap, clock=clock, dry_run=True)
        if expired:
            sizes = _log_sizes(snap, expired)
            steps.append(MaintenanceStep("cleanup-log", "older than delta.logRetentionDuration and needed by no "
                                         "retained version", len(expired), sizes, paths=tuple(expired)))
    if "vacuum" in actions and policy.vacuum:
        step = _vacuum(table, clock)
        if step is not None:
            steps.append(step)
    return MaintenancePlan(table.location, snap.version, policy, health, tuple(steps))


def _physical_values(snap: Snapshot, values: Mapping[str, str | None]) -> dict[str, str | None]:
    """A partition's values keyed as the log writes them (physical names under column mapping)."""
    from deltalog.protocol.schema import physical_name

    mode = snap.column_mapping_mode
    return {physical_name(snap.schema.field(k), mode): v for k, v in values.items()}


def _files(snap: Snapshot, columns: Sequence[str], keep: pa.Array | None = None) -> list[dict[str, Any]]:
    """Live files as rows with only ``columns`` (of those the index has), optionally filtered first."""
    files = snap.add_files()
    if keep is not None:
        files = files.filter(keep)
    rows: list[dict[str, Any]] = files.select([c for c in columns if c in files.column_names]).to_pylist()
    return rows


def _compaction(snap: Snapshot, health: TableHealth, policy: MaintenancePolicy,
                wanted: set[PartitionKey] | None) -> MaintenanceStep | None:
    """The compaction step: partitions past the small-file thresholds, and what compacting them rewrites."""
    threshold, target = health.small_file_threshold, health.target_file_size
    chosen: dict[PartitionKey, object]
    if health.partitions:
        chosen = {partition_key({"partitionValues": _physical_values(snap, p.values)}): p for p in health.partitions
                  if p.num_small_files >= policy.min_small_files and p.small_file_share >= policy.small_file_share}
    elif health.num_small_files >= policy.min_small_files and health.small_file_share >= policy.small_file_share:
        chosen = {(): health}
    else:
        chosen = {}
    if wanted is not None:
        chosen = {k: v for k, v in chosen.items() if k in wanted}
    if not chosen:
        return None
    rows = [r for r in _files(snap, ("path", "size", "partitionValues", "deletionVector"))
            if partition_key(r) in chosen]
    bins = plan_compaction(rows, max_file_size=max(target, threshold), min_file_size=threshold)
    if not bins:
        return None
    keys = sorted({b.partition for b in bins}, key=lambda k: [(n, v is None, v or "") for n, v in k])
    files = [f for b in bins for f in b.files]
    small = sum(1 for f in files if int(f.get("size") or 0) < threshold)
    where = f"{len(keys)} partitions" if health.partitions else "the table"
    reason = (f"{where} with at least {policy.small_file_share:.0%} and {policy.min_small_files} files below "
              f"{_size(threshold)}: {small} small files into files of up to {_size(max(target, threshold))}")
    return MaintenanceStep("compact", reason, len(files), sum(int(f.get("size") or 0) for f in files),
                           partitions=tuple(dict(k) for k in keys), max_file_size=max(target, threshold),
                           min_file_size=threshold)


def _purge(snap: Snapshot, policy: MaintenancePolicy, compacted: set[PartitionKey],
           wanted: set[PartitionKey] | None) -> MaintenanceStep | None:
    """The purge step: files outside the compacted partitions whose deleted share passes the threshold."""
    index = snap.add_files()
    if "deletionVector" not in index.column_names:
        return None
    rows = _files(snap, ("path", "size", "partitionValues", "deletionVector", "stats"),
                  pc.is_valid(index.column("deletionVector")))
    share = policy.deleted_row_share
    chosen = []
    for r in rows:
        key = partition_key(r)
        if key in compacted or (wanted is not None and key not in wanted):
            continue
        found = deleted_share(r)
        if (found is not None and found >= share) or (found is None and share == 0.0):
            chosen.append(r)
    if not chosen:
        return None
    deleted = sum(int((r["deletionVector"] or {}).get("cardinality") or 0) for r in chosen)
    return MaintenanceStep("purge", f"files whose deletion vectors delete at least {share:.0%} of their rows "
                                    f"({deleted} deleted rows in all)", len(chosen),
                           sum(int(r.get("size") or 0) for r in chosen), paths=tuple(str(r["path"]) for r in chosen))


def _log_sizes(snap: Snapshot, paths: Sequence[str]) -> int:
    """Bytes of the log files ``paths`` (store paths), from one listing of ``_delta_log``."""
    names = set(paths)
    return sum(f.size for f in snap.store.list_dir("_delta_log", recursive=True) if f.path in names)


def _vacuum(table: TableHandle, clock: Callable[[], int] | None) -> MaintenanceStep | None:
    """The vacuum step: what a ``VACUUM`` (``LITE`` where the log allows) would delete now."""
    lite = True
    try:
        found = vacuum(table, dry_run=True, lite=True, clock=clock)
    except DeltaError as exc:
        if "DELTA_CANNOT_VACUUM_LITE" not in str(exc):
            raise
        lite = False
        found = vacuum(table, dry_run=True, clock=clock)
    if not found.num_files_to_delete:
        return None
    how = "found in the log" if lite else "found by listing the table (the log no longer holds every commit since " \
                                          "the last vacuum)"
    return MaintenanceStep("vacuum", f"removed over {found.retention_hours:g} hours ago, {how}",
                           found.num_files_to_delete, found.size_of_data_to_delete,
                           paths=tuple(found.files_deleted), lite=lite)


def _size(n: int) -> str:
    """Bytes in binary units, one decimal."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover
