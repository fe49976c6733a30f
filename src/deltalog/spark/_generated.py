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

from typing import Any

from deltalog.protocol.schema import StructType
from deltalog.txn.generated import generated_columns

__all__ = ["recompute_generated", "with_generated"]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _computed(schema: StructType, name: str, sql: str) -> Any:
    from pyspark.sql import functions as F

    from deltalog.spark._common import spark_type

    return F.expr(sql).cast(spark_type(schema.field(name).type))


def with_generated(df: Any, schema: StructType, *, table: str) -> Any:
    """``df`` with the table's generated columns computed where absent and checked where present.

    Example:
        >>> with_generated(df, snapshot.schema, table="/t").columns                  # doctest: +SKIP
        ['ts', 'day']
    """
    from pyspark.sql import functions as F

    from deltalog.spark._common import spark_type

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
        message = (f"deltalog.txn.constraints.ConstraintViolationError: generated column {name} ({sql}) does not "
                   f"match a row of the data; leave the column out to have it computed; nothing was written "
                   f"[table {table}]")
        column = F.col(_quoted(given)).cast(spark_type(schema.field(name).type))
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
