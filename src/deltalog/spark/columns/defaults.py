"""Column defaults in Spark writes (see :mod:`deltalog.txn.defaults`): Spark evaluates each default --
any constant Spark SQL expression, ``current_date()`` included -- for the defaulted columns a DataFrame
leaves out; the other columns it leaves out are written as nulls (:func:`with_missing_columns`).

Example:
    >>> with_column_defaults(spark.range(2), snapshot.schema).columns                      # doctest: +SKIP
    ['id', 'status']
"""

from __future__ import annotations

from typing import Any

from deltalog.protocol.schema import StructType
from deltalog.txn.defaults import default_columns

__all__ = ["default_value", "with_column_defaults", "with_missing_columns"]


def default_value(schema: StructType, name: str) -> Any:
    """The Spark column computing ``name``'s default (a typed null when it has none), as delta-spark
    fills an unlisted column or the ``DEFAULT`` keyword.

    Example:
        >>> default_value(snapshot.schema, "status")                               # doctest: +SKIP
        Column<'CAST(new AS STRING)'>
    """
    from pyspark.sql import functions as F

    from deltalog.spark.common.core import spark_type

    field = schema.field(name)
    sql = default_columns(schema).get(field.name)
    return (F.expr(sql) if sql is not None else F.lit(None)).cast(spark_type(field.type))


def with_column_defaults(df: Any, schema: StructType) -> Any:
    """``df`` with every defaulted column it leaves out added, holding the default's value.

    Example:
        >>> with_column_defaults(df, snapshot.schema)                                      # doctest: +SKIP
    """
    present = {c.lower() for c in df.columns}
    for name in default_columns(schema):
        if name.lower() not in present:
            df = df.withColumn(name, default_value(schema, name))
    return df


def with_missing_columns(df: Any, schema: StructType) -> Any:
    """``df`` as delta-spark appends it to a table of ``schema``: a column named in another case takes the
    table's spelling, and each table column the data leaves out is written as null (Delta's schema
    enforcement allows that; a NOT NULL column left out then fails its constraint check).

    Example:
        >>> with_missing_columns(spark.range(2).toDF("ID"), snapshot.schema).columns        # doctest: +SKIP
        ['id', 'name']
    """
    from pyspark.sql import functions as F

    from deltalog.spark.common.core import spark_type

    by_lower = {f.name.lower(): f.name for f in schema.fields}
    spelled = [by_lower.get(c.lower(), c) for c in df.columns]
    if spelled != list(df.columns) and len({c.lower() for c in spelled}) == len(spelled):
        df = df.toDF(*spelled)
    present = {c.lower() for c in df.columns}
    missing = [f for f in schema.fields if f.name.lower() not in present]
    if missing:
        df = df.select("*", *[F.lit(None).cast(spark_type(f.type)).alias(f.name) for f in missing])
    return df
