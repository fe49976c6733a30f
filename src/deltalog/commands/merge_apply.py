"""The clauses of a kernel MERGE applied to the joined rows, and the result written and committed
(the join is :mod:`deltalog.commands.merge_run`'s).

:func:`apply_clauses` decides, clause by clause in order, which target rows are updated (and to what),
which are deleted and which source rows are inserted; :func:`write_merge` turns that into new images,
deletion vectors or rewritten files, inserted files and change data, as the kernel's UPDATE does.

Example:
    >>> plan = apply_clauses(scope, checked, target, source, t_idx, s_idx, "/data/t")   # doctest: +SKIP
    >>> plan.changed                                                                     # doctest: +SKIP
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.commands.delete import DmlWriter, keep_rest
from deltalog.commands.update import new_images
from deltalog.data.change_files import change_rows
from deltalog.data.sql_expr import Expression
from deltalog.errors import InvalidArgumentError, MultipleSourceRowMatchError
from deltalog.txn.defaults import fill_defaults
from deltalog.txn.generated import generated_columns
from deltalog.txn.identity import IdentityGenerator, with_high_water_marks
from deltalog.txn.row_tracking import tracked_schema

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = [
    "ClauseScope", "MergeCounts", "MergePlan", "apply_inserts", "apply_to_targets", "condition_mask", "merge_metrics",
    "stage_inserts", "stage_targets",
]


class ClauseScope(Protocol):
    """What the clauses are evaluated with (``merge_run``'s scope).

    Example:
        >>> scope.table("matched", target_rows, source_rows).column_names   # doctest: +SKIP
        ['target', 'source', 'v']
    """

    def table(self, kind: str, target: pa.Table | None, source: pa.Table | None) -> pa.Table: ...

    def evaluate(self, expr: Expression, data: pa.Table, what: str) -> pa.Array: ...


@dataclass
class MergePlan:
    """What the clauses decided: updated target rows (indices into the target rows) with their new values
    (every column but generated ones), deleted target rows, and inserted rows (per insert clause, the columns
    it assigns).

    Example:
        >>> MergePlan().changed
        False
    """

    updated: list[tuple[np.ndarray, pa.Table]] = field(default_factory=list)
    deleted: list[np.ndarray] = field(default_factory=list)
    inserted: list[pa.Table] = field(default_factory=list)
    multiple_matches: int = 0

    @property
    def changed(self) -> bool:
        """Whether any row is updated, deleted or inserted."""
        return any(len(t) for t, _ in self.updated) or any(len(d) for d in self.deleted) or \
            any(t.num_rows for t in self.inserted)


def condition_mask(values: pa.Array, what: str, loc: str) -> np.ndarray:
    """Which rows a condition's values select (null selects nothing); an error when they are not booleans.

    Example:
        >>> condition_mask(pa.array([True, None, False]), "condition", "t").tolist()
        [True, False, False]
    """
    if pa.types.is_null(values.type):
        return np.zeros(len(values), dtype=bool)
    if not pa.types.is_boolean(values.type):
        raise InvalidArgumentError(f"merge {what} gives {values.type} values, not true or false", table=loc)
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def _values(scope: ClauseScope, sets: dict[str, Expression], rows: pa.Table, kind: str,
            target_types: pa.Schema, loc: str) -> dict[str, pa.Array]:
    out: dict[str, pa.Array] = {}
    for column, expr in sets.items():
        value = scope.evaluate(expr, rows, f"assignment of {column!r}")
        target = target_types.field(column).type
        try:
            out[column] = pc.cast(value, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise InvalidArgumentError(
                f"[DELTA_CAST_FAILURE] merge cannot set column {column!r} ({target}) to {expr.sql!r}: {exc}",
                table=loc) from None
    return out


def apply_to_targets(
    scope: ClauseScope, checked: Sequence[tuple[Any, Expression | None, dict[str, Expression]]],
    target: pa.Table, source: pa.Table, t_idx: np.ndarray, s_idx: np.ndarray, loc: str,
) -> MergePlan:
    """Apply the matched clauses (each ``(clause, condition, assignments)``, in order) to the matched pairs
    ``(t_idx[i], s_idx[i])`` of these target rows, and the not-matched-by-source ones to the target rows no
    pair names (the inserts of unmatched source rows are :func:`apply_inserts`'s, once every target row was
    joined).

    Example:
        >>> apply_to_targets(scope, checked, target, source, t_idx, s_idx, "/data/t").deleted  # doctest: +SKIP
        [array([4, 7])]
    """
    plan = MergePlan()
    matched = [c for c in checked if c[0].kind == "matched"]
    if matched and len(t_idx):
        counts = np.bincount(t_idx, minlength=target.num_rows)
        plan.multiple_matches = int((counts > 1).sum())
        only_delete = len(matched) == 1 and matched[0][0].action == "delete" and matched[0][1] is None
        if plan.multiple_matches and not only_delete:
            raise MultipleSourceRowMatchError(
                f"[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] {plan.multiple_matches} target row(s) "
                "matched more than one source row: the merge cannot tell which one to apply; make the source's "
                "keys unique (e.g. keep the latest row per key) before merging", table=loc)
        if plan.multiple_matches:  # the row is deleted once (the source rows all count as matched)
            t_idx, first = np.unique(t_idx, return_index=True)
            s_idx = s_idx[first]
    _apply(plan, scope, matched, "matched", t_idx, s_idx, target, source, loc)
    unmatched_t = _others(target.num_rows, t_idx)
    _apply(plan, scope, [c for c in checked if c[0].kind == "not_matched_by_source"], "not_matched_by_source",
           unmatched_t, None, target, source, loc)
    return plan


def apply_inserts(
    scope: ClauseScope, checked: Sequence[tuple[Any, Expression | None, dict[str, Expression]]],
    target_schema: pa.Schema, source: pa.Table, unmatched: np.ndarray, loc: str,
) -> list[pa.Table]:
    """The rows the not-matched clauses insert for the ``unmatched`` source rows (indices), per clause the
    columns it assigns.

    Example:
        >>> apply_inserts(scope, checked, schema, source, np.array([2]), "/data/t")[0].num_rows  # doctest: +SKIP
        1
    """
    plan = MergePlan()
    _apply(plan, scope, [c for c in checked if c[0].kind == "not_matched"], "not_matched", None, unmatched,
           target_schema.empty_table(), source, loc)
    return plan.inserted


def _others(n: int, taken: np.ndarray) -> np.ndarray:
    """The indices below ``n`` not in ``taken`` (ascending)."""
    free = np.ones(n, dtype=bool)
    free[taken] = False
    return np.flatnonzero(free)


def _apply(
    plan: MergePlan, scope: ClauseScope, clauses: Sequence[tuple[Any, Expression | None, dict[str, Expression]]],
    kind: str, t_rows: np.ndarray | None, s_rows: np.ndarray | None, target: pa.Table, source: pa.Table, loc: str,
) -> None:
    n = len(t_rows) if t_rows is not None else len(s_rows) if s_rows is not None else 0
    remaining = np.ones(n, dtype=bool)
    for clause, cond, sets in clauses:
        if not remaining.any():
            return
        idx = np.flatnonzero(remaining)
        t_part = target.take(pa.array(t_rows[idx])) if t_rows is not None else None
        s_part = source.take(pa.array(s_rows[idx])) if s_rows is not None else None
        rows = scope.table(kind, t_part, s_part)
        hit = condition_mask(scope.evaluate(cond, rows, "condition"), "condition", loc) if cond is not None \
            else np.ones(len(idx), dtype=bool)
        remaining[idx[hit]] = False
        if not hit.any():
            continue
        chosen = rows.filter(pa.array(hit))
        if clause.action == "delete":
            assert t_rows is not None
            plan.deleted.append(t_rows[idx[hit]])
        elif clause.action == "insert":
            plan.inserted.append(pa.table(_values(scope, sets, chosen, kind, target.schema, loc)))
        else:
            assert t_rows is not None and t_part is not None
            old = t_part.filter(pa.array(hit))
            new = _values(scope, sets, chosen, kind, target.schema, loc)
            full = {name: new.get(name, old.column(name)) for name in target.column_names}
            plan.updated.append((t_rows[idx[hit]], pa.table(full)))


@dataclass
class MergeCounts:
    """What a MERGE staged so far, for its result and ``commitInfo``."""

    updated: int = 0
    deleted: int = 0
    copied: int = 0
    inserted: int = 0
    removed: int = 0
    dv_files: int = 0


def stage_targets(
    writer: DmlWriter, plan: MergePlan, files: list[tuple[dict[str, Any], pa.Table, np.ndarray]],
    file_of: np.ndarray, pos_of: np.ndarray, dvs: bool, record: bool, counts: MergeCounts,
) -> None:
    """Stage what the clauses did to one group of target files: each touched file gets a deletion vector
    (or is rewritten), new images go to new files, change rows (``record``) to change data files.

    Example:
        >>> stage_targets(writer, plan, files, file_of, pos_of, False, False, MergeCounts())  # doctest: +SKIP
    """
    snap, tracked = writer.snap, writer.tracked
    names = [f.name for f in snap.schema.fields]
    generated = {n.lower() for n in generated_columns(snap.schema)}
    upd_t = np.concatenate([t for t, _ in plan.updated]) if plan.updated else np.zeros(0, dtype=np.int64)
    upd_values = pa.concat_tables([v for _, v in plan.updated]) if plan.updated else None
    del_t = np.concatenate(plan.deleted) if plan.deleted else np.zeros(0, dtype=np.int64)
    removed: list[dict[str, Any]] = []
    dv_files: list[tuple[dict[str, Any], np.ndarray]] = []
    out: list[pa.Table] = []
    changes: list[pa.Table] = []
    upd_by_file, del_by_file = _by_file(upd_t, file_of), _by_file(del_t, file_of)
    none = np.zeros(0, dtype=np.int64)
    for i in sorted(upd_by_file.keys() | del_by_file.keys()):
        row, data, keep = files[i]
        hit = np.zeros(data.num_rows, dtype=bool)
        sel = upd_by_file.get(i, none)
        if len(sel):
            assert upd_values is not None
            old = data.take(pa.array(pos_of[upd_t[sel]]))
            values = upd_values.take(pa.array(sel))
            new = new_images(snap, old, {c: values.column(c) for c in names if c.lower() not in generated},
                             tracked)
            out.append(new)
            hit[pos_of[upd_t[sel]]] = True
            if record:
                changes += [change_rows(old, "update_preimage", snap.schema),
                            change_rows(new, "update_postimage", snap.schema)]
        gone = pos_of[del_t[del_by_file.get(i, none)]]
        if len(gone):
            hit[gone] = True
            if record:
                changes.append(change_rows(data.take(pa.array(gone)), "delete", snap.schema))
        removed.append(row)
        counts.copied += keep_rest(row, data, keep & ~hit, dvs, dv_files, out)
    writer.stage(removed, dv_files, out, changes)
    counts.updated += len(upd_t)
    counts.deleted += len(del_t)
    counts.removed += len(removed)
    counts.dv_files += len(dv_files)


def stage_inserts(writer: DmlWriter, inserted: list[pa.Table], record: bool, counts: MergeCounts) -> None:
    """Stage the inserted rows (defaults, identity values and generated columns filled in); with ``record``
    their change rows too.

    Example:
        >>> stage_inserts(writer, [pa.table({"id": [9]})], False, MergeCounts())          # doctest: +SKIP
    """
    snap, tracked = writer.snap, writer.tracked
    loc = writer.table.location
    identity = IdentityGenerator.for_schema(snap.schema, [], table=loc)
    out: list[pa.Table] = []
    changes: list[pa.Table] = []
    for part in inserted:
        if not part.num_rows:
            continue
        given = fill_defaults(identity.fill(part), snap.schema, table=loc)  # identity columns left out: new values
        empty = _null_rows(snap, tracked, part.num_rows)
        rows = new_images(snap, empty, {c: given.column(c) for c in given.column_names}, tracked)
        out.append(rows)
        counts.inserted += rows.num_rows
        if record:
            changes.append(change_rows(rows, "insert", snap.schema))
    if identity.high_water_marks():  # recorded in the schema: a concurrent insert conflicts (metadata changed)
        writer.txn.update_metadata(with_high_water_marks(snap.metadata, identity.high_water_marks()))
    writer.stage([], [], out, changes)


def merge_metrics(counts: MergeCounts, source_rows: int) -> dict[str, Any]:
    """The ``operationMetrics`` of a MERGE, as delta-spark records them (the files added are the writer's:
    :meth:`deltalog.commands.delete.DmlWriter.commit`).

    Example:
        >>> merge_metrics(MergeCounts(inserted=2), 2)["numTargetRowsInserted"]
        2
    """
    metrics: dict[str, Any] = {
        "numSourceRows": source_rows, "numTargetRowsInserted": counts.inserted,
        "numTargetRowsUpdated": counts.updated, "numTargetRowsDeleted": counts.deleted,
        "numTargetRowsCopied": counts.copied,
        "numOutputRows": counts.inserted + counts.updated + counts.copied,
        "numTargetFilesRemoved": counts.removed, "numTargetDeletionVectorsAdded": counts.dv_files,
    }
    return metrics


def _by_file(rows: np.ndarray, file_of: np.ndarray) -> dict[int, np.ndarray]:
    """Per file, the indices into ``rows`` (target row numbers) of its rows, in order."""
    if not len(rows):
        return {}
    files = file_of[rows]
    order = np.argsort(files, kind="stable")
    found, starts = np.unique(files[order], return_index=True)
    ends = [*starts[1:].tolist(), len(order)]
    return {int(f): order[a:b] for f, a, b in zip(found.tolist(), starts.tolist(), ends, strict=True)}


def _null_rows(snap: Snapshot, tracked: Any, n: int) -> pa.Table:
    """``n`` rows of nulls of the table's columns (and its row-tracking columns)."""

    schema = tracked_schema(snap.schema, tracked)
    arrow = schema.to_arrow_schema()
    return pa.table({f.name: pa.nulls(n, f.type) for f in arrow}, schema=arrow)
