"""The table's size and file count over its recent versions, and its commit rate, from the log alone.

:func:`history_points` gives one :class:`HistoryPoint` per version of the last ``limit`` versions (300 by
default) up to a snapshot's: when it was committed, by which operation, and how many live files and bytes
the table had after it. No data file is read, and neither is a checkpoint:

- the snapshot's own version takes its totals from the snapshot already loaded (so the last point equals
  :class:`~deltalog.health.model.TableHealth`'s ``num_files`` / ``num_bytes``);
- a version with a ``.crc`` file takes ``numFiles`` / ``tableSizeBytes`` from it;
- any other version is worked out backwards from the next version's totals, less the files and bytes the
  next commit added and plus those it removed (that commit is then read whole). Bytes become unknown
  (``None``) behind a ``remove`` without a ``size``, until a version with a ``.crc`` file.

The work is bounded: one listing of ``_delta_log`` from the first version shown, the first 64 KiB of each
commit (for its ``commitInfo``), each version's ``.crc`` file, and commits read whole only where a ``.crc``
file is missing, at most ``read_budget`` bytes of them (256 MiB by default; the versions before the commit
that would pass the budget are left unknown unless a ``.crc`` file tells them). So a table of a million
files with a ``.crc`` per commit costs a few hundred small reads, whatever the size of its commits.

:func:`commit_rate` counts the commits per hour, day, week, ... over the points' time span.

Example:
    >>> import deltalog, pyarrow as pa
    >>> for i in range(3):
    ...     _ = deltalog.write_table("memory://series-doc", pa.table({"id": [i]}), mode="append")
    >>> series = history_points(deltalog.Table("memory://series-doc").snapshot())
    >>> [(p.version, p.num_files, p.source) for p in series.points]
    [(0, 1, 'crc'), (1, 2, 'crc'), (2, 3, 'snapshot')]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow.compute as pc

from deltalog.health.log_facts import commit_info_head
from deltalog.log.crc import read_crc
from deltalog.log.paths import LogFile
from deltalog.log.reader import read_commit
from deltalog.log.segment import list_log
from deltalog.storage import LogStore

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["DEFAULT_HISTORY_VERSIONS", "DEFAULT_READ_BUDGET", "CommitRate", "HistoryPoint", "HistorySeries",
           "commit_rate", "history_points"]

#: Versions :func:`history_points` covers by default (the last ones, up to the snapshot's).
DEFAULT_HISTORY_VERSIONS = 300
#: Bytes of commits :func:`history_points` reads whole at most (where ``.crc`` files are missing).
DEFAULT_READ_BUDGET = 256 << 20

_HOUR = 3_600_000
_DAY = 24 * _HOUR
#: Commit-rate buckets, the smallest that keeps the count of buckets within the limit wins.
_UNITS: tuple[tuple[str, int], ...] = (
    ("minute", 60_000), ("10 minutes", 600_000), ("hour", _HOUR), ("6 hours", 6 * _HOUR), ("day", _DAY),
    ("week", 7 * _DAY), ("4 weeks", 28 * _DAY), ("year", 365 * _DAY),
)

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class HistoryPoint:
    """One version: its commit time (epoch ms; ``inCommitTimestamp``, else the ``commitInfo`` timestamp, else
    the file's modification time), operation, and the live files and bytes after it (``None``: unknown).
    ``source`` tells where the totals came from: ``snapshot``, ``crc``, ``log`` (worked out from the commits)
    or ``""`` (unknown).

    Example:
        >>> HistoryPoint(3, 1_700_000_000_000, "WRITE", 4, 4096, "crc").num_files
        4
    """

    version: int
    timestamp: int | None
    operation: str | None
    num_files: int | None
    num_bytes: int | None
    source: str


@dataclass(frozen=True)
class HistorySeries:
    """The points of :func:`history_points`, oldest first; ``limit`` is the number of versions asked for,
    ``commits_read`` the commits read whole and ``bytes_read`` their size.

    Example:
        >>> HistorySeries((), 300).first_version is None
        True
    """

    points: tuple[HistoryPoint, ...]
    limit: int
    commits_read: int = 0
    bytes_read: int = 0

    @property
    def first_version(self) -> int | None:
        """The oldest version shown (``None`` with no points).

        Example:
            >>> HistorySeries((HistoryPoint(4, None, None, 1, 1, "crc"),), 10).first_version
            4
        """
        return self.points[0].version if self.points else None

    @property
    def truncated(self) -> bool:
        """Older versions than the first point exist (or existed): the series does not start at version 0.

        Example:
            >>> HistorySeries((HistoryPoint(0, None, None, 1, 1, "crc"),), 10).truncated
            False
        """
        return bool(self.points) and self.points[0].version > 0


@dataclass(frozen=True)
class CommitRate:
    """Commits per ``unit`` (``unit_ms`` long), in buckets from ``start`` (epoch ms) on.

    Example:
        >>> CommitRate("day", 86_400_000, 0, (2, 0, 1)).total
        3
    """

    unit: str
    unit_ms: int
    start: int
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        """All the commits counted.

        Example:
            >>> CommitRate("hour", 3_600_000, 0, (1, 1)).total
            2
        """
        return sum(self.counts)


def _map(fn: Callable[[T], R], items: Sequence[T], *, parallel: bool, workers: int) -> list[R]:
    if not parallel or workers <= 1 or len(items) < 2:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def _commit_time(info: Any, commit: LogFile | None) -> int | None:
    for key in ("inCommitTimestamp", "timestamp"):
        value = info.get(key) if isinstance(info, dict) else getattr(info, key, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return (commit.modification_time or None) if commit is not None else None


def _operation(info: Any) -> str | None:
    value = info.get("operation") if isinstance(info, dict) else getattr(info, "operation", None)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class _Delta:
    """What one commit changed: files added less files removed, and the same in bytes (``None``: a remove
    without a size), plus its ``commitInfo`` time and operation."""

    files: int
    num_bytes: int | None
    timestamp: int | None
    operation: str | None


def _commit_delta(store: LogStore, commit: LogFile, table: str) -> _Delta:
    actions = read_commit(store, commit, table=table)
    adds, removes = actions.adds, actions.removes
    added = int(pc.sum(adds.column("size")).as_py() or 0) if adds.num_rows else 0
    sizes = removes.column("size") if removes.num_rows else None
    removed: int | None = 0
    if sizes is not None:
        removed = None if sizes.null_count else int(pc.sum(sizes).as_py() or 0)
    info = actions.commit_info
    return _Delta(adds.num_rows - removes.num_rows, None if removed is None else added - removed,
                  _commit_time(info, commit) if info is not None else (commit.modification_time or None),
                  _operation(info) if info is not None else None)


def _snapshot_totals(snapshot: Snapshot) -> tuple[int, int]:
    files = snapshot.add_files()
    total = pc.sum(files.column("size")).as_py() if files.num_rows else 0
    return files.num_rows, int(total or 0)


def history_points(
    snapshot: Snapshot,
    *,
    limit: int = DEFAULT_HISTORY_VERSIONS,
    read_budget: int = DEFAULT_READ_BUDGET,
    totals: tuple[int, int] | None = None,
    workers: int = 8,
) -> HistorySeries:
    """The live files and bytes after each of the last ``limit`` versions up to ``snapshot``'s, with their
    commit times and operations, from the log alone (see the module docstring for what is read).

    ``totals``: the snapshot's ``(files, bytes)`` when the caller has them (a
    :class:`~deltalog.health.model.TableHealth`'s ``num_files`` / ``num_bytes``), else they are summed from
    its file index. ``read_budget``: bytes of commits read whole at most. ``workers``: parallel reads on
    object stores (a local file system is read in order).

    Example:
        >>> import deltalog, pyarrow as pa
        >>> _ = deltalog.write_table("memory://series-fn-doc", pa.table({"id": [1, 2]}))
        >>> _ = deltalog.write_table("memory://series-fn-doc", pa.table({"id": [3]}), mode="overwrite")
        >>> [(p.version, p.operation, p.num_files) for p in history_points(
        ...     deltalog.Table("memory://series-fn-doc").snapshot(), limit=5).points]
        [(0, 'WRITE', 1), (1, 'WRITE', 1)]
    """
    if limit < 1:
        from deltalog.errors import InvalidArgumentError

        raise InvalidArgumentError(f"limit must be at least 1, got {limit}", table=snapshot.table)
    store, table, end = snapshot.store, snapshot.table, snapshot.version
    start = max(0, end - limit + 1)
    listing = list_log(store, start)
    commits = {f.version: f for f in listing if f.kind == "commit" and start <= f.version <= end}
    crc_versions = sorted({f.version for f in listing if f.kind == "crc" and start <= f.version < end})
    parallel = "://" in store.full_path("")  # a local file system answers faster than threads start

    crcs = dict(zip(crc_versions, _map(lambda v: read_crc(store, v, table=table), crc_versions,
                                       parallel=parallel, workers=workers)))
    known: dict[int, tuple[int | None, int | None, str]] = {
        v: (c.num_files, c.table_size_bytes, "crc") for v, c in crcs.items() if c is not None}
    files, num_bytes = totals if totals is not None else _snapshot_totals(snapshot)
    known[end] = (files, num_bytes, "snapshot")

    # The commits to read whole: newest first, the one after each version that no .crc file tells, within
    # the budget. A version whose next commit is missing or past the budget stays unknown.
    whole: list[LogFile] = []
    spent = 0
    for v in range(end - 1, start - 1, -1):
        nxt = commits.get(v + 1)
        if v in known or nxt is None:
            continue
        if spent + nxt.size > read_budget:
            break
        spent += nxt.size
        whole.append(nxt)
    deltas = dict(zip([c.version for c in whole], _map(lambda c: _commit_delta(store, c, table), whole,
                                                         parallel=parallel, workers=workers)))
    heads = [c for v, c in sorted(commits.items()) if v not in deltas]
    infos = dict(zip([c.version for c in heads], _map(lambda c: commit_info_head(store, c, table=table), heads,
                                                        parallel=parallel, workers=workers)))

    values: dict[int, tuple[int | None, int | None, str]] = {end: known[end]}
    current = known[end]
    for v in range(end - 1, start - 1, -1):
        if v in known:
            current = known[v]
        elif v + 1 in deltas and current[0] is not None:
            d = deltas[v + 1]
            n = current[0] - d.files
            b = None if current[1] is None or d.num_bytes is None else current[1] - d.num_bytes
            current = (n, b if b is None or b >= 0 else None, "log") if n >= 0 else (None, None, "")
        else:
            current = (None, None, "")
        values[v] = current

    points = []
    for v in range(start, end + 1):
        commit = commits.get(v)
        if commit is None and v != end:
            continue  # cleaned up, or never there
        if v in deltas:
            when, operation = deltas[v].timestamp, deltas[v].operation
        elif commit is not None:
            info = infos.get(v)
            when = _commit_time(info, commit) if info is not None else (commit.modification_time or None)
            operation = _operation(info) if info is not None else None
        else:  # the snapshot's version, known from a checkpoint alone
            own = snapshot.commit_info
            when, operation = (_commit_time(own, None), _operation(own)) if own is not None else (None, None)
        n_files, n_bytes, source = values[v]
        points.append(HistoryPoint(v, when, operation, n_files, n_bytes, source))
    return HistorySeries(tuple(points), limit, len(whole), spent)


def commit_rate(points: Sequence[HistoryPoint], *, max_buckets: int = 120) -> CommitRate | None:
    """Commits per bucket over the points' time span: per minute, 10 minutes, hour, 6 hours, day, week,
    4 weeks or year, the shortest that needs at most ``max_buckets`` buckets (buckets start at multiples of
    their length since the epoch, in UTC). ``None`` when no point has a time.

    Example:
        >>> pts = [HistoryPoint(v, t, None, None, None, "") for v, t in enumerate([0, 1_000, 7_200_000])]
        >>> rate = commit_rate(pts, max_buckets=10)
        >>> rate.unit, rate.counts
        ('hour', (2, 0, 1))
    """
    times = [p.timestamp for p in points if p.timestamp is not None]
    if not times:
        return None
    lo, hi = min(times), max(times)
    name, unit = _UNITS[-1]
    for candidate, ms in _UNITS:
        if hi // ms - lo // ms + 1 <= max_buckets:
            name, unit = candidate, ms
            break
    first = lo // unit
    counts = [0] * (hi // unit - first + 1)
    for t in times:
        counts[t // unit - first] += 1
    return CommitRate(name, unit, first * unit, tuple(counts))
