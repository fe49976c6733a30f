"""``UPDATE table SET ... WHERE ...`` in the kernel, executed with Arrow.

The files that can hold matching rows are found as for a DELETE (partition pruning and min/max
skipping) and read; each file with a matching row is handled one of two ways:

* **deletion vectors** (merge-on-read) when the table enables them: the old images of the updated rows
  are marked deleted in the file's deletion vector (the data file stays) and the new images go to a new
  file;
* **copy-on-write** otherwise: the file is rewritten with its other rows and the new images.

Assignments are literal values, SQL expressions (``deltalog.sql_expr("v * 2")``) or ``pyarrow.compute``
expressions over the row's columns (its old values), cast to the column's type; NOT NULL columns and CHECK
constraints are enforced on the new images and generated columns recomputed from them. Identity columns
cannot be assigned (as in delta-spark). On tables with row tracking the updated rows keep their row ids
and get the commit's version. With the change data feed on, each updated row's old and new values go to
change data files (``update_preimage`` / ``update_postimage``). Concurrent DML on other rows of the same
files both commit (see :mod:`deltalog.commands.dv_rebase`).

Example:
    >>> import pyarrow.compute as pc
    >>> update(deltalog.Table("/data/t"), [("id", "=", 7)], {"v": pc.field("v") + 1}).num_updated_rows
    ... # doctest: +SKIP
    1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.commands.delete import (
    DmlWriter,
    begin_dml,
    describe_predicate,
    file_groups,
    file_matches,
    keep_rest,
    records_changes,
)
from deltalog.data.change_files import change_rows
from deltalog.data.read import map_files, with_row_tracking_columns
from deltalog.data.sql_expr import Expression, UnsupportedExpressionError
from deltalog.errors import InvalidArgumentError
from deltalog.txn.operations import Update
from deltalog.txn.row_tracking import tracked_fields

if TYPE_CHECKING:
    from deltalog.data.filters import FilterLike
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["UpdateResult", "new_images", "update"]


@dataclass(frozen=True)
class UpdateResult:
    """What an UPDATE did; ``version`` is ``None`` when no row matched (nothing is committed).

    Example:
        >>> UpdateResult(version=None).num_updated_rows
        0
    """

    version: int | None
    num_updated_rows: int = 0
    num_removed_files: int = 0
    num_added_files: int = 0
    num_deletion_vectors_added: int = 0
    num_copied_rows: int = 0
    used_deletion_vectors: bool = False


def update(
    table: TableHandle,
    predicate: FilterLike | None,
    set: Mapping[str, Any],
    *,
    use_deletion_vectors: bool | None = None,
    clock: Callable[[], int] | None = None,
) -> UpdateResult:
    """Set columns of the rows matching ``predicate`` (a SQL condition string, ``(column, op, value)``
    conditions joined by AND, or a ``pyarrow.compute`` expression; ``None``: every row) in one ``UPDATE``
    commit. ``set`` maps top-level column names to literal values, or to SQL (``deltalog.sql_expr``) or
    ``pyarrow.compute`` expressions of the old row.

    Example:
        >>> update(deltalog.Table("/data/t"), None, {"flag": True}).version   # doctest: +SKIP
        4
        >>> update(deltalog.Table("/data/t"), "id < 10", {"v": deltalog.sql_expr("v * 2")}).version
        ... # doctest: +SKIP
        5
    """
    snap = table.snapshot()
    assignments = _assignments(snap, set)
    txn, conditions, expression, dvs = begin_dml(
        table, snap, Update(predicate=describe_predicate(predicate)), predicate,
        use_deletion_vectors=use_deletion_vectors, clock=clock,
    )
    candidates = txn.read_candidates(conditions)  # a SQL filter's conditions are implied by it
    tracked = tracked_fields(snap.protocol, snap.metadata)  # updated rows keep their ids
    record = records_changes(snap)
    writer = DmlWriter(table, snap, txn, tracked)
    updated = copied = removed = dv_count = 0
    with txn.discard_unless_committed(writer.discard):
        for group in file_groups(candidates.to_pylist()):  # one group of files in memory at a time
            group_removed: list[dict[str, Any]] = []
            dv_files: list[tuple[dict[str, Any], np.ndarray]] = []
            out: list[pa.Table] = []
            changes: list[pa.Table] = []
            probed = map_files(lambda r: file_matches(snap, r, conditions, expression, every_column=True), group)
            for row, found in zip(group, probed, strict=True):
                if found is None:
                    continue
                data, keep, hit = found
                if tracked is not None:
                    data = with_row_tracking_columns(snap, row, data, (tracked[0].name, tracked[1].name))
                updated += int(hit.sum())
                group_removed.append(row)
                old = data.filter(pa.array(hit))
                new = new_images(snap, old, assignments, tracked)
                out.append(new)
                if record:  # the change data feed is on: every updated row's old and new values
                    changes += [change_rows(old, "update_preimage", snap.schema),
                                change_rows(new, "update_postimage", snap.schema)]
                copied += keep_rest(row, data, keep & ~hit, dvs, dv_files, out)
            writer.stage(group_removed, dv_files, out, changes)
            removed, dv_count = removed + len(group_removed), dv_count + len(dv_files)
        if not removed:
            return UpdateResult(version=None, used_deletion_vectors=dvs)
        done = writer.commit({"numUpdatedRows": updated, "numRemovedFiles": removed, "numCopiedRows": copied,
                              "numDeletionVectorsAdded": dv_count})
    return UpdateResult(
        version=done.version, num_updated_rows=updated, num_removed_files=removed,
        num_added_files=writer.added, num_deletion_vectors_added=dv_count, num_copied_rows=copied,
        used_deletion_vectors=dvs,
    )


def _assignments(snap: Snapshot, values: Any) -> dict[str, Any]:
    """``set`` checked: a non-empty mapping of existing, assignable top-level columns (resolved
    case-insensitively, as Delta resolves names) to values."""
    from deltalog.txn.identity import identity_columns

    if not isinstance(values, Mapping) or not values:
        raise InvalidArgumentError(
            f"set must be a non-empty dict of column name to value or pyarrow expression, got {values!r}",
            table=snap.table, version=snap.version,
        )
    by_lower = {f.name.lower(): f.name for f in snap.schema.fields}
    identity = {c.name.lower() for c in identity_columns(snap.schema, table=snap.table)}
    out: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str) or key.lower() not in by_lower:
            raise InvalidArgumentError(
                f"[DELTA_COLUMN_NOT_FOUND] cannot update column {key!r}: the table has columns "
                f"{[f.name for f in snap.schema.fields]} (nested fields cannot be set by the kernel's UPDATE)",
                table=snap.table, version=snap.version,
            )
        if key.lower() in identity:
            raise InvalidArgumentError(
                f"[DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] column {by_lower[key.lower()]!r} is an identity "
                "column and cannot be updated",
                table=snap.table, version=snap.version,
            )
        if isinstance(value, Expression):  # checked on the table's columns before any file is read
            try:
                value.evaluate(snap.schema.to_arrow_schema().empty_table())
            except UnsupportedExpressionError as exc:
                raise InvalidArgumentError(
                    f"cannot set column {by_lower[key.lower()]!r} to {value.sql!r}: {exc.message}",
                    table=snap.table, version=snap.version,
                ) from None
        out[by_lower[key.lower()]] = value
    return out


def new_images(
    snap: Snapshot, old: pa.Table, assignments: Mapping[str, Any], tracked: Any
) -> pa.Table:
    """The updated rows: assignments (literals, SQL or pyarrow expressions evaluated on the old images, or
    arrays of the new values, one per row) cast to each column's type, generated columns recomputed,
    constraints checked; row ids kept, commit versions left to the new file.

    Example:
        >>> new_images(snap, old_rows, {"v": pa.array([1, 2])}, None).column("v").to_pylist()  # doctest: +SKIP
        [1, 2]
    """
    import pyarrow.dataset as ds

    from deltalog.txn.constraints import check_table_constraints
    from deltalog.txn.generated import fill_generated, generated_columns

    names = [f.name for f in snap.schema.fields]
    values: dict[str, Any] = {}
    exprs = {k: v for k, v in assignments.items() if isinstance(v, pc.Expression)}
    evaluated = ds.dataset(old.select(names)).to_table(columns=exprs) if exprs else None
    for name, value in assignments.items():
        target = old.schema.field(name).type
        try:
            if isinstance(value, pc.Expression):
                assert evaluated is not None
                values[name] = pc.cast(evaluated.column(name), target)
            elif isinstance(value, Expression):
                values[name] = pc.cast(value.evaluate(old.select(names)), target)
            elif isinstance(value, (pa.Array, pa.ChunkedArray)):
                values[name] = pc.cast(value, target)
            else:
                values[name] = pa.repeat(pa.scalar(value).cast(target) if value is not None
                                         else pa.scalar(None, target), old.num_rows)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, UnsupportedExpressionError) as exc:
            hint = f"; a string is a literal value -- for a SQL expression write deltalog.sql_expr({value!r})" \
                if isinstance(value, str) else ""
            raise InvalidArgumentError(
                f"[DELTA_CAST_FAILURE] cannot set column {name!r} ({target}) to {value!r}: {exc}{hint}",
                table=snap.table, version=snap.version,
            ) from None
    new = old
    for name, col in values.items():
        new = new.set_column(new.schema.get_field_index(name), name, col)
    generated = set(generated_columns(snap.schema))
    if generated:  # recomputed from the new values; an assigned one must agree with its expression
        unassigned = generated - set(assignments)
        filled = fill_generated(new.select([n for n in names if n not in unassigned]), snap.schema,
                                table=snap.table)
        for name in unassigned:
            new = new.set_column(new.schema.get_field_index(name), name, filled.column(name))
    check_table_constraints(new.select(names), snap.metadata, table_name=snap.table)
    if tracked is not None:  # the new images get the commit's version (defaultRowCommitVersion)
        version = tracked[1].name
        new = new.set_column(new.schema.get_field_index(version), version,
                             pa.nulls(new.num_rows, new.schema.field(version).type))
    return new
