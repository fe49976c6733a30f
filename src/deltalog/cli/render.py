"""What each ``deltalog`` command shows: the JSON documents and their rich renderings.

Each ``*_document`` / ``*_rows`` function builds the plain data a command prints with ``--json``; the
function named after the command draws the same data for a terminal.

Example:
    >>> render_type({"type": "array", "elementType": "long", "containsNull": True})
    'array<long>'
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from rich.markup import escape
from rich.text import Text
from rich.tree import Tree

from deltalog.cli.output import Output, format_bytes, format_ms
from deltalog.protocol.features import reader_features, writer_features

if TYPE_CHECKING:
    from deltalog.commands.check import CheckReport, RepairResult
    from deltalog.commands.vacuum import VacuumResult
    from deltalog.snapshot import Snapshot

__all__ = [
    "check",
    "checkpoint",
    "convert",
    "describe",
    "describe_document",
    "file_rows",
    "files",
    "history",
    "render_type",
    "restore",
    "vacuum",
]

#: Above this many rows ``files`` prints tab-separated lines instead of a table.
MAX_TABLE_ROWS = 2000
#: ``check`` shows at most this many problems (``--json`` lists every one).
MAX_PROBLEM_ROWS = 20


def render_type(t: Any) -> str:
    """A short type name for a Delta schema type (its JSON form).

    Example:
        >>> render_type({"type": "map", "keyType": "string", "valueType": "long"})
        'map<string,long>'
    """
    if isinstance(t, str):
        return t
    kind = t.get("type")
    if kind == "array":
        return f"array<{render_type(t['elementType'])}>"
    if kind == "map":
        return f"map<{render_type(t['keyType'])},{render_type(t['valueType'])}>"
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{render_type(f['type'])}" for f in t.get("fields", [])) + ">"
    return str(kind)


# ------------------------------------------------------------------------------------------- describe


def describe_document(snap: Snapshot) -> dict[str, Any]:
    """Everything ``describe`` shows, as plain data."""
    files = snap.add_files()
    size = pc.sum(files.column("size")).as_py() if files.num_rows else 0
    md = snap.metadata
    info = snap.commit_info
    schema: Any = json.loads(md.schemaString) if md.schemaString else None
    return {
        "table": snap.table,
        "version": snap.version,
        "id": md.id,
        "name": md.name,
        "description": md.description,
        "created_time": md.createdTime,
        "protocol": {
            "min_reader_version": snap.protocol.minReaderVersion,
            "min_writer_version": snap.protocol.minWriterVersion,
            "reader_features": sorted(reader_features(snap.protocol)),
            "writer_features": sorted(writer_features(snap.protocol)),
        },
        "partition_columns": list(snap.partition_columns),
        "properties": dict(snap.properties),
        "num_files": files.num_rows,
        "size_bytes": int(size or 0),
        "checkpoint_version": snap.segment.checkpoint_version,
        "last_commit": None if info is None else {
            "timestamp": info.inCommitTimestamp or info.timestamp,
            "operation": info.operation,
            "engine": info.engineInfo,
        },
        "schema": schema,
        "iceberg": _iceberg(snap),
    }


def _iceberg(snap: Snapshot) -> dict[str, Any] | None:
    """UniForm's Iceberg metadata beside the log (:mod:`deltalog.uniform`), or None."""
    from deltalog.uniform import iceberg_state

    state = iceberg_state(snap.store)
    if state is None:
        return None
    return {"metadata_location": state.metadata_location, "iceberg_version": state.iceberg_version,
            "converted_delta_version": state.converted_version}


def _schema_tree(schema: Any, partitions: list[str]) -> Tree:
    tree = Tree("[bold]schema[/]")

    def add(node: Tree, fields: list[dict[str, Any]], top: bool) -> None:
        for f in fields:
            t = f["type"]
            mark = " [magenta](partition)[/]" if top and f["name"] in partitions else ""
            null = "" if f.get("nullable", True) else " [red]not null[/]"
            name = escape(f["name"])
            if isinstance(t, dict) and t.get("type") == "struct":
                add(node.add(f"[cyan]{name}[/]: struct{null}{mark}"), t.get("fields", []), False)
            else:
                node.add(f"[cyan]{name}[/]: {escape(render_type(t))}{null}{mark}")

    if isinstance(schema, dict):
        add(tree, schema.get("fields", []), True)
    return tree


