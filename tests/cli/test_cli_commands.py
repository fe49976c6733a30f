"""The ``deltalog`` command: every subcommand's output, JSON documents, exit codes and errors."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import deltalog
from conftest import HOUR, T0, Run
from deltalog.cli import EXIT_DELTA_ERROR, EXIT_OK, EXIT_USAGE

CLI = Callable[..., Run]


def test_describe_json(cli: CLI, table: Path) -> None:
    r = cli("describe", str(table), "--json")
    assert r.code == EXIT_OK, r.err
    doc = r.json()
    assert doc["version"] == 2
    assert doc["num_files"] == 3
    assert doc["partition_columns"] == ["part"]
    assert doc["protocol"]["min_reader_version"] >= 1
    assert [f["name"] for f in doc["schema"]["fields"]] == ["id", "part"]
    assert doc["size_bytes"] == sum(f.stat().st_size for f in table.rglob("*.parquet"))
    assert doc["last_commit"]["operation"] == "WRITE"


def test_describe_rich_output_and_time_travel(cli: CLI, table: Path) -> None:
    r = cli("describe", str(table), "--version", "0")
    assert r.code == EXIT_OK, r.err
    assert "partitioned by" in r.out and "part" in r.out
    assert "1 live files" in r.out
    assert "schema" in r.out and "id: long" in r.out


def test_json_flag_before_the_command(cli: CLI, table: Path) -> None:
    r = cli("--json", "describe", str(table))
    assert r.code == EXIT_OK
    assert r.json()["version"] == 2


def test_history(cli: CLI, table: Path) -> None:
    r = cli("history", str(table), "--json", "--limit", "2")
    assert r.code == EXIT_OK
    assert [e["version"] for e in r.json()] == [2, 1]
    assert all(e["operation"] == "WRITE" for e in r.json())
    text = cli("history", str(table))
    assert text.code == EXIT_OK and "WRITE" in text.out and "mode=Append" in text.out


def test_files(cli: CLI, table: Path) -> None:
    r = cli("files", str(table), "--json")
    assert r.code == EXIT_OK
    rows = r.json()
    assert len(rows) == 3
    assert {row["partition_values"]["part"] for row in rows} == {"p0", "p1"}
    assert all(row["num_records"] == 3 for row in rows)
    assert all((table / row["path"]).stat().st_size == row["size"] for row in rows)
    old = cli("files", str(table), "--json", "--version", "1").json()
    assert len(old) == 2
    limited = cli("files", str(table), "--json", "--limit", "1").json()
    assert len(limited) == 1
    text = cli("files", str(table))
    assert "3 files" in text.out and "records" in text.out


def test_files_by_timestamp(cli: CLI, table: Path) -> None:
    stamp = str(T0 + HOUR + 1)  # epoch milliseconds, just after version 1
    assert len(cli("files", str(table), "--json", "--timestamp", stamp).json()) == 2
    iso = "2023-11-14T22:13:20.001Z"  # T0 + 1 ms
    assert len(cli("files", str(table), "--json", "--timestamp", iso).json()) == 1


def test_version_at(cli: CLI, table: Path) -> None:
    r = cli("version-at", str(table), str(T0 + 2 * HOUR - 1), "--json")
    assert r.code == EXIT_OK
    assert r.json()["version"] == 1
    assert cli("version-at", str(table), str(T0 + 2 * HOUR)).out.strip() == "2"
    late = cli("version-at", str(table), str(T0 + 5 * HOUR))
    assert late.code == EXIT_DELTA_ERROR and late.err.startswith("deltalog: ")


def test_checkpoint(cli: CLI, table: Path) -> None:
    r = cli("checkpoint", str(table), "--json")
    assert r.code == EXIT_OK, r.err
    doc = r.json()
    assert doc["version"] == 2 and doc["num_add_files"] == 3 and doc["written"]
    assert (table / "_delta_log" / "00000000000000000002.checkpoint.parquet").exists()
    again = cli("checkpoint", str(table))
    assert again.code == EXIT_OK and "already there" in again.out


def test_restore(cli: CLI, table: Path) -> None:
    r = cli("restore", str(table), "--version", "0", "--json")
    assert r.code == EXIT_OK, r.err
    doc = r.json()
    assert doc["version"] == 3 and doc["restored_version"] == 0 and doc["num_removed_files"] == 2
    assert deltalog.Table(table).snapshot().num_files() == 1
    assert deltalog.Table(table).history(limit=1)[0]["operation"] == "RESTORE"


def test_compute_stats(cli: CLI, table: Path) -> None:
    files = {r["path"] for r in deltalog.Table(table).snapshot().add_files().to_pylist()}
    r = cli("compute-stats", str(table), "--json")
    assert r.code == EXIT_OK, r.err
    assert r.json() == {"version": 3, "num_files": 3}
    assert {r["path"] for r in deltalog.Table(table).snapshot().add_files().to_pylist()} == files
    assert deltalog.Table(table).history(limit=1)[0]["operation"] == "COMPUTE STATS"
    shown = cli("compute-stats", str(table))
    assert shown.code == EXIT_OK and "files with new statistics" in shown.out


def test_properties(cli: CLI, table: Path) -> None:
    shown = cli("properties", str(table), "--json")
    assert shown.code == EXIT_OK, shown.err
    assert shown.json() == {"version": None, "properties": {}}
    r = cli("properties", str(table), "--set", "owner=etl", "--set", "delta.logRetentionDuration=interval 7 days",
            "--json")
    assert r.code == EXIT_OK, r.err
    assert r.json() == {"version": 3, "properties": {"delta.logRetentionDuration": "interval 7 days",
                                                     "owner": "etl"}}
    # enabling row tracking on a table with files gives them ids first
    tracked = cli("properties", str(table), "--set", "delta.enableRowTracking=true", "--json")
    assert tracked.code == EXIT_OK, tracked.err
    assert tracked.json()["version"] == 6 and tracked.json()["properties"]["delta.enableRowTracking"] == "true"
    ops = [h["operation"] for h in deltalog.Table(table).history(limit=3)]
    assert ops == ["SET TBLPROPERTIES", "ROW TRACKING BACKFILL", "UPGRADE PROTOCOL"]
    removed = cli("properties", str(table), "--unset", "owner")
    assert removed.code == EXIT_OK and "new version" in removed.out and "owner" not in removed.out
    assert cli("properties", str(table), "--unset", "owner").code == EXIT_DELTA_ERROR
    assert cli("properties", str(table), "--unset", "owner", "--if-exists").code == EXIT_OK
    bad = cli("properties", str(table), "--set", "delta.nonsense=1")
    assert bad.code == EXIT_DELTA_ERROR and "unknown table property 'delta.nonsense'" in bad.err
    for argv in (["--set", "novalue"], ["--set", "a=1", "--unset", "b"], ["--if-exists"]):
        assert cli("properties", str(table), *argv).code == EXIT_USAGE


def test_show(cli: CLI, table: Path) -> None:
    r = cli("show", str(table), "--where", "id >= 10 AND part = 'p1'", "--columns", "id", "--json")
    assert r.code == EXIT_OK, r.err
    assert sorted(row["id"] for row in r.json()) == [10, 11, 12]
    assert r.json()[0].keys() == {"id"}
    limited = cli("show", str(table), "--limit", "2", "--version", "0", "--json")
    assert len(limited.json()) == 2 and limited.json()[0].keys() == {"id", "part"}
    shown = cli("show", str(table), "--where", "id = 21")
    assert shown.code == EXIT_OK and "1 row" in shown.out and "21" in shown.out
    bad = cli("show", str(table), "--where", "nope = 1")
    assert bad.code == EXIT_DELTA_ERROR and "column 'nope' does not exist" in bad.err


def test_changes(cli: CLI, tmp_path: Path) -> None:
    import pyarrow as pa

    path = tmp_path / "cdf"
    deltalog.write_table(path, pa.table({"id": list(range(5))}), properties={"delta.enableChangeDataFeed": "true"})
    deltalog.Table(path).delete("id >= 3")
    r = cli("changes", str(path), "--from", "0", "--where", "_change_type = 'delete'", "--json")
    assert r.code == EXIT_OK, r.err
    assert sorted((row["id"], row["_commit_version"]) for row in r.json()) == [(3, 1), (4, 1)]
    shown = cli("changes", str(path), "--from", "0", "--limit", "2", "--columns", "id,_change_type")
    assert shown.code == EXIT_OK and "7 changes (first 2)" in shown.out and "_change_type" in shown.out
    assert cli("changes", str(path)).code == EXIT_USAGE  # no start
    late = cli("changes", str(path), "--from", "9")
    assert late.code == EXIT_DELTA_ERROR and "9" in late.err


def test_delete(cli: CLI, table: Path) -> None:
    dry = cli("delete", str(table), "--where", "id % 10 = 1", "--dry-run", "--json")
    assert dry.code == EXIT_OK, dry.err
    assert dry.json() == {"dry_run": True, "version": None, "num_deleted_rows": 3}
    assert deltalog.Table(table).latest_version() == 2  # nothing changed
    r = cli("delete", str(table), "--where", "id % 10 = 1")
    assert r.code == EXIT_OK and "rows deleted" in r.out
    assert sorted(deltalog.Table(table).snapshot().to_arrow().column("id").to_pylist()) == [0, 2, 10, 12, 20, 22]
    assert deltalog.Table(table).history(limit=1)[0]["operation"] == "DELETE"
    none = cli("delete", str(table), "--where", "id = 99")
    assert none.code == EXIT_OK and "nothing committed" in none.out
    assert cli("delete", str(table)).code == EXIT_USAGE  # neither --where nor --all
    assert cli("delete", str(table), "--where", "id = 0", "--all").code == EXIT_USAGE
    everything = cli("delete", str(table), "--all", "--json")
    assert everything.json()["num_deleted_rows"] == 6 and deltalog.Table(table).snapshot().num_files() == 0


def test_compact(cli: CLI, table: Path) -> None:
    r = cli("compact", str(table), "--where", "part = 'p0'", "--json")
    assert r.code == EXIT_OK, r.err
    assert r.json() == {"version": 3, "num_files_removed": 2, "num_files_added": 1, "num_deleted_rows_purged": 0}
    assert deltalog.Table(table).snapshot().num_files() == 2
    assert deltalog.Table(table).history(limit=1)[0]["operation"] == "OPTIMIZE"
    shown = cli("compact", str(table))
    assert shown.code == EXIT_OK and "nothing committed" in shown.out  # p1 has one file: nothing to pack
    z = cli("compact", str(table), "--zorder-by", "id", "--json")
    assert z.code == EXIT_OK, z.err
    assert z.json()["num_files_removed"] == 2  # every file of both partitions, rewritten in Z order
    assert deltalog.Table(table).history(limit=1)[0]["operationParameters"]["zOrderBy"] == '["id"]'


def test_restore_needs_exactly_one_target(cli: CLI, table: Path) -> None:
    r = cli("restore", str(table))
    assert r.code == EXIT_USAGE
    assert "--version" in r.err


def test_vacuum_is_a_dry_run_by_default(cli: CLI, table: Path) -> None:
    stray = table / "part=p0" / "stray.parquet"
    stray.write_bytes(b"x")
    old = (T0 - 1000 * HOUR) / 1000
    os.utime(stray, (old, old))
    r = cli("vacuum", str(table), "--json")
    assert r.code == EXIT_OK, r.err
    doc = r.json()
    assert doc["dry_run"] is True and doc["files_deleted"] == ["part=p0/stray.parquet"]
    assert stray.exists()
    text = cli("vacuum", str(table))
    assert "would delete 1 file " in text.out and "--execute" in text.err
    done = cli("vacuum", str(table), "--execute", "--json")
    assert done.code == EXIT_OK
    assert done.json()["num_deleted_files"] == 1 and not stray.exists()
    assert deltalog.Table(table).history(limit=1)[0]["operation"] == "VACUUM END"


def test_vacuum_lite_takes_the_files_from_the_log(cli: CLI, table: Path) -> None:
    stray = table / "part=p0" / "stray.parquet"  # never named by the log: only a full vacuum finds it
    stray.write_bytes(b"x")
    old = (T0 - 1000 * HOUR) / 1000
    os.utime(stray, (old, old))
    assert cli("restore", str(table), "--version", "0").code == EXIT_OK  # removes two files
    removed = set(deltalog.Table(table).snapshot(version=2).add_files().column("path").to_pylist())
    removed -= set(deltalog.Table(table).snapshot().add_files().column("path").to_pylist())
    args = ("vacuum", str(table), "--lite", "--retention-hours", "0", "--no-retention-check", "--json")
    r = cli(*args)
    assert r.code == EXIT_OK, r.err
    assert r.json()["dry_run"] is True and set(r.json()["files_deleted"]) == removed and len(removed) == 2
    done = cli(*args, "--execute")
    assert done.code == EXIT_OK and done.json()["num_deleted_files"] == 2
    assert stray.exists() and not any((table / p).exists() for p in removed)
    assert cli("vacuum", str(table), "--retention-hours", "0", "--no-retention-check", "--json").json()[
        "files_deleted"] == ["part=p0/stray.parquet"]


def test_vacuum_refuses_a_short_retention(cli: CLI, table: Path) -> None:
    r = cli("vacuum", str(table), "--retention-hours", "1")
    assert r.code == EXIT_DELTA_ERROR
    assert "delta.deletedFileRetentionDuration" in r.err
    assert cli("vacuum", str(table), "--retention-hours", "1", "--no-retention-check").code == EXIT_OK


def test_errors_are_one_line(cli: CLI, tmp_path: Path) -> None:
    r = cli("describe", str(tmp_path / "missing"))
    assert r.code == EXIT_DELTA_ERROR
    assert r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("deltalog: ") and "Traceback" not in r.err


def test_debug_shows_the_traceback(cli: CLI, tmp_path: Path) -> None:
    r = cli("describe", str(tmp_path / "missing"), "--debug")
    assert r.code == EXIT_DELTA_ERROR
    assert "Traceback" in r.err and "TableNotFoundError" in r.err


def test_json_errors_are_documents(cli: CLI, tmp_path: Path) -> None:
    r = cli("files", str(tmp_path / "missing"), "--json")
    assert r.code == EXIT_DELTA_ERROR
    doc = r.json()
    assert doc["type"] == "TableNotFoundError" and "no Delta table" in doc["error"]


@pytest.mark.parametrize(
    "argv",
    [
        ("describe",),
        ("nonsense", "x"),
        ("files", "x", "--version", "-1"),
        ("files", "x", "--version", "1", "--timestamp", "2024-01-01"),
        ("history", "x", "--limit", "many"),
        ("convert", "x", "--partition-type", "no-equals-sign"),
    ],
)
def test_usage_errors_exit_2(cli: CLI, argv: tuple[str, ...], tmp_path: Path) -> None:
    argv = tuple(str(tmp_path) if a == "x" else a for a in argv)
    r = cli(*argv)
    assert r.code == EXIT_USAGE, (r.out, r.err)


def test_help_documents_exit_codes(cli: CLI) -> None:
    r = cli("--help")
    assert r.code == EXIT_OK
    commands = ("describe", "history", "files", "version-at", "vacuum", "checkpoint", "restore", "check", "convert")
    for command in commands:
        assert command in r.out
    assert "3 check found problems" in r.out.replace("\n", " ")
    assert cli("check", "--help").code == EXIT_OK


def test_version_option(cli: CLI) -> None:
    r = cli("--version")
    assert r.code == EXIT_OK and deltalog.__version__ in r.out
    # the installed distribution takes its version from deltalog/version.py (pyproject's dynamic version)
    import importlib.metadata

    assert importlib.metadata.version("deltalog") == deltalog.__version__


def test_bad_timestamp_is_a_delta_error(cli: CLI, table: Path) -> None:
    r = cli("version-at", str(table), "not-a-time")
    assert r.code == EXIT_DELTA_ERROR and "not a timestamp" in r.err


def test_many_files_print_as_tab_separated_lines(cli: CLI, tmp_path: Path) -> None:
    import json

    log = tmp_path / "big" / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    lines = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {}}},
    ]
    lines += [{"add": {"path": f"f{i}.parquet", "partitionValues": {}, "size": i, "modificationTime": 0,
                       "dataChange": True, "stats": '{"numRecords":7}'}} for i in range(2500)]
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    r = cli("files", str(tmp_path / "big"))
    assert r.code == EXIT_OK
    rows = r.out.splitlines()
    assert rows[0] == "path\tsize\trecords" and len(rows) == 2501
    assert rows[1].split("\t") == ["f0.parquet", "0 B", "7"]
    assert "2,500 files" in r.err


def test_a_storage_failure_is_one_named_line_and_the_traceback_with_debug(
    cli: CLI, table: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from deltalog.storage import local

    class FullDisk(local.FileOps):
        def write_new(self, path: str, data: bytes) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(local, "OS_OPS", FullDisk())
    run = cli("checkpoint", str(table))
    assert run.code == 1
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "CHECKPOINT failed: the disk is full" in lines[0]
    assert "nothing was committed, the table is still at version 2" in lines[0]
    debug = cli("checkpoint", str(table), "--debug")
    assert "Traceback" in debug.err and "OSError: [Errno 28]" in debug.err
