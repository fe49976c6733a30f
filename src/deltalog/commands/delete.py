"""``DELETE FROM table WHERE ...`` in the kernel, executed with Arrow.

Only files that can hold matching rows are opened (partition pruning and min/max skipping). A predicate
on partition columns alone removes whole files without reading them. Otherwise each touched file is
handled one of two ways:

* **deletion vectors** (merge-on-read) when the table has ``delta.enableDeletionVectors=true`` and the
  ``deletionVectors`` feature: the deleted row positions are merged with the file's existing deletion
  vector into a new one (all new DVs of one DELETE go into one ``deletion_vector_<uuid>.bin``) and the
  file is re-added with it (``tightBounds: false`` in its stats, the data file untouched);
* **copy-on-write** otherwise: the surviving rows are written to new files and the old file removed.

The predicate is a SQL condition (``"id < 10 AND day = '2024-05-01'"``, see :mod:`deltalog.data.filters`),
``(column, op, value)`` conditions or a ``pyarrow.compute`` expression. Matches are found by reading only
the columns the predicate tests (every column for a ``pyarrow.compute`` expression), several files at
once; copy-on-write then reads the whole file, and only where a row matched.
A file whose every remaining row matches is simply removed. The transaction records the predicate and
the files it read, so concurrent writers to other partitions or files do not conflict. With the change
data feed on, a copy-on-write DELETE that rewrites a file writes the deleted rows to change data files
(:mod:`deltalog.data.change_files`); deletion vectors and removed files already say which rows went.

Example:
    >>> import deltalog
    >>> delete(deltalog.Table("/data/events"), [("day", "=", "2024-05-01")]).num_deleted_rows
    ... # doctest: +SKIP
    1000
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.commands.bins import size_groups
from deltalog.commands.dv_actions import readd_with_dv
from deltalog.data.change_files import change_rows, write_change_files
from deltalog.data.filters import Condition, RowFilter, matching_rows, normalize_filter
from deltalog.data.read import kept_rows, map_files, read_file_columns, read_file_rows, with_row_tracking_columns
from deltalog.data.sql_expr import Expression
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.iceberg_compat import compat_version
from deltalog.txn.operations import Delete
from deltalog.txn.row_tracking import tracked_fields, tracked_schema
from deltalog.txn.writer_features import is_true

if TYPE_CHECKING:
    from deltalog.data.filters import FilterLike
    from deltalog.protocol.schema import StructField
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle
    from deltalog.txn.operations import Operation
    from deltalog.txn.transaction import CommitResult, Transaction


@dataclass(frozen=True)
class DeleteResult:
    """What a DELETE did; ``version`` is ``None`` when no row matched (nothing is committed).

    Example:
        >>> DeleteResult(version=None).num_deleted_rows
        0
    """

    version: int | None
    num_deleted_rows: int = 0
    num_removed_files: int = 0
    num_added_files: int = 0
    num_deletion_vectors_added: int = 0
    num_copied_rows: int = 0
    used_deletion_vectors: bool = False


def uses_deletion_vectors(snapshot: Snapshot) -> bool:
    """Whether DML on this table should write deletion vectors (property and feature both on).

    Example:
        >>> uses_deletion_vectors(snap)                                   # doctest: +SKIP
        False
    """
    enabled = snapshot.properties.get("delta.enableDeletionVectors", "false").lower() == "true"
    return enabled and snapshot.has_feature("deletionVectors")


def delete(
    table: TableHandle,
    predicate: FilterLike | None = None,
    *,
    use_deletion_vectors: bool | None = None,
    clock: Callable[[], int] | None = None,
) -> DeleteResult:
    """Delete the rows matching ``predicate`` (a SQL condition string, ``(column, op, value)`` conditions
    joined by AND, or a ``pyarrow.compute`` expression; ``None`` deletes every row) in one ``DELETE`` commit.

    ``use_deletion_vectors`` defaults to the table's setting; asking for them on a table without the
    feature is an error.

    Example:
        >>> delete(deltalog.Table("/data/t"), "id < 10 OR name LIKE 'test%'").version  # doctest: +SKIP
        5
    """
    snap = table.snapshot()
    txn, conditions, expression, dvs = begin_dml(
        table, snap, Delete(predicate=describe_predicate(predicate)), predicate,
        use_deletion_vectors=use_deletion_vectors, clock=clock,
    )
    candidates = txn.read_candidates(conditions)  # a SQL filter's conditions are implied by it
    partitions = set(snap.partition_columns)
    if expression is None and all(c.column in partitions for c in conditions):
        return _drop_whole_files(txn, candidates)
    return _delete_rows(table, snap, txn, candidates, conditions, expression, dvs)


def begin_dml(
    table: TableHandle,
    snap: Snapshot,
    operation: Operation,
    predicate: FilterLike | None,
    *,
    use_deletion_vectors: bool | None,
    clock: Callable[[], int] | None,
) -> tuple[Transaction, list[Condition], RowFilter | None, bool]:
    """What the kernel's DELETE and UPDATE start with: the predicate checked against ``snap``'s schema,
    whether to write deletion vectors (asking for them on a table without them is an error), and the
    transaction, with row-level concurrency registered. Returns ``(txn, conditions, expression, dvs)``.

    Example:
        >>> txn, conditions, _, dvs = begin_dml(t, t.snapshot(), Delete(), [("id", "<", 3)],
        ...                                     use_deletion_vectors=None, clock=None)  # doctest: +SKIP
    """
    from deltalog.commands.dv_rebase import rebase_deletion_vectors

    dvs = uses_deletion_vectors(snap) if use_deletion_vectors is None else use_deletion_vectors
    if dvs and not uses_deletion_vectors(snap):
        raise InvalidArgumentError(
            "deletion vectors are not enabled on this table; set delta.enableDeletionVectors=true first",
            table=table.location,
        )
    conditions, expression = normalize_filter(predicate, snap.schema, table=table.location)
    options: dict[str, Any] = {"snapshot": snap}
    if clock is not None:
        options["clock"] = clock
    txn = table.transaction(operation, **options)
    txn.conflict_resolvers.append(rebase_deletion_vectors)  # row-level concurrency on shared files
    return txn, conditions, expression, dvs


class DmlWriter:
    """Stages a DML statement's changes in its transaction as they are produced, writing their files at once
    (a statement working through its files in groups holds one group at a time): ``stage`` takes files out,
    re-adds files with deletion vectors, writes new rows and change rows. ``discard`` deletes what was
    written (for :meth:`Transaction.discard_unless_committed`).

    Example:
        >>> writer = DmlWriter(t, snap, txn, None)                                       # doctest: +SKIP
        >>> with txn.discard_unless_committed(writer.discard):                           # doctest: +SKIP
        ...     writer.stage(removed, [], [rows]); writer.commit({"numDeletedRows": 3})
    """

    def __init__(self, table: TableHandle, snap: Snapshot, txn: Transaction,
                 tracked: tuple[StructField, StructField] | None) -> None:
        self.table, self.snap, self.txn, self.tracked = table, snap, txn, tracked
        self.written: list[str] = []  # store paths of new data, DV and change files
        self.added = 0  # data files added (new, or re-added with a deletion vector)
        self.change_files = 0

    def stage(self, removed: list[dict[str, Any]], dv_files: list[tuple[dict[str, Any], np.ndarray]],
              new_data: list[pa.Table], changes: Sequence[pa.Table] = ()) -> None:
        """``removed`` files out, each of ``dv_files`` back in with a deletion vector holding ``rows``,
        ``new_data`` written to new files (carrying row ids when tracked), ``changes`` (change rows,
        :func:`deltalog.data.change_files.change_rows`) written to change data files.

        Example:
            >>> writer.stage([row], [(row, np.array([3], dtype=np.uint64))], [])       # doctest: +SKIP
        """
        snap, txn = self.snap, self.txn
        txn.remove_files(removed)
        if dv_files:
            self.added += _readd_with_dvs(snap, txn, dv_files, self.written)
        if new_data:
            self.added += _rewrite(self.table, snap, txn, new_data, self.written, self.tracked)
            txn.keeps_row_ids = self.tracked is not None
        if changes:
            files, actions = write_change_files(self.table.store, snap.schema, snap.partition_columns, changes,
                                                column_mapping=snap.column_mapping_mode)
            self.written.extend(f.rel_path for f in files)
            for action in actions:
                txn.add_action(action)
            self.change_files += len(actions)

    def commit(self, metrics: Mapping[str, Any], *,
               metric_names: tuple[str, str] = ("numAddedFiles", "numAddedChangeFiles")) -> CommitResult:
        """Commit what was staged, with ``metrics`` plus the data files added and (when any) the change files
        added, under ``metric_names``.

        Example:
            >>> writer.commit({"numDeletedRows": 3}).version                               # doctest: +SKIP
            7
        """
        out = {**metrics, metric_names[0]: self.added}
        if self.change_files:
            out[metric_names[1]] = int(metrics.get(metric_names[1], 0)) + self.change_files
        return self.txn.commit(metrics=out)

    def discard(self) -> None:
        """Delete every file written (nothing committed refers to them).

        Example:
            >>> writer.discard()                                                         # doctest: +SKIP
        """
        for rel in self.written:
            self.table.store.delete(rel)


def keep_rest(row: dict[str, Any], data: pa.Table, remaining: np.ndarray, dvs: bool,
              dv_files: list[tuple[dict[str, Any], np.ndarray]], out: list[pa.Table]) -> int:
    """The ``remaining`` rows of a touched file stay: with ``dvs`` the file goes back with a deletion vector
    of its other rows (into ``dv_files``), else they are written again (into ``out``). Returns how many rows
    were copied.

    Example:
        >>> keep_rest(row, data, np.array([True, False]), False, [], out)                # doctest: +SKIP
        1
    """
    if not remaining.any():
        return 0
    if dvs:
        dv_files.append((row, np.flatnonzero(~remaining).astype(np.uint64)))
        return 0
    out.append(data.filter(pa.array(remaining)))
    return int(remaining.sum())


def records_changes(snap: Snapshot) -> bool:
    """Whether DML that rewrites rows of this table must write change data files
    (``delta.enableChangeDataFeed=true``).

    Example:
        >>> records_changes(deltalog.Table("/data/t").snapshot())                # doctest: +SKIP
        True
    """
    return is_true(snap.metadata.configuration, "delta.enableChangeDataFeed")


def describe_predicate(predicate: Any) -> str | None:
    if predicate is None:
        return None
    if isinstance(predicate, pc.Expression):
        return str(predicate)
    if isinstance(predicate, str):
        return predicate
    conds = [predicate] if isinstance(predicate, tuple) else predicate
    if isinstance(conds, (str, bytes)) or not isinstance(conds, Sequence) or \
            not all(isinstance(c, (tuple, list)) and len(c) == 3 for c in conds):
        return repr(predicate)  # not a filter: normalize_filter refuses it, naming what is wrong
    return " AND ".join(f"{c[0]} {c[1]} {c[2]!r}" for c in conds)


def _drop_whole_files(txn: Transaction, files: pa.Table) -> DeleteResult:
    if files.num_rows == 0:
        return DeleteResult(version=None)
    rows = files.to_pylist()
    deleted = sum(_live_records(r) for r in rows)
    txn.remove_files(rows)
    result = txn.commit(metrics={"numRemovedFiles": len(rows), "numDeletedRows": deleted, "numAddedFiles": 0})
    return DeleteResult(version=result.version, num_deleted_rows=deleted, num_removed_files=len(rows))


def _live_records(row: Mapping[str, Any]) -> int:
    try:
        n = int(json.loads(row.get("stats") or "{}").get("numRecords", 0))
    except (ValueError, TypeError):
        n = 0
    dv = row.get("deletionVector") or {}
    return n - int(dv.get("cardinality") or 0)


@dataclass
class DeletePlan:
    """Which rows a delete takes out of the candidate files: the files touched (``removed``), those re-added
    with a deletion vector of the rows gone (``dv_files``), the rows written again (``survivors``, copy-on-
    write, with row ids when ``tracked``), and the deleted rows as change rows (``changes``, when recorded).

    Example:
        >>> plan_deletes(snap, candidates, [Condition("id", "<", 3)], None, dvs=False).deleted  # doctest: +SKIP
        3
    """

    tracked: tuple[StructField, StructField] | None
    removed: list[dict[str, Any]] = field(default_factory=list)
    dv_files: list[tuple[dict[str, Any], np.ndarray]] = field(default_factory=list)
    survivors: list[pa.Table] = field(default_factory=list)
    changes: list[pa.Table] = field(default_factory=list)
    deleted: int = 0
    copied: int = 0


def plan_deletes(
    snap: Snapshot, candidates: pa.Table | list[dict[str, Any]], conditions: list[Condition],
    expression: RowFilter | None, *, dvs: bool, record: bool = False,
) -> DeletePlan:
    """Read the candidate files (several at once; a table of ``add_files()`` rows, or the rows) and plan
    taking out the rows the filter matches: deletion vectors with ``dvs``, else copy-on-write (``record``:
    the deleted rows as change rows)."""
    plan = DeletePlan(None if dvs else tracked_fields(snap.protocol, snap.metadata))  # copies keep row ids
    tracked = plan.tracked
    rows = candidates.to_pylist() if isinstance(candidates, pa.Table) else candidates
    probed = map_files(lambda r: file_matches(snap, r, conditions, expression, every_column=not dvs), rows)
    for row, found in zip(rows, probed, strict=True):
        if found is None:
            continue
        data, keep, hit = found
        if tracked is not None:
            data = with_row_tracking_columns(snap, row, data, (tracked[0].name, tracked[1].name))
        plan.deleted += int(hit.sum())
        plan.removed.append(row)
        if record:
            plan.changes.append(change_rows(data.filter(pa.array(hit)), "delete", snap.schema))
        plan.copied += keep_rest(row, data, keep & ~hit, dvs, plan.dv_files, plan.survivors)
    return plan


def _delete_rows(
    table: TableHandle,
    snap: Snapshot,
    txn: Transaction,
    candidates: pa.Table,
    conditions: list[Condition],
    expression: RowFilter | None,
    dvs: bool,
) -> DeleteResult:
    writer = DmlWriter(table, snap, txn, None if dvs else tracked_fields(snap.protocol, snap.metadata))
    with txn.discard_unless_committed(writer.discard):
        totals = stage_deletes(writer, candidates.to_pylist(), conditions, expression, dvs=dvs,
                               record=not dvs and records_changes(snap))
        if not totals.removed:
            return DeleteResult(version=None, used_deletion_vectors=dvs)
        done = writer.commit({"numDeletedRows": totals.deleted, "numRemovedFiles": totals.removed,
                              "numCopiedRows": totals.copied, "numDeletionVectorsAdded": totals.dv_files})
    return DeleteResult(
        version=done.version, num_deleted_rows=totals.deleted, num_removed_files=totals.removed,
        num_added_files=writer.added, num_deletion_vectors_added=totals.dv_files, num_copied_rows=totals.copied,
        used_deletion_vectors=dvs,
    )


@dataclass
class DeleteTotals:
    """What :func:`stage_deletes` staged: rows deleted and copied, files removed and re-added with a deletion
    vector, and whether any rows were written again (``rewrote``).

    Example:
        >>> DeleteTotals().rewrote
        False
    """

    deleted: int = 0
    copied: int = 0
    removed: int = 0
    dv_files: int = 0
    rewrote: bool = False


def stage_deletes(
    writer: DmlWriter, candidates: list[dict[str, Any]], conditions: list[Condition], expression: RowFilter | None,
    *, dvs: bool, record: bool,
) -> DeleteTotals:
    """Take the rows the filter matches out of the candidate files, a group of files at a time
    (:func:`file_groups`), staging each group with ``writer`` (whose row-tracking fields must be ``None``
    with ``dvs``). With ``record`` the deleted rows become change rows -- written only once some group
    writes rows again: a delete of whole files says what went by its removes, so the deleted rows of the
    groups before wait until then (and are dropped if none does).

    Example:
        >>> stage_deletes(writer, rows, [Condition("id", "<", 3)], None, dvs=False, record=False).deleted
        ... # doctest: +SKIP
        3
    """
    totals = DeleteTotals()
    pending: list[pa.Table] = []
    for group in file_groups(candidates):  # one group of files in memory at a time
        plan = plan_deletes(writer.snap, group, conditions, expression, dvs=dvs, record=record)
        changes = plan.changes
        totals.rewrote = totals.rewrote or bool(plan.survivors)
        if record and not totals.rewrote:
            pending.extend(changes)
            changes = []
        elif pending:
            changes, pending = [*pending, *changes], []
        writer.stage(plan.removed, plan.dv_files, plan.survivors, changes)
        totals.deleted += plan.deleted
        totals.copied += plan.copied
        totals.removed += len(plan.removed)
        totals.dv_files += len(plan.dv_files)
    return totals


#: The candidate files a DML statement reads at a time: about this many bytes of parquet (several times that
#: in memory); each group's rewritten rows are written before the next group is read.
GROUP_BYTES = 256 << 20


def file_groups(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Candidate files (``add_files()`` rows) in groups of about :data:`GROUP_BYTES` (at least one file each).

    Example:
        >>> [len(g) for g in file_groups([{"size": 1}, {"size": 2}])]
        [2]
    """
    return list(size_groups(rows, max_bytes=GROUP_BYTES)) or [[]]


