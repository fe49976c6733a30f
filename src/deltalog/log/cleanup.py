"""Metadata cleanup: delete expired commits, checkpoints and checksum files from ``_delta_log``.

The cut is made the way the protocol's "Metadata Cleanup" section describes: the cutoff time is ``now -
delta.logRetentionDuration`` (default 30 days) rounded down to midnight UTC; the *cutoff commit* is
the newest commit whose (monotonized) file time is not after it, and the *cutoff checkpoint* the newest
complete checkpoint at or before that commit. Only files of versions strictly before the cutoff
checkpoint are deleted (plus log compactions starting at or before it, staged commits up to it and
unreferenced old sidecars), so every version from the cutoff checkpoint on stays reconstructable and
the latest checkpoint and everything after it are never touched. On a table with ``checkpointProtection``
(after a ``DROP FEATURE``), nothing is deleted while the cutoff checkpoint is older than
``delta.requireCheckpointProtectionBeforeVersion``: the history before it goes all at once, never in part.

Example:
    >>> parse_interval_ms("interval 1 week") == 7 * 24 * 3600 * 1000
    True
    >>> from deltalog.storage import InMemoryLogStore
    >>> cleanup_expired_logs(InMemoryLogStore(), retention="30 days")
    []
"""

from __future__ import annotations

import io
import json
import logging
import re
import time
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from deltalog.errors import InvalidArgumentError
from deltalog.log.paths import LOG_DIR, SIDECAR_DIR, LogFile
from deltalog.log.segment import complete_checkpoints, list_log
from deltalog.log.timestamps import commit_timestamps
from deltalog.storage import LogStore

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.snapshot_load import SnapshotSource

log = logging.getLogger(__name__)

#: Set by DROP FEATURE (``checkpointProtection``): the history before it is removed in one go or not at all.
PROTECTED_BEFORE = "delta.requireCheckpointProtectionBeforeVersion"

Clock = Callable[[], int]
"""Returns "now" in milliseconds since the epoch (the convention of the in-memory store's clock)."""

DEFAULT_LOG_RETENTION = "interval 30 days"
DEFAULT_DELETED_FILE_RETENTION = "interval 1 week"
STAGED_COMMITS_DIR = "_staged_commits"
_DAY_MS = 24 * 3600 * 1000
# Within a version: the checksum and the commit go before the checkpoint, so that a cleanup stopped at any
# point leaves a log whose oldest remaining version still starts at a checkpoint whenever one exists.
_RANK = {"crc": 0, "commit": 1, "compacted": 2, "checkpoint": 3}

_UNIT_MS: dict[str, float] = {
    "microsecond": 1e-3,
    "us": 1e-3,
    "millisecond": 1.0,
    "ms": 1.0,
    "second": 1000.0,
    "sec": 1000.0,
    "s": 1000.0,
    "minute": 60_000.0,
    "min": 60_000.0,
    "m": 60_000.0,
    "hour": 3_600_000.0,
    "h": 3_600_000.0,
    "day": float(_DAY_MS),
    "d": float(_DAY_MS),
    "week": 7.0 * _DAY_MS,
    "w": 7.0 * _DAY_MS,
}
_TERM = re.compile(r"([+-]?\d+(?:\.\d+)?)\s*([a-z]+)")


def now_ms(clock: Clock | None = None) -> int:
    """The current time in epoch milliseconds, from ``clock`` when given.

    Example:
        >>> now_ms(lambda: 42)
        42
    """
    return int(clock()) if clock is not None else int(time.time() * 1000)


