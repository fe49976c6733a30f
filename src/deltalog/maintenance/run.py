"""Carry out a maintenance plan: :func:`maintain` plans (:func:`~deltalog.maintenance.plan.plan_maintenance`)
and runs each step as its own commit, or only returns the plan with ``dry_run=True``.

Every step is safe beside concurrent writers: compaction and purge are ``dataChange=false`` rewrites that
plan again when they lose to a concurrent data change (a concurrent append never conflicts with them, and
they never fail one); a checkpoint and a log cleanup change no version; VACUUM deletes only files that no
version inside ``delta.deletedFileRetentionDuration`` needs. A step that fails is reported and the later
steps still run; once all ran, :class:`MaintenanceError` names what failed (its ``result`` holds what was
done).

Data files are rewritten by a :class:`Rewriter`: the kernel's (Arrow, in this process) by default; the Spark
engine passes its own, so that Spark's tasks move the rows.

Example:
    >>> result = maintain(deltalog.Table("/data/events"), dry_run=True)                  # doctest: +SKIP
    >>> [s.describe() for s in result.plan.steps]                                        # doctest: +SKIP
    ['compact: rewrite 40 files (5.0 MiB); 1 partitions with at least 30% and 4 files below 32.0 MiB: ...']
"""

from __future__ import annotations

import logging
import time
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deltalog.commands.compact import compact, purge
from deltalog.commands.vacuum import vacuum
from deltalog.errors import DeltaError
from deltalog.log.checkpoint_writer import write_checkpoint
from deltalog.log.cleanup import cleanup_expired_logs
from deltalog.log.segment import complete_checkpoints, list_log
from deltalog.maintenance.plan import ACTIONS, MaintenancePlan, MaintenanceStep, plan_maintenance
from deltalog.maintenance.policy import MaintenancePolicy

if TYPE_CHECKING:
    from deltalog.health import TableHealth
    from deltalog.txn.handle import TableHandle

__all__ = ["KernelRewriter", "MaintenanceError", "MaintenanceResult", "Rewriter", "Rewritten", "StepOutcome",
           "maintain", "partitions_except", "policy_of"]

log = logging.getLogger(__name__)

#: ``progress(step, bytes_done)``: called as a step advances and once more when it ends.
Progress = Callable[[MaintenanceStep, int], None]


@dataclass(frozen=True)
class Rewritten:
    """What a rewrite committed: its version (``None``: nothing was left to rewrite), files and bytes."""

    version: int | None
    num_files: int
    num_bytes: int


class Rewriter(typing.Protocol):
    """What rewrites data files for ``maintain``: compaction of some partitions and purge of deletion vectors."""

    def compact(self, step: MaintenanceStep, clock: Callable[[], int] | None,
                progress: Callable[[int], None]) -> Rewritten:
        """Compact ``step.partitions`` (small files below ``step.min_file_size`` into ``step.max_file_size``)."""
        ...

    def purge(self, step: MaintenanceStep, min_deleted_share: float, exclude: Sequence[Mapping[str, str | None]],
              clock: Callable[[], int] | None, progress: Callable[[int], None]) -> Rewritten:
        """Purge the deletion vectors deleting at least ``min_deleted_share`` of their file's rows."""
        ...


