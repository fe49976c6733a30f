"""Work done after a successful commit: version checksum, periodic checkpoint, expired-log cleanup, and the
steps a higher layer hands in (the committer's: the Iceberg metadata of a UniForm table, :mod:`deltalog.uniform`).

None of it may fail the commit it follows: the commit is already durable, so every step is wrapped and
its errors are logged (``logging`` at WARNING, with the traceback) and reported, never raised. An
interrupt (``KeyboardInterrupt``, ``SystemExit``) stops the remaining steps and is kept in
:attr:`PostCommitReport.interrupt` for the caller to re-raise once it has recorded the commit: every
step is optional, so stopping between or inside them leaves a valid table.

Example:
    >>> report = run_post_commit(deltalog.Table("/data/t"), 20)      # doctest: +SKIP
    >>> report.crc, report.checkpoint is not None, report.errors     # doctest: +SKIP
    ('_delta_log/00000000000000000020.crc', True, [])
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deltalog.log.cleanup import Clock
from deltalog.log.crc import write_crc

if TYPE_CHECKING:
    from deltalog.log.checkpoint_writer import CheckpointResult
    from deltalog.log.reader import FileActions
    from deltalog.snapshot import Snapshot
    from deltalog.snapshot_load import SnapshotSource

log = logging.getLogger(__name__)

DEFAULT_CHECKPOINT_INTERVAL = 10


@dataclass
class PostCommitReport:
    """What :func:`run_post_commit` did; ``errors`` lists the steps that failed (already logged)."""

    version: int
    crc: str | None = None
    checkpoint: CheckpointResult | None = None
    cleaned: list[str] = field(default_factory=list)
    #: What each step handed in by the caller returned, by step name (``"iceberg"``: a UniForm table's
    #: :class:`deltalog.uniform.convert.SyncResult`).
    after: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: The step an interrupt stopped, and the interrupt itself (re-raised by the committer).
    interrupted_step: str | None = None
    interrupt: BaseException | None = None

    @property
    def failed_steps(self) -> list[str]:
        """The names of the steps that failed or were interrupted (``"checkpoint"``, ...)."""
        steps = [e.split(":", 1)[0] for e in self.errors]
        if self.interrupted_step is not None:
            steps.append(self.interrupted_step)
        return steps


def checkpoint_interval(snapshot: Snapshot) -> int:
    """``delta.checkpointInterval`` (default 10); an invalid value falls back to the default.

    Example:
        >>> checkpoint_interval(snap)                                # doctest: +SKIP
        10
    """
    raw = snapshot.properties.get("delta.checkpointInterval")
    if raw is None:
        return DEFAULT_CHECKPOINT_INTERVAL
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        log.warning(
            "table %s: invalid delta.checkpointInterval %r; using %d", snapshot.table, raw, DEFAULT_CHECKPOINT_INTERVAL
        )
        return DEFAULT_CHECKPOINT_INTERVAL
    return value


def should_checkpoint(snapshot: Snapshot) -> bool:
    """True when ``snapshot.version`` is a positive multiple of the checkpoint interval.

    Example:
        >>> should_checkpoint(deltalog.Table("/data/t").snapshot(10))  # doctest: +SKIP
        True
    """
    v = snapshot.version
    return v > 0 and v % checkpoint_interval(snapshot) == 0


def run_post_commit(
    table: SnapshotSource,
    version: int,
    *,
    snapshot: Snapshot | None = None,
    clock: Clock | None = None,
    write_checksum: bool = True,
    commit: FileActions | None = None,
    after: Sequence[tuple[str, Callable[[Snapshot], Any]]] = (),
) -> PostCommitReport:
    """Run the post-commit hooks for ``version`` of ``table``; never raises (an interrupt is returned in
    :attr:`PostCommitReport.interrupt`).

    Pass the committed ``snapshot`` when the caller has it, to avoid replaying the log again, and the
    ``commit``'s actions (a writer's own), so the checksum's histograms are kept from the previous
    version's ``.crc`` instead of computed from every file. Steps:
    ``.crc`` file; checkpoint when ``version % delta.checkpointInterval == 0``; log cleanup after a
    checkpoint unless ``delta.enableExpiredLogCleanup`` is ``false``; then each ``(name, step)`` of ``after``,
    called with the committed snapshot (the committer's Iceberg metadata of a UniForm table: a failure there is
    reported like the others, and the next commit or ``deltalog uniform sync`` catches up).

    Example:
        >>> run_post_commit(deltalog.Table("/data/t"), 3).errors       # doctest: +SKIP
        []
    """
    report = PostCommitReport(version=version)
    step = "load snapshot"
    try:
        snap = snapshot
        if snap is None or snap.version != version:
            try:
                snap = table.snapshot(version)
            except Exception as exc:
                _failed(report, step, table, version, exc)
                return report
        if write_checksum:
            step = "write checksum"
            try:
                report.crc = write_crc(snap, quiet=False, commit=commit)
            except Exception as exc:
                _failed(report, step, table, version, exc)
        checkpointed = False
        step = "checkpoint"
        try:
            if should_checkpoint(snap):
                from deltalog.log.checkpoint_writer import write_checkpoint

                report.checkpoint = write_checkpoint(snap, clock=clock)
                checkpointed = True
        except Exception as exc:
            _failed(report, step, table, version, exc)
        step = "log cleanup"
        try:
            enabled = snap.properties.get("delta.enableExpiredLogCleanup", "true").strip().lower() != "false"
            if checkpointed and enabled:
                from deltalog.log.cleanup import cleanup_expired_logs

                report.cleaned = cleanup_expired_logs(snap, clock=clock)
        except Exception as exc:
            _failed(report, step, table, version, exc)
        for step, run in after:
            try:
                report.after[step] = run(snap)
            except Exception as exc:
                _failed(report, step, table, version, exc)
    except BaseException as exc:  # an interrupt: keep it for the committer, which re-raises it
        report.interrupted_step = step
        report.interrupt = exc
    return report


def _failed(report: PostCommitReport, step: str, table: SnapshotSource, version: int, exc: BaseException) -> None:
    log.warning("post-commit %s failed for %s at version %d: %s", step, table.location, version, exc, exc_info=True)
    report.errors.append(f"{step}: {type(exc).__name__}: {exc}")


__all__ = [
    "DEFAULT_CHECKPOINT_INTERVAL",
    "PostCommitReport",
    "checkpoint_interval",
    "run_post_commit",
    "should_checkpoint",
]
