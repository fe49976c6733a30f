"""Every command works on every table of ../shared/conformance that the kernel supports.

In-process through :func:`deltalog.cli.main` with ``--json`` for ``describe``, ``history``, ``files``
and ``check`` over the whole corpus; a few tables also through a subprocess (``python -m deltalog.cli``
and the installed ``deltalog`` console script). A table the kernel refuses must give exit code 1 and
a one-line error, never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import deltalog
from conftest import Run
from deltalog.cli import EXIT_DELTA_ERROR, EXIT_OK, EXIT_PROBLEMS

CLI = Callable[..., Run]
ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "conformance"
TABLES = sorted(json.loads((CORPUS / "EXPECTED.json").read_text())) if (CORPUS / "EXPECTED.json").exists() else []
SAMPLE = [
    "dat-5b772f7/reader_tests/generated/basic_partitioned/delta",
    "kernel-rs-data/with_checkpoint_no_last_checkpoint",
    "delta-spark/table-with-dv-small",
]


def test_corpus_present() -> None:
    assert TABLES or not os.environ.get("CI"), f"conformance corpus missing at {CORPUS}"


def _supported(path: Path) -> tuple[bool, int | None]:
    try:
        return True, deltalog.Table(path).snapshot().version
    except deltalog.DeltaError:
        return False, None


def _one_line_error(r: Run) -> None:
    assert r.err.startswith("deltalog: ") and r.err.count("\n") == 1, r.err
    assert json.loads(r.out)["error"]


@pytest.mark.parametrize("name", TABLES)
def test_commands_on_corpus_table(cli: CLI, name: str) -> None:
    path = CORPUS / name
    supported, version = _supported(path)
    for command in ("describe", "files"):
        r = cli(command, str(path), "--json")
        if supported:
            assert r.code == EXIT_OK, (command, r.err)
            doc = r.json()
            if command == "describe":
                assert doc["version"] == version
        else:
            assert r.code == EXIT_DELTA_ERROR, (command, r.out)
            _one_line_error(r)
    r = cli("history", str(path), "--json")
    if r.code == EXIT_OK:
        entries = r.json()
        assert [e["version"] for e in entries] == sorted((e["version"] for e in entries), reverse=True)
    else:
        assert not supported and r.code == EXIT_DELTA_ERROR
        _one_line_error(r)
    r = cli("check", str(path), "--json")
    if supported:
        assert r.code in (EXIT_OK, EXIT_PROBLEMS), r.err
        doc = r.json()
        assert doc["version"] == version and doc["ok"] == (r.code == EXIT_OK)
    else:
        assert r.code in (EXIT_DELTA_ERROR, EXIT_PROBLEMS), r.err
        if r.code == EXIT_DELTA_ERROR:
            _one_line_error(r)
        else:
            assert "snapshot-unreadable" in {p["code"] for p in r.json()["problems"]} or not r.json()["ok"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.mark.skipif(not TABLES, reason="conformance corpus missing")
@pytest.mark.parametrize(("name", "command"), list(zip(SAMPLE, ("describe", "files", "check"))))
def test_module_entry_point(name: str, command: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "deltalog.cli", command, str(CORPUS / name), "--json"],
        capture_output=True, text=True, env=_env(), check=False, timeout=120,
    )
    assert proc.returncode in (EXIT_OK, EXIT_PROBLEMS), proc.stderr
    json.loads(proc.stdout)


def test_module_entry_point_errors(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "deltalog.cli", "describe", str(tmp_path / "none")],
        capture_output=True, text=True, env=_env(), check=False, timeout=120,
    )
    assert proc.returncode == EXIT_DELTA_ERROR and proc.stdout == ""
    assert proc.stderr.startswith("deltalog: ") and proc.stderr.count("\n") == 1
    usage = subprocess.run(
        [sys.executable, "-m", "deltalog.cli", "describe"], capture_output=True, text=True, env=_env(), check=False
    )
    assert usage.returncode == 2 and "Missing argument" in usage.stderr


CONSOLE_SCRIPT = Path(sys.executable).parent / "deltalog"


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="deltalog is not installed here (pip install -e .)")
@pytest.mark.skipif(not TABLES, reason="conformance corpus missing")
def test_console_script() -> None:
    proc = subprocess.run(
        [str(CONSOLE_SCRIPT), "describe", str(CORPUS / SAMPLE[0]), "--json"],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    assert json.loads(proc.stdout)["partition_columns"] == ["letter"]
