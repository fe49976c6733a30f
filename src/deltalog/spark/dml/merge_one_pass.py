"""A MERGE written in one job when every candidate file is touched.

A general MERGE runs two joins (:mod:`deltalog.spark.dml.merge`): the first finds the touched files and checks
that no target row matches several source rows, the second writes. When the table needs no per-row
bookkeeping (no deletion vectors, row tracking or change data feed), the write job can run straight away, as
delta-rs's MERGE does, whenever every target file the ON condition's pruning leaves is touched (then they are
all rewritten anyway): always with a single candidate file; with several, the job finds out (each target row
carries its file's id, its size or a hash of size and modification time, see
:func:`~deltalog.spark.reads.scan.file_keyed_rows`; no row index is read). What the first
job learned comes from counts the write tasks make: every joined target row travels to them with a tag (its
clause, matched or not, and with several files its file); they count the rows per tag and write the wanted
ones (``_write_job.run_tallied``). A Spark observation (``DataFrame.observe``) was measured 2-3.5 s slower on
the same join, about what the first job costs.

* multiple matches: the join keeps every target row at least once, so the target rows it yields (matched pairs
  plus target rows without a match) exceed the files' live rows exactly when some target row matched more
  than one source row. Then the written files are deleted and the usual error is raised, nothing committed;
* the clause counts (rows updated / deleted per kind) are counted per clause code.

The one job is planned (:func:`_plan`: the keyed target scan, the join, the written columns) while the
source's key job runs (:meth:`OnePassRun.plan_ahead`), for the files the ON condition leaves: the keyed scan,
the join, the written columns and the observation; when the keys leave exactly those files (they prune none)
that plan is the one run, else the candidates are planned anew (and the next such MERGE plans after the key
job, see :meth:`~deltalog.spark.dml.merge_keys.KeyPass.ahead_fits`).

If some candidate file has no acted-on target row, it is not touched: the written files are deleted and the
MERGE runs the two-job way, which commits what delta-spark does (that file left in place); its first job is
not run, the counts per file and clause come from the one job's. So with several files the one job is tried
only when the source has at least as many rows as there are candidate files.

Example:
    >>> OnePassRun(spec).run().version                                               # doctest: +SKIP
    4
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, replace
from typing import Any

from deltalog.commands.delete import uses_deletion_vectors
from deltalog.data.write_files import WrittenFile
from deltalog.spark.common.jvm_calls import observe, sql_column
from deltalog.spark.dml.broadcast import broadcast_source
from deltalog.spark.dml.merge_run import FirstCounts, MergeRun
from deltalog.spark.dml.merge_spec import present
from deltalog.spark.jobs.change_files import records_changes
from deltalog.spark.jobs.native import ObservedRows, native_columns_ok, observed_rows, write_observed_rows
from deltalog.spark.jobs.staged import DmlResult, Staged, native_table_applies, spark_error, write_tallied
from deltalog.spark.reads.dv_scan import ROW_KEY, fold
from deltalog.spark.reads.row_ids import tracked_fields
from deltalog.spark.reads.scan import file_keyed_rows
from deltalog.spark.reads.target import file_uris, live_rows
from deltalog.storage import LocalLogStore

__all__ = ["OnePassRun", "one_pass", "one_pass_applies"]

DataFrame = Any

_TAG = "__deltalog_tag"
#: the one job's narrow columns: each metric's input (the name follows) and whether the row is written
_METRIC = "__deltalog_metric_"
_WANTED = "__deltalog_wanted"


def one_pass_applies(run: OnePassRun, candidates: Any) -> bool:
    """Whether ``run`` (a MERGE with WHEN MATCHED or NOT MATCHED BY SOURCE clauses) can write in one job:
    copy-on-write, no row tracking and no change data feed, and either one candidate file or several whose
    rows can be keyed by file (:func:`~deltalog.spark.reads.scan.file_keyed_rows`: no two files share both
    size and modification time) when the source has at least as many rows as there are candidate files (fewer
    rows would leave some file untouched, and the one job would be wasted).

    Example:
        >>> one_pass_applies(run, run.txn.read_candidates([]))                       # doctest: +SKIP
        True
    """
    if candidates.num_rows == 0 or not _one_job_table(run):
        return False
    if candidates.num_rows == 1:
        return True
    told = set(zip(candidates.column("size").to_pylist(), candidates.column("modificationTime").to_pylist()))
    if len(told) != candidates.num_rows:
        return False
    # a source counted by the one job itself (no pass over its keys ran): the job finds out whether it touches
    # every file, as with any source
    counting = run.source_seen is not None and run.source_rows is None
    return counting or int(run._source_rows()) >= candidates.num_rows


def _one_job_table(run: MergeRun) -> bool:
    """Whether the table needs no per-row bookkeeping: copy-on-write, no row tracking, no change data feed."""
    snap = run.snap
    return not (uses_deletion_vectors(snap) or tracked_fields(snap) is not None or records_changes(snap))


def one_pass(run: OnePassRun, S: DataFrame, candidates: Any, ahead: _Plan | None = None) -> DmlResult | None:
    """Join the candidate files' rows with the source ``S`` and write the result in one job, then commit;
    ``None`` (nothing written, nothing committed) when some candidate file has no acted-on target row (it
    is not touched: the MERGE then takes the two-job way, which leaves it in place) or when the rows
    cannot be keyed by file. ``ahead``: the job planned for exactly these candidates (:func:`_plan`), if any.

    Example:
        >>> one_pass(run, source, candidates) is None                                # doctest: +SKIP
        False
    """
    from pyspark.sql import functions as F

    spark = run.b.spark
    plan = ahead if ahead is not None else _plan(run, S, candidates)
    if plan is None:
        return None
    if plan.how == "left" and broadcast_source(spark, plan.frame, run._source_rows()):  # the target rows stay
        frame, t_here, s_here = run._frame(plan.T, F.broadcast(S), plan.how)
        plan = replace(plan, frame=frame, t_here=t_here, s_here=s_here, outputs=run._outputs(frame, plan.T, S))
    if plan.action is None:
        plan = _prepared(run, plan)
    how, file_key, bits, uris, by_id = plan.how, plan.file_key, plan.bits, plan.uris, plan.by_id
    frame, t_here, s_here, outputs, action, wanted = (plan.frame, plan.t_here, plan.s_here, plan.outputs,
                                                     plan.action, plan.wanted)
    shift = 1 - run.DROP
    staged = Staged(run.table.store)
    scan_ms = run.timer.elapsed_ms()
    removed = candidates.to_pylist()
    try:
        if plan.observed is not None:
            files, first, pairs, alone = _observed(run, plan, plan.observed)
            staged.data.extend(files)
        else:
            # every target row travels to the write tasks, which count them by tag (clause, matched or not, and
            # with several files the row's file) and write the wanted ones; source rows not inserted are
            # dropped here
            key = (action + shift) * 4 + F.when(t_here, 2).otherwise(0) + F.when(s_here, 1).otherwise(0)
            if file_key is not None:
                key = key.cast("long") * F.lit(1 << bits) + F.when(t_here, file_key).otherwise(F.lit(0))
            tag = F.when(wanted, key).otherwise(-key).cast("long")
            # a left join yields target rows only, and when the last NOT MATCHED clause has no condition every
            # source row without a match is inserted: then no row is dropped (no filter to analyse)
            every = how == "left" or run.not_matched[-1].condition is None
            rows = (frame if every else frame.filter(t_here | wanted)).select(*outputs, tag.alias(_TAG))
            files, tags = write_tallied(rows, run.table, run.schema, run.metadata, tally=_TAG)
            staged.data.extend(files)
            first, pairs, alone = _tallied(tags, shift, bits, file_key, by_id, uris)
        target_rows = live_rows(run.snap, removed)
        if not run.multiple_matches_allowed() and pairs + alone > target_rows:
            raise run.multiple_matches_error()
    except BaseException:
        staged.cleanup()
        raise
    if run.matched and run.multiple_matches_allowed():  # one unconditional DELETE: count rows, not pairs
        first.per_code[run.codes[id(run.matched[0])]] = target_rows - alone
    counts = run.clause_counts(first.per_code)
    if len(first.touched) < len(uris):  # a file without an acted-on row: delta-spark leaves it in place
        staged.cleanup()
        run.first_counts = first  # the two-job way needs no first job
        return None
    acted = sum(counts.values())
    copied = target_rows - acted
    updated = counts["numTargetRowsMatchedUpdated"] + counts["numTargetRowsNotMatchedBySourceUpdated"]
    inserted = sum(f.num_records for f in staged.data) - copied - updated
    return run._finish(staged, removed, scan_ms, None, numTargetRowsInserted=inserted, numTargetRowsCopied=copied,
                       **counts)


@dataclass(frozen=True)
class _Observed:
    """The one job on Spark's parquet writer, planned (:func:`_observation`): the rows to write with the
    observation counting them, the clause codes counted one by one, and each file's bit (``None``: the files'
    ids are collected as text)."""

    planned: ObservedRows
    codes: list[int]
    counted: list[int]
    bits: tuple[Any, dict[int, str]] | None


@dataclass(frozen=True)
class _Plan:
    """The one job planned for some target files (their ``uris``): the target frame ``T``, the join
    (``how``), each row's file (``file_key``, with ``bits`` and ``by_id``, each file's uri by id; ``None`` with
    one file), the joined ``frame`` with its presence tests, the written columns, each row's clause code
    (``action``) and whether it is written (``wanted``; ``every``: true of every row, so nothing is filtered);
    ``observed`` when Spark's parquet writer writes."""

    uris: list[str]
    T: Any
    how: str
    file_key: Any
    bits: int
    by_id: dict[int, str]
    frame: Any
    t_here: Any
    s_here: Any
    outputs: list[Any]
    action: Any = None
    wanted: Any = None
    every: bool = False
    observed: _Observed | None = None