def describe(out: Output, doc: dict[str, Any], snap: Snapshot) -> None:
    """Draw ``describe``."""
    p = doc["protocol"]
    features = ", ".join(sorted(set(p["reader_features"]) | set(p["writer_features"]))) or "-"
    last = doc["last_commit"]
    rows: list[tuple[str, Any]] = [
        ("table", doc["table"]),
        ("version", doc["version"]),
        ("id", doc["id"]),
        ("name", doc["name"] or "-"),
        ("created", format_ms(doc["created_time"])),
        ("last commit", "-" if not last else f"{last['operation'] or '?'} at {format_ms(last['timestamp'])}"),
        ("protocol", f"reader {p['min_reader_version']}, writer {p['min_writer_version']}"),
        ("features", features),
        ("partitioned by", ", ".join(doc["partition_columns"]) or "(not partitioned)"),
        ("files", f"{doc['num_files']:,} live files, {format_bytes(doc['size_bytes'])}"),
        ("checkpoint", "-" if doc["checkpoint_version"] is None else f"version {doc['checkpoint_version']}"),
    ]
    if doc["description"]:
        rows.insert(4, ("description", doc["description"]))
    if doc.get("iceberg"):
        ice = doc["iceberg"]
        rows.append(("iceberg", f"Delta version {ice['converted_delta_version']} at {ice['metadata_location']}"))
    out.print(out.key_values(rows))
    out.print(_schema_tree(doc["schema"], doc["partition_columns"]))
    if doc["properties"]:
        out.print(out.table(["property", "value"], sorted(doc["properties"].items()), title="properties"))


# -------------------------------------------------------------------------------------------- history


def _short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def history(out: Output, entries: list[dict[str, Any]], location: str) -> None:
    """Draw ``history``."""
    rows = []
    for e in entries:
        params = e.get("operationParameters") or {}
        metrics = e.get("operationMetrics") or {}
        rows.append([
            e["version"],
            format_ms(e.get("timestamp"), compact=True),
            e.get("operation") or "-",
            _short(", ".join(f"{k}={v}" for k, v in params.items())) if params else "",
            _short(", ".join(f"{k}={v}" for k, v in metrics.items())) if metrics else "",
        ])
    out.print(out.table(["version", "timestamp", "operation", "parameters", "metrics"], rows, title=escape(location)))


# ---------------------------------------------------------------------------------------------- files


def file_rows(snap: Snapshot, *, limit: int | None = None) -> list[dict[str, Any]]:
    """One dict per live file: path, size, partition values, modification time, records, deleted rows."""
    t = snap.add_files()
    if limit is not None:
        t = t.slice(0, limit)
    if t.num_rows == 0:
        return []
    stats = t.column("stats").combine_chunks()
    records: list[Any]
    if stats.null_count < len(stats):
        found = pc.extract_regex(stats, r'"numRecords"\s*:\s*(?P<n>\d+)')
        records = pc.cast(pc.struct_field(found, "n"), pa.int64()).to_pylist()
    else:
        records = [None] * t.num_rows
    dv = t.column("deletionVector").combine_chunks()
    deleted = pc.struct_field(dv, "cardinality").to_pylist() if dv.null_count < len(dv) else [None] * t.num_rows
    out = []
    for path, size, pv, mtime, n, d in zip(
        t.column("path").to_pylist(),
        t.column("size").to_pylist(),
        t.column("partitionValues").to_pylist(),
        t.column("modificationTime").to_pylist(),
        records,
        deleted,
    ):
        out.append({
            "path": path,
            "size": size,
            "partition_values": dict(pv or []),
            "modification_time": mtime,
            "num_records": n,
            "deleted_rows": d,
        })
    return out


def _null(value: Any) -> Any:
    return "null" if value is None else value


def files(out: Output, rows: list[dict[str, Any]], snap: Snapshot) -> None:
    """Draw ``files`` (a table, or tab-separated lines for very many files)."""
    parts = list(snap.partition_columns)
    has_dv = any(r["deleted_rows"] is not None for r in rows)

    def cells(r: dict[str, Any]) -> list[Any]:
        values = r["partition_values"]
        c = [r["path"], format_bytes(r["size"]), *(_null(values.get(p)) for p in parts)]
        c.append("-" if r["num_records"] is None else f"{r['num_records']:,}")
        if has_dv:
            c.append("-" if r["deleted_rows"] is None else f"{r['deleted_rows']:,}")
        return c

    header = ["path", "size", *parts, "records", *(["deleted rows"] if has_dv else [])]
    total = sum(r["size"] or 0 for r in rows)
    summary = f"{len(rows):,} files, {format_bytes(total)} (version {snap.version})"
    if len(rows) > MAX_TABLE_ROWS:
        print("\t".join(header))
        for r in rows:
            print("\t".join("" if v is None else str(v) for v in cells(r)))
        out.note(summary)
        return
    out.print(out.table(header, [cells(r) for r in rows], title=summary))


