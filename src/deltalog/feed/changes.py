"""Planning the change data feed: which files hold the row changes of each commit of a version range.

Rules (PROTOCOL.md, "Change Data Files" / "Add CDC File", and what delta-spark and the Delta kernels do):

* a commit with ``cdc`` actions changes exactly the rows of those files; the ``_change_type`` of each
  row (``insert``, ``delete``, ``update_preimage``, ``update_postimage``) is a column of the file and
  the commit's ``add``/``remove`` actions are ignored;
* otherwise every ``add`` with ``dataChange=true`` inserts the rows its deletion vector keeps and every
  ``remove`` with ``dataChange=true`` deletes them (whole-file changes), except that an ``add`` and a
  ``remove`` of the *same path* in one commit are a deletion-vector update: rows in the new deletion
  vector but not the old one are deleted, rows in the old one but not the new one are restored
  (inserted);
* actions with ``dataChange=false`` (OPTIMIZE, ...) change nothing; such commits yield no files;
* every change carries ``_commit_version`` and ``_commit_timestamp``: the commit's in-commit timestamp
  when ``delta.enableInCommitTimestamps`` is on for that version, else its file modification time made
  strictly increasing (the timestamps time travel uses);
* the feed exists only where ``delta.enableChangeDataFeed=true``: the metadata in effect at the start
  version and every ``metaData`` action of the range must enable it (else
  :class:`ChangeDataNotRecordedError`, delta-spark's ``DELTA_MISSING_CHANGE_DATA``).

The planner reads the log only (one commit file at a time); engines read the planned files. Two entry
points: :func:`resolve_range` turns version / timestamp bounds into versions, and
:func:`iter_commit_changes` yields one :class:`CommitChanges` per commit -- the API the batch readers
(:mod:`deltalog.feed.rows`, :mod:`deltalog.spark.reads.changes`) and a streaming change feed share.

Example:
    >>> import deltalog
    >>> t = deltalog.Table("/data/events")                                           # doctest: +SKIP
    >>> start, end = resolve_range(t, starting_version=3)                          # doctest: +SKIP
    >>> for c in iter_commit_changes(t, start, end):                               # doctest: +SKIP
    ...     print(c.version, c.timestamp, [(f.kind, f.change_type) for f in c.files])
    3 1714550400000 [('add', 'insert')]
    4 1714550460000 [('cdc', None), ('cdc', None)]
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from deltalog.data.change_files import CHANGE_TYPE  # insert, delete, update_preimage, update_postimage
from deltalog.errors import DeltaError, InvalidArgumentError, TimestampAfterLatestError, VersionNotFoundError
from deltalog.log.paths import LogFile
from deltalog.log.reader import FileActions, metadata_partition_keys, read_commits
from deltalog.log.segment import list_log
from deltalog.log.timestamps import TimestampLike, commit_timestamps, to_millis
from deltalog.protocol.actions import AddCDCFile, CommitInfo, Metadata, Protocol
from deltalog.protocol.features import check_readable

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = [
    "CDF_COLUMNS",
    "CDF_PROPERTY",
    "CHANGE_TYPE",
    "COMMIT_TIMESTAMP",
    "COMMIT_VERSION",
    "ChangeDataNotRecordedError",
    "ChangeFile",
    "CommitChanges",
    "cdf_enabled",
    "iter_commit_changes",
    "resolve_range",
]

#: Column holding the version of the commit that made the change.
COMMIT_VERSION = "_commit_version"
#: Column holding the timestamp of the commit that made the change.
COMMIT_TIMESTAMP = "_commit_timestamp"
#: The columns the change data feed adds to the table's columns, in order.
CDF_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
#: The table property that turns the change data feed on.
CDF_PROPERTY = "delta.enableChangeDataFeed"

ChangeKind = Literal["cdc", "add", "remove"]


class ChangeDataNotRecordedError(DeltaError):
    """Change data was not recorded for a version of the requested range (the change data feed was
    not enabled then); delta-spark's ``DELTA_MISSING_CHANGE_DATA``."""