def _plan(run: MergeRun, S: DataFrame, candidates: Any) -> _Plan | None:
    """:class:`_Plan` for ``candidates`` (a driver's work, no job; a left join's is :func:`_prepared` later);
    ``None`` when their rows cannot be keyed by file. Raises what the assignments' checks raise."""
    from pyspark.sql import functions as F

    bits, ids = 0, list[int]()
    if candidates.num_rows == 1:
        T = run._target(candidates, keys=False)  # the read scan: no per-row file or row index
        file_key: Any = None
    else:  # the rows carry their file's id: the tags are counted per file
        # a full join makes every target column nullable: the scan need not declare the table's nullability
        keyed = file_keyed_rows(run.b.spark, run.snap, candidates, declared=not run.not_matched,
                                extra=[F.lit(True).alias(run.TARGET)])
        if keyed is None:
            return None
        K, bits, ids = keyed
        T = K.alias(run.b.alias) if run.b.alias else K
        file_key = sql_column(run.b.spark, _file_key_sql(bits))
    how = "full" if run.not_matched else "left"
    frame, t_here, s_here = run._frame(T, S, how)
    outputs = run._outputs(frame, T, S)  # the assignments and their types are checked before any job runs
    uris = file_uris(run.snap, candidates)
    by_id = dict(zip(ids, uris)) if file_key is not None else {}
    plan = _Plan(uris, T, how, file_key, bits, by_id, frame, t_here, s_here, outputs)
    # a left join's frame may yet change (a broadcast source, once the source's size is known)
    return plan if how == "left" else _prepared(run, plan)


