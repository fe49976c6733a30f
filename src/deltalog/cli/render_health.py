"""What ``deltalog health`` shows: the JSON document (:func:`health_document`) and its rich rendering
(:func:`health`), with the file-size histograms drawn inline as text bars and sparklines.

Example:
    >>> bar(3, 6, width=4)
    '██'
    >>> sparkline([0, 1, 4, 2])
    ' ▂█▄'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.text import Text

from deltalog.cli.output import Output, format_bytes, format_ms
from deltalog.health.model import Breach, PartitionHealth, TableHealth

__all__ = ["bar", "bin_label", "health", "health_document", "sparkline"]

_BLOCKS = " ▁▂▃▄▅▆▇█"


def bar(value: int, largest: int, *, width: int = 30) -> str:
    """A text bar of ``value`` out of ``largest`` in ``width`` cells (at least one cell for a non-zero value).

    Example:
        >>> bar(1, 1000, width=10), bar(0, 5)
        ('▏', '')
    """
    if value <= 0 or largest <= 0:
        return ""
    cells = value * width / largest
    full = int(cells)
    return "█" * full if full else "▏"


def sparkline(values: Sequence[int]) -> str:
    """One character per value, its height relative to the largest (a space for zero).

    Example:
        >>> sparkline([5, 0, 5])
        '█ █'
    """
    top = max(values, default=0)
    if top <= 0:
        return " " * len(values)
    return "".join(" " if v <= 0 else _BLOCKS[max(1, round(v * 8 / top))] for v in values)


def bin_label(boundaries: Sequence[int], i: int) -> str:
    """``start - end`` of bin ``i`` (the last bin is ``start +``).

    Example:
        >>> bin_label([0, 8192, 16384], 1), bin_label([0, 8192, 16384], 2)
        ('8.0 KiB - 16.0 KiB', '16.0 KiB +')
    """
    start = format_bytes(boundaries[i])
    return f"{start} +" if i + 1 >= len(boundaries) else f"{start} - {format_bytes(boundaries[i + 1])}"


def health_document(h: TableHealth, thresholds: Mapping[str, float | None], breaches: Sequence[Breach]
                    ) -> dict[str, Any]:
    """The ``--json`` document: :meth:`TableHealth.to_dict` plus the thresholds checked and those passed.

    Example:
        >>> doc = health_document(TableHealth.empty("t", 0), {"max_small_file_share": 0.5}, [])
        >>> doc["ok"], doc["thresholds"]
        (True, {'max_small_file_share': 0.5})
    """
    doc = h.to_dict()
    doc["thresholds"] = {k: v for k, v in thresholds.items() if v is not None}
    doc["breaches"] = [{"metric": b.metric, "value": b.value, "limit": b.limit} for b in breaches]
    doc["ok"] = not breaches
    return doc


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.1f}%"


def _when(ref: Any) -> str:
    if ref is None:
        return "not found"
    return f"version {ref.version}, {format_ms(ref.timestamp, compact=True)}"


def _summary(h: TableHealth) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = [
        ("files", f"{h.num_files:,} live files, {format_bytes(h.num_bytes)}"
                  + (f" ({h.files_without_stats:,} without statistics, {format_bytes(h.bytes_without_stats)})"
                     if h.files_without_stats else "")),
        ("rows", f"{h.num_rows:,} live rows" + (f" of {h.num_physical_rows:,} in the files" if h.num_deleted_rows
                                               else "")),
        ("small files", f"{h.num_small_files:,} below {format_bytes(h.small_file_threshold)} "
                        f"({_pct(h.small_file_share)} of files, {format_bytes(h.small_file_bytes)}); target "
                        f"{format_bytes(h.target_file_size)}"),
    ]
    if h.dv_files or h.num_deleted_rows:
        amp = "-" if h.read_amplification is None else f"{h.read_amplification:.2f}x"
        rows.append(("deletion vectors", f"{_n(h.dv_files, 'file')} ({format_bytes(h.dv_bytes)}) delete "
                                         f"{h.num_deleted_rows:,} rows ({_pct(h.deleted_row_share)}); a full scan "
                                         f"reads {amp} the rows it returns, ~{format_bytes(h.deleted_bytes_estimate)} "
                                         "of deleted rows"))
    if h.partition_columns:
        skew = "-" if h.partition_skew is None else f"{h.partition_skew:.1f}x the median"
        rows.append(("partitions", f"{len(h.partitions):,} by {', '.join(h.partition_columns)}; the largest is {skew}"))
    if h.clustering_columns:
        rows.append(("clustering", f"by {', '.join(h.clustering_columns)}: {h.clustered_files:,} files clustered "
                                   f"({_pct(h.clustered_share)} of bytes)"))
    if h.zorder_columns:
        rows.append(("z-order", f"by {', '.join(h.zorder_columns)}: {h.zordered_files:,} files "
                                f"({_pct(h.zordered_share)} of bytes)"))
    days = h.deleted_file_retention_ms / 86_400_000
    rows += [
        ("tombstones", f"{h.num_tombstones:,} ({format_bytes(h.tombstone_bytes)}); {h.expired_tombstones:,} past "
                       f"the {days:g}-day retention: VACUUM would reclaim {format_bytes(h.reclaimable_bytes)}"
                       + (f" ({h.tombstones_without_size:,} of unknown size)" if h.tombstones_without_size else "")),
        ("log", f"{_n(h.commits_since_checkpoint, 'commit')} "
                + ("and no checkpoint" if h.checkpoint_version is None else f"since checkpoint {h.checkpoint_version}")
                + f" (interval {h.checkpoint_interval}); {h.log_files:,} files, {format_bytes(h.log_bytes)}"),
        ("last OPTIMIZE", _when(h.last_optimize)),
        ("last VACUUM", _when(h.last_vacuum)),
    ]
    if not h.history_complete:
        rows.append(("history", f"only the last {h.history_commits_scanned:,} commits were scanned"))
    features = sorted(set(h.reader_features) | set(h.writer_features))
    rows.append(("protocol", f"reader {h.min_reader_version}, writer {h.min_writer_version}"
                             + (f"; {', '.join(features)}" if features else "")))
    return rows


def _histogram_rows(h: TableHealth) -> list[list[Any]]:
    hist = h.file_size_histogram
    largest = max(hist.file_counts, default=0)
    return [[bin_label(hist.sorted_bin_boundaries, i), f"{c:,}", format_bytes(t), bar(c, largest)]
            for i, (c, t) in enumerate(zip(hist.file_counts, hist.total_bytes)) if c]


def _partition_rows(h: TableHealth, limit: int) -> tuple[list[str], list[list[Any]]]:
    hist = h.file_size_histogram
    used = [i for i, c in enumerate(hist.file_counts) if c]
    lo, hi = (used[0], used[-1]) if used else (0, 0)
    index = {b: i for i, b in enumerate(hist.sorted_bin_boundaries)}

    def line(p: PartitionHealth) -> str:
        counts = [0] * (hi - lo + 1)
        for start, files, _ in p.size_bins:
            i = index.get(start)
            if i is not None and lo <= i <= hi:
                counts[i - lo] = files
        return sparkline(counts)

    worst = sorted(h.partitions, key=lambda p: (-p.num_small_files, -p.num_files))[:limit]
    bounds = hist.sorted_bin_boundaries
    top = format_bytes(bounds[hi + 1]) if hi + 1 < len(bounds) else "∞"
    header = [*h.partition_columns, "files", "bytes", "rows", "small", "deleted rows",
              f"sizes {format_bytes(bounds[lo])} .. {top}"]
    rows = [[*("null" if p.values.get(c) is None else escape(str(p.values.get(c))) for c in h.partition_columns),
             f"{p.num_files:,}", format_bytes(p.num_bytes), f"{p.num_rows:,}", _pct(p.small_file_share),
             f"{p.num_deleted_rows:,}", line(p)] for p in worst]
    return header, rows


def health(out: Output, h: TableHealth, breaches: Sequence[Breach], *, checked: bool, partitions: int = 10) -> None:
    """Draw ``health``: a summary, the file-size histogram, the partitions with the most small files, and the
    thresholds passed (``checked``: some were given).

    Example:
        >>> health(Output(), deltalog.Table("/data/events").health(), [], checked=False)  # doctest: +SKIP
        /data/events at version 12, committed 2024-05-02 10:14:05
    """
    when = f", committed {format_ms(h.timestamp, compact=True)}" if h.timestamp else ""
    out.print(f"[bold]{escape(h.table)}[/] at version {h.version}{when}")
    out.print(out.key_values(_summary(h)))
    if h.num_files:
        source = "from the .crc file" if h.file_size_histogram_source == "crc" else "from the log"
        out.print(out.table(["file size", "files", "bytes", ""], _histogram_rows(h),
                            title=f"file sizes ({source})"))
    if h.partitions and partitions:
        header, rows = _partition_rows(h, partitions)
        more = f", {partitions} of {len(h.partitions):,} shown" if len(h.partitions) > partitions else ""
        out.print(out.table(header, rows, title=f"partitions, most small files first{more}"))
    for b in breaches:
        out.print(Text(f"✗ {b}", style="bold red"))
    if checked and not breaches:
        out.print(Text("✓ every threshold met", style="bold green"))
