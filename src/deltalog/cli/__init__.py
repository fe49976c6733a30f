"""The ``deltalog`` command: inspect, check and maintain Delta tables from a shell.

Commands: ``describe``, ``history``, ``files``, ``show``, ``changes``, ``version-at``, ``health``, ``maintain``,
``vacuum``, ``checkpoint``, ``restore``, ``check`` and ``convert`` (``deltalog COMMAND --help`` for each). Every
command takes ``--json`` (one JSON document on stdout, for scripts) and ``--debug`` (tracebacks on errors); both
may also come before the command. Progress bars appear on stderr for long work when it is a terminal.

Exit codes: ``0`` success; ``1`` a Delta error (no table, corrupt log, unsupported feature, refused
operation, I/O error); ``2`` usage error (unknown option, bad value); ``3`` ``check`` found problems
(still there after ``--repair``), or ``health`` found a threshold passed. Errors are one line on stderr.

Example:
    $ deltalog describe /data/events
    $ deltalog history /data/events --limit 5 --json
    $ deltalog files /data/events --version 3
    $ deltalog vacuum /data/events --retention-hours 168 --execute
    $ deltalog check /data/events --repair
    $ deltalog health /data/events --max-small-file-share 0.5 --json
    $ deltalog health /data/events --html health.html

    >>> main(["describe", "/no/such/table"])                         # doctest: +SKIP
    deltalog: no Delta table: the path does not exist [table /no/such/table]
    1
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from deltalog.cli import render
from deltalog.cli.output import ObservedStore, Output
from deltalog.errors import DeltaError, InvalidArgumentError

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.table import Table

__all__ = ["EXIT_DELTA_ERROR", "EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "cli", "main"]

EXIT_OK = 0
EXIT_DELTA_ERROR = 1
EXIT_USAGE = 2
EXIT_PROBLEMS = 3

F = TypeVar("F", bound=Callable[..., Any])

_EPILOG = (
    "Exit codes: 0 ok, 1 Delta error, 2 usage error, 3 check found problems or health passed a threshold. "
    "--json and --debug work before or after the command."
)


def _version() -> str:
    from deltalog.version import __version__

    return __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EPILOG)
@click.option("--json", "json_mode", is_flag=True, help="Print one JSON document on stdout (for scripts).")
@click.option("--debug", is_flag=True, help="Show the traceback of errors.")
@click.option("--no-progress", is_flag=True, help="Never show progress bars.")
@click.option("-o", "--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Storage option for s3://, az://, abfss://, gs:// tables (repeatable), e.g. AWS_REGION=eu-west-1; "
                   "the environment (AWS_*, AZURE_STORAGE_*, GOOGLE_*) supplies the rest.")
@click.version_option(_version(), "-V", "--version", prog_name="deltalog")
@click.pass_context
def cli(ctx: click.Context, json_mode: bool, debug: bool, no_progress: bool, options: tuple[str, ...]) -> None:
    """Inspect, check and maintain Delta Lake tables without a JVM."""
    ctx.obj = {"json": json_mode, "debug": debug, "no_progress": no_progress,
               "options": _pairs(options, "KEY")}


def _command(name: str, short: str, help_text: str) -> Callable[[F], F]:
    """A subcommand with ``--json``/``--debug`` whose body gets an :class:`Output` and returns an exit
    code; Delta and I/O errors become one line on stderr and exit code 1."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, json_flag: bool, debug_flag: bool, option_pairs: tuple[str, ...],
                    **kwargs: Any) -> int:
            ctx = click.get_current_context()
            obj = ctx.obj = dict(ctx.obj or {})
            obj["options"] = {**obj.get("options", {}), **_pairs(option_pairs, "KEY")}
            out = Output(
                json_mode=json_flag or bool(obj.get("json")),
                debug=debug_flag or bool(obj.get("debug")),
                progress=not obj.get("no_progress"),
            )
            try:
                return int(fn(out, *args, **kwargs))
            except click.ClickException:
                raise
            except (DeltaError, OSError) as exc:
                out.error(exc)
                return EXIT_DELTA_ERROR
            except KeyboardInterrupt as exc:  # its notes say what was committed before it arrived
                notes = " ".join(getattr(exc, "__notes__", []))
                out.error(KeyboardInterrupt(f"interrupted. {notes}".strip() if notes else "interrupted"))
                return 130
            except Exception as exc:  # a bug: still one line, the traceback with --debug
                out.error(exc, prefix=f"internal error ({type(exc).__name__}; rerun with --debug): ")
                return EXIT_DELTA_ERROR

        wrapper = click.option("--debug", "debug_flag", is_flag=True, help="Show the traceback of errors.")(wrapper)
        wrapper = click.option("-o", "--option", "option_pairs", multiple=True, metavar="KEY=VALUE",
                               help="Storage option for object-store tables (repeatable).")(wrapper)
        wrapper = click.option("--json", "json_flag", is_flag=True, help="Print one JSON document on stdout.")(wrapper)
        return cast(F, cli.command(name, help=help_text, short_help=short, epilog=_EPILOG)(wrapper))

    return decorate


