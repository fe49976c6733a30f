"""Generated columns in Spark writes (see :mod:`deltalog.txn.generated`): Spark evaluates the generation
expressions -- any Spark SQL expression, in the session time zone, as delta-spark does.

A DataFrame write that leaves a generated column out gets it computed; one that provides it keeps it only
where it equals the expression (``<=>``) -- any other row fails the job (a ``ConstraintViolationError``
naming the column) and nothing is committed. DML rewrites (UPDATE, MERGE) recompute the generated columns
of every row they write from the row's final values.

Example:
    >>> df = with_generated(spark.range(3).selectExpr("id AS x"), snapshot.schema, table="/t")   # doctest: +SKIP
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deltalog.protocol.schema import StructType
from deltalog.spark.common.core import quoted
from deltalog.txn.generated import generated_columns

if TYPE_CHECKING:
    from deltalog.data.filters import Condition

__all__ = ["generated_partition_conditions", "recompute_generated", "with_generated"]



def _computed(schema: StructType, name: str, sql: str) -> Any:
    from pyspark.sql import functions as F

    from deltalog.spark.common.core import spark_type

    return F.expr(sql).cast(spark_type(schema.field(name).type))


def with_generated(df: Any, schema: StructType, *, table: str) -> Any:
    """``df`` with the table's generated columns computed where absent and checked where present.

    Example:
        >>> with_generated(df, snapshot.schema, table="/t").columns                  # doctest: +SKIP
        ['ts', 'day']
    """
    from pyspark.sql import functions as F

    from deltalog.spark.common.core import spark_type

    columns = generated_columns(schema)
    if not columns:
        return df
    present = {c.lower(): c for c in df.columns}
    for name, sql in columns.items():
        value = _computed(schema, name, sql)
        given = present.get(name.lower())
        if given is None:
            df = df.withColumn(name, value)
            continue
        message = (f"deltalog.txn.constraints.ConstraintViolationError: [DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] "
                   f"generated column {name} ({sql}) does not match a row of the data; leave the column out to "
                   f"have it computed; nothing was written [table {table}]")
        column = F.col(quoted(given)).cast(spark_type(schema.field(name).type))
        df = df.withColumn(given, F.when(column.eqNullSafe(value), column).otherwise(
            F.raise_error(F.lit(message)).cast(spark_type(schema.field(name).type))))
    return df


def recompute_generated(df: Any, schema: StructType) -> Any:
    """``df`` (rows about to be written by a DML rewrite) with every generated column recomputed.

    Example:
        >>> recompute_generated(rows, snapshot.schema)                              # doctest: +SKIP
    """
    columns = generated_columns(schema)
    for name, sql in columns.items():
        if name in df.columns:
            df = df.withColumn(name, _computed(schema, name, sql))
    return df


# ------------------------------------------------------------------ partition pruning through generated columns

_DATE_OF = re.compile(r"^\s*(?:cast\s*\(\s*`?(\w+)`?\s+as\s+date\s*\)|(?:to_date|date)\s*\(\s*`?(\w+)`?\s*\))\s*$",
                      re.IGNORECASE)
_YEAR_OF = re.compile(r"^\s*year\s*\(\s*`?(\w+)`?\s*\)\s*$", re.IGNORECASE)
_COMPARISON = re.compile(
    r"^\s*\(?\s*`?(\w+)`?\s*(>=|<=|==|=|<|>)\s*(?:timestamp_ntz|timestamp|date)?\s*'([^']+)'\s*\)?\s*$", re.IGNORECASE)
#: Two days cover any difference between the time zones of the query and of the writer (each under 24h).
_SLACK = dt.timedelta(days=2)


def _literal_date(text: str) -> dt.date | None:
    try:
        return dt.datetime.fromisoformat(text.strip().replace(" ", "T", 1)).date()
    except ValueError:
        return None


def generated_partition_conditions(texts: Sequence[str], snapshot: Any) -> list[tuple[str, Condition]]:
    """Partition conditions implied by conditions on the source column of a generated partition column
    (``day = CAST(ts AS DATE)``, ``to_date(ts)``, ``date(ts)``, ``year(ts)``), as delta-spark derives them:
    ``ts >= '2024-05-03 10:00'`` prunes ``day`` below 2024-05-01. Bounds are widened by two days, so
    the time zones the query and the writers used never drop a matching row. Each result is
    ``(source column, condition)``.

    Example:
        >>> generated_partition_conditions(["ts >= '2024-05-03 10:00:00'"], snap)         # doctest: +SKIP
        [('ts', Condition(column='day', op='>=', value=datetime.date(2024, 5, 1)))]
    """
    from deltalog.data.filters import normalize_filter

    schema = snapshot.schema
    derived: dict[str, tuple[str, str]] = {}  # source column (lower) -> (partition column, kind)
    for name, sql in generated_columns(schema).items():
        if name not in snapshot.partition_columns:
            continue
        date_of, year_of = _DATE_OF.match(sql), _YEAR_OF.match(sql)
        source = (date_of.group(1) or date_of.group(2)) if date_of else year_of.group(1) if year_of else None
        if source is not None:
            derived[source.lower()] = (name, "date" if date_of else "year")
    out: list[tuple[str, Condition]] = []
    for text in texts if derived else ():
        found = _COMPARISON.match(text)
        if found is None or found.group(1).lower() not in derived:
            continue
        source, op, day = found.group(1), found.group(2), _literal_date(found.group(3))
        field = next((f for f in schema.fields if f.name.lower() == source.lower()), None)
        if day is None or field is None or getattr(field.type, "name", "") not in ("timestamp", "timestamp_ntz",
                                                                                   "date"):
            continue
        column, kind = derived[source.lower()]
        low, high = day - _SLACK, day + _SLACK
        bounds: list[tuple[str, Any]] = []
        if op in ("=", "==", ">", ">="):
            bounds.append((">=", low if kind == "date" else low.year))
        if op in ("=", "==", "<", "<="):
            bounds.append(("<=", high if kind == "date" else high.year))
        for bound_op, value in bounds:
            conds, _ = normalize_filter([(column, bound_op, value)], schema, table=snapshot.table)
            out.extend((field.name, c) for c in conds)
    return out
