"""Imports point down: the kernel's lower layers never import the ``Table`` facade that calls them
(commands take a :class:`~deltalog.txn.handle.TableHandle`), nor Spark."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "deltalog"


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (inside functions and ``TYPE_CHECKING`` blocks too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


@pytest.mark.parametrize("layer", ["commands", "txn"])
def test_lower_layers_do_not_import_the_table_facade(layer: str) -> None:
    modules = sorted((PACKAGE / layer).glob("*.py"))
    assert modules
    offenders = {m.name: sorted(i for i in _imports(m) if i == "deltalog.table" or i.startswith("deltalog.table."))
                 for m in modules}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_kernel_does_not_import_spark() -> None:
    kernel = [p for p in PACKAGE.rglob("*.py") if "spark" not in p.relative_to(PACKAGE).parts]
    offenders = {str(p.relative_to(PACKAGE)) for p in kernel if any(i.split(".")[0] == "pyspark" for i in _imports(p))}
    assert offenders == set()