def show(out: Output, rows: pa.Table, snap: Snapshot) -> None:
    """Draw ``show``: the rows as a table (nulls as ``null``)."""
    title = f"{rows.num_rows:,} row{'s' if rows.num_rows != 1 else ''} (version {snap.version})"
    out.print(out.table(rows.column_names, _cells(rows), title=title))


def _cells(rows: pa.Table) -> list[list[Any]]:
    return [["null" if r[c] is None else r[c] for c in rows.column_names] for r in rows.to_pylist()]


def changes(out: Output, rows: pa.Table, total: int) -> None:
    """Draw ``changes``: the changed rows as a table (nulls as ``null``), and how many more there are."""
    more = f" (first {rows.num_rows:,})" if total > rows.num_rows else ""
    out.print(out.table(rows.column_names, _cells(rows), title=f"{total:,} change{'s' if total != 1 else ''}{more}"))


# --------------------------------------------------------------------------------------- maintenance


def vacuum(out: Output, result: VacuumResult) -> None:
    """Draw ``vacuum``."""
    verb = "would delete" if result.dry_run else "deleted"
    count = result.num_files_to_delete if result.dry_run else result.num_deleted_files
    files = "file" if count == 1 else "files"
    out.print(
        f"[bold]{verb} {count:,} {files}[/] ({format_bytes(result.size_of_data_to_delete)}), retention "
        f"{result.retention_hours:g} hours (files removed before {format_ms(result.cutoff_ms)})"
    )
    shown = result.files_deleted[:50]
    for p in shown:
        out.print(f"  {escape(p)}", style="dim" if not result.dry_run else None)
    if len(result.files_deleted) > len(shown):
        out.print(f"  … and {len(result.files_deleted) - len(shown):,} more (--json lists all)")
    if result.dry_run:
        out.note("dry run: nothing was deleted; pass --execute to delete these files")
    else:
        out.print(f"VACUUM START version {result.start_version}, VACUUM END version {result.end_version}; "
                  f"{result.num_removed_directories} empty directories removed")


def checkpoint(out: Output, doc: dict[str, Any]) -> None:
    """Draw ``checkpoint``."""
    state = "written" if doc["written"] else "already there"
    rows: list[tuple[str, Any]] = [
        ("version", doc["version"]),
        ("checkpoint", state),
        ("files", "\n".join(doc["paths"])),
        ("actions", doc["num_actions"]),
        ("live files", doc["num_add_files"]),
        ("tombstones", doc["num_remove_files"]),
        ("size", format_bytes(doc["size_in_bytes"])),
    ]
    out.print(out.key_values(rows))


def delete(out: Output, doc: dict[str, Any]) -> None:
    """Draw ``delete``."""
    rows = f"{doc['num_deleted_rows']:,}"
    if doc["dry_run"]:
        out.print(f"would delete {rows} row{'s' if doc['num_deleted_rows'] != 1 else ''} (dry run: nothing changed)")
        return
    if doc["version"] is None:
        out.print("no row matches: nothing committed")
        return
    how = "deletion vectors" if doc["used_deletion_vectors"] else f"{doc['num_added_files']:,} files rewritten"
    out.print(out.key_values([("new version", doc["version"]), ("rows deleted", rows),
                              ("files touched", f"{doc['num_removed_files']:,} ({how})")]))


def compact(out: Output, doc: dict[str, Any]) -> None:
    """Draw ``compact``."""
    if doc["version"] is None:
        out.print("no partition has files to compact: nothing committed")
        return
    out.print(out.key_values([("new version", doc["version"]), ("files removed", f"{doc['num_files_removed']:,}"),
                              ("files added", f"{doc['num_files_added']:,}"),
                              ("deleted rows purged", f"{doc['num_deleted_rows_purged']:,}")]))


