"""After a commit, the writer's table holds the committed snapshot built from what the writer already
read -- its read snapshot, the winning commits it caught up with, its own commit's bytes -- without
listing or reading the log again. It must be exactly the snapshot a fresh reader loads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.compute as pc

import deltalog
from deltalog.table import Table
from deltalog.txn import committer
from deltalog.txn.committer import committed_snapshot
from deltalog.txn.transaction import Transaction


def _race(path: str, first: Callable[[Table], Any], second: Callable[[Table], Any]) -> tuple[Table, Any]:
    """``second`` runs on its own table; ``first`` runs and commits inside ``second``'s commit call, so
    ``second`` loses the race and catches up. Returns ``second``'s table and result; the fallback that
    reads the log (``advance_snapshot``) must not run."""
    table = deltalog.Table(path)
    table.snapshot()
    commit = Transaction.commit
    fired: list[bool] = []

    def racing(self: Transaction, *args: Any, **kwargs: Any) -> Any:
        if not fired:
            fired.append(True)
            first(deltalog.Table(path))
        return commit(self, *args, **kwargs)

    built: list[Any] = []

    def recorded(*args: Any) -> Any:
        built.append(committed_snapshot(*args))
        return built[-1]

    with mock.patch.object(Transaction, "commit", racing), mock.patch.object(committer, "advance_snapshot") as update, \
            mock.patch.object(committer, "committed_snapshot", recorded):
        result = second(table)
    assert fired and not update.called, "the log was read again after the commit"
    assert built and table.snapshot() is built[-1], "the table does not hold the snapshot built in memory"
    return table, result


def _same(mine: Any, fresh: Any) -> None:
    assert mine.version == fresh.version
    assert mine.protocol == fresh.protocol and mine.metadata == fresh.metadata
    assert mine.commit_info == fresh.commit_info
    assert dict(mine.app_transactions) == dict(fresh.app_transactions)
    assert dict(mine.domains) == dict(fresh.domains)
    for files in ("add_files", "tombstones"):
        a, b = getattr(mine, files)(), getattr(fresh, files)()
        assert a.schema == b.schema, files
        assert a.sort_by("path").to_pylist() == b.sort_by("path").to_pylist(), files
    assert [(c.version, c.modification_time) for c in mine.segment.commits] == \
        [(c.version, c.modification_time) for c in fresh.segment.commits]
    assert mine.to_arrow().sort_by("id").equals(fresh.to_arrow().sort_by("id"))


def _rows(ids: range, day: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": pa.array([0] * len(ids), pa.int64()),
                     "day": [day] * len(ids)})


def _table(tmp_path: Path) -> str:
    """Two files of 100 rows in partition ``2021-09-08`` (a value Arrow would read as a date), DVs on."""
    path = str(tmp_path / "t")
    deltalog.write_table(path, _rows(range(0, 100), "2021-09-08"), partition_by=["day"],
                         properties={"delta.enableDeletionVectors": "true"})
    deltalog.write_table(path, _rows(range(100, 200), "2021-09-08"), mode="append")
    return path


def test_a_delete_that_lost_to_appends(tmp_path: Path) -> None:
    path = _table(tmp_path)

    def appends(t: Table) -> None:
        for day in ("2021-09-09", "2021-09-10"):
            deltalog.write_table(t.location, _rows(range(300, 310), day), mode="append")

    table, result = _race(path, appends, lambda t: t.delete([("id", "=", 5)]))
    assert result.version == 4
    mine, fresh = table.snapshot(), deltalog.Table(path).snapshot()
    days = {dict(pv)["day"] for pv in mine.add_files().column("partitionValues").to_pylist()}
    assert sorted(days) == ["2021-09-08", "2021-09-09", "2021-09-10"]  # the log's strings, not dates
    _same(mine, fresh)


def test_an_update_rebased_onto_deletion_vector_winners(tmp_path: Path) -> None:
    path = _table(tmp_path)

    def others(t: Table) -> None:
        t.delete([("id", "=", 3)])
        t.delete([("id", "=", 160)])
        t.update_rows([("id", "=", 170)], {"v": pc.field("v") + 5})

    table, result = _race(path, others, lambda t: t.update_rows([("id", "=", 150)], {"v": pc.field("v") + 1}))
    assert result.version == 5
    mine, fresh = table.snapshot(), deltalog.Table(path).snapshot()
    assert fresh.commit_info is not None and fresh.commit_info.operation == "UPDATE"
    _same(mine, fresh)
    assert mine.to_arrow().num_rows == 198
    assert all(c.modification_time > 0 for c in mine.segment.commits)
