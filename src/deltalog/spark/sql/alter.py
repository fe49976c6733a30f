"""``ALTER TABLE`` on Delta tables: constraints, properties, columns (add, rename, drop, comment, type
widening, nullability, defaults), clustering, ``DROP FEATURE``, and the catalog-only ``RENAME TO`` and
``SET LOCATION``. Column moves and ``SYNC IDENTITY``, which sqlglot leaves as text, are in
:mod:`deltalog.spark.sql.alter_column`.

Example:
    >>> spark.sql("ALTER TABLE people ADD COLUMNS (age INT)")                          # doctest: +SKIP
    >>> spark.sql("ALTER TABLE people SET TBLPROPERTIES ('delta.appendOnly' = 'true')")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from deltalog.errors import TableNotFoundError
from deltalog.spark.catalog.dialect import DIALECT, string_value
from deltalog.spark.catalog.entries import TableName, alter_entry, forget, raw_sql, sync_schema
from deltalog.spark.common import compat
from deltalog.spark.sql.column_defs import (
    check_defaults,
    cluster_names,
    defaults_not_enabled,
    property_pairs,
    spark_default,
    struct_from_columns,
    type_obj,
)
from deltalog.spark.sql.refs import TableRef, resolve_table
from deltalog.spark.sql.shared import empty_result, refuse

__all__ = ["alter_table"]


def alter_table(spark: Any, expression: Any, text: str) -> Any:
    """Run ``ALTER TABLE`` on a Delta table (its actions in order, then the catalog entry refreshed); ``None``
    when the table is not a Delta table (Spark runs the statement).

    Example:
        >>> alter_table(spark, parse(text), text)                                 # doctest: +SKIP
        DataFrame[]
    """
    from sqlglot import exp

    ref = resolve_table(spark, expression.this)
    if ref is None:
        return None
    actions = expression.args.get("actions") or []
    if len(actions) == 1 and isinstance(actions[0], exp.AlterRename):
        return _rename(spark, ref, actions[0], text)
    if len(actions) == 1 and isinstance(actions[0], exp.AlterSet) and actions[0].args.get("location") is not None:
        return _set_location(spark, ref, actions[0].args["location"], text)
    table = _kernel_table(ref)
    for action in actions:
        if isinstance(action, exp.AddConstraint):
            check = action.find(exp.CheckColumnConstraint)
            constraint = action.find(exp.Constraint)
            if check is None or constraint is None:
                raise refuse(text, "only named CHECK constraints can be added to a Delta table")
            table.add_constraint(constraint.name, check.this.sql(dialect=DIALECT))
        elif isinstance(action, exp.RenameColumn):
            table.rename_column(_column_path(action.this), action.args["to"].name)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() in ("COLUMN", "COLUMNS"):
            paths = []
            for item in action.args.get("tables") or []:
                nodes = item.expressions if isinstance(item, exp.Schema) else [item]
                paths += [_column_path(n) for n in nodes]
            table.drop_columns(paths, if_exists=bool(action.args.get("exists")))
        elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() == "CONSTRAINT":
            tables = action.args.get("tables") or []
            dropped = tables[0].name if tables else action.name
            table.drop_constraint(dropped, if_exists=bool(action.args.get("exists")))
        elif isinstance(action, exp.AlterSet):
            props = action.find(exp.Properties)
            pairs = property_pairs(props.expressions if props is not None else [])
            if not pairs:
                raise refuse(text, "only SET TBLPROPERTIES and SET LOCATION are supported among ALTER TABLE ... SET")
            table.set_properties(pairs)
        elif isinstance(action, exp.Schema):
            _add_columns(spark, table, action.expressions, text)
        elif isinstance(action, exp.ColumnDef):  # ADD COLUMN c TYPE
            _add_columns(spark, table, [action], text)
        elif isinstance(action, exp.AlterColumn):
            _alter_column(spark, table, action, text)
        elif isinstance(action, exp.ClusterProperty):  # ALTER TABLE t CLUSTER BY (a, b)
            table.cluster_by(cluster_names(action))
        elif isinstance(action, exp.Command) and str(action.this).upper() == "DROP":  # DROP FEATURE f
            _drop_feature(table, str(action.expression or ""), text)
        elif isinstance(action, exp.ReplaceColumns):  # the kernel keeps each listed column's type and metadata
            from deltalog.protocol.schema import parse_schema

            check_defaults(action.expressions, "ALTER TABLE REPLACE COLUMNS", enabled=None)
            table.replace_columns(parse_schema(struct_from_columns(spark, action.expressions, identity=False)
                                               .json()).fields)
        else:
            raise refuse(text, f"{action.sql(dialect=DIALECT)} is not supported on Delta tables by deltalog")
    if ref.name is not None:
        forget(spark, ref.name)
        sync_schema(spark, ref.name, ref.location)
    return empty_result(spark)


def _rename(spark: Any, ref: TableRef, action: Any, text: str) -> Any:
    """``ALTER TABLE t RENAME TO u``: a catalog change, Spark's own (a managed table's directory moves with it,
    an external table stays where it is); the log is untouched, its paths being relative to the table."""
    if ref.name is None:
        raise refuse(text, f"{ref.shown} is named by its path, and a path has no name to change; move the "
                           "directory, or register the table (CREATE TABLE name USING DELTA LOCATION '...') and "
                           "rename that")
    new = action.this
    target = TableName(new.name, new.db or None, new.catalog or None)
    # Spark 3.5's own rename looks the table's provider up first, and it has no ``delta`` data source to find
    if compat.PYTHON_DATA_SOURCES or not alter_entry(spark, ref.name, rename_to=target):
        raw_sql(spark, text)
    forget(spark, ref.name)
    forget(spark, target)
    return empty_result(spark)


def _set_location(spark: Any, ref: TableRef, location: Any, text: str) -> Any:
    """``ALTER TABLE t SET LOCATION 'path'``: the catalog entry points at another Delta table with the same
    schema (as delta-spark; ``spark.databricks.delta.alterLocation.bypassSchemaCheck`` lets another schema
    pass); neither table's files change."""
    from deltalog.spark.common.core import load_snapshot

    if ref.name is None:
        raise refuse(text, f"{ref.shown} is named by its path; SET LOCATION changes a catalog table's location")
    target = location.name if hasattr(location, "name") else str(location)
    try:
        new = load_snapshot(target)
    except TableNotFoundError:
        raise refuse(text, f"[DELTA_TABLE_NOT_FOUND] there is no Delta table at {target!r} to point "
                           f"{ref.shown} at") from None
    bypass = str(spark.conf.get("spark.databricks.delta.alterLocation.bypassSchemaCheck", "false")).lower() == "true"
    old = load_snapshot(ref.location)
    if not bypass and _schema_shape(old.schema) != _schema_shape(new.schema):
        raise refuse(text, f"[DELTA_SET_LOCATION_SCHEMA_MISMATCH] the Delta table at {target!r} has another schema "
                           f"than {ref.shown} ({[f.name for f in new.schema.fields]} against "
                           f"{[f.name for f in old.schema.fields]}); set "
                           "spark.databricks.delta.alterLocation.bypassSchemaCheck=true to move it there anyway")
    if compat.PYTHON_DATA_SOURCES or not alter_entry(spark, ref.name, location=target):  # as RENAME (Spark 3.5)
        raw_sql(spark, text)
    forget(spark, ref.name)
    sync_schema(spark, ref.name, target)
    return empty_result(spark)


