"""The HTML health report (``deltalog health PATH --html report.html``): one self-contained page with the
headline numbers and inline SVG plots of a :class:`~deltalog.health.model.TableHealth` and of the table's
recent history (:mod:`deltalog.health.history_series`).

The page opens offline: its CSS is inline, its plots are SVG in the page, it has no script, and it names no
external font, style sheet, image or link -- hover texts are SVG ``<title>`` elements the browser shows by
itself. Every string that comes from the table (its path, partition values, operation names, features) is
escaped with :func:`html.escape`, so a partition value like ``a<b&"c"`` shows as it is.

What it shows: the headline numbers (files, bytes, rows, small-file share, deleted-row share, read
amplification, tombstones and reclaimable bytes, commits since the checkpoint, the last OPTIMIZE and VACUUM,
protocol) and the thresholds passed; the file-size histogram (files and bytes per size bin, the bins below
the small-file threshold marked); the deleted-row share of the table and of the partitions with deleted
rows; files and bytes of the largest partitions (at most ``max_partitions``, the rest summed up in a line);
the table's bytes and files over its last versions; and the commit rate over them.

:func:`render_html` draws a page from numbers already computed; :func:`html_report` computes them for a
snapshot and draws the page.

Example:
    >>> from deltalog.health.model import TableHealth
    >>> page = render_html(TableHealth.empty("memory://empty", 0))
    >>> page.startswith("<!DOCTYPE html>"), "no live file" in page, "<script" in page
    (True, True, False)
"""

from __future__ import annotations

