"""The catalog entry of a new Delta table: what ``CREATE TABLE`` says of it (:class:`CreateSpec`) and the
``USING delta`` entry Spark's catalog gets for it (:func:`register_table`). The one place both the SQL front
end (``CREATE TABLE``, ``CLONE``) and ``DeltaTableBuilder.tableName(...).execute()`` create a catalog table.

Example:
    >>> CreateSpec(partitions=["day"]).partitions
    ['day']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deltalog.errors import TableNotFoundError
from deltalog.protocol.schema import parse_schema
from deltalog.spark.catalog.dialect import sql_string, type_ddl
from deltalog.spark.catalog.entries import TableName, ensure_source, forget, lookup, raw_sql
from deltalog.spark.common import compat

__all__ = ["CreateSpec", "register_table"]


@dataclass
class CreateSpec:
    """A new table as ``CREATE TABLE`` describes it: columns, partitioning, location, properties, comment,
    provider, clustering and CHECK constraints."""

    columns: list[Any] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    partition_columns: list[Any] = field(default_factory=list)
    location: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    provider: str | None = None
    clustering: list[str] | None = None
    checks: dict[str, str] = field(default_factory=dict)  # CONSTRAINT name CHECK (...): {name: sql}


def register_table(
    spark: Any, name: TableName, struct: Any, spec: CreateSpec, location: str | None
) -> tuple[str, bool]:
    """Create the catalog entry (``USING delta``); returns the table's location and whether it is managed. Spark
    3.5, which has no Python data sources to register ``delta`` with, gets the entry through
    :func:`~deltalog.spark.common.compat.create_table_entry`.

    Example:
        >>> register_table(spark, TableName("events"), df.schema, CreateSpec(), None)       # doctest: +SKIP
        ('file:/warehouse/events', True)
    """
    fields = parse_schema(struct.json()).fields  # quoted names at every depth (simpleString quotes none)
    columns = ", ".join(f"`{f.name.replace('`', '``')}` {type_ddl(f.type)}" for f in fields)
    parts = f" PARTITIONED BY ({', '.join('`' + p + '`' for p in spec.partitions)})" if spec.partitions else ""
    where = f" LOCATION {sql_string(location)}" if location else ""
    comment = f" COMMENT {sql_string(spec.comment)}" if spec.comment else ""
    if compat.PYTHON_DATA_SOURCES:
        ensure_source(spark)
        raw_sql(spark, f"CREATE TABLE {name.sql()} ({columns}) USING delta{parts}{where}{comment}")
    else:  # no ``delta`` data source to name: Spark makes the entry of a parquet table, created as ``delta``
        compat.create_table_entry(spark, f"CREATE TABLE {name.sql()} ({columns}) USING parquet{parts}{where}{comment}",
                                  "delta")
    forget(spark, name)
    entry = lookup(spark, name)
    if entry is None:  # pragma: no cover -- Spark just created it
        raise TableNotFoundError(f"the catalog entry of {name.qualified} vanished right after it was created")
    return entry.location, entry.managed
