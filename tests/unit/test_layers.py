"""Imports point down: each module imports only from its own layer or lower ones (``LAYERS``, the README's
layout), so the kernel's lower layers never import the ``Table`` facade that calls them (commands and the
change feed take a :class:`~deltalog.txn.handle.TableHandle`), nor Spark, and no two kernel modules import
each other, directly or through others (counting imports inside functions and in ``TYPE_CHECKING`` blocks)."""

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


@pytest.mark.parametrize("layer", ["commands", "txn", "feed", "log"])
def test_lower_layers_do_not_import_the_table_facade(layer: str) -> None:
    modules = sorted((PACKAGE / layer).glob("*.py"))
    assert modules
    offenders = {m.name: _facade(_imports(m)) for m in modules}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_kernel_does_not_import_spark() -> None:
    kernel = [p for p in PACKAGE.rglob("*.py") if "spark" not in p.relative_to(PACKAGE).parts]
    offenders = {str(p.relative_to(PACKAGE)) for p in kernel if any(i.split(".")[0] == "pyspark" for i in _imports(p))}
    assert offenders == set()


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def _graph(*, runtime: bool) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (the package faces ``deltalog`` and ``deltalog.spark``
    re-export everything and are no layer: left out)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {
        name: {i for i in _imports(path, runtime=runtime)
               if i in modules and i not in (name, "deltalog", "deltalog.spark")}
        for name, path in modules.items()
    }


def test_modules_form_no_import_circles() -> None:
    """No two modules of the package import each other at run time, directly or through others."""
    assert _cycles(_graph(runtime=True)) == []


def test_not_even_type_annotations_tie_modules_in_a_circle() -> None:
    """Counting the imports in ``TYPE_CHECKING`` blocks too: a class split over modules is typed against a
    protocol below them (the commit step against :class:`deltalog.txn.staged.StagedTransaction`), or its parts
    are a base class and a subclass (MERGE's run and its one-job path), never against each other."""
    assert _cycles(_graph(runtime=False)) == []


#: The layers, lowest first: a module may import (at run time) only from its own layer or the ones below.
#: ``data`` is the kernel's data-file engine in Arrow (pruning, deletion vectors, reading and writing files);
#: ``health`` reads a snapshot's health from its log (above the snapshot, below the commands that may act on it);
#: ``uniform`` writes a snapshot's Iceberg metadata (the committer runs it after each commit, VACUUM asks it
#: which files Iceberg snapshots still read);
#: ``maintenance`` plans from a table's health and runs the commands that act on it;
#: ``arrow`` is the Arrow front end (``write_table``), beside Spark's and the CLI. Typing-only imports (in
#: ``TYPE_CHECKING`` blocks) may name a higher layer's class: the log's writers are typed against the snapshot
#: they write, without depending on it.
LAYERS: list[set[str]] = [
    {"errors", "version"},
    {"protocol", "storage"},
    {"log"},
    {"data"},
    {"snapshot", "snapshot_load"},
    {"health"},
    {"uniform"},
    {"txn"},
    {"commands"},
    {"feed"},
    {"maintenance"},
    {"table"},
    {"arrow", "spark", "cli"},
]


def _level(module: str, floors: list[set[str]], package: str = "deltalog") -> int:
    """``module``'s floor among ``floors`` (units directly inside ``package``); the package's face (``package``
    itself, and names imported from it) is above them all."""
    inside = module.split(".")[len(package.split(".")):] if module.startswith(package + ".") else []
    return next((i for i, units in enumerate(floors) if inside and inside[0] in units), len(floors))


def _layer(module: str) -> int:
    """``module``'s layer in the kernel (:data:`LAYERS`)."""
    return _level(module, LAYERS)


def test_every_package_and_module_is_in_a_layer() -> None:
    units = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in PACKAGE.iterdir()
             if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert units - {"__init__"} == set().union(*LAYERS)


def _upward_imports(modules: dict[str, Path], floors: list[set[str]] = LAYERS, package: str = "deltalog") -> list[str]:
    """``module -> imported`` for every run-time import, by a module of ``package``, of a higher floor of
    ``package`` than the module's own."""
    out = []
    for name, path in sorted(modules.items()):
        if not name.startswith(package + "."):
            continue
        own = _level(name, floors, package)
        out += [f"{name} -> {imported}" for imported in sorted(_imports(path, runtime=True))
                if (imported + ".").startswith(package + ".") and _level(imported, floors, package) > own]
    return out


