"""Cloning a Delta table into a catalog name or a path: ``CREATE TABLE ... SHALLOW | DEEP CLONE`` in SQL and
``DeltaTable.clone(...)`` both run :func:`clone_into` (the kernel's :func:`~deltalog.commands.clone.clone_table`
does the copying).

Example:
    >>> DeltaTable.forPath(spark, "/data/t").clone("dev.t", isShallow=True)             # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from deltalog.commands.clone import clone_table
from deltalog.errors import InvalidArgumentError
from deltalog.spark.catalog.create import CreateSpec, register_table
from deltalog.spark.catalog.dialect import DIALECT
from deltalog.spark.catalog.entries import TableName, TableRef, forget, lookup, raw_sql
from deltalog.spark.common.core import open_table, spark_schema

__all__ = ["clone_into", "clone_result", "clone_to_catalog"]


def clone_into(
    spark: Any, text: str, target_text: str, source: TableRef, *, shallow: bool, replace: bool, if_not_exists: bool,
    properties: dict[str, str], location: str | None, at: dict[str, Any],
) -> Any:
    """``CREATE [OR REPLACE] TABLE target [IF NOT EXISTS] SHALLOW|DEEP CLONE source``: the kernel clones the table,
    and a catalog name that has no entry yet gets one, dropped again if the clone fails.

    Example:
        >>> clone_into(spark, "CREATE TABLE dev.t SHALLOW CLONE delta.`/data/t`", "dev.t", TableRef("/data/t"),
        ...            shallow=True, replace=False, if_not_exists=False, properties={}, location=None, at={})
        ... # doctest: +SKIP
    """
    table = exp.to_table(target_text, dialect=DIALECT)
    is_path = (table.db or "").lower() == "delta" and getattr(table.this, "quoted", False)
    name = None if is_path else TableName(table.name, table.db or None, table.catalog or None)
    entry = lookup(spark, name) if name is not None else None
    if entry is not None and not replace:
        if if_not_exists:
            return clone_result(spark, None)
        raise InvalidArgumentError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] {target_text} already exists")
    registered = False
    target_location = table.name if is_path else (entry.location if entry is not None else location)
    if name is not None and entry is None:
        src = open_table(source.location).snapshot(at.get("version"), timestamp=at.get("timestamp"))
        spec = CreateSpec()
        spec.partitions = list(src.partition_columns)
        target_location, _ = register_table(spark, name, spark_schema(list(src.schema.fields)), spec, location)
        registered = True
    assert target_location is not None
    try:
        result = clone_table(open_table(source.location), open_table(target_location), shallow=shallow,
                             replace=replace or registered, properties=properties or None, **at)
    except BaseException:
        if registered and name is not None:
            raw_sql(spark, f"DROP TABLE IF EXISTS {name.sql()}")
        raise
    finally:
        if name is not None:
            forget(spark, name)
    return clone_result(spark, result)


def clone_to_catalog(spark: Any, name: str, source: TableRef, *, shallow: bool, replace: bool,
                     properties: dict[str, str], at: dict[str, Any]) -> Any:
    """``CREATE [OR REPLACE] TABLE name SHALLOW|DEEP CLONE source`` for ``DeltaTable.clone(name, ...)``.

    Example:
        >>> clone_to_catalog(spark, "dev.t", TableRef("/data/t"), shallow=True, replace=False,
        ...                  properties={}, at={})                                     # doctest: +SKIP
    """
    text = f"DeltaTable.clone({name!r})"
    return clone_into(spark, text, name, source, shallow=shallow, replace=replace, if_not_exists=False,
                      properties=properties, location=None, at=at)


def clone_result(spark: Any, result: Any) -> Any:
    """The one-row frame of clone metrics delta-spark returns (no rows when nothing was cloned)."""
    ddl = ("source_table_size bigint, source_num_of_files bigint, num_removed_files bigint, num_copied_files bigint, "
           "removed_files_size bigint, copied_files_size bigint")
    if result is None:
        return spark.createDataFrame([], ddl)
    row = (result.source_table_size, result.source_num_files, result.num_removed_files, result.num_copied_files,
           result.removed_files_size, result.copied_files_size)
    return spark.createDataFrame([row], ddl)
