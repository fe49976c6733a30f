"""The kernel's Arrow reader: projection, filters (pruning, skipping, rows) and its errors."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import deltalog
from deltalog.data.filters import normalize_filter, prune_files
from deltalog.errors import InvalidArgumentError


@pytest.fixture
def table(tmp_path: Path) -> deltalog.Table:
    path = tmp_path / "t"
    for day in range(1, 4):
        data = pa.table({
            "id": pa.array(range(day * 100, day * 100 + 50), pa.int64()),
            "day": pa.array([dt.date(2024, 1, day)] * 50, pa.date32()),
            "name": pa.array([None if i % 10 == 0 else f"n{i}" for i in range(50)], pa.string()),
        })
        deltalog.write_table(path, data, mode="append", partition_by=["day"])
    return deltalog.Table(path)


def _ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def test_projection_keeps_order_and_types(table: deltalog.Table) -> None:
    got = table.snapshot().to_arrow(columns=["name", "id"])
    assert got.column_names == ["name", "id"]
    assert got.schema.field("id").type == pa.int64()
    assert got.num_rows == 150


def test_partition_filter_prunes_files(table: deltalog.Table) -> None:
    snap = table.snapshot()
    conds, _ = normalize_filter([("day", "=", "2024-01-02")], snap.schema, table="t")
    assert prune_files(snap, conds).num_rows == 1
    got = snap.to_arrow(filter=[("day", "=", dt.date(2024, 1, 2))])
    assert _ids(got) == list(range(200, 250))
    assert snap.to_arrow(filter=[("day", "in", ["2024-01-01", "2024-01-03"])]).num_rows == 100
    assert snap.to_arrow(filter=[("day", "not in", ["2024-01-01"])]).num_rows == 100


def test_stats_skip_files_and_rows_are_filtered(table: deltalog.Table) -> None:
    snap = table.snapshot()
    conds, _ = normalize_filter([("id", ">=", 340)], snap.schema, table="t")
    assert prune_files(snap, conds).num_rows == 1  # only the third file's max reaches 340
    got = snap.to_arrow(columns=["id"], filter=[("id", ">=", 340), ("id", "<", 345)])
    assert got.column_names == ["id"] and _ids(got) == [340, 341, 342, 343, 344]
    assert snap.to_arrow(filter=[("id", "=", 5)]).num_rows == 0


def test_null_semantics_and_expressions(table: deltalog.Table) -> None:
    snap = table.snapshot()
    assert snap.to_arrow(filter=[("name", "!=", "n1")]).num_rows == 150 - 15 - 3  # nulls never match
    got = snap.to_arrow(filter=pc.field("name").is_null())
    assert got.num_rows == 15


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"columns": ["nope"]}, "unknown column(s) ['nope']"),
        ({"filter": [("nope", "=", 1)]}, "filter column 'nope' is not in the table"),
        ({"filter": [("id", "~", 1)]}, "filter op '~' is not one of"),
        ({"filter": [("id", "=", "abc")]}, "cannot be compared with column 'id'"),
        ({"filter": [("id", "in", 3)]}, "'in' needs a list of values"),
        ({"filter": [("id", "=", None)]}, "compares with None"),
        ({"filter": 5}, "filter must be a SQL condition string, a list of (column, op, value) tuples"),
    ],
)
def test_bad_arguments_are_named(table: deltalog.Table, kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        table.snapshot().to_arrow(**kwargs)  # type: ignore[arg-type]
    assert fragment in str(err.value)


def test_missing_data_file_is_a_clear_error(table: deltalog.Table) -> None:
    snap = table.snapshot()
    victim = snap.add_files().column("path")[0].as_py()
    (Path(table.location) / victim.replace("%20", " ")).unlink()
    with pytest.raises(deltalog.DeltaError, match="does not exist"):
        snap.to_arrow()


def test_fractional_literal_on_an_integer_column_is_not_truncated(table: deltalog.Table) -> None:
    got = table.snapshot().to_arrow(columns=["id"], filter=[("id", "<", 100.5)])
    assert _ids(got) == [100]  # not "< 100"
    got = table.snapshot().to_arrow(columns=["id"], filter=[("id", "<", 101.5), ("id", ">", 99.5)])
    assert _ids(got) == [100, 101]


def test_files_read_side_by_side_come_back_in_the_logs_order_each_filtered(tmp_path: Path) -> None:
    """Several files are read at once; the result keeps the log's file order, each file is filtered as it
    is read, and a failing file is the error whichever file fails."""
    from deltalog.data.read import read_file_rows

    path = tmp_path / "many"
    for i in range(20):
        deltalog.write_table(path, pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                                             "k": pa.array([j % 3 for j in range(10)], pa.int64())}), mode="append")
    snap = deltalog.Table(path).snapshot()
    in_log_order = [read_file_rows(snap, row) for row in snap.add_files().to_pylist()]
    assert snap.to_arrow().column("id").to_pylist() == pa.concat_tables(in_log_order).column("id").to_pylist()
    expected = [i for t in in_log_order for i, k in zip(t["id"].to_pylist(), t["k"].to_pylist(), strict=True)
                if k == 1]
    assert snap.to_arrow(columns=["id"], filter=[("k", "=", 1)]).column("id").to_pylist() == expected
    assert snap.to_arrow(columns=["id"], filter=pc.field("k") == 1).column("id").to_pylist() == expected
    assert snap.to_arrow(filter=[("k", "=", 9)]).schema == snap.to_arrow().schema  # nothing matches: typed
    victim = snap.add_files().column("path")[13].as_py()
    (path / victim).unlink()
    with pytest.raises(deltalog.DeltaError, match=f"{victim}.*does not exist"):
        snap.to_arrow()


def test_limit_reads_files_only_until_it_has_the_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import deltalog.data.read as read_module

    path = tmp_path / "many"
    for i in range(20):
        deltalog.write_table(path, pa.table({"id": pa.array([2 * i, 2 * i + 1], pa.int64())}), mode="append")
    snap = deltalog.Table(path).snapshot()
    opened: list[str] = []
    real = read_module.read_file

    def spy(snapshot: object, add: dict[str, object], *args: object, **kwargs: object) -> pa.Table:
        opened.append(str(add["path"]))
        return real(snapshot, add, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(read_module, "read_file", spy)
    got = snap.to_arrow(limit=3)
    assert got.num_rows == 3 and len(opened) <= 8  # one batch of files read side by side
    assert snap.to_arrow(filter="id >= 30", limit=100).num_rows == 10  # fewer rows than the limit: all of them
    assert snap.to_arrow(limit=0).num_rows == 0
    with pytest.raises(InvalidArgumentError, match="limit must be a non-negative integer"):
        snap.to_arrow(limit=-1)