def compute_stats(out: Output, doc: dict[str, Any]) -> None:
    """Draw ``compute-stats``."""
    if doc["version"] is None:
        out.print("the table has no files: nothing to compute, nothing committed")
        return
    out.print(out.key_values([("new version", doc["version"]), ("files with new statistics", f"{doc['num_files']:,}")]))


def properties(out: Output, doc: dict[str, Any]) -> None:
    """Draw ``properties``."""
    rows: list[tuple[str, Any]] = [("new version", doc["version"])] if doc["version"] is not None else []
    rows += list(doc["properties"].items()) or [("properties", "none")]
    out.print(out.key_values(rows))


def restore(out: Output, doc: dict[str, Any]) -> None:
    """Draw ``restore``."""
    rows: list[tuple[str, Any]] = [
        ("restored version", doc["restored_version"]),
        ("new version", doc["version"]),
        ("files re-added", f"{doc['num_restored_files']:,} ({format_bytes(doc['restored_files_size'])})"),
        ("files removed", f"{doc['num_removed_files']:,} ({format_bytes(doc['removed_files_size'])})"),
        ("live files now", f"{doc['num_files_after_restore']:,} ({format_bytes(doc['table_size_after_restore'])})"),
        ("metadata restored", "yes" if doc["metadata_restored"] else "no"),
    ]
    out.print(out.key_values(rows))


_MARKS = {
    "ok": Text("ok", style="green"),
    "warnings": Text("warnings", style="yellow"),
    "errors": Text("errors", style="red"),
    "skipped": Text("skipped", style="dim"),
}


def check(out: Output, report: CheckReport, repaired: RepairResult | None, final: CheckReport | None) -> None:
    """Draw ``check`` (and the repair, when one ran)."""
    facts = (
        f"version {report.version}, {report.num_commits:,} commits, {report.num_checkpoints} checkpoints, "
        f"{report.num_files_checked:,} of {report.num_files:,} files checked"
        + (f" ({report.num_files_unchecked:,} on other file systems)" if report.num_files_unchecked else "")
        + f", {report.num_crc_verified} .crc verified"
    )
    out.print(f"[bold]{escape(report.table)}[/]: {facts}")
    out.print(out.key_values([(k, _MARKS.get(v, v)) for k, v in report.checks.items()]))
    if report.problems:
        shown = report.problems[:MAX_PROBLEM_ROWS]
        rows = [[p.severity, p.code, p.message, p.file or "", "" if p.version is None else p.version] for p in shown]
        out.print(out.table(["severity", "problem", "detail", "file", "version"], rows))
        if len(report.problems) > len(shown):
            counts: dict[str, int] = {}
            for p in report.problems:
                counts[p.code] = counts.get(p.code, 0) + 1
            summary = ", ".join(f"{n:,} {code}" for code, n in sorted(counts.items(), key=lambda kv: -kv[1]))
            out.print(f"… {len(report.problems) - len(shown):,} more not shown (--json lists all); in all: {summary}")
    if repaired is not None:
        files = "file" if repaired.num_removed == 1 else "files"
        out.print(f"[bold]repair[/]: removed the entries of {repaired.num_removed:,} missing {files} in version "
                  f"{repaired.version}")
    result = final or report
    if result.ok:
        warn = f" ({result.num_warnings} warnings)" if result.num_warnings else ""
        out.print(f"[bold green]no problems found[/]{warn}" if final is None else f"[bold green]repaired[/]{warn}")
    else:
        hint = " (run with --repair to remove entries of missing files)" if result.repairable and final is None else ""
        noun = "problem" if result.num_errors == 1 else "problems"
        out.print(f"[bold red]{result.num_errors:,} {noun} found[/]{hint}")


def convert(out: Output, doc: dict[str, Any]) -> None:
    """Draw ``convert``."""
    parts = ", ".join(f"{c} ({doc['partition_types'][c]})" for c in doc["partition_columns"]) or "(not partitioned)"
    rows: list[tuple[str, Any]] = [
        ("version", doc["version"]),
        ("files", f"{doc['num_files']:,} ({format_bytes(doc['num_bytes'])})"),
        ("rows", doc["num_rows"]),
        ("partitioned by", parts),
        ("skipped", f"{doc['skipped_files']:,} non-parquet files"),
    ]
    out.print(out.key_values(rows))
    out.print(_schema_tree(doc["schema"], doc["partition_columns"]))