class KernelRewriter:
    """Rewrites with the kernel's commands (:func:`deltalog.commands.compact.compact` / ``purge``), in Arrow.

    Example:
        >>> maintain(deltalog.Table("/data/t"), rewriter=KernelRewriter(deltalog.Table("/data/t")))  # doctest: +SKIP
    """

    def __init__(self, table: TableHandle) -> None:
        self.table = table

    def compact(self, step: MaintenanceStep, clock: Callable[[], int] | None,
                progress: Callable[[int], None]) -> Rewritten:
        """Compact the step's partitions with :func:`deltalog.commands.compact.compact`.

        Example:
            >>> KernelRewriter(table).compact(step, None, print).num_files               # doctest: +SKIP
            40
        """
        done = compact(self.table, partitions=step.partitions, max_file_size=step.max_file_size,
                       min_file_size=step.min_file_size, clock=clock, progress=progress)
        return Rewritten(done.version, done.num_files_removed, int(done.metrics.get("numRemovedBytes") or 0))

    def purge(self, step: MaintenanceStep, min_deleted_share: float, exclude: Sequence[Mapping[str, str | None]],
              clock: Callable[[], int] | None, progress: Callable[[int], None]) -> Rewritten:
        """Purge with :func:`deltalog.commands.compact.purge`, outside the partitions ``exclude`` names.

        Example:
            >>> KernelRewriter(table).purge(step, 0.05, [], None, print).num_files       # doctest: +SKIP
            3
        """
        done = purge(self.table, min_deleted_share=min_deleted_share, partitions=partitions_except(self.table, exclude),
                     clock=clock, progress=progress)
        return Rewritten(done.version, done.num_files_removed, int(done.metrics.get("numRemovedBytes") or 0))


def partitions_except(table: TableHandle, exclude: Sequence[Mapping[str, str | None]]
                      ) -> list[dict[str, str | None]] | None:
    """The partitions of ``table``'s live files other than ``exclude`` (values as the log writes them);
    ``None`` (every partition) when nothing is excluded.

    Example:
        >>> partitions_except(deltalog.Table("/data/events"), [{"day": "2024-05-01"}])  # doctest: +SKIP
        [{'day': '2024-05-02'}]
    """
    from deltalog.commands.optimize_plan import partition_key

    skip = {partition_key({"partitionValues": p}) for p in exclude}
    if not skip:
        return None
    live = table.snapshot().add_files().column("partitionValues").to_pylist()
    found = {partition_key({"partitionValues": v or {}}): dict(v or {}) for v in live}
    return [v for k, v in found.items() if k not in skip]


@dataclass(frozen=True)
class StepOutcome:
    """What became of one step: ``status`` is ``"done"``, ``"planned"`` (a dry run), ``"nothing to do"``
    (the work was gone when the step ran) or ``"failed"`` (``error`` says why); ``version`` is the commit
    (or checkpoint) it made; ``num_files`` / ``num_bytes`` what it actually rewrote or deleted.

    Example:
        >>> StepOutcome(MaintenanceStep("checkpoint", "why"), "done", version=12).ok
        True
    """

    step: MaintenanceStep
    status: str
    version: int | None = None
    num_files: int = 0
    num_bytes: int = 0
    seconds: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the step did not fail.

        Example:
            >>> StepOutcome(MaintenanceStep("vacuum", "why"), "failed", error="boom").ok
            False
        """
        return self.status != "failed"

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON-ready data.

        Example:
            >>> StepOutcome(MaintenanceStep("checkpoint", "why"), "done", 3).to_dict()["status"]
            'done'
        """
        return {**self.step.to_dict(), "status": self.status, "version": self.version, "filesDone": self.num_files,
                "bytesDone": self.num_bytes, "seconds": round(self.seconds, 3), "error": self.error}