def _options() -> dict[str, str]:
    """The storage options given with ``--option`` (before or after the command)."""
    ctx = click.get_current_context(silent=True)
    found = ctx.find_root().obj if ctx is not None else None
    current = ctx.obj if ctx is not None else None
    merged: dict[str, str] = {}
    for obj in (found, current):
        if isinstance(obj, dict):
            merged.update(obj.get("options") or {})
    return merged


def _table(path: str, **kwargs: Any) -> Table:
    from deltalog.table import Table  # here, not at the top: ``--help`` and usage errors need none of it

    return Table(path, storage_options=_options(), **kwargs)


def _timestamp(value: str | None) -> int | str | None:
    if value is None:
        return None
    text = value.strip()
    return int(text) if text.isdigit() else text


def _pairs(values: Sequence[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not {what}=VALUE")
        out[key.strip()] = value.strip()
    return out


_PATH = click.argument("path", metavar="PATH")
_VERSION = click.option(
    "--version", "version", type=click.IntRange(min=0), default=None, help="Time travel to this version."
)
_TIMESTAMP = click.option(
    "--timestamp", default=None, help="Time travel to this time (ISO 8601, or epoch milliseconds)."
)


def _snapshot(path: str, version: int | None, timestamp: str | None) -> Snapshot:
    if version is not None and timestamp is not None:
        raise click.UsageError("give --version or --timestamp, not both")
    return _table(path).snapshot(version, timestamp=_timestamp(timestamp))


@_command(
    "describe",
    "Version, protocol, schema, partitioning, properties, size.",
    "Version, protocol and features, schema, partitioning, properties, file count and size.",
)
@_PATH
@_VERSION
@_TIMESTAMP
def describe(out: Output, path: str, version: int | None, timestamp: str | None) -> int:
    snap = _snapshot(path, version, timestamp)
    doc = render.describe_document(snap)
    out.emit(doc, lambda: render.describe(out, doc, snap))
    return EXIT_OK


@_command(
    "history",
    "Commits, newest first.",
    "Commits, newest first: version, time, operation, parameters, metrics.",
)
@_PATH
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Show at most this many commits.")
def history(out: Output, path: str, limit: int | None) -> int:
    table = _table(path)
    entries = table.history(limit=limit)
    out.emit(entries, lambda: render.history(out, entries, table.location))
    return EXIT_OK


@_command(
    "files",
    "Live data files, at the latest or an older version.",
    "Live data files (path, size, partition values, records) at the latest or an older version.",
)
@_PATH
@_VERSION
@_TIMESTAMP
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Show at most this many files.")
def files(out: Output, path: str, version: int | None, timestamp: str | None, limit: int | None) -> int:
    snap = _snapshot(path, version, timestamp)
    rows = render.file_rows(snap, limit=limit)
    out.emit(rows, lambda: render.files(out, rows, snap))
    return EXIT_OK


@_command(
    "show",
    "Rows of the table (a preview), at the latest or an older version.",
    "Rows of the table: the first --limit rows found (20 by default) of the --columns asked for, matching "
    "--where (a SQL condition; partitions and files that cannot match are not read).",
)
@_PATH
@_VERSION
@_TIMESTAMP
@click.option("--where", "where", default=None, metavar="SQL", help="Only rows matching this condition.")
@click.option("--columns", "columns", default=None, metavar="COLS", help="Comma-separated columns to show.")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, help="At most this many rows.")
def show(out: Output, path: str, version: int | None, timestamp: str | None, where: str | None,
         columns: str | None, limit: int) -> int:
    snap = _snapshot(path, version, timestamp)
    names = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    rows = snap.to_arrow(columns=names, filter=where, limit=limit)
    out.emit(rows.to_pylist(), lambda: render.show(out, rows, snap))
    return EXIT_OK


@_command(
    "changes",
    "Rows the table's change data feed recorded (inserts, deletes, updates).",
    "The change data feed from --from (a version) or --from-timestamp to --to / --to-timestamp (default: the "
    "latest version): each changed row with _change_type, _commit_version and _commit_timestamp, the first "
    "--limit rows of the --columns asked for, matching --where (SQL over the table's and those columns).",
)
@_PATH
@click.option("--from", "start", type=click.IntRange(min=0), default=None, help="First version.")
@click.option("--to", "end", type=click.IntRange(min=0), default=None, help="Last version (default: the latest).")
@click.option("--from-timestamp", default=None, help="First commit at or after this time (ISO 8601 or epoch ms).")
@click.option("--to-timestamp", default=None, help="Last commit at or before this time.")
@click.option("--where", "where", default=None, metavar="SQL", help="Only changes matching this condition.")
@click.option("--columns", "columns", default=None, metavar="COLS", help="Comma-separated columns to show.")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, help="At most this many rows.")
def changes(out: Output, path: str, start: int | None, end: int | None, from_timestamp: str | None,
            to_timestamp: str | None, where: str | None, columns: str | None, limit: int) -> int:
    if start is None and from_timestamp is None:
        raise click.UsageError("give --from VERSION or --from-timestamp TIME")
    names = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    rows = _table(path).changes(starting_version=start, ending_version=end, columns=names, filter=where,
                                starting_timestamp=_timestamp(from_timestamp),
                                ending_timestamp=_timestamp(to_timestamp))
    total = rows.num_rows
    rows = rows.slice(0, limit)
    out.emit(rows.to_pylist(), lambda: render.changes(out, rows, total))
    return EXIT_OK


