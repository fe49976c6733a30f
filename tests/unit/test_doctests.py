"""Every docstring example of the kernel runs (the Spark package's need a session and are marked
``+SKIP``): a user-facing function's example is part of its documentation, so it must stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import deltalog

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(deltalog.__path__, "deltalog.")
    if not m.name.startswith("deltalog.spark") and not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see the output above)"


def test_the_kernel_has_examples() -> None:
    finder = doctest.DocTestFinder()
    examples = sum(len(t.examples) for n in MODULES for t in finder.find(importlib.import_module(n)))
    assert len(MODULES) > 40 and examples > 300
