"""``Table.history``: commit provenance read from each commit's ``commitInfo``, newest first.

Each entry's ``timestamp`` is the commit's timestamp as time travel sees it (as delta-spark's ``DESCRIBE
HISTORY`` reports it): the commit file's modification time made strictly increasing, or the
``inCommitTimestamp`` once in-commit timestamps are enabled. So ``snapshot(timestamp=entry["timestamp"])``
is the snapshot at ``entry["version"]``.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> s = InMemoryLogStore(clock=lambda: 7)
    >>> s.write("_delta_log/00000000000000000000.json",
    ...         b'{"commitInfo":{"timestamp":5,"operation":"CREATE TABLE"}}', overwrite=False)
    >>> [(h["version"], h["timestamp"], h["operation"]) for h in table_history(s, table="t")]
    [(0, 7, 'CREATE TABLE')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.log.paths import LogFile
from deltalog.log.reader import read_checkpoint
from deltalog.log.segment import LogSegment, build_segment, list_log
from deltalog.log.timestamps import commit_info_of, commit_timestamps, ict_enablement_version, ict_value
from deltalog.protocol.actions import Metadata, parse_action
from deltalog.storage import LogStore


def table_history(store: LogStore, *, table: str, limit: int | None = None) -> list[dict[str, Any]]:
    """One dict per commit (newest first): ``version``, ``timestamp`` and the ``commitInfo`` fields.

    ``timestamp`` (milliseconds since the epoch) is the one timestamp-based time travel uses; see the
    module docstring. Raises :class:`TableNotFoundError` when there is no Delta table at all.
    """
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise InvalidArgumentError(f"limit must be a non-negative int, got {limit!r}", table=table)
    segment = build_segment(store, table=table)  # no table: TableNotFoundError; its metadata says if ICT is on
    commits = [f for f in list_log(store, 0) if f.kind == "commit"]
    if not commits:
        return []  # a checkpoint without commits (older entries cleaned up): no provenance left
    blobs: dict[int, bytes | None] = {}

    def read(c: LogFile) -> bytes | None:
        if c.version not in blobs:
            try:
                blobs[c.version] = store.read(c.path)
            except FileNotFoundError:
                blobs[c.version] = None  # cleaned up concurrently
        return blobs[c.version]

    ict_from = ict_enablement_version(_latest_configuration(store, segment, read), table=table)
    newest_first = list(range(len(commits) - 1, -1, -1))[:limit]
    entries: list[tuple[int, dict[str, Any]]] = []
    for idx in newest_first:
        c = commits[idx]
        data = read(c)
        if data is None:
            continue
        entries.append((idx, commit_info_of(data, c, table=table) or {}))
    known = {commits[idx].version: ict_value(info) for idx, info in entries}
    stamps = commit_timestamps(
        store, commits, table=table, ict_enabled_from=ict_from, only=[idx for idx, _ in entries], in_commit=known
    )
    return [{"version": commits[idx].version, **info, "timestamp": ts} for (idx, info), ts in zip(entries, stamps)]


def _latest_configuration(
    store: LogStore, segment: LogSegment, read: Callable[[LogFile], bytes | None]
) -> Mapping[str, str]:
    """``metaData.configuration`` at the segment's version: the newest ``metaData`` of its commits, else
    the checkpoint's (only its non-file columns are read)."""
    for c in reversed(segment.commits):
        data = read(c)
        for i, line in enumerate(data.split(b"\n") if data else (), start=1):
            if b'"metaData"' not in line:
                continue
            action = parse_action(line.strip(), table=segment.table, version=c.version, file=c.path, line=i)
            if isinstance(action, Metadata):
                return action.configuration
    if segment.checkpoint:
        others = read_checkpoint(store, segment.checkpoint, table=segment.table, need_files=False).others
        for action in others:
            if isinstance(action, Metadata):
                return action.configuration
    return {}
