"""How a MERGE runs (:class:`MergeRun`, one execution of a :class:`MergeSpec`, what a
:class:`~deltalog.spark.dml.merge.MergeBuilder` was asked to do): the clauses as codes, the target scan, the
join and the jobs described in :mod:`deltalog.spark.dml.merge`. The one-job path for a single candidate file
is a subclass's (:class:`~deltalog.spark.dml.merge_one_pass.OnePassRun`), which the builder runs.

Example:
    >>> MergeRun(spec).run().metric("numTargetRowsUpdated")                         # doctest: +SKIP
    3
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from deltalog.commands.delete import uses_deletion_vectors
from deltalog.errors import DeltaError, InvalidArgumentError, MultipleSourceRowMatchError
from deltalog.protocol.column_mapping import with_column_mapping
from deltalog.protocol.schema import StructField, parse_schema
from deltalog.spark.columns.defaults import default_value
from deltalog.spark.columns.identity import BOUND, observe_files
from deltalog.spark.common.conf import auto_merge
from deltalog.spark.common.core import load_snapshot, open_table, quoted, spark_type
from deltalog.spark.common.jvm_calls import sql_column
from deltalog.spark.dml.assign import (
    assign,
    combine,
    expression,
    identity_assignments,
    resolve_column,
    resolve_path,
)
from deltalog.spark.dml.broadcast import broadcast_source
from deltalog.spark.dml.evolve import evolved_target, widened_struct
from deltalog.spark.dml.merge_keys import KeyPass, merge_candidates
from deltalog.spark.dml.merge_spec import (
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    Clause,
    MergeSpec,
    action_sql,
    check_clauses,
)
from deltalog.spark.jobs.change_files import change_rows, records_changes, stage_change_files, write_change_files
from deltalog.spark.jobs.staged import (
    DmlResult,
    DvOutcome,
    Staged,
    Timer,
    apply_dv_results,
    check_can_write,
    refuse_append_only,
    run_dv_job,
    spark_error,
    write_rows,
)
from deltalog.spark.layout.auto_optimize import compact_after
from deltalog.spark.reads.dv_scan import ROW_KEY
from deltalog.spark.reads.row_ids import tracked_fields
from deltalog.spark.reads.scan import keyed_rows
from deltalog.spark.reads.target import (
    FILE,
    ROW,
    describe,
    file_uris,
    live_rows,
    recorded_join_predicate,
    recorded_predicate,
    shared_probe,
    target_scan,
)
from deltalog.spark.writes.idempotent import claim_session_txn
from deltalog.txn.defaults import default_columns
from deltalog.txn.identity import IdentityGenerator, identity_columns, with_high_water_marks
from deltalog.txn.operations import Merge
from deltalog.txn.transaction import Transaction
from deltalog.txn.writer_features import is_true

__all__ = ["MATCHED", "NOT_MATCHED", "NOT_MATCHED_BY_SOURCE", "Clause", "MergeRun", "MergeSpec"]

DataFrame = Any
Column = Any

_CODE_BASE = {MATCHED: 0, NOT_MATCHED_BY_SOURCE: 1000, NOT_MATCHED: 2000}
_COPY, _DROP = -1, -2
#: the per-clause metrics of the target rows a WHEN MATCHED / NOT MATCHED BY SOURCE clause acted on
_CLAUSE_METRICS = ("numTargetRowsMatchedUpdated", "numTargetRowsMatchedDeleted",
                   "numTargetRowsNotMatchedBySourceUpdated", "numTargetRowsNotMatchedBySourceDeleted")
_T_PRESENT, _S_PRESENT, _ACTION = "__deltalog_target", "__deltalog_source", "__deltalog_action"


@dataclass(frozen=True)
class FirstCounts:
    """What a MERGE's first job finds: the touched candidate files (a clause acted on one of their rows), the
    files with a matched row, and the target rows each clause code acted on."""

    touched: set[str]
    matched: set[str]
    per_code: dict[int, int]


class MergeRun:
    """One execution of a :class:`MergeSpec` (see the module docstring)."""

    #: the joined rows' column holding the code of the clause that acts on the row (< 0: copy or drop)
    ACTION = _ACTION
    #: the target rows' column that is true on every target row (null on a source row without a match)
    TARGET = _T_PRESENT
    #: the source rows' column that is true on every source row (null on a target row without a match)
    SOURCE = _S_PRESENT
    #: the smallest code: a row that is neither written nor copied (an unmatched source row not inserted)
    DROP = _DROP

    def __init__(self, b: MergeSpec) -> None:
        from pyspark.sql import functions as F

        self.b = b
        #: withSchemaEvolution(), or delta-spark's spark.databricks.delta.schema.autoMerge.enabled
        self.evolve = b.evolve or auto_merge(b.spark)
        self.timer = Timer()
        self.table = open_table(b.path)
        self.snap = load_snapshot(self.table.location)
        loc = self.table.location
        check_clauses(b.clauses, loc)
        self.clauses = b.clauses
        self.matched = [c for c in self.clauses if c.kind == MATCHED]
        self.not_matched = [c for c in self.clauses if c.kind == NOT_MATCHED]
        self.by_source = [c for c in self.clauses if c.kind == NOT_MATCHED_BY_SOURCE]
        self.codes = {
            id(c): _CODE_BASE[c.kind] + i
            for kind in _CODE_BASE
            for i, c in enumerate([c for c in self.clauses if c.kind == kind])
        }
        modifies = bool(self.matched or self.by_source)
        if modifies:
            refuse_append_only(self.snap, "MERGE")
        check_can_write(self.snap)
        target = self.snap.schema
        star = any(c.star for c in self.clauses)
        keys = [k for c in self.clauses for k in (c.assignments or {})]
        widen = is_true(self.snap.metadata.configuration, "delta.enableTypeWidening")
        self.schema = evolved_target(target, b.source, star=star, keys=keys, alias=b.alias, widen=widen) \
            if self.evolve else target
        changed = self.schema is not target
        self.metadata = replace(self.snap.metadata, schemaString=self.schema.to_json()) if changed \
            else self.snap.metadata
        if changed:  # under column mapping the new columns get ids and physical names before any file is written
            self.metadata = with_column_mapping(self.metadata, self.snap.metadata, table=self.table.location)
            self.schema = parse_schema(self.metadata.schemaString or "")
        self.target_names = set(target.field_names)
        #: the target's own type of each column whose struct type gained fields (its values are widened)
        self.widened = {f.name: f.type for f, g in zip(target.fields, self.schema.fields) if f.type != g.type}
        self.source_names = {n.lower(): n for n in b.source.columns}
        self.identity = IdentityGenerator(identity_columns(target, table=self.table.location), [],
                                          table=self.table.location)
        self.join_condition = F.expr(b.condition) if isinstance(b.condition, str) else b.condition
        self.source_rows: int | None = None
        #: the files the ON condition alone leaves, and whether the write planned ahead for them was (or would
        #: have been) run; ``None`` where no one-job write was considered
        self.files_on: pa.Table | None = None
        self.ahead_fits: bool | None = None
        #: what the first job finds (see :meth:`_summary`) when another way already counted it
        self.first_counts: FirstCounts | None = None
        #: the table probe the predicates are analysed against, and a join of it (or of the target rows) with
        #: the source on the ON condition, whose analysed condition is recorded (:meth:`_on_predicate`)
        self._probe: DataFrame | None = None
        self.joined_on: DataFrame | None = None

    # --------------------------------------------------------------------------------- expressions

    def _source_col(self, name: str) -> str | None:
        return self.source_names.get(name.lower())

    def _assignments(self, c: Clause, T: DataFrame, S: DataFrame) -> dict[str, Column]:
        """Target column -> expression of an update / insert clause (columns it leaves alone are absent)."""
        if not c.star:
            assert c.assignments is not None
            what = f"MERGE {c.label()}"
            qualifiers = [self.b.alias] if self.b.alias else []
            by_column: dict[str, list[tuple[tuple[str, ...], Column]]] = {}
            for key, value in c.assignments.items():
                path: tuple[str, ...] = ()
                if c.action == "insert":
                    f = resolve_column(key, self.schema, what=what, qualifiers=qualifiers)
                else:
                    f, path = resolve_path(key, self.schema, what=what, qualifiers=qualifiers)
                if not path and any(not p for p, _ in by_column.get(f.name, [])):
                    raise InvalidArgumentError(f"{what}: column {f.name!r} is assigned more than once")
                by_column.setdefault(f.name, []).append((path, expression(value, what=f"{what} [{key!r}]")))
            return {name: assigned[0][1] if len(assigned) == 1 and not assigned[0][0] else
                    combine(self.schema.field(name), assigned, T[quoted(name)], what=what)
                    for name, assigned in by_column.items()}
        out = {}
        for f in self.schema.fields:
            src = self._source_col(f.name)
            if src is not None:
                out[f.name] = S[quoted(src)]
            elif not self.evolve:
                raise InvalidArgumentError(
                    f"[DELTA_MERGE_UNRESOLVED_EXPRESSION] MERGE {c.label()}: target column {f.name!r} has no "
                    f"source column of that name (source columns: {list(self.source_names.values())}); "
                    "use explicit assignments or withSchemaEvolution()",
                    table=self.table.location,
                )
        return out

    def _sides_need_target(self) -> bool:
        return any(c.kind == NOT_MATCHED_BY_SOURCE and not (c.star and c.condition is None) for c in self.clauses)

    def _check_sides(self, T: DataFrame | None, S: DataFrame) -> None:
        """A NOT MATCHED clause sees only the source, a NOT MATCHED BY SOURCE clause only the target (``T``,
        needed only when :meth:`_sides_need_target`)."""
        for c in self.clauses:
            if c.kind == MATCHED or (c.star and c.condition is None):
                continue
            side: Any = S if c.kind == NOT_MATCHED else T
            name = "source" if c.kind == NOT_MATCHED else "target"
            exprs = [expression(v, what="MERGE") for v in (c.assignments or {}).values()]
            if c.condition is not None:
                exprs.append(expression(c.condition, what="MERGE condition"))
            try:
                _ = side.select(*exprs).schema
            except Exception as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise InvalidArgumentError(
                    f"MERGE {c.label()} may only refer to {name} columns: {first}", table=self.table.location
                ) from None

    def _condition(self, c: Clause) -> Column:
        from pyspark.sql import functions as F

        if c.condition is None:
            return F.lit(True)
        return F.coalesce(expression(c.condition, what="MERGE clause condition"), F.lit(False))

    def _action(self, flags: Mapping[str, Column], clauses: Sequence[Clause], default: Column) -> Column:
        from pyspark.sql import functions as F

        chain: Column = None
        for c in clauses:
            test = flags[c.kind] & self._condition(c)
            chain = F.when(test, F.lit(self.codes[id(c)])) if chain is None else chain.when(test, self.codes[id(c)])
        return default if chain is None else chain.otherwise(default)

    def _outputs(self, frame: DataFrame, T: DataFrame | None, S: DataFrame) -> list[Column]:
        """The final columns: each update / insert clause's value where its code was chosen, else the
        target's value (null for inserted rows and for new columns)."""
        from pyspark.sql import functions as F

        writers = [c for c in self.clauses if c.action in ("update", "insert")]
        assigned = {id(c): self._assignments(c, T, S) for c in writers}
        flat = [(id(c), name, col) for c in writers for name, col in assigned[id(c)].items()]
        by_id = {id(c): c for c in writers}
        if all(by_id[cid].star for cid, _, _ in flat):  # source columns: their types are the source's
            of_source = {f.name: f.dataType for f in self.b.source.schema.fields}  # S's, known without a call
            types = [of_source[self._source_col(name) or name] for _, name, _ in flat]
        else:  # expressions: typed by analysing them against the joined rows
            typed = frame.select(*[col.alias(f"_{i}") for i, (_, _, col) in enumerate(flat)]).schema if flat else None
            types = [f.dataType for f in typed.fields] if typed is not None else []
        values: dict[tuple[int, str], Column] = {}
        for i, (cid, name, col) in enumerate(flat):
            what = f"MERGE {by_id[cid].label()}"
            values[(cid, name)] = assign(col, types[i], self.schema.field(name), what=what, evolve=self.evolve)
        identity_assignments(self.schema, self.identity, writers, values, table=self.table.location)
        for c in writers:  # inserted rows: a defaulted column the clause leaves out gets its default
            for name in default_columns(self.schema) if c.action == "insert" else ():
                values.setdefault((id(c), name), default_value(self.schema, name))
        out = []
        action = F.col(_ACTION)
        for f in self.schema.fields:
            if T is not None and f.name in self.target_names:
                default = self.target_value(T, f)
            else:
                default = F.lit(None).cast(spark_type(f.type))
            chain: Column = None
            for c in writers:
                v = values.get((id(c), f.name))
                if v is None:
                    continue
                test = action == self.codes[id(c)]
                chain = F.when(test, v) if chain is None else chain.when(test, v)
            out.append((default if chain is None else chain.otherwise(default)).alias(f.name))
        return out

    def target_value(self, T: DataFrame, f: StructField) -> Column:
        """Target column ``f`` of the joined rows, in the (possibly evolved) table type ``f.type``: a struct
        that gained fields from the source gets them as nulls."""
        col = T[quoted(f.name)]
        old = self.widened.get(f.name)
        return col if old is None else widened_struct(col, old, f.type)

    def _identity_metadata(self, files: list[Any]) -> None:
        if not self.identity:
            return
        observe_files(self.identity, files, partitions=BOUND)
        marks = self.identity.high_water_marks()
        if marks:
            self.metadata = with_high_water_marks(self.metadata, marks)

    # ---------------------------------------------------------------------------------------- run

    def run(self) -> DmlResult:
        b, snap = self.b, self.snap
        try:  # the source's key job runs while the driver plans (the recorded predicates, the target's scan)
            keypass = KeyPass(b.spark, snap, b.condition, b.source, alias=b.alias,
                              by_source=[c.condition for c in self.by_source], optional=self.keys_optional())
        except DeltaError:
            raise
        except Exception as exc:
            raise spark_error(exc, self.table.location) from None
        try:
            return self._run(keypass)
        finally:
            keypass.close()
            if self.ahead_fits is not None:
                keypass.remember(self.ahead_fits)

    def _run(self, keypass: KeyPass) -> DmlResult:
        from pyspark.sql import functions as F

        b, snap = self.b, self.snap
        self.txn = Transaction(self.table.store, snap, self._operation(), table=self.table.location)
        if not claim_session_txn(b.spark, self.txn):  # delta-spark's txnAppId/txnVersion session settings
            return DmlResult(None, {k: str(v) for k, v in self._metrics(0).items()})
        S = b.source.withColumn(_S_PRESENT, F.lit(True))
        if keypass.skipped:  # no pass counts the source rows: the job reading it does
            S = self.counted(S)
        self.files_on = keypass.files_on
        if (self.matched or self.by_source) and keypass.ahead_fits():
            self.plan_ahead(S, keypass.files_on)
        try:
            candidates = self._candidates(keypass)
        except DeltaError:
            raise
        except Exception as exc:
            raise spark_error(exc, self.table.location) from None
        # the keyed target scan is planned only where it is used (not by the one-job way)
        self._check_sides(self._target(candidates) if self._sides_need_target() else None, S)
        try:
            if not self.matched and not self.by_source:
                return self._insert_only(self._target(candidates), S)
            return self._rewrite(S, candidates)
        except DeltaError:
            raise
        except Exception as exc:
            raise spark_error(exc, self.table.location) from None

    def keys_optional(self) -> bool:
        """Whether this MERGE can do without the pass over the source's keys (see :class:`~deltalog.spark.dml.
        merge_keys.KeyPass`); not here (a subclass may).

        Example:
            >>> MergeRun(spec).keys_optional()                                             # doctest: +SKIP
            False
        """
        return False

    def counted(self, S: DataFrame) -> DataFrame:
        """``S`` (the source) with its rows counted by the job that reads it, where :meth:`keys_optional` and no
        pass counts them; ``S`` itself here.

        Example:
            >>> MergeRun(spec).counted(source) is source                                   # doctest: +SKIP
            True
        """
        return S

    def plan_ahead(self, S: DataFrame, files: Any) -> None:
        """Plan what can be planned before the source's keys are known, for ``files`` (what the ON condition
        alone leaves: the files read unless the keys prune some); nothing here (a subclass may).

        Example:
            >>> MergeRun(spec).plan_ahead(source, snap.add_files())                        # doctest: +SKIP
        """

    def _candidates(self, keypass: KeyPass) -> pa.Table:
        """The target files the merge reads, recorded as read (:func:`~deltalog.spark.dml.merge_keys.
        merge_candidates`); the pass over the source's keys counts its rows too."""
        b = self.b
        files, rows = merge_candidates(self.txn, self.snap, keypass, alias=b.alias)
        if rows is not None:
            self.source_rows = rows
        return files

    def _operation(self) -> Merge:
        """The MERGE with its predicates as delta-spark records them: analysed against the target (aliased as
        in the statement), the source, or both, as each clause sees them (see ``recorded_predicate``)."""
        from pyspark.sql import functions as F

        b = self.b
        target = shared_probe(b.spark, self.snap)
        target = target.alias(b.alias) if b.alias else target
        both = None
        if any(c.condition is not None for c in self.matched):  # the join is analysed only to print them
            # an error is reported when the merge runs; here the clauses then keep their text
            with contextlib.suppress(Exception):
                both = target.join(b.source, on=F.expr(b.condition) if isinstance(b.condition, str) else b.condition)
        sides = {MATCHED: both, NOT_MATCHED: b.source, NOT_MATCHED_BY_SOURCE: target}
        self._probe, self.joined_on = target, both

        def recorded(clauses: Sequence[Clause]) -> tuple[dict[str, str], ...]:
            return tuple(c.parameters(recorded_predicate(side, c.condition) if (side := sides[c.kind]) is not None
                                      else None) for c in clauses)

        return Merge(  # the ON predicate is recorded at the commit (:meth:`_on_predicate`)
            matched_predicates=recorded(self.matched),
            not_matched_predicates=recorded(self.not_matched),
            not_matched_by_source_predicates=recorded(self.by_source),
        )

    def _on_predicate(self) -> str:
        """The ON condition as delta-spark records it (``recorded_join_predicate``), read from a join this MERGE
        planned anyway (:meth:`_frame`, or the one :meth:`_operation` analysed for the clauses' conditions)
        where there is one: analysing a join for it alone costs a few ms."""
        b = self.b
        return recorded_join_predicate(self._probe, b.source, b.condition, joined=self.joined_on) or ""

    def _target(self, files: Any, *, keys: bool = True) -> DataFrame:
        """The target rows of ``files``; without ``keys``, the read scan (no per-row file and row index)."""
        from pyspark.sql import functions as F

        from deltalog.spark.reads.scan import scan_rows

        scan = target_scan(self.b.spark, self.snap, files, drop_deleted=True, row_ids=True) if keys else \
            scan_rows(self.b.spark, self.snap, files)
        T = scan.withColumn(_T_PRESENT, F.lit(True))
        return T.alias(self.b.alias) if self.b.alias else T

    def _source_rows(self) -> int:
        """``numSourceRows``, counted once (before the first job when it decides the broadcast)."""
        if self.source_rows is None:
            self.source_rows = int(self.b.source.count())
        return self.source_rows

    def clause_counts(self, per_code: Mapping[int, int]) -> dict[str, int]:
        """delta-spark's four per-clause metrics from the number of target rows each clause code acted on.

        Example:
            >>> run.clause_counts({0: 3})["numTargetRowsMatchedUpdated"]               # doctest: +SKIP
            3
        """
        counts = dict.fromkeys(_CLAUSE_METRICS, 0)
        for c in self.matched + self.by_source:
            side = "Matched" if c.kind == MATCHED else "NotMatchedBySource"
            counts[f"numTargetRows{side}{'Updated' if c.action == 'update' else 'Deleted'}"] += \
                per_code.get(self.codes[id(c)], 0)
        return counts

    def _metrics(self, scan_ms: int, **counts: int) -> dict[str, int]:
        total = self.timer.elapsed_ms()
        names = (
            "numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsMatchedUpdated",
            "numTargetRowsNotMatchedBySourceUpdated", "numTargetRowsDeleted", "numTargetRowsMatchedDeleted",
            "numTargetRowsNotMatchedBySourceDeleted", "numTargetRowsCopied", "numOutputRows", "numTargetFilesAdded",
            "numTargetFilesRemoved", "numTargetBytesAdded", "numTargetBytesRemoved", "numTargetChangeFilesAdded",
            "numTargetDeletionVectorsAdded", "numTargetDeletionVectorsRemoved", "numTargetDeletionVectorsUpdated",
        )
        out = dict.fromkeys(names, 0)
        out.update(counts)
        out["numTargetRowsUpdated"] = out["numTargetRowsMatchedUpdated"] + out["numTargetRowsNotMatchedBySourceUpdated"]
        out["numTargetRowsDeleted"] = out["numTargetRowsMatchedDeleted"] + out["numTargetRowsNotMatchedBySourceDeleted"]
        out.update({"executionTimeMs": total, "scanTimeMs": scan_ms, "rewriteTimeMs": max(0, total - scan_ms)})
        return out

    def _finish(
        self, staged: Staged, removed: list[dict[str, Any]], scan_ms: int, dv: DvOutcome | None = None,
        **counts: int,
    ) -> DmlResult:
        """Stage removes (copy-on-write; with ``dv`` they are staged already) and adds, then commit."""
        try:
            counts["numSourceRows"] = self._source_rows()
        except BaseException:
            staged.cleanup()
            raise
        if not staged.data and not removed and dv is None and self.metadata is self.snap.metadata:
            return DmlResult(None, {k: str(v) for k, v in self._metrics(scan_ms, **counts).items()})
        try:
            self._identity_metadata(staged.data)
            if self.metadata is not self.snap.metadata:
                self.txn.update_metadata(self.metadata)
            self.txn.remove_files(removed)
            for f in staged.data:
                self.txn.add_file(f.to_add())
            stage_change_files(self.txn, staged.cdc)
        except BaseException:
            staged.cleanup()
            raise
        files: dict[str, int] = {
            "numTargetFilesRemoved": len(removed),
            "numTargetBytesRemoved": sum(int(r.get("size") or 0) for r in removed),
            "numTargetDeletionVectorsRemoved": sum(1 for r in removed if r.get("deletionVector")),
        }
        if dv is not None:
            files = {
                "numTargetFilesRemoved": dv.removed_files, "numTargetBytesRemoved": dv.removed_bytes,
                "numTargetDeletionVectorsRemoved": dv.dvs_removed, "numTargetDeletionVectorsAdded": dv.dvs_added,
                "numTargetDeletionVectorsUpdated": dv.dvs_updated,
            }
        metrics = self._metrics(
            scan_ms, numOutputRows=sum(f.num_records for f in staged.data), numTargetFilesAdded=len(staged.data),
            numTargetBytesAdded=sum(f.size for f in staged.data), numTargetChangeFilesAdded=len(staged.cdc),
            **files, **counts,
        )
        op = self.txn.operation
        assert isinstance(op, Merge)  # _run's
        self.txn.operation = replace(op, predicate=[self._on_predicate()])
        result = staged.commit(self.txn, metrics)
        compact_after(self.b.spark, self.txn, result, staged.data)  # auto compaction, when the table asks for it
        return DmlResult(result.version, dict(result.operation_metrics))

    def _insert_only(self, T: DataFrame, S: DataFrame) -> DmlResult:
        from pyspark.sql import functions as F

        unmatched = S.join(T, on=self.join_condition, how="left_anti")
        flags = {NOT_MATCHED: F.lit(True)}
        frame = unmatched.withColumn(_ACTION, self._action(flags, self.not_matched, F.lit(_DROP)))
        rows = frame.filter(F.col(_ACTION) >= 0).select(*self._outputs(frame, None, S))
        staged = Staged(self.table.store)
        scan_ms = self.timer.elapsed_ms()
        staged.data.extend(write_rows(rows, self.table, self.schema, self.metadata))
        inserted = sum(f.num_records for f in staged.data)
        return self._finish(staged, [], scan_ms, numTargetRowsInserted=inserted)

    def _frame(self, T: DataFrame, S: DataFrame, how: str) -> tuple[DataFrame, Column, Column]:
        """``T`` joined with ``S`` and each row's clause code in ``_ACTION``; also the presence tests."""
        from pyspark.sql import functions as F

        t_here, s_here = T[_T_PRESENT].isNotNull(), S[_S_PRESENT].isNotNull()
        ordered = [*self.matched, *self.by_source, *self.not_matched]
        # a row no clause acts on is copied (a target row) or dropped (a source row); when the last NOT MATCHED
        # clause has no condition (or there is none: no row lacks a target row) every source row has a code
        every_source = not self.not_matched or self.not_matched[-1].condition is None
        joined = T.join(S, on=self.join_condition, how=how)
        self.joined_on = joined  # its analysed ON condition is the one recorded (:meth:`_on_predicate`)
        text = action_sql(ordered, self.codes, target=_T_PRESENT, source=_S_PRESENT, default=_COPY)
        if text is not None:  # no clause has a condition (so every_source): Spark SQL, one Py4J call
            action = sql_column(self.b.spark, text)
        else:
            flags = {MATCHED: t_here & s_here, NOT_MATCHED: ~t_here, NOT_MATCHED_BY_SOURCE: t_here & ~s_here}
            action = self._action(flags, ordered, F.lit(_COPY) if every_source else
                                  F.when(~t_here, F.lit(_DROP)).otherwise(F.lit(_COPY)))
        return joined.withColumn(_ACTION, action), t_here, s_here

    def one_pass(self, S: DataFrame, candidates: Any) -> DmlResult | None:
        """The MERGE written and committed in one job, where a subclass can
        (:class:`~deltalog.spark.dml.merge_one_pass.OnePassRun`); ``None`` here: the run takes the two-job way.

        Example:
            >>> MergeRun(spec).one_pass(source, candidates) is None                     # doctest: +SKIP
            True
        """
        return None

    def _rewrite(self, S: DataFrame, candidates: Any) -> DmlResult:

        # Job 1 needs the rows a clause may act on only: target rows without a match are needed only
        # for NOT MATCHED BY SOURCE clauses, source rows without one only for inserts (and are dropped
        # here, so Spark turns a right join into an inner one).
        how = {(True, True): "full", (True, False): "right", (False, True): "left", (False, False): "inner"}[
            (bool(self.not_matched), bool(self.by_source))
        ]
        done = self.one_pass(S, candidates)  # it checks the assignments before its job, as below
        if done is not None:
            return done
        uris = file_uris(self.snap, candidates)
        # what the one job counted when it wrote in vain (a candidate file untouched), else the first job
        first = self.first_counts
        if first is None:
            first = self._summary(self._first_job(S, candidates, uris, how))
        scan_ms = self.timer.elapsed_ms()
        touched_uris, matched_uris, per_code = first.touched, first.matched, first.per_code
        counts = self.clause_counts(per_code)
        touched = candidates.filter(pa.array([u in touched_uris for u in uris], pa.bool_()))
        removed = touched.to_pylist()
        use_dvs = bool(removed) and uses_deletion_vectors(self.snap)
        staged = Staged(self.table.store)
        outcome: DvOutcome | None = None
        try:
            if removed or self.not_matched:
                # inserts: a source row matches no target row of the candidates iff it matches none in
                # the files holding matches, so only those (and the touched ones) are joined again
                join_uris = touched_uris | matched_uris
                join_files = candidates.filter(pa.array([u in join_uris for u in uris], pa.bool_()))
                outcome = self._write_changes(S, touched, touched_uris, staged, use_dvs,
                                              join_files=join_files if self.not_matched else None)
        except BaseException:
            staged.cleanup()
            raise
        acted = sum(counts.values())
        copied = 0 if use_dvs else live_rows(self.snap, removed) - acted
        updated = counts["numTargetRowsMatchedUpdated"] + counts["numTargetRowsNotMatchedBySourceUpdated"]
        inserted = sum(f.num_records for f in staged.data) - copied - updated
        return self._finish(
            staged, [] if use_dvs else removed, scan_ms, outcome, numTargetRowsInserted=inserted,
            numTargetRowsCopied=copied, **counts,
        )

    def _summary(self, stats: Sequence[Any]) -> FirstCounts:
        """The first job's rows (:meth:`_first_job`) checked for multiple matches and summed up."""
        self._check_multiple_matches(stats)
        touched: set[str] = set()
        matched = {r[FILE] for r in stats if r["most"] is not None and int(r["most"]) > 0}
        per_code: dict[int, int] = {}
        for r in stats:
            act = r["act"]
            if act is None or act < 0:
                continue
            touched.add(r[FILE])
            per_code[act] = per_code.get(act, 0) + int(r["n"])
        return FirstCounts(touched, matched, per_code)

    def _first_job(self, S: DataFrame, candidates: Any, uris: list[str], how: str) -> list[dict[str, Any]]:
        """Job 1: per candidate file (``FILE``: its URI) and clause code (``act``) the target rows ``n`` and the
        most source rows one of them matched (``most``)."""
        from pyspark.sql import functions as F

        keyed = keyed_rows(self.b.spark, self.snap, candidates)
        by_size = None
        if keyed is None:
            T = frame_target = self._target(candidates)
            file_of, row_of = T[FILE], T[ROW]
        else:  # a long per row is shuffled with the target rows instead of the file's path
            K, bits = keyed
            K = K.withColumn(_T_PRESENT, F.lit(True))
            K = frame_target = K.alias(self.b.alias) if self.b.alias else K
            file_of, row_of = K[ROW_KEY].bitwiseAND(F.lit((1 << bits) - 1)), K[ROW_KEY]
            by_size = dict(zip(candidates.column("size").to_pylist(), uris))
        # The plan is built broadcasting the source, the usual case; it is built again without the hint
        # when the source is too large (each build costs a round of plan analysis in the JVM).
        frame, t_here, s_here = self._frame(frame_target, F.broadcast(S), how)
        self._outputs(frame, frame_target, S)  # assignments and their types are checked before any job runs
        # One group per matched target row (are there several source rows?), one per file and clause for the
        # unmatched ones: the aggregation shuffles about as many rows as matched, not the whole target.
        def first_job(frame: DataFrame, t_here: Column, s_here: Column) -> DataFrame:
            pairs = F.when(s_here, 1).otherwise(0)
            return frame.filter(t_here).groupBy(
                file_of.alias(FILE), F.when(s_here, row_of).alias(ROW), F.when(~s_here, F.col(_ACTION)).alias("own")
            ).agg(F.count(F.lit(1)).alias("rows"), F.sum(pairs).alias("pairs"), F.min(_ACTION).alias("act"))

        per_row = first_job(frame, t_here, s_here)
        if not broadcast_source(self.b.spark, per_row, self._source_rows()):  # else no shuffle of the target
            frame, t_here, s_here = self._frame(frame_target, S, how)
            per_row = first_job(frame, t_here, s_here)
        stats = [r.asDict() for r in per_row.groupBy(FILE, "act").agg(
            F.sum(F.when(F.col("pairs") > 0, 1).otherwise(F.col("rows"))).alias("n"), F.max("pairs").alias("most")
        ).collect()]
        if by_size is not None:
            stats = [{**r, FILE: by_size[r[FILE]]} for r in stats]
        return stats

    def _write_changes(
        self, S: DataFrame, touched: Any, touched_uris: set[str], staged: Staged, use_dvs: bool,
        *, join_files: Any | None,
    ) -> DvOutcome | None:
        """Job 2 (and 3): write the rows the merge produces; copy-on-write rewrites the touched files'
        surviving rows, with deletion vectors only updated and inserted rows are written and the acted-on
        target rows are marked deleted. ``join_files``: with inserts, the target files the source is joined
        with (the touched ones and those holding any match)."""
        from pyspark.sql import functions as F

        action = F.col(_ACTION)
        deletes = [self.codes[id(c)] for c in self.clauses if c.action == "delete"] or [_DROP]
        updates = [self.codes[id(c)] for c in self.clauses if c.action == "update"] or [_DROP]
        if join_files is not None:  # inserts: every target row that matches decides what is inserted
            plain = (not use_dvs and join_files.num_rows == touched.num_rows and tracked_fields(self.snap) is None
                     and not records_changes(self.snap))
            # copy-on-write of exactly the joined files, nothing travelling with the rows: no per-row keys
            T = self._target(join_files, keys=not plain)
            frame, t_here, _ = self._frame(T, S, "full")
            in_touched = t_here if plain else t_here & T[FILE].isin(sorted(touched_uris))
        else:  # a target row's fate depends only on the source: join the touched files alone
            T = self._target(touched)
            frame, t_here, _ = self._frame(T, F.broadcast(S), "left")  # the touched rows stay in place
            if not broadcast_source(self.b.spark, frame, self._source_rows()):  # unless the source is too large
                frame, t_here, _ = self._frame(T, S, "left")
            in_touched = t_here
        keep = in_touched & (action.isin(updates) if use_dvs else ~action.isin(deletes))
        wanted = (keep | (~t_here & (action >= 0))) if self.not_matched else keep
        kept = self._row_id_columns(T, action.isin(updates))
        rows = frame.filter(wanted).select(*self._outputs(frame, T, S), *kept)
        staged.data.extend(write_rows(rows, self.table, self.schema, self.metadata))
        staged.keeps_row_ids = bool(kept)
        if records_changes(self.snap):
            self._write_change_data(frame, T, S, t_here, staged)
        if not use_dvs:
            return None
        acted = frame.filter(t_here & (action >= 0)).select(T[FILE].alias(FILE), T[ROW].alias(ROW))
        results = run_dv_job(acted, self.snap, touched)
        return apply_dv_results(self.txn, self.snap, touched, results, staged)

    def _row_id_columns(self, T: DataFrame, updated: Column) -> list[Column]:
        """Row tracking: target rows keep their materialized row id (inserted rows: null, a fresh id), and
        their commit version unless ``updated``."""
        from pyspark.sql import functions as F

        fields = tracked_fields(self.snap)
        if fields is None:
            return []
        row_id, version = (T[quoted(f.name)] for f in fields)
        new_version = F.when(updated, F.lit(None).cast("long")).otherwise(version)
        return [row_id.alias(fields[0].name), new_version.alias(fields[1].name)]

    def _write_change_data(self, frame: DataFrame, T: DataFrame, S: DataFrame, t_here: Column, staged: Staged) -> None:
        """Change data files: pre- and post-images of updated target rows, deleted target rows, inserted
        source rows (:mod:`~deltalog.spark.jobs.change_files`)."""
        from pyspark.sql import functions as F

        action = F.col(_ACTION)
        codes = {kind: [self.codes[id(c)] for c in self.clauses if c.action == kind] or [_DROP]
                 for kind in ("update", "delete")}
        kind = (
            F.when(t_here & action.isin(codes["update"]), F.lit("update"))
            .when(t_here & action.isin(codes["delete"]), F.lit("delete"))
            .when(~t_here & (action >= 0), F.lit("insert"))
        )
        old = [
            self.target_value(T, f) if f.name in self.target_names else F.lit(None).cast(spark_type(f.type))
            for f in self.schema.fields
        ]
        changes = change_rows(frame, kind, old, self._outputs(frame, T, S), self.schema)
        staged.cdc.extend(write_change_files(changes, self.table, self.schema, self.metadata))

    def multiple_matches_allowed(self) -> bool:
        """Whether a target row may match several source rows: without WHEN MATCHED clauses, or when the
        only one is an unconditional DELETE (every matched pair deletes the row: unambiguous)."""
        if not self.matched:
            return True
        only = self.matched[0]
        return len(self.matched) == 1 and only.action == "delete" and only.condition is None

    def _check_multiple_matches(self, stats: Sequence[Any]) -> None:
        if self.multiple_matches_allowed():
            return
        if any(r["most"] is not None and int(r["most"]) > 1 for r in stats):
            raise self.multiple_matches_error()

    def multiple_matches_error(self) -> DeltaError:
        """The error of a merge where a target row matched several source rows."""
        return MultipleSourceRowMatchError(
            "[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] Cannot perform Merge as multiple source "
            "rows matched and attempted to modify the same target row in the Delta table in possibly "
            f"conflicting ways. ON condition: {describe(self.b.condition)}. Preprocess the source (e.g. "
            "deduplicate it on the merge keys) so that each target row matches at most one source row",
            table=self.table.location,
        )
