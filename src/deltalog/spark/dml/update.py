"""``UPDATE table SET column = expression, ... WHERE condition`` with Spark jobs and one kernel commit.

The ``set`` mapping names top-level columns (case-insensitive); values are SQL expression strings or
``Column`` objects evaluated against the table's row. Unknown columns and types Spark would not store
(``string`` into ``int``, ...) are refused before any job runs; a value the cast cannot hold (overflow,
malformed text) fails the job with ``[DELTA_CAST_FAILURE]`` naming the column -- the table is unchanged.

Files are chosen as for DELETE (pruning by the simple conjuncts of a SQL condition, recorded as the
transaction's read predicate and read files); one job counts the matching rows per file, then:

* **copy-on-write**: every row of the touched files is written again, updated where the condition holds
  (``CASE WHEN condition THEN new ELSE old``), and the touched files are removed;
* **deletion vectors** (``delta.enableDeletionVectors=true`` + feature, and a condition): only the
  updated rows are written, as new files, and the old rows are marked deleted in the touched files'
  deletion vectors by the executors; a file whose every row was updated is removed.

With the change data feed on, each updated row is also written to change data files as an
``update_preimage`` and an ``update_postimage`` row (:mod:`~deltalog.spark.jobs.change_files`).

Metrics follow delta-spark: ``numUpdatedRows``, ``numCopiedRows``, ``numAddedFiles``, ``numRemovedFiles``,
``numAddedChangeFiles``, ``numDeletionVectorsAdded``/``Removed``/``Updated``, ``numAddedBytes``,
``numRemovedBytes``, ``executionTimeMs``, ``scanTimeMs``, ``rewriteTimeMs``.

Example:
    >>> from deltalog.spark.dml import update
    >>> update(spark, "/data/events", "status = 'new'", {"status": "'seen'", "n": F.col("n") + 1}).version
    ... # doctest: +SKIP
    8
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from deltalog.commands.delete import uses_deletion_vectors
from deltalog.commands.dv_rebase import rebase_deletion_vectors
from deltalog.errors import InvalidArgumentError
from deltalog.spark.common.arguments import column_mapping
from deltalog.spark.common.core import load_snapshot, open_table, quoted
from deltalog.spark.dml.assign import assign, combine, expression, resolve_path
from deltalog.spark.jobs.change_files import records_changes, stage_change_files, updated_rows, write_change_files
from deltalog.spark.jobs.rewrite import matches_per_file
from deltalog.spark.jobs.staged import (
    DmlResult,
    Staged,
    Timer,
    apply_dv_results,
    check_can_write,
    refuse_append_only,
    run_dv_job,
    write_rows,
)
from deltalog.spark.layout.auto_optimize import compact_after
from deltalog.spark.reads.target import (
    FILE,
    ROW,
    condition_column,
    file_uris,
    live_rows,
    pruning_conditions,
    recorded_predicate,
    table_probe,
    target_scan,
)
from deltalog.spark.writes.idempotent import claim_session_txn
from deltalog.txn.generated import generated_columns
from deltalog.txn.identity import identity_columns
from deltalog.txn.operations import Update
from deltalog.txn.transaction import Transaction

__all__ = ["update"]

Column = Any


def _assignments(spark_set: Any, snap: Any) -> dict[str, Column]:
    spark_set = column_mapping(spark_set, "'set'")
    from pyspark.sql import functions as F

    identity = {c.name for c in identity_columns(snap.schema, table=snap.table)}
    generated = generated_columns(snap.schema)
    by_column: dict[str, list[tuple[tuple[str, ...], Column]]] = {}
    for key, value in spark_set.items():
        f, path = resolve_path(key, snap.schema, what="UPDATE")
        if f.name in identity:
            raise InvalidArgumentError(
                f"[DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] UPDATE sets identity column {f.name}; identity "
                "values cannot be updated", table=snap.table)
        if f.name in generated:
            raise InvalidArgumentError(
                f"[DELTA_GENERATED_COLUMN_UPDATE_NOT_SUPPORTED] UPDATE sets generated column {f.name}, which is "
                f"computed as {generated[f.name]}; update the columns it is computed from", table=snap.table)
        if not path and any(not p for p, _ in by_column.get(f.name, [])):
            raise InvalidArgumentError(f"UPDATE: column {f.name!r} is assigned more than once", table=snap.table)
        by_column.setdefault(f.name, []).append((path, expression(value, what=f"UPDATE set[{key!r}]")))
    return {name: combine(snap.schema.field(name), assigned, F.col(quoted(name)), what="UPDATE")
            for name, assigned in by_column.items()}


def _metrics(timer: Timer, scan_ms: int, **counts: int) -> dict[str, int]:
    total = timer.elapsed_ms()
    base = dict.fromkeys(
        (
            "numUpdatedRows", "numCopiedRows", "numAddedFiles", "numRemovedFiles", "numAddedChangeFiles",
            "numDeletionVectorsAdded", "numDeletionVectorsRemoved", "numDeletionVectorsUpdated", "numAddedBytes",
            "numRemovedBytes",
        ),
        0,
    )
    base.update(counts)
    base.update({"executionTimeMs": total, "scanTimeMs": scan_ms, "rewriteTimeMs": max(0, total - scan_ms)})
    return base


def update(spark: Any, path: str, condition: Any = None, set: Mapping[str, Any] | None = None) -> DmlResult:
    """Update the rows of the Delta table at ``path`` where ``condition`` holds (``None``: every row),
    setting each column of ``set`` to its expression, in one ``UPDATE`` commit; see the module docstring.

    Example:
        >>> update(spark, "/data/t", "id < 10", {"v": "v * 2"}).metric("numUpdatedRows")  # doctest: +SKIP
        10
    """
    timer = Timer()
    table = open_table(path)
    snap = load_snapshot(table.location)
    new_exprs = _assignments(set, snap)
    refuse_append_only(snap, "UPDATE")
    check_can_write(snap)
    cond = condition_column(condition, "update")
    probe = table_probe(spark, snap)
    names = list(new_exprs)
    typed = probe.filter(cond).select(*[new_exprs[n].alias(f"_{i}") for i, n in enumerate(names)]).schema
    new_values = {  # checked before any job runs
        n: assign(new_exprs[n], typed.fields[i].dataType, snap.schema.field(n), what="UPDATE")
        for i, n in enumerate(names)
    }
    conditions, _ = pruning_conditions(condition, snap)
    text = recorded_predicate(probe, condition)
    txn = Transaction(table.store, snap, Update(predicate=[text] if text else None), table=table.location)
    txn.conflict_resolvers.append(rebase_deletion_vectors)  # row-level concurrency on shared files
    if not claim_session_txn(spark, txn):  # delta-spark's txnAppId/txnVersion session settings: done already
        return DmlResult(None, {k: str(v) for k, v in _metrics(timer, timer.elapsed_ms()).items()})
    candidates = txn.read_candidates(conditions)
    if candidates.num_rows == 0:
        return DmlResult(None, {k: str(v) for k, v in _metrics(timer, timer.elapsed_ms()).items()})
    if condition is None:
        touched = candidates
        updated = live_rows(snap, candidates.to_pylist())
    else:
        counts = matches_per_file(spark, snap, candidates, cond, table.location)
        touched = candidates.filter(pa.array([u in counts for u in file_uris(snap, candidates)]))
        updated = sum(counts.values())
    scan_ms = timer.elapsed_ms()
    if touched.num_rows == 0 or updated == 0:
        return DmlResult(None, {k: str(v) for k, v in _metrics(timer, scan_ms).items()})
    staged = Staged(table.store)
    try:
        if condition is not None and uses_deletion_vectors(snap):
            metrics = _with_dvs(spark, table, snap, txn, touched, cond, new_values, staged, updated)
        else:
            metrics = _copy_on_write(spark, table, snap, txn, touched, cond, new_values, staged, updated)
        if records_changes(snap):  # the change data feed gets each updated row's pre- and post-image
            matched = target_scan(spark, snap, touched, drop_deleted=True).filter(cond)
            changes = updated_rows(matched, snap.schema, _columns(snap, new_values, None))
            staged.cdc.extend(write_change_files(changes, table, snap.schema, snap.metadata))
            metrics["numAddedChangeFiles"] = stage_change_files(txn, staged.cdc)
    except BaseException:
        staged.cleanup()
        raise
    result = staged.commit(txn, _metrics(timer, scan_ms, **metrics))
    compact_after(spark, txn, result, staged.data)  # auto compaction, when the table asks for it
    return DmlResult(result.version, dict(result.operation_metrics))


def _columns(snap: Any, values: Mapping[str, Column], cond: Column | None) -> list[Column]:
    from pyspark.sql import functions as F

    out = []
    for f in snap.schema.fields:
        old = F.col(quoted(f.name))
        if f.name not in values:
            out.append(old)
        elif cond is None:
            out.append(values[f.name].alias(f.name))
        else:
            out.append(F.when(cond, values[f.name]).otherwise(old).alias(f.name))
    return out


def _row_id_columns(snap: Any, cond: Column | None) -> list[Column]:
    """Row tracking: the materialized columns of the rows written, the commit version cleared where the
    row is updated (``cond``; ``None``: every row written is updated)."""
    from pyspark.sql import functions as F

    from deltalog.spark.reads.row_ids import tracked_fields

    fields = tracked_fields(snap)
    if fields is None:
        return []
    row_id, version = (F.col(quoted(f.name)) for f in fields)
    cleared = F.lit(None).cast("long")
    new_version = cleared if cond is None else F.when(cond, cleared).otherwise(version)
    return [row_id, new_version.alias(fields[1].name)]


def _copy_on_write(
    spark: Any, table: Any, snap: Any, txn: Transaction, touched: pa.Table, cond: Column,
    values: Mapping[str, Column], staged: Staged, updated: int,
) -> dict[str, int]:
    from deltalog.spark.reads.scan import scan_rows

    kept = _row_id_columns(snap, cond)
    # without row ids to carry, the read scan (no per-row file keys) feeds the rewrite
    rows = target_scan(spark, snap, touched, drop_deleted=True, row_ids=True) if kept else \
        scan_rows(spark, snap, touched)
    staged.data.extend(write_rows(rows.select(*_columns(snap, values, cond), *kept), table, snap.schema,
                                  snap.metadata))
    staged.keeps_row_ids = bool(kept)
    removed = touched.to_pylist()
    txn.remove_files(removed)
    for f in staged.data:
        txn.add_file(f.to_add())
    written = sum(f.num_records for f in staged.data)
    return {
        "numUpdatedRows": updated,
        "numCopiedRows": written - updated,
        "numAddedFiles": len(staged.data),
        "numRemovedFiles": len(removed),
        "numAddedBytes": sum(f.size for f in staged.data),
        "numRemovedBytes": sum(int(r.get("size") or 0) for r in removed),
        "numDeletionVectorsRemoved": sum(1 for r in removed if r.get("deletionVector")),
    }


def _with_dvs(
    spark: Any, table: Any, snap: Any, txn: Transaction, touched: pa.Table, cond: Column,
    values: Mapping[str, Column], staged: Staged, updated: int,
) -> dict[str, int]:
    matched = target_scan(spark, snap, touched, drop_deleted=True, row_ids=True).filter(cond)
    kept = _row_id_columns(snap, None)
    staged.data.extend(write_rows(matched.select(*_columns(snap, values, None), *kept), table, snap.schema,
                                  snap.metadata))
    staged.keeps_row_ids = bool(kept)
    outcome = apply_dv_results(txn, snap, touched, run_dv_job(matched.select(FILE, ROW), snap, touched), staged)
    for f in staged.data:
        txn.add_file(f.to_add())
    return {
        "numUpdatedRows": updated,
        "numAddedFiles": len(staged.data),
        "numRemovedFiles": outcome.removed_files,
        "numAddedBytes": sum(f.size for f in staged.data),
        "numRemovedBytes": outcome.removed_bytes,
        "numDeletionVectorsAdded": outcome.dvs_added,
        "numDeletionVectorsRemoved": outcome.dvs_removed,
        "numDeletionVectorsUpdated": outcome.dvs_updated,
    }
