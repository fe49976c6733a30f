"""``Table.history``: commit provenance read from each commit's ``commitInfo``, newest first.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> s = InMemoryLogStore()
    >>> s.write("_delta_log/00000000000000000000.json",
    ...         b'{"commitInfo":{"timestamp":5,"operation":"CREATE TABLE"}}', overwrite=False)
    >>> [(h["version"], h["operation"]) for h in table_history(s, table="t")]
    [(0, 'CREATE TABLE')]
"""

from __future__ import annotations

import json
from typing import Any

from deltalog.errors import CorruptLogError, InvalidArgumentError
from deltalog.log.segment import list_log
from deltalog.storage import LogStore


def table_history(store: LogStore, *, table: str, limit: int | None = None) -> list[dict[str, Any]]:
    """One dict per commit (newest first): ``version``, ``timestamp`` and the ``commitInfo`` fields.

    ``timestamp`` is ``inCommitTimestamp`` when present, else ``commitInfo.timestamp``, else the commit
    file's modification time (milliseconds since the epoch).
    """
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise InvalidArgumentError(f"limit must be a non-negative int, got {limit!r}", table=table)
    commits = [f for f in list_log(store, 0) if f.kind == "commit"]
    commits.reverse()
    if limit is not None:
        commits = commits[:limit]
    out: list[dict[str, Any]] = []
    for c in commits:
        try:
            data = store.read(c.path)
        except FileNotFoundError:
            continue  # cleaned up concurrently
        info: dict[str, Any] = {}
        for i, line in enumerate(data.split(b"\n"), start=1):
            if b'"commitInfo"' not in line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                raise CorruptLogError(
                    "log line is not valid JSON", table=table, version=c.version, file=c.path, line=i
                ) from None
            if isinstance(obj, dict) and isinstance(obj.get("commitInfo"), dict):
                info = obj["commitInfo"]
                break
        ts = info.get("inCommitTimestamp", info.get("timestamp", c.modification_time))
        entry: dict[str, Any] = {"version": c.version, **info}
        entry["timestamp"] = ts
        out.append(entry)
    return out
