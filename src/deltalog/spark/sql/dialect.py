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

__all__ = ["DIALECT", "DeltalogSpark"]


def _parse_json(self: Any, e: exp.ParseJSON) -> str:
    return str(self.func("TRY_PARSE_JSON" if e.args.get("safe") else "PARSE_JSON", e.this))


class DeltalogSpark(Spark):
    """Spark SQL as Spark 4 reads it (registered with sqlglot as :data:`DIALECT`)."""

    class Generator(Spark.Generator):  # type: ignore[valid-type,misc]
        TRANSFORMS = {**Spark.Generator.TRANSFORMS, exp.ParseJSON: _parse_json}  # noqa: RUF012


#: The dialect name for ``sqlglot.parse_one(..., read=DIALECT)`` / ``expression.sql(dialect=DIALECT)``.
DIALECT = "deltalogspark"
