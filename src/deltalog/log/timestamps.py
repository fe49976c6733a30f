"""Commit timestamps and timestamp-based time travel.

A commit's timestamp is its file's modification time, or — once in-commit timestamps are enabled
(``delta.enableInCommitTimestamps``) — the ``commitInfo.inCommitTimestamp`` written inside it. File times
are made strictly increasing the way Delta does (a commit older than its predecessor counts as the
predecessor's time + 1 ms).

Example:
    >>> to_millis("1970-01-01T00:00:01Z")
    1000
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.errors import (
    CorruptLogError,
    InvalidArgumentError,
    InvalidTableError,
    TimestampAfterLatestError,
    TimestampBeforeEarliestError,
    VersionNotFoundError,
)
from deltalog.log.paths import LogFile
from deltalog.storage import LogStore

TimestampLike = dt.datetime | dt.date | str | int | float


def to_millis(ts: TimestampLike) -> int:
    """Milliseconds since the epoch for a datetime (naive = UTC), date, ISO string or epoch millis.

    Example:
        >>> to_millis(dt.datetime(1970, 1, 1, 0, 0, 2))
        2000
    """
    if isinstance(ts, bool):
        raise InvalidArgumentError(f"not a timestamp: {ts!r}")
    if isinstance(ts, (int, float)):
        return int(ts)
    if isinstance(ts, str):
        text = ts.strip().replace("Z", "+00:00")
        try:
            ts = dt.datetime.fromisoformat(text)
        except ValueError:
            raise InvalidArgumentError(
                f"not a timestamp: {ts!r} (use ISO 8601, e.g. '2024-05-01 12:00:00' or with '+00:00')"
            ) from None
    if isinstance(ts, dt.datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        return int(ts.timestamp() * 1000)
    if isinstance(ts, dt.date):
        return int(dt.datetime(ts.year, ts.month, ts.day, tzinfo=dt.UTC).timestamp() * 1000)
    raise InvalidArgumentError(f"not a timestamp: {ts!r}")


def commit_info_of(data: bytes, commit: LogFile, *, table: str) -> dict[str, Any] | None:
    """The ``commitInfo`` object of a commit file's bytes (its first ``commitInfo`` action), or ``None``.

    Example:
        >>> from deltalog.log.paths import parse_log_name
        >>> c = parse_log_name("00000000000000000000.json")
        >>> commit_info_of(b'{"add":{"path":"commitInfo"}}\\n{"commitInfo":{"timestamp":5}}', c, table="t")
        {'timestamp': 5}
    """
    for i, line in enumerate(data.split(b"\n"), start=1):
        if b'"commitInfo"' not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise CorruptLogError(
                "log line is not valid JSON", table=table, version=commit.version, file=commit.path, line=i
            ) from None
        if isinstance(obj, dict) and isinstance(obj.get("commitInfo"), dict):
            info: dict[str, Any] = obj["commitInfo"]
            return info
    return None


def ict_value(info: Mapping[str, Any] | None) -> int | None:
    """The ``inCommitTimestamp`` of a ``commitInfo`` object when it is an integer, else ``None``.

    Example:
        >>> ict_value({"inCommitTimestamp": 7}), ict_value({"timestamp": 7}), ict_value(None)
        (7, None, None)
    """
    value = None if info is None else info.get("inCommitTimestamp")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def in_commit_timestamp(store: LogStore, commit: LogFile, *, table: str) -> int | None:
    """The ``inCommitTimestamp`` of a commit's ``commitInfo`` (its first action when enabled)."""
    try:
        data = store.read(commit.path)
    except FileNotFoundError:
        return None
    return ict_value(commit_info_of(data, commit, table=table))


def ict_enablement_version(configuration: Mapping[str, str], *, table: str | None = None) -> int | None:
    """The first version whose commits carry in-commit timestamps, or ``None`` when they are off.

    Example:
        >>> ict_enablement_version({"delta.enableInCommitTimestamps": "true",
        ...                         "delta.inCommitTimestampEnablementVersion": "4"})
        4
        >>> ict_enablement_version({}) is None
        True
    """
    if str(configuration.get("delta.enableInCommitTimestamps", "false")).lower() != "true":
        return None
    raw = configuration.get("delta.inCommitTimestampEnablementVersion", "0")
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise InvalidTableError(
            f"table property delta.inCommitTimestampEnablementVersion={raw!r} is not a version number",
            table=table,
        ) from None