def test_imports_point_down_the_layers() -> None:
    assert _upward_imports({_module_name(p): p for p in PACKAGE.rglob("*.py")}) == []


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    up = tmp_path / "up.py"
    up.write_text("def f():\n    from deltalog.snapshot import Snapshot\n")
    typed = tmp_path / "typed.py"
    typed.write_text("from typing import TYPE_CHECKING\nfrom deltalog.log.paths import LOG_DIR\n"
                     "if TYPE_CHECKING:\n    from deltalog.table import Table\n")
    face = tmp_path / "face.py"
    face.write_text("import deltalog\n")
    modules = {"deltalog.log.up": up, "deltalog.log.typed": typed, "deltalog.spark.face": face}
    assert _upward_imports(modules) == [
        "deltalog.log.up -> deltalog.snapshot", "deltalog.log.up -> deltalog.snapshot.Snapshot",
        "deltalog.spark.face -> deltalog",
    ]
    assert _layer("deltalog.log.cleanup") < _layer("deltalog.snapshot") < _layer("deltalog.table")


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_another_modules_private_names() -> None:
    """A name another module uses is part of its module's interface, so it carries no underscore."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("deltalog"):
                offenders += [f"{path.relative_to(PACKAGE)}: {node.module}.{a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert offenders == []



#: The floors of the Spark engine (``deltalog.spark``), lowest first, the README's architecture: a module may
#: import (at run time) only from its own floor or the ones below. ``common`` holds what every part shares;
#: ``columns`` the generated / default / identity column rules; ``reads`` the scans; ``jobs`` the Spark jobs
#: that write data files; ``layout`` OPTIMIZE and auto compaction; ``writes`` the DataFrame write; ``catalog``
#: catalog tables; ``api`` delta-spark's ``DeltaTable``; ``sql`` the SQL front end; the session set-up and the
#: public faces (``tables``, ``exceptions``) on top, and the package face ``deltalog.spark`` above them all.
SPARK_FLOORS: list[set[str]] = [
    {"common"},
    {"columns"},
    {"reads"},
    {"jobs"},
    {"layout"},
    {"writes"},
    {"dml", "streaming"},
    {"catalog"},
    {"api"},
    {"sql"},
    {"session", "run", "tables", "exceptions"},
]
SPARK = PACKAGE / "spark"


def _floor(module: str) -> int:
    """``module``'s floor in ``deltalog.spark`` (:data:`SPARK_FLOORS`)."""
    return _level(module, SPARK_FLOORS, "deltalog.spark")


def test_every_spark_package_and_module_is_on_a_floor() -> None:
    units = {p.name.removesuffix(".py") for p in SPARK.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert units - {"__init__"} == set().union(*SPARK_FLOORS)


def _upward_spark_imports(modules: dict[str, Path]) -> list[str]:
    """``module -> imported`` for every run-time import of a higher Spark floor than the module's own."""
    return _upward_imports(modules, SPARK_FLOORS, "deltalog.spark")


def test_spark_imports_point_down_the_floors() -> None:
    assert _upward_spark_imports({_module_name(p): p for p in SPARK.rglob("*.py")}) == []


def test_the_floor_check_sees_an_upward_import(tmp_path: Path) -> None:
    up = tmp_path / "up.py"
    up.write_text("def f():\n    from deltalog.spark.sql.refs import TableRef\n")
    typed = tmp_path / "typed.py"
    typed.write_text("from typing import TYPE_CHECKING\nfrom deltalog.spark.common.core import open_table\n"
                     "if TYPE_CHECKING:\n    from deltalog.spark.api.table import DeltaTable\n")
    face = tmp_path / "face.py"
    face.write_text("from deltalog.spark import read\n")
    modules = {"deltalog.spark.reads.up": up, "deltalog.spark.reads.typed": typed, "deltalog.spark.session": face}
    assert _upward_spark_imports(modules) == [
        "deltalog.spark.reads.up -> deltalog.spark.sql.refs",
        "deltalog.spark.reads.up -> deltalog.spark.sql.refs.TableRef",
        "deltalog.spark.session -> deltalog.spark",
        "deltalog.spark.session -> deltalog.spark.read",
    ]
    assert _floor("deltalog.spark.common.core") < _floor("deltalog.spark.reads.scan") < _floor("deltalog.spark.sql")


def test_every_spark_package_says_what_it_owns_and_what_it_may_import() -> None:
    silent = [p.parent.name for p in sorted(SPARK.glob("*/__init__.py"))
              if "May import" not in (ast.get_docstring(ast.parse(p.read_text())) or "")]
    assert silent == []