@_command(
    "version-at",
    "The version that was current at a timestamp.",
    "The version that was current at TIMESTAMP (ISO 8601, or epoch milliseconds).",
)
@_PATH
@click.argument("timestamp")
def version_at(out: Output, path: str, timestamp: str) -> int:
    from deltalog.log.timestamps import to_millis

    ts = _timestamp(timestamp)
    assert ts is not None
    version = _table(path).version_at(ts)
    doc = {"timestamp": timestamp, "timestamp_ms": to_millis(ts), "version": version}
    out.emit(doc, lambda: out.print(str(version)))
    return EXIT_OK


@_command(
    "health",
    "Table health from the log alone: file sizes, small files, deleted rows, VACUUM and checkpoint backlog.",
    "Table health from the log alone (no data file is read): live files, bytes and rows; the file-size histogram "
    "of the table and of its partitions; small files; partition skew; deletion vectors and the reads they cost; "
    "files without statistics; clustering / Z-order coverage; tombstones and the bytes a VACUUM would reclaim; "
    "commits since the last checkpoint; the last OPTIMIZE and VACUUM; protocol and features. With --max-... "
    "thresholds the exit code is 3 when one is passed (for cron and CI); --html FILE also writes a self-contained "
    "HTML report with plots. docs/health.md explains every number.",
)
@_PATH
@_VERSION
@_TIMESTAMP
@click.option("--small-file-threshold", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="Files below this size are small (default: a quarter of delta.targetFileSize, else 32 MiB).")
@click.option("--history-depth", type=click.IntRange(min=0), default=None, metavar="N",
              help="Scan at most N commits for the last OPTIMIZE / VACUUM (default 1000).")
