"""CHECK constraints written inside ``CREATE TABLE``: ``CONSTRAINT name CHECK (expr)`` among the columns, or
after a column's type. Each becomes the table property ``delta.constraints.<name>`` of the table's first
commit (as ``ALTER TABLE ... ADD CONSTRAINT`` would store it), after the expression is checked against the
new schema; other table constraints (``PRIMARY KEY``, ``FOREIGN KEY``, ``UNIQUE``) are refused, as Delta
tables have none.

Example:
    >>> spark.sql("CREATE TABLE orders (id INT, qty INT, CONSTRAINT qty_pos CHECK (qty > 0)) USING DELTA")
    ... # doctest: +SKIP
    >>> spark.sql("SHOW TBLPROPERTIES orders ('delta.constraints.qty_pos')").first().value  # doctest: +SKIP
    'qty > 0'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.spark.catalog.dialect import DIALECT

__all__ = ["check_properties", "split_checks"]


def split_checks(items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """The column definitions of a ``CREATE TABLE`` without their CHECK constraints, and those constraints as
    ``{name: sql}`` in the order written.

    Example:
        >>> columns, checks = split_checks(parse_columns("id INT, CONSTRAINT pos CHECK (id > 0)"))  # doctest: +SKIP
        >>> checks                                                                              # doctest: +SKIP
        {'pos': 'id > 0'}
    """
    from sqlglot import exp

    columns: list[Any] = []
    checks: dict[str, str] = {}

    def keep(name: str, node: Any) -> None:
        if not name:
            raise InvalidArgumentError(
                f"a CHECK constraint needs a name on a Delta table: write CONSTRAINT <name> CHECK "
                f"({node.this.sql(dialect=DIALECT)})")
        if name.lower() in {n.lower() for n in checks}:
            raise InvalidArgumentError(f"[DELTA_CONSTRAINT_ALREADY_EXISTS] constraint {name!r} is given twice")
        checks[name] = node.this.sql(dialect=DIALECT)

    for item in items:
        if isinstance(item, exp.CheckColumnConstraint):  # CHECK (...) among the columns, without a name
            keep("", item)  # refused: Delta names every constraint
            continue
        if isinstance(item, exp.Constraint):  # CONSTRAINT name CHECK (...) / PRIMARY KEY (...) among the columns
            for kind in item.expressions:
                if not isinstance(kind, exp.CheckColumnConstraint):
                    raise InvalidArgumentError(
                        f"constraint {item.name}: {kind.sql(dialect=DIALECT)} is not supported on Delta tables; "
                        "only CHECK constraints are (CONSTRAINT <name> CHECK (<condition>))")
                keep(item.name, kind)
            continue
        if isinstance(item, exp.ColumnDef):
            constraints = item.args.get("constraints") or []
            inline = [c for c in constraints if isinstance(c.kind, exp.CheckColumnConstraint)]
            if inline:  # c INT CONSTRAINT name CHECK (...)
                for c in inline:
                    keep(c.name, c.kind)
                item = item.copy()
                item.set("constraints", [c for c in constraints if not isinstance(c.kind, exp.CheckColumnConstraint)])
        columns.append(item)
    return columns, checks


def check_properties(struct: Any, checks: Mapping[str, str], properties: Mapping[str, str], *,
                     table: str) -> dict[str, str]:
    """The ``delta.constraints.*`` properties of ``checks``, each compiled against ``struct`` (the new table's
    ``pyspark.sql.types.StructType``) first, so a bad expression is refused before anything is created.

    Example:
        >>> check_properties(spark_struct, {"Pos": "id > 0"}, {}, table="orders")        # doctest: +SKIP
        {'delta.constraints.pos': 'id > 0'}
    """
    from deltalog.commands.constraints import compile_check, constraint_key
    from deltalog.protocol.schema import parse_schema

    schema = parse_schema(struct.json(), table=table)
    given = {k.lower() for k in properties}
    out: dict[str, str] = {}
    for name, sql in checks.items():
        key = constraint_key(name, table)
        if key in given:
            raise InvalidArgumentError(
                f"[DELTA_CONSTRAINT_ALREADY_EXISTS] constraint {name!r} is given both as CONSTRAINT ... CHECK and as "
                f"the table property {key}", table=table)
        compile_check(name, sql, schema, table=table)
        out[key] = sql
    return out