def _prepared(run: MergeRun, plan: _Plan) -> _Plan:
    """``plan`` with each row's clause code and whether it is written, and the one job on Spark's parquet writer
    planned where that writer applies."""
    from pyspark.sql import functions as F

    action = F.col(run.ACTION)
    deletes = [run.codes[id(c)] for c in run.matched + run.by_source if c.action == "delete"] or [run.DROP]
    t_here, code = present(run.TARGET), f"`{run.ACTION}`"
    keep = f"{t_here} AND NOT {code} IN ({', '.join(str(int(d)) for d in deletes)})"
    wanted = sql_column(run.b.spark, f"({keep}) OR (NOT {t_here} AND {code} >= 0)" if run.not_matched else keep)
    # no clause deletes and every source row without a match is inserted (or none joins): every row is written,
    # and a filter that drops none would cost the job 7-18 ms (measured 2026-12-04, 1k rows into 10k)
    every = deletes == [run.DROP] and (not run.not_matched or run.not_matched[-1].condition is None)
    plan = replace(plan, action=action, wanted=wanted, every=every)
    return replace(plan, observed=_observation(run, plan)) if _native_table(run) else plan


def _native_table(run: MergeRun) -> bool:
    """Whether the table is one the one job can write with Spark's parquet writer, the rows aside (see
    :func:`_observation`; :func:`~deltalog.spark.jobs.staged.native_table_applies`: local, unpartitioned,
    without per-row checks, on a classic session, where Spark Connect keeps the ``mapInArrow`` tasks)."""
    return native_table_applies(run.b.spark, run.table, run.schema, run.metadata)