@click.option("--partitions", "max_partitions", type=click.IntRange(min=0), default=10, show_default=True,
              metavar="N", help="Show this many partitions, those with the most small files first (--json lists all).")
@click.option("--max-small-file-share", type=click.FloatRange(0, 1), default=None, metavar="SHARE",
              help="Exit 3 when more than this share of the files is small, e.g. 0.5.")
@click.option("--max-deleted-share", type=click.FloatRange(0, 1), default=None, metavar="SHARE",
              help="Exit 3 when deletion vectors delete more than this share of the rows, e.g. 0.2.")
@click.option("--max-commits-since-checkpoint", type=click.IntRange(min=0), default=None, metavar="N",
              help="Exit 3 when a reader replays more than N commits after the last checkpoint.")
@click.option("--max-reclaimable-bytes", type=click.IntRange(min=0), default=None, metavar="BYTES",
              help="Exit 3 when a VACUUM would reclaim more than this many bytes (tombstones past the retention).")
@click.option("--html", "html_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Also write an HTML report with plots to FILE (one self-contained page that opens offline).")
@click.option("--html-versions", type=click.IntRange(min=0), default=300, show_default=True, metavar="N",
              help="The HTML report plots the table's size, files and commit rate over the last N versions.")
def health(out: Output, path: str, version: int | None, timestamp: str | None, small_file_threshold: int | None,
           history_depth: int | None, max_partitions: int, max_small_file_share: float | None,
           max_deleted_share: float | None, max_commits_since_checkpoint: int | None,
           max_reclaimable_bytes: int | None, html_file: str | None, html_versions: int) -> int:
    from deltalog.cli import render_health as show
    from deltalog.health.compute import DEFAULT_HISTORY_DEPTH, table_health

    if version is not None and timestamp is not None:
        raise click.UsageError("give --version or --timestamp, not both")
    table = _table(path)
    if timestamp is not None:
        version = table.version_at(cast(int | str, _timestamp(timestamp)))
    snapshot = table.snapshot(version)  # what Table.health() reads; the HTML report reads its history too
    report = table_health(snapshot, small_file_threshold=small_file_threshold,
                          history_depth=DEFAULT_HISTORY_DEPTH if history_depth is None else history_depth)
    thresholds: dict[str, float | None] = {
        "max_small_file_share": max_small_file_share, "max_deleted_share": max_deleted_share,
        "max_commits_since_checkpoint": max_commits_since_checkpoint, "max_reclaimable_bytes": max_reclaimable_bytes,
    }
    breaches = report.breaches(
        max_small_file_share=max_small_file_share, max_deleted_share=max_deleted_share,
        max_commits_since_checkpoint=max_commits_since_checkpoint, max_reclaimable_bytes=max_reclaimable_bytes,
    )
    if html_file is not None:
        from pathlib import Path

        from deltalog.health.report_html import html_report

        page = html_report(snapshot, health=report, versions=html_versions, thresholds=thresholds)
        Path(html_file).write_text(page, encoding="utf-8")
    doc = show.health_document(report, thresholds, breaches)
    checked = any(v is not None for v in thresholds.values())
    out.emit(doc, lambda: show.health(out, report, breaches, checked=checked, partitions=max_partitions))
    if html_file is not None:
        out.note(f"HTML report written to {html_file}")
    return EXIT_PROBLEMS if breaches else EXIT_OK


#: The steps of ``maintain`` (:data:`deltalog.maintenance.ACTIONS`, named here so --help imports none of it).
MAINTENANCE_STEPS = ("compact", "purge", "checkpoint", "cleanup-log", "vacuum")


