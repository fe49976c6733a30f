"""The rewrite of correlated ``[NOT] EXISTS`` in DML conditions (``deltalog.spark.sql.decorrelate``), checked
against ``EXISTS``'s meaning on rows, nulls included, by evaluating both forms with DuckDB. Not marked
``spark``: no JVM needed."""

from __future__ import annotations

import itertools

import pytest
import sqlglot

from deltalog.spark.sql.decorrelate import decorrelated

duckdb = pytest.importorskip("duckdb")

CONDITIONS = [
    "EXISTS (SELECT 1 FROM u WHERE u.k = t.k)",
    "NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.k)",
    "EXISTS (SELECT * FROM u WHERE t.k = u.k AND u.x > 1 AND t.v = 'a')",
    "NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND t.v = 'a')",
    "EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.x + 1 = t.x)",
    "t.v = 'b' OR NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.x IS NOT NULL)",
]


@pytest.mark.parametrize("condition", CONDITIONS)
def test_rewrite_selects_the_rows_exists_selects(condition: str) -> None:
    tree = decorrelated(sqlglot.parse_one(condition, read="spark"), {"t"})
    assert not any(c.table == "t" for s in tree.find_all(sqlglot.exp.Select) for c in s.find_all(sqlglot.exp.Column))
    rewritten = tree.sql(dialect="duckdb")
    con = duckdb.connect()
    values = [1, 2, None]
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES " + ", ".join(
        f"({k if k is not None else 'NULL'}, {x if x is not None else 'NULL'}, '{v}')"
        for k, x, v in itertools.product(values, values, "ab")) + ") AS r(k, x, v)")
    con.execute("CREATE TABLE u AS SELECT * FROM (VALUES (1, 0), (1, 2), (NULL, 3), (2, NULL)) AS r(k, x)")
    original = con.execute(f"SELECT k, x, v FROM t WHERE {condition} ORDER BY ALL").fetchall()
    ours = con.execute(f"SELECT k, x, v FROM t WHERE {rewritten} ORDER BY ALL").fetchall()
    assert ours == original


@pytest.mark.parametrize("condition", [
    "EXISTS (SELECT 1 FROM u WHERE u.k > t.k)",  # not an equality
    "EXISTS (SELECT 1 FROM u WHERE u.k = t.k OR u.x = 1)",  # not AND-ed
    "EXISTS (SELECT 1 FROM t WHERE t.k = 1)",  # the subquery reads a table under the target's name
    "EXISTS (SELECT u.k FROM u WHERE u.k = t.k GROUP BY u.k)",  # grouping
])
def test_other_correlations_are_left_for_the_caller_to_refuse(condition: str) -> None:
    tree = sqlglot.parse_one(condition, read="spark")
    assert decorrelated(tree.copy(), {"t"}).sql(dialect="spark") == tree.sql(dialect="spark")
