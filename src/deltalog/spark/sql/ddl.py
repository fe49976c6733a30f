"""SQL DDL on Delta tables: ``CREATE [OR REPLACE] TABLE`` / ``REPLACE TABLE`` (with columns or ``AS SELECT``),
``ALTER TABLE`` (run by :mod:`deltalog.spark.sql.alter`), ``DESCRIBE TABLE`` and ``DROP TABLE``.

A table is named either ``delta.`<path>``` (the table at that path) or by a catalog name: the Delta table
lives at the ``LOCATION`` given, else at the managed location Spark picks under
``spark.sql.warehouse.dir``, and the catalog gets a ``USING delta`` entry for it (see
:mod:`deltalog.spark.catalog.entries`). Columns may be generated (``GENERATED ALWAYS AS``), identity or default
columns (read by :mod:`deltalog.spark.sql.column_defs`); CHECK constraints written among them are stored as
``delta.constraints.*`` properties (:mod:`deltalog.spark.sql.create_checks`).

Example:
    >>> spark.sql("CREATE TABLE people (id BIGINT NOT NULL, name STRING) USING DELTA")   # doctest: +SKIP
    >>> spark.sql("ALTER TABLE people ADD COLUMNS (age INT)")                          # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from deltalog.errors import InvalidArgumentError, TableNotFoundError
from deltalog.spark.catalog.create import CreateSpec, register_table
from deltalog.spark.catalog.dialect import string_value
from deltalog.spark.catalog.entries import (
    TableName,
    check_location,
    forget,
    lookup,
    raw_sql,
)
from deltalog.spark.common.conf import default_source
from deltalog.spark.sql.alter import alter_table
from deltalog.spark.sql.column_defs import (
    check_defaults,
    cluster_names,
    property_pairs,
    struct_from_columns,
    type_obj,
)
from deltalog.spark.sql.create_checks import check_properties, split_checks
from deltalog.spark.sql.refs import read_ref, resolve, resolve_table, rewrite_query
from deltalog.spark.sql.shared import empty_result, refuse
from deltalog.txn.defaults import FEATURE_PROPERTY

__all__ = ["create_table", "empty_result", "handle"]


def handle(spark: Any, expression: Any, text: str) -> Any:
    """Run a DDL statement on a Delta table; ``None`` when the statement is not one (Spark runs it).

    Example:
        >>> handle(spark, parse("DROP TABLE events"), "DROP TABLE events")          # doctest: +SKIP
    """
    from sqlglot import exp

    if isinstance(expression, exp.Create) and str(expression.args.get("kind", "")).upper() == "TABLE":
        if expression.args.get("clone") is not None:
            return None  # CREATE TABLE ... CLONE: a table command (deltalog.spark.sql.commands)
        return create_table(spark, expression, text)
    if isinstance(expression, exp.Alter) and str(expression.args.get("kind", "")).upper() == "TABLE":
        return alter_table(spark, expression, text)
    if isinstance(expression, exp.Describe) and isinstance(expression.this, exp.Table) and \
            str(expression.args.get("style") or "").upper() not in ("HISTORY", "DETAIL"):
        return _describe(spark, expression)
    if isinstance(expression, exp.Drop):
        result = raw_sql(spark, text)
        for table in expression.args.get("tables") or [expression.this]:
            if isinstance(table, exp.Table):
                forget(spark, TableName(table.name, table.db or None, table.catalog or None))
        return result
    return None


# ------------------------------------------------------------------------------------------- CREATE


def _hive_format(expression: Any) -> bool:
    """Whether ``CREATE TABLE`` asks for a Hive table (``ROW FORMAT ...``; ``STORED AS`` names a provider)."""
    from sqlglot import exp

    props = expression.args.get("properties")
    return any(isinstance(p, (exp.RowFormatDelimitedProperty, exp.RowFormatSerdeProperty))
               for p in (props.expressions if props is not None else []))


def create_spec(expression: Any) -> CreateSpec:
    from sqlglot import exp

    spec = CreateSpec()
    if isinstance(expression.this, exp.Schema):
        spec.columns, spec.checks = split_checks(list(expression.this.expressions))
    props = expression.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if isinstance(prop, exp.FileFormatProperty):
            spec.provider = prop.name if prop.this is not None else None
        elif isinstance(prop, exp.PartitionedByProperty):
            items = prop.this.expressions if isinstance(prop.this, (exp.Schema, exp.Tuple)) else [prop.this]
            for item in items:
                if isinstance(item, exp.ColumnDef):
                    spec.partition_columns.append(item)
                    spec.partitions.append(item.name)
                else:
                    spec.partitions.append(item.name)
        elif isinstance(prop, exp.LocationProperty):
            text = string_value(prop.this)
            spec.location = text if text is not None else prop.this.sql()
        elif isinstance(prop, exp.SchemaCommentProperty):
            spec.comment = string_value(prop.this) or prop.this.name
        elif isinstance(prop, exp.ClusterProperty):  # CLUSTER BY (a, b.c): liquid clustering
            spec.clustering = cluster_names(prop)
        elif isinstance(prop, exp.Property):
            spec.properties.update(property_pairs([prop]))
    comment = next((k for k in spec.properties if k.lower() == "comment"), None)
    if comment is not None:  # as delta-spark: the table's description (Spark's reserved key), no configuration
        given = spec.properties.pop(comment)
        spec.comment = spec.comment if spec.comment is not None else given
    return spec


def _target(spark: Any, table: Any) -> tuple[TableName | None, str | None]:
    if (table.db or "").lower() == "delta" and getattr(table.this, "quoted", False):
        return None, table.name
    return TableName(table.name, table.db or None, table.catalog or None), None


def create_table(spark: Any, expression: Any, text: str, *, must_exist: bool = False) -> Any:
    """``CREATE [OR REPLACE] TABLE ... USING DELTA`` (``must_exist``: ``REPLACE TABLE``); ``None`` for other
    providers.

    Example:
        >>> create_table(spark, parse("CREATE TABLE t (id INT) USING DELTA"), "...")    # doctest: +SKIP
    """
    from sqlglot import exp

    spec = create_spec(expression)
    table = expression.this.this if isinstance(expression.this, exp.Schema) else expression.this
    name, path = _target(spark, table)
    if spec.provider is None and path is None and not _hive_format(expression):
        spec.provider = default_source(spark, create_table=True)  # no USING: spark.sql.sources.default, as Spark
    if path is None and (spec.provider or "").lower() != "delta":
        return None
    check_defaults([*spec.columns, *spec.partition_columns], "CREATE TABLE",
                    enabled=str(spec.properties.get(FEATURE_PROPERTY, "")).lower() in ("supported", "enabled"))
    replace = bool(expression.args.get("replace")) or must_exist
    if_not_exists = bool(expression.args.get("exists"))
    query = expression.expression
    entry = lookup(spark, name) if name is not None else None
    if entry is not None and not entry.is_delta:
        raise refuse(text, f"{name.qualified if name else ''} exists and is not a Delta table "
                     f"(provider {entry.provider or 'unknown'}); drop it first")
    if entry is not None and not replace:
        if if_not_exists:
            return _empty(spark)
        raise InvalidArgumentError(
            f"[TABLE_OR_VIEW_ALREADY_EXISTS] cannot create table {name.qualified}: it already exists; use "  # type: ignore[union-attr]
            "CREATE OR REPLACE TABLE or IF NOT EXISTS")
    if must_exist and entry is None and path is None:
        raise TableNotFoundError(
            f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] table {name.qualified} cannot be replaced: it does not exist; "  # type: ignore[union-attr]
            "use CREATE OR REPLACE TABLE")
    if entry is not None and name is not None:  # a replace: the table keeps its location
        check_location(name.qualified, entry.location, spec.location)
    registered = False
    location = path or (entry.location if entry is not None else spec.location)
    managed = entry is not None and entry.managed
    df = None
    if query is not None:
        df = rewrite_query(spark, query).sql(spark)
    if spec.checks:
        if df is not None:
            raise refuse(text, "CHECK constraints cannot be declared in CREATE TABLE ... AS SELECT; add them "
                               "afterwards with ALTER TABLE ... ADD CONSTRAINT <name> CHECK (<condition>)")
        spec.properties.update(check_properties(
            struct_from_columns(spark, [*spec.columns, *spec.partition_columns]), spec.checks, spec.properties,
            table=name.qualified if name is not None else str(path)))
    if name is not None and entry is None:
        if df is not None:
            struct = df.schema
        elif spec.columns or spec.partition_columns:
            struct = struct_from_columns(spark, [*spec.columns, *spec.partition_columns])
        else:  # CREATE TABLE t USING DELTA LOCATION '<a Delta table>': its schema and partitioning come from the log
            struct, spec.partitions = _log_schema(location, text)
        location, managed = register_table(spark, name, struct, spec, location)
        registered = True
    assert location is not None
    try:
        if df is not None:
            _create_as_select(spark, df, location, spec, replace=replace, managed=managed,
                              exists=_exists(location), if_not_exists=if_not_exists)
        else:
            _create_empty(spark, location, spec, replace=replace, must_exist=must_exist, if_not_exists=if_not_exists,
                          registering=registered, managed=managed)
    except BaseException:
        if registered and name is not None:
            raw_sql(spark, f"DROP TABLE IF EXISTS {name.sql()}")
            forget(spark, name)
        raise
    if name is not None:
        forget(spark, name)
    return _empty(spark)


def _log_schema(location: str | None, text: str) -> tuple[Any, list[str]]:
    from deltalog.spark.common.core import load_snapshot, spark_schema

    if location is None or not _exists(location):
        raise InvalidArgumentError(
            "[DELTA_SCHEMA_NOT_PROVIDED] the table needs columns (or AS SELECT), or a LOCATION holding a Delta "
            f"table{f' ({location} holds none)' if location else ''}; statement: {' '.join(text.split())[:160]}")
    snap = load_snapshot(location)
    return spark_schema(list(snap.schema.fields)), list(snap.partition_columns)


def _empty(spark: Any) -> Any:
    return empty_result(spark)


def _exists(location: str) -> bool:
    from deltalog.errors import TableNotFoundError
    from deltalog.spark.common.core import open_table

    try:
        open_table(location).snapshot()
    except TableNotFoundError:
        return False
    return True


def _create_empty(
    spark: Any, location: str, spec: CreateSpec, *, replace: bool, must_exist: bool, if_not_exists: bool,
    registering: bool, managed: bool = False,
) -> None:
    from deltalog.spark.api.table import DeltaTableBuilder

    existing = _exists(location)
    if existing and not replace:
        if not spec.columns:
            return  # CREATE TABLE name USING DELTA LOCATION '<existing Delta table>': register it as it is
        if if_not_exists:
            return
        _check_same_schema(spark, location, spec)
        return
    if not spec.columns and not spec.partition_columns:
        raise InvalidArgumentError(
            "[DELTA_SCHEMA_NOT_PROVIDED] the table needs columns (or AS SELECT), or a LOCATION holding a Delta "
            "table")
    mode = "createOrReplace" if replace and not must_exist else "replace" if must_exist else "create"
    if mode == "replace" and not existing:
        mode = "createOrReplace" if registering else "replace"
    builder = DeltaTableBuilder(spark, mode, managed=managed).location(location)
    builder.addColumns(struct_from_columns(spark, [*spec.columns, *spec.partition_columns]))
    if spec.partitions:
        builder.partitionedBy(*spec.partitions)
    if spec.clustering:
        builder.clusterBy(*spec.clustering)
    for key, value in spec.properties.items():
        builder.property(key, value)
    if spec.comment is not None:
        builder.comment(spec.comment)
    builder.execute()


def _check_same_schema(spark: Any, location: str, spec: CreateSpec) -> None:
    from deltalog.spark.common.core import load_snapshot

    given = struct_from_columns(spark, spec.columns)
    snap = load_snapshot(location)
    have = [(f.name.lower(), type_obj(f)) for f in snap.schema.fields]
    want = [(f.name.lower(), f.dataType.jsonValue()) for f in given.fields]
    if have != want:
        raise InvalidArgumentError(
            f"[DELTA_CREATE_TABLE_SCHEME_MISMATCH] the schema given does not match the existing Delta table at "
            f"{location}: {[n for n, _ in want]} vs {[n for n, _ in have]}")



def _create_as_select(
    spark: Any, df: Any, location: str, spec: CreateSpec, *, replace: bool, managed: bool, exists: bool,
    if_not_exists: bool,
) -> None:
    from deltalog.spark.writes.save import write

    if exists and not replace:
        if if_not_exists:
            return
        raise InvalidArgumentError(f"[DELTA_TABLE_ALREADY_EXISTS] a Delta table already exists at {location}")
    kind = "CREATE OR REPLACE TABLE AS SELECT" if replace and exists else \
        "REPLACE TABLE AS SELECT" if replace else "CREATE TABLE AS SELECT"
    options: dict[str, Any] = {}
    if exists:
        options["overwriteSchema"] = "true"
    write(df, location, mode="overwrite" if exists else "errorifexists", partitionBy=spec.partitions or None,
          clusterBy=spec.clustering or None, _statement={"kind": kind, "description": spec.comment, "managed": managed,
                      "properties": dict(spec.properties)}, **options)


# -------------------------------------------------------------------------------------------- DESCRIBE


def _describe(spark: Any, expression: Any) -> Any:
    """``DESCRIBE [TABLE] [EXTENDED]`` of a Delta table: its columns (and partitioning) from the log."""
    from deltalog.spark.common.core import load_snapshot, spark_type, table_properties
    from deltalog.txn.constraints import CHAR_VARCHAR_KEY

    ref = resolve_table(spark, expression.this)
    if ref is None:
        return None
    snap = load_snapshot(ref.location)
    rows = [(f.name, f.metadata.get(CHAR_VARCHAR_KEY) or spark_type(f.type).simpleString(), f.metadata.get("comment"))
            for f in snap.schema.fields]
    # Spark's layout for a catalog's own (v2) tables, which delta-spark's are
    rows += [("", "", ""), ("# Partitioning", "", "")]
    rows += [(f"Part {i}", c, "") for i, c in enumerate(snap.partition_columns)] or [("Not partitioned", "", "")]
    if str(expression.args.get("style") or "").upper() in ("EXTENDED", "FORMATTED"):
        rows += [("", "", ""), ("# Detailed Table Information", "", ""),
                 ("Name", ref.shown, ""),
                 *([("Comment", snap.metadata.description, "")] if snap.metadata.description else []),
                 ("Location", ref.location, ""), ("Provider", "delta", ""),
                 ("Type", "MANAGED" if ref.managed else "EXTERNAL", ""),
                 ("Table Properties", "[" + ",".join(f"{k}={v}" for k, v in table_properties(snap).items()) + "]",
                  "")]
    return spark.createDataFrame(rows, "col_name string, data_type string, comment string")


# --------------------------------------------------------------------------------- used by commands


def read_table(spark: Any, text: str) -> Any:
    """deltalog's read of a table named in text (``t``, ``delta.`/p```): for ``CLONE`` sources and
    ``CONVERT`` checks.

    Example:
        >>> read_table(spark, "events").count()                                   # doctest: +SKIP
        1000
    """
    return read_ref(spark, resolve(spark, text))
