"""Every table of ../shared/conformance must read exactly as EXPECTED.json says, or be refused with
the named unsupported-feature error. No table is skipped: a missing corpus fails loudly on CI."""

from __future__ import annotations

import os

import pytest
from checks import CORPUS, check_table, load_expected

EXPECTED = load_expected()


def test_corpus_present() -> None:
    # CI (make test sets DELTALOG_STRICT) always has ../shared beside the clone: a missing corpus fails.
    strict = os.environ.get("CI") or os.environ.get("DELTALOG_STRICT", "").strip().lower() in ("1", "true", "yes")
    if not EXPECTED:
        assert not strict, f"conformance corpus missing at {CORPUS}"
        pytest.skip(f"conformance corpus missing at {CORPUS}: no table can be checked")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_table(name: str) -> None:
    outcome = check_table(name, EXPECTED[name])
    assert outcome.status in ("passed", "refused")
    if outcome.status == "passed":
        assert outcome.checked, f"{name}: no fact was checked"
