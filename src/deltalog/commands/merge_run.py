"""The execution of the kernel's MERGE (the builder is :mod:`deltalog.commands.merge`).

The join condition's equalities of a target and a source column are the keys of an Arrow hash join between
the source and the live rows of the candidate target files; its other ``AND`` terms are checked on each pair.
Clause conditions and assignments are SQL (:mod:`deltalog.data.sql_expr`) evaluated on a table holding the
target row as a struct named by the target alias, the source row as one named by the source alias, and the
names only one side has as plain columns. Each touched file is then handled as the kernel's UPDATE handles
it (:func:`deltalog.commands.update.new_images`, :class:`deltalog.commands.delete.DmlWriter`), the target
files a group at a time.

Example:
    >>> run_merge(table, source, "target.id = source.id", ("target", "source"),
    ...           [MergeClause("not_matched", "insert", None, None)]).num_target_rows_inserted  # doctest: +SKIP
    3
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.commands.delete import DmlWriter, begin_dml, file_groups, file_matches, records_changes
from deltalog.commands.merge_apply import (
    MergeCounts,
    apply_inserts,
    apply_to_targets,
    condition_mask,
    merge_metrics,
    stage_inserts,
    stage_targets,
)
from deltalog.data.filters import Condition
from deltalog.data.read import map_files, with_row_tracking_columns
from deltalog.data.sql_expr import Expression, SqlNode, SqlParser, UnsupportedExpressionError, conjuncts
from deltalog.data.write_schema import data_schema
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.column_mapping import with_column_mapping
from deltalog.protocol.schema_evolution import evolved_schema
from deltalog.txn.generated import generated_columns
from deltalog.txn.identity import identity_columns
from deltalog.txn.operations import Merge
from deltalog.txn.row_tracking import tracked_fields
from deltalog.txn.writer_features import is_true

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["MergeClause", "MergeResult", "run_merge"]

#: Partition keys with at most this many distinct source values prune by ``IN``; others by min/max.
_MAX_IN_VALUES = 1000


@dataclass(frozen=True)
class MergeClause:
    """One ``WHEN`` clause: ``kind`` is ``matched``, ``not_matched`` or ``not_matched_by_source``; ``action``
    ``update``, ``delete`` or ``insert``; ``updates`` maps target columns to SQL (``None``: every column
    from the source's of the same name, but ``except_cols``).

    Example:
        >>> MergeClause("matched", "delete", "source.op = 'D'", None).describe()
        {'actionType': 'delete', 'predicate': "source.op = 'D'"}
    """

    kind: str
    action: str
    predicate: str | None
    updates: Mapping[str, str] | None
    except_cols: tuple[str, ...] = ()

    def describe(self) -> dict[str, str]:
        """The clause as ``commitInfo`` records it.

        Example:
            >>> MergeClause("not_matched", "insert", None, None).describe()
            {'actionType': 'insert'}
        """
        out = {"actionType": self.action}
        if self.predicate is not None:
            out["predicate"] = self.predicate
        return out


@dataclass(frozen=True)
class MergeResult:
    """What a MERGE did; ``version`` is ``None`` when it changed nothing (nothing is committed).

    Example:
        >>> MergeResult(version=None).num_target_rows_updated
        0
    """

    version: int | None
    num_source_rows: int = 0
    num_target_rows_inserted: int = 0
    num_target_rows_updated: int = 0
    num_target_rows_deleted: int = 0
    num_target_rows_copied: int = 0
    num_target_files_added: int = 0
    num_target_files_removed: int = 0
    used_deletion_vectors: bool = False


class _Scope:
    """Builds the tables clause SQL is evaluated on, and checks references against them."""

    def __init__(self, aliases: tuple[str, str], target: pa.Schema, source: pa.Schema, loc: str):
        self.t_alias, self.s_alias = aliases
        self.t_names, self.s_names = list(target.names), list(source.names)
        self.empty = (target.empty_table(), source.empty_table())
        self.loc = loc
        t_low, s_low = {n.lower() for n in self.t_names}, {n.lower() for n in self.s_names}
        self.both = t_low & s_low

    def table(self, kind: str, target: pa.Table | None, source: pa.Table | None) -> pa.Table:
        cols: dict[str, Any] = {}
        if target is not None and kind != "not_matched":
            cols[self.t_alias] = _struct(target)
        if source is not None and kind != "not_matched_by_source":
            cols[self.s_alias] = _struct(source)
        aliases = {self.t_alias.lower(), self.s_alias.lower()}
        for side, names in ((target, self.t_names), (source, self.s_names)):
            if side is None or (kind == "not_matched" and side is target) or \
                    (kind == "not_matched_by_source" and side is source):
                continue
            for n in names:
                if n.lower() in aliases or (kind == "matched" and n.lower() in self.both):
                    continue  # ambiguous: qualify it
                cols[n] = side.column(n)
        return pa.table(cols)

    def compile(self, sql: str, kind: str, what: str, *, condition: bool = False) -> Expression:
        """``sql`` compiled and checked on the clause's (empty) rows before anything is read: its columns
        exist and are not ambiguous, its literals fit, and a ``condition`` gives booleans."""
        try:
            expr = Expression(sql, SqlParser(sql).parse())
        except UnsupportedExpressionError as exc:
            raise InvalidArgumentError(f"merge {what} {sql!r}: {exc.message}", table=self.loc) from None
        known = {self.t_alias.lower(), self.s_alias.lower(), *(n.lower() for n in self.t_names + self.s_names)}
        for path in expr.columns():
            if len(path) > 1 and path[0].lower() not in known:
                raise InvalidArgumentError(
                    f"merge {what} {sql!r}: {'.'.join(path)!r} names no alias of this merge; its aliases are "
                    f"{self.t_alias!r} (the target) and {self.s_alias!r} (the source) -- choose others with "
                    "merge(..., target_alias=..., source_alias=...)", table=self.loc)
            if kind == "matched" and len(path) == 1 and path[0].lower() in self.both:
                raise InvalidArgumentError(
                    f"merge {what} {sql!r}: column {path[0]!r} is ambiguous, both target and source have it; "
                    f"write {self.t_alias}.{path[0]} or {self.s_alias}.{path[0]}",
                    table=self.loc,
                )
        values = self.evaluate(expr, self.table(kind, *self.empty), what)
        if condition and not (pa.types.is_boolean(values.type) or pa.types.is_null(values.type)):
            raise InvalidArgumentError(f"merge {what} {sql!r} gives {values.type} values, not true or false",
                                       table=self.loc)
        return expr

    def evaluate(self, expr: Expression, data: pa.Table, what: str) -> pa.Array:
        try:
            out = expr.evaluate(data)
        except UnsupportedExpressionError as exc:
            raise InvalidArgumentError(f"merge {what} {expr.sql!r}: {exc.message}", table=self.loc) from None
        return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _struct(rows: pa.Table) -> pa.StructArray:
    return pa.StructArray.from_arrays([c.combine_chunks() for c in rows.columns], names=rows.column_names)


def _join_keys(predicate: str, scope: _Scope, loc: str) -> tuple[list[tuple[str, str]], Expression | None]:
    """The join condition's ``target.col = source.col`` terms, and the rest (checked on each pair)."""
    node = scope.compile(predicate, "matched", "join condition", condition=True).node
    t_names = {n.lower(): n for n in scope.t_names}
    s_names = {n.lower(): n for n in scope.s_names}

    def side(n: SqlNode) -> tuple[str, str] | None:
        if n.kind != "col":
            return None
        path = [p.lower() for p in n.args]
        if len(path) == 2 and path[0] == scope.t_alias.lower() and path[1] in t_names:
            return "t", t_names[path[1]]
        if len(path) == 2 and path[0] == scope.s_alias.lower() and path[1] in s_names:
            return "s", s_names[path[1]]
        if len(path) == 1 and path[0] in t_names and path[0] not in s_names:
            return "t", t_names[path[0]]
        if len(path) == 1 and path[0] in s_names and path[0] not in t_names:
            return "s", s_names[path[0]]
        return None

    keys: list[tuple[str, str]] = []
    rest: list[SqlNode] = []
    for term in conjuncts(node):
        a = side(term.args[1]) if term.kind == "binary" and term.args[0] == "=" else None
        b = side(term.args[2]) if term.kind == "binary" and term.args[0] == "=" else None
        if a and b and {a[0], b[0]} == {"t", "s"}:
            keys.append((a[1], b[1]) if a[0] == "t" else (b[1], a[1]))
        else:
            rest.append(term)
    if not keys:
        raise InvalidArgumentError(
            f"merge join condition {predicate!r} needs an equality of a target column and a source column "
            f"(e.g. {scope.t_alias}.id = {scope.s_alias}.id)",
            table=loc,
        )
    if not rest:
        return keys, None
    residual = rest[0]
    for term in rest[1:]:
        residual = SqlNode("binary", ("AND", residual, term))
    return keys, Expression(predicate, residual)


def _pairs(target: pa.Table, source: pa.Table, keys: list[tuple[str, str]], loc: str) -> tuple[np.ndarray, np.ndarray]:
    """(target row, source row) index pairs whose keys are equal (null keys never match)."""
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    for i, (tk, sk) in enumerate(keys):
        ttype = target.schema.field(tk).type
        try:
            right[f"k{i}"] = pc.cast(source.column(sk), ttype)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise InvalidArgumentError(
                f"merge join key source.{sk} ({source.schema.field(sk).type}) cannot be compared with "
                f"target.{tk} ({ttype}): {exc}", table=loc) from None
        left[f"k{i}"] = target.column(tk)
    left["__t"] = pa.array(np.arange(target.num_rows, dtype=np.int64))
    right["__s"] = pa.array(np.arange(source.num_rows, dtype=np.int64))
    lt, rt = pa.table(left), pa.table(right)
    for name in list(left)[:-1]:  # SQL: a null key matches nothing
        lt = lt.filter(pc.is_valid(lt.column(name)))
        rt = rt.filter(pc.is_valid(rt.column(name)))
    if lt.num_rows == 0 or rt.num_rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    joined = lt.join(rt, keys=list(left)[:-1], join_type="inner")
    t = joined.column("__t").to_numpy()
    s = joined.column("__s").to_numpy()
    order = np.lexsort((s, t))
    return t[order], s[order]


def _key_conditions(source: pa.Table, keys: list[tuple[str, str]], snap: Snapshot) -> list[Condition]:
    """Conditions the target rows a source key can match satisfy (to prune and skip target files)."""
    logical = snap.schema.to_arrow_schema()
    for tk, sk in keys:
        ttype = logical.field(tk).type
        if not (pa.types.is_integer(ttype) or pa.types.is_floating(ttype) or pa.types.is_string(ttype)
                or pa.types.is_date(ttype) or pa.types.is_timestamp(ttype) or pa.types.is_decimal(ttype)):
            continue
        try:
            values = pc.drop_null(pc.cast(source.column(sk), ttype))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return []
        if len(values) == 0:
            continue
        if tk in snap.partition_columns:
            distinct = pc.unique(values)
            if len(distinct) <= _MAX_IN_VALUES:
                return [Condition(tk, "in", tuple(distinct.to_pylist()))]
        bounds = pc.min_max(values)
        return [Condition(tk, ">=", bounds["min"].as_py()), Condition(tk, "<=", bounds["max"].as_py())]
    return []


def _evolved(snap: Snapshot, source: pa.Table, clauses: Sequence[MergeClause], loc: str) -> Snapshot:
    """``snap`` under the schema the merge evolves it to (itself when nothing changes): new columns and
    struct fields get column ids and physical names, under column mapping, before any file is written."""
    star = any(c.action != "delete" and c.updates is None for c in clauses)
    keys = [k for c in clauses if c.updates is not None for k in c.updates if isinstance(k, str)]
    schema = evolved_schema(snap.schema, data_schema(source.schema, table=loc), star=star, keys=keys,
                            widen=is_true(snap.metadata.configuration, "delta.enableTypeWidening"))
    if schema is snap.schema:
        return snap
    md = with_column_mapping(replace(snap.metadata, schemaString=schema.to_json()), snap.metadata, table=loc)
    return snap.with_metadata(md)


def _checked_clauses(clauses: Sequence[MergeClause], scope: _Scope, snap: Snapshot, loc: str, *, evolve: bool
                     ) -> list[tuple[MergeClause, Expression | None, dict[str, Expression]]]:
    """Each clause with its compiled condition and assignments (``update_all`` / ``insert_all`` spelled out;
    with schema evolution (``evolve``) they leave out the target columns the source lacks, as delta-spark)."""
    generated = {n.lower() for n in generated_columns(snap.schema)}
    identities = {c.name.lower(): c for c in identity_columns(snap.schema, table=loc)}
    identity = set(identities)
    t_names = {n.lower(): n for n in scope.t_names}
    s_names = {n.lower(): n for n in scope.s_names}
    out = []
    for clause in clauses:
        cond = scope.compile(clause.predicate, clause.kind, "condition", condition=True) \
            if clause.predicate is not None else None
        sets: dict[str, Expression] = {}
        if clause.action != "delete":
            if clause.updates is None:
                skip = {c.lower() for c in clause.except_cols} | generated | identity
                wanted = [n for n in scope.t_names if n.lower() not in skip]
                missing = [n for n in wanted if n.lower() not in s_names]
                if evolve:
                    wanted = [n for n in wanted if n.lower() in s_names]
                elif missing:
                    raise InvalidArgumentError(
                        f"merge {clause.action}_all: the source has no column {missing[0]!r} (source columns: "
                        f"{scope.s_names}); name the columns with when_..._{clause.action}(updates) instead, or "
                        "merge with merge_schema=True",
                        table=loc)
                if not wanted:
                    raise InvalidArgumentError(f"merge {clause.action}_all leaves no column to set", table=loc)
                updates = {n: f"`{scope.s_alias}`.`{s_names[n.lower()]}`" for n in wanted}
            else:
                updates = dict(clause.updates)
            for column, sql in updates.items():
                if not isinstance(column, str) or column.lower() not in t_names:
                    raise InvalidArgumentError(
                        f"[DELTA_COLUMN_NOT_FOUND] merge cannot set column {column!r}: the target has columns "
                        f"{scope.t_names}", table=loc)
                explicit = identities.get(column.lower())
                if explicit is not None and clause.action == "insert" and not explicit.allow_explicit:
                    raise InvalidArgumentError(
                        f"[DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED] merge cannot insert values into "
                        f"column {explicit.name!r}: it is GENERATED ALWAYS AS IDENTITY; leave it out of the insert "
                        "and Delta generates its values", table=loc)
                if column.lower() in generated or (explicit is not None and clause.action != "insert"):
                    kind = "a generated column" if column.lower() in generated else "an identity column"
                    raise InvalidArgumentError(
                        f"merge cannot set column {t_names[column.lower()]!r}: it is {kind}, computed by Delta",
                        table=loc)
                if not isinstance(sql, str):
                    raise InvalidArgumentError(
                        f"merge assignment of {column!r} must be a SQL expression string, got {sql!r} "
                        "(write a literal as SQL: '0', \"'text'\")", table=loc)
                sets[t_names[column.lower()]] = scope.compile(sql, clause.kind, f"assignment of {column!r}")
        out.append((clause, cond, sets))
    return out


def run_merge(
    table: TableHandle, source: pa.Table, predicate: str, aliases: tuple[str, str],
    clauses: Sequence[MergeClause], *, use_deletion_vectors: bool | None = None,
    clock: Callable[[], int] | None = None, merge_schema: bool = False,
) -> MergeResult:
    """Run a MERGE (see :mod:`deltalog.commands.merge`) in one commit; ``merge_schema`` evolves the target's
    schema with the source's (:mod:`deltalog.protocol.schema_evolution`) in the same commit.

    Example:
        >>> run_merge(t, src, "target.id = source.id", ("target", "source"),
        ...           [MergeClause("matched", "delete", None, None)]).num_target_rows_deleted  # doctest: +SKIP
        2
    """
    loc = table.location
    read = table.snapshot()
    if len({n.lower() for n in source.column_names}) != source.num_columns:
        raise InvalidArgumentError(f"merge source has repeated column names: {source.column_names}", table=loc)
    snap = _evolved(read, source, clauses, loc) if merge_schema else read  # the rows are read and written in it
    names = [f.name for f in snap.schema.fields]
    scope = _Scope(aliases, snap.schema.to_arrow_schema(), source.schema, loc)
    keys, residual = _join_keys(predicate, scope, loc)
    checked = _checked_clauses(clauses, scope, snap, loc, evolve=merge_schema)
    op = Merge(
        predicate=predicate,
        matched_predicates=tuple(c.describe() for c in clauses if c.kind == "matched"),
        not_matched_predicates=tuple(c.describe() for c in clauses if c.kind == "not_matched"),
        not_matched_by_source_predicates=tuple(c.describe() for c in clauses if c.kind == "not_matched_by_source"),
    )
    txn, _, _, dvs = begin_dml(table, read, op, None, use_deletion_vectors=use_deletion_vectors, clock=clock)
    if snap is not read:
        txn.update_metadata(snap.metadata)
    by_source = any(c.kind == "not_matched_by_source" for c in clauses)
    candidates = txn.read_candidates([] if by_source else _key_conditions(source, keys, snap))
    tracked = tracked_fields(snap.protocol, snap.metadata)
    record = records_changes(snap)
    writer = DmlWriter(table, snap, txn, tracked)
    counts = MergeCounts()
    matched_source = np.zeros(source.num_rows, dtype=bool)
    with txn.discard_unless_committed(writer.discard):
        for group in file_groups(candidates.to_pylist()):  # one group of target files in memory at a time
            files, target, file_of, pos_of = _read_group(snap, group, names, tracked)
            t_idx, s_idx = _pairs(target, source, keys, loc)
            if residual is not None and len(t_idx):
                pair_rows = scope.table("matched", target.take(pa.array(t_idx)), source.take(pa.array(s_idx)))
                ok = condition_mask(scope.evaluate(residual, pair_rows, "join condition"), "join condition", loc)
                t_idx, s_idx = t_idx[ok], s_idx[ok]
            matched_source[s_idx] = True
            plan = apply_to_targets(scope, checked, target, source, t_idx, s_idx, loc)
            if plan.changed:
                stage_targets(writer, plan, files, file_of, pos_of, dvs, record, counts)
        inserted = apply_inserts(scope, checked, snap.schema.to_arrow_schema(), source,
                                 np.flatnonzero(~matched_source), loc)
        # an insert-only merge is an append: readers take its added files as inserts, no change files
        stage_inserts(writer, inserted, record and counts.removed > 0, counts)
        if not counts.removed and not counts.inserted and snap is read:  # an evolved schema is still committed
            return MergeResult(version=None, num_source_rows=source.num_rows, used_deletion_vectors=dvs)
        done = writer.commit(merge_metrics(counts, source.num_rows),
                             metric_names=("numTargetFilesAdded", "numTargetChangeFilesAdded"))
    return MergeResult(
        version=done.version, num_source_rows=source.num_rows, num_target_rows_inserted=counts.inserted,
        num_target_rows_updated=counts.updated, num_target_rows_deleted=counts.deleted,
        num_target_rows_copied=counts.copied, num_target_files_added=writer.added,
        num_target_files_removed=counts.removed, used_deletion_vectors=dvs,
    )


def _read_group(snap: Snapshot, rows: list[dict[str, Any]], names: list[str], tracked: Any
                ) -> tuple[list[tuple[dict[str, Any], pa.Table, np.ndarray]], pa.Table, np.ndarray, np.ndarray]:
    """The live rows of a group of files (read side by side): per file ``(add, rows, live mask)``, the live
    rows of all as one table, and per row its file and its position in that file."""
    probed = map_files(lambda r: file_matches(snap, r, [], None, every_column=True), rows)
    files: list[tuple[dict[str, Any], pa.Table, np.ndarray]] = []
    for row, found in zip(rows, probed, strict=True):
        if found is not None:
            data, keep, _ = found
            if tracked is not None:
                data = with_row_tracking_columns(snap, row, data, (tracked[0].name, tracked[1].name))
            files.append((row, data, keep))
    positions = [np.flatnonzero(keep) for _, _, keep in files]
    parts = [data.select(names).take(pa.array(pos)) for (_, data, _), pos in zip(files, positions, strict=True)]
    target = pa.concat_tables(parts) if parts else snap.schema.to_arrow_schema().empty_table()
    file_of = np.concatenate([np.full(len(p), i, dtype=np.int64) for i, p in enumerate(positions)]) \
        if positions else np.zeros(0, dtype=np.int64)
    pos_of = np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
    return files, target, file_of, pos_of