def _native(run: MergeRun, rows: DataFrame, written: int) -> bool:
    """Whether the one job writes ``rows`` (their first ``written`` columns) with Spark's parquet writer, the
    table being one it writes (:func:`_native_table`): their columns are the table's
    (:func:`~deltalog.spark.jobs.native.native_columns_ok`); it then counts with a Spark observation instead of
    the ``mapInArrow`` tasks' tallies."""
    return native_columns_ok(rows, run.schema, written=written)


def _observation(run: MergeRun, plan: _Plan) -> _Observed | None:
    """The one job on Spark's parquet writer, planned: the wanted rows of the plan's frame, and observed in the
    same job the target rows per clause code and with or without a match, and the files with an acted-on or a
    matched row; ``None`` when the written columns are not the table's as Spark's writer needs them
    (:func:`_native`, asked of the narrow frame: no frame is analysed for it alone).

    The observation sees the written columns and one narrow column per metric, not the joined rows: Spark
    evaluates it row by row outside its generated code, and the narrower rows cost it less (measured
    2026-12-04 on 5M joined rows: 65 ms over the unobserved write, against 215 ms observing the joined rows)."""
    spark = run.b.spark
    # the inputs and aggregates are Spark SQL over the columns the MERGE added (one Py4J call each,
    # :func:`~deltalog.spark.common.jvm_calls.sql_column`); the same expressions as built column by column
    t_here, s_here, action = present(run.TARGET), present(run.SOURCE), f"`{run.ACTION}`"
    codes = sorted({run.codes[id(c)] for c in run.matched + run.by_source})
    # with no NOT MATCHED BY SOURCE clause and a last MATCHED clause without a condition, every matched target
    # row is acted on: the one clause's rows are the pairs, the touched files those with a match
    every_match_acts = not run.by_source and bool(run.matched) and run.matched[-1].condition is None
    inputs: list[Any] = []
    metrics: list[Any] = []

    def metric(name: str, value: str, aggregate: str) -> None:
        column = f"`{_METRIC}{name}`"
        inputs.append(sql_column(spark, f"{value} AS {column}"))
        metrics.append(sql_column(spark, aggregate.format(column) + f" AS `{name}`"))

    rows_where = "count(CASE WHEN {} THEN 1 END)"
    metric("pairs", f"{t_here} AND {s_here}", rows_where)
    metric("alone", f"{t_here} AND NOT {s_here}", rows_where)
    counted = [] if every_match_acts and len(codes) == 1 else codes
    for i, c in enumerate(counted):
        metric(f"code{i}", f"{t_here} AND {action} = {int(c)}", rows_where)
    sets = {"touched": f"{t_here} AND {action} >= 0"} if every_match_acts else \
        {"touched": f"{t_here} AND {action} >= 0", "matched": f"{t_here} AND {s_here}"}
    file_key = None if plan.file_key is None else _file_key_sql(plan.bits)
    bits = _file_bits(file_key, plan.by_id) if file_key is not None else None
    for name, rows in sets.items() if file_key is not None else ():
        if bits is not None:  # one bit per file, OR-ed
            metric(name, f"CASE WHEN {rows} THEN {bits[0]} END", "bit_or({})")
        else:  # the file ids as text: PySpark 3.5's observation hands arrays over as JVM objects
            metric(name, f"CAST(CASE WHEN {rows} THEN {file_key} END AS STRING)", "concat_ws(',', collect_set({}))")
    wanted = [] if plan.every else [plan.wanted.alias(_WANTED)]
    narrow = plan.frame.select(*plan.outputs, *inputs, *wanted)
    if not _native(run, narrow, len(plan.outputs)):
        return None
    # the rows written: the table's stored columns of the wanted rows (the metric columns are left out)
    chosen = (lambda f: f) if plan.every else (lambda f: f.filter(f"`{_WANTED}`"))
    planned = observed_rows(narrow, metrics, chosen, run.schema)
    return _Observed(planned, codes, counted, bits)