_FLOOR = -(1 << 62)


def commit_timestamps(
    store: LogStore,
    commits: Sequence[LogFile],
    *,
    table: str,
    ict_enabled_from: int | None = None,
    only: Sequence[int] | None = None,
    in_commit: Mapping[int, int | None] | None = None,
) -> list[int]:
    """Timestamps (ms) of ``commits`` (sorted by version), monotonized; ICT used from a version on.

    File times are made strictly increasing (a commit not newer than its predecessor counts as the
    predecessor's time + 1 ms); from ``ict_enabled_from`` on a commit's ``inCommitTimestamp`` is its
    time. ``only`` (indexes into ``commits``) limits the answer to those commits, in that order: their
    in-commit timestamps are the only ones read. ``in_commit`` holds in-commit timestamps already
    known, by version (``None``: the commit has none).

    Example:
        >>> from deltalog.log.paths import LogFile
        >>> from deltalog.storage import InMemoryLogStore
        >>> cs = [LogFile(f"{v:020d}.json", "commit", v, modification_time=t) for v, t in enumerate([5, 3, 9])]
        >>> commit_timestamps(InMemoryLogStore(), cs, table="t")
        [5, 6, 9]
        >>> commit_timestamps(InMemoryLogStore(), cs, table="t", ict_enabled_from=2, in_commit={2: 4}, only=[2])
        [4]
    """
    n = len(commits)
    stamps: dict[int, int] = {}
    prev = _FLOOR
    first_ict = n
    for i, c in enumerate(commits):  # the file-time prefix needs no reads
        if ict_enabled_from is not None and c.version >= ict_enabled_from:
            first_ict = i
            break
        prev = max(c.modification_time, prev + 1)
        stamps[i] = prev

    def ict(i: int) -> int | None:
        c = commits[i]
        if in_commit is not None and c.version in in_commit:
            return in_commit[c.version]
        return in_commit_timestamp(store, c, table=table)

    def at(i: int) -> int:
        chain: list[int] = []  # commits without an in-commit timestamp: they follow their predecessor
        j = i
        while j >= first_ict and j not in stamps:
            value = ict(j)
            if value is not None:
                stamps[j] = value
                break
            chain.append(j)
            j -= 1
        before = stamps.get(j, _FLOOR) if j >= 0 else _FLOOR
        for k in reversed(chain):
            before = max(commits[k].modification_time, before + 1)
            stamps[k] = before
        return stamps[i]

    return [at(i) for i in (range(n) if only is None else only)]


def version_at_timestamp(
    commits: Sequence[LogFile], timestamps: Sequence[int], target_ms: int, *, table: str
) -> int:
    """The newest version whose commit timestamp is at or before ``target_ms``.

    Example:
        >>> from deltalog.log.paths import parse_log_name
        >>> cs = [parse_log_name("00000000000000000000.json"), parse_log_name("00000000000000000001.json")]
        >>> version_at_timestamp(cs, [1000, 2000], 1500, table="t")
        0
    """
    if not commits:
        raise VersionNotFoundError("the table has no commits to time travel to", table=table)
    if target_ms < timestamps[0]:
        raise TimestampBeforeEarliestError(
            f"timestamp {_fmt(target_ms)} is before the earliest available commit "
            f"(version {commits[0].version} at {_fmt(timestamps[0])})",
            table=table,
        )
    if target_ms > timestamps[-1]:
        raise TimestampAfterLatestError(
            f"timestamp {_fmt(target_ms)} is after the latest commit (version {commits[-1].version} "
            f"at {_fmt(timestamps[-1])}); use a timestamp at or before it, or read the latest version",
            table=table,
        )
    idx = bisect.bisect_right(list(timestamps), target_ms) - 1
    return commits[idx].version


def _fmt(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")
