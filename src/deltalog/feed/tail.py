"""Following a table's log: positions, admission control and the files between two positions.

This is the engine-free half of a streaming source (Spark's lives in :mod:`deltalog.spark.streaming`).
A stream reads *units* in order: first, unless it was told to start at a version, the **snapshot** of
the version current when it started (its live files, ordered by ``(modificationTime, path)``), then
every **commit** after it (the files it adds with ``dataChange=true``, in log order).

A :class:`StreamPosition` ``(version, index, is_starting_version)`` says "every file of the units
before this one, and files ``0..index`` of this one, have been read"; ``index = -1`` means none of it.
A position at the end of a unit is always written as the start of the next one
(``(version + 1, -1, False)``), so "no new data" returns exactly the position it was given. Positions
serialise to delta-spark's offset JSON (``sourceVersion``, ``reservoirId``, ``reservoirVersion``,
``index``, ``isStartingVersion``).

Commits are checked as they are reached:

* ``dataChange=false`` files (OPTIMIZE, ...) are skipped -- their rows were read already;
* a commit removing files with ``dataChange=true`` fails the stream, naming the version, unless
  ``skip_change_commits`` (the whole commit is skipped), ``ignore_changes`` (its added files are read
  again: rewritten rows reappear) or ``ignore_deletes`` (only commits that remove and add nothing, i.e.
  deletes of whole files such as partitions, are skipped);
* a ``metaData`` action whose schema cannot be read with the stream's schema (a column dropped,
  renamed, retyped or added after the stream started), or changed partition columns, fails the stream;
* log files cleaned up before the stream read them fail it (``fail_on_data_loss``), or it jumps to
  the earliest commit still there.

With ``change_feed=True`` the units are the **change data feed** instead (planned by
:func:`deltalog.feed.changes.iter_commit_changes`): the starting snapshot's rows as inserts, then each
commit's change files (``cdc`` files, or its added / removed files as inserts / deletes); nothing is
refused for removing data, and each file carries ``kind``, ``changeType``, ``selectionVector`` and the
commit's ``commitTimestamp`` (epoch ms).

Example:
    >>> import pyarrow as pa, deltalog
    >>> from deltalog.feed.tail import AdmissionLimit, LogTail
    >>> _ = deltalog.write_table("memory://tail-doc", pa.table({"x": [1]}))
    >>> _ = deltalog.write_table("memory://tail-doc", pa.table({"x": [2]}), mode="append")
    >>> tail = LogTail(deltalog.Table("memory://tail-doc"))
    >>> start = tail.start_position()
    >>> start
    StreamPosition(version=1, index=-1, is_starting_version=True)
    >>> end = tail.latest_position(start, AdmissionLimit(max_files=1))
    >>> end
    StreamPosition(version=1, index=0, is_starting_version=True)
    >>> [f.version for f in tail.files_between(start, end)]
    [1]
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deltalog.errors import DeltaError, InvalidArgumentError, SchemaError, VersionNotFoundError
from deltalog.log.files import ADD_SCHEMA, REMOVE_SCHEMA
from deltalog.log.paths import LogFile
from deltalog.log.reader import metadata_partition_keys, read_commits
from deltalog.log.segment import LogSegment, list_log
from deltalog.log.timestamps import TimestampLike, commit_timestamps, to_millis
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.features import check_readable
from deltalog.protocol.schema import DataType, StructType, parse_schema, physical_name

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = [
    "AdmissionLimit",
    "IndexedFile",
    "LogTail",
    "StreamPosition",
    "TailOptions",
    "file_reader_snapshot",
    "schema_change",
]

#: The ``sourceVersion`` of the offsets written (delta-spark's offset format, version 1).
OFFSET_FORMAT_VERSION = 1
_FILE_KEYS = ("path", "partitionValues", "size", "modificationTime", "deletionVector")


@functools.total_ordering
@dataclass(frozen=True)
class StreamPosition:
    """A place in the sequence of units (see the module docstring); ordered by ``(version, snapshot
    first, index)``.

    Example:
        >>> StreamPosition(3, -1, False).to_offset("tid")["reservoirVersion"]
        3
    """

    version: int
    index: int = -1
    is_starting_version: bool = False

    def _key(self) -> tuple[int, int, int]:
        return (self.version, 0 if self.is_starting_version else 1, self.index)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, StreamPosition):
            return NotImplemented
        return self._key() < other._key()

    def to_offset(self, table_id: str) -> dict[str, Any]:
        """The offset JSON object Spark checkpoints (delta-spark's field names).

        Example:
            >>> StreamPosition(2, 4, True).to_offset("abc")
            {'sourceVersion': 1, 'reservoirId': 'abc', 'reservoirVersion': 2, 'index': 4, 'isStartingVersion': True}
        """
        return {
            "sourceVersion": OFFSET_FORMAT_VERSION,
            "reservoirId": table_id,
            "reservoirVersion": self.version,
            "index": self.index,
            "isStartingVersion": self.is_starting_version,
        }

    @classmethod
    def from_offset(cls, offset: Any, *, table_id: str | None = None, table: str | None = None) -> StreamPosition:
        """Parse an offset; with ``table_id``, refuse offsets of another table (one deleted and re-created
        at the same path, or a checkpoint reused for a different table).

        Example:
            >>> StreamPosition.from_offset({"sourceVersion": 1, "reservoirVersion": 5, "index": -1})
            StreamPosition(version=5, index=-1, is_starting_version=False)
        """
        if not isinstance(offset, dict):
            raise InvalidArgumentError(f"a Delta stream offset must be a JSON object, got {offset!r}", table=table)
        fmt = offset.get("sourceVersion", OFFSET_FORMAT_VERSION)
        if fmt != OFFSET_FORMAT_VERSION:
            raise InvalidArgumentError(
                f"[INVALID_FORMAT] the stream's checkpoint has offsets of format {fmt}, this reader understands "
                f"format {OFFSET_FORMAT_VERSION}",
                table=table,
            )
        rid = offset.get("reservoirId")
        if table_id is not None and rid is not None and rid != table_id:
            raise DeltaError(
                f"[DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE] the stream's checkpoint belongs to table id "
                f"{rid}, but the table at this path now has id {table_id} (deleted and re-created?); start the "
                "stream with a new checkpoint location",
                table=table,
            )
        try:
            version, index = int(offset["reservoirVersion"]), int(offset.get("index", -1))
        except (KeyError, TypeError, ValueError):
            raise InvalidArgumentError(f"not a Delta stream offset: {offset!r}", table=table) from None
        return cls(version, index, bool(offset.get("isStartingVersion", False)))


@dataclass(frozen=True)
class IndexedFile:
    """One file a stream reads: the unit it belongs to, its index there, and its ``add`` fields
    (``path``, ``partitionValues`` as key/value pairs, ``size``, ``modificationTime``, ``deletionVector``)."""

    version: int
    index: int
    is_snapshot: bool
    add: dict[str, Any]

    @property
    def size(self) -> int:
        """The file's size in bytes (0 when the log does not say)."""
        return int(self.add.get("size") or 0)


@dataclass(frozen=True)
class AdmissionLimit:
    """How much one micro-batch may take: at most ``max_files`` files, and files until ``max_bytes`` is
    reached (a soft limit: the file crossing it is taken, and a batch always takes at least one file).
    ``None`` means no limit of that kind."""

    max_files: int | None = 1000
    max_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_files", "max_bytes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class TailOptions:
    """What to do with commits that change or delete data, and with history that is gone; and which
    files to leave out: ``exclude_regex`` (delta-spark's ``excludeRegex``) skips every file whose path
    (as the log writes it, relative to the table) contains a match.

    Example:
        >>> opts = TailOptions(exclude_regex=r"\\.tmp$")
        >>> opts.excludes("part-1.parquet.tmp"), opts.excludes("part-1.parquet")
        (True, False)
        >>> TailOptions(exclude_regex="(")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: [DELTA_REGEX_OPT_SYNTAX_ERROR] option excludeRegex '(' is not a \
regular expression: missing ), unterminated subpattern at position 0
    """

    ignore_deletes: bool = False
    ignore_changes: bool = False
    skip_change_commits: bool = False
    fail_on_data_loss: bool = True
    exclude_regex: str | None = None

    def __post_init__(self) -> None:
        if self.exclude_regex is not None:
            _pattern(self.exclude_regex)

    def excludes(self, path: str) -> bool:
        """Whether the file at ``path`` is left out of the stream."""
        return self.exclude_regex is not None and _pattern(self.exclude_regex).search(path) is not None


@functools.lru_cache(maxsize=8)
def _pattern(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise InvalidArgumentError(
            f"[DELTA_REGEX_OPT_SYNTAX_ERROR] option excludeRegex {text!r} is not a regular expression: {exc}"
        ) from None


@dataclass
class _Unit:
    version: int
    is_snapshot: bool
    files: list[IndexedFile] = field(default_factory=list)


def file_reader_snapshot(store: Any, protocol: Protocol, metadata: Metadata, *, version: int, table: str) -> Snapshot:
    """A :class:`~deltalog.Snapshot` that knows only ``protocol`` and ``metadata`` (no file list): what
    :func:`deltalog.data.read.read_file_rows` needs to read files a planner chose, on a worker, without
    replaying the log there.

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> md = Metadata(id="x", format={"provider": "parquet"}, schemaString='{"type":"struct","fields":[]}')
        >>> file_reader_snapshot(InMemoryLogStore(), Protocol(1, 2), md, version=3, table="t").version
        3
    """
    from deltalog.log.replay import TableState
    from deltalog.snapshot import Snapshot

    segment = LogSegment(table=table, version=version, checkpoint_version=None, checkpoint=(), commits=(),
                         replay_files=())
    state = TableState(version, protocol, metadata, ADD_SCHEMA.empty_table(), REMOVE_SCHEMA.empty_table())
    return Snapshot(store, segment, state, table=table)


def _type_problem(old: DataType, new: DataType, path: str) -> str | None:
    if isinstance(old, StructType) and isinstance(new, StructType):
        return _struct_problem(old, new, path)
    if old != new:
        return f"column {path} changed type"
    return None


def _struct_problem(old: StructType, new: StructType, prefix: str, mode: str = "none") -> str | None:
    for f in old.fields:
        path = f"{prefix}{f.name}"
        g = new.get(f.name)
        if g is None:
            return f"column {path} is not in the stream's schema (dropped or renamed)"
        if mode != "none" and physical_name(f, mode) != physical_name(g, mode):
            return f"column {path} maps to another physical column"
        if f.nullable and not g.nullable:
            return f"column {path} became nullable"
        problem = _type_problem(f.type, g.type, path + ".")
        if problem is not None:
            return problem.replace(path + ". changed", path + " changed")
    return None


def schema_change(old: Metadata, read: Metadata) -> str | None:
    """Why files written under ``old`` cannot be read with the stream's ``read`` metadata, or ``None``:
    every column of ``old`` must be in ``read`` with the same type (and physical name under column
    mapping), not newly non-nullable, and the partition columns must be the same; ``read`` may have extra
    columns.

    Example:
        >>> s = lambda cols: '{"type":"struct","fields":[%s]}' % ",".join(
        ...     '{"name":"%s","type":"long","nullable":true,"metadata":{}}' % c for c in cols)
        >>> md = lambda cols: Metadata(id="t", format={"provider": "parquet"}, schemaString=s(cols))
        >>> schema_change(md(["a"]), md(["a", "b"])) is None
        True
        >>> print(schema_change(md(["a", "c"]), md(["a", "b"])))
        column c is not in the stream's schema (dropped or renamed)
    """
    if tuple(old.partitionColumns) != tuple(read.partitionColumns):
        return f"partition columns changed from {list(old.partitionColumns)} to {list(read.partitionColumns)}"
    mode_old = old.configuration.get("delta.columnMapping.mode", "none")
    mode_new = read.configuration.get("delta.columnMapping.mode", "none")
    if mode_old != mode_new:
        return f"column mapping mode changed from {mode_old} to {mode_new}"
    if old.schemaString == read.schemaString:
        return None
    try:
        return _struct_problem(parse_schema(old.schemaString or ""), parse_schema(read.schemaString or ""), "",
                               mode_new)
    except SchemaError as exc:
        return f"the schema cannot be parsed ({exc.message})"


def _positive(value: Any, name: str) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be a version number or 'latest', got {value!r}") from None
    if out < 0:
        raise InvalidArgumentError(f"{name} must not be negative, got {value!r}")
    return out


class LogTail:
    """Plans a stream over ``table``: where it starts, how far a micro-batch may go, which files it reads.

    ``metadata`` is the stream's metadata (schema and partitioning it reads with; the latest by
    default). Parsed commits are cached until :meth:`forget_before` is told they were processed.
    """

    def __init__(
        self,
        table: TableHandle,
        *,
        metadata: Metadata | None = None,
        options: TailOptions | None = None,
        change_feed: bool = False,
    ) -> None:
        self.table = table
        self.change_feed = change_feed
        self.options = options or TailOptions()
        latest = table.snapshot()
        self.metadata = metadata if metadata is not None else latest.metadata
        #: the version whose schema the stream reads with, when it is the latest (for the advice of errors)
        self._schema_version = latest.version if self.metadata == latest.metadata else None
        self.protocol = latest.protocol
        self.table_id = self.metadata.id
        self._keys = frozenset(metadata_partition_keys(self.metadata))
        self._units: dict[tuple[int, bool], _Unit] = {}
        self._ict_from: int | None = None
        props = latest.properties
        if props.get("delta.enableInCommitTimestamps", "false").lower() == "true":
            self._ict_from = int(props.get("delta.inCommitTimestampEnablementVersion", "0"))

    @property
    def where(self) -> str:
        """The table's location, for messages."""
        return self.table.location

    # ------------------------------------------------------------------------------------- starting

    def start_position(
        self, *, starting_version: int | str | None = None, starting_timestamp: TimestampLike | None = None
    ) -> StreamPosition:
        """Where a new stream starts: the latest snapshot, then its changes (default); or the changes from
        ``starting_version`` on (``"latest"``: only commits made from now on); or from the first commit
        at or after ``starting_timestamp`` (the next commit when there is none yet).

        Example:
            >>> import deltalog
            >>> LogTail(deltalog.Table("memory://tail-doc")).start_position(starting_version="latest")
            StreamPosition(version=2, index=-1, is_starting_version=False)
        """
        if starting_version is not None and starting_timestamp is not None:
            raise InvalidArgumentError(
                "[DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET] give startingVersion or startingTimestamp, not both",
                table=self.where,
            )
        latest = self.table.latest_version()
        if starting_timestamp is not None:
            return StreamPosition(self._first_version_at_or_after(to_millis(starting_timestamp), latest))
        if starting_version is None:
            return StreamPosition(latest, -1, True)
        if str(starting_version).strip().lower() == "latest":
            return StreamPosition(latest + 1)
        version = _positive(starting_version, "startingVersion")
        if version > latest:
            raise VersionNotFoundError(
                f"[DELTA_VERSION_NOT_FOUND] startingVersion {version} is after the latest version {latest}",
                table=self.where,
            )
        return StreamPosition(version)

    def _commits(self, start: int) -> list[LogFile]:
        return [f for f in list_log(self.table.store, start) if f.kind == "commit"]

    def _first_version_at_or_after(self, target: int, latest: int) -> int:
        commits = self._commits(0)
        stamps = commit_timestamps(self.table.store, commits, table=self.where, ict_enabled_from=self._ict_from)
        idx = bisect.bisect_left(stamps, target)
        return commits[idx].version if idx < len(commits) else latest + 1

    # -------------------------------------------------------------------------------------- planning

    def latest_position(
        self, start: StreamPosition, limit: AdmissionLimit | None = None, *, end_version: int | None = None
    ) -> StreamPosition:
        """How far the next micro-batch after ``start`` goes: as many files as ``limit`` admits (all with
        ``None``), never past ``end_version`` (for ``Trigger.AvailableNow``); ``start`` itself when there
        is nothing new. Commits without files to read are passed over without using the budget.

        Example:
            >>> import deltalog
            >>> tail = LogTail(deltalog.Table("memory://tail-doc"))
            >>> tail.latest_position(StreamPosition(0), AdmissionLimit(max_files=5))
            StreamPosition(version=2, index=-1, is_starting_version=False)
        """
        taken = size = 0
        position = start
        for unit in self._units_from(start, end_version):
            first = start.index + 1 if (unit.version, unit.is_snapshot) == (start.version, start.is_starting_version) \
                else 0
            for f in (x for x in unit.files if x.index >= first):
                if limit is not None and taken > 0 and (
                    (limit.max_files is not None and taken >= limit.max_files)
                    or (limit.max_bytes is not None and size >= limit.max_bytes)
                ):
                    return position
                taken += 1
                size += f.size
                position = StreamPosition(unit.version, f.index, unit.is_snapshot)
            position = StreamPosition(unit.version + 1)  # the whole unit is read
        return position

    def files_between(self, start: StreamPosition, end: StreamPosition) -> list[IndexedFile]:
        """The files after ``start`` up to and including ``end`` (positions this planner returned).

        Example:
            >>> import deltalog
            >>> tail = LogTail(deltalog.Table("memory://tail-doc"))
            >>> len(tail.files_between(StreamPosition(0), StreamPosition(2)))
            2
        """
        if end <= start:
            return []
        out: list[IndexedFile] = []
        last = end.version if (end.is_starting_version or end.index >= 0) else end.version - 1
        for unit in self._units_from(start, last):
            for f in unit.files:
                here = StreamPosition(unit.version, f.index, unit.is_snapshot)
                if start < here <= end:
                    out.append(f)
        return out

    def forget_before(self, position: StreamPosition) -> None:
        """Drop cached units wholly before ``position`` (Spark committed them).

        Example:
            >>> import deltalog
            >>> LogTail(deltalog.Table("memory://tail-doc")).forget_before(StreamPosition(2))
        """
        for key in [k for k in self._units if k[0] < position.version]:
            del self._units[key]

    # ----------------------------------------------------------------------------------------- units

    def _units_from(self, start: StreamPosition, end_version: int | None) -> Iterator[_Unit]:
        version = start.version
        if start.is_starting_version:
            if end_version is not None and version > end_version:
                return
            yield self._snapshot_unit(version)
            version += 1
        if end_version is not None and version > end_version:
            return
        commits = self._commits(version)
        if end_version is not None:
            commits = [c for c in commits if c.version <= end_version]
        if not commits:
            return
        if commits[0].version != version and self.options.fail_on_data_loss:
            raise DeltaError(
                f"[DELTA_STREAMING_DATA_LOSS] the stream needs version {version} of the log, but the log now "
                f"starts at version {commits[0].version} (cleaned up by log retention?): data may have been "
                "lost; set failOnDataLoss=false to continue from the earliest version still there",
                table=self.where, version=version,
            )
        expected = commits[0].version
        for i, c in enumerate(commits):
            if c.version != expected:
                raise DeltaError(
                    f"[DELTA_VERSIONS_NOT_CONTIGUOUS] the log jumps from version {expected - 1} to {c.version}",
                    table=self.where, version=c.version,
                )
            expected += 1
            yield self._commit_unit(c, commits[i:])

    def _snapshot_unit(self, version: int) -> _Unit:
        key = (version, True)
        unit = self._units.get(key)
        if unit is not None:
            return unit
        try:
            snap = self.table.snapshot(version)
        except VersionNotFoundError as exc:
            raise DeltaError(
                f"[DELTA_STREAMING_DATA_LOSS] the stream starts from the snapshot of version {version}, which "
                f"can no longer be reconstructed ({exc.message}); start it with a new checkpoint location",
                table=self.where, version=version,
            ) from None
        self._check_metadata(snap.metadata, version)
        rows = [{k: r.get(k) for k in _FILE_KEYS} for r in snap.add_files().select(list(_FILE_KEYS)).to_pylist()]
        rows.sort(key=lambda r: (r.get("modificationTime") or 0, r["path"]))
        if self.change_feed:
            from deltalog.feed.changes import cdf_enabled

            if not cdf_enabled(snap.metadata):
                raise DeltaError(
                    f"[DELTA_MISSING_CHANGE_DATA] the change data feed is not enabled at version {version} "
                    "(delta.enableChangeDataFeed)",
                    table=self.where, version=version,
                )
            stamp = self._timestamp(version)
            rows = [{**r, "kind": "add", "changeType": "insert", "selectionVector": None, "commitTimestamp": stamp}
                    for r in rows]
        unit = _Unit(version, True, self._indexed(version, True, rows))
        self._units[key] = unit
        return unit

    def _timestamp(self, version: int) -> int:
        commits = [c for c in self._commits(0) if c.version <= version]
        return commit_timestamps(self.table.store, commits, table=self.where, ict_enabled_from=self._ict_from)[-1]

    def _change_units(self, commits: list[LogFile]) -> None:
        """Plan the change files of ``commits`` (consecutive, not cached yet) in one pass."""
        from deltalog.feed.changes import iter_commit_changes

        for c in iter_commit_changes(self.table, commits[0].version, commits[-1].version):
            if c.metadata is not None:
                self._check_metadata(c.metadata, c.version)
            rows = [
                {"path": f.path, "partitionValues": list(f.partition_values.items()), "size": f.size,
                 "deletionVector": dict(f.deletion_vector) if f.deletion_vector else None, "kind": f.kind,
                 "changeType": f.change_type, "commitTimestamp": c.timestamp,
                 "selectionVector": dict(f.selection_vector) if f.selection_vector else None}
                for f in c.files
            ]
            self._units[(c.version, False)] = _Unit(c.version, False, self._indexed(c.version, False, rows))

    def _commit_unit(self, commit: LogFile, following: list[LogFile] | None = None) -> _Unit:
        key = (commit.version, False)
        unit = self._units.get(key)
        if unit is not None:
            return unit
        if self.change_feed:
            todo = [c for c in (following or [commit]) if (c.version, False) not in self._units]
            self._change_units(todo if todo and todo[0].version == commit.version else [commit])
            return self._units[key]
        version = commit.version
        actions = read_commits(self.table.store, [commit], table=self.where, partition_keys=self._keys)
        for action in actions.others:
            if isinstance(action, Protocol):
                check_readable(action, table=self.where, version=version)
            elif isinstance(action, Metadata):
                self._check_metadata(action, version)
        adds = actions.adds.filter(_data_change(actions.adds))
        removes = actions.removes.filter(_data_change(actions.removes))
        rows = adds.select(list(_FILE_KEYS)).to_pylist()
        if removes.num_rows:
            rows = self._changed(version, rows, removes.column("path")[0].as_py())
        unit = _Unit(version, False, self._indexed(version, False, rows))
        self._units[key] = unit
        return unit

    def _indexed(self, version: int, is_snapshot: bool, rows: list[dict[str, Any]]) -> list[IndexedFile]:
        """The unit's files, numbered in log order before ``exclude_regex`` leaves some out (so a position
        names the same file whatever the option)."""
        files = [IndexedFile(version, i, is_snapshot, r) for i, r in enumerate(rows)]
        if self.options.exclude_regex is None:
            return files
        return [f for f in files if not self.options.excludes(f.add["path"])]

    def _changed(self, version: int, adds: list[dict[str, Any]], example: str) -> list[dict[str, Any]]:
        """The files to read of a commit that removes data (``dataChange=true``), or the stream's error."""
        opts = self.options
        if opts.skip_change_commits:
            return []
        if adds:
            if opts.ignore_changes:
                return adds
            raise DeltaError(
                f"[DELTA_SOURCE_TABLE_IGNORE_CHANGES] version {version} updates data (it removes {example} and "
                "adds files): a stream of appends cannot carry that; set skipChangeCommits=true to skip such "
                "commits (or ignoreChanges=true to read their new files again, rewritten rows included)",
                table=self.where, version=version,
            )
        if opts.ignore_deletes or opts.ignore_changes:
            return []
        raise DeltaError(
            f"[DELTA_SOURCE_IGNORE_DELETE] version {version} deletes data (for example {example}): a stream of "
            "appends cannot carry that; set ignoreDeletes=true to skip commits that only delete files, or "
            "skipChangeCommits=true to skip every commit that removes data",
            table=self.where, version=version,
        )

    def _check_metadata(self, metadata: Metadata, version: int) -> None:
        if metadata.id != self.table_id:
            raise DeltaError(
                f"[DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE] version {version} has table id {metadata.id}, "
                f"the stream reads table id {self.table_id}: the table was replaced; restart with a new checkpoint",
                table=self.where, version=version,
            )
        problem = schema_change(metadata, self.metadata)
        if problem is not None and self._schema_version is not None and version < self._schema_version:
            raise SchemaError(
                f"[DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE] the stream reads with the schema of version "
                f"{self._schema_version}, and version {version}, which it reads too, has a schema it cannot read "
                f"that way: {problem}; start the stream from a version after the column was renamed or dropped "
                "(startingVersion), or read those versions with a batch read",
                table=self.where, version=version,
            )
        if problem is not None:
            raise SchemaError(
                f"[DELTA_SCHEMA_CHANGED_WITH_VERSION] the table's schema changed in version {version} in a way the "
                f"running stream cannot read: {problem}; restart the stream to read with the new schema",
                table=self.where, version=version,
            )


def _data_change(files: Any) -> Any:
    import pyarrow.compute as pc

    return pc.fill_null(files.column("dataChange"), True)
