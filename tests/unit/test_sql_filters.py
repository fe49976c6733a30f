"""SQL condition strings as the kernel's filters and DML predicates (``snap.to_arrow(filter="id > 5")``,
``Table.delete("...")``, ``Table.update_rows("...", {"v": deltalog.sql_expr("v * 2")})``), as delta-rs takes
them: the rows are exactly the SQL evaluator's, and the condition's simple ``AND`` terms prune partitions and
skip files by statistics (checked against a full read for random conditions)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deltalog
from deltalog.data.filters import normalize_filter, prune_files
from deltalog.data.sql_expr import compile_expression
from deltalog.errors import ConcurrentAppendException, InvalidArgumentError
from races import winner_commits_first


def _write(path: Path, *, dvs: bool = False) -> deltalog.Table:
    for day in range(1, 4):
        data = pa.table({
            "id": pa.array(range(day * 100, day * 100 + 50), pa.int64()),
            "day": pa.array([dt.date(2024, 1, day)] * 50, pa.date32()),
            "name": pa.array([None if i % 10 == 0 else f"n{i}" for i in range(50)], pa.string()),
            "score": pa.array([i / 4 for i in range(50)], pa.float64()),
        })
        deltalog.write_table(path, data, mode="append", partition_by=["day"],
                             properties={"delta.enableDeletionVectors": "true"} if dvs else None)
    return deltalog.Table(path)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> deltalog.Table:
    return _write(tmp_path_factory.mktemp("sqlf") / "t")


def _ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def test_simple_terms_prune_and_the_rest_filters_rows(table: deltalog.Table) -> None:
    snap = table.snapshot()
    conds, rest = normalize_filter("DAY = '2024-01-02'", snap.schema, table="t")
    assert rest is None and prune_files(snap, conds).num_rows == 1  # said exactly by its condition
    conds, rest = normalize_filter("day = DATE '2024-01-02' AND id % 2 = 0", snap.schema, table="t")
    assert rest is not None and prune_files(snap, conds).num_rows == 1
    assert _ids(snap.to_arrow(filter="day = DATE '2024-01-02' AND id % 2 = 0")) == list(range(200, 250, 2))
    conds, _ = normalize_filter("340 <= id", snap.schema, table="t")  # literal first: the op is flipped
    assert prune_files(snap, conds).num_rows == 1
    conds, _ = normalize_filter("id BETWEEN 120 AND 130 AND name IN ('n1', 'n2')", snap.schema, table="t")
    assert prune_files(snap, conds).num_rows == 1
    got = snap.to_arrow(columns=["name"], filter="upper(name) LIKE 'N4%' OR name IS NULL")
    assert got.column_names == ["name"] and got.num_rows == 3 * (10 + 5)  # n4, n41..n49; 5 nulls


def test_null_semantics_follow_sql(table: deltalog.Table) -> None:
    snap = table.snapshot()
    assert snap.to_arrow(filter="name != 'n1'").num_rows == 150 - 15 - 3  # null is not != 'n1'
    assert snap.to_arrow(filter="name NOT IN ('n1')").num_rows == 150 - 15 - 3
    assert snap.to_arrow(filter="name = NULL").num_rows == 0
    assert snap.to_arrow(filter="name <=> NULL").num_rows == 15


_COLUMN_TERMS = st.one_of(
    st.tuples(st.just("id"), st.integers(90, 360).map(str)),
    st.tuples(st.just("score"), st.integers(-1, 52).map(lambda i: str(i / 4))),
    st.tuples(st.just("day"), st.sampled_from(["'2024-01-01'", "DATE '2024-01-02'", "'2024-01-04'"])),
    st.tuples(st.just("name"), st.sampled_from(["'n1'", "'n25'", "'n9'", "'a'", "'z'"])),
)


@st.composite
def _term(draw: st.DrawFn) -> str:
    column, literal = draw(_COLUMN_TERMS)
    kind = draw(st.sampled_from(["cmp", "flip", "in", "notin", "between", "null", "expr"]))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "<>"]))
    if kind == "cmp":
        return f"{column} {op} {literal}"
    if kind == "flip":
        return f"{literal} {op} {column}"
    if kind in ("in", "notin"):
        _, other = draw(_COLUMN_TERMS.filter(lambda t: t[0] == column))
        return f"{column} {'NOT IN' if kind == 'notin' else 'IN'} ({literal}, {other})"
    if kind == "between":
        _, other = draw(_COLUMN_TERMS.filter(lambda t: t[0] == column))
        return f"{column} {draw(st.sampled_from(['', 'NOT ']))}BETWEEN {literal} AND {other}"
    if kind == "null":
        return f"{column} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    return draw(st.sampled_from(["id % 3 = 0", "length(name) = 3", "score * 2 > 10", "NOT (id > 200)"]))


@st.composite
def _condition(draw: st.DrawFn) -> str:
    terms = draw(st.lists(_term(), min_size=1, max_size=3))
    joiner = draw(st.sampled_from([" AND ", " AND ", " OR "]))
    return joiner.join(f"({t})" if draw(st.booleans()) else t for t in terms)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=_condition())
def test_rows_are_the_sql_evaluators_for_random_conditions(table: deltalog.Table, sql: str) -> None:
    snap = table.snapshot()
    everything = snap.to_arrow()
    want = _ids(everything.filter(pc.fill_null(compile_expression(sql).evaluate(everything), False)))
    assert _ids(snap.to_arrow(filter=sql)) == want  # pruning and skipping never lose a matching row


def test_nan_is_ordered_as_spark_orders_it(tmp_path: Path) -> None:
    """Spark: NaN equals NaN and is greater than every other number. Arrow (IEEE) made each comparison with
    NaN false, so the kernel's ``x > 5`` left out the NaN row Spark's reader and DELETE take."""
    nan = float("nan")
    deltalog.write_table(str(tmp_path), pa.table({"id": [1, 2, 3, 4], "x": [1.0, nan, None, 7.0]}))
    table = deltalog.Table(str(tmp_path))

    def ids(where: object) -> list[int]:
        return sorted(table.snapshot().to_arrow(filter=where).column("id").to_pylist())

    expected = {"x > 5": [2, 4], "x >= 7": [2, 4], "x < 5": [1], "x <= 1": [1], "x = 'NaN'": [2],
                "x != 1.0": [2, 4], "x IN (7.0, 'NaN')": [2, 4], "x <=> 'NaN'": [2], "NOT (x > 5)": [1]}
    assert {sql: ids(sql) for sql in expected} == expected
    conditions = {">": [2, 4], "<": [1], "=": [1], "!=": [2, 4]}
    assert {op: ids([("x", op, 1.0 if op in ("=", "!=") else 5)]) for op in conditions} == conditions
    with_nan = {">": [], ">=": [2], "<": [1, 4], "=": [2], "!=": [1, 4], "in": [2]}
    assert {op: ids([("x", op, [nan] if op == "in" else nan)]) for op in with_nan} == with_nan
    table.delete("x > 5")
    assert ids(None) == [1, 3]


def test_delete_and_update_take_sql(tmp_path: Path) -> None:
    table = _write(tmp_path / "t", dvs=True)
    result = table.delete("id >= 340 OR (day = '2024-01-01' AND name IS NULL)")
    assert result.num_deleted_rows == 10 + 5
    entry = table.history(limit=1)[0]
    assert entry["operationParameters"]["predicate"] == '["id >= 340 OR (day = \'2024-01-01\' AND name IS NULL)"]'
    updated = table.update_rows("day = '2024-01-02' AND id < 205", {"score": deltalog.sql_expr("score + id"),
                                                                      "name": "updated"})
    assert updated.num_updated_rows == 5
    rows = table.snapshot().to_arrow(filter="name = 'updated'").sort_by("id").to_pylist()
    assert [(r["id"], r["score"]) for r in rows] == [(200 + i, 200 + i + i / 4) for i in range(5)]
    assert table.snapshot().to_arrow().num_rows == 150 - 15


def test_a_partition_only_sql_delete_drops_whole_files(tmp_path: Path) -> None:
    table = _write(tmp_path / "t")
    result = table.delete("day IN ('2024-01-01', '2024-01-03')")
    assert result.num_deleted_rows == 100 and result.num_removed_files == 2
    metrics = table.history(limit=1)[0]["operationMetrics"]
    assert metrics["numAddedFiles"] == "0"  # removed whole, nothing rewritten
    assert _ids(table.snapshot().to_arrow()) == list(range(200, 250))


def test_a_sql_delete_reads_only_what_its_terms_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its partition term is the read predicate: under Serializable (where appends can conflict with a
    DELETE) an append to another partition does not conflict, one to the same partition does."""
    path = tmp_path / "t"
    table = _write(path)
    table.set_properties({"delta.isolationLevel": "Serializable"})

    def append(day: int) -> None:
        deltalog.write_table(path, pa.table({
            "id": pa.array([9000 + day], pa.int64()), "day": pa.array([dt.date(2024, 1, day)], pa.date32()),
            "name": pa.array(["new"]), "score": pa.array([0.0]),
        }), mode="append")

    winner_commits_first(monkeypatch, str(path), lambda _: append(3))
    assert table.delete("day = '2024-01-01' AND id % 2 = 0").num_deleted_rows == 25
    monkeypatch.undo()
    winner_commits_first(monkeypatch, str(path), lambda _: append(1))
    with pytest.raises(ConcurrentAppendException):
        table.delete("day = '2024-01-01' AND id % 2 = 1")
    monkeypatch.undo()


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("nope > 3", "column 'nope' does not exist"),
        ("id + 1", "is not a condition: it gives int64 values"),
        ("id = 'abc'", "cannot compare 'abc' with a column of type int64"),
        ("id >", "filter 'id >'"),
        ("id REGEXP 'a'", "unexpected 'REGEXP'"),
    ],
)
def test_bad_sql_is_named_before_anything_is_read(table: deltalog.Table, sql: str, fragment: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        table.snapshot().to_arrow(filter=sql)
    assert fragment in str(err.value)
    with pytest.raises(InvalidArgumentError) as err:
        table.delete(sql)
    assert fragment in str(err.value)
    assert table.snapshot().version == 2


def test_bad_sql_assignment_is_named(table: deltalog.Table) -> None:
    with pytest.raises(InvalidArgumentError, match="cannot set column 'score' to 'nope \\* 2'"):
        table.update_rows("id = 100", {"score": deltalog.sql_expr("nope * 2")})
    assert table.snapshot().version == 2
    # delta-rs takes SQL strings as values; here a string is a literal, and the error says how to write SQL
    with pytest.raises(InvalidArgumentError, match=r"for a SQL expression write deltalog\.sql_expr\('score \* 2'\)"):
        table.update_rows("id = 100", {"score": "score * 2"})
    assert table.snapshot().version == 2
