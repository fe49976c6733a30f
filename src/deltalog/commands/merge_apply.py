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

from deltalog.commands.delete import commit_dml
from deltalog.commands.update import new_images
from deltalog.data.change_files import change_rows
from deltalog.data.sql_expr import Expression
from deltalog.errors import InvalidArgumentError
from deltalog.txn.defaults import fill_defaults
from deltalog.txn.generated import generated_columns
from deltalog.txn.identity import IdentityGenerator, with_high_water_marks

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle
    from deltalog.txn.transaction import Transaction

__all__ = ["ClauseScope", "MergePlan", "apply_clauses", "condition_mask", "write_merge"]


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


def apply_clauses(
    scope: ClauseScope, checked: Sequence[tuple[Any, Expression | None, dict[str, Expression]]],
    target: pa.Table, source: pa.Table, t_idx: np.ndarray, s_idx: np.ndarray, loc: str,
) -> MergePlan:
    """Apply the clauses (each ``(clause, condition, assignments)``) in order to the matched pairs
    ``(t_idx[i], s_idx[i])``, the unmatched source rows and the unmatched target rows.

    Example:
        >>> apply_clauses(scope, checked, target, source, t_idx, s_idx, "/data/t").deleted  # doctest: +SKIP
        [array([4, 7])]
    """
    plan = MergePlan()
    matched = [c for c in checked if c[0].kind == "matched"]
    if matched and len(t_idx):
        counts = np.bincount(t_idx, minlength=target.num_rows)
        plan.multiple_matches = int((counts > 1).sum())
        only_delete = len(matched) == 1 and matched[0][0].action == "delete" and matched[0][1] is None
        if plan.multiple_matches and not only_delete:
            raise InvalidArgumentError(
                f"[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] {plan.multiple_matches} target row(s) "
                "matched more than one source row: the merge cannot tell which one to apply; make the source's "
                "keys unique (e.g. keep the latest row per key) before merging", table=loc)
        if plan.multiple_matches:
            t_idx, first = np.unique(t_idx, return_index=True)
            s_idx = s_idx[first]
    _apply(plan, scope, matched, "matched", t_idx, s_idx, target, source, loc)
    unmatched_s = _others(source.num_rows, s_idx)
    _apply(plan, scope, [c for c in checked if c[0].kind == "not_matched"], "not_matched", None, unmatched_s,
           target, source, loc)
    unmatched_t = _others(target.num_rows, t_idx)
    _apply(plan, scope, [c for c in checked if c[0].kind == "not_matched_by_source"], "not_matched_by_source",
           unmatched_t, None, target, source, loc)
    return plan


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


def write_merge(
    table: TableHandle, snap: Snapshot, txn: Transaction, plan: MergePlan,
    files: list[tuple[dict[str, Any], pa.Table, np.ndarray]], file_of: np.ndarray, pos_of: np.ndarray,
    tracked: Any, dvs: bool, record: bool, source_rows: int,
) -> dict[str, Any]:
    """Write the plan's rows and commit: touched files get deletion vectors (or are rewritten), new
    images and inserted rows go to new files, change rows to change data files. Returns the counts.

    Example:
        >>> write_merge(t, snap, txn, plan, files, file_of, pos_of, None, False, False, 3)["version"]
        ... # doctest: +SKIP
        5
    """
    names = [f.name for f in snap.schema.fields]
    generated = {n.lower() for n in generated_columns(snap.schema)}
    upd_t = np.concatenate([t for t, _ in plan.updated]) if plan.updated else np.zeros(0, dtype=np.int64)
    upd_values = pa.concat_tables([v for _, v in plan.updated]) if plan.updated else None
    del_t = np.concatenate(plan.deleted) if plan.deleted else np.zeros(0, dtype=np.int64)
    removed: list[dict[str, Any]] = []
    dv_files: list[tuple[dict[str, Any], np.ndarray]] = []
    out: list[pa.Table] = []
    changes: list[pa.Table] = []
    copied = 0
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
        remaining = keep & ~hit
        if dvs:
            if remaining.any():
                dv_files.append((row, np.flatnonzero(~remaining).astype(np.uint64)))
        elif remaining.any():
            out.append(data.filter(pa.array(remaining)))
            copied += int(remaining.sum())
    inserted = 0
    identity = IdentityGenerator.for_schema(snap.schema, [], table=table.location)
    for part in plan.inserted:
        if not part.num_rows:
            continue
        for col in identity.generated:  # the identity columns an insert leaves out get new values
            if col.name not in part.column_names:
                part = part.append_column(pa.field(col.name, pa.int64()), identity.take(col.name, part.num_rows))
        given = fill_defaults(part, snap.schema, table=table.location)
        empty = _null_rows(snap, tracked, part.num_rows)
        rows = new_images(snap, empty, {c: given.column(c) for c in given.column_names}, tracked)
        out.append(rows)
        inserted += rows.num_rows
        if record:
            changes.append(change_rows(rows, "insert", snap.schema))
    updated, deleted = len(upd_t), len(del_t)
    metrics = {
        "numSourceRows": source_rows, "numTargetRowsInserted": inserted, "numTargetRowsUpdated": updated,
        "numTargetRowsDeleted": deleted, "numTargetRowsCopied": copied,
        "numOutputRows": inserted + updated + copied, "numTargetFilesRemoved": len(removed),
        "numTargetDeletionVectorsAdded": len(dv_files),
    }
    if identity.high_water_marks():  # recorded in the schema: a concurrent insert conflicts (metadata changed)
        txn.update_metadata(with_high_water_marks(snap.metadata, identity.high_water_marks()))
    done, added = commit_dml(table, snap, txn, removed, dv_files, out, tracked, metrics,
                                changes if removed else (),  # an insert-only merge is an append: no change files
                                metric_names=("numTargetFilesAdded", "numTargetChangeFilesAdded"))
    return {"version": done.version, "inserted": inserted, "updated": updated, "deleted": deleted, "copied": copied,
            "added": added, "removed": len(removed)}


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
    from deltalog.protocol.schema import StructType

    schema = StructType((*snap.schema.fields, *tracked)) if tracked else snap.schema
    arrow = schema.to_arrow_schema()
    return pa.table({f.name: pa.nulls(n, f.type) for f in arrow}, schema=arrow)
