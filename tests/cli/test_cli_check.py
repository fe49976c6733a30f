"""``deltalog check`` (fsck) and ``--repair``, and the :mod:`deltalog.commands.check` API behind them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

import deltalog
from conftest import Run
from deltalog.cli import EXIT_DELTA_ERROR, EXIT_OK, EXIT_PROBLEMS
from deltalog.commands.check import check_table, repair_table

CLI = Callable[..., Run]


def codes(report: dict[str, object]) -> list[str]:
    return [p["code"] for p in report["problems"]]  # type: ignore[attr-defined,index]


def a_data_file(table: Path) -> Path:
    return next(p for p in sorted(table.rglob("*.parquet")) if "_delta_log" not in p.parts)


def test_healthy_table(cli: CLI, table: Path) -> None:
    r = cli("check", str(table), "--json")
    assert r.code == EXIT_OK, r.out
    doc = r.json()
    assert doc["ok"] and doc["problems"] == []
    assert doc["checks"] == {"log": "ok", "checkpoint": "ok", "crc": "ok", "files": "ok"}
    assert doc["num_files_checked"] == 3 and doc["num_crc_verified"] == 1
    text = cli("check", str(table))
    assert text.code == EXIT_OK and "no problems found" in text.out


def test_deep_verifies_every_crc(cli: CLI, table: Path) -> None:
    doc = cli("check", str(table), "--deep", "--json").json()
    assert doc["num_crc_verified"] == 3


def test_missing_file_then_repair(cli: CLI, table: Path) -> None:
    victim = a_data_file(table)
    victim.unlink()
    r = cli("check", str(table), "--json")
    assert r.code == EXIT_PROBLEMS
    doc = r.json()
    assert codes(doc) == ["file-missing"] and doc["checks"]["files"] == "errors"
    assert doc["problems"][0]["repairable"] is True
    assert "--repair" in cli("check", str(table)).out
    fixed = cli("check", str(table), "--repair", "--json")
    assert fixed.code == EXIT_OK, fixed.out
    out = fixed.json()
    assert out["repair"]["num_removed"] == 1 and out["after_repair"]["ok"]
    snap = deltalog.Table(table).snapshot()
    assert snap.version == 3 and snap.num_files() == 2
    last = deltalog.Table(table).history(limit=1)[0]
    assert last["operation"] == "FSCK" and last["operationParameters"]["numRemovedFiles"] == "1"
    assert last["operationMetrics"]["numRemovedFiles"] == "1"
    assert last["operationMetrics"]["numDeletedRows"] == "3"
    assert cli("check", str(table)).code == EXIT_OK


def test_size_mismatch_is_not_repairable(cli: CLI, table: Path) -> None:
    victim = a_data_file(table)
    victim.write_bytes(victim.read_bytes() + b"junk")
    r = cli("check", str(table), "--repair", "--json")
    assert r.code == EXIT_PROBLEMS
    assert codes(r.json()) == ["file-size-mismatch"] and "repair" not in r.json()


def test_crc_mismatch(cli: CLI, table: Path) -> None:
    crc = table / "_delta_log" / "00000000000000000002.crc"
    obj = json.loads(crc.read_text())
    obj["numFiles"] = 99
    crc.write_text(json.dumps(obj))
    doc = cli("check", str(table), "--json").json()
    assert codes(doc) == ["crc-mismatch"]
    assert doc["problems"][0]["file"].endswith("00000000000000000002.crc")


def test_malformed_crc_is_a_warning(cli: CLI, table: Path) -> None:
    (table / "_delta_log" / "00000000000000000002.crc").write_text("{not json")
    r = cli("check", str(table), "--json")
    assert r.code == EXIT_OK
    assert codes(r.json()) == ["crc-malformed"] and r.json()["checks"]["crc"] == "warnings"


def test_log_gap(cli: CLI, table: Path) -> None:
    (table / "_delta_log" / "00000000000000000001.json").unlink()
    r = cli("check", str(table), "--json")
    assert r.code == EXIT_PROBLEMS
    assert {"log-gap", "snapshot-unreadable"} <= set(codes(r.json()))
    assert r.json()["checks"]["files"] == "skipped"


def test_last_checkpoint_consistency(cli: CLI, table: Path) -> None:
    deltalog.Table(table).checkpoint()
    hint = table / "_delta_log" / "_last_checkpoint"
    assert cli("check", str(table)).code == EXIT_OK
    obj = json.loads(hint.read_text())
    hint.write_text(json.dumps({**obj, "numOfAddFiles": 7}))
    assert "last-checkpoint-mismatch" in codes(cli("check", str(table), "--json").json())
    hint.write_text(json.dumps({**obj, "version": 1}))
    assert "last-checkpoint-dangling" in codes(cli("check", str(table), "--json").json())
    hint.write_text("garbage")
    assert "last-checkpoint-corrupt" in codes(cli("check", str(table), "--json").json())
    hint.unlink()
    r = cli("check", str(table), "--json")
    assert r.code == EXIT_OK and codes(r.json()) == ["last-checkpoint-missing"]


def test_stale_last_checkpoint_is_a_warning(cli: CLI, table: Path) -> None:
    t = deltalog.Table(table)
    t.checkpoint()
    hint = (table / "_delta_log" / "_last_checkpoint").read_text()
    deltalog.write_table(str(table), pa.table({"id": [99], "part": ["p9"]}), mode="append")
    t.checkpoint()
    (table / "_delta_log" / "_last_checkpoint").write_text(hint)
    r = cli("check", str(table), "--json")
    assert r.code == EXIT_OK and codes(r.json()) == ["last-checkpoint-stale"]


def test_incomplete_multipart_checkpoint_is_a_warning(cli: CLI, table: Path) -> None:
    name = "00000000000000000001.checkpoint.0000000001.0000000002.parquet"
    (table / "_delta_log" / name).write_bytes(b"")
    doc = cli("check", str(table), "--json").json()
    assert codes(doc) == ["checkpoint-incomplete"]


def test_no_table_is_a_delta_error(cli: CLI, tmp_path: Path) -> None:
    r = cli("check", str(tmp_path / "nothing"))
    assert r.code == EXIT_DELTA_ERROR


def test_api_report_and_dry_run_repair(table: Path) -> None:
    a_data_file(table).unlink()
    t = deltalog.Table(table)
    report = check_table(t)
    assert not report.ok and report.repairable and len(report.missing_files) == 1
    planned = repair_table(t, report=report, dry_run=True)
    assert planned.version is None and planned.removed == report.missing_files
    assert deltalog.Table(table).snapshot().version == 2
    done = repair_table(t)
    assert done.version == 3 and done.num_removed == 1
    assert repair_table(t).version is None  # nothing left to repair


def test_progress_is_reported(table: Path) -> None:
    seen: list[tuple[str, int, int | None]] = []
    check_table(deltalog.Table(table), progress=lambda phase, done, total: seen.append((phase, done, total)))
    assert ("files", 3, 3) in seen and any(phase == "log" for phase, _, _ in seen)
