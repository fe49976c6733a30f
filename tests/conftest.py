"""Suite-wide rule: with ``DELTALOG_STRICT=1`` (set by ``make test``, i.e. CI) a skipped test is a
failure. Tests skip only when something they need is missing -- Java or pyspark for the Spark suite,
the Spark Connect client, ``deltalake``, the conformance corpus at ``../shared/conformance`` -- and
on CI each of those is part of the set-up, so a skip there would hide a test that never ran."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

STRICT = os.environ.get("DELTALOG_STRICT", "").strip().lower() in ("1", "true", "yes")


def _strict(report: Any, what: str) -> None:
    if STRICT and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"{what} skipped under DELTALOG_STRICT=1 (set by make test): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome: Any = yield
    _strict(outcome.get_result(), item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome: Any = yield
    _strict(outcome.get_result(), collector.nodeid)
