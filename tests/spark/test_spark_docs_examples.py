"""The Spark examples of README.md and docs/*.md run, so that what the pages show stays true.

Convention (also in docs/development.md and tests/docs_examples.py): a fenced block tagged
```` ```python spark ```` needs Spark and runs here, on the suite's shared session bound to the name
``spark``; ```` ```python ```` blocks are kernel examples (tests/unit/test_docs_examples.py), and
```` ```python skip ```` blocks (object stores, network access, fragments) are shown only. A page's Spark
examples run in order in one namespace, inside an empty temporary working directory (deltalog resolves
relative paths against it); the catalog tables and temporary views they create are dropped afterwards, so
the shared session's catalog is left as it was.

The Spark examples of all pages together take about 20 s of CPU on a warm session; the streaming examples
of docs/streaming.md would add half as much again (a stream's start), so they are tagged
```` ```python skip ```` and shown only (tests/spark/streaming/ covers what they show).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from docs_examples import SPARK, examples, run

pytestmark = pytest.mark.spark

SPARK_PAGES = examples(SPARK)


def _catalog(spark: Any) -> set[tuple[str, bool]]:
    return {(t.name, t.isTemporary) for t in spark.catalog.listTables()}


@pytest.mark.parametrize("page", sorted(SPARK_PAGES))
def test_spark_examples_run(page: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    before = _catalog(spark)
    namespace: dict[str, Any] = {"__name__": "__docs__", "spark": spark}
    try:
        for example in SPARK_PAGES[page]:
            run(example, namespace)
    finally:
        for query in spark.streams.active:
            query.stop()
        for name, temporary in sorted(_catalog(spark) - before):
            if temporary:
                spark.catalog.dropTempView(name)
            else:
                spark.sql(f"DROP TABLE IF EXISTS `{name}`")


def test_the_spark_pages_have_examples() -> None:
    assert {"README.md", "docs/spark.md"} <= set(SPARK_PAGES)
