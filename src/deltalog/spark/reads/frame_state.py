"""What a tracked Delta read remembers to rebuild itself (:class:`FrameState`) and how each DataFrame step
changes which of its columns are still the table's own (:func:`next_unchanged`), so that a later filter may
prune files (:func:`usable_conditions`, :func:`through_generated`). :mod:`deltalog.spark.reads.skipping`
attaches and replays it.

Imports: the kernel's conditions and snapshot types, :mod:`deltalog.spark.reads.column_sql`.

Example:
    >>> next_unchanged(state, "withColumn", ("v", col), {})                            # doctest: +SKIP
    frozenset({'id'})
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.spark.reads.column_sql import condition_sql, flat_columns, plain_name, portable

if TYPE_CHECKING:
    from deltalog.data.filters import Condition
    from deltalog.snapshot import Snapshot

__all__ = ["KEEPING", "PICKING", "TRACKED", "FrameState", "next_unchanged", "through_generated", "usable_conditions"]


@dataclass(frozen=True)
class FrameState:
    """How to rebuild a tracked frame: the scan :func:`~deltalog.spark.reads.scan.read_snapshot` made (its
    ``where`` / ``columns``, plus extra pruning conditions), then ``steps`` replayed with the plain
    DataFrame methods. ``unchanged`` holds the (lower-case) output columns that are still the table's
    column of that name, row for row: only conditions on those may prune files."""

    snapshot: Snapshot
    where: Any
    columns: tuple[str, ...] | None
    prune: tuple[Condition, ...]
    steps: tuple[tuple[str, tuple[Any, ...], dict[str, Any]], ...]
    unchanged: frozenset[str]
    rescan: Callable[..., Any]  # read_snapshot, passed in by its module (which attaches this one)
    latest: bool = False  # read at the table's latest version (not time travel): a view of it follows the table
    applied: int = 0  # how many of ``prune`` the frame's own plan already skips by (the rest: when an action runs)


#: Steps that keep the rows' columns and values (a filter after them may still prune files).
KEEPING = ("orderBy", "sort", "sortWithinPartitions", "repartition", "repartitionByRange", "coalesce", "hint",
            "distinct", "alias")
#: Steps that pick rows or change values: a filter after them must not prune the scan below them.
PICKING = ("limit", "offset", "sample", "dropDuplicates", "drop_duplicates", "dropna", "fillna", "toDF")
TRACKED = ("filter", "where", "select", "selectExpr", "withColumn", "withColumns", "withColumnRenamed",
            "withColumnsRenamed", "drop", *KEEPING, *PICKING)


def next_unchanged(
    state: FrameState, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> frozenset[str] | None:
    """``unchanged`` after ``name(*args, **kwargs)``; ``None`` when the result cannot be tracked."""
    if not portable(args) or (kwargs and (name not in (*KEEPING, *PICKING) or not portable(kwargs))):
        return None
    if name in ("filter", "where", *KEEPING):
        return state.unchanged
    if name in PICKING:
        return frozenset()
    if name == "select":
        cols = flat_columns(args)
        names = [plain_name(c) for c in cols]
        if "*" in names:
            return state.unchanged
        return state.unchanged & {n.lower() for n in names if n is not None}
    if name == "withColumn":
        return state.unchanged - {str(args[0]).lower()}
    if name == "withColumns":
        keys = {str(k).lower() for m in args if isinstance(m, dict) for k in m}
        return state.unchanged - keys
    if name == "withColumnRenamed":
        return state.unchanged - {str(a).lower() for a in args}
    if name == "withColumnsRenamed":
        pairs = args[0] if args and isinstance(args[0], dict) else {}
        return state.unchanged - {str(x).lower() for kv in pairs.items() for x in kv}
    if name == "drop":
        dropped = [plain_name(c) for c in args]
        if any(d is None or d == "*" for d in dropped):
            return None
        return state.unchanged - {str(d).lower() for d in dropped}
    return None


def usable_conditions(conditions: list[Condition], state: FrameState, columns: list[str]) -> list[Condition]:
    """The conditions that may prune files of a frame with ``columns``: each on a column that is the
    table's own, unchanged and not duplicated, and not already applied."""
    counts: dict[str, int] = {}
    for c in columns:
        counts[c.lower()] = counts.get(c.lower(), 0) + 1
    out = []
    for cond in conditions:
        key = cond.column.lower()
        if key not in state.unchanged:
            key = key.split(".", 1)[0]
        if key in state.unchanged and counts.get(key) == 1 and cond not in state.prune and cond not in out:
            out.append(cond)
    return out


def through_generated(condition: Any, state: FrameState, columns: list[str]) -> list[Condition]:
    """Partition conditions on generated partition columns implied by conditions on their source column
    (still the table's own column in this frame), see
    :func:`deltalog.spark.columns.generated.generated_partition_conditions`."""
    from deltalog.spark.columns.generated import generated_partition_conditions

    if not state.snapshot.partition_columns or not portable(condition):
        return []
    texts = condition_sql(condition)
    lower = [c.lower() for c in columns]
    return [cond for source, cond in generated_partition_conditions(texts or [], state.snapshot)
            if source.lower() in state.unchanged and lower.count(source.lower()) == 1 and cond not in state.prune]
