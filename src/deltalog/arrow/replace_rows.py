"""An overwrite whose predicate names data columns (``write_table(..., mode="overwrite", predicate="id < 100")``,
Spark's ``replaceWhere`` on data columns, delta-rs's ``predicate``): the rows matching the predicate are
replaced by the data, in one ``WRITE`` commit.

The files that may hold matching rows (partition pruning and min/max skipping of the predicate's simple
terms) are read; each one with a matching row is removed and its other rows are written again (row ids
kept on tables with row tracking), as the kernel's copy-on-write DELETE does
(:func:`deltalog.commands.delete.commit_dml`). Every row of the data must match the predicate
(``DELTA_REPLACE_WHERE_MISMATCH``). The read predicate is recorded, so a concurrent writer adding rows that
match it conflicts. Tables with the change data feed on are refused here (the new rows would have to be
recorded as change data too); the Spark engine's ``replaceWhere`` handles them.

Example:
    >>> write_table("/data/t", fixed, mode="overwrite", predicate="id BETWEEN 100 AND 199")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from deltalog.commands.delete import commit_dml, plan_deletes, records_changes
from deltalog.data.filters import Condition, RowFilter, matching_rows, normalize_filter
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError

if TYPE_CHECKING:
    from deltalog.data.write_files import WrittenFile
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle
    from deltalog.txn.transaction import CommitResult, Transaction

__all__ = ["RowPredicate", "checked_batches", "commit_replacing_rows", "row_predicate"]

#: The predicate as conditions (pruning) and what else filters rows.
RowPredicate: TypeAlias = "tuple[list[Condition], RowFilter | None]"


def row_predicate(predicate: Any, snapshot: Snapshot | None, loc: str) -> RowPredicate | None:
    """``predicate`` checked against the table when it names a data column (``None`` when it names only
    partition columns, the plain partition overwrite, or when there is no table yet).

    Example:
        >>> row_predicate("id < 3", deltalog.Table("/data/t").snapshot(), "/data/t")  # doctest: +SKIP
        ([Condition(column='id', op='<', value=3)], None)
    """
    if predicate is None or snapshot is None:
        return None
    conditions, expression = normalize_filter(predicate, snapshot.schema, table=loc)
    if expression is None and all(c.column in snapshot.partition_columns for c in conditions):
        return None
    if records_changes(snapshot):
        raise UnsupportedFeatureError(
            "an overwrite whose predicate names data columns would have to record change data for the change "
            "data feed (delta.enableChangeDataFeed=true), which the kernel does not do; use a predicate on "
            "partition columns, or the Spark engine's replaceWhere",
            feature="changeDataFeed", table=loc, version=snapshot.version)
    return conditions, expression


def checked_batches(batches: Iterator[pa.RecordBatch], predicate: RowPredicate, loc: str
                    ) -> Iterator[pa.RecordBatch]:
    """``batches``, refusing (``DELTA_REPLACE_WHERE_MISMATCH``) a row the predicate does not match.

    Example:
        >>> list(checked_batches(iter(table.to_batches()), ([], None), "/data/t"))  # doctest: +SKIP
    """
    conditions, expression = predicate
    for batch in batches:
        hit = matching_rows(pa.Table.from_batches([batch]), conditions, expression)
        if not hit.all():
            raise InvalidArgumentError(
                f"[DELTA_REPLACE_WHERE_MISMATCH] {int((~hit).sum())} row(s) of the data do not match the overwrite "
                "predicate; an overwrite with a predicate may only write rows it replaces -- filter the data or "
                "widen the predicate", table=loc)
        yield batch


def commit_replacing_rows(
    table: TableHandle, snap: Snapshot, txn: Transaction, files: list[WrittenFile], predicate: RowPredicate
) -> CommitResult:
    """Stage the written ``files``, remove the rows matching ``predicate`` (rewriting the rest of their
    files) and commit.

    Example:
        >>> commit_replacing_rows(t, snap, txn, files, (conditions, None)).version  # doctest: +SKIP
        7
    """
    conditions, expression = predicate
    for f in files:
        txn.add_file(f.to_add())
    candidates = txn.read_candidates(conditions)  # the predicate's simple terms: recorded as read
    plan = plan_deletes(snap, candidates, conditions, expression, dvs=False)  # copy-on-write, row ids kept
    metrics = {"numDeletedRows": plan.deleted, "numCopiedRows": plan.copied}
    if not plan.removed and not files:
        return txn.commit(metrics=metrics)
    result, _ = commit_dml(table, snap, txn, plan.removed, [], plan.survivors, plan.tracked, metrics)
    return result
