"""Inline SVG charts for the HTML health report (:mod:`deltalog.health.report_html`): columns, bar rows, lines
and a share bar, as strings, with no script and no external resource.

Every text that comes from outside this module -- labels and tooltips, which may hold partition values or
operation names -- is escaped here with :func:`html.escape`, so callers pass plain text. Each bar is a
``<rect class="bar">`` and each point of a line a ``<circle class="pt">``, with a ``<title>`` the browser
shows on hover and ``data-*`` attributes that tests (and curious readers of the source) can check.

Example:
    >>> svg = column_chart("c", [Bar("a", 2, "two"), Bar("b<", 1, "one")], fmt=format_count)
    >>> svg.count('class="bar'), "b&lt;" in svg, "<script" in svg
    (2, True, False)
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

__all__ = ["Bar", "Column", "LinePoint", "Row", "column_chart", "format_bytes", "format_count", "format_pct",
           "format_time", "line_chart", "nice_ticks", "row_chart", "share_bar"]

Format = Callable[[float], str]


def format_bytes(n: float | None) -> str:
    """A size in binary units (``-`` for ``None``).

    Example:
        >>> format_bytes(0), format_bytes(1536), format_bytes(3 * 1024**4), format_bytes(None)
        ('0 B', '1.5 KiB', '3.0 TiB', '-')
    """
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} PiB"


def format_count(n: float | None) -> str:
    """A count with thousands separators (``-`` for ``None``; fractions keep up to two decimals).

    Example:
        >>> format_count(1234567), format_count(2.5), format_count(None)
        ('1,234,567', '2.5', '-')
    """
    if n is None:
        return "-"
    if float(n).is_integer():
        return f"{int(n):,}"
    return f"{n:,.2f}".rstrip("0").rstrip(".")


def format_pct(share: float | None) -> str:
    """A share (0 to 1) as a percentage with one decimal (``-`` for ``None``).

    Example:
        >>> format_pct(0.298507), format_pct(None)
        ('29.9%', '-')
    """
    return "-" if share is None else f"{share * 100:.1f}%"


def format_time(ms: int | None) -> str:
    """Epoch milliseconds as ``YYYY-MM-DD HH:MM:SS`` in UTC (``-`` for ``None``).

    Example:
        >>> format_time(1_714_644_845_000), format_time(None)
        ('2024-05-02 10:14:05', '-')
    """
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def nice_ticks(top: float, *, binary: bool = False, integer: bool = False, count: int = 5) -> list[float]:
    """Axis ticks from 0 to at least ``top``, about ``count`` steps of 1, 2 or 5 times a power of ten (of a
    power of 1024 times that, for ``binary`` sizes); whole steps for an ``integer`` axis.

    Example:
        >>> nice_ticks(9), nice_ticks(3, integer=True), nice_ticks(5000, binary=True)[:3]
        ([0, 2, 4, 6, 8, 10], [0, 1, 2, 3], [0, 1024, 2048])
    """
    if top <= 0:
        return [0, 1]
    unit = 1.0
    if binary:
        while top / unit >= 1024:
            unit *= 1024
    raw = top / unit / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw) * unit
    if integer:
        step = max(1.0, math.ceil(step))
    n = math.ceil(top / step - 1e-9)
    values = [round(float(step) * i, 9) for i in range(n + 1)]
    return [int(v) if v.is_integer() else v for v in values]


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _attrs(data: Mapping[str, object]) -> str:
    return "".join(f' data-{escape(k)}="{escape(str(v))}"' for k, v in data.items())


def _svg(chart_id: str, width: int, height: int, label: str, body: list[str]) -> str:
    return (f'<svg id="{escape(chart_id)}" class="chart" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-label="{escape(label)}">' + "".join(body) + "</svg>")


def _y_axis(ticks: Sequence[float], fmt: Format, left: float, right: float, top: float, bottom: float) -> list[str]:
    out = []
    for t in ticks:
        y = bottom - (bottom - top) * t / ticks[-1]
        out.append(f'<line class="grid" x1="{_num(left)}" x2="{_num(right)}" y1="{_num(y)}" y2="{_num(y)}"/>')
        out.append(f'<text class="yl" x="{_num(left - 6)}" y="{_num(y + 4)}" text-anchor="end">'
                   f"{escape(fmt(t))}</text>")
    return out


@dataclass(frozen=True)
class Bar:
    """One column of :func:`column_chart`: its axis label, value, hover text, extra CSS class and ``data-*``
    attributes (all plain text: escaped when drawn).

    Example:
        >>> Bar("8 KiB", 3, "3 files", css="small").css
        'small'
    """

    label: str
    value: float
    title: str
    css: str = ""
    data: Mapping[str, object] = field(default_factory=dict)


def column_chart(chart_id: str, bars: Sequence[Bar], *, fmt: Format, binary: bool = False, integer: bool = True,
                 width: int = 720, height: int = 240, max_labels: int = 14, label: str = "") -> str:
    """Vertical bars, one per :class:`Bar`, on a value axis from 0 (``fmt`` writes its ticks; ``binary`` for
    sizes, ``integer`` for counts); at most ``max_labels`` bars are labelled, evenly spread.

    Example:
        >>> svg = column_chart("files", [Bar(str(i), i, f"{i} files") for i in range(3)], fmt=format_count)
        >>> svg.count("<rect"), svg.count("<title>")
        (3, 3)
    """
    left, right, top, bottom = 72.0, float(width - 10), 10.0, float(height - 62)
    ticks = nice_ticks(max((b.value for b in bars), default=0), binary=binary, integer=integer)
    body = _y_axis(ticks, fmt, left, right, top, bottom)
    n = max(1, len(bars))
    slot = (right - left) / n
    every = max(1, math.ceil(n / max(1, max_labels)))
    for i, b in enumerate(bars):
        h = (bottom - top) * b.value / ticks[-1]
        x = left + i * slot + slot * 0.1
        css = f"bar {b.css}".strip()
        body.append(f'<rect class="{escape(css)}" x="{_num(x)}" y="{_num(bottom - h)}" '
                    f'width="{_num(max(1.0, slot * 0.8))}" height="{_num(h)}" data-i="{i}" '
                    f'data-value="{_num(b.value)}"{_attrs(b.data)}>'
                    f"<title>{escape(b.title)}</title></rect>")
        if i % every == 0:
            cx, cy = left + (i + 0.5) * slot, bottom + 12
            body.append(f'<text class="xl" x="{_num(cx)}" y="{_num(cy)}" text-anchor="end" '
                        f'transform="rotate(-40 {_num(cx)} {_num(cy)})">{escape(b.label)}</text>')
    body.append(f'<line class="axis" x1="{_num(left)}" x2="{_num(right)}" y1="{_num(bottom)}" y2="{_num(bottom)}"/>')
    return _svg(chart_id, width, height, label, body)


@dataclass(frozen=True)
class Column:
    """A measure of :func:`row_chart`: its heading, how values are written, and the CSS class of its bars.

    Example:
        >>> Column("bytes", format_bytes, "bytes").name
        'bytes'
    """

    name: str
    fmt: Format
    css: str = ""
    #: The value the full bar stands for (``None``: the largest value of the column).
    full: float | None = None


@dataclass(frozen=True)
class Row:
    """A row of :func:`row_chart`: its label, one value per column (``None``: none), hover text and ``data-*``
    attributes (plain text).

    Example:
        >>> Row("day=2024-05-01", (3, 1024), "3 files").values
        (3, 1024)
    """

    label: str
    values: tuple[float | None, ...]
    title: str
    data: Mapping[str, object] = field(default_factory=dict)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def row_chart(chart_id: str, rows: Sequence[Row], columns: Sequence[Column], *, width: int = 960,
              label_width: int = 260, label: str = "") -> str:
    """Horizontal bars: one line per :class:`Row` (its label on the left, clipped to fit; whole in the hover
    text), one bar per :class:`Column`, each column scaled to its own largest value (or ``full``), with the
    value written after the bar.

    Example:
        >>> svg = row_chart("p", [Row("a", (1, 10), "a"), Row("b", (2, None), "b")],
        ...                 [Column("files", format_count), Column("bytes", format_bytes)])
        >>> svg.count('class="bar'), svg.count("<title>")
        (3, 2)
    """
    line, head = 20, 22
    height = head + line * len(rows) + 6
    col_w = (width - label_width) / max(1, len(columns))
    body = []
    for j, c in enumerate(columns):
        x = label_width + j * col_w
        body.append(f'<text class="head" x="{_num(x)}" y="14">{escape(c.name)}</text>')
    tops = [c.full if c.full is not None else max((r.values[j] or 0 for r in rows), default=0)
            for j, c in enumerate(columns)]
    chars = max(8, int((label_width - 10) / 7))
    for i, r in enumerate(rows):
        y = head + i * line
        body.append(f'<g class="row" data-i="{i}"{_attrs(r.data)}><title>{escape(r.title)}</title>'
                    f'<text class="rl" x="{label_width - 8}" y="{y + 14}" text-anchor="end">'
                    f"{escape(_clip(r.label, chars))}</text>")
        for j, c in enumerate(columns):
            value = r.values[j]
            if value is None:
                continue
            x = label_width + j * col_w
            span = col_w - 78
            w = span * value / tops[j] if tops[j] else 0.0
            css = f"bar {c.css}".strip()
            body.append(f'<rect class="{escape(css)}" x="{_num(x)}" y="{y + 3}" width="{_num(w)}" height="{line - 6}" '
                        f'data-col="{escape(c.name)}" data-value="{_num(value)}"/>'
                        f'<text class="val" x="{_num(x + w + 4)}" y="{y + 14}">{escape(c.fmt(value))}</text>')
        body.append("</g>")
    return _svg(chart_id, width, height, label, body)


@dataclass(frozen=True)
class LinePoint:
    """A point of :func:`line_chart`: x (a version), y (``None``: unknown, a gap in the line) and hover text.

    Example:
        >>> LinePoint(3, None, "version 3: unknown").y is None
        True
    """

    x: int
    y: float | None
    title: str


def line_chart(chart_id: str, points: Sequence[LinePoint], *, fmt: Format, binary: bool = False,
               integer: bool = True, width: int = 720, height: int = 220, label: str = "", css: str = "") -> str:
    """A line through the points with a known y (a gap where y is unknown), a dot on each with its hover text,
    over an x axis from the first x to the last, labelled with about six x values; ``css`` is an extra class
    of the line and the dots.

    Example:
        >>> ys = [1, 2, None, 3, 4]
        >>> svg = line_chart("l", [LinePoint(x, y, f"version {x}") for x, y in enumerate(ys)], fmt=format_count)
        >>> svg.count('class="pt"'), svg.count("<polyline")
        (4, 2)
    """
    left, right, top, bottom = 72.0, float(width - 14), 10.0, float(height - 36)
    ticks = nice_ticks(max((p.y for p in points if p.y is not None), default=0), binary=binary, integer=integer)
    body = _y_axis(ticks, fmt, left, right, top, bottom)
    lo = min((p.x for p in points), default=0)
    hi = max((p.x for p in points), default=0)

    def px(x: int) -> float:
        return (left + right) / 2 if hi == lo else left + (right - left) * (x - lo) / (hi - lo)

    def py(y: float) -> float:
        return bottom - (bottom - top) * y / ticks[-1]

    step = max(1, math.ceil((hi - lo + 1) / 6))
    for x in range(lo, hi + 1, step):
        body.append(f'<text class="xl" x="{_num(px(x))}" y="{_num(bottom + 16)}" text-anchor="middle">{x}</text>')
    runs: list[list[str]] = [[]]
    for p in points:
        if p.y is None:
            runs.append([])
        else:
            runs[-1].append(f"{_num(px(p.x))},{_num(py(p.y))}")
    extra = f" {escape(css)}" if css else ""
    body += [f'<polyline class="line{extra}" points="{" ".join(run)}"/>' for run in runs if len(run) > 1]
    body += [f'<circle class="pt{extra}" cx="{_num(px(p.x))}" cy="{_num(py(p.y))}" r="2.6" data-x="{p.x}" '
             f'data-y="{_num(p.y)}"><title>{escape(p.title)}</title></circle>' for p in points if p.y is not None]
    body.append(f'<line class="axis" x1="{_num(left)}" x2="{_num(right)}" y1="{_num(bottom)}" y2="{_num(bottom)}"/>')
    return _svg(chart_id, width, height, label, body)


def share_bar(chart_id: str, parts: Sequence[tuple[str, float, str]], *, width: int = 720, label: str = "") -> str:
    """One horizontal bar split into parts ``(name, value, css class)`` in proportion to their values, each
    named with its share under the bar.

    Example:
        >>> svg = share_bar("s", [("live", 3, "live"), ("deleted", 1, "deleted")])
        >>> svg.count('class="bar'), "25.0%" in svg
        (2, True)
    """
    total = sum(v for _, v, _ in parts)
    body: list[str] = []
    x = 0.0
    for i, (name, value, css) in enumerate(parts):
        share = value / total if total else 0.0
        w = width * share
        body.append(f'<rect class="{escape(f"bar {css}".strip())}" x="{_num(x)}" y="0" width="{_num(w)}" height="22" '
                    f'data-part="{escape(name)}" data-value="{_num(value)}" data-share="{share:.6f}">'
                    f"<title>{escape(name)}: {escape(format_count(value))} ({format_pct(share)})</title></rect>")
        anchor, tx = ("start", 2.0) if i == 0 else ("end", float(width - 2)) if i == len(parts) - 1 else (
            "middle", x + w / 2)
        body.append(f'<text class="val" x="{_num(tx)}" y="38" text-anchor="{anchor}">{escape(name)} '
                    f"{escape(format_count(value))} ({format_pct(share)})</text>")
        x += w
    return _svg(chart_id, width, 44, label, body)
