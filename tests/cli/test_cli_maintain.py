"""``deltalog maintain``: the plan with --dry-run (text and --json), --check's exit code, a run, --only / --skip,
policy options, and a failing step's exit code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

import deltalog
from conftest import Run
from deltalog.cli import EXIT_DELTA_ERROR, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, MAINTENANCE_STEPS
from deltalog.maintenance import ACTIONS

CLI = Callable[..., Run]


def _small_files(path: Path, n: int = 6) -> Path:
    for i in range(n):
        deltalog.write_table(path, pa.table({"id": [i], "part": ["a"]}), mode="append", partition_by=["part"])
    return path


def test_dry_run_prints_the_plan(cli: CLI, tmp_path: Path) -> None:
    path = _small_files(tmp_path / "t")
    r = cli("maintain", str(path), "--dry-run")
    assert r.code == EXIT_OK, r.err
    assert "compact" in r.out and "6 files" in r.out and "Plan for" in r.out
    doc = cli("maintain", str(path), "--dry-run", "--json").json()
    assert doc["dryRun"] is True and doc["version"] == 5
    assert [(s["action"], s["numFiles"], s["status"], s["partitions"]) for s in doc["steps"]] == [
        ("compact", 6, "planned", [{"part": "a"}])]
    assert doc["bytesRewritten"] == sum(f["size"] for f in deltalog.Table(path).snapshot().add_files().to_pylist())
    assert cli("maintain", str(path), "--dry-run", "--check").code == EXIT_PROBLEMS
    assert deltalog.Table(path).latest_version() == 5  # nothing written


def test_run_and_nothing_left(cli: CLI, tmp_path: Path) -> None:
    path = _small_files(tmp_path / "t")
    r = cli("maintain", str(path), "--json")
    assert r.code == EXIT_OK, r.err
    (step,) = r.json()["steps"]
    assert (step["action"], step["status"], step["version"], step["filesDone"]) == ("compact", "done", 6, 6)
    assert deltalog.Table(path).snapshot().add_files().num_rows == 1
    again = cli("maintain", str(path), "--dry-run", "--check")
    assert again.code == EXIT_OK and "nothing to do" in again.out


def test_only_skip_and_policy_options(cli: CLI, tmp_path: Path) -> None:
    path = _small_files(tmp_path / "t", 3)
    assert cli("maintain", str(path), "--dry-run", "--json").json()["steps"] == []  # 3 < 4 small files
    doc = cli("maintain", str(path), "--dry-run", "--json", "--min-small-files", "2").json()
    assert [s["action"] for s in doc["steps"]] == ["compact"]
    assert cli("maintain", str(path), "--dry-run", "--json", "--min-small-files", "2", "--skip", "compact"
               ).json()["steps"] == []
    assert cli("maintain", str(path), "--dry-run", "--json", "--min-small-files", "2", "--only", "vacuum"
               ).json()["steps"] == []
    assert cli("maintain", str(path), "--only", "vacuum", "--skip", "vacuum").code == EXIT_USAGE
    assert cli("maintain", str(path), "--check").code == EXIT_USAGE
    assert cli("maintain", str(path), "--small-file-share", "2").code == EXIT_USAGE


def test_errors(cli: CLI, tmp_path: Path) -> None:
    r = cli("maintain", str(tmp_path / "missing"), "--dry-run")
    assert r.code == EXIT_DELTA_ERROR and "missing" in r.err
    path = tmp_path / "t"
    deltalog.write_table(path, pa.table({"id": [1]}), properties={"deltalog.maintenance.vacuum": "maybe"})
    r = cli("maintain", str(path))
    assert r.code == EXIT_DELTA_ERROR and "deltalog.maintenance.vacuum='maybe' is not true or false" in r.err


def test_steps_named_alike() -> None:
    assert MAINTENANCE_STEPS == ACTIONS
