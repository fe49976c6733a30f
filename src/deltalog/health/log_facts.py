"""What the ``_delta_log`` directory itself says: its size, the checkpoint, and the last OPTIMIZE / Z-order /
VACUUM found in the history.

The history is scanned newest first, a batch of commits at a time read in parallel, and stops once the last
OPTIMIZE, the last VACUUM and (on a table without liquid clustering) the last ``OPTIMIZE ZORDER BY`` are
found, or after ``depth`` commits. Only the ``commitInfo`` of a commit is needed: the first 64 KiB of the file
(where writers put it), else its last 64 KiB, never a whole large commit -- except for the Z-order commits,
whose added files are read to know which live files are Z-ordered.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> s = InMemoryLogStore()
    >>> s.write("_delta_log/00000000000000000000.json", b'{"commitInfo":{"operation":"OPTIMIZE","timestamp":5}}\\n',
    ...         overwrite=False)
    >>> from deltalog.log.paths import parse_log_name
    >>> commit_info_head(s, parse_log_name("00000000000000000000.json"), table="t")["operation"]
    'OPTIMIZE'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from deltalog.health.model import CommitRef
from deltalog.log.paths import LOG_DIR, LogFile, parse_log_name
from deltalog.storage import LogStore

__all__ = ["HistoryFacts", "LogSize", "commit_info_head", "log_size", "scan_history"]

_HEAD = 64 * 1024
_BATCH = 16
_OPTIMIZE = "OPTIMIZE"
_VACUUM = ("VACUUM END", "VACUUM START")


@dataclass(frozen=True)
class LogSize:
    """Files and bytes under ``_delta_log`` (commits, checkpoints, sidecars, checksums, ...), and the newest
    complete checkpoint at or below the version asked for (its version and modification time)."""

    num_files: int
    num_bytes: int
    checkpoint_version: int | None = None
    checkpoint_timestamp: int | None = None


def log_size(store: LogStore, version: int | None = None) -> LogSize:
    """One recursive listing of ``_delta_log``: its size and the newest complete checkpoint (all its parts
    there) at or below ``version`` (any, by default).

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> s = InMemoryLogStore()
        >>> s.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
        >>> log_size(s)
        LogSize(num_files=1, num_bytes=2, checkpoint_version=None, checkpoint_timestamp=None)
    """
    files = n = 0
    parts: dict[tuple[int, int, str | None], list[LogFile]] = {}
    for info in store.list_dir(LOG_DIR, recursive=True):
        files += 1
        n += info.size
        name = info.path[len(LOG_DIR) + 1:]
        f = parse_log_name(name, info.size, info.modification_time) if "/" not in name else None
        if f is not None and f.kind == "checkpoint" and (version is None or f.version <= version):
            parts.setdefault((f.version, f.num_parts or 1, f.uuid), []).append(f)
    complete = [(key, found) for key, found in parts.items() if len({f.part for f in found}) == key[1]]
    if not complete:
        return LogSize(files, n)
    (cp_version, _, _), found = max(complete, key=lambda kf: kf[0][0])
    return LogSize(files, n, cp_version, max(f.modification_time for f in found) or None)


def _line_with_commit_info(data: bytes, *, complete_first: bool) -> dict[str, Any] | None:
    lines = data.split(b"\n")
    if not complete_first:
        lines = lines[1:]  # a tail read starts inside a line
    for line in lines:
        if b'"commitInfo"' not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # cut off by the read, or not JSON: the caller reads more or gives up
        if isinstance(obj, dict) and isinstance(obj.get("commitInfo"), dict):
            info: dict[str, Any] = obj["commitInfo"]
            return info
    return None


def commit_info_head(store: LogStore, commit: LogFile, *, table: str) -> dict[str, Any] | None:
    """The ``commitInfo`` of a commit, read from its first 64 KiB, else its last 64 KiB, else (for a file
    of at most 1 MiB) all of it; ``None`` when it has none or the file is gone.

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> from deltalog.log.paths import parse_log_name
        >>> commit_info_head(InMemoryLogStore(), parse_log_name("00000000000000000003.json"), table="t") is None
        True
    """
    try:
        head = store.read_range(commit.path, 0, _HEAD)
        info = _line_with_commit_info(head, complete_first=True)
        if info is not None or len(head) < _HEAD:
            return info
        size = commit.size or store.stat(commit.path).size
        if size <= 16 * _HEAD:
            return _line_with_commit_info(store.read(commit.path), complete_first=True)
        return _line_with_commit_info(store.read_range(commit.path, size - _HEAD, _HEAD), complete_first=False)
    except FileNotFoundError:  # cleaned up while we read
        return None


def _timestamp(info: dict[str, Any], commit: LogFile) -> int | None:
    for key in ("inCommitTimestamp", "timestamp"):
        value = info.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return commit.modification_time or None


def _zorder_columns(parameters: dict[str, Any]) -> tuple[str, ...]:
    raw = parameters.get("zOrderBy")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = [c.strip() for c in raw.strip("[]").split(",") if c.strip()]
    return tuple(str(c) for c in raw) if isinstance(raw, list) else ()


@dataclass
class HistoryFacts:
    """What the history scan found (``None``: not in the commits scanned)."""

    last_optimize: CommitRef | None = None
    last_zorder: CommitRef | None = None
    last_vacuum: CommitRef | None = None
    zorder_columns: tuple[str, ...] | None = None
    #: Paths the ``OPTIMIZE ZORDER BY`` commits (by :attr:`zorder_columns`) scanned added.
    zorder_paths: list[str] = field(default_factory=list)
    scanned: int = 0
    #: Everything looked for was found, or every commit in the log was scanned.
    complete: bool = True


def scan_history(
    store: LogStore, commits: Sequence[LogFile], *, table: str, depth: int, need_zorder: bool = True,
    workers: int = 8,
) -> HistoryFacts:
    """Scan ``commits`` (oldest first, as the segment lists them) newest first for the last OPTIMIZE, Z-order
    and VACUUM (see the module docstring).

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> from deltalog.log.paths import parse_log_name
        >>> s = InMemoryLogStore()
        >>> s.write("_delta_log/00000000000000000000.json", b'{"commitInfo":{"operation":"VACUUM END"}}\\n',
        ...         overwrite=False)
        >>> facts = scan_history(s, [parse_log_name("00000000000000000000.json")], table="t", depth=10)
        >>> facts.last_vacuum.version, facts.last_optimize, facts.complete
        (0, None, True)
    """
    facts = HistoryFacts()
    newest_first = list(reversed(commits))[:max(0, depth)]
    zorder_commits: list[LogFile] = []

    def done() -> bool:
        return (facts.last_optimize is not None and facts.last_vacuum is not None
                and (facts.last_zorder is not None or not need_zorder))

    local = "://" not in store.full_path("")  # a local file system answers faster than threads start

    def read(c: LogFile) -> dict[str, Any] | None:
        return commit_info_head(store, c, table=table)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for start in range(0, len(newest_first), _BATCH):
            batch = newest_first[start:start + _BATCH]
            infos = [read(c) for c in batch] if local or workers <= 1 else list(pool.map(read, batch))
            for commit, info in zip(batch, infos):
                facts.scanned += 1
                if info is None:
                    continue
                operation = info.get("operation")
                parameters = info.get("operationParameters")
                params = parameters if isinstance(parameters, dict) else {}
                ref = CommitRef(commit.version, _timestamp(info, commit), operation if isinstance(operation, str)
                                else None, params)
                if operation == _OPTIMIZE:
                    facts.last_optimize = facts.last_optimize or ref
                    columns = _zorder_columns(params)
                    if columns and need_zorder:
                        if facts.zorder_columns is None:
                            facts.last_zorder, facts.zorder_columns = ref, columns
                        if columns == facts.zorder_columns:
                            zorder_commits.append(commit)
                elif operation in _VACUUM and facts.last_vacuum is None:
                    facts.last_vacuum = ref
            if done():
                break
    facts.complete = done() or facts.scanned == len(commits)
    if zorder_commits:
        facts.zorder_paths = _added_paths(store, zorder_commits, table=table)
    return facts


def _added_paths(store: LogStore, commits: list[LogFile], *, table: str) -> list[str]:
    from deltalog.log.reader import read_commits

    try:
        actions = read_commits(store, sorted(commits, key=lambda c: -c.version), table=table)
    except FileNotFoundError:  # cleaned up while we read: coverage unknown for those files
        return []
    paths: list[str] = actions.adds.column("path").to_pylist()
    return paths
