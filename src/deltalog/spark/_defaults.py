"""Column defaults in Spark writes (see :mod:`deltalog.txn.defaults`): Spark evaluates each default --
any constant Spark SQL expression, ``current_date()`` included -- for the defaulted columns a DataFrame
leaves out.

Example:
    >>> with_column_defaults(spark.range(2), snapshot.schema).columns                      # doctest: +SKIP
    ['id', 'status']
"""

from __future__ import annotations

from typing import Any

from deltalog.protocol.schema import StructType
from deltalog.txn.defaults import default_columns

__all__ = ["default_value", "with_column_defaults"]


def default_value(schema: StructType, name: str) -> Any:
    """The Spark column computing ``name``'s default (a typed null when it has none), as delta-spark
    fills an unlisted column or the ``DEFAULT`` keyword.

    Example:
        >>> default_value(snapshot.schema, "status")                               # doctest: +SKIP
        Column<'CAST(new AS STRING)'>
    """
    from pyspark.sql import functions as F

    from deltalog.spark._common import spark_type

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