@_command(
    "maintain",
    "Compact, purge, checkpoint, clean up and vacuum what the table's health asks for.",
    "Plan from the table's health (read from its log) what it needs -- compact the partitions full of small "
    "files, purge deletion vectors that delete a large share of their file (REORG ... APPLY (PURGE)), checkpoint a "
    "long log, delete expired log files, VACUUM files past the retention (LITE where the log allows) -- and do "
    "it, each step its own commit that concurrent writers never conflict with. --dry-run prints the plan with "
    "the files and bytes each step would rewrite or delete. Thresholds come from the table's "
    "deltalog.maintenance.* properties (docs/health.md); the options override them for this run. Exit 1 when a "
    "step failed (the others still ran); with --dry-run --check, 3 when the plan has steps.",
)
@_PATH
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--check", is_flag=True, help="With --dry-run: exit 3 when the plan has steps.")
@click.option("--only", multiple=True, type=click.Choice(MAINTENANCE_STEPS), help="Run only these steps (repeatable).")
@click.option("--skip", multiple=True, type=click.Choice(MAINTENANCE_STEPS), help="Leave out these steps (repeatable).")
@click.option("--small-file-share", type=click.FloatRange(0, 1), default=None, metavar="SHARE",
              help="Compact a partition when at least this share of its files is small (default 0.3).")
@click.option("--min-small-files", type=click.IntRange(min=1), default=None, metavar="N",
              help="... and it has at least N small files (default 4).")
@click.option("--small-file-threshold", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="Files below this size are small (default: a quarter of delta.targetFileSize, else 32 MiB).")
@click.option("--deleted-row-share", type=click.FloatRange(0, 1), default=None, metavar="SHARE",
              help="Purge a file's deletion vector when it deletes at least this share of its rows (default 0.05).")
def maintain(out: Output, path: str, dry_run: bool, check: bool, only: tuple[str, ...], skip: tuple[str, ...],
             small_file_share: float | None, min_small_files: int | None, small_file_threshold: int | None,
             deleted_row_share: float | None) -> int:
    from deltalog.cli import render_maintain as run

    if check and not dry_run:
        raise click.UsageError("--check goes with --dry-run")
    actions = tuple(a for a in (only or MAINTENANCE_STEPS) if a not in skip)
    if not actions:
        raise click.UsageError("--only and --skip leave no step to run")
    overrides = {k: v for k, v in {
        "small_file_share": small_file_share, "min_small_files": min_small_files,
        "small_file_threshold": small_file_threshold, "deleted_row_share": deleted_row_share}.items() if v is not None}
    return run.run(out, _table(path), dry_run=dry_run, check=check, actions=actions, overrides=overrides)


@_command(
    "vacuum",
    "Delete unreferenced data files (a dry run by default).",
    "Delete data files no retained version needs; lists them only, unless --execute.",
)
@_PATH
@click.option("--retention-hours", type=click.FloatRange(min=0), default=None,
              help="Keep files removed less than this long ago (default: delta.deletedFileRetentionDuration).")
@click.option("--dry-run/--execute", "dry_run", default=True, show_default=True,
              help="List what would be deleted, or delete it.")
@click.option("--no-retention-check", is_flag=True,
              help="Allow a retention shorter than the table's setting (unsafe with concurrent readers/writers).")
@click.option("--lite", is_flag=True,
              help="Find the files in the log (removed since the last vacuum) instead of listing the table "
                   "(VACUUM LITE: faster on large tables; files the log never named stay).")
def vacuum(
    out: Output, path: str, retention_hours: float | None, dry_run: bool, no_retention_check: bool, lite: bool
) -> int:
    from deltalog.storage import LogStore, store_for

    with out.progress() as progress:
        store = ObservedStore(store_for(path, options=_options()), progress.advance)
        table = _table(path, store=cast(LogStore, store))
        result = table.vacuum(
            retention_hours=retention_hours, dry_run=dry_run, enforce_retention_duration=not no_retention_check,
            lite=lite,
        )
    out.emit(result, lambda: render.vacuum(out, result))
    return EXIT_OK