def _schema_shape(schema: Any) -> list[tuple[str, str, bool]]:
    """Column names (any case), types and nullability: what SET LOCATION compares (not metadata)."""
    import json

    def plain(node: Any) -> Any:  # nested fields' metadata (comments, column mapping ids) aside
        if isinstance(node, dict):
            return {k: plain(v) for k, v in node.items() if k != "metadata"}
        if isinstance(node, list):
            return [plain(v) for v in node]
        return node

    return [(f.name.lower(), json.dumps(plain(type_obj(f)), sort_keys=True), f.nullable) for f in schema.fields]


def _drop_feature(table: Any, words: str, text: str) -> None:
    """``DROP FEATURE name [TRUNCATE HISTORY]`` (sqlglot keeps it as text)."""
    parts = words.split()
    if len(parts) < 2 or parts[0].upper() != "FEATURE" or [p.upper() for p in parts[2:]] not in ([], ["TRUNCATE",
                                                                                                    "HISTORY"]):
        raise refuse(text, "expected ALTER TABLE t DROP FEATURE <name> [TRUNCATE HISTORY]")
    table.drop_feature(parts[1].strip("`'\""), truncate_history=len(parts) == 4)


def _column_path(node: Any) -> str:
    """``a`` or ``s.a`` of a sqlglot column (or identifier) node."""
    from sqlglot import exp

    if isinstance(node, exp.Column):
        return ".".join(p.name for p in node.parts)
    if isinstance(node, exp.Dot):  # s.a in a parenthesised list: DROP COLUMNS (v, s.a)
        return f"{_column_path(node.this)}.{_column_path(node.expression)}"
    return str(node.name)