import bisect
import datetime as dt
import statistics
from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from deltalog.health.compute import DEFAULT_HISTORY_DEPTH, table_health
from deltalog.health.history_series import (
    DEFAULT_HISTORY_VERSIONS,
    CommitRate,
    HistoryPoint,
    HistorySeries,
    commit_rate,
    history_points,
)
from deltalog.health.model import Breach, CommitRef, PartitionHealth, TableHealth
from deltalog.health.svg_charts import (
    Bar,
    Column,
    LinePoint,
    Row,
    column_chart,
    format_bytes,
    format_count,
    format_pct,
    format_time,
    line_chart,
    row_chart,
    share_bar,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from deltalog.snapshot import Snapshot

__all__ = ["DEFAULT_MAX_PARTITIONS", "THRESHOLDS", "html_report", "partition_label", "render_html"]

#: Partitions drawn one by one at most (the largest by bytes; the rest are summed up in one line).
DEFAULT_MAX_PARTITIONS = 30
#: The thresholds :meth:`TableHealth.breaches` takes, and the metric each one limits.
THRESHOLDS: Mapping[str, str] = {
    "max_small_file_share": "small_file_share", "max_deleted_share": "deleted_row_share",
    "max_commits_since_checkpoint": "commits_since_checkpoint", "max_reclaimable_bytes": "reclaimable_bytes",
}

_CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --files: #4e79a7; --bytes: #59a14f; --small: #f28e2b;
  --deleted: #e15759; --live: #76b7b2; --rate: #9c755f; --bad: #cf222e; --ok: #1a7f37; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--fg); background: #fff; margin: 0 auto; max-width: 1040px; padding: 12px 24px 40px; }
h1 { font-size: 22px; margin: 8px 0 2px; overflow-wrap: anywhere; }
h2 { font-size: 17px; border-bottom: 1px solid var(--line); padding-bottom: 4px; margin: 26px 0 8px; }
h3 { font-size: 13px; margin: 12px 0 4px; color: var(--muted); font-weight: 600; }
p { margin: 4px 0; }
.muted, .note { color: var(--muted); }
.note { font-size: 12px; }
dl.metrics { display: grid; grid-template-columns: repeat(auto-fill, minmax(185px, 1fr)); gap: 10px; margin: 0; }
.metric { border: 1px solid var(--line); border-radius: 6px; padding: 7px 10px; }
.metric dt { color: var(--muted); font-size: 11px; text-transform: uppercase; letter-spacing: .04em; }
.metric dd { margin: 1px 0; font-size: 20px; font-weight: 600; overflow-wrap: anywhere; }
.metric dd.sub { margin: 0; font-size: 12px; font-weight: 400; color: var(--muted); overflow-wrap: anywhere; }
.metric.bad { border-color: var(--bad); background: #fff5f5; }
.metric.bad dd:not(.sub) { color: var(--bad); }
ul.breaches { list-style: none; padding: 0; margin: 4px 0; }
.breach { color: var(--bad); font-weight: 600; }
.ok { color: var(--ok); font-weight: 600; }
.pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(400px, 1fr)); gap: 8px 20px; }
svg.chart { display: block; max-width: 100%; height: auto; font-size: 11px; }
svg .grid { stroke: #eef1f4; }
svg .axis { stroke: #8c959f; }
svg text { fill: var(--muted); }
svg .head { font-weight: 600; fill: var(--fg); }
svg .rl { fill: var(--fg); }
.bar { fill: var(--files); }
.bar.bytes { fill: var(--bytes); }
.bar.small { fill: var(--small); }
.bar.deleted { fill: var(--deleted); }
.bar.live { fill: var(--live); }
.bar.rate { fill: var(--rate); }
.bar.share { fill: var(--deleted); }
.line { fill: none; stroke: var(--files); stroke-width: 1.6; }
.pt { fill: var(--files); }
.line.bytes { stroke: var(--bytes); }
.pt.bytes { fill: var(--bytes); }
.key { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin: 0 4px 0 10px; }
.key.files { background: var(--files); } .key.bytes { background: var(--bytes); }
.key.small { background: var(--small); }
footer { margin-top: 30px; font-size: 12px; color: var(--muted); border-top: 1px solid var(--line); padding-top: 6px; }
"""

_UNIT_FORMATS = {"minute": "%m-%d %H:%M", "10 minutes": "%m-%d %H:%M", "hour": "%m-%d %H:00", "6 hours": "%m-%d %H:00",
                 "day": "%Y-%m-%d", "week": "%Y-%m-%d", "4 weeks": "%Y-%m-%d", "year": "%Y"}


def partition_label(columns: Sequence[str], values: Mapping[str, str | None]) -> str:
    """A partition as ``col=value, ...`` (``null`` for a null value), plain text (escape it for HTML).

    Example:
        >>> partition_label(["day", "kind"], {"day": "2024-05-01", "kind": None})
        'day=2024-05-01, kind=null'
    """
    return ", ".join(f"{c}={'null' if values.get(c) is None else values.get(c)}" for c in columns)


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _card(key: str, label: str, value: str, sub: str, *, bad: bool = False) -> str:
    return (f'<div class="metric{" bad" if bad else ""}" data-metric="{escape(key)}"><dt>{escape(label)}</dt>'
            f'<dd>{escape(value)}</dd><dd class="sub">{escape(sub)}</dd></div>')


def _ref(ref: CommitRef | None) -> tuple[str, str]:
    if ref is None:
        return "not found", "in the commits scanned"
    return f"version {ref.version}", format_time(ref.timestamp) + " UTC"


def _headline(h: TableHealth, bad: set[str]) -> str:
    days = h.deleted_file_retention_ms / 86_400_000
    amp = h.read_amplification
    features = sorted(set(h.reader_features) | set(h.writer_features))
    checkpoint = ("no checkpoint" if h.checkpoint_version is None else f"after checkpoint {h.checkpoint_version}")
    cards = [
        _card("num_files", "files", format_count(h.num_files), "live data files" + (
            f", {h.files_without_stats:,} without statistics" if h.files_without_stats else "")),
        _card("num_bytes", "bytes", format_bytes(h.num_bytes), f"{h.num_bytes:,} bytes in the live files"),
        _card("num_rows", "rows", format_count(h.num_rows),
              f"live rows of {h.num_physical_rows:,} in the files" if h.num_deleted_rows else "live rows"),
        _card("small_file_share", "small files", format_pct(h.small_file_share),
              f"{h.num_small_files:,} files below {format_bytes(h.small_file_threshold)} "
              f"({format_bytes(h.small_file_bytes)}); target {format_bytes(h.target_file_size)}",
              bad="small_file_share" in bad),
        _card("deleted_row_share", "deleted rows", format_pct(h.deleted_row_share),
              f"{h.num_deleted_rows:,} rows deleted by deletion vectors in {_n(h.dv_files, 'file')}",
              bad="deleted_row_share" in bad),
        _card("read_amplification", "read amplification", "-" if amp is None else f"{amp:.2f}x",
              f"rows a full scan reads per row it returns; ~{format_bytes(h.deleted_bytes_estimate)} of deleted rows"),
        _card("num_tombstones", "tombstones", format_count(h.num_tombstones),
              f"{format_bytes(h.tombstone_bytes)}; {h.expired_tombstones:,} past the {days:g}-day retention"),
        _card("reclaimable_bytes", "reclaimable", format_bytes(h.reclaimable_bytes),
              "a VACUUM would delete now" + (f" ({h.tombstones_without_size:,} files of unknown size)"
                                             if h.tombstones_without_size else ""),
              bad="reclaimable_bytes" in bad),
        _card("commits_since_checkpoint", "commits since checkpoint", format_count(h.commits_since_checkpoint),
              f"{checkpoint} (interval {h.checkpoint_interval})", bad="commits_since_checkpoint" in bad),
    ]
    if h.partition_columns:
        skew = h.partition_skew
        cards.append(_card("num_partitions", "partitions", format_count(len(h.partitions)),
                           f"by {', '.join(h.partition_columns)}"
                           + ("" if skew is None else f"; the largest is {skew:.1f}x the median")))
    if h.clustering_columns:
        cards.append(_card("clustered_share", "clustered", format_pct(h.clustered_share),
                           f"of the bytes, by {', '.join(h.clustering_columns)}"))
    if h.zorder_columns:
        cards.append(_card("zordered_share", "z-ordered", format_pct(h.zordered_share),
                           f"of the bytes, by {', '.join(h.zorder_columns)}"))
    cards += [
        _card("last_optimize", "last OPTIMIZE", *_ref(h.last_optimize)),
        _card("last_vacuum", "last VACUUM", *_ref(h.last_vacuum)),
        _card("protocol", "protocol", f"reader {h.min_reader_version}, writer {h.min_writer_version}",
              ", ".join(features) if features else "no table features"),
        _card("log", "log", f"{h.log_files:,} files", f"{format_bytes(h.log_bytes)} under _delta_log"),
    ]
    note = "" if h.history_complete else (
        f'<p class="note">Only the last {h.history_commits_scanned:,} commits were scanned for OPTIMIZE and '
        "VACUUM.</p>")
    return f'<section id="summary"><h2>Summary</h2><dl class="metrics">{"".join(cards)}</dl>{note}</section>'


def _thresholds(checked: Mapping[str, float], breaches: Sequence[Breach]) -> str:
    limits = ", ".join(f"{k.replace('_', '-')} {v:g}" for k, v in checked.items())
    if breaches:
        items = "".join(f'<li class="breach" data-metric="{escape(b.metric)}">✗ {escape(str(b))}</li>'
                        for b in breaches)
        body = f'<ul class="breaches">{items}</ul><p class="note">Limits checked: {escape(limits)}.</p>'
    elif checked:
        body = f'<p class="ok">✓ every threshold met ({escape(limits)})</p>'
    else:
        body = ('<p class="muted">No threshold was given (deltalog health --max-small-file-share, '
                "--max-deleted-share, --max-commits-since-checkpoint, --max-reclaimable-bytes).</p>")
    return f'<section id="thresholds"><h2>Thresholds</h2>{body}</section>'


def _bin_label(bounds: Sequence[int], i: int) -> str:
    start = format_bytes(bounds[i])
    return f"{start} +" if i + 1 >= len(bounds) else f"{start} - {format_bytes(bounds[i + 1])}"


def _file_sizes(h: TableHealth) -> str:
    hist = h.file_size_histogram
    bounds, counts, sizes = hist.sorted_bin_boundaries, hist.file_counts, hist.total_bytes
    used = [i for i, c in enumerate(counts) if c]
    if not used:
        return '<section id="file-sizes"><h2>File sizes</h2><p class="muted">The table has no live file.</p></section>'
    threshold = h.small_file_threshold
    # From the first bin used, or the small-file threshold's, to the last bin used, or the threshold's.
    edge = min(bisect.bisect_left(bounds, threshold), len(bounds) - 1)
    lo, hi = min(used[0], edge), max(used[-1], edge)

    def bars(kind: str) -> list[Bar]:
        out = []
        for i in range(lo, hi + 1):
            end = bounds[i + 1] if i + 1 < len(bounds) else None
            small = threshold > 0 and end is not None and end <= threshold
            value = counts[i] if kind == "files" else sizes[i]
            out.append(Bar(format_bytes(bounds[i]), value,
                           f"{_bin_label(bounds, i)}: {counts[i]:,} files, {format_bytes(sizes[i])}",
                           css=f"{kind} small" if small else kind,
                           data={"start": bounds[i], "files": counts[i], "bytes": sizes[i]}))
        return out

    source = "the version's .crc file" if h.file_size_histogram_source == "crc" else "the log's add actions"
    return (
        '<section id="file-sizes"><h2>File sizes</h2>'
        f"<p>{_n(h.num_files, 'live file')} in {_n(len(used), 'size bin')} of {hi - lo + 1} shown (histogram from "
        f'{source}).<span class="key small"></span>bins below the small-file threshold '
        f"({escape(format_bytes(threshold))})</p>"
        '<div class="pair"><div><h3>files per size bin</h3>'
        + column_chart("chart-size-files", bars("files"), fmt=format_count, width=480, height=220,
                       label="files per file-size bin")
        + '</div><div><h3>bytes per size bin</h3>'
        + column_chart("chart-size-bytes", bars("bytes"), fmt=format_bytes, binary=True, width=480, height=220,
                       label="bytes per file-size bin")
        + "</div></div></section>"
    )


def _partition_share(p: PartitionHealth) -> float | None:
    total = p.num_rows + p.num_deleted_rows
    return p.num_deleted_rows / total if total else None


def _deleted(h: TableHealth, max_partitions: int) -> str:
    deleted = h.num_physical_rows - h.num_rows
    parts = ['<section id="deleted-rows"><h2>Deleted rows</h2>']
    if h.num_physical_rows:
        amp = h.read_amplification
        parts.append(f"<p>{format_pct(h.deleted_row_share)} of the {h.num_physical_rows:,} rows in the data files "
                     f"are deleted by deletion vectors (in {_n(h.dv_files, 'file')}); a full scan reads "
                     f"{'-' if amp is None else f'{amp:.2f}x'} the rows it returns.</p>")
        parts.append(share_bar("chart-deleted-share", [("live rows", h.num_rows, "live"),
                                                       ("deleted rows", deleted, "deleted")],
                               width=960, label="live and deleted rows of the table"))
    else:
        parts.append('<p class="muted">No row count is known (no live file, or no file with statistics).</p>')
    if h.partitions:
        hit = sorted((p for p in h.partitions if p.num_deleted_rows),
                     key=lambda p: (-(_partition_share(p) or 0.0), -p.num_deleted_rows))
        if not hit:
            parts.append('<p class="muted">No partition has deleted rows.</p>')
        else:
            shown, rest = hit[:max_partitions], hit[max_partitions:]
            cols = h.partition_columns
            rows = [Row(partition_label(cols, p.values), (_partition_share(p), p.num_deleted_rows, p.num_dv_files),
                        f"{partition_label(cols, p.values)}: {p.num_deleted_rows:,} deleted rows, "
                        f"{p.num_rows:,} live ({format_pct(_partition_share(p))} deleted)",
                        data={"deleted": p.num_deleted_rows})
                    for p in shown]
            parts.append(f"<h3>partitions with deleted rows, highest share first ({len(shown):,} of {len(hit):,})</h3>")
            parts.append(row_chart("chart-deleted-partitions", rows, [
                Column("deleted share", format_pct, "share", full=1.0),
                Column("deleted rows", format_count, "deleted"),
                Column("files with deletion vectors", format_count, "files")], label="deleted rows per partition"))
            if rest:
                parts.append(f'<p class="rest" data-rest-partitions="{len(rest)}">and {len(rest):,} more partitions '
                             f"with {sum(p.num_deleted_rows for p in rest):,} deleted rows</p>")
    parts.append("</section>")
    return "".join(parts)


def _partitions(h: TableHealth, max_partitions: int) -> str:
    head = '<section id="partitions"><h2>Partitions</h2>'
    if not h.partition_columns:
        return head + '<p class="muted">The table is not partitioned.</p></section>'
    if not h.partitions:
        return head + '<p class="muted">No partition has a live file.</p></section>'
    cols = h.partition_columns
    ordered = sorted(h.partitions, key=lambda p: (-p.num_bytes, -p.num_files))
    shown, rest = ordered[:max_partitions], ordered[max_partitions:]
    sizes = [p.num_bytes for p in h.partitions]
    spread = (f"bytes per partition: smallest {format_bytes(min(sizes))}, median "
              f"{format_bytes(statistics.median(sizes))}, largest {format_bytes(max(sizes))}")
    rows = [Row(partition_label(cols, p.values), (p.num_files, p.num_bytes, p.small_file_share),
                f"{partition_label(cols, p.values)}: {p.num_files:,} files, {format_bytes(p.num_bytes)}, "
                f"{p.num_rows:,} rows, {p.num_small_files:,} small files",
                data={"files": p.num_files, "bytes": p.num_bytes})
            for p in shown]
    out = [head, f"<p>{len(h.partitions):,} partitions by {escape(', '.join(cols))}; {escape(spread)}.</p>",
           f"<h3>the largest partitions by bytes ({len(shown):,} of {len(ordered):,})</h3>",
           row_chart("chart-partitions", rows, [Column("files", format_count, "files"),
                                                Column("bytes", format_bytes, "bytes"),
                                                Column("small files", format_pct, "small", full=1.0)],
                     label="files and bytes per partition")]
    if rest:
        files, num_bytes = sum(p.num_files for p in rest), sum(p.num_bytes for p in rest)
        out.append(f'<p class="rest" data-rest-partitions="{len(rest)}" data-rest-files="{files}" '
                   f'data-rest-bytes="{num_bytes}">and {len(rest):,} more partitions with {files:,} files, '
                   f"{escape(format_bytes(num_bytes))}</p>")
    out.append("</section>")
    return "".join(out)


def _point_title(p: HistoryPoint) -> str:
    files = "?" if p.num_files is None else f"{p.num_files:,}"
    return (f"version {p.version}, {format_time(p.timestamp)} UTC, {p.operation or 'unknown operation'}: "
            f"{files} files, {format_bytes(p.num_bytes)}")


def _rate_chart(rate: CommitRate) -> str:
    fmt = _UNIT_FORMATS.get(rate.unit, "%Y-%m-%d %H:%M")
    bars = []
    for i, c in enumerate(rate.counts):
        label = format_time(rate.start + i * rate.unit_ms)
        start = dt.datetime.fromtimestamp((rate.start + i * rate.unit_ms) / 1000, tz=dt.UTC)
        bars.append(Bar(start.strftime(fmt), c, f"{c:,} commits in the {rate.unit} from {label} UTC", css="rate",
                        data={"start": rate.start + i * rate.unit_ms, "commits": c}))
    return column_chart("chart-commit-rate", bars, fmt=format_count, width=960, height=220,
                        label=f"commits per {rate.unit}")


def _history(series: HistorySeries) -> str:
    head = '<section id="history"><h2>History</h2>'
    points = series.points
    if not points:
        return head + '<p class="muted">No commit found in the log.</p></section>'
    first, last = points[0].version, points[-1].version
    sources = {s: sum(1 for p in points if p.source == s) for s in ("crc", "log", "")}
    older = "; older versions are not shown" if series.truncated else ""
    unknown = (f"; {sources['']:,} versions unknown (their commits were not read)" if sources[""] else "")
    text = (f"<p>Versions {first:,} to {last:,}: {len(points):,} commits (the last {series.limit:,} versions at most"
            f"{older}). Totals from {sources['crc']:,} .crc files and {sources['log']:,} commits replayed backwards "
            f"from the version shown{unknown}.</p>")
    files = [LinePoint(p.version, p.num_files, _point_title(p)) for p in points]
    sizes = [LinePoint(p.version, p.num_bytes, _point_title(p)) for p in points]
    out = [head, text, '<div class="pair"><div><h3>table size (bytes) by version</h3>',
           line_chart("chart-history-bytes", sizes, fmt=format_bytes, binary=True, width=480,
                      label="table size by version", css="bytes"),
           '</div><div><h3>live files by version</h3>',
           line_chart("chart-history-files", files, fmt=format_count, width=480, label="live files by version"),
           "</div></div>"]
    rate = commit_rate(points)
    if rate is not None:
        span_ms = max(1, (max(p.timestamp for p in points if p.timestamp is not None)
                          - min(p.timestamp for p in points if p.timestamp is not None)))
        per = rate.total / max(1.0, span_ms / rate.unit_ms)
        out.append(f'<h3>commits per {escape(rate.unit)} ({rate.total:,} commits, '
                   f"{format_count(round(per, 2))} per {escape(rate.unit)} on average)</h3>")
        out.append(_rate_chart(rate))
    out.append("</section>")
    return "".join(out)


def render_html(
    health: TableHealth,
    history: HistorySeries | None = None,
    *,
    thresholds: Mapping[str, float | None] | None = None,
    breaches: Sequence[Breach] | None = None,
    max_partitions: int = DEFAULT_MAX_PARTITIONS,
) -> str:
    """The report page of ``health`` (see the module docstring), with the history plots when ``history`` is
    given. ``thresholds``: the limits checked, by the names of :meth:`TableHealth.breaches`
    (:data:`THRESHOLDS`); ``breaches``: those passed (default: worked out from ``thresholds``).
    ``max_partitions``: partitions drawn one by one at most.

    Example:
        >>> from deltalog.health.model import TableHealth
        >>> h = TableHealth.empty("orders", 3).with_(num_files=10, num_small_files=9)
        >>> page = render_html(h, thresholds={"max_small_file_share": 0.5})
        >>> 'data-metric="num_files"' in page, "✗ small_file_share is 0.9, above the limit 0.5" in page
        (True, True)
    """
    checked = {k: float(v) for k, v in (thresholds or {}).items() if v is not None}
    unknown = set(checked) - set(THRESHOLDS)
    if unknown:
        raise ValueError(f"unknown thresholds {sorted(unknown)}; known: {sorted(THRESHOLDS)}")
    if breaches is None:
        limits: dict[str, Any] = dict(checked)
        breaches = health.breaches(**limits)
    from deltalog.version import __version__

    when = f", committed {format_time(health.timestamp)} UTC" if health.timestamp else ""
    measured = f"; measured {format_time(health.measured_at)} UTC" if health.measured_at else ""
    title = f"Table health: {health.table}"
    body = [
        f"<header><h1>{escape(title)}</h1><p class=\"muted\">Version {health.version:,}{escape(when)}{measured}. "
        "Everything here comes from the Delta log alone: no data file was read.</p></header>",
        _thresholds(checked, breaches),
        _headline(health, {b.metric for b in breaches}),
        _file_sizes(health),
        _deleted(health, max_partitions),
        _partitions(health, max_partitions),
    ]
    if history is not None:
        body.append(_history(history))
    body.append(f"<footer>deltalog {escape(__version__)} health report; times are UTC. "
                "docs/health.md explains every number.</footer>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>" + "".join(body) + "</body></html>\n")


def html_report(
    snapshot: Snapshot,
    *,
    health: TableHealth | None = None,
    versions: int = DEFAULT_HISTORY_VERSIONS,
    thresholds: Mapping[str, float | None] | None = None,
    max_partitions: int = DEFAULT_MAX_PARTITIONS,
    small_file_threshold: int | None = None,
    history_depth: int = DEFAULT_HISTORY_DEPTH,
    clock: Callable[[], int] | None = None,
) -> str:
    """The HTML report of ``snapshot``'s table: its :func:`~deltalog.health.compute.table_health` (or the
    ``health`` given, computed for that snapshot) and its last ``versions`` versions
    (:func:`~deltalog.health.history_series.history_points`; 0 leaves the history out), drawn by
    :func:`render_html`. Only the log is read. ``small_file_threshold``, ``history_depth`` and ``clock`` as
    for :func:`~deltalog.health.compute.table_health`.

    Example:
        >>> import deltalog, pyarrow as pa
        >>> _ = deltalog.write_table("memory://report-doc", pa.table({"id": [1, 2], "p": ["a", "b"]}),
        ...                          partition_by=["p"])
        >>> page = html_report(deltalog.Table("memory://report-doc").snapshot(), thresholds={"max_deleted_share": 0.1})
        >>> page.count('<svg id="chart-'), "every threshold met" in page
        (7, True)
    """
    h = health if health is not None else table_health(
        snapshot, small_file_threshold=small_file_threshold, history_depth=history_depth, clock=clock)
    series = history_points(snapshot, limit=versions, totals=(h.num_files, h.num_bytes)) if versions > 0 else None
    return render_html(h, series, thresholds=thresholds, max_partitions=max_partitions)