@dataclass(frozen=True)
class ChangeFile:
    """One file of a commit's changes and which of its rows belong to the change.

    ``kind`` is ``cdc`` (a change data file: every row is a change, ``_change_type`` is a column of the
    file and :attr:`change_type` is ``None``), ``add`` or ``remove`` (a data file: its rows are changes
    of :attr:`change_type`, ``insert`` or ``delete``). ``path`` is the log's path (URL-encoded, relative
    to the table root, or an absolute URI); ``partition_values`` are the log's (keys are physical names
    under column mapping).

    Row selection, by row index in the file: a row belongs to the change when it is *not* in
    :attr:`deletion_vector` (the usual deletion-vector meaning) and, if :attr:`selection_vector` is set,
    *is* in it (a deletion-vector update selects only the rows whose state changed).

    Example:
        >>> ChangeFile("add", "a.parquet", {}, 10, "insert").kind
        'add'
    """

    kind: ChangeKind
    path: str
    partition_values: Mapping[str, str | None]
    size: int | None
    change_type: str | None
    deletion_vector: Mapping[str, Any] | None = None
    selection_vector: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class CommitChanges:
    """The changes of one commit: its version, timestamp (epoch milliseconds) and change files.

    ``metadata`` / ``protocol`` are the commit's own ``metaData`` / ``protocol`` actions (``None`` when
    it has none); ``commit_info`` is its ``commitInfo``.

    Example:
        >>> CommitChanges(3, 1000, ()).has_cdc
        False
    """

    version: int
    timestamp: int
    files: tuple[ChangeFile, ...]
    commit_info: CommitInfo | None = None
    metadata: Metadata | None = None
    protocol: Protocol | None = None

    @property
    def has_cdc(self) -> bool:
        """True when the commit's changes come from change data files."""
        return any(f.kind == "cdc" for f in self.files)


def cdf_enabled(metadata: Metadata) -> bool:
    """Whether ``metadata`` turns the change data feed on (``delta.enableChangeDataFeed=true``).

    Example:
        >>> from deltalog.protocol.actions import Format
        >>> cdf_enabled(Metadata(id="t", format=Format(), schemaString=None,
        ...                      configuration={"delta.enableChangeDataFeed": "TRUE"}))
        True
    """
    return str(metadata.configuration.get(CDF_PROPERTY, "false")).strip().lower() == "true"


# ------------------------------------------------------------------------------------------ range


def _as_version(value: Any, name: str, table: str) -> int:
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be a version number, got {value!r}", table=table)
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be a version number, got {value!r}", table=table) from None
    if isinstance(value, float) and value != out:
        raise InvalidArgumentError(f"{name} must be a whole version number, got {value!r}", table=table)
    if out < 0:
        raise InvalidArgumentError(f"{name} must be >= 0, got {out}", table=table)
    return out


def _commits(table: TableHandle) -> list[LogFile]:
    return [f for f in list_log(table.store, 0) if f.kind == "commit"]


def _timestamps(table: TableHandle, commits: list[LogFile]) -> list[int]:
    latest = table.snapshot()
    props = latest.properties
    ict_from: int | None = None
    if str(props.get("delta.enableInCommitTimestamps", "false")).lower() == "true":
        ict_from = int(props.get("delta.inCommitTimestampEnablementVersion", "0"))
    return commit_timestamps(table.store, commits, table=table.location, ict_enabled_from=ict_from)


