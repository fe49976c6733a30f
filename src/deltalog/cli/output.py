"""Output for the ``deltalog`` command: JSON for scripts, rich tables for people, progress, errors.

Everything a command prints goes through an :class:`Output`: ``--json`` prints one JSON document on
stdout (nothing else goes to stdout); otherwise rich renders tables and trees. Progress bars go to
stderr, only on a terminal and never with ``--json``. An error is one line on stderr (and, with
``--json``, an ``{"error": ...}`` document on stdout); ``--debug`` adds the traceback.

Example:
    >>> out = Output(json_mode=True)
    >>> out.emit({"version": 3}, lambda: None)                          # doctest: +SKIP
    {
      "version": 3
    }
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table as RichTable

from deltalog.storage import FileInfo, LogStore

__all__ = ["ObservedStore", "Output", "ProgressReporter", "format_bytes", "format_ms", "jsonable"]


def format_bytes(n: int | float | None) -> str:
    """Human-readable size.

    Example:
        >>> format_bytes(0), format_bytes(1536), format_bytes(3 * 1024**3)
        ('0 B', '1.5 KiB', '3.0 GiB')
    """
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover


def format_ms(ms: int | None, *, compact: bool = False) -> str:
    """Epoch milliseconds as an ISO-8601 UTC timestamp (``compact``: to the second, with a space).

    Example:
        >>> format_ms(0), format_ms(1500, compact=True)
        ('1970-01-01T00:00:00.000Z', '1970-01-01 00:00:01')
    """
    if ms is None:
        return "-"
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    if compact:
        return t.strftime("%Y-%m-%d %H:%M:%S")
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def jsonable(value: Any) -> Any:
    """Plain JSON values for dataclasses, mappings, tuples, sets, datetimes and bytes.

    Example:
        >>> jsonable({"a": (1, {2})})
        {'a': [1, [2]]}
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(v) for v in value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return value


class Output:
    """Where a command's results, messages and errors go (see the module docstring).

    Example:
        >>> Output(json_mode=False, debug=False).json_mode
        False
    """

    def __init__(self, *, json_mode: bool = False, debug: bool = False, progress: bool = True) -> None:
        self.json_mode = json_mode
        self.debug = debug
        # Piped output is not cut to 80 columns: wide tables stay one line per row for grep and friends.
        wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
        self.console = Console(highlight=False, width=200 if wide else None)
        self.err = Console(stderr=True, highlight=False)
        self.show_progress = progress and not json_mode and self.err.is_terminal

    def emit(self, document: Any, render: Callable[[], None]) -> None:
        """Print ``document`` as JSON (``--json``) or call ``render`` to draw it for people."""
        if self.json_mode:
            print(json.dumps(jsonable(document), indent=2, default=str))
        else:
            render()

    def print(self, *objects: Any, style: str | None = None) -> None:
        """Print rich renderables or markup text to stdout (not in JSON mode)."""
        if not self.json_mode:
            self.console.print(*objects, style=style)

    def note(self, text: str) -> None:
        """A side remark on stderr (never mixed into stdout; silent in JSON mode)."""
        if not self.json_mode:
            self.err.print(escape(text), style="dim", soft_wrap=True)

    def error(self, exc: BaseException, *, prefix: str = "") -> None:
        """Report an error: one line on stderr (plus the traceback with ``--debug``)."""
        text = " ".join(str(exc).split()) or type(exc).__name__
        line = f"{prefix}{text}"
        if self.debug:
            self.err.print("".join(traceback.format_exception(exc)), markup=False, highlight=False, end="")
        self.err.print(f"[bold red]deltalog:[/] {escape(line)}", soft_wrap=True)
        if self.json_mode:
            print(json.dumps({"error": line, "type": type(exc).__name__}))

    def key_values(self, rows: Sequence[tuple[str, Any]], *, title: str | None = None) -> RichTable:
        """A two-column table of labels and values (strings are shown literally; pass
        :class:`rich.text.Text` for styled values)."""
        t = RichTable(show_header=False, box=None, title=title, title_justify="left", title_style="bold")
        t.add_column(style="bold cyan", no_wrap=True)
        t.add_column(overflow="fold")
        for k, v in rows:
            if isinstance(v, bool) or not isinstance(v, (int, float, str)):
                t.add_row(k, v if hasattr(v, "__rich_console__") else escape(str(v)))
            else:
                t.add_row(k, escape(v) if isinstance(v, str) else f"{v:,}")
        return t

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None) -> RichTable:
        """A table with a header row."""
        t = RichTable(title=title, title_justify="left", title_style="bold", header_style="bold cyan")
        for c in columns:
            t.add_column(c, overflow="fold")
        for r in rows:
            t.add_row(*[escape(str(v)) for v in r])
        return t

    @contextmanager
    def progress(self) -> Iterator[ProgressReporter]:
        """A :class:`ProgressReporter` whose bars show on stderr (disabled when not wanted)."""
        reporter = ProgressReporter(self.err, enabled=self.show_progress)
        with reporter.progress:
            yield reporter


class ProgressReporter:
    """``reporter(phase, done, total)``: one rich progress bar per phase (``total`` ``None`` = unknown).

    Example:
        >>> r = ProgressReporter(Console(), enabled=False)
        >>> r("files", 1, 10)
    """

    def __init__(self, console: Console, *, enabled: bool) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not enabled,
        )
        self._tasks: dict[str, TaskID] = {}

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        task = self._tasks.get(phase)
        if task is None:
            task = self.progress.add_task(phase, total=total)
            self._tasks[phase] = task
        self.progress.update(task, completed=done, total=total)

    def advance(self, phase: str, step: int = 1) -> None:
        """Move ``phase`` forward by ``step`` (a bar of unknown length if new)."""
        task = self._tasks.get(phase)
        if task is None:
            task = self.progress.add_task(phase, total=None)
            self._tasks[phase] = task
        self.progress.advance(task, step)


class ObservedStore:
    """A :class:`~deltalog.storage.LogStore` that reports files listed and deleted to a progress
    reporter and delegates everything to ``inner`` (used to show vacuum's progress).

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> seen = []
        >>> s = ObservedStore(InMemoryLogStore(), lambda phase, n: seen.append(phase))
        >>> s.write("a", b"", overwrite=False); list(s.list_dir("")) and seen
        ['listing files']
    """

    def __init__(self, inner: LogStore, advance: Callable[[str, int], None]) -> None:
        self.inner = inner
        self._advance = advance

    @property
    def root(self) -> str:
        """The inner store's root."""
        return self.inner.root

    def list_dir(self, directory: str, *, recursive: bool = False) -> Iterator[FileInfo]:
        """List through the inner store, counting files."""
        pending = 0
        try:
            for info in self.inner.list_dir(directory, recursive=recursive):
                pending += 1
                if pending == 500:
                    self._advance("listing files", pending)
                    pending = 0
                yield info
        finally:
            self._advance("listing files", pending)

    def delete(self, path: str) -> None:
        """Delete through the inner store, counting files."""
        self.inner.delete(path)
        self._advance("deleting files", 1)

    def delete_many(self, paths: list[str]) -> None:
        """Bulk delete through the inner store (one by one if it has no bulk delete), counting files."""
        bulk = getattr(self.inner, "delete_many", None)
        if bulk is None:
            for p in paths:
                self.delete(p)
            return
        bulk(paths)
        self._advance("deleting files", len(paths))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
