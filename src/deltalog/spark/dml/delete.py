"""``DELETE FROM table WHERE condition`` with Spark jobs and one kernel commit.

1. **Which files.** The simple conjuncts of a SQL condition prune partitions and skip files by min/max
   statistics (:func:`~deltalog.spark.reads.target.pruning_conditions`); a ``Column`` condition reads every
   file. The transaction records exactly that: the conjuncts as its read predicate (or the whole table)
   and the candidate files as read, so concurrent writers elsewhere do not conflict.
2. **Whole files.** No condition, or a condition on partition columns only: the candidate files are
   removed without reading them (row counts from their stats).
3. **Deletion vectors** (``delta.enableDeletionVectors=true`` and the ``deletionVectors`` feature): Spark
   finds the matching ``(_metadata.file_path, _metadata.row_index)`` pairs; the executors group them per
   file, union them with the file's current deletion vector and write the new bitmaps
   (:func:`~deltalog.spark.jobs.staged.run_dv_job`); each touched file is re-added with its new deletion
   vector, or removed when no row is left. The data files are not rewritten.
4. **Copy-on-write** otherwise (:mod:`~deltalog.spark.jobs.rewrite`): one job counts the matches per
   file; the surviving rows of the files only partly matched are written as new files by the Spark
   writer and the touched files removed. With the change data feed on, the deleted rows are also
   written as change data files (:mod:`~deltalog.spark.jobs.change_files`; cases 2 and 3 need none).

The commit's ``operationMetrics`` follow delta-spark: ``numDeletedRows``, ``numRemovedFiles``,
``numAddedFiles``, ``numCopiedRows``, ``numDeletionVectorsAdded``/``Removed``/``Updated``,
``numAddedChangeFiles``, ``numAddedBytes``, ``numRemovedBytes``, ``executionTimeMs``, ``scanTimeMs``,
``rewriteTimeMs``. Nothing matching means nothing committed. A failed job commits nothing.

Example:
    >>> from deltalog.spark.dml import delete
    >>> delete(spark, "/data/events", "day = '2024-01-01' AND status = 'bad'").metric("numDeletedRows")
    ... # doctest: +SKIP
    42
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from deltalog.commands.delete import uses_deletion_vectors
from deltalog.commands.dv_rebase import rebase_deletion_vectors
from deltalog.spark.common.core import load_snapshot, open_table
from deltalog.spark.jobs.change_files import deleted_rows, records_changes, stage_change_files, write_change_files
from deltalog.spark.jobs.rewrite import touched_files, write_survivors
from deltalog.spark.jobs.staged import (
    DmlResult,
    Staged,
    Timer,
    apply_dv_results,
    check_can_write,
    refuse_append_only,
    run_dv_job,
)
from deltalog.spark.layout.auto_optimize import compact_after
from deltalog.spark.reads.target import (
    FILE,
    ROW,
    condition_column,
    live_rows,
    pruning_conditions,
    recorded_predicate,
    table_probe,
    target_scan,
)
from deltalog.spark.writes.idempotent import claim_session_txn
from deltalog.txn.operations import Delete
from deltalog.txn.transaction import Transaction

__all__ = ["delete"]


def _metrics(
    timer: Timer,
    scan_ms: int,
    *,
    deleted: int,
    removed_files: int,
    added_files: int = 0,
    copied: int = 0,
    added_bytes: int = 0,
    removed_bytes: int = 0,
    dvs_added: int = 0,
    dvs_removed: int = 0,
    dvs_updated: int = 0,
    change_files: int = 0,
) -> dict[str, int]:
    total = timer.elapsed_ms()
    return {
        "numDeletedRows": deleted,
        "numRemovedFiles": removed_files,
        "numAddedFiles": added_files,
        "numCopiedRows": copied,
        "numAddedChangeFiles": change_files,
        "numAddedBytes": added_bytes,
        "numRemovedBytes": removed_bytes,
        "numDeletionVectorsAdded": dvs_added,
        "numDeletionVectorsRemoved": dvs_removed,
        "numDeletionVectorsUpdated": dvs_updated,
        "executionTimeMs": total,
        "scanTimeMs": scan_ms,
        "rewriteTimeMs": max(0, total - scan_ms),
    }


def _nothing(timer: Timer) -> DmlResult:
    metrics = _metrics(timer, timer.elapsed_ms(), deleted=0, removed_files=0)
    return DmlResult(None, {k: str(v) for k, v in metrics.items()})


def delete(spark: Any, path: str, condition: Any = None) -> DmlResult:
    """Delete the rows of the Delta table at ``path`` where ``condition`` (SQL string or ``Column``;
    ``None``: every row) is true, in one ``DELETE`` commit; see the module docstring.

    Example:
        >>> delete(spark, "/data/t", "id < 10").version                           # doctest: +SKIP
        5
        >>> delete(spark, "/data/t", F.col("id") > 1000).metrics["numDeletedRows"]  # doctest: +SKIP
        '0'
    """
    timer = Timer()
    table = open_table(path)
    snap = load_snapshot(table.location)
    refuse_append_only(snap, "DELETE")
    cond = condition_column(condition, "delete")
    probe = table_probe(spark, snap)
    _ = probe.filter(cond).schema  # analysed before any job
    conditions, complete = pruning_conditions(condition, snap)
    text = recorded_predicate(probe, condition)
    txn = Transaction(table.store, snap, Delete(predicate=[text] if text else None), table=table.location)
    txn.conflict_resolvers.append(rebase_deletion_vectors)  # row-level concurrency on shared files
    if not claim_session_txn(spark, txn):  # delta-spark's txnAppId/txnVersion session settings: done already
        return _nothing(timer)
    candidates = txn.read_candidates(conditions)
    parts = set(snap.partition_columns)
    if complete and all(c.column in parts for c in conditions):
        return _remove_whole_files(txn, snap, candidates, timer)
    if candidates.num_rows == 0:
        return _nothing(timer)
    if uses_deletion_vectors(snap):
        return _delete_with_dvs(spark, table, snap, txn, candidates, cond, timer)
    return _copy_on_write(spark, table, snap, txn, candidates, cond, timer)


def _remove_whole_files(txn: Transaction, snap: Any, files: pa.Table, timer: Timer) -> DmlResult:
    if files.num_rows == 0:
        return _nothing(timer)
    rows = files.to_pylist()
    deleted = live_rows(snap, rows)
    txn.remove_files(rows)
    metrics = _metrics(
        timer, timer.elapsed_ms(), deleted=deleted, removed_files=len(rows),
        removed_bytes=sum(int(r.get("size") or 0) for r in rows),
        dvs_removed=sum(1 for r in rows if r.get("deletionVector")),
    )
    result = txn.commit(metrics=metrics)
    return DmlResult(result.version, dict(result.operation_metrics))


def _delete_with_dvs(
    spark: Any, table: Any, snap: Any, txn: Transaction, candidates: pa.Table, cond: Any, timer: Timer
) -> DmlResult:
    check_can_write(snap)
    # Rows already deleted may match again: the executors union with the old bitmap and count only new rows.
    scan = target_scan(spark, snap, candidates, drop_deleted=False)
    staged = Staged(table.store)
    try:
        results = run_dv_job(scan.filter(cond).select(FILE, ROW), snap, candidates)
        if not results:
            staged.cleanup()
            return _nothing(timer)
        outcome = apply_dv_results(txn, snap, candidates, results, staged)
    except BaseException:
        staged.cleanup()
        raise
    scan_ms = timer.elapsed_ms()
    metrics = _metrics(
        timer, scan_ms, deleted=outcome.deleted_rows, removed_files=outcome.removed_files,
        removed_bytes=outcome.removed_bytes, dvs_added=outcome.dvs_added, dvs_removed=outcome.dvs_removed,
        dvs_updated=outcome.dvs_updated,
    )
    result = staged.commit(txn, metrics)
    return DmlResult(result.version, dict(result.operation_metrics))


def _copy_on_write(
    spark: Any, table: Any, snap: Any, txn: Transaction, candidates: pa.Table, cond: Any, timer: Timer
) -> DmlResult:
    touched = touched_files(spark, table, snap, candidates, cond)
    scan_ms = timer.elapsed_ms()
    if touched.files.num_rows == 0:
        return _nothing(timer)
    touched_rows = touched.files.to_pylist()
    staged = Staged(table.store)
    try:
        write_survivors(spark, table, snap, touched.partial, cond, staged)  # files with rows that stay
        if records_changes(snap):  # the change data feed gets the deleted rows
            gone = target_scan(spark, snap, touched.files, drop_deleted=True).filter(cond)
            staged.cdc.extend(write_change_files(deleted_rows(gone, snap.schema), table, snap.schema, snap.metadata))
    except BaseException:
        staged.cleanup()
        raise
    try:
        txn.remove_files(touched_rows)
        for f in staged.data:
            txn.add_file(f.to_add())
        stage_change_files(txn, staged.cdc)
    except BaseException:
        staged.cleanup()
        raise
    metrics = _metrics(
        timer, scan_ms, deleted=touched.matched, removed_files=len(touched_rows), added_files=len(staged.data),
        copied=sum(f.num_records for f in staged.data), added_bytes=sum(f.size for f in staged.data),
        removed_bytes=sum(int(r.get("size") or 0) for r in touched_rows),
        dvs_removed=sum(1 for r in touched_rows if r.get("deletionVector")), change_files=len(staged.cdc),
    )
    result = staged.commit(txn, metrics)
    compact_after(spark, txn, result, staged.data)  # auto compaction, when the table asks for it
    return DmlResult(result.version, dict(result.operation_metrics))
