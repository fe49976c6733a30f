"""Maintenance after a writer's commit, when the table asks for it (``deltalog.maintenance.afterCommit``).

A kernel writer (``write_table``, ``Table`` DML and MERGE) whose commit changed data runs the cheap steps on the
partitions it wrote: compaction where they pass the small-file thresholds, purge of heavy deletion vectors
there -- like delta-spark's auto compaction. Checkpoints and expired-log cleanup already follow commits
(:mod:`deltalog.log.post_commit`). The steps stop at the budget (``deltalog.maintenance.afterCommitBudget``,
30 seconds by default): a step still running then is abandoned before its commit and its files deleted.
Nothing here fails the user's commit, which has landed: failures are logged and returned in the commit
result's ``post_commit_errors``.

Example:
    >>> maintain_after_commit(deltalog.Table("/data/events"), [{"day": "2024-05-01"}])  # doctest: +SKIP
    []
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from deltalog.errors import DeltaError
from deltalog.maintenance.run import maintain, policy_of

if TYPE_CHECKING:
    from deltalog.txn.handle import TableHandle

__all__ = ["maintain_after_commit"]

log = logging.getLogger(__name__)


def maintain_after_commit(table: TableHandle, partitions: Sequence[dict[str, str | None]]) -> list[str]:
    """Run the cheap maintenance steps on ``partitions`` (those a commit wrote) within the table's budget;
    returns the failures (already logged), never raises an ``Exception``.

    Example:
        >>> maintain_after_commit(deltalog.Table("/data/events"), [{}])                  # doctest: +SKIP
        []
    """
    started = time.monotonic()
    try:
        policy = policy_of(table)
        unique = list({tuple(sorted(p.items(), key=lambda kv: kv[0])): p for p in partitions}.values())
        if not unique:
            return []
        result = maintain(table, policy, actions=("compact", "purge"), partitions=unique,
                          deadline=started + policy.after_commit_budget_ms / 1000)
    except DeltaError as exc:
        log.warning("maintenance after a commit to %s failed: %s", table.location, exc)
        return [f"maintenance: {exc.message}"]
    except Exception as exc:  # never fail the commit it follows
        log.warning("maintenance after a commit to %s failed", table.location, exc_info=True)
        return [f"maintenance: {type(exc).__name__}: {exc}"]
    for outcome in result.outcomes:
        log.info("maintenance after a commit to %s: %s %s (version %s)", table.location, outcome.step.action,
                 outcome.status, outcome.version)
    return []
