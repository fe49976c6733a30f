"""``CREATE TABLE [IF NOT EXISTS] t LIKE s [USING DELTA] [LOCATION '...'] [TBLPROPERTIES (...)]``.

A new, empty Delta table shaped like ``s``. When ``s`` is a Delta table (a catalog name or
``delta.`path```), the new table gets its log's columns (comments, defaults, generated and identity
columns: an identity column starts again), partitioning or clustering, description and table properties,
as delta-spark copies them; the statement's own ``TBLPROPERTIES`` and ``LOCATION`` are added. When ``s`` is
another catalog table and the statement says ``USING DELTA``, its columns and partitioning are taken from
the catalog. Spark runs every other ``LIKE`` (no Delta table on either side).

Example:
    >>> spark.sql("CREATE TABLE events_staging LIKE events")                        # doctest: +SKIP
"""

from __future__ import annotations

import json
from typing import Any

from deltalog.spark.catalog.dialect import DIALECT
from deltalog.spark.sql.shared import empty_result, refuse

__all__ = ["create_like"]

#: Table properties the new table does not inherit: bookkeeping of the source's own history.
_NOT_COPIED = ("delta.columnMapping.maxColumnId", "delta.rowTracking.materialized",
               "delta.inCommitTimestampEnablement", "delta.clusteringColumns")
#: Column metadata the new table does not inherit (its column mapping and identity values start anew).
_FIELD_KEYS_DROPPED = ("delta.columnMapping.id", "delta.columnMapping.physicalName", "delta.identity.highWaterMark")


def create_like(spark: Any, expression: Any, text: str) -> Any:
    """Run ``CREATE TABLE ... LIKE`` when a Delta table is its source or its target's provider; ``None`` for
    Spark's own.

    Example:
        >>> create_like(spark, parse("CREATE TABLE b LIKE a"), "CREATE TABLE b LIKE a")     # doctest: +SKIP
        DataFrame[]
    """
    from sqlglot import exp

    if not isinstance(expression, exp.Create) or str(expression.args.get("kind") or "").upper() != "TABLE":
        return None
    from deltalog.arrow.write import TableExistsError
    from deltalog.spark.api.table import DeltaTableBuilder
    from deltalog.spark.sql.ddl import create_spec
    from deltalog.spark.sql.refs import resolve_table

    props = expression.args.get("properties")
    like = next((p for p in (props.expressions if props is not None else []) if isinstance(p, exp.LikeProperty)),
                None)
    if like is None or not isinstance(like.this, exp.Table) or isinstance(expression.this, exp.Schema):
        return None
    spec = create_spec(expression)
    provider = (spec.provider or "").lower()
    source = resolve_table(spark, like.this)
    target = expression.this
    to_path = (target.db or "").lower() == "delta" and getattr(target.this, "quoted", False)
    if source is None and provider != "delta" and not to_path:
        return None  # no Delta table on either side: Spark's CREATE TABLE LIKE
    if provider not in ("", "delta"):
        raise refuse(text, f"a table LIKE Delta table {source.shown if source else ''} can only be a Delta table "
                           "(USING DELTA or no USING clause)")
    if expression.args.get("replace"):
        raise refuse(text, "CREATE OR REPLACE TABLE ... LIKE is not Spark syntax; drop the table first")
    mode = "createIfNotExists" if expression.args.get("exists") else "create"
    builder = DeltaTableBuilder(spark, mode)
    builder = builder.location(target.name) if to_path else builder.tableName(target.sql(dialect=DIALECT))
    if spec.location and not to_path:
        builder = builder.location(spec.location)
    fields, partitions, clustering, description, configuration = \
        _shape_of_delta(source.location) if source is not None else _shape_of_catalog(spark, like.this)
    builder = builder.addColumns(fields)
    if partitions:
        builder = builder.partitionedBy(*partitions)
    if clustering:
        builder = builder.clusterBy(*clustering)
    comment = spec.comment if spec.comment is not None else description
    if comment is not None:
        builder = builder.comment(comment)
    for key, value in {**configuration, **spec.properties}.items():
        builder = builder.property(key, str(value))
    try:
        builder.execute()
    except TableExistsError:
        raise TableExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] cannot create table {target.sql(dialect=DIALECT)}: "
                               "it already exists; use CREATE TABLE IF NOT EXISTS ... LIKE, or drop it first",
                               table=target.sql(dialect=DIALECT)) from None
    return empty_result(spark)


def _shape_of_delta(location: str) -> tuple[Any, list[str], list[str], str | None, dict[str, str]]:
    from deltalog.commands.clustering import clustering_of
    from deltalog.protocol.schema import parse_schema
    from deltalog.spark.common.core import load_snapshot, spark_schema

    snapshot = load_snapshot(location)
    struct = json.loads(snapshot.schema.to_json())
    for f in struct["fields"]:
        _drop_keys(f)
    configuration = {k: v for k, v in snapshot.metadata.configuration.items()
                     if not k.startswith(_NOT_COPIED)}
    # (spark_schema: geospatial types as PySpark spells them, e.g. geography(OGC:CRS84, SPHERICAL))
    schema = spark_schema(parse_schema(json.dumps(struct), table=location).fields, keep_metadata=True)
    return (schema, list(snapshot.partition_columns), clustering_of(snapshot) or [], snapshot.metadata.description,
            configuration)


def _drop_keys(node: Any) -> None:
    """Remove the per-table column metadata from a field (its nested fields too), in place."""
    if isinstance(node, dict):
        meta = node.get("metadata")
        if isinstance(meta, dict):
            for key in _FIELD_KEYS_DROPPED:
                meta.pop(key, None)
        for value in node.values():
            _drop_keys(value)
    elif isinstance(node, list):
        for value in node:
            _drop_keys(value)


def _shape_of_catalog(spark: Any, table: Any) -> tuple[Any, list[str], list[str], str | None, dict[str, str]]:
    name = table.sql(dialect=DIALECT)
    columns = spark.catalog.listColumns(name)
    partitions = [c.name for c in columns if c.isPartition]
    schema = spark.table(name).schema
    return schema, partitions, [], None, {}
