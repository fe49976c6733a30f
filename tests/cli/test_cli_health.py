"""``deltalog health``: the rich report, the ``--json`` document, time travel and the exit code of thresholds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import deltalog
from conftest import HOUR, T0, Run
from deltalog.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE

CLI = Callable[..., Run]


def test_json_document(cli: CLI, table: Path) -> None:
    r = cli("health", str(table), "--json")
    assert r.code == EXIT_OK, r.err
    doc = r.json()
    files = deltalog.Table(table).snapshot().add_files().to_pylist()
    assert (doc["version"], doc["files"]["num_files"], doc["files"]["num_rows"]) == (2, 3, 9)
    assert doc["files"]["num_bytes"] == sum(f["size"] for f in files)
    assert doc["small_files"]["share"] == 1.0 and doc["small_files"]["threshold"] == 32 << 20
    assert doc["file_size_histogram"]["source"] == "crc"
    assert sum(doc["file_size_histogram"]["fileCounts"]) == 3 and len(doc["file_size_histogram"]["totalBytes"]) == 95
    assert doc["partitions"]["num_partitions"] == 2
    assert [(p["values"], p["num_files"]) for p in doc["partitions"]["list"]] == [({"part": "p0"}, 2),
                                                                                 ({"part": "p1"}, 1)]
    assert doc["log"]["commits_since_checkpoint"] == 3 and doc["log"]["checkpoint_version"] is None
    assert doc["deletion_vectors"]["read_amplification"] == 1.0 and doc["tombstones"]["num_tombstones"] == 0
    assert doc["ok"] is True and doc["thresholds"] == {} and doc["breaches"] == []


def test_thresholds_set_the_exit_code(cli: CLI, table: Path) -> None:
    r = cli("health", str(table), "--json", "--max-small-file-share", "0.5", "--max-commits-since-checkpoint", "5")
    assert r.code == EXIT_PROBLEMS
    doc = r.json()
    assert doc["ok"] is False and doc["breaches"] == [{"metric": "small_file_share", "value": 1.0, "limit": 0.5}]
    assert doc["thresholds"] == {"max_small_file_share": 0.5, "max_commits_since_checkpoint": 5}
    ok = cli("health", str(table), "--max-deleted-share", "0.1", "--max-commits-since-checkpoint", "3",
             "--max-reclaimable-bytes", "0", "--small-file-threshold", "1", "--max-small-file-share", "0")
    assert ok.code == EXIT_OK and "every threshold met" in ok.out
    assert cli("health", str(table), "--max-commits-since-checkpoint", "2").code == EXIT_PROBLEMS
    assert cli("health", str(table), "--max-small-file-share", "1.5").code == EXIT_USAGE


def test_rich_report(cli: CLI, table: Path) -> None:
    r = cli("health", str(table), "--max-small-file-share", "0.5")
    assert r.code == EXIT_PROBLEMS
    for needle in ("3 live files", "9 live rows", "small files", "file sizes (from the .crc file)", "0 B - 8.0 KiB",
                   "partitions, most small files first", "p0", "3 commits and no checkpoint", "last OPTIMIZE",
                   "✗ small_file_share is 1, above the limit 0.5"):
        assert needle in r.out, (needle, r.out)
    one = cli("health", str(table), "--partitions", "1")
    assert "1 of 2 shown" in one.out and "p1" not in one.out.split("partitions, most small files first")[1]


def test_time_travel(cli: CLI, table: Path) -> None:
    doc = cli("health", str(table), "--version", "1", "--json").json()
    assert (doc["version"], doc["files"]["num_files"], doc["log"]["commits_since_checkpoint"]) == (1, 2, 2)
    doc = cli("health", str(table), "--timestamp", str(T0 + HOUR // 2), "--json").json()
    assert doc["version"] == 0 and doc["files"]["num_files"] == 1
    assert cli("health", str(table), "--version", "1", "--timestamp", str(T0)).code == EXIT_USAGE


def test_help_names_the_thresholds(cli: CLI) -> None:
    r = cli("health", "--help")
    assert r.code == EXIT_OK
    for option in ("--max-small-file-share", "--max-deleted-share", "--max-commits-since-checkpoint",
                   "--max-reclaimable-bytes", "--small-file-threshold", "--json", "--version"):
        assert option in r.out
    assert "health" in cli("--help").out