@_command(
    "checkpoint",
    "Write a checkpoint of the latest version.",
    "Write a checkpoint of the latest version (and _last_checkpoint).",
)
@_PATH
def checkpoint(out: Output, path: str) -> int:
    from deltalog.log.checkpoint_writer import write_checkpoint
    from deltalog.txn.scope import OperationScope

    with out.progress() as progress:
        progress("loading snapshot", 0, 1)
        snap = _table(path).snapshot()
        progress("loading snapshot", 1, 1)
        progress("writing checkpoint", 0, 1)
        with OperationScope("CHECKPOINT", table_version=snap.version, table=snap.table):
            result = write_checkpoint(snap)
        progress("writing checkpoint", 1, 1)
    doc = {k: v for k, v in vars(result).items()}
    out.emit(doc, lambda: render.checkpoint(out, doc))
    return EXIT_OK


@_command(
    "delete",
    "Delete the rows matching a SQL condition (--dry-run counts them).",
    "Delete the rows matching --where (a SQL condition) in one DELETE commit: deletion vectors when the table "
    "enables them, else the files holding them are rewritten. --dry-run only counts the rows; --all deletes "
    "every row.",
)
@_PATH
@click.option("--where", "where", default=None, metavar="SQL", help="The rows to delete, e.g. \"user_id = 42\".")
@click.option("--all", "everything", is_flag=True, help="Delete every row (no --where).")
@click.option("--dry-run", is_flag=True, help="Count the matching rows; change nothing.")
def delete(out: Output, path: str, where: str | None, everything: bool, dry_run: bool) -> int:
    if (where is None) == (not everything):
        raise click.UsageError("give --where SQL, or --all to delete every row")
    table = _table(path)
    if dry_run:
        snap = table.snapshot()
        first = snap.schema.fields[0].name
        doc: dict[str, Any] = {"dry_run": True, "version": None,
                               "num_deleted_rows": snap.to_arrow(columns=[first], filter=where).num_rows}
    else:
        result = table.delete(where)
        doc = {"dry_run": False, "version": result.version, "num_deleted_rows": result.num_deleted_rows,
               "num_removed_files": result.num_removed_files, "num_added_files": result.num_added_files,
               "used_deletion_vectors": result.used_deletion_vectors}
    out.emit(doc, lambda: render.delete(out, doc))
    return EXIT_OK


@_command(
    "compact",
    "Compact small files, or Z-order (OPTIMIZE [ZORDER BY]).",
    "Pack small files, and files with deleted rows, into files of up to --max-file-size bytes -- or, with "
    "--zorder-by, rewrite each partition in Z order of those columns -- in one OPTIMIZE commit "
    "(dataChange=false: no reader sees a change).",
)
@_PATH
@click.option("--where", "where", default=None, metavar="SQL",
              help="Only the partitions matching this condition on partition columns, e.g. \"day = '2024-05-01'\".")
@click.option("--max-file-size", type=int, default=None, metavar="BYTES",
              help="Largest file to write (default: delta.targetFileSize, else 1 GiB).")
@click.option("--zorder-by", "zorder_by", default=None, metavar="COLS",
              help="Rewrite each partition in Z order of these comma-separated columns (OPTIMIZE ZORDER BY).")
def compact(out: Output, path: str, where: str | None, max_file_size: int | None, zorder_by: str | None) -> int:
    columns = [c.strip() for c in zorder_by.split(",") if c.strip()] if zorder_by else []
    result = _table(path).compact(partition_filter=where, max_file_size=max_file_size, zorder_by=columns)
    doc = {"version": result.version, "num_files_removed": result.num_files_removed,
           "num_files_added": result.num_files_added, "num_deleted_rows_purged": result.num_deleted_rows_purged}
    out.emit(doc, lambda: render.compact(out, doc))
    return EXIT_OK