def file_matches(
    snap: Snapshot, add: dict[str, Any], conditions: list[Condition], expression: RowFilter | None, *,
    every_column: bool,
) -> tuple[pa.Table, np.ndarray, np.ndarray] | None:
    """One candidate file of a DML statement: its physical rows (every column with ``every_column``, else
    at least the ones the predicate tests), the rows its deletion vector keeps, and the kept rows that
    match; ``None`` when no row matches. Only the columns the predicate tests are read to find the matches
    (every column for a pyarrow expression, whose columns are not known), and every column only from a
    file where a row matches.

    Example:
        >>> file_matches(snap, add, [Condition("id", "=", 5)], None, every_column=False)  # doctest: +SKIP
        (pyarrow.Table ..., array([ True, ...]), array([False, ...]))
    """
    tested = {c.column for c in conditions}
    if isinstance(expression, Expression):
        tested |= {path[0] for path in expression.columns()}
    elif expression is not None:
        tested = set()  # a pyarrow expression's columns are not known: every column
    data = read_file_columns(snap, add, tested, apply_deletion_vector=False)
    keep = kept_rows(snap, add, data.num_rows)
    hit = matching_rows(data, conditions, expression) & keep
    if not hit.any():
        return None
    if every_column and data.num_columns < len(snap.schema.fields):
        data = read_file_rows(snap, add, apply_deletion_vector=False)
    return data, keep, hit


