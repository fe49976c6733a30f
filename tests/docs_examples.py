"""The examples of the project's documentation: the fenced code blocks of README.md and docs/*.md.

The info string after a block's opening fence says what the block is:

- ``python``: a kernel example (no JVM, no network); tests/unit/test_docs_examples.py runs it;
- ``python spark``: an example that needs Spark; tests/spark/test_spark_docs_examples.py runs it with the
  suite's shared session bound to the name ``spark``;
- anything else -- ``python skip`` (object stores, network access, fragments that stand for part of a
  program), ``console``, no info string -- is shown to the reader and never run.

The examples of one page and one kind run in the page's order and share one namespace, so a later block
may use what an earlier one made.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: The info strings of blocks that run; ``python skip`` and every other block are shown only.
KERNEL = "python"
SPARK = "python spark"
SHOWN = "python skip"
PYTHON_TAGS = (KERNEL, SPARK, SHOWN)

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Example:
    """One fenced block: its page (relative to the checkout), the line of its first code line, its info
    string and its code (dedented by the fence's indentation)."""

    page: str
    line: int
    info: str
    code: str


def pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Example]:
    """Every fenced block of the Markdown file ``path``, in order."""
    out: list[Example] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(ROOT).as_posix()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], opening["indent"]
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = _FENCE.match(lines[j])
            if (closing is not None and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(fence)
                    and not closing["info"].strip()):
                break
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        out.append(Example(page, i + 2, " ".join(opening["info"].split()), textwrap.dedent("\n".join(body))))
        i = j + 1
    return out


def examples(info: str) -> dict[str, list[Example]]:
    """The blocks tagged exactly ``info``, by page (pages without one left out)."""
    found = {p.relative_to(ROOT).as_posix(): [b for b in blocks(p) if b.info == info] for p in pages()}
    return {page: found_here for page, found_here in found.items() if found_here}


def run(example: Example, namespace: dict[str, Any]) -> None:
    """Run ``example`` in ``namespace``; a traceback names the page and its line numbers."""
    code = compile("\n" * (example.line - 1) + example.code, example.page, "exec")
    exec(code, namespace)