def _kernel_table(ref: TableRef) -> Any:
    from deltalog.spark.common.core import open_table

    return open_table(ref.location)


def _add_columns(spark: Any, table: Any, columns: list[Any], text: str) -> None:
    from sqlglot import exp

    from deltalog.protocol.schema import parse_schema

    check_defaults(columns, "ALTER TABLE ADD COLUMNS", enabled=None)
    after: dict[str, str | None] = {}
    plain = []
    parents: list[tuple[str, ...]] = []
    for col in columns:  # ADD COLUMNS (c INT FIRST, s.d INT AFTER c): placed by the kernel
        col = col.copy()
        parts = [i.name for i in col.this.flatten()] if isinstance(col.this, exp.Dot) else [col.name]
        if len(parts) > 1:  # s.inner.d: the field d of the struct column s.inner
            col.set("this", exp.to_identifier(parts[-1], quoted=True))
        parents.append(tuple(parts[:-1]))
        position = col.args.get("position")
        if position is not None:
            first = str(position.args.get("position") or "").upper() == "FIRST"
            after[".".join(parts)] = None if first else position.this.name
            col.set("position", None)
        plain.append(col)
    struct = struct_from_columns(spark, plain, identity=False)
    schema = parse_schema(struct.json())
    table.add_columns([(parent, f) if parent else f for parent, f in zip(parents, schema.fields)],
                      after=after or None)


def _same_type(table: Any, column: str, type_sql: str) -> bool:
    """Whether ``column`` already has the type ``type_sql`` (``CHANGE COLUMN c c STRING COMMENT '...'`` restates
    it: only the comment changes, with or without type widening)."""
    from deltalog.spark.sql.alter_column import same_declared_type

    found = same_declared_type(table, [column], type_sql)  # a type Spark cannot parse: set_column_type names it
    return found is not None and found[0]


def _alter_column(spark: Any, table: Any, action: Any, text: str) -> None:
    from deltalog.protocol.features import writer_features
    from deltalog.spark.common.core import spark_type

    comment = action.args.get("comment") or None  # CHANGE COLUMN parses a missing comment as False
    allow_null = action.args.get("allow_null")
    default = action.args.get("default")
    dtype = action.args.get("dtype")
    renamed = action.args.get("rename_to")
    if renamed is not None and renamed.name.lower() != action.name.lower():
        raise refuse(text, "CHANGE COLUMN cannot rename a column; use ALTER TABLE ... RENAME COLUMN")
    if dtype is not None and not _same_type(table, action.name, dtype.sql(dialect=DIALECT)):
        # ALTER COLUMN c TYPE t / CHANGE COLUMN c c t to another type: type widening
        table.set_column_type(action.name, dtype.sql(dialect=DIALECT))
    if dtype is not None and comment is None:
        return
    if comment is not None:
        table.change_column(action.name, comment=string_value(comment) or comment.name)
    elif allow_null is not None:  # SET NOT NULL: allow_null=False; DROP NOT NULL: allow_null=True
        table.change_column(action.name, nullable=bool(allow_null))
    elif default is not None:  # SET DEFAULT expr: the table must enable the feature first, as in delta-spark
        snap = table.snapshot()
        if "allowColumnDefaults" not in writer_features(snap.protocol):
            defaults_not_enabled("ALTER TABLE ALTER COLUMN SET DEFAULT")
        field = next((f for f in snap.schema.fields if f.name.lower() == action.name.lower()), None)
        sql = default.sql(dialect=DIALECT)
        if field is not None:
            sql = spark_default(spark, field.name, sql, spark_type(field.type))
        table.change_column(action.name, default=sql)
    elif action.args.get("drop"):  # DROP DEFAULT
        table.change_column(action.name, drop_default=True)
    else:
        raise refuse(text, "ALTER COLUMN supports COMMENT, TYPE (type widening), SET / DROP NOT NULL and SET / DROP "
                     "DEFAULT on Delta tables")
