"""Helpers for the ``deltalog`` command tests: run the CLI in-process and build small tables."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.cli import main

T0 = 1_700_000_000_000
HOUR = 3_600_000


@dataclass
class Run:
    """Exit code and captured output of one in-process ``deltalog`` invocation."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    def run(*argv: str) -> Run:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def make_table(root: Path, *, versions: int = 3) -> Path:
    """A partitioned table with ``versions`` appends (version i holds ids 10*i .. 10*i+2, part "p<i%2>"),
    commit times T0 + i hours."""
    for i in range(versions):
        data = pa.table({"id": pa.array([10 * i, 10 * i + 1, 10 * i + 2], pa.int64()), "part": [f"p{i % 2}"] * 3})
        deltalog.write_table(str(root), data, mode="append", partition_by=["part"], clock=lambda i=i: T0 + i * HOUR)
        seconds = (T0 + i * HOUR) / 1000
        os.utime(root / "_delta_log" / f"{i:020d}.json", (seconds, seconds))
    return root


@pytest.fixture
def table(tmp_path: Path) -> Path:
    return make_table(tmp_path / "t")
