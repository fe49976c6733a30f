"""An overwrite whose predicate names data columns (``write_table(..., mode="overwrite", predicate="id < 100")``,
Spark's ``replaceWhere`` on data columns, delta-rs's ``predicate``): the rows matching the predicate are
replaced by the data, in one ``WRITE`` commit.

The files that may hold matching rows (partition pruning and min/max skipping of the predicate's simple
terms) are read; each one with a matching row is removed and its other rows are written again (row ids
kept on tables with row tracking), as the kernel's copy-on-write DELETE does, a group of files at a time
(:func:`deltalog.commands.delete.stage_deletes`). Every row of the data must match the predicate
(``DELTA_REPLACE_WHERE_MISMATCH``). The read predicate is recorded, so a concurrent writer adding rows that
match it conflicts. With the change data feed on and rows written again, the replaced rows (``delete``) and
the data's rows (``insert``, written beside the data files as they stream: :func:`insert_changes`) are
written as change data files, as Spark's ``replaceWhere`` does; when only whole files went, the commit's
``add`` and ``remove`` actions say what changed and the insert change files are deleted again.

Example:
    >>> write_table("/data/t", fixed, mode="overwrite", predicate="id BETWEEN 100 AND 199")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from deltalog.commands.delete import DmlWriter, records_changes, stage_deletes
from deltalog.data.change_files import cdc_actions, change_file_writer, change_rows
from deltalog.data.filters import Condition, RowFilter, matching_rows, normalize_filter
from deltalog.errors import InvalidArgumentError
from deltalog.txn.row_tracking import tracked_fields

if TYPE_CHECKING:
    from deltalog.data.write_files import DataFileWriter, WrittenFile
    from deltalog.protocol.schema import StructType
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle
    from deltalog.txn.transaction import CommitResult, Transaction

__all__ = ["InsertChanges", "RowPredicate", "checked_batches", "commit_replacing_rows", "insert_changes",
           "row_predicate"]

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
    return conditions, expression


class InsertChanges:
    """The data's rows as ``insert`` change rows, written to change data files while the data streams.

    Example:
        >>> changes = insert_changes(t, snap, schema)                        # doctest: +SKIP
        >>> changes.write(rows)                                              # doctest: +SKIP
    """

    def __init__(self, writer: DataFileWriter, schema: StructType) -> None:
        self.writer = writer
        self.schema = schema

    def write(self, rows: pa.Table) -> None:
        """Record ``rows`` (logical, every column of the written schema) as inserted.

        Example:
            >>> changes.write(pa.table({"id": [1]}))                          # doctest: +SKIP
        """
        self.writer.write(change_rows(rows, "insert", self.schema))


def insert_changes(table: TableHandle, snapshot: Snapshot | None, schema: StructType,
                   predicate: RowPredicate | None) -> InsertChanges | None:
    """Where the data's rows go as change data (an overwrite replacing rows of a table with the change data
    feed on), else ``None``. ``schema`` is the schema the data is written with.

    Example:
        >>> insert_changes(t, snap, snap.schema, row_predicate("id < 3", snap, t.location))  # doctest: +SKIP
    """
    if predicate is None or snapshot is None or not records_changes(snapshot):
        return None
    writer = change_file_writer(table.store, schema, snapshot.partition_columns,
                                column_mapping=snapshot.column_mapping_mode)
    return InsertChanges(writer, schema)


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
    table: TableHandle, snap: Snapshot, txn: Transaction, files: list[WrittenFile], predicate: RowPredicate,
    inserted: InsertChanges | None = None,
) -> CommitResult:
    """Stage the written ``files``, remove the rows matching ``predicate`` (rewriting the rest of their
    files) and commit; with ``inserted`` (the data's rows as change rows), the changes are recorded as change
    data when rows are written again. The caller deletes ``inserted``'s files if nothing commits.

    Example:
        >>> commit_replacing_rows(t, snap, txn, files, (conditions, None)).version  # doctest: +SKIP
        7
    """
    conditions, expression = predicate
    for f in files:
        txn.add_file(f.to_add())
    candidates = txn.read_candidates(conditions)  # the predicate's simple terms: recorded as read
    writer = DmlWriter(table, snap, txn, tracked_fields(snap.protocol, snap.metadata))  # row ids kept
    with txn.discard_unless_committed(writer.discard):
        totals = stage_deletes(writer, candidates.to_pylist(), conditions, expression, dvs=False,
                               record=inserted is not None)  # copy-on-write
        metrics: dict[str, int] = {"numDeletedRows": totals.deleted, "numCopiedRows": totals.copied}
        if inserted is not None:
            if totals.rewrote:  # rows written again: the commit's change data must hold every change it made
                added_changes = cdc_actions(inserted.writer.close())
                for action in added_changes:
                    txn.add_action(action)
                metrics["numAddedChangeFiles"] = len(added_changes)
            else:
                inserted.writer.abort()
        if not totals.removed and not files:
            return txn.commit(metrics=metrics)
        return writer.commit(metrics)
