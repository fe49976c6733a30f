"""``deltalog health PATH --html FILE``: the report is written beside the usual output, with the same exit
codes, and plots the history of the versions asked for."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import deltalog
from conftest import Run
from deltalog.cli import EXIT_DELTA_ERROR, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE

CLI = Callable[..., Run]


def _svgs(page: str) -> list[str]:
    return re.findall(r'<svg id="([^"]+)"', page)


def test_html_report_beside_the_rich_output(cli: CLI, table: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = cli("health", str(table), "--html", str(out))
    assert r.code == EXIT_OK, r.err
    assert "3 live files" in r.out and f"HTML report written to {out}" in r.err
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and f"Table health: {table}" in page
    assert _svgs(page) == ["chart-size-files", "chart-size-bytes", "chart-deleted-share", "chart-partitions",
                           "chart-history-bytes", "chart-history-files", "chart-commit-rate"]
    h = deltalog.Table(table).health()
    assert f'data-metric="num_files"><dt>files</dt><dd>{h.num_files}</dd>' in page
    assert page.count('<circle class="pt') == 2 * 3  # versions 0..2, in the size and the file charts
    assert not re.search(r"https?://|src=|<script|<link", page)


def test_html_report_with_json_and_thresholds(cli: CLI, table: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = cli("health", str(table), "--json", "--html", str(out), "--max-small-file-share", "0.5",
            "--html-versions", "2")
    assert r.code == EXIT_PROBLEMS and r.err == ""
    assert r.json()["breaches"] == [{"metric": "small_file_share", "value": 1.0, "limit": 0.5}]
    page = out.read_text(encoding="utf-8")
    assert '<li class="breach" data-metric="small_file_share">✗ small_file_share is 1, above the limit 0.5</li>' in page
    assert page.count('<circle class="pt') == 2 * 2 and "Versions 1 to 2" in page
    r = cli("health", str(table), "--html", str(out), "--html-versions", "0", "--version", "1")
    assert r.code == EXIT_OK and "chart-history-files" not in out.read_text() and "Version 1" in out.read_text()


def test_html_errors(cli: CLI, table: Path, tmp_path: Path) -> None:
    r = cli("health", str(table), "--html", str(tmp_path / "missing-dir" / "r.html"))
    assert r.code == EXIT_DELTA_ERROR and "missing-dir" in r.err
    assert cli("health", str(table), "--html", str(tmp_path)).code == EXIT_USAGE  # a directory
    assert cli("health", str(table), "--html-versions", "-1").code == EXIT_USAGE
    assert cli("health", str(tmp_path / "nothing"), "--html", str(tmp_path / "r.html")).code == EXIT_DELTA_ERROR
    assert not (tmp_path / "r.html").exists()
