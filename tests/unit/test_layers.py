"""Imports point down: the kernel's lower layers never import the ``Table`` facade that calls them
(commands take a :class:`~deltalog.txn.handle.TableHandle`), nor Spark."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "deltalog"


def _imports(path: Path, *, runtime: bool = False) -> set[str]:
    """Every module ``path`` imports, at any depth (inside functions too, and in ``TYPE_CHECKING`` blocks
    unless ``runtime``)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if runtime and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return out


def _facade(imports: set[str]) -> list[str]:
    return sorted(i for i in imports if i == "deltalog.table" or i.startswith("deltalog.table."))


@pytest.mark.parametrize("layer", ["commands", "txn"])
def test_lower_layers_do_not_import_the_table_facade(layer: str) -> None:
    modules = sorted((PACKAGE / layer).glob("*.py"))
    assert modules
    offenders = {m.name: _facade(_imports(m)) for m in modules}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_log_layer_does_not_import_the_table_facade_at_run_time(tmp_path: Path) -> None:
    """``log/tail.py`` and ``log/changes.py`` still name ``Table`` in type annotations only."""
    modules = sorted((PACKAGE / "log").glob("*.py"))
    offenders = {m.name: _facade(_imports(m, runtime=True)) for m in modules}
    assert {k: v for k, v in offenders.items() if v} == {}
    sample = tmp_path / "sample.py"
    sample.write_text("if TYPE_CHECKING:\n    from deltalog.table import Table\n"
                      "def f():\n    from deltalog.table import Table\n")
    assert _facade(_imports(sample, runtime=True)) == _facade(_imports(sample)) == ["deltalog.table",
                                                                                     "deltalog.table.Table"]
    sample.write_text("if TYPE_CHECKING:\n    from deltalog.table import Table\n")
    assert _facade(_imports(sample, runtime=True)) == [] and _facade(_imports(sample)) != []


def test_the_kernel_does_not_import_spark() -> None:
    kernel = [p for p in PACKAGE.rglob("*.py") if "spark" not in p.relative_to(PACKAGE).parts]
    offenders = {str(p.relative_to(PACKAGE)) for p in kernel if any(i.split(".")[0] == "pyspark" for i in _imports(p))}
    assert offenders == set()
