"""Deterministic races for conflict tests: another writer commits between a transaction's read and its commit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import deltalog
from deltalog.txn.transaction import Transaction


def winner_commits_first(monkeypatch: pytest.MonkeyPatch, path: str, winner: Callable[[deltalog.Table], Any]) -> None:
    """The first commit attempt of the next transaction finds ``winner(Table(path))`` already committed."""
    commit = Transaction.commit
    raced: list[int] = []

    def other_first(self: Transaction, *args: object, **kwargs: object) -> object:
        if not raced:
            raced.append(1)
            winner(deltalog.Table(path))
        return commit(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Transaction, "commit", other_first)