def resolve_range(
    table: TableHandle,
    *,
    starting_version: int | str | None = None,
    ending_version: int | str | None = None,
    starting_timestamp: TimestampLike | None = None,
    ending_timestamp: TimestampLike | None = None,
) -> tuple[int, int]:
    """The ``(start, end)`` versions (inclusive) of a change-feed read, as delta-spark resolves them.

    A start is required (version or timestamp). A starting timestamp means the first commit at or after
    it; an ending timestamp the last commit at or before it (as time travel). No end, or an end after
    the latest version, means the latest version. Errors: a start after the latest version or timestamp
    after the latest commit, an end before the start, versions no longer in the log.

    Example:
        >>> resolve_range(deltalog.Table("/data/events"), starting_version=2, ending_version=99)
        ... # doctest: +SKIP
        (2, 12)
    """
    loc = table.location
    if starting_version is not None and starting_timestamp is not None:
        raise InvalidArgumentError(
            "pass either a starting version or a starting timestamp for the change data feed, not both", table=loc
        )
    if ending_version is not None and ending_timestamp is not None:
        raise InvalidArgumentError(
            "pass either an ending version or an ending timestamp for the change data feed, not both", table=loc
        )
    if starting_version is None and starting_timestamp is None:
        raise InvalidArgumentError(
            "[DELTA_NO_START_FOR_CDC_READ] No startingVersion or startingTimestamp provided for the change data "
            "feed read",
            table=loc,
        )
    commits = _commits(table)
    if not commits:
        from deltalog.errors import TableNotFoundError

        raise TableNotFoundError("no Delta table: the log has no commits", table=loc)
    latest = table.latest_version()
    stamps = _timestamps(table, commits) if starting_timestamp is not None or ending_timestamp is not None else []
    if starting_version is not None:
        start = _as_version(starting_version, "starting version", loc)
    else:
        assert starting_timestamp is not None
        target = to_millis(starting_timestamp)
        idx = bisect.bisect_left(stamps, target)
        if idx >= len(commits):
            raise TimestampAfterLatestError(
                f"[DELTA_TIMESTAMP_GREATER_THAN_COMMIT] The provided timestamp ({_fmt(target)}) is after the "
                f"latest version available to this table ({_fmt(stamps[-1])}, version {commits[-1].version}); "
                "use a timestamp at or before it",
                table=loc,
            )
        start = commits[idx].version
    if ending_version is not None:
        end = min(_as_version(ending_version, "ending version", loc), latest)
    elif ending_timestamp is not None:
        target = to_millis(ending_timestamp)
        idx = bisect.bisect_right(stamps, target) - 1
        if idx < 0:
            raise VersionNotFoundError(
                f"ending timestamp {_fmt(target)} is before the earliest available commit "
                f"(version {commits[0].version} at {_fmt(stamps[0])})",
                table=loc,
            )
        end = min(commits[idx].version, latest)
    else:
        end = latest
    if start > latest:
        raise VersionNotFoundError(
            f"[DELTA_CDC_START_VERSION_AFTER_LATEST] Provided start version ({start}) for reading change data is "
            f"invalid: it cannot be greater than the latest version of the table ({latest})",
            table=loc,
        )
    if end < start:
        raise InvalidArgumentError(
            f"[DELTA_INVALID_CDC_RANGE] CDC range from start {start} to end {end} was invalid: end cannot be "
            "before start",
            table=loc,
        )
    earliest = commits[0].version
    if start < earliest:
        raise VersionNotFoundError(
            f"[DELTA_VERSION_NOT_FOUND] change data of version {start} is no longer available: the log starts "
            f"at version {earliest} (older commits were cleaned up)",
            table=loc,
        )
    return start, end


