"""Shared fixtures (``compact_copy``) and a suite-wide rule: with ``DELTALOG_STRICT=1`` (set by
``make test``, i.e. CI) a skipped test is a failure. Tests skip only when something they need is
missing -- Java or pyspark for the Spark suite, the Spark Connect client, ``deltalake``, the
conformance corpus at ``../shared/conformance`` -- and on CI each of those is part of the set-up, so a
skip there would hide a test that never ran."""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Callable, Iterator
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


def _compact_copy(path: str) -> int:
    """An OPTIMIZE-like commit through the kernel: every live file copied to a new name, the old one
    removed and the copy added with ``dataChange=false`` (the same rows). Returns the version."""
    import deltalog
    from deltalog.protocol.actions import Add
    from deltalog.txn.operations import Optimize

    table = deltalog.Table(path)
    files = table.snapshot().add_files()
    txn = table.transaction(Optimize())
    txn.remove_files(files, data_change=False)
    for r in files.to_pylist():
        folder, name = posixpath.split(r["path"])
        new = posixpath.join(folder, "compacted-" + name)
        shutil.copy(os.path.join(path, r["path"]), os.path.join(path, new))
        txn.add_file(Add(path=new, partitionValues=dict(r["partitionValues"] or []), size=r["size"],
                         modificationTime=r["modificationTime"], dataChange=False, stats=r["stats"]))
    return txn.commit().version


@pytest.fixture
def compact_copy() -> Callable[[str], int]:
    """Rearranges a local table's files in a ``dataChange=false`` commit, as OPTIMIZE does."""
    return _compact_copy