def _observed(run: OnePassRun, plan: _Plan, job: _Observed) -> tuple[list[WrittenFile], FirstCounts, int, int]:
    """The planned one job (:func:`_observation`) run. Returns the files written, the counts of the first job,
    the pairs and the unmatched target rows."""
    store = run.table.store
    assert isinstance(store, LocalLogStore)  # _native_table said so
    try:
        files, seen = write_observed_rows(job.planned, store, run.schema)
    except Exception as exc:
        raise spark_error(exc, run.table.location) from None
    pairs = int(seen["pairs"])
    run.source_counted()
    codes, counted, bits, uris, by_id = job.codes, job.counted, job.bits, plan.uris, plan.by_id
    per_code = {c: int(seen[f"code{i}"]) for i, c in enumerate(counted)} if counted else {codes[0]: pairs}

    def files_of(name: str) -> set[str]:
        if plan.file_key is None:  # one candidate file
            return set(uris) if (any(per_code.values()) if name == "touched" else pairs) else set()
        value = seen[name if name in seen else "touched"]
        if bits is not None:
            word = int(value or 0)
            return {uri for b, uri in bits[1].items() if word >> b & 1}
        return {by_id[int(k)] for k in str(value).split(",") if k}

    return files, FirstCounts(files_of("touched"), files_of("matched"), per_code), pairs, int(seen["alone"])


def _file_key_sql(bits: int) -> str:
    """Spark SQL of a keyed target row's file id: the low ``bits`` of its key (a packed key's row index
    dropped; the key's column name is the joined rows' only one)."""
    return f"(`{ROW_KEY}` & {(1 << bits) - 1})"


def _file_bits(file_key: str, by_id: dict[int, str]) -> tuple[str, dict[int, str]] | None:
    """Each row's file as one bit of a ``long`` -- ``1 << (id % m)``, ``m`` at most 63 (no sign bit) and the ids'
    residues distinct -- as Spark SQL over ``file_key`` (Spark SQL of the row's file id), and the file of each
    bit; ``None`` when no such ``m`` exists (more than 63 files, or ids that collide)."""
    m = fold(list(by_id), below=64)
    if m is None:
        return None
    bit = f"shiftleft(CAST(1 AS BIGINT), CAST({file_key} % {m} AS INT))"  # m <= 63: below 2 ** 63
    return bit, {int(i % m): uri for i, uri in by_id.items()}


def _tallied(
    tags: dict[int, int], shift: int, bits: int, file_key: Any, by_id: dict[int, str], uris: list[str],
) -> tuple[FirstCounts, int, int]:
    """The write tasks' tallies read back: the first job's counts (the target rows per clause code, the touched
    and the matched files), the pairs and the unmatched target rows."""
    first = FirstCounts(set(), set(), {})
    pairs = alone = 0
    for t, n in tags.items():
        k = abs(t)
        uri = str(by_id.get(k & ((1 << bits) - 1)) if file_key is not None else uris[0])
        k >>= bits
        if not k & 2 or not n:  # a source row (inserted)
            continue
        code = (k >> 2) - shift
        if code >= 0:
            first.per_code[code] = first.per_code.get(code, 0) + n
            first.touched.add(uri)
        if k & 1:
            pairs += n
            first.matched.add(uri)
        else:
            alone += n
    return first, pairs, alone


