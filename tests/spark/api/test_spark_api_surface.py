"""deltalog's delta-spark API has every public name and signature of delta-spark 4.4's Python API.

``delta_spark_api.json`` (beside this file) lists delta-spark 4.4.1's public names per module and the
parameters (name, kind, default) of each public function and method, as ``inspect`` reports them; it is
our own record, made once from the released wheel. The test compares it with what ``deltalog run``
serves as ``delta``, ``delta.tables``, ``delta.exceptions`` and ``delta.pip_utils``: a name missing, a
parameter renamed, reordered or given another default fails. deltalog may add parameters after
delta-spark's, each with a default (e.g. ``vacuum(..., *, dryRun=False)``). Not marked ``spark``: it needs
pyspark installed but no JVM.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

REFERENCE = json.loads((Path(__file__).parents[1] / "delta_spark_api.json").read_text())

#: delta-spark's implementation modules and helpers that its modules happen to bind; deliberately absent
#: (docs/porting.md lists them).
INTERNAL = {"delta.exceptions.base", "delta.exceptions.captured", "delta.exceptions.delta",
            "delta.exceptions.is_remote_only", "delta.tables.delta"}

#: delta-spark's ``hadoopConf: Dict[str, str] = {}``; deltalog's default is ``None`` (no shared mutable
#: default), which means the same: no extra settings.
EQUIVALENT_DEFAULTS = {("delta.tables.DeltaTable.forPath", "hadoopConf"): ("{}", "None")}


@pytest.fixture(scope="module")
def modules() -> dict[str, Any]:
    import sys

    from deltalog.spark.run import install_delta_aliases

    saved = {k: v for k, v in sys.modules.items() if k == "delta" or k.startswith("delta.")}
    install_delta_aliases()
    import delta
    import delta.exceptions
    import delta.pip_utils
    import delta.tables

    yield {"delta": delta, "delta.tables": delta.tables, "delta.exceptions": delta.exceptions,
           "delta.pip_utils": delta.pip_utils}
    for k in [k for k in sys.modules if k == "delta" or k.startswith("delta.")]:
        del sys.modules[k]
    sys.modules.update(saved)


def _params(fn: Any) -> list[list[Any]]:
    return [[p.name, str(p.kind), None if p.default is inspect.Parameter.empty else repr(p.default)]
            for p in inspect.signature(fn).parameters.values()]


def _lookup(modules: dict[str, Any], dotted: str) -> Any:
    module = next(m for m in sorted(modules, key=len, reverse=True) if dotted.startswith(m + "."))
    obj = modules[module]
    for part in dotted[len(module) + 1:].split("."):
        obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
    return obj


def test_every_public_name_exists(modules: dict[str, Any]) -> None:
    missing = [f"{mod}.{name}" for mod, names in REFERENCE["modules"].items() for name in names
               if f"{mod}.{name}" not in INTERNAL and not hasattr(modules[mod], name)]
    assert not missing, f"delta-spark names deltalog lacks: {missing}"
    # ``from delta.tables import *`` binds at least what it binds with delta-spark
    bound: dict[str, Any] = {}
    exec("from delta.tables import *", bound)
    lacking = [n for n in REFERENCE["modules"]["delta.tables"]
               if f"delta.tables.{n}" not in INTERNAL and n not in bound]
    assert not lacking, lacking


@pytest.mark.parametrize("member", sorted(REFERENCE["members"]))
def test_signature_matches_delta_spark(modules: dict[str, Any], member: str) -> None:
    spec = REFERENCE["members"][member]
    found = _lookup(modules, member)
    kind = "classmethod" if isinstance(found, classmethod) else "staticmethod" if isinstance(
        found, staticmethod) else "function" if spec["kind"] == "function" else "method"
    assert kind == spec["kind"], f"{member} is a {kind}, delta-spark's is a {spec['kind']}"
    ours = _params(found.__func__ if isinstance(found, (classmethod, staticmethod)) else found)
    theirs = spec["params"]
    assert len(ours) >= len(theirs), f"{member}: {ours} lacks parameters of {theirs}"
    for mine, ref in zip(ours, theirs):
        equivalent = EQUIVALENT_DEFAULTS.get((member, ref[0]))
        if equivalent is not None and (ref[2], mine[2]) == equivalent:
            mine = [mine[0], mine[1], ref[2]]
        assert mine == ref, f"{member}: parameter {mine} differs from delta-spark's {ref}"
    extra = ours[len(theirs):]
    assert all(p[2] is not None and p[1] in ("KEYWORD_ONLY", "POSITIONAL_OR_KEYWORD") for p in extra), (
        f"{member}: deltalog's extra parameters {extra} must have defaults")


def test_exceptions_are_pyspark_exceptions_with_delta_sparks_methods(modules: dict[str, Any]) -> None:
    from pyspark.errors import PySparkException

    import deltalog
    from deltalog.spark.common.errors import as_spark_error

    exceptions = modules["delta.exceptions"]
    for name in REFERENCE["modules"]["delta.exceptions"]:
        if f"delta.exceptions.{name}" in INTERNAL:
            continue
        cls = getattr(exceptions, name)
        assert issubclass(cls, PySparkException) and issubclass(cls, deltalog.ConcurrentModificationException)
        for method in ("getCondition", "getErrorClass", "getMessage", "getMessageParameters", "getQueryContext",
                       "getSqlState", "getBreakingChangeInfo"):
            assert callable(getattr(cls, method)), (name, method)
    raised = as_spark_error(deltalog.ConcurrentAppendException("files were added", table="/t", version=4))
    assert isinstance(raised, exceptions.ConcurrentAppendException)
    assert isinstance(raised, exceptions.DeltaConcurrentModificationException)
    assert raised.getCondition() == "DELTA_CONCURRENT_APPEND" and raised.getSqlState() == "2D521"
    assert raised.getBreakingChangeInfo() is None and raised.version == 4
    assert str(raised).startswith("[DELTA_CONCURRENT_APPEND] files were added")


def test_delta_version_and_package_names(modules: dict[str, Any]) -> None:
    import delta.version

    assert modules["delta"].__version__ == delta.version.__version__ == "4.4.1"
    assert modules["delta"].__all__ == ["DeltaTable", "configure_spark_with_delta_pip", "__version__"]
    assert modules["delta"].DeltaTable is modules["delta.tables"].DeltaTable