@dataclass(frozen=True)
class MaintenanceResult:
    """What :func:`maintain` did: the plan, each step's outcome, and the health after it (``None`` for a dry
    run).

    Example:
        >>> r = maintain(deltalog.Table("/data/events"))                                 # doctest: +SKIP
        >>> [(o.step.action, o.status, o.version) for o in r.outcomes]                   # doctest: +SKIP
        [('compact', 'done', 14), ('vacuum', 'done', 16)]
    """

    plan: MaintenancePlan
    outcomes: tuple[StepOutcome, ...]
    dry_run: bool
    health_after: TableHealth | None = field(default=None, repr=False)

    @property
    def failed(self) -> list[StepOutcome]:
        """The steps that failed.

        Example:
            >>> maintain(deltalog.Table("/data/events")).failed                          # doctest: +SKIP
            []
        """
        return [o for o in self.outcomes if not o.ok]

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data.

        Example:
            >>> maintain(deltalog.Table("/data/events"), dry_run=True).to_dict()["dryRun"]   # doctest: +SKIP
            True
        """
        return {**self.plan.to_dict(), "dryRun": self.dry_run, "steps": [o.to_dict() for o in self.outcomes]}


class MaintenanceError(DeltaError):
    """Some steps of a maintenance run failed; the others ran. ``result`` is the whole run.

    Example:
        >>> try:                                                                         # doctest: +SKIP
        ...     maintain(deltalog.Table("/data/events"))
        ... except MaintenanceError as exc:
        ...     print([o.step.action for o in exc.result.failed])
        ['vacuum']
    """

    def __init__(self, result: MaintenanceResult) -> None:
        failed = result.failed
        done = [f"{o.step.action} (version {o.version})" if o.version is not None else o.step.action
                for o in result.outcomes if o.status == "done"]
        what = "; ".join(f"{o.step.action} failed: {o.error}" for o in failed)
        super().__init__(
            f"maintenance of the table at version {result.plan.version}: {len(failed)} of {len(result.outcomes)} "
            f"steps failed ({what}); done: {', '.join(done) or 'nothing'}. Each step is its own commit, so the "
            "table is consistent; fix the cause and run maintain again (it plans only what is still needed)",
            table=result.plan.table, version=result.plan.version)
        self.result = result


def maintain(
    table: TableHandle,
    policy: MaintenancePolicy | None = None,
    *,
    dry_run: bool = False,
    actions: Sequence[str] = ACTIONS,
    partitions: Sequence[Mapping[str, str | None]] | None = None,
    clock: Callable[[], int] | None = None,
    progress: Progress | None = None,
    rewriter: Rewriter | None = None,
    deadline: float | None = None,
) -> MaintenanceResult:
    """Plan ``table``'s maintenance and, unless ``dry_run``, carry it out step by step (see the module
    docstring and :func:`~deltalog.maintenance.plan.plan_maintenance` for ``policy``, ``actions``,
    ``partitions`` and ``clock``). ``progress(step, bytes_done)`` follows the long steps; ``deadline`` (a
    :func:`time.monotonic` value) skips the steps not started by then. Raises :class:`MaintenanceError` when
    a step failed, after the others ran. A step stopped by the deadline is ``"skipped"``: the files it wrote
    are deleted and nothing of it is committed.

    Example:
        >>> r = maintain(deltalog.Table("/data/events"), dry_run=True)                   # doctest: +SKIP
        >>> [(o.step.action, o.status) for o in r.outcomes]                              # doctest: +SKIP
        [('compact', 'planned'), ('vacuum', 'planned')]
    """
    plan = plan_maintenance(table, policy, actions=actions, partitions=partitions, clock=clock)
    if dry_run:
        return MaintenanceResult(plan, tuple(StepOutcome(s, "planned", num_files=s.num_files, num_bytes=s.num_bytes)
                                             for s in plan.steps), True)
    rewrite = rewriter if rewriter is not None else KernelRewriter(table)
    if deadline is not None:
        progress = _within(deadline, progress)
    outcomes: list[StepOutcome] = []
    compacted: list[Mapping[str, str | None]] = []
    for step in plan.steps:
        if deadline is not None and time.monotonic() >= deadline:
            outcomes.append(StepOutcome(step, "skipped", error="out of time"))
            continue
        started = time.monotonic()
        try:
            outcome = _run_step(table, plan, step, rewrite, compacted, clock, progress)
        except OutOfTime:  # the step's new files were deleted; nothing of it was committed
            outcome = StepOutcome(step, "skipped", error="out of time")
        except DeltaError as exc:
            log.warning("maintenance step %s of %s failed: %s", step.action, table.location, exc)
            outcome = StepOutcome(step, "failed", error=exc.message)
        except Exception as exc:  # an unexpected failure: reported like the others, the later steps still run
            log.warning("maintenance step %s of %s failed", step.action, table.location, exc_info=True)
            outcome = StepOutcome(step, "failed", error=f"{type(exc).__name__}: {exc}")
        outcome = StepOutcome(outcome.step, outcome.status, outcome.version, outcome.num_files, outcome.num_bytes,
                              time.monotonic() - started, outcome.error)
        if outcome.status == "done" and step.action == "compact":
            compacted.extend(step.partitions)
        if progress is not None:
            progress(step, step.num_bytes)
        outcomes.append(outcome)
    from deltalog.health import table_health

    after = table_health(table.snapshot(), small_file_threshold=plan.policy.small_file_threshold, clock=clock,
                         history_depth=0) if plan.steps else plan.health
    result = MaintenanceResult(plan, tuple(outcomes), False, after)
    if result.failed:
        raise MaintenanceError(result)
    return result


class OutOfTime(Exception):
    """Raised from a step's progress when the run's deadline passed: the step stops before its commit."""


def _within(deadline: float, progress: Progress | None) -> Progress:
    """``progress`` that stops the step (:class:`OutOfTime`) once ``deadline`` has passed."""

    def check(step: MaintenanceStep, done: int) -> None:
        if progress is not None:
            progress(step, done)
        if done < step.num_bytes and time.monotonic() >= deadline:
            raise OutOfTime(step.action)

    return check


def _run_step(table: TableHandle, plan: MaintenancePlan, step: MaintenanceStep, rewrite: Rewriter,
              compacted: Sequence[Mapping[str, str | None]], clock: Callable[[], int] | None,
              progress: Progress | None) -> StepOutcome:
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(step, min(done, step.num_bytes))

    if step.action in ("compact", "purge"):
        made = (rewrite.compact(step, clock, advance) if step.action == "compact"
                else rewrite.purge(step, plan.policy.deleted_row_share, compacted, clock, advance))
        if made.version is None:
            return StepOutcome(step, "nothing to do")
        return StepOutcome(step, "done", made.version, made.num_files, made.num_bytes)
    if step.action == "checkpoint":
        snap = table.snapshot()
        if snap.version in complete_checkpoints(list_log(snap.store, snap.version)):
            return StepOutcome(step, "nothing to do", snap.version)  # a writer's post-commit step made it
        return StepOutcome(step, "done", write_checkpoint(snap, clock=clock).version)
    if step.action == "cleanup-log":
        snap = table.snapshot()
        sizes = {f.path: f.size for f in snap.store.list_dir("_delta_log", recursive=True)}
        gone = cleanup_expired_logs(snap, clock=clock)
        return StepOutcome(step, "done" if gone else "nothing to do", None, len(gone),
                           sum(sizes.get(p, 0) for p in gone))
    if step.action == "vacuum":
        try:
            res = vacuum(table, dry_run=False, lite=step.lite, clock=clock)
        except DeltaError as exc:
            if not step.lite or "DELTA_CANNOT_VACUUM_LITE" not in str(exc):
                raise
            res = vacuum(table, dry_run=False, clock=clock)
        return StepOutcome(step, "done" if res.num_deleted_files else "nothing to do", res.end_version,
                           res.num_deleted_files, res.size_of_data_to_delete)
    raise DeltaError(f"unknown maintenance step {step.action!r}", table=table.location)  # pragma: no cover


def policy_of(table: TableHandle, **overrides: Any) -> MaintenancePolicy:
    """The maintenance policy ``table``'s properties set, with ``overrides`` (field names) on top.

    Example:
        >>> policy_of(deltalog.Table("/data/events"), vacuum=False).vacuum               # doctest: +SKIP
        False
    """
    return MaintenancePolicy.from_properties(table.snapshot().properties, table=table.location, **overrides)