@_command(
    "compute-stats",
    "Read every file's statistics again (ANALYZE ... COMPUTE DELTA STATISTICS).",
    "Read every live file's statistics again from its parquet footer and record them in one COMPUTE STATS "
    "commit (no data file is rewritten), so queries can skip files written without statistics.",
)
@_PATH
def compute_stats(out: Output, path: str) -> int:
    table = _table(path)
    result = table.compute_statistics()
    doc = {"version": result.version if result is not None else None,
           "num_files": table.snapshot().num_files() if result is not None else 0}
    out.emit(doc, lambda: render.compute_stats(out, doc))
    return EXIT_OK


@_command(
    "properties",
    "Show, set or unset table properties (SET / UNSET TBLPROPERTIES).",
    "Show the table's properties; with --set KEY=VALUE (repeatable) set them in one SET TBLPROPERTIES commit "
    "(delta.* keys are checked; enabling delta.enableRowTracking on a table with files first gives its files "
    "row ids, in commits of their own), or with --unset KEY (repeatable) remove them in one UNSET "
    "TBLPROPERTIES commit.",
)
@_PATH
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="A property to set (repeatable).")
@click.option("--unset", "unsets", multiple=True, metavar="KEY", help="A property to remove (repeatable).")
@click.option("--if-exists", is_flag=True, help="With --unset: ignore keys the table does not have.")
def properties(out: Output, path: str, settings: tuple[str, ...], unsets: tuple[str, ...], if_exists: bool) -> int:
    if settings and unsets:
        raise click.UsageError("give --set or --unset, not both (each is one commit)")
    if if_exists and not unsets:
        raise click.UsageError("--if-exists goes with --unset")
    table = _table(path)
    version = None
    if settings:
        pairs = {}
        for item in settings:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise click.UsageError(f"--set takes KEY=VALUE, got {item!r}")
            pairs[key.strip()] = value.strip()
        version = table.set_properties(pairs).version
    elif unsets:
        version = table.unset_properties(list(unsets), if_exists=if_exists).version
    doc = {"version": version, "properties": dict(sorted(table.snapshot().properties.items()))}
    out.emit(doc, lambda: render.properties(out, doc))
    return EXIT_OK


@_command(
    "restore",
    "Bring the table back to an earlier version.",
    "Bring the table back to an earlier version in one RESTORE commit.",
)
@_PATH
@_VERSION
@_TIMESTAMP
def restore(out: Output, path: str, version: int | None, timestamp: str | None) -> int:
    if (version is None) == (timestamp is None):
        raise click.UsageError("give exactly one of --version or --timestamp")
    result = _table(path).restore(version=version, timestamp=_timestamp(timestamp))
    doc = {k: v for k, v in vars(result).items() if k != "commit"}
    out.emit(doc, lambda: render.restore(out, doc))
    return EXIT_OK


@_command(
    "check",
    "Check log, checkpoints, .crc and data files (fsck).",
    "Check the log, checkpoints, .crc files and data files (fsck); --repair fixes missing files.",
)
@_PATH
@click.option("--deep", is_flag=True, help="Verify every version's .crc file, not only the latest.")
@click.option("--repair", is_flag=True, help="Remove log entries of missing data files in one commit.")
def check(out: Output, path: str, deep: bool, repair: bool) -> int:
    from deltalog.commands.check import check_table, repair_table

    table = _table(path)
    with out.progress() as progress:
        report = check_table(table, deep=deep, progress=progress)
    doc: dict[str, Any] = report.to_dict()
    final = report
    repaired = None
    if repair and report.repairable:
        repaired = repair_table(table, report=report)
        with out.progress() as progress:
            final = check_table(table, deep=deep, progress=progress)
        doc["repair"] = repaired.to_dict()
        doc["after_repair"] = final.to_dict()
    out.emit(doc, lambda: render.check(out, report, repaired, final if repaired else None))
    return EXIT_OK if final.ok else EXIT_PROBLEMS


@_command(
    "convert",
    "Turn a parquet directory into a Delta table.",
    "Turn a directory of parquet files into a Delta table (one commit, partitions inferred).",
)
@_PATH
@click.option("--partition-type", "partition_types", multiple=True, metavar="COLUMN=TYPE",
              help="Type of a partition column instead of the inferred one (repeatable), e.g. day=string.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Table property (repeatable).")
