"""The sqlglot dialect deltalog's SQL front end parses and prints statements with: Spark's, with the
Spark 4 functions sqlglot's Spark dialect would drop when it prints a statement again.

sqlglot prints ``parse_json(x)`` as plain ``x`` in Spark SQL (Spark 3 had no variant type), so an
``UPDATE t SET v = parse_json('1')`` reached Spark assigning a string. Here it stays ``PARSE_JSON(x)``, and
``j:a.b`` (a path into a variant column) stays a path instead of becoming an alias.

Example:
    >>> import sqlglot
    >>> sqlglot.transpile("SELECT parse_json('1')", read=DIALECT, write=DIALECT)
    ["SELECT PARSE_JSON('1')"]
    >>> sqlglot.transpile("SELECT j:a.b[0]::int FROM t", read=DIALECT, write=DIALECT)
    ['SELECT CAST(j:a.b[0] AS INT) FROM t']
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.spark import Spark

__all__ = ["DIALECT", "DeltalogSpark", "field_ddl", "quoted_name", "sql_string", "string_value", "type_ddl",
           "unqualified", "unqualified_sql"]


def _parse_json(self: Any, e: exp.ParseJSON) -> str:
    return str(self.func("TRY_PARSE_JSON" if e.args.get("safe") else "PARSE_JSON", e.this))


def _variant_extract(e: Any) -> bool:
    return isinstance(e, exp.JSONExtract) and bool(e.args.get("variant_extract"))


_SPARK_JSON_EXTRACT = Spark.Generator.TRANSFORMS.get(exp.JSONExtract)
_SPARK_JSON_ROOT = Spark.Generator.TRANSFORMS.get(exp.JSONPathRoot)


def _json_extract(self: Any, e: exp.JSONExtract) -> str:
    if _variant_extract(e):  # j:a.b[0], Spark 4's path into a variant
        return f"{self.sql(e, 'this')}:{self.sql(e, 'expression')}"
    return str(_SPARK_JSON_EXTRACT(self, e) if callable(_SPARK_JSON_EXTRACT) else self.function_fallback_sql(e))


def _json_root(self: Any, e: exp.JSONPathRoot) -> str:
    if _variant_extract(e.parent.parent if e.parent is not None else e):  # no '$' after the colon
        return ""
    return str(_SPARK_JSON_ROOT(self, e) if callable(_SPARK_JSON_ROOT) else "$")


class DeltalogSpark(Spark):
    """Spark SQL as Spark 4 reads it (registered with sqlglot as :data:`DIALECT`): also ``j:a.b[0]``, the
    colon path into a variant column (sqlglot's Spark dialect read it as an alias ``:a``)."""

    class Parser(Spark.Parser):  # type: ignore[valid-type,misc]
        COLON_IS_VARIANT_EXTRACT = True
        COLON_CHAIN_IS_SINGLE_EXTRACT = False

    class Generator(Spark.Generator):  # type: ignore[valid-type,misc]
        TRANSFORMS = {**Spark.Generator.TRANSFORMS, exp.ParseJSON: _parse_json,  # noqa: RUF012
                      exp.JSONExtract: _json_extract, exp.JSONPathRoot: _json_root}

        def jsonpath_sql(self, expression: exp.JSONPath) -> str:
            if _variant_extract(expression.parent):  # the path as written after the colon, unquoted
                return str(self.expressions(expression, sep="", flat=True)).lstrip(".")
            return str(super().jsonpath_sql(expression))


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


def quoted_name(name: str) -> str:
    """A name as Spark prints it: back-quoted only when it needs to be (sqlglot's quoting, as elsewhere).

    Example:
        >>> quoted_name("a b"), quoted_name("ab")
        ('`a b`', 'ab')
    """
    return str(exp.to_identifier(name).sql(dialect=DIALECT))


def type_ddl(dtype: Any) -> str:
    """A Delta type as Spark's DDL spells it (``STRUCT<a: INT, `b c`: ARRAY<STRING>>``).

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> type_ddl(PrimitiveType("decimal(10,2)"))
        'DECIMAL(10,2)'
    """
    from deltalog.protocol.schema import ArrayType, DecimalType, MapType, StructType

    if isinstance(dtype, DecimalType):
        return f"DECIMAL({dtype.precision},{dtype.scale})"
    if isinstance(dtype, StructType):
        return "STRUCT<" + ", ".join(field_ddl(f, nested=True) for f in dtype.fields) + ">"
    if isinstance(dtype, ArrayType):
        return f"ARRAY<{type_ddl(dtype.element_type)}>"
    if isinstance(dtype, MapType):
        return f"MAP<{type_ddl(dtype.key_type)}, {type_ddl(dtype.value_type)}>"
    from deltalog.spark.common.core import geo_ddl

    name = str(getattr(dtype, "name", dtype))
    return geo_ddl(dtype) or _SPARK_NAMES.get(name, name.upper())


_SPARK_NAMES = {"long": "BIGINT", "integer": "INT", "short": "SMALLINT", "byte": "TINYINT"}


def field_ddl(f: Any, *, nested: bool = False) -> str:
    """A column as Spark's DDL spells it, with ``NOT NULL`` and its comment (``nested``: a struct field,
    ``name: type``)."""
    out = f"{quoted_name(f.name)}{':' if nested else ''} {type_ddl(f.type)}"
    if not f.nullable:
        out += " NOT NULL"
    comment = f.metadata.get("comment")
    if comment is not None:
        out += f" COMMENT {sql_string(str(comment))}"
    return out
