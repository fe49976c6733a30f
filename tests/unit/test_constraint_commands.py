"""ADD CONSTRAINT / DROP CONSTRAINT: existing rows checked, commitInfo as delta-spark writes it,
protocol upgrades, concurrent appends conflict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.commands.constraints import add_constraint, drop_constraint
from deltalog.errors import ConcurrentAppendException, InvalidArgumentError, TableNotFoundError
from deltalog.protocol.actions import Protocol
from deltalog.storage import LocalLogStore
from deltalog.txn.constraints import ConstraintViolationError, UnsupportedExpressionError


def rows(ids: list[int | None], part: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "part": pa.array([part] * len(ids))})


def make(tmp_path: Path, *batches: pa.Table, **kwargs: Any) -> deltalog.Table:
    path = tmp_path / "t"
    for i, batch in enumerate(batches):
        deltalog.write_table(path, batch, mode="append", **(kwargs if i == 0 else {}))
    return deltalog.Table(path)


def commit_info(table: deltalog.Table, version: int) -> dict[str, Any]:
    text = table.store.read(f"_delta_log/{version:020d}.json").decode()
    first = json.loads(text.splitlines()[0])
    info: dict[str, Any] = first["commitInfo"]
    return info


def test_add_constraint_commits_and_is_enforced(tmp_path: Path) -> None:
    table = make(tmp_path, rows([1, 2]), rows([3]))
    assert table.snapshot().protocol == Protocol(1, 2)
    res = table.add_constraint("pos", "id > 0", clock=lambda: 1_700_000_000_000)
    assert (res.version, res.operation, res.timestamp) == (2, "ADD CONSTRAINT", 1_700_000_000_000)
    snap = table.snapshot()
    assert dict(snap.properties) == {"delta.constraints.pos": "id > 0"}
    assert snap.protocol == Protocol(1, 3)  # checkConstraints: writer version 3
    info = commit_info(table, 2)
    assert info["operationParameters"] == {"name": "pos", "expr": "id > 0"}
    assert info["readVersion"] == 1 and info["operationMetrics"] == {}
    assert snap.num_files() == 2  # no data change
    with pytest.raises(ConstraintViolationError, match=r"CHECK constraint pos \(id > 0\)"):
        deltalog.write_table(table.location, rows([-1]), mode="append")
    assert table.latest_version() == 2


def test_violating_rows_are_counted_across_files_and_nothing_is_committed(tmp_path: Path) -> None:
    table = make(tmp_path, rows([0, 5]), rows([-3, 7, None]), rows([9]), partition_by=["part"])
    with pytest.raises(ConstraintViolationError) as info:
        table.add_constraint("pos", "id > 0")
    message = str(info.value)
    # null is a violation too (delta-spark counts NOT expr OR expr IS NULL)
    assert f"3 rows in {table.location} violate the new CHECK constraint pos (id > 0)" in message
    assert info.value.table == table.location
    assert table.latest_version() == 2 and "delta.constraints.pos" not in table.snapshot().properties


def test_partition_columns_and_deletion_vectors(tmp_path: Path) -> None:
    table = make(
        tmp_path, rows([1, -1, 2], "a"), rows([3], "b"),
        partition_by=["part"], properties={"delta.enableDeletionVectors": "true"},
    )
    with pytest.raises(ConstraintViolationError, match="1 rows"):
        table.add_constraint("pos", "id > 0")
    assert table.delete([("id", "=", -1)]).used_deletion_vectors
    table.add_constraint("pos", "id > 0 AND part IN ('a', 'b')")  # the deleted row no longer counts
    snap = table.snapshot()
    assert snap.properties["delta.constraints.pos"] == "id > 0 AND part IN ('a', 'b')"
    assert "checkConstraints" in (snap.protocol.writerFeatures or ())  # a table-features protocol lists it
    with pytest.raises(ConstraintViolationError):
        deltalog.write_table(table.location, rows([4], "c"), mode="append")


def test_names_are_case_insensitive_and_unique(tmp_path: Path) -> None:
    table = make(tmp_path, rows([1]))
    table.add_constraint("Pos", "id > 0")
    assert "delta.constraints.pos" in table.snapshot().properties
    assert commit_info(table, 1)["operationParameters"]["name"] == "Pos"
    with pytest.raises(InvalidArgumentError, match="already exists") as info:
        table.add_constraint("POS", "id > -1")
    assert "id > 0" in str(info.value) and table.location in str(info.value)
    for bad in ("", "  ", "__CHAR_VARCHAR_STRING_LENGTH_CHECK__"):
        with pytest.raises(InvalidArgumentError, match="constraint name"):
            table.add_constraint(bad, "id > 0")
    assert table.latest_version() == 1


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        ("id RLIKE '1'", "cannot be evaluated"),
        ("missing > 0", "does not exist"),
        ("id + 1", "boolean"),
        ("", "empty"),
    ],
)
def test_expressions_are_validated_against_the_schema(tmp_path: Path, sql: str, match: str) -> None:
    for table in (make(tmp_path / "rows", rows([1])), make(tmp_path / "empty", rows([]))):
        with pytest.raises(UnsupportedExpressionError, match=match) as info:
            table.add_constraint("c", sql)
        assert "CHECK constraint c" in str(info.value) and table.location in str(info.value)
        assert table.latest_version() == 0


class HookedStore(LocalLogStore):
    """Runs ``hook`` once, just before the next commit file is written."""

    hook: Any = None

    def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
        hook, self.hook = self.hook, None
        if hook is not None and path.startswith("_delta_log/") and path.endswith(".json"):
            hook()
        super().write(path, data, overwrite=overwrite)


def test_concurrent_append_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "t"
    store = HookedStore(path)
    deltalog.write_table(str(path), rows([1]), store=store)
    table = deltalog.Table(str(path), store=store)
    # a blind append of a violating row lands after the existing rows were checked
    store.hook = lambda: deltalog.write_table(str(path), rows([-5]), mode="append", store=store)
    with pytest.raises(ConcurrentAppendException, match="the whole table"):
        table.add_constraint("pos", "id > 0")
    assert table.latest_version() == 1 and "delta.constraints.pos" not in table.snapshot().properties
    with pytest.raises(ConstraintViolationError, match="1 rows"):
        table.add_constraint("pos", "id > 0")  # the retry sees the new row


def test_drop_constraint(tmp_path: Path) -> None:
    table = make(tmp_path, rows([1]))
    table.add_constraint("pos", "id > 0")
    res = table.drop_constraint("POS", clock=lambda: 42)
    assert (res.version, res.operation, res.timestamp) == (2, "DROP CONSTRAINT", 42)
    assert dict(table.snapshot().properties) == {}
    assert table.snapshot().protocol == Protocol(1, 3)  # features stay
    assert commit_info(table, 2)["operationParameters"] == {"name": "POS", "expr": "id > 0", "existed": "true"}
    deltalog.write_table(table.location, rows([-1]), mode="append")  # no longer enforced
    with pytest.raises(InvalidArgumentError, match="does not exist") as info:
        table.drop_constraint("pos")
    assert table.location in str(info.value)
    assert "DROP CONSTRAINT IF EXISTS (if_exists=True)" in str(info.value)
    assert table.latest_version() == 3
    res = table.drop_constraint("pos", if_exists=True)
    assert res.version == 4
    assert commit_info(table, 4)["operationParameters"] == {"name": "pos", "existed": "false"}


def test_functions_need_an_existing_table(tmp_path: Path) -> None:
    table = deltalog.Table(tmp_path / "none")
    with pytest.raises(TableNotFoundError):
        add_constraint(table, "pos", "id > 0")
    with pytest.raises(TableNotFoundError):
        drop_constraint(table, "pos", if_exists=True)


def test_existing_rows_are_checked_from_the_named_columns_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """ADD CONSTRAINT reads only the columns its expression names (any case), SET NOT NULL only its column
    of the files whose statistics do not rule nulls out; an expression naming no column reads whole rows, so
    a constant false one still finds every row."""
    import deltalog.data.read as read_module

    wide = rows([1, None, 3]).append_column("blob", pa.array([b"x" * 100] * 3))
    table = make(tmp_path, wide, rows([4]).append_column("blob", pa.array([b"y"])))
    reads: list[list[str]] = []
    real = read_module.read_file

    def recording(snap: object, add: dict[str, object], needed: list[str], *args: object, **kw: object) -> pa.Table:
        reads.append(list(needed))
        return real(snap, add, needed, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(read_module, "read_file", recording)
    with pytest.raises(ConstraintViolationError, match=r"1 rows? in .* violate .*ID > 0"):
        table.add_constraint("pos", "ID > 0")  # the null id
    assert reads == [["id"], ["id"]]
    reads.clear()
    table.add_constraint("tag", "part = 'a'")
    assert reads == [["part"], ["part"]]
    reads.clear()
    with pytest.raises(ConstraintViolationError, match="4 rows"):
        table.add_constraint("never", "1 = 0")
    assert reads == [["id", "part", "blob"]] * 2
    reads.clear()
    with pytest.raises(Exception, match="null"):
        table.change_column("id", nullable=False)
    assert reads == [["id"]]  # the file whose statistics count a null id; the other counts none
    reads.clear()
    table.change_column("part", nullable=False)  # statistics count no null part: nothing is read
    assert reads == [] and table.snapshot().schema.field("part").nullable is False
