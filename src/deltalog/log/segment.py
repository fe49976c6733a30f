"""The log segment: the minimal set of log files that reconstruct one version of a table.

Invariants of a :class:`LogSegment` (checked when it is built, so replay can trust them):

* ``checkpoint`` is empty or holds every part of one *complete* checkpoint at ``checkpoint_version``;
* ``commits`` are the commit files ``checkpoint_version + 1 .. version`` (or ``0 .. version`` without a
  checkpoint), contiguous, with no gaps;
* ``replay_files`` is ``commits`` with runs replaced by log compaction files where one covers them.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> store = InMemoryLogStore()
    >>> store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
    >>> build_segment(store, table="t").version
    0
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.errors import InvalidTableError, TableNotFoundError, VersionNotFoundError
from deltalog.log.paths import LAST_CHECKPOINT, LOG_DIR, LogFile, parse_log_name, version_prefix
from deltalog.storage import LogStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LastCheckpointHint:
    """The parsed ``_delta_log/_last_checkpoint`` file (a hint: it may be stale)."""

    version: int
    size: int | None = None
    parts: int | None = None
    size_in_bytes: int | None = None
    num_of_add_files: int | None = None
    v2_checkpoint: dict[str, Any] | None = None
    checksum: str | None = None


@dataclass(frozen=True)
class LogSegment:
    """Files that reconstruct ``version``: one complete checkpoint (maybe none) plus later commits."""

    table: str
    version: int
    checkpoint_version: int | None
    checkpoint: tuple[LogFile, ...]
    commits: tuple[LogFile, ...]
    replay_files: tuple[LogFile, ...]
    crc: LogFile | None = None
    all_commits: tuple[LogFile, ...] = field(default=(), repr=False)

    @property
    def earliest_commit(self) -> int | None:
        """The lowest commit version seen in the listing (history and time travel start here)."""
        return self.all_commits[0].version if self.all_commits else None


def read_last_checkpoint(store: LogStore, table: str) -> LastCheckpointHint | None:
    """Parse ``_last_checkpoint``; a missing or corrupt file yields ``None`` (callers then list).

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> read_last_checkpoint(InMemoryLogStore(), "t") is None
        True
    """
    try:
        raw = store.read(f"{LOG_DIR}/{LAST_CHECKPOINT}")
    except FileNotFoundError:
        return None
    try:
        obj = json.loads(raw)
        version = obj["version"]
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ValueError(f"version {version!r} is not a non-negative integer")
        parts = obj.get("parts")
        if parts is not None and (not isinstance(parts, int) or parts < 1):
            raise ValueError(f"parts {parts!r} is not a positive integer")
        return LastCheckpointHint(
            version=version,
            size=obj.get("size"),
            parts=parts,
            size_in_bytes=obj.get("sizeInBytes"),
            num_of_add_files=obj.get("numOfAddFiles"),
            v2_checkpoint=obj.get("v2Checkpoint"),
            checksum=obj.get("checksum"),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        log.info("ignoring corrupt %s/%s of %s: %s", LOG_DIR, LAST_CHECKPOINT, table, exc)
        return None


def list_log(store: LogStore, start_version: int = 0) -> list[LogFile]:
    """Every log file (commits, checkpoints, compactions, crc) from ``start_version`` on, sorted.

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> list_log(InMemoryLogStore())
        []
    """
    out = []
    for info in store.list_from(f"{LOG_DIR}/{version_prefix(start_version)}"):
        name = info.path.rsplit("/", 1)[-1]
        parsed = parse_log_name(name, info.size, info.modification_time)
        if parsed is not None:
            out.append(parsed)
    return out


def complete_checkpoints(files: Sequence[LogFile]) -> dict[int, tuple[LogFile, ...]]:
    """Complete checkpoints by version; a multi-part checkpoint counts only with all its parts.

    Example:
        >>> from deltalog.log.paths import parse_log_name
        >>> parts = [parse_log_name("00000000000000000002.checkpoint.0000000001.0000000002.parquet")]
        >>> complete_checkpoints([p for p in parts if p])
        {}
    """
    groups: dict[tuple[int, int, str | None], dict[int, LogFile]] = defaultdict(dict)
    for f in files:
        if f.kind != "checkpoint":
            continue
        key = (f.version, f.num_parts or 1, f.uuid)
        groups[key][f.part or 1] = f
    best: dict[int, tuple[LogFile, ...]] = {}
    for (version, num_parts, _uuid), parts in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][2] is not None, -kv[0][1])
    ):
        if len(parts) != num_parts or set(parts) != set(range(1, num_parts + 1)):
            continue
        # Prefer V2 (uuid) checkpoints, then classic single-file, then multi-part.
        best[version] = tuple(parts[i] for i in range(1, num_parts + 1))
    return best


def build_segment(
    store: LogStore,
    *,
    table: str,
    version: int | None = None,
    exclude_checkpoints: frozenset[tuple[str, ...]] = frozenset(),
) -> LogSegment:
    """Find the files that reconstruct ``version`` (default: the latest).

    ``exclude_checkpoints`` lets the caller retry without a checkpoint found unreadable.

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> build_segment(InMemoryLogStore(), table="t")
        Traceback (most recent call last):
        ...
        deltalog.errors.TableNotFoundError: no Delta table: there is no _delta_log directory [table t]
    """
    hint = read_last_checkpoint(store, table)
    start = hint.version if hint is not None and (version is None or hint.version <= version) else 0
    files = list_log(store, start)
    checkpoints = _usable(complete_checkpoints(files), exclude_checkpoints)
    if start > 0 and not any(v >= start for v in checkpoints):
        # The hint pointed at a checkpoint that is missing or incomplete: list everything.
        log.info("_last_checkpoint of %s names version %d but no complete checkpoint is there", table, start)
        start = 0
        files = list_log(store, 0)
        checkpoints = _usable(complete_checkpoints(files), exclude_checkpoints)
    commits = [f for f in files if f.kind == "commit"]
    if not commits and not checkpoints:
        if not any(True for _ in store.list_from(f"{LOG_DIR}/")):
            raise TableNotFoundError("no Delta table: there is no _delta_log directory", table=table)
        raise TableNotFoundError(
            "no Delta table: _delta_log holds no commit or checkpoint files", table=table
        )
    latest = max([c.version for c in commits] + list(checkpoints))
    if version is None:
        version = latest
    elif version > latest:
        raise VersionNotFoundError(
            f"cannot time travel to version {version}: the latest version is {latest}", table=table
        )
    elif version < 0:
        raise VersionNotFoundError(f"cannot time travel to negative version {version}", table=table)
    eligible = [v for v in checkpoints if v <= version]
    cp_version = max(eligible) if eligible else None
    first_needed = 0 if cp_version is None else cp_version + 1
    needed = [c for c in commits if first_needed <= c.version <= version]
    _check_contiguous(table, needed, first_needed, version, cp_version, commits)
    compacted = [f for f in files if f.kind == "compacted"]
    crc = next((f for f in files if f.kind == "crc" and f.version == version), None)
    return LogSegment(
        table=table,
        version=version,
        checkpoint_version=cp_version,
        checkpoint=checkpoints[cp_version] if cp_version is not None else (),
        commits=tuple(needed),
        replay_files=tuple(_with_compactions(needed, compacted, first_needed, version)),
        crc=crc,
        all_commits=tuple(commits),
    )


def _usable(
    found: dict[int, tuple[LogFile, ...]], exclude: frozenset[tuple[str, ...]]
) -> dict[int, tuple[LogFile, ...]]:
    return {v: parts for v, parts in found.items() if tuple(p.name for p in parts) not in exclude}


def _check_contiguous(
    table: str,
    needed: list[LogFile],
    first: int,
    version: int,
    cp_version: int | None,
    all_commits: list[LogFile],
) -> None:
    have = [c.version for c in needed]
    if have == list(range(first, version + 1)):
        return
    if cp_version is None and (not have or have[0] != 0):
        earliest = all_commits[0].version if all_commits else None
        if earliest is not None and earliest > version:
            raise VersionNotFoundError(
                f"cannot reconstruct version {version}: the log starts at version {earliest} "
                "and no checkpoint at or before it remains (older entries were cleaned up)",
                table=table,
            )
        raise InvalidTableError(
            f"cannot reconstruct version {version}: no checkpoint and the log does not start at "
            f"version 0 (first commit found: {have[0] if have else 'none'})",
            table=table,
        )
    missing = sorted(set(range(first, version + 1)) - set(have))
    raise InvalidTableError(
        f"log versions are not contiguous: commit file(s) for version(s) {missing[:10]} are missing "
        f"between {first} and {version} (found {have[:5]}{'...' if len(have) > 5 else ''})",
        table=table,
        file=f"{LOG_DIR}/{version_prefix(missing[0])}.json",
    )


def _with_compactions(
    commits: list[LogFile], compacted: list[LogFile], first: int, last: int
) -> list[LogFile]:
    """Replace runs of commits by compaction files that cover them exactly, longest first."""
    if not compacted:
        return commits
    by_start: dict[int, LogFile] = {}
    for c in compacted:
        end = c.end_version
        if end is None or c.version < first or end > last or end <= c.version:
            continue
        prev = by_start.get(c.version)
        if prev is None or (prev.end_version or 0) < end:
            by_start[c.version] = c
    out: list[LogFile] = []
    i = 0
    while i < len(commits):
        v = commits[i].version
        comp = by_start.get(v)
        if comp is not None and comp.end_version is not None:
            out.append(comp)
            i += comp.end_version - v + 1
        else:
            out.append(commits[i])
            i += 1
    return out
