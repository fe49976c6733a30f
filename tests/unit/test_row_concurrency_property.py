"""Row-level concurrency, checked as a property (issue "Row-level concurrency"): random tables (1-8 files,
with or without deletion vectors, some rows already deleted) and 2-4 random kernel DELETE / UPDATE
statements that all read the same snapshot and commit one after another. Whatever commits must equal
*some* serial order of the committed statements, row for row; two committed statements never changed a
common row (such a pair must abort); and every statement that could be rebased onto its winners was.

``DELTALOG_PROPERTY_EXAMPLES`` sets the number of examples (``make test-property`` runs thousands).
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deltalog
from deltalog.errors import ConcurrentModificationException
from deltalog.txn.transaction import Transaction

EXAMPLES = int(os.environ.get("DELTALOG_PROPERTY_EXAMPLES", "80"))
ROWS_PER_FILE = 12


@dataclass(frozen=True)
class Statement:
    """``DELETE`` (``bump is None``) or ``UPDATE SET v = v + bump`` of the rows with ``lo <= id < hi``
    and, when ``v_min`` is set, ``v >= v_min`` (a predicate an UPDATE can change the answer of)."""

    lo: int
    hi: int
    v_min: int | None
    bump: int | None

    def matches(self, row_id: int, v: int) -> bool:
        return self.lo <= row_id < self.hi and (self.v_min is None or v >= self.v_min)

    def apply(self, rows: dict[int, int]) -> dict[int, int]:
        """This statement run alone on ``rows`` (``{id: v}``)."""
        out = {}
        for row_id, v in rows.items():
            if not self.matches(row_id, v):
                out[row_id] = v
            elif self.bump is not None:
                out[row_id] = v + self.bump
        return out

    def run(self, table: deltalog.Table) -> int | None:
        # conditions (not a pyarrow expression): the transaction records them as its read predicate, so
        # files a concurrent statement added are checked against them by their stats
        predicate: list[tuple[str, str, Any]] = [("id", ">=", self.lo), ("id", "<", self.hi)]
        if self.v_min is not None:
            predicate.append(("v", ">=", self.v_min))
        if self.bump is None:
            return table.delete(predicate).version
        return table.update_rows(predicate, {"v": pc.field("v") + self.bump}).version


@st.composite
def statements(draw: Any, total: int) -> Statement:
    lo = draw(st.integers(0, total - 1))
    hi = draw(st.integers(lo + 1, min(total, lo + ROWS_PER_FILE * 2)))
    v_min = draw(st.one_of(st.none(), st.integers(0, 3 * total)))
    bump = draw(st.one_of(st.none(), st.integers(1, 2 * total)))
    return Statement(lo, hi, v_min, bump)


@st.composite
def scenarios(draw: Any) -> tuple[int, bool, list[int], list[Statement]]:
    files = draw(st.integers(1, 8))
    total = files * ROWS_PER_FILE
    dvs = draw(st.booleans())
    deleted_before = draw(st.lists(st.integers(0, total - 1), max_size=4, unique=True)) if dvs else []
    stmts = draw(st.lists(statements(total), min_size=2, max_size=4))
    return files, dvs, deleted_before, stmts


def _race(table_path: str, stmts: list[Statement]) -> list[Any]:
    """Run ``stmts`` so that each reads the table before any of them commits: statement ``i + 1`` starts
    inside statement ``i``'s first commit attempt, so they commit last-started first. Returns each
    statement's committed version (``None``: nothing matched) or the conflict it raised."""
    outcomes: list[Any] = [None] * len(stmts)
    started = [False] * len(stmts)
    stack: list[int] = []
    commit = Transaction.commit

    def start(i: int) -> None:
        if i == len(stmts) or started[i]:
            return
        started[i] = True
        stack.append(i)
        try:
            outcomes[i] = stmts[i].run(deltalog.Table(table_path))
        except ConcurrentModificationException as exc:
            outcomes[i] = exc
        finally:
            stack.pop()
        start(i + 1)  # nothing to commit: the next statement starts now

    def racing_commit(self: Transaction, *args: Any, **kwargs: Any) -> Any:
        if stack:
            start(stack[-1] + 1)
        return commit(self, *args, **kwargs)

    with mock.patch.object(Transaction, "commit", racing_commit):
        start(0)
    return outcomes


def _rows(path: str) -> dict[int, int]:
    data = deltalog.Table(path).snapshot().to_arrow(columns=["id", "v"])
    ids, vs = data.column("id").to_pylist(), data.column("v").to_pylist()
    assert len(set(ids)) == len(ids), "a row is duplicated"
    return dict(zip(ids, vs, strict=True))


def _serial_results(initial: dict[int, int], committed: list[Statement]) -> list[dict[int, int]]:
    results = []
    for order in itertools.permutations(committed):
        rows = initial
        for stmt in order:
            rows = stmt.apply(rows)
        results.append(rows)
    return results


def _check(files: int, dvs: bool, deleted_before: list[int], stmts: list[Statement],
           make_table: Callable[[str], None] | None = None) -> list[Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t")
        props = {"delta.enableDeletionVectors": "true" if dvs else "false"}
        for f in range(files):  # one file per write, rows in id order
            ids = list(range(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE))
            deltalog.write_table(path, pa.table({"id": pa.array(ids, pa.int64()),
                                                 "v": pa.array([2 * i for i in ids], pa.int64())}),
                                 mode="append", properties=props if f == 0 else None)
        table = deltalog.Table(path)
        for row_id in deleted_before:
            table.delete([("id", "=", row_id)])
        initial = _rows(path)
        outcomes = _race(path, stmts)
        final = _rows(path)
    committed = [s for s, o in zip(stmts, outcomes, strict=True) if not isinstance(o, Exception)]
    assert final in _serial_results(initial, committed), (
        f"no serial order of the committed statements gives the table's rows; outcomes {outcomes}")
    changed = [{i for i, v in initial.items() if s.matches(i, v)} for s in committed]
    for a, b in itertools.combinations(changed, 2):
        assert not (a & b), f"two committed statements changed rows {sorted(a & b)}; outcomes {outcomes}"
    return outcomes


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_concurrent_dml_is_serializable(scenario: tuple[int, bool, list[int], list[Statement]]) -> None:
    _check(*scenario)


def test_disjoint_statements_on_one_file_all_commit() -> None:
    """The property's good case, pinned: four statements on disjoint rows of one file with deletion
    vectors -- two DELETEs and two UPDATEs -- all commit (three rebased onto their winners)."""
    stmts = [Statement(0, 3, None, None), Statement(3, 6, None, 100), Statement(6, 9, None, None),
             Statement(9, 12, None, 7)]
    outcomes = _check(1, True, [11], stmts)
    assert outcomes == [5, 4, 3, 2]  # version 1 deleted row 11


def test_overlapping_statements_abort() -> None:
    """An UPDATE and a DELETE of one row: the one that commits second aborts, naming the winner."""
    outcomes = _check(2, True, [], [Statement(0, 5, None, None), Statement(4, 8, None, 1)])
    assert isinstance(outcomes[0], ConcurrentModificationException) and outcomes[1] == 2
    assert "version 2" in str(outcomes[0])
