"""Shared fixtures (``compact_copy``) and a suite-wide rule: with ``DELTALOG_STRICT=1`` (set by
``make test``, i.e. CI) a skipped test is a failure. Tests skip only when something they need is
missing -- Java or pyspark for the Spark suite, the Spark Connect client, ``deltalake``, the
conformance corpus at ``../shared/conformance`` -- and on CI each of those is part of the set-up, so a
skip there would hide a test that never ran."""

from __future__ import annotations

import os
import posixpath
import shutil
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

STRICT = os.environ.get("DELTALOG_STRICT", "").strip().lower() in ("1", "true", "yes")
sys.path.insert(0, os.path.dirname(__file__))  # ``import emulators`` from any test directory

# Every JVM the suite starts (the shared session, the programs, Hive clients, clusters, Connect servers)
# runs tiny jobs for seconds to minutes, where C2's compiles cost more CPU than they win back: with C1
# alone three concurrent program runs took 75 s instead of 121 s on CI's 2 cores; the serial collector
# spares the parallel collector's threads (deltalog.spark.session.LEAN_JVM_OPTIONS, which the shared
# session uses anyway). With the class-data-sharing archive make test writes while the first tests run
# (scripts/spark_cds.py), Spark's start-up classes are mapped instead of parsed:
# a session with a write and a read took 11 s of CPU instead of 18, a delta-spark program 48 instead of
# 62. A JVM that cannot use the archive, or starts before it is there, goes without it (its logging off:
# the launcher's small JVM never can use it). The settings are inherited by every child process; a JVM
# prints "Picked up JAVA_TOOL_OPTIONS" on stderr once.
_CDS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".tools", "spark-cds.jsa")
_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", f"-XX:SharedArchiveFile={_CDS}", "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off"]
_GIVEN = os.environ.get("JAVA_TOOL_OPTIONS", "")
_JVM = [o for o in _JVM if o.split("=")[0] not in _GIVEN and not ("GC" in o and "GC" in _GIVEN)]
if _JVM:
    os.environ["JAVA_TOOL_OPTIONS"] = " ".join([_GIVEN, *_JVM]).strip()


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


# ------------------------------------------------------------------------------- object-store emulators


@pytest.fixture(scope="session")
def moto_server() -> Iterator[Any]:
    """moto's S3 (and DynamoDB) server on 127.0.0.1 for the whole session."""
    pytest.importorskip("moto.server", reason="moto's server (moto[s3,dynamodb], flask, flask-cors) is not "
                        "installed (pip install 'deltalog[test]')")
    import emulators

    emulator = emulators.start_moto()
    yield emulator
    emulator.stop()


@pytest.fixture(scope="session")
def azurite() -> Iterator[Any]:
    """azurite's blob service on 127.0.0.1 for the whole session."""
    import emulators

    if emulators.azurite_binary() is None:
        pytest.skip("azurite-blob is not installed (make test installs it with npm under .tools/)")
    emulator = emulators.start_azurite()
    yield emulator
    emulator.stop()


@pytest.fixture
def s3_table(moto_server: Any) -> tuple[str, dict[str, str]]:
    """A fresh bucket on the S3 emulator: (table URI, storage options)."""
    import emulators

    bucket = emulators.new_bucket(moto_server)
    return f"s3://{bucket}/tables/t", dict(moto_server.options)


@pytest.fixture
def azure_table(azurite: Any) -> tuple[str, dict[str, str]]:
    """A fresh container on azurite: (table URI, storage options)."""
    import emulators

    container = emulators.new_container(azurite)
    return f"az://{container}/tables/t", dict(azurite.options)


@pytest.fixture(scope="session")
def ignoring_proxy(moto_server: Any) -> Iterator[Any]:
    """An S3 endpoint (moto behind a proxy) that ignores ``If-None-Match``."""
    import emulators

    proxy = emulators.IgnoringProxy(moto_server.endpoint)
    yield proxy
    proxy.stop()
