"""The kernel examples of README.md and docs/*.md run, so that what the pages show stays true.

Convention (also in docs/development.md): a fenced block tagged ```` ```python ```` is a kernel example and
runs here; ```` ```python spark ```` needs Spark and runs in tests/spark/test_spark_docs_examples.py with the
shared session as ``spark``; ```` ```python skip ```` (object stores, network access, fragments) and every
other block are shown only. A page's kernel examples run in order in one namespace, inside an empty
temporary working directory, so their tables are tiny and relative paths land in that directory. Claims an
example makes about its results are ``assert`` statements, so a false one fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_examples import KERNEL, PYTHON_TAGS, blocks, examples, pages, run

KERNEL_PAGES = examples(KERNEL)


@pytest.mark.parametrize("page", sorted(KERNEL_PAGES))
def test_kernel_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for example in KERNEL_PAGES[page]:
        run(example, namespace)


def test_every_python_block_says_whether_it_runs() -> None:
    """A misspelt tag (```` ```python sprak ````, ```` ```py ````) would hide an example from both tests."""
    untagged = [f"{b.page}:{b.line} {b.info!r}" for p in pages() for b in blocks(p)
                if b.info.split(" ")[0].lower() in ("py", "python", "python3") and b.info not in PYTHON_TAGS]
    assert untagged == []


def test_the_readme_and_the_kernel_page_have_examples() -> None:
    assert {"README.md", "docs/kernel.md", "docs/features.md"} <= set(KERNEL_PAGES)
