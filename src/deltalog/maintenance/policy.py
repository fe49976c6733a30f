"""What ``maintain`` acts on: :class:`MaintenancePolicy`, its thresholds, read from table properties.

Every threshold is a table property under ``deltalog.maintenance.`` (not ``delta.``: delta-spark refuses
``delta.`` properties it does not know, and keeps others as they are), so a table carries its own policy to
every engine and every run:

==========================================  =========  ==========================================================
property                                    default    meaning
==========================================  =========  ==========================================================
``deltalog.maintenance.smallFileShare``     ``0.3``    compact a partition when at least this share of its files
                                                       is small (below the health check's small-file threshold)
``deltalog.maintenance.minSmallFiles``      ``4``      ... and it has at least this many small files
``deltalog.maintenance.deletedRowShare``    ``0.05``   purge a file's deletion vector when it deletes at least
                                                       this share of the file's rows (delta-spark's OPTIMIZE
                                                       rewrites files past 5% deleted rows too)
``deltalog.maintenance.checkpointCommits``  interval   checkpoint when at least this many commits follow the last
                                                       checkpoint (default ``delta.checkpointInterval``, 10)
``deltalog.maintenance.vacuum``             ``true``   VACUUM files whose retention (``delta.deletedFileRetention
                                                       Duration``) has passed
``deltalog.maintenance.afterCommit``        ``false``  after each commit of a kernel writer, run the cheap steps
                                                       (compaction of the partitions it wrote, checkpoint, log
                                                       cleanup) within a time budget
``deltalog.maintenance.afterCommitBudget``  ``30s``    that budget (an interval: ``"10 seconds"``, ``"2m"`` or
                                                       milliseconds)
==========================================  =========  ==========================================================

Expired log files are cleaned up unless ``delta.enableExpiredLogCleanup`` is ``false``, as every Delta
writer does. A property with a value that is not a number, a share or a boolean is refused with an error
naming the property, the value and the table.

Example:
    >>> p = MaintenancePolicy.from_properties({"deltalog.maintenance.smallFileShare": "0.5"})
    >>> p.small_file_share, p.min_small_files, p.deleted_row_share
    (0.5, 4, 0.05)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from deltalog.errors import InvalidArgumentError

__all__ = ["PREFIX", "MaintenancePolicy"]

PREFIX = "deltalog.maintenance."
_KEYS = {
    "smallFileShare": "small_file_share",
    "minSmallFiles": "min_small_files",
    "deletedRowShare": "deleted_row_share",
    "checkpointCommits": "checkpoint_commits",
    "vacuum": "vacuum",
    "afterCommit": "after_commit",
    "afterCommitBudget": "after_commit_budget_ms",
}
_UNITS_MS = {"ms": 1, "millisecond": 1, "s": 1000, "sec": 1000, "second": 1000, "m": 60_000, "min": 60_000,
             "minute": 60_000, "h": 3_600_000, "hour": 3_600_000}


@dataclass(frozen=True)
class MaintenancePolicy:
    """The thresholds ``maintain`` plans with (see the module docstring for each one and its property).

    Example:
        >>> MaintenancePolicy().with_(vacuum=False).vacuum
        False
    """

    small_file_share: float = 0.3
    min_small_files: int = 4
    deleted_row_share: float = 0.05
    #: ``None``: the table's ``delta.checkpointInterval``.
    checkpoint_commits: int | None = None
    vacuum: bool = True
    cleanup_log: bool = True
    after_commit: bool = False
    after_commit_budget_ms: int = 30_000
    #: Files below this many bytes are small (``None``: the health check's default, a quarter of the target).
    small_file_threshold: int | None = None

    def __post_init__(self) -> None:
        for name in ("small_file_share", "deleted_row_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise InvalidArgumentError(f"the maintenance policy's {name} must be a share between 0 and 1, "
                                           f"got {value!r}")
        for name in ("min_small_files", "checkpoint_commits", "after_commit_budget_ms", "small_file_threshold"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InvalidArgumentError(f"the maintenance policy's {name} must be a positive whole number, "
                                           f"got {value!r}")

    def with_(self, **changes: Any) -> MaintenancePolicy:
        """A copy with some thresholds changed.

        Example:
            >>> MaintenancePolicy().with_(min_small_files=2).min_small_files
            2
        """
        return replace(self, **changes)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], *, table: str | None = None,
                        **overrides: Any) -> MaintenancePolicy:
        """The policy a table's properties set (``deltalog.maintenance.*``, ``delta.enableExpiredLogCleanup``),
        the defaults elsewhere; ``overrides`` (field names) win over both.

        Example:
            >>> MaintenancePolicy.from_properties({"deltalog.maintenance.vacuum": "false",
            ...                                    "delta.enableExpiredLogCleanup": "false"}).vacuum
            False
        """
        values: dict[str, Any] = {}
        for key, raw in properties.items():
            if not key.startswith(PREFIX):
                continue
            name = _KEYS.get(key[len(PREFIX):])
            if name is None:
                known = ", ".join(PREFIX + k for k in _KEYS)
                raise InvalidArgumentError(f"unknown table property {key!r}: the maintenance properties are {known}",
                                           table=table)
            values[name] = _parse(name, key, raw, table)
        cleanup = properties.get("delta.enableExpiredLogCleanup", "true").strip().lower()
        values["cleanup_log"] = cleanup != "false"
        values.update(overrides)
        try:
            return cls(**values)
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(exc.message, table=table) from None


def _parse(name: str, key: str, raw: str, table: str | None) -> Any:
    text = str(raw).strip()
    try:
        if name in ("vacuum", "after_commit"):
            if text.lower() not in ("true", "false"):
                raise ValueError
            return text.lower() == "true"
        if name in ("small_file_share", "deleted_row_share"):
            share = float(text)
            if not 0.0 <= share <= 1.0:
                raise ValueError
            return share
        if name == "after_commit_budget_ms":
            return _duration_ms(text)
        number = int(text)
        if number < 1:
            raise ValueError
        return number
    except ValueError:
        kind = {"vacuum": "true or false", "after_commit": "true or false",
                "small_file_share": "a share between 0 and 1", "deleted_row_share": "a share between 0 and 1",
                "after_commit_budget_ms": "a duration such as '30 seconds' or milliseconds"}.get(
                    name, "a positive whole number")
        raise InvalidArgumentError(f"table property {key}={raw!r} is not {kind}; fix it with "
                                   f"ALTER TABLE ... SET TBLPROPERTIES ('{key}' = ...)", table=table) from None


def _duration_ms(text: str) -> int:
    """Milliseconds of ``"30 seconds"``, ``"interval 2 minutes"``, ``"1500ms"`` or ``"1500"``."""
    if text.isdigit():
        value = int(text)
    else:
        found = re.fullmatch(r"(?:interval\s+)?(\d+)\s*([a-z]+)", text.lower())
        unit = found.group(2) if found is not None else ""
        unit = unit if unit in _UNITS_MS else unit[:-1] if unit.endswith("s") else unit
        if found is None or unit not in _UNITS_MS:
            raise ValueError(text)
        value = int(found.group(1)) * _UNITS_MS[unit]
    if value < 1:
        raise ValueError(text)
    return value