class OnePassRun(MergeRun):
    """A :class:`~deltalog.spark.dml.merge_run.MergeRun` that writes in one job where :func:`one_pass_applies`
    (what ``MergeBuilder.execute()`` runs): :func:`one_pass`, else the two-job way.

    Example:
        >>> OnePassRun(spec).run().metric("numTargetRowsUpdated")                       # doctest: +SKIP
        3
    """

    def one_pass(self, S: DataFrame, candidates: Any) -> DmlResult | None:
        """:func:`one_pass` of this run where it applies; ``None`` (the two-job way) where not.

        Example:
            >>> OnePassRun(spec).one_pass(source, candidates) is None                   # doctest: +SKIP
            False
        """
        applies = one_pass_applies(self, candidates)
        self.ahead_fits = applies and self.files_on is not None \
            and self.files_on.column("path").to_pylist() == candidates.column("path").to_pylist()
        done = one_pass(self, S, candidates, self.ahead if self.ahead_fits else None) if applies else None
        if done is None:  # a file left untouched (the keys would have pruned it): the two-job way
            self.ahead_fits = False
        return done

    #: the one job planned ahead (:meth:`plan_ahead`), used when the candidate files turn out to be its files
    ahead: _Plan | None = None
    #: the observation counting the source's rows in the one job (:meth:`counted`), if any
    source_seen: Any = None

    def keys_optional(self) -> bool:
        """Whether the MERGE can do without the pass over the source's keys: an upsert (MATCHED and NOT MATCHED
        clauses, none NOT MATCHED BY SOURCE: a full join, so the source is never broadcast, which needs its
        size first) of a table the one job writes with Spark's parquet writer (local, unpartitioned,
        no per-row bookkeeping, a classic session), whose observation then counts the source rows too.

        Example:
            >>> OnePassRun(spec).keys_optional()                                           # doctest: +SKIP
            True
        """
        from deltalog.spark.common.storage import is_connect

        return bool(self.matched and self.not_matched and not self.by_source) and _one_job_table(self) \
            and isinstance(self.table.store, LocalLogStore) and not self.snap.metadata.partitionColumns \
            and not is_connect(self.b.spark)

    def counted(self, S: DataFrame) -> DataFrame:
        """``S`` with its rows counted, as ``numSourceRows``, by the job that reads it (a Spark observation; read
        back by :meth:`source_counted`).

        Example:
            >>> OnePassRun(spec).counted(source).columns == source.columns                # doctest: +SKIP
            True
        """
        from pyspark.sql import Observation

        self.source_seen = Observation(f"deltalog_source_{uuid.uuid4().hex}")
        return observe(S, self.source_seen, sql_column(self.b.spark, "count(1) AS `n`"))

    def source_counted(self) -> None:
        """After the one job on Spark's parquet writer: ``numSourceRows`` from its observation. Spark drops the
        observation of a source it proves empty (:func:`~deltalog.spark.common.compat.observed_metrics`); the
        rows are then counted when needed (:meth:`_source_rows`)."""
        from deltalog.spark.common.compat import observed_metrics

        if self.source_seen is None or self.source_rows is not None:
            return
        n = (observed_metrics(self.source_seen) or {}).get("n")
        self.source_rows = None if n is None else int(n)

    def plan_ahead(self, S: DataFrame, files: Any) -> None:
        """Plan the one job for ``files`` while the source's key job runs (:class:`~deltalog.spark.dml.merge_keys.
        KeyPass`); :func:`one_pass` uses the plan if the keys leave exactly these files. Whatever this planning
        raises is raised again by the real planning, so it is dropped here.

        Example:
            >>> run.plan_ahead(source, snap.add_files()); run.ahead is not None           # doctest: +SKIP
            True
        """
        if files.num_rows < 2 or not _one_job_table(self):
            return  # one file: planned in no time; else the one job never runs
        with contextlib.suppress(Exception):
            self.ahead = _plan(self, S, files)
