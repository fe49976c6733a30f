"""What the commands that write deletion vectors share: the row-level concurrency switch and the ``add``
that puts a file back with a new deletion vector. Used by DELETE and
UPDATE (:mod:`deltalog.commands.delete`) and by the two rebases of a losing DML commit
(:mod:`deltalog.commands.dv_rebase`, :mod:`deltalog.commands.compaction_rebase`), below all three.

Example:
    >>> enabled({"deltalog.rowLevelConcurrency": "false"})
    False
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.actions import Add
from deltalog.protocol.deletion_vectors import DeletionVectorDescriptor

__all__ = ["ROW_LEVEL_CONCURRENCY", "describe_rows", "enabled", "readd_with_dv", "same_dv", "wide_bounds"]

#: The table property that turns row-level concurrency off (``false``) or on (``true``, the default).
ROW_LEVEL_CONCURRENCY = "deltalog.rowLevelConcurrency"


def enabled(configuration: Mapping[str, str], *, table: str | None = None) -> bool:
    """Whether a table's properties allow row-level concurrency (``deltalog.rowLevelConcurrency``,
    default ``true``); any value but ``true`` / ``false`` is an error naming the property.

    Example:
        >>> enabled({}), enabled({"deltalog.rowLevelConcurrency": "FALSE"})
        (True, False)
    """
    value = configuration.get(ROW_LEVEL_CONCURRENCY, "true").strip().lower()
    if value not in ("true", "false"):
        raise InvalidArgumentError(
            f"table property {ROW_LEVEL_CONCURRENCY} must be true or false, not "
            f"{configuration[ROW_LEVEL_CONCURRENCY]!r}",
            table=table,
        )
    return value == "true"


def describe_rows(rows: np.ndarray) -> str:
    """Row numbers for a conflict message: the first five and how many more.

    Example:
        >>> describe_rows(np.array([3, 9]))
        'rows 3, 9'
    """
    shown = ", ".join(str(int(r)) for r in rows[:5])
    more = f" and {rows.size - 5} more" if rows.size > 5 else ""
    return f"row{'s' if rows.size > 1 else ''} {shown}{more}"


def _unique_id(dv: Mapping[str, Any]) -> str:
    return DeletionVectorDescriptor.from_dict({k: v for k, v in dv.items() if v is not None}).unique_id


def same_dv(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two ``deletionVector`` dicts (or none) name the same deletion vector.

    Example:
        >>> same_dv(None, None), same_dv({"storageType": "u", "pathOrInlineDv": "x", "sizeInBytes": 1,
        ...                              "cardinality": 1}, None)
        (True, False)
    """
    if not a or not b:
        return not a and not b
    return _unique_id(a) == _unique_id(b)


def readd_with_dv(row: Mapping[str, Any], dv: Mapping[str, Any]) -> Add:
    """The ``add`` that puts a live file (its row from ``Snapshot.add_files().to_pylist()``) back with the
    deletion vector ``dv``: everything else kept, stats marked as no longer tight.

    Example:
        >>> dv = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1,
        ...       "sizeInBytes": 36, "cardinality": 2}
        >>> readd_with_dv({"path": "a.parquet", "size": 3, "modificationTime": 1}, dv).deletionVector["cardinality"]
        2
    """
    return Add(path=row["path"], partitionValues=dict(row.get("partitionValues") or []), size=int(row["size"]),
               modificationTime=int(row["modificationTime"]), dataChange=True, stats=wide_bounds(row.get("stats")),
               tags=dict(row["tags"]) if row.get("tags") else None, deletionVector=dict(dv),
               baseRowId=row.get("baseRowId"), defaultRowCommitVersion=row.get("defaultRowCommitVersion"))


def wide_bounds(stats: str | None) -> str | None:
    """A file's ``stats`` after rows of it are deleted: still valid bounds, but no longer tight
    (``tightBounds: false``); unreadable stats are dropped.

    Example:
        >>> wide_bounds('{"numRecords":3,"tightBounds":true}')
        '{"numRecords":3,"tightBounds":false}'
    """
    if not stats:
        return stats
    try:
        parsed = json.loads(stats)
    except ValueError:
        return None
    parsed["tightBounds"] = False
    return json.dumps(parsed, separators=(",", ":"))
