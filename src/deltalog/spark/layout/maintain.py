"""``DeltaTable.maintain()`` and maintenance after Spark writes: the kernel's plan
(:mod:`deltalog.maintenance`), with Spark's tasks moving the rows.

The plan is the kernel's -- read from the table's health, thresholds from its ``deltalog.maintenance.*``
properties -- and so are the steps that touch only the log (checkpoint, expired-log cleanup) and VACUUM;
compaction and purge go through Spark's ``OPTIMIZE`` / ``REORG ... APPLY (PURGE)``
(:func:`deltalog.spark.layout.optimize.optimize`), so no row passes through the driver.

After a DataFrame write, MERGE, UPDATE or DELETE, a table with ``deltalog.maintenance.afterCommit = true``
has the partitions the commit wrote compacted and purged when they pass the thresholds, within the budget
(``deltalog.maintenance.afterCommitBudget``); a failure there is logged, never raised: the write committed.

Example:
    >>> DeltaTable.forPath(spark, "/data/events").maintain(dryRun=True).select("action", "numBytes").collect()
    ... # doctest: +SKIP
    [Row(action='compact', numBytes=5242880)]
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.errors import DeltaError
from deltalog.maintenance import (
    ACTIONS,
    MaintenanceError,
    MaintenanceResult,
    MaintenanceStep,
    Rewritten,
    maintain,
    policy_of,
)
from deltalog.maintenance.run import partitions_except

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from deltalog.txn.handle import TableHandle

__all__ = ["SparkRewriter", "maintain_after_write", "maintain_frame"]

_LOG = logging.getLogger(__name__)
AFTER_COMMIT_PROPERTY = "deltalog.maintenance.afterCommit"


class SparkRewriter:
    """Rewrites for ``maintain`` through Spark's ``OPTIMIZE`` / ``REORG ... APPLY (PURGE)``.

    Example:
        >>> maintain(table, rewriter=SparkRewriter(spark, table))                      # doctest: +SKIP
    """

    def __init__(self, spark: Any, table: TableHandle) -> None:
        self.spark = spark
        self.table = table

    def compact(self, step: MaintenanceStep, clock: Callable[[], int] | None,
                progress: Callable[[int], None]) -> Rewritten:
        """Compact the step's partitions with Spark's OPTIMIZE.

        Example:
            >>> SparkRewriter(spark, table).compact(step, None, print).num_files          # doctest: +SKIP
            40
        """
        from deltalog.spark.layout.optimize import optimize

        done = optimize(self.spark, self.table.location, max_file_size=step.max_file_size,
                        min_file_size=step.min_file_size, partitions=[dict(p) for p in step.partitions])
        return _rewritten(done)

    def purge(self, step: MaintenanceStep, min_deleted_share: float, exclude: Sequence[Mapping[str, str | None]],
              clock: Callable[[], int] | None, progress: Callable[[int], None]) -> Rewritten:
        """Purge with Spark's REORG ... APPLY (PURGE), outside the partitions ``exclude`` names.

        Example:
            >>> SparkRewriter(spark, table).purge(step, 0.05, [], None, print).num_files  # doctest: +SKIP
            3
        """
        from deltalog.spark.layout.optimize import optimize

        done = optimize(self.spark, self.table.location, purge=True, min_deleted_share=min_deleted_share,
                        partitions=partitions_except(self.table, exclude))
        return _rewritten(done)


def _rewritten(done: Any) -> Rewritten:
    metrics = dict(done.metrics or {})
    return Rewritten(done.version, int(metrics.get("numFilesRemoved") or 0),
                     int((metrics.get("filesRemoved") or {}).get("totalSize") or 0))


def maintain_frame(spark: Any, table: TableHandle, *, dry_run: bool, actions: Sequence[str] | None = None
                   ) -> DataFrame:
    """Run (or with ``dry_run`` plan) ``table``'s maintenance with Spark; one row per step: ``action``,
    ``reason``, ``numFiles``, ``numBytes`` (planned), ``status``, ``version``, ``filesDone``, ``bytesDone``,
    ``error``. A step that failed raises once the others ran (:class:`~deltalog.maintenance.MaintenanceError`).

    Example:
        >>> maintain_frame(spark, table, dry_run=True).count()                           # doctest: +SKIP
        2
    """
    from deltalog.spark.common.compat import frame_from_arrow

    result = maintain(table, dry_run=dry_run, actions=tuple(actions or ACTIONS), rewriter=SparkRewriter(spark, table))
    frame: DataFrame = frame_from_arrow(spark, _rows(result))
    return frame


def _rows(result: MaintenanceResult) -> pa.Table:
    outs = result.outcomes
    return pa.table({
        "action": pa.array([o.step.action for o in outs], pa.string()),
        "reason": pa.array([o.step.reason for o in outs], pa.string()),
        "numFiles": pa.array([o.step.num_files for o in outs], pa.int64()),
        "numBytes": pa.array([o.step.num_bytes for o in outs], pa.int64()),
        "status": pa.array([o.status for o in outs], pa.string()),
        "version": pa.array([o.version for o in outs], pa.int64()),
        "filesDone": pa.array([o.num_files for o in outs], pa.int64()),
        "bytesDone": pa.array([o.num_bytes for o in outs], pa.int64()),
        "error": pa.array([o.error for o in outs], pa.string()),
    })


def maintain_after_write(spark: Any, location: str, configuration: Mapping[str, str],
                         partitions: Sequence[Mapping[str, Any]]) -> MaintenanceResult | None:
    """After a Spark write committed into ``partitions``: the table's after-commit maintenance, when its
    ``deltalog.maintenance.afterCommit`` property is true; ``None`` otherwise or when it failed (logged).

    Example:
        >>> maintain_after_write(spark, "/data/t", {"deltalog.maintenance.afterCommit": "true"}, [{}])
        ... # doctest: +SKIP
    """
    if str(configuration.get(AFTER_COMMIT_PROPERTY, "")).strip().lower() != "true" or not partitions:
        return None
    from deltalog.spark.common.core import open_table

    started = time.monotonic()
    try:
        table = open_table(location)
        policy = policy_of(table)
        unique = list({tuple(sorted((str(k), v) for k, v in p.items())): dict(p) for p in partitions}.values())
        return maintain(table, policy, actions=("compact", "purge"), partitions=unique,
                        rewriter=SparkRewriter(spark, table), deadline=started + policy.after_commit_budget_ms / 1000)
    except MaintenanceError as exc:
        _LOG.warning("maintenance after a write to %s: %s", location, exc)
        return exc.result
    except DeltaError as exc:  # the write committed; maintenance waits for the next one
        _LOG.warning("maintenance after a write to %s skipped: %s", location, exc)
        return None
