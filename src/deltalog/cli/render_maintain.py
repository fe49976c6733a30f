"""``deltalog maintain PATH``: plan from the table's health what it needs and do it (``--dry-run``: the plan only).

Each step prints what it rewrites or deletes and why; long steps show a progress bar (bytes) on stderr. The
thresholds are the table's ``deltalog.maintenance.*`` properties (docs/health.md), which the command's options
override for one run. Exit codes: 0 when every step ran, or for a plan (a plan is not a problem); 1 when a step
failed (the others still ran); 3 with ``--dry-run --check`` when steps are planned (for cron and CI).

Example:
    $ deltalog maintain /data/events --dry-run
    $ deltalog maintain /data/events --only compact --only purge --json
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltalog.cli.output import Output, format_bytes
from deltalog.maintenance import ACTIONS

if TYPE_CHECKING:
    from deltalog.maintenance import MaintenanceResult
    from deltalog.table import Table

__all__ = ["ACTIONS", "run"]

#: The exit codes (as :mod:`deltalog.cli` defines them).
EXIT_OK, EXIT_DELTA_ERROR, EXIT_PROBLEMS = 0, 1, 3


def run(out: Output, table: Table, *, dry_run: bool, check: bool, actions: tuple[str, ...],
        overrides: dict[str, Any]) -> int:
    """Plan and (unless ``dry_run``) run ``table``'s maintenance, print it, and return the exit code.

    Example:
        >>> run(Output(), deltalog.Table("/data/t"), dry_run=True, check=False, actions=ACTIONS,
        ...     overrides={})                                                            # doctest: +SKIP
        0
    """
    from deltalog.maintenance import MaintenanceError, policy_of

    policy = policy_of(table, **overrides)
    failed = False
    with out.progress() as bars:
        def progress(step: Any, done: int) -> None:
            bars(f"{step.action} ({format_bytes(step.num_bytes)})", done, step.num_bytes or None)

        try:
            result = table.maintain(policy, dry_run=dry_run, actions=actions, progress=progress)
        except MaintenanceError as exc:
            result, failed = exc.result, True
    out.emit(result.to_dict(), lambda: _render(out, result))
    if failed:
        out.error(MaintenanceError(result))
        return EXIT_DELTA_ERROR
    return EXIT_PROBLEMS if check and result.plan.steps else EXIT_OK


def _render(out: Output, result: MaintenanceResult) -> None:
    plan = result.plan
    if not plan.steps:
        out.print(f"{plan.table} (version {plan.version}): nothing to do; the table is within its maintenance policy")
        return
    title = f"{'Plan for' if result.dry_run else 'Maintenance of'} {plan.table} (version {plan.version})"
    rows = []
    for o in result.outcomes:
        s = o.step
        what = "-" if s.action == "checkpoint" else f"{s.num_files} files, {format_bytes(s.num_bytes)}"
        done = "" if result.dry_run else (f"version {o.version}" if o.version is not None else "")
        rows.append([s.action, what, s.reason, o.status if not o.error else f"{o.status}: {o.error}", done])
    out.print(out.table(["step", "rewrites / deletes", "why", "status", "commit"], rows, title=title))
    out.print(f"rewrite {format_bytes(plan.bytes_rewritten)}, delete {format_bytes(plan.bytes_deleted)}")
    after = result.health_after
    if after is not None and not result.dry_run:
        out.print(f"after: {after.num_files} files, {after.num_small_files} small "
                  f"({after.small_file_share:.0%}), deleted rows {after.deleted_row_share:.1%}, "
                  f"{after.commits_since_checkpoint} commits since the checkpoint")