def _readd_with_dvs(
    snap: Snapshot, txn: Transaction, files: list[tuple[dict[str, Any], np.ndarray]], written: list[str]
) -> int:
    """Re-add each file with a deletion vector holding all its deleted rows (old and new)."""
    from deltalog.data.deletion_vectors import INLINE_DV_MAX_BYTES, write_deletion_vectors

    # small DVs inline in the log, as the Spark DML commands store them; the others in one new file
    descriptors = write_deletion_vectors(
        snap.store, [rows for _, rows in files], inline_max_bytes=INLINE_DV_MAX_BYTES
    )
    written.extend({rel for d in descriptors if (rel := d.relative_path()) is not None})
    for (row, _), dv in zip(files, descriptors, strict=True):
        txn.add_file(readd_with_dv(row, dv.to_dict()))
    return len(files)


def _rewrite(
    table: TableHandle, snap: Snapshot, txn: Transaction, survivors: list[pa.Table], written: list[str],
    tracked: tuple[StructField, StructField] | None = None,
) -> int:
    """Write ``survivors`` to new files and stage their ``add`` actions; a large rewrite is split between
    a few writers working side by side (pyarrow encodes without holding the GIL)."""
    from concurrent.futures import ThreadPoolExecutor, wait

    from deltalog.data.write_files import DataFileWriter, WrittenFile

    schema = tracked_schema(snap.schema, tracked)

    def write(group: list[pa.Table]) -> list[WrittenFile]:
        writer = DataFileWriter(table.store, schema, snap.partition_columns, column_mapping=snap.column_mapping_mode,
                                iceberg_compat=compat_version(snap.metadata.configuration))
        try:
            for part in group:
                writer.write(part)
            return writer.close()
        except BaseException:
            writer.abort()
            raise

    groups = _groups(survivors, _WRITERS if sum(t.nbytes for t in survivors) >= _PARALLEL_BYTES else 1)
    if len(groups) == 1:
        files = write(groups[0])
    else:
        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            futures = [pool.submit(write, g) for g in groups]
            wait(futures)
        files = [f for fut in futures if fut.exception() is None for f in fut.result()]
        failed = next((fut.exception() for fut in futures if fut.exception() is not None), None)
        if failed is not None:
            written.extend(f.rel_path for f in files)  # the other writers' files: deleted with the rest
            raise failed
    written.extend(f.rel_path for f in files)
    for f in files:
        txn.add_file(f.to_add())
    return len(files)


#: A rewrite of at least this many bytes (in memory) is split between :data:`_WRITERS` writers.
_PARALLEL_BYTES = 16 << 20
_WRITERS = 2


def _groups(pieces: list[pa.Table], n: int) -> list[list[pa.Table]]:
    """``pieces`` in at most ``n`` groups of about equal bytes (the largest first, each to the lightest)."""
    if n <= 1 or len(pieces) <= 1:
        return [pieces]
    groups: list[list[pa.Table]] = [[] for _ in range(min(n, len(pieces)))]
    sizes = [0] * len(groups)
    for piece in sorted(pieces, key=lambda t: t.nbytes, reverse=True):
        i = sizes.index(min(sizes))
        groups[i].append(piece)
        sizes[i] += piece.nbytes
    return groups
