"""Snapshots from the log: load a version (past an unreadable checkpoint), and move a snapshot forward by
newer commits -- read from the log, or already read by a writer (the winners it caught up with and its
own commit). The :class:`~deltalog.table.Table` facade and the committer both build on these, so the
committer needs no table: it sits below it.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> from deltalog.log.segment import list_log
    >>> import pyarrow as pa, deltalog
    >>> store = InMemoryLogStore("memory://load-doc")
    >>> _ = deltalog.write_table("memory://load-doc", pa.table({"x": [1]}), store=store)
    >>> _ = deltalog.write_table("memory://load-doc", pa.table({"x": [2]}), mode="append", store=store)
    >>> first = load_snapshot(store, "memory://load-doc", 0)
    >>> advance_snapshot(first, list_log(store, 1), None).version
    1
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from deltalog.errors import CorruptLogError
from deltalog.log.paths import LogFile
from deltalog.log.replay import advance, replay
from deltalog.log.segment import LogSegment, build_segment
from deltalog.snapshot import Snapshot

if TYPE_CHECKING:
    from deltalog.log.reader import FileActions
    from deltalog.storage import LogStore

__all__ = ["LogSnapshots", "SnapshotSource", "advance_snapshot", "extend_snapshot", "load_snapshot"]


class SnapshotSource(Protocol):
    """What gives snapshots of one table (a :class:`~deltalog.table.Table`): its location, its store and
    the snapshot at a version (the latest by default)."""

    location: str
    store: LogStore

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The table at ``version`` (latest by default)."""
        ...


@dataclass
class LogSnapshots:
    """A :class:`SnapshotSource` that reads each snapshot from the log (no cache), for code that has a store
    and a location but no table object; ``verify_checksums=False`` skips the ``.crc`` check.

    Example:
        >>> LogSnapshots("/data/events", store, verify_checksums=False).snapshot(3).version  # doctest: +SKIP
        3
    """

    location: str
    store: LogStore
    verify_checksums: bool = True

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The table at ``version`` (latest by default), replayed from the log."""
        return load_snapshot(self.store, self.location, version, verify_checksums=self.verify_checksums)


def load_snapshot(store: LogStore, location: str, version: int | None, *, verify_checksums: bool = True) -> Snapshot:
    """The table at ``version`` (latest: ``None``) replayed from the log; a checkpoint that cannot be read
    is left out (an older one, or the commits, rebuild the state) and the ``.crc`` file of the version,
    when there is one, is checked against the state (``verify_checksums``).

    Example:
        >>> load_snapshot(store, "/data/events", None).version                  # doctest: +SKIP
        12
    """
    excluded: set[tuple[str, ...]] = set()
    while True:
        segment = build_segment(store, table=location, version=version, exclude_checkpoints=frozenset(excluded))
        try:
            state = replay(store, segment)
        except CorruptLogError as exc:
            names = tuple(p.name for p in segment.checkpoint)
            if not names or exc.file is None or not _is_checkpoint_file(exc.file, segment):
                raise
            excluded.add(names)  # unreadable checkpoint: reconstruct from an older one or commits
            try:
                build_segment(store, table=location, version=segment.version, exclude_checkpoints=frozenset(excluded))
            except Exception:
                raise exc from None
            version = segment.version
            continue
        snapshot = Snapshot(store, segment, state, table=location)
        if segment.crc is not None and verify_checksums:
            from deltalog.log.crc import verify_crc

            verify_crc(snapshot)
        return snapshot


def advance_snapshot(
    snapshot: Snapshot, listing: list[LogFile], version: int | None, *, verify_checksums: bool = True
) -> Snapshot | None:
    """``snapshot`` moved forward by the commits in ``listing`` (the log files after it) up to ``version``
    (the newest by default), reading only those; ``None`` when the commits have a gap (log cleanup raced
    the reader: the caller loads the version instead).

    Example:
        >>> advance_snapshot(s, list_log(s.store, s.version + 1), None).version > s.version  # doctest: +SKIP
        True
    """
    new = [f for f in listing if f.kind == "commit" and (version is None or f.version <= version)]
    if not new:
        return snapshot
    if [f.version for f in new] != list(range(snapshot.version + 1, new[-1].version + 1)):
        return None
    crc = next((f for f in listing if f.kind == "crc" and f.version == new[-1].version), None)
    updated = extend_snapshot(snapshot, new, crc=crc)
    if crc is not None and verify_checksums:
        from deltalog.log.crc import verify_crc

        verify_crc(updated)
    return updated


def extend_snapshot(
    snapshot: Snapshot, commits: list[LogFile], *, crc: LogFile | None = None,
    actions: list[FileActions] | None = None,
) -> Snapshot:
    """``snapshot`` moved forward by ``commits`` (oldest first, following ``snapshot.version`` without a
    gap), read from the log -- or, given their ``actions`` (newest first: a writer's own commit and the
    winners it read), without reading anything.

    Example:
        >>> extend_snapshot(s, [commit_file], actions=[commit_actions]).version == s.version + 1  # doctest: +SKIP
        True
    """
    if [f.version for f in commits] != list(range(snapshot.version + 1, snapshot.version + 1 + len(commits))):
        raise ValueError(f"commits {[f.version for f in commits]} do not follow version {snapshot.version}")
    if not commits:
        return snapshot
    old = snapshot.segment
    segment = replace(
        old, version=commits[-1].version, commits=(*old.commits, *commits),
        replay_files=(*old.replay_files, *commits), crc=crc, all_commits=(*old.all_commits, *commits),
    )
    state = advance(snapshot.store, snapshot.state, segment, actions=actions)
    return Snapshot(snapshot.store, segment, state, table=snapshot.table)


def _is_checkpoint_file(file: str, segment: LogSegment) -> bool:
    return any(file == p.path for p in segment.checkpoint) or "/_sidecars/" in file