@click.option("--name", default=None, help="Table name stored in the metadata.")
@click.option("--description", default=None, help="Table description stored in the metadata.")
def convert(
    out: Output,
    path: str,
    partition_types: tuple[str, ...],
    properties: tuple[str, ...],
    name: str | None,
    description: str | None,
) -> int:
    from deltalog.commands.convert import convert_to_delta
    from deltalog.storage import store_for

    types = _pairs(partition_types, "COLUMN")
    props = _pairs(properties, "KEY")
    with out.progress() as progress:
        result = convert_to_delta(
            path, partition_types=types, properties=props, name=name, description=description, progress=progress,
            store=store_for(path, options=_options()),
        )
    doc = result.to_dict()
    out.emit(doc, lambda: render.convert(out, doc))
    return EXIT_OK


@cli.group("uniform", short_help="UniForm: the Iceberg metadata beside the log.", epilog=_EPILOG)
def uniform() -> None:
    """UniForm: write or repair the Iceberg metadata (``metadata/``) that lets Iceberg readers open the table.

    Example: ``deltalog uniform sync /data/events``
    """


def _uniform_command(name: str, rebuild: bool, help_text: str) -> None:
    @_command(name, help_text.split(":")[0] + ".", help_text)
    @_PATH
    def command(out: Output, path: str) -> int:
        import deltalog.uniform

        result = deltalog.uniform.sync(_table(path), rebuild=rebuild)
        doc = {"table": result.table, "mode": result.mode, "converted_delta_version": result.converted_version,
               "iceberg_version": result.iceberg_version, "metadata_location": result.metadata_location,
               "snapshots_added": len(result.snapshots)}
        out.emit(doc, lambda: out.print(out.key_values(list(doc.items()))))
        return EXIT_OK

    cli.commands.pop(name, None)  # _command registers on the top level: move it under ``uniform``
    uniform.add_command(cast(click.Command, command), name)


_uniform_command("sync", False, "Bring the Iceberg metadata up to the latest Delta version: incrementally from the "
                 "commits since the converted version, or rebuilt from the snapshot when those are gone.")
_uniform_command("rebuild", True, "Write the Iceberg metadata anew from the latest snapshot: one Iceberg snapshot, "
                 "the Iceberg history dropped (for metadata that is damaged or from another tool).")


@cli.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    short_help="Run a PySpark program written for delta-spark, unmodified.",
    epilog=_EPILOG,
)
@click.argument("job", metavar="JOB.py")
@click.argument("job_args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
def run(job: str, job_args: tuple[str, ...]) -> int:
    """Run JOB.py (with ARGS) as a delta-spark program: ``import delta``, ``delta.tables``,
    ``delta.exceptions`` and ``configure_spark_with_delta_pip`` resolve to deltalog; sessions drop
    delta-spark's JVM settings and are registered, so ``format("delta")``, catalog tables and
    ``spark.sql`` go through deltalog. Needs pyspark (``pip install 'deltalog[spark]'``).

    Example: ``deltalog run pipelines/nightly.py --date 2024-05-01``
    """
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        click.echo("deltalog run: pyspark is not installed (pip install 'deltalog[spark]')", err=True)
        return EXIT_USAGE
    from deltalog.spark.run import main as run_main

    return run_main([job, *job_args])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the module docstring).

    Example:
        >>> main(["--version"])                                       # doctest: +SKIP
        deltalog, version 0.1.0
        0
    """
    try:
        result = cli.main(args=list(argv) if argv is not None else None, prog_name="deltalog", standalone_mode=False)
    except click.UsageError as exc:
        exc.show()
        return EXIT_USAGE
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        click.echo("deltalog: aborted", err=True)
        return 130
    except InvalidArgumentError as exc:  # raised while parsing, before a command's own handler
        click.echo(f"deltalog: {exc}", err=True)
        return EXIT_USAGE
    return result if isinstance(result, int) else EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
