"""``create_table``: a Delta table from a schema, without data (delta-rs's ``DeltaTable.create``, delta-spark's
``DeltaTable.create(spark)...execute()`` and ``CREATE TABLE``).

The schema is a ``pyarrow.Schema`` or a :class:`~deltalog.protocol.schema.StructType`; the latter keeps its
fields' metadata, so columns can carry comments, generation expressions
(:func:`deltalog.txn.generated.generated_metadata`), identity settings
(:func:`deltalog.txn.identity.identity_metadata`) and defaults. Partitioning, clustering, properties (the
rules of ``Table.set_properties``: unknown ``delta.*`` keys refused, features enabled, ``CHECK``
constraints as ``delta.constraints.<name>``), name and description are set as ``write_table`` sets them
when it creates a table; the commit is a ``CREATE TABLE`` (``CREATE OR REPLACE TABLE`` when ``mode=
"overwrite"`` replaces an existing table: every file removed, the schema, partitioning and properties
replaced, the table's id and history kept).

Example:
    >>> import pyarrow as pa
    >>> from deltalog.storage import InMemoryLogStore
    >>> store = InMemoryLogStore("memory://create-doc")
    >>> t = create_table("memory://create-doc", pa.schema([("id", pa.int64()), ("day", pa.date32())]),
    ...                  partition_by=["day"], store=store)
    >>> t.snapshot().partition_columns, t.history()[0]["operation"]
    (('day',), 'CREATE TABLE')
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from deltalog.arrow.write import TableExistsError, commit_plan, plan_write, preflight
from deltalog.errors import InvalidArgumentError, TableNotFoundError
from deltalog.protocol.schema import StructType
from deltalog.storage import LogStore
from deltalog.table import Table
from deltalog.txn.operations import CreateTable
from deltalog.txn.transaction import Transaction
from deltalog.txn.writer_features import check_never_writable

__all__ = ["create_table"]

_MODES = ("error", "ignore", "overwrite")


def create_table(
    location: str | os.PathLike[str],
    schema: pa.Schema | StructType,
    *,
    mode: str = "error",
    partition_by: Sequence[str] | None = None,
    cluster_by: Sequence[str] | None = None,
    properties: Mapping[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
    store: LogStore | None = None,
    storage_options: Mapping[str, Any] | None = None,
    clock: Callable[[], int] | None = None,
) -> Table:
    """Create an empty Delta table with ``schema`` at ``location`` and return it (see the module docstring).

    ``mode``: ``"error"`` (the default) refuses an existing table (``TableExistsError``), ``"ignore"``
    returns it unchanged, ``"overwrite"`` replaces it in one ``CREATE OR REPLACE TABLE`` commit. ``clock``
    returns "now" in epoch milliseconds (the commit's and the table's creation time).

    Example:
        >>> from deltalog.protocol.schema import parse_schema
        >>> schema = parse_schema('{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,'
        ...                       '"metadata":{"comment":"the key"}}]}')
        >>> create_table("/data/users", schema, properties={"delta.enableDeletionVectors": "true"})
        ... # doctest: +SKIP
        Table('/data/users')
    """
    where = os.fspath(location)
    clock = clock or (lambda: time.time_ns() // 1_000_000)
    if mode not in _MODES:
        raise InvalidArgumentError(f"unknown mode {mode!r}; valid: {list(_MODES)}", table=where)
    if isinstance(schema, StructType):
        declared: StructType | None = schema
        arrow_schema = schema.to_arrow_schema()
    elif isinstance(schema, pa.Schema):
        declared, arrow_schema = None, schema
    else:
        raise InvalidArgumentError(
            f"schema must be a pyarrow.Schema or a deltalog StructType, got {type(schema).__name__}", table=where)
    if not len(arrow_schema):
        raise InvalidArgumentError("[DELTA_SCHEMA_NOT_PROVIDED] the table needs at least one column", table=where)
    table = Table(location, store=store, storage_options=storage_options)
    try:
        snapshot = table.snapshot()
    except TableNotFoundError:
        snapshot = None
    if snapshot is not None and mode == "error":
        raise TableExistsError(
            f"[DELTA_TABLE_ALREADY_EXISTS] the table already exists (version {snapshot.version}); pass "
            'mode="ignore" to keep it or mode="overwrite" to replace it', table=table.location)
    if snapshot is not None and mode == "ignore":
        return table
    if snapshot is not None:
        check_never_writable(snapshot.protocol, table=table.location, version=snapshot.version)
    replacing = snapshot is not None
    write_mode = "overwrite" if replacing else "error"
    plan = plan_write(
        table, snapshot, arrow_schema, mode=write_mode, partition_by=partition_by,
        schema_mode="overwrite" if replacing else None, predicate=None, properties=properties, name=name,
        description=description, clock=clock, replace=replacing, cluster_by=cluster_by, declared=declared,
    )
    op = CreateTable(partition_by=tuple(plan.metadata.partitionColumns), properties=dict(properties or {}),
                     description=plan.metadata.description, replace=replacing, cluster_by=tuple(cluster_by or ()))
    txn = Transaction(table.store, snapshot, op, table=table.location, clock=clock)
    preflight(txn, plan, write_mode, table.location)
    if replacing:
        plan.metadata_changed = True  # the schema, partitioning and properties are the statement's
    commit_plan(txn, plan, [], write_mode, None)
    return table
