"""One SparkSession for every Spark test (local[2], UI off, lean JVM), or a clean skip without
pyspark or Java. Test modules do not import pyspark at module level, so they collect without it."""

from __future__ import annotations

import concurrent.futures as cf
import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import deltalog
from pools import spawn_pool

# PySpark 4.3 warns at import and on Arrow paths that it prefers pandas < 3; not ours to fix.
PANDAS_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"
# PySpark 3.5 compares versions with distutils' LooseVersion, which warns on every use; up to 4.1 it leaves the
# socket of every collect() to the garbage collector (pyspark/sql/classic/dataframe.py in 4.0.5 and 4.1.4; closed
# since 4.2); not ours to fix either.
LEGACY_WARNINGS = {(4, 0): ("ignore:distutils Version classes are deprecated:DeprecationWarning",),
                   (4, 2): ("ignore:unclosed <socket.socket:ResourceWarning",)}


def _missing() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'deltalog[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and Path(java_home, "bin", "java").exists()):
        return "no Java runtime (java on PATH or JAVA_HOME) for Spark"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    reason = _missing()
    legacy: tuple[str, ...] = ()
    if reason is None:
        from deltalog.spark.common.compat import PYSPARK

        legacy = tuple(w for below, found in LEGACY_WARNINGS.items() if below > PYSPARK for w in found)
    for item in items:
        if here not in Path(str(item.fspath)).parents:
            continue
        item.add_marker(pytest.mark.filterwarnings(PANDAS_WARNING))
        for ignored in legacy:
            item.add_marker(pytest.mark.filterwarnings(ignored))
        if reason is not None and item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


# Whole-stage code generation compiles Java for every distinct query; the tests run hundreds of small
# distinct queries over a few rows each, where that compiling costs more than it saves (test_spark_dml.py
# alone: 175 s and 211 s of CPU with it, 143 s and 179 s without). Results do not depend on it; the programs,
# demos, benchmarks, cluster and Connect tests (own_jvm) keep Spark's default and exercise it.
TEST_CONF = {"spark.sql.codegen.wholeStage": "false"}


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    src = str(Path(deltalog.__file__).resolve().parent.parent)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # Python workers must import this deltalog (the JVM passes the environment on to them).
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *[p for p in paths if os.path.abspath(p) != src]])
    from deltalog.spark import local_session

    warehouse = tmp_path_factory.mktemp("warehouse")  # managed catalog tables (never the working directory)
    session = local_session("deltalog-spark-tests", conf={"spark.sql.session.timeZone": "UTC", **TEST_CONF,
                                                          "spark.sql.warehouse.dir": str(warehouse)})
    yield session
    session.stop()


class Lane:
    """What a ``feature`` test of ``test_spark_everyday.py`` found on the running PySpark: it works, or the
    version refuses it (the test checked the refusal's message)."""

    def __init__(self) -> None:
        self.outcome = "unfinished"

    def works(self, note: str = "") -> None:
        self.outcome = f"works ({note})" if note else "works"

    def refused(self, why: str) -> None:
        self.outcome = f"refused ({why})"


@pytest.fixture
def lane(request: pytest.FixtureRequest) -> Lane:
    """The outcome of a ``feature`` test; with ``DELTALOG_LANE_REPORTS=<dir>`` the session writes every
    feature's outcome to ``<dir>/<pyspark version>.json`` (scripts/spark_lanes.py builds the README table)."""
    found = Lane()
    request.node.stash[_LANE] = found
    return found


_LANE = pytest.StashKey[Lane]()
_OUTCOMES: dict[str, str] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    mark = item.get_closest_marker("feature")
    if mark is not None and (report.when == "call" or report.failed):
        found = item.stash.get(_LANE, None)
        outcome = found.outcome if found is not None and report.passed else "fails"
        if _OUTCOMES.get(mark.args[0]) != "fails":
            _OUTCOMES[mark.args[0]] = outcome
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    where = os.environ.get("DELTALOG_LANE_REPORTS")
    if not where or not _OUTCOMES or importlib.util.find_spec("pyspark") is None:
        return
    import json

    import pyspark

    Path(where).mkdir(parents=True, exist_ok=True)
    Path(where, f"{pyspark.__version__}.json").write_text(json.dumps(_OUTCOMES, indent=1, sort_keys=True) + "\n")


@pytest.fixture(scope="session")
def rs() -> Iterator[cf.ProcessPoolExecutor]:
    """One delta-rs worker process for the Spark tests that check what delta-rs reads (``spawn``: its
    runtime does not survive a fork)."""
    pytest.importorskip("deltalake")
    with spawn_pool() as pool:
        yield pool
