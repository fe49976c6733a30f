"""The sqlglot dialect deltalog's SQL front end parses and prints statements with: Spark's, with the
Spark 4 functions sqlglot's Spark dialect would drop when it prints a statement again.

sqlglot prints ``parse_json(x)`` as plain ``x`` in Spark SQL (Spark 3 had no variant type), so an
``UPDATE t SET v = parse_json('1')`` reached Spark assigning a string. Here it stays ``PARSE_JSON(x)``.

Example:
    >>> import sqlglot
    >>> sqlglot.transpile("SELECT parse_json('1')", read=DIALECT, write=DIALECT)
    ["SELECT PARSE_JSON('1')"]
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.spark import Spark

__all__ = ["DIALECT", "DeltalogSpark", "sql_string", "string_value", "unqualified", "unqualified_sql"]


def _parse_json(self: Any, e: exp.ParseJSON) -> str:
    return str(self.func("TRY_PARSE_JSON" if e.args.get("safe") else "PARSE_JSON", e.this))


class DeltalogSpark(Spark):
    """Spark SQL as Spark 4 reads it (registered with sqlglot as :data:`DIALECT`)."""

    class Generator(Spark.Generator):  # type: ignore[valid-type,misc]
        TRANSFORMS = {**Spark.Generator.TRANSFORMS, exp.ParseJSON: _parse_json}  # noqa: RUF012


#: The dialect name for ``sqlglot.parse_one(..., read=DIALECT)`` / ``expression.sql(dialect=DIALECT)``.
DIALECT = "deltalogspark"


def sql_string(text: str) -> str:
    r"""``text`` as a Spark SQL string literal (quotes and backslashes escaped, as Spark's parser reads them back).

    Example:
        >>> print(sql_string("it's a\\b"))
        'it\'s a\\b'
    """
    return str(exp.Literal.string(text).sql(dialect=DIALECT))


def string_value(node: Any) -> str | None:
    """The text of a string literal, ``None`` for anything else. Adjacent literals are joined, as Spark joins
    them: ``'it''s'`` is ``'it' 's'``, the text ``its`` (sqlglot parses it as ``CONCAT('it', 's')``).

    Example:
        >>> import sqlglot
        >>> string_value(sqlglot.parse_one("SELECT 'it''s'", read=DIALECT).expressions[0])
        'its'
    """
    if isinstance(node, exp.Literal):
        return str(node.this) if node.is_string else None
    if isinstance(node, exp.Concat) and node.expressions and all(
            isinstance(e, exp.Literal) and e.is_string for e in node.expressions):
        return "".join(str(e.this) for e in node.expressions)
    return None


def unqualified(node: Any, names: set[str]) -> Any:
    """A copy of ``node`` whose columns qualified by one of ``names`` (lower case: the target table's name or
    alias) lose the qualifier, outside subqueries (there a qualified name may be an outer reference).

    Example:
        >>> import sqlglot
        >>> unqualified(sqlglot.parse_one("t.id = 1 AND s.v > t.v + t.s.a", read=DIALECT), {"t"}).sql(dialect=DIALECT)
        'id = 1 AND s.v > v + s.a'
    """

    def strip(n: Any) -> Any:
        if not isinstance(n, exp.Column) or n.find_ancestor(exp.Select) is not None:
            return n
        if n.table and n.table.lower() in names:
            return exp.Column(this=n.this)
        parts = n.parts
        if len(parts) > 2 and parts[0].name.lower() in names:  # t.s.b: field b of the target's struct s
            return exp.Column(**dict(zip(("this", "table", "db", "catalog"), reversed(parts[1:]), strict=False)))
        return n

    return node.copy().transform(strip)


def unqualified_sql(text: str, names: set[str]) -> str:
    """:func:`unqualified` of a SQL expression given as text; text sqlglot cannot parse is returned as it is
    (Spark reports what is wrong with it).

    Example:
        >>> unqualified_sql("t.id = 1", {"t"})
        'id = 1'
    """
    import sqlglot
    from sqlglot.errors import ParseError

    try:
        node = sqlglot.parse_one(text, read=DIALECT)
    except ParseError:
        return text
    return str(unqualified(node, names).sql(dialect=DIALECT))