def _fmt(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


# ------------------------------------------------------------------------------------------ commits


def _not_recorded(version: int, start: int, end: int, table: str) -> ChangeDataNotRecordedError:
    return ChangeDataNotRecordedError(
        f"[DELTA_MISSING_CHANGE_DATA] Error getting change data for range [{start} , {end}] as change data was "
        f"not recorded for version [{version}]. If the change data feed was enabled on this table later, read "
        f"from the version that enabled it (see the history); otherwise set the table property "
        f"{CDF_PROPERTY}=true to start recording change data",
        table=table,
        version=version,
    )


def _ict_on(metadata: Metadata, version: int) -> bool:
    conf = metadata.configuration
    if str(conf.get("delta.enableInCommitTimestamps", "false")).lower() != "true":
        return False
    try:
        return version >= int(conf.get("delta.inCommitTimestampEnablementVersion", "0"))
    except ValueError:
        return True


def _dv(raw: Any) -> dict[str, Any] | None:
    if not raw:
        return None
    return {k: v for k, v in dict(raw).items() if v is not None}


def _pv(raw: Any) -> dict[str, str | None] | None:
    if raw is None:
        return None
    return dict(raw)


class _Previous:
    """The snapshot before a commit, loaded only when a ``remove`` lacks its partition values."""

    def __init__(self, table: TableHandle, version: int) -> None:
        self.table, self.version = table, version
        self._files: dict[str, Mapping[str, Any]] | None = None

    def lookup(self, path: str) -> Mapping[str, Any] | None:
        if self._files is None:
            self._files = {}
            if self.version >= 0:
                snap = self.table.snapshot(self.version)
                self._files = {r["path"]: r for r in snap.add_files().select(["path", "partitionValues", "size"])
                               .to_pylist()}
        return self._files.get(path)


def _file_changes(
    adds: list[dict[str, Any]], removes: list[dict[str, Any]], previous: _Previous, partitioned: bool
) -> list[ChangeFile]:
    adds = [a for a in adds if a.get("dataChange")]
    removes = [r for r in removes if r.get("dataChange")]
    removed_by_path = {r["path"]: r for r in removes}
    added_paths = {a["path"] for a in adds}
    out: list[ChangeFile] = []
    for r in removes:
        if r["path"] in added_paths:
            continue  # a deletion-vector update: handled with its add below
        pv, size = _pv(r.get("partitionValues")), r.get("size")
        if pv is None and partitioned:  # an old remove without extended file metadata
            known = previous.lookup(r["path"])
            if known is not None:
                pv = pv if pv is not None else _pv(known.get("partitionValues"))
                size = size if size is not None else known.get("size")
        out.append(ChangeFile("remove", r["path"], pv or {}, size, "delete", _dv(r.get("deletionVector"))))
    for a in adds:
        pv, size, new_dv = _pv(a.get("partitionValues")) or {}, a.get("size"), _dv(a.get("deletionVector"))
        old = removed_by_path.get(a["path"])
        if old is None:
            out.append(ChangeFile("add", a["path"], pv, size, "insert", new_dv))
            continue
        old_dv = _dv(old.get("deletionVector"))
        if old_dv == new_dv:
            continue  # the same rows before and after: nothing changed
        if new_dv is not None:  # rows newly marked deleted: in the new DV, not in the old one
            out.append(ChangeFile("add", a["path"], pv, size, "delete", old_dv, new_dv))
        if old_dv is not None:  # rows restored: in the old DV, not in the new one
            out.append(ChangeFile("add", a["path"], pv, size, "insert", new_dv, old_dv))
    return out


def iter_commit_changes(
    table: TableHandle,
    start: int,
    end: int | None = None,
    *,
    start_snapshot: Snapshot | None = None,
    check_enabled: bool = True,
) -> Iterator[CommitChanges]:
    """Yield the :class:`CommitChanges` of every commit ``start..end`` (inclusive; ``end=None``: up to
    the latest version now), reading one commit file at a time. Commits without data changes are
    yielded with no files (a stream still advances past them).

    The metadata in effect at ``start`` comes from ``start_snapshot`` when given (a reader following a
    table passes the snapshot it has) or is loaded. With ``check_enabled`` (the default) a version
    where the change data feed is off raises :class:`ChangeDataNotRecordedError`; a protocol this
    build cannot read raises :class:`~deltalog.errors.UnsupportedFeatureError`.

    Example:
        >>> [c.version for c in iter_commit_changes(deltalog.Table("/data/events"), 3, 5)]  # doctest: +SKIP
        [3, 4, 5]
    """
    loc = table.location
    commits = [f for f in list_log(table.store, 0) if f.kind == "commit"]
    last = commits[-1].version if commits else -1
    stop = last if end is None else min(end, last)
    in_range = [c for c in commits if start <= c.version <= stop]
    if [c.version for c in in_range] != list(range(start, stop + 1)):
        have = [c.version for c in in_range]
        missing = next((v for v in range(start, stop + 1) if v not in have), start)
        raise VersionNotFoundError(
            f"commit {missing} of the change data range [{start}, {stop}] is missing from the log "
            "(cleaned up, or a gap)",
            table=loc, version=missing,
        )
    if not in_range:
        return
    snap = start_snapshot if start_snapshot is not None and start_snapshot.version == start else table.snapshot(start)
    metadata = snap.metadata
    if check_enabled and not cdf_enabled(metadata):
        raise _not_recorded(start, start, stop, loc)
    before = [c for c in commits if c.version < start]
    stamps = commit_timestamps(table.store, [*before, *in_range], table=loc)[len(before):]
    for commit, file_time in zip(in_range, stamps, strict=True):
        fa = read_commit_with_keys(table, commit, metadata)
        md = next((o for o in fa.others if isinstance(o, Metadata)), None)
        proto = next((o for o in fa.others if isinstance(o, Protocol)), None)
        if proto is not None:
            check_readable(proto, table=loc, version=commit.version)
        if md is not None:
            metadata = md
            if check_enabled and commit.version > start and not cdf_enabled(md):
                raise _not_recorded(commit.version, start, stop, loc)
        info = fa.commit_info
        ts = file_time
        if info is not None and info.inCommitTimestamp is not None and _ict_on(metadata, commit.version):
            ts = int(info.inCommitTimestamp)
        cdc = [o for o in fa.others if isinstance(o, AddCDCFile)]
        if cdc:
            files = [ChangeFile("cdc", c.path, dict(c.partitionValues), c.size, None) for c in cdc]
        else:
            files = _file_changes(
                fa.adds.to_pylist(), fa.removes.to_pylist(), _Previous(table, commit.version - 1),
                bool(metadata.partitionColumns),
            )
        yield CommitChanges(commit.version, ts, tuple(files), info, md, proto)


def read_commit_with_keys(table: TableHandle, commit: LogFile, metadata: Metadata) -> FileActions:
    """One commit's actions, partition values read as verbatim strings for ``metadata``'s partition
    columns (see :func:`deltalog.log.reader.read_commits`).

    Example:
        >>> read_commit_with_keys(t, commit, snap.metadata).adds.num_rows          # doctest: +SKIP
        2
    """
    keys = frozenset(metadata_partition_keys(metadata))
    return read_commits(table.store, [commit], table=table.location, partition_keys=keys)
