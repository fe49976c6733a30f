"""The ``deltalog`` command on object-store tables: options with ``--option`` (before or after the
command) or from the environment; credentials never printed, not even with ``--debug``."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import deltalog
from deltalog.cli import main

pytestmark = pytest.mark.objectstore


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def flags(options: dict[str, str]) -> list[str]:
    return [f"--option={k}={v}" for k, v in options.items()]


def test_cli_commands_on_s3(s3_table: tuple[str, dict[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    uri, opts = s3_table
    for i in range(3):
        deltalog.write_table(uri, pa.table({"id": [i]}), mode="append", storage_options=opts)
    code, out, _ = run(capsys, "describe", uri, "--json", *flags(opts))
    assert code == 0 and json.loads(out)["version"] == 2
    code, out, _ = run(capsys, *flags(opts), "--json", "history", uri)  # options before the command
    assert code == 0 and [h["version"] for h in json.loads(out)] == [2, 1, 0]
    assert run(capsys, "checkpoint", uri, *flags(opts))[0] == 0
    code, out, _ = run(capsys, "check", uri, "--json", *flags(opts))
    assert code == 0 and json.loads(out)["ok"]
    code, out, _ = run(capsys, "vacuum", uri, "--json", *flags(opts))
    assert code == 0 and json.loads(out)["dry_run"]
    code, out, _ = run(capsys, "files", uri, "--json", *flags(opts))
    assert code == 0 and len(json.loads(out)) == 3


def test_cli_takes_credentials_from_the_environment(
    s3_table: tuple[str, dict[str, str]], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, opts = s3_table
    deltalog.write_table(uri, pa.table({"id": [1]}), storage_options=opts)
    for key, value in opts.items():
        monkeypatch.setenv(key, value)
    code, out, err = run(capsys, "describe", uri, "--json")
    assert code == 0, err
    assert json.loads(out)["version"] == 0


def test_cli_errors_never_show_credentials(
    azure_table: tuple[str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    uri, opts = azure_table
    deltalog.write_table(uri, pa.table({"id": [1]}), storage_options=opts)
    wrong = {**opts, "AZURE_STORAGE_ACCOUNT_KEY": "c2VjcmV0LXNlY3JldC1zZWNyZXQ="}
    code, out, err = run(capsys, "describe", uri, "--debug", *flags(wrong))
    assert code == 1
    assert "check the credentials" in err
    assert "c2VjcmV0LXNlY3JldC1zZWNyZXQ=" not in out + err
    code, _, err = run(capsys, "describe", uri, "-o", "NOT_AN_OPTION=x1y2z3")
    assert code == 1 and "not_an_option" in err.lower()
    code, _, err = run(capsys, "describe", uri, "-o", "missing-equals")
    assert code == 2
