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
from collections.abc import Sequence

from deltalog.errors import CorruptLogError, InvalidArgumentError, VersionNotFoundError
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
            ts = ts.replace(tzinfo=dt.timezone.utc)
        return int(ts.timestamp() * 1000)
    if isinstance(ts, dt.date):
        return int(dt.datetime(ts.year, ts.month, ts.day, tzinfo=dt.timezone.utc).timestamp() * 1000)
    raise InvalidArgumentError(f"not a timestamp: {ts!r}")


def in_commit_timestamp(store: LogStore, commit: LogFile, *, table: str) -> int | None:
    """The ``inCommitTimestamp`` of a commit's ``commitInfo`` (its first action when enabled)."""
    try:
        data = store.read(commit.path)
    except FileNotFoundError:
        return None
    for i, line in enumerate(data.split(b"\n"), start=1):
        if b'"commitInfo"' not in line:
            continue
        try:
            info = json.loads(line).get("commitInfo") or {}
        except ValueError:
            raise CorruptLogError(
                "log line is not valid JSON", table=table, version=commit.version, file=commit.path, line=i
            ) from None
        value = info.get("inCommitTimestamp")
        return int(value) if isinstance(value, int) else None
    return None


def commit_timestamps(
    store: LogStore,
    commits: Sequence[LogFile],
    *,
    table: str,
    ict_enabled_from: int | None = None,
) -> list[int]:
    """Timestamps (ms) of ``commits`` (sorted by version), monotonized; ICT used from a version on."""
    out: list[int] = []
    prev = -(1 << 62)
    for c in commits:
        ts: int | None = None
        if ict_enabled_from is not None and c.version >= ict_enabled_from:
            ts = in_commit_timestamp(store, c, table=table)
        if ts is None:
            ts = max(c.modification_time, prev + 1)
        out.append(ts)
        prev = ts
    return out


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
        raise VersionNotFoundError(
            f"timestamp {_fmt(target_ms)} is before the earliest available commit "
            f"(version {commits[0].version} at {_fmt(timestamps[0])})",
            table=table,
        )
    if target_ms > timestamps[-1]:
        raise VersionNotFoundError(
            f"timestamp {_fmt(target_ms)} is after the latest commit (version {commits[-1].version} "
            f"at {_fmt(timestamps[-1])}); use a timestamp at or before it, or read the latest version",
            table=table,
        )
    idx = bisect.bisect_right(list(timestamps), target_ms) - 1
    return commits[idx].version


def _fmt(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat(timespec="milliseconds")