def parse_interval_ms(text: str) -> int:
    """Milliseconds of a Spark calendar-interval string as used by Delta's duration table properties.

    Accepts an optional ``interval`` prefix, quoted numbers, several terms, singular or plural units
    from microseconds to weeks, any case. Months and years have no fixed length and are refused, as
    are negative durations.

    Example:
        >>> parse_interval_ms("interval 168 hours") == parse_interval_ms("INTERVAL '1' WEEK")
        True
        >>> parse_interval_ms("1 day 12 hours")
        129600000
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"an interval must be a string, got {text!r}")
    body = text.strip().lower().replace("'", "").replace('"', "")
    if body.startswith("interval"):
        body = body[len("interval") :].strip()
    total = 0.0
    pos = 0
    found = False
    for m in _TERM.finditer(body):
        if body[pos : m.start()].strip():
            break
        unit = m[2]
        if unit in ("month", "months", "mon", "mons", "year", "years", "y"):
            raise InvalidArgumentError(f"interval {text!r}: months and years are not allowed here")
        base = unit if unit in _UNIT_MS else unit[:-1] if unit.endswith("s") else unit
        if base not in _UNIT_MS:
            raise InvalidArgumentError(f"interval {text!r}: unknown unit {m[2]!r}")
        total += float(m[1]) * _UNIT_MS[base]
        pos = m.end()
        found = True
    if not found or body[pos:].strip():
        raise InvalidArgumentError(f"not an interval: {text!r} (expected e.g. 'interval 7 days' or '168 hours')")
    if total < 0:
        raise InvalidArgumentError(f"interval {text!r} is negative")
    return int(total)


def duration_property_ms(properties: Mapping[str, str], key: str, default: str) -> int:
    """A duration table property (e.g. ``delta.logRetentionDuration``) in milliseconds.

    Example:
        >>> duration_property_ms({}, "delta.logRetentionDuration", DEFAULT_LOG_RETENTION) // 86400000
        30
    """
    value = properties.get(key, default)
    try:
        return parse_interval_ms(value)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"table property {key}={value!r} is invalid: {exc.message}") from None


def midnight_utc(ms: int) -> int:
    """``ms`` rounded down to the preceding midnight UTC.

    Example:
        >>> midnight_utc(_DAY_MS + 5)
        86400000
    """
    return ms - ms % _DAY_MS


def _resolve(target: SnapshotSource | Snapshot | LogStore) -> tuple[LogStore, Mapping[str, str], int | None, str]:
    # told apart by shape, not class: the log sits below the snapshot and never imports it
    if callable(getattr(target, "snapshot", None)):
        target = typing.cast("SnapshotSource", target).snapshot()  # a table: its latest snapshot
    if hasattr(target, "segment") and hasattr(target, "properties"):
        snap = typing.cast("Snapshot", target)
        return snap.store, snap.properties, snap.version, snap.table
    store = typing.cast(LogStore, target)
    return store, {}, None, store.root


def cleanup_expired_logs(
    target: SnapshotSource | Snapshot | LogStore,
    *,
    retention: str | int | None = None,
    clock: Clock | None = None,
    dry_run: bool = False,
    truncate_to_day: bool = True,
) -> list[str]:
    """Delete expired log files; returns the deleted (with ``dry_run``: deletable) store paths, oldest first.

    Files are deleted oldest version first (within a version: checksum, commit, then checkpoint), and the
    first failed delete stops the cleanup, so an interrupted or failed cleanup always leaves a contiguous
    log: never a hole below a version that remains.

    ``retention`` overrides ``delta.logRetentionDuration``: an interval string or milliseconds.
    ``truncate_to_day`` rounds the cutoff down to midnight UTC as the protocol describes.

    Example:
        >>> import deltalog
        >>> cleanup_expired_logs(deltalog.Table("/data/t"), retention="interval 7 days",
        ...                      dry_run=True)                       # doctest: +SKIP
        ['_delta_log/00000000000000000000.json', ...]
    """
    store, props, max_version, table = _resolve(target)
    if retention is None:
        keep_ms = duration_property_ms(props, "delta.logRetentionDuration", DEFAULT_LOG_RETENTION)
    elif isinstance(retention, int) and not isinstance(retention, bool):
        keep_ms = retention
    else:
        keep_ms = parse_interval_ms(str(retention))
    now = now_ms(clock)
    cutoff = now - keep_ms
    if truncate_to_day:
        cutoff = midnight_utc(cutoff)
    files = list_log(store, 0)
    commits = [f for f in files if f.kind == "commit"]
    if max_version is not None:
        commits = [c for c in commits if c.version <= max_version]
    if not commits:
        return []
    stamps = commit_timestamps(store, commits, table=table)
    expired = [c.version for c, ts in zip(commits, stamps) if ts <= cutoff]
    if not expired:
        return []
    cutoff_commit = expired[-1]
    checkpoints = [v for v in complete_checkpoints(files) if v <= cutoff_commit]
    if not checkpoints:
        log.debug("log cleanup of %s: no checkpoint at or before version %d", table, cutoff_commit)
        return []
    keep_from = max(checkpoints)
    protected = _protected_before(props)
    if keep_from < protected:
        # checkpointProtection: history before that version goes all at once or not at all
        log.debug("log cleanup of %s: versions before %d are checkpoint-protected", table, protected)
        return []
    doomed = [f for f in files if _expired(f, keep_from)]
    doomed.sort(key=lambda f: (f.version, _RANK.get(f.kind, 9), f.name))
    paths = [f.path for f in doomed]
    paths += _staged_commits(store, keep_from)
    remaining = [f for f in files if f.kind == "checkpoint" and f.version >= keep_from]
    paths += _orphan_sidecars(store, remaining, now, table=table)
    if dry_run:
        return paths
    deleted: list[str] = []
    for p in paths:
        try:
            store.delete(p)
        except OSError as exc:
            # Stop at the first failure: deleting a newer file after an older one stayed would leave a
            # gap in the log. Whatever remains is a contiguous suffix; a later cleanup resumes.
            log.warning("log cleanup of %s stopped: could not delete %s: %s", table, p, exc)
            break
        deleted.append(p)
    if deleted:
        log.info("log cleanup of %s deleted %d files before version %d", table, len(deleted), keep_from)
    return deleted


def _protected_before(props: Mapping[str, str]) -> int:
    """``delta.requireCheckpointProtectionBeforeVersion`` (0 when unset or not a number)."""
    try:
        return int(props.get(PROTECTED_BEFORE, "0"))
    except ValueError:
        return 0


def _expired(f: LogFile, keep_from: int) -> bool:
    if f.kind == "compacted":
        return f.version <= keep_from
    return f.version < keep_from


def _staged_commits(store: LogStore, keep_from: int) -> list[str]:
    out = []
    for info in store.list_dir(f"{LOG_DIR}/{STAGED_COMMITS_DIR}"):
        head = info.name.split(".", 1)[0]
        if len(head) == 20 and head.isdigit() and int(head) <= keep_from and info.name.endswith(".json"):
            out.append(info.path)
    return out


def _orphan_sidecars(store: LogStore, checkpoints: Iterable[LogFile], now: int, *, table: str) -> list[str]:
    """Sidecars no remaining checkpoint references and older than a day (as of midnight UTC)."""
    sidecars = list(store.list_dir(f"{LOG_DIR}/{SIDECAR_DIR}"))
    if not sidecars:
        return []
    referenced: set[str] = set()
    for cp in checkpoints:
        try:
            referenced |= _sidecar_refs(store, cp)
        except Exception as exc:  # an unreadable checkpoint: protect every sidecar
            log.warning("log cleanup of %s: cannot read %s (%s); keeping all sidecars", table, cp.path, exc)
            return []
    limit = midnight_utc(now) - _DAY_MS
    return [s.path for s in sidecars if s.name not in referenced and s.modification_time < limit]


def _sidecar_refs(store: LogStore, cp: LogFile) -> set[str]:
    names: list[str] = []
    if cp.fmt == "json":
        for line in store.read(cp.path).splitlines():
            if b'"sidecar"' in line:
                body = json.loads(line).get("sidecar") or {}
                names.append(str(body.get("path", "")))
    else:
        import pyarrow.parquet as pq

        full = store.full_path(cp.path)  # local files: only the footer and the sidecar column are read
        pf = pq.ParquetFile(full if "://" not in full else io.BytesIO(store.read(cp.path)))
        if "sidecar" in pf.schema_arrow.names:
            col = pf.read(columns=["sidecar"]).column("sidecar")
            names = [r["path"] for r in col.to_pylist() if r is not None and r.get("path")]
    return {n.rsplit("/", 1)[-1] for n in names}


__all__ = [
    "DEFAULT_DELETED_FILE_RETENTION",
    "DEFAULT_LOG_RETENTION",
    "Clock",
    "cleanup_expired_logs",
    "duration_property_ms",
    "midnight_utc",
    "now_ms",
    "parse_interval_ms",
]
