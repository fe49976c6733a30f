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

If some candidate file has no acted-on target row, it is not touched: the written files are deleted and the
MERGE runs the two-job way, which commits what delta-spark does (that file left in place); its first job is
not run, the counts per file and clause come from the one job's. So with several files the one job is tried
only when the source has at least as many rows as there are candidate files.

Example:
    >>> OnePassRun(spec).run().version                                               # doctest: +SKIP
    4
"""

from __future__ import annotations

from typing import Any

from deltalog.commands.delete import uses_deletion_vectors
from deltalog.spark.dml.broadcast import broadcast_source
from deltalog.spark.dml.merge_run import MergeRun
from deltalog.spark.jobs.change_files import records_changes
from deltalog.spark.jobs.staged import DmlResult, Staged, write_tallied
from deltalog.spark.reads.dv_scan import ROW_KEY
from deltalog.spark.reads.row_ids import tracked_fields
from deltalog.spark.reads.scan import file_keyed_rows
from deltalog.spark.reads.target import FILE, file_uris, live_rows

__all__ = ["OnePassRun", "one_pass", "one_pass_applies"]

DataFrame = Any

_TAG = "__deltalog_tag"


def one_pass_applies(run: MergeRun, candidates: Any) -> bool:
    """Whether ``run`` (a MERGE with WHEN MATCHED or NOT MATCHED BY SOURCE clauses) can write in one job:
    copy-on-write, no row tracking and no change data feed, and either one candidate file or several whose
    rows can be keyed by file (:func:`~deltalog.spark.reads.scan.file_keyed_rows`: no two files share both
    size and modification time) when the source has at least as many rows as there are candidate files (fewer
    rows would leave some file untouched, and the one job would be wasted).

    Example:
        >>> one_pass_applies(run, run.txn.read_candidates([]))                       # doctest: +SKIP
        True
    """
    snap = run.snap
    if candidates.num_rows == 0 or uses_deletion_vectors(snap) or tracked_fields(snap) is not None \
            or records_changes(snap):
        return False
    if candidates.num_rows == 1:
        return True
    told = set(zip(candidates.column("size").to_pylist(), candidates.column("modificationTime").to_pylist()))
    return bool(len(told) == candidates.num_rows and int(run._source_rows()) >= candidates.num_rows)


def one_pass(run: MergeRun, S: DataFrame, candidates: Any) -> DmlResult | None:
    """Join the candidate files' rows with the source ``S`` and write the result in one job, then commit;
    ``None`` (nothing written, nothing committed) when some candidate file has no acted-on target row (it
    is not touched: the MERGE then takes the two-job way, which leaves it in place) or when the rows
    cannot be keyed by file.

    Example:
        >>> one_pass(run, source, candidates) is None                                # doctest: +SKIP
        False
    """
    from pyspark.sql import functions as F

    spark = run.b.spark
    bits, ids = 0, list[int]()
    if candidates.num_rows == 1:
        T = run._target(candidates, keys=False)  # the read scan: no per-row file or row index
        file_key: Any = None
    else:  # the rows carry their file's id: the tags are counted per file
        keyed = file_keyed_rows(spark, run.snap, candidates)
        if keyed is None:
            return None
        K, bits, ids = keyed
        K = K.withColumn(run.TARGET, F.lit(True))
        T = K.alias(run.b.alias) if run.b.alias else K
        file_key = T[ROW_KEY].bitwiseAND(F.lit((1 << bits) - 1))  # a packed key's row index dropped
    how = "full" if run.not_matched else "left"
    frame, t_here, s_here = run._frame(T, S, how)
    outputs = run._outputs(frame, T, S)  # the assignments and their types are checked before any job runs
    if how == "left" and broadcast_source(spark, frame, run._source_rows()):  # the target rows stay in place
        frame, t_here, s_here = run._frame(T, F.broadcast(S), how)
        outputs = run._outputs(frame, T, S)
    action = F.col(run.ACTION)
    deletes = [run.codes[id(c)] for c in run.matched + run.by_source if c.action == "delete"] or [run.DROP]
    # the clause codes start at the run's DROP: shifted to start at 1, so a tag's sign can mean "write"
    # (positive) or "count only" (negative)
    shift = 1 - run.DROP
    keep = t_here & ~action.isin(deletes)
    wanted = (keep | (~t_here & (action >= 0))) if run.not_matched else keep
    # every target row travels to the write tasks, which count them by tag (clause, matched or not, and
    # with several files the row's file) and write the wanted ones; source rows not inserted are dropped here
    key = (action + shift) * 4 + F.when(t_here, 2).otherwise(0) + F.when(s_here, 1).otherwise(0)
    if file_key is not None:
        key = key.cast("long") * F.lit(1 << bits) + F.when(t_here, file_key).otherwise(F.lit(0))
    tag = F.when(wanted, key).otherwise(-key).cast("long")
    # a left join yields target rows only, and when the last NOT MATCHED clause has no condition every
    # source row without a match is inserted: then no row is dropped (no filter to analyse)
    every = how == "left" or run.not_matched[-1].condition is None
    rows = (frame if every else frame.filter(t_here | wanted)).select(*outputs, tag.alias(_TAG))
    staged = Staged(run.table.store)
    scan_ms = run.timer.elapsed_ms()
    uris = file_uris(run.snap, candidates)
    by_id = dict(zip(ids, uris)) if file_key is not None else {}
    try:
        files, tags = write_tallied(rows, run.table, run.schema, run.metadata, tally=_TAG)
        staged.data.extend(files)
        per_code: dict[int, int] = {}
        touched: set[str] = set()
        pairs = alone = 0
        per_file: dict[tuple[str, int, bool], int] = {}  # (file, code, matched) -> target rows (pairs if matched)
        for t, n in tags.items():
            k = abs(t)
            uri = str(by_id.get(k & ((1 << bits) - 1)) if file_key is not None else uris[0])
            k >>= bits
            if not k & 2:  # a source row (inserted)
                continue
            code = (k >> 2) - shift
            per_code[code] = per_code.get(code, 0) + n
            per_file[(uri, code, bool(k & 1))] = per_file.get((uri, code, bool(k & 1)), 0) + n
            if code >= 0 and n:
                touched.add(uri)
            if k & 1:
                pairs += n
            else:
                alone += n
        removed = candidates.to_pylist()
        target_rows = live_rows(run.snap, removed)
        if not run.multiple_matches_allowed() and pairs + alone > target_rows:
            raise run.multiple_matches_error()
    except BaseException:
        staged.cleanup()
        raise
    counts = run.clause_counts(per_code)
    if run.matched and run.multiple_matches_allowed():  # one unconditional DELETE: count rows, not pairs
        counts["numTargetRowsMatchedDeleted"] = target_rows - alone
    if len(touched) < len(uris):  # a file without an acted-on row: delta-spark leaves it in place
        staged.cleanup()
        run.file_stats = _file_stats(run, per_file, candidates, uris)  # the two-job way needs no first job
        return None
    acted = sum(counts.values())
    copied = target_rows - acted
    updated = counts["numTargetRowsMatchedUpdated"] + counts["numTargetRowsNotMatchedBySourceUpdated"]
    inserted = sum(f.num_records for f in staged.data) - copied - updated
    return run._finish(staged, removed, scan_ms, None, numTargetRowsInserted=inserted, numTargetRowsCopied=copied,
                       **counts)


def _file_stats(run: MergeRun, per_file: dict[tuple[str, int, bool], int], candidates: Any,
                uris: list[str]) -> list[dict[str, Any]]:
    """The first job's rows (:meth:`~deltalog.spark.dml.merge_run.MergeRun._first_job`) from the one job's
    counts: per file and clause code the target rows and whether one matched (no row matched several source
    rows, or the error was raised already, unless the only matched clause is an unconditional DELETE: then
    a file's matched rows are its live rows less those without a match)."""
    live = {u: live_rows(run.snap, [r]) for u, r in zip(uris, candidates.to_pylist())}
    alone: dict[str, int] = {}
    for (uri, _, matched), n in per_file.items():
        if not matched:
            alone[uri] = alone.get(uri, 0) + n
    out = []
    for (uri, code, matched), n in per_file.items():
        if matched and run.multiple_matches_allowed():
            n = live[uri] - alone.get(uri, 0)
        out.append({FILE: uri, "act": code, "n": n, "most": 1 if matched else 0})
    return out


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
        return one_pass(self, S, candidates) if one_pass_applies(self, candidates) else None
