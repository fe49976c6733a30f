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
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from deltalog.errors import InvalidTableError, TableNotFoundError, VersionNotFoundError
from deltalog.log.paths import (
    LAST_CHECKPOINT,
    LOG_DIR,
    LogFile,
    commit_path,
    multipart_checkpoint_name,
    parse_log_name,
    version_prefix,
)
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


def incomplete_checkpoints(files: Sequence[LogFile]) -> dict[int, list[str]]:
    """Multi-part checkpoints with missing parts at versions that have no complete checkpoint: the
    names of the missing part files by version (readers ignore such checkpoints; errors name them).

    Example:
        >>> from deltalog.log.paths import parse_log_name
        >>> part = parse_log_name("00000000000000000002.checkpoint.0000000001.0000000002.parquet")
        >>> incomplete_checkpoints([part] if part else [])
        {2: ['00000000000000000002.checkpoint.0000000002.0000000002.parquet']}
    """
    groups: dict[tuple[int, int], set[int]] = defaultdict(set)
    for f in files:
        if f.kind == "checkpoint" and f.uuid is None and (f.num_parts or 1) > 1:
            groups[(f.version, f.num_parts or 1)].add(f.part or 1)
    if not groups:
        return {}
    complete = complete_checkpoints(files)
    out: dict[int, list[str]] = {}
    for (version, num_parts), present in sorted(groups.items()):
        if version in complete:
            continue
        missing = [multipart_checkpoint_name(version, i, num_parts) for i in range(1, num_parts + 1)
                   if i not in present]
        out.setdefault(version, []).extend(missing)
    return out


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
        _raise_no_table(store, table, files)
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
    _check_contiguous(table, needed, first_needed, version, cp_version, commits, checkpoints, files)
    for c in needed:
        if c.size == 0:  # valid per the protocol (no actions), but usually a failed or truncated write
            log.warning("commit %s of %s is empty (0 bytes): read as a commit with no actions", c.path, table)
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


def _raise_no_table(store: LogStore, table: str, files: list[LogFile]) -> NoReturn:
    """Neither a commit nor a complete checkpoint: say what the ``_delta_log`` directory holds."""
    incomplete = incomplete_checkpoints(files)
    if incomplete:
        raise TableNotFoundError(
            f"no Delta table: {LOG_DIR} has no commit files and no complete checkpoint"
            f"{_incomplete_note(incomplete)}",
            table=table, file=f"{LOG_DIR}/{incomplete[max(incomplete)][0]}",
        )
    held = [i.path.rsplit("/", 1)[-1] for i in store.list_from(f"{LOG_DIR}/")]
    if held:
        raise TableNotFoundError(
            f"no Delta table: {LOG_DIR} has no commit or checkpoint files (it holds "
            f"{', '.join(held[:3])}{', ...' if len(held) > 3 else ''})",
            table=table, file=f"{LOG_DIR}/{held[0]}",
        )
    full = store.full_path(LOG_DIR)
    if "://" not in full and os.path.isdir(full):
        raise TableNotFoundError(
            f"no Delta table: {LOG_DIR} has no commit files (it holds no files)", table=table, file=LOG_DIR
        )
    root = _enclosing_table(full) if "://" not in full else None
    if root is not None:
        part = os.path.relpath(os.path.dirname(os.path.abspath(full)), root).split(os.sep)[0]
        key, eq, value = part.partition("=")
        how = f", e.g. where(\"{key} = '{value}'\")" if eq else ""
        raise TableNotFoundError(
            f"no Delta table: there is no {LOG_DIR} directory here; this path is inside the Delta table at {root}: "
            f"read that table and select its rows with a filter{how}", table=table)
    raise TableNotFoundError(f"no Delta table: there is no {LOG_DIR} directory", table=table)


def _enclosing_table(log_dir: str) -> str | None:
    """The nearest local directory above the one ``log_dir`` belongs to that holds a Delta log."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(log_dir)))
    while True:
        if os.path.isdir(os.path.join(here, LOG_DIR)):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _check_contiguous(
    table: str,
    needed: list[LogFile],
    first: int,
    version: int,
    cp_version: int | None,
    all_commits: list[LogFile],
    checkpoints: dict[int, tuple[LogFile, ...]],
    files: list[LogFile],
) -> None:
    """Raise unless ``needed`` are exactly the commits ``first..version``.

    A version whose older files were cleaned up (only a prefix of the log is gone) raises
    :class:`VersionNotFoundError` naming the earliest version that can still be reconstructed; a log
    that cannot reconstruct the version otherwise (a gap, no usable checkpoint) is an
    :class:`InvalidTableError`. Incomplete multi-part checkpoints that could have served are named.
    """
    have = [c.version for c in needed]
    if have == list(range(first, version + 1)):
        return
    missing = sorted(set(range(first, version + 1)) - set(have))
    lower = -1 if cp_version is None else cp_version
    broken = {v: names for v, names in incomplete_checkpoints(files).items() if lower < v <= version}
    note = _incomplete_note(broken)
    part_file = f"{LOG_DIR}/{broken[max(broken)][0]}" if broken else None
    first_found = all_commits[0].version if all_commits else None
    found = "none" if first_found is None else str(first_found)
    if cp_version is None and (not have or missing[-1] < have[0]):  # only a prefix of the log is gone
        earliest = _earliest_reconstructable(all_commits, checkpoints)
        if earliest is not None and version < earliest:
            raise VersionNotFoundError(
                f"cannot reconstruct version {version}: the log files it needs were cleaned up (first commit "
                f"found: {found}, no checkpoint at or before version {version}); the earliest version that "
                f"can be reconstructed is {earliest}{note}",
                table=table, version=version, file=part_file or commit_path(missing[0]),
            )
        raise InvalidTableError(
            f"cannot reconstruct version {version}: no complete checkpoint at or before it and the log does "
            f"not start at version 0 (first commit found: {found}){note}",
            table=table, version=version, file=part_file or commit_path(missing[0]),
        )
    raise InvalidTableError(
        f"log versions are not contiguous: commit file(s) for version(s) {missing[:10]} are missing "
        f"between {first} and {version} (found {have[:5]}{'...' if len(have) > 5 else ''}){note}",
        table=table,
        version=version,
        file=f"{LOG_DIR}/{version_prefix(missing[0])}.json",
    )


def _earliest_reconstructable(commits: list[LogFile], checkpoints: dict[int, tuple[LogFile, ...]]) -> int | None:
    """The oldest version a complete checkpoint or a log starting at version 0 can rebuild."""
    starts = list(checkpoints)
    if commits and commits[0].version == 0:
        starts.append(0)
    return min(starts) if starts else None


def _incomplete_note(broken: dict[int, list[str]]) -> str:
    """``; the multi-part checkpoint at version 3 is incomplete ...: part 2 of 3 is missing (...)``."""
    out = []
    for v, names in sorted(broken.items(), reverse=True)[:3]:
        parsed = [p for p in map(parse_log_name, names) if p is not None]
        parts = ", ".join(str(p.part) for p in parsed[:5]) + (", ..." if len(parsed) > 5 else "")
        of = parsed[0].num_parts if parsed else "?"
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        out.append(
            f"; the multi-part checkpoint at version {v} is incomplete and was ignored: "
            f"part{'s' if len(names) > 1 else ''} {parts} of {of} {'are' if len(names) > 1 else 'is'} missing "
            f"({shown})"
        )
    return "".join(out)


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
