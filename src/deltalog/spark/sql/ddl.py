"""SQL DDL on Delta tables: ``CREATE [OR REPLACE] TABLE`` / ``REPLACE TABLE`` (with columns or ``AS SELECT``),
``ALTER TABLE`` (constraints, properties, columns), ``DESCRIBE TABLE`` and ``DROP TABLE``.

A table is named either ``delta.`<path>``` (the table at that path) or by a catalog name: the Delta table
lives at the ``LOCATION`` given, else at the managed location Spark picks under
``spark.sql.warehouse.dir``, and the catalog gets a ``USING delta`` entry for it (see
:mod:`deltalog.spark.sql.catalog`). Columns may be generated (``GENERATED ALWAYS AS``), identity or default
columns; CHECK constraints written among them are stored as ``delta.constraints.*`` properties
(:mod:`deltalog.spark.sql.create_checks`).

Example:
    >>> spark.sql("CREATE TABLE people (id BIGINT NOT NULL, name STRING) USING DELTA")   # doctest: +SKIP
    >>> spark.sql("ALTER TABLE people ADD COLUMNS (age INT)")                          # doctest: +SKIP
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from deltalog.errors import InvalidArgumentError, TableNotFoundError, UnsupportedFeatureError
from deltalog.spark._conf import default_source
from deltalog.spark.sql.catalog import (
    TableName,
    check_location,
    ensure_source,
    forget,
    lookup,
    raw_sql,
    sync_schema,
)
from deltalog.spark.sql.create_checks import check_properties, split_checks
from deltalog.spark.sql.dialect import DIALECT, sql_string, string_value
from deltalog.spark.sql.refs import TableRef, read_ref, resolve, resolve_table, rewrite_query
from deltalog.spark.sql.shared import empty_result, refuse
from deltalog.txn.defaults import CURRENT_DEFAULT, FEATURE_PROPERTY

__all__ = ["create_table", "empty_result", "handle"]


def handle(spark: Any, expression: Any, text: str) -> Any:
    """Run a DDL statement on a Delta table; ``None`` when the statement is not one (Spark runs it).

    Example:
        >>> handle(spark, parse("DROP TABLE events"), "DROP TABLE events")          # doctest: +SKIP
    """
    from sqlglot import exp

    if isinstance(expression, exp.Create) and str(expression.args.get("kind", "")).upper() == "TABLE":
        if expression.args.get("clone") is not None:
            from deltalog.spark.sql.commands import run_command

            return run_command(spark, text)
        return create_table(spark, expression, text)
    if isinstance(expression, exp.Alter) and str(expression.args.get("kind", "")).upper() == "TABLE":
        return _alter(spark, expression, text)
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


@dataclass
class CreateSpec:
    columns: list[Any] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    partition_columns: list[Any] = field(default_factory=list)
    location: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    provider: str | None = None
    clustering: list[str] | None = None
    checks: dict[str, str] = field(default_factory=dict)  # CONSTRAINT name CHECK (...): {name: sql}


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


def cluster_names(prop: Any) -> list[str]:
    """The column paths of a ``CLUSTER BY (...)`` clause.

    Example:
        >>> cluster_names(parse("ALTER TABLE t CLUSTER BY (a, s.b)").find(exp.ClusterProperty))  # doctest: +SKIP
        ['a', 's.b']
    """
    return [".".join(part.name for part in col.parts) for col in prop.expressions]


def property_pairs(props: list[Any]) -> dict[str, str]:
    """``TBLPROPERTIES`` entries as strings, as Spark stores them: keys quoted or bare (``delta.appendOnly``),
    values quoted, numbers or booleans (``true``, lower case).

    Example:
        >>> property_pairs(parse("ALTER TABLE t SET TBLPROPERTIES (a.b = true)").find(exp.Properties).expressions)
        ... # doctest: +SKIP
        {'a.b': 'true'}
    """
    from sqlglot import exp

    out: dict[str, str] = {}
    for prop in props:
        if not isinstance(prop, exp.Property):
            continue
        key_node = prop.this
        key = key_node.name if isinstance(key_node, (exp.Literal, exp.Identifier)) else \
            key_node.sql(dialect=DIALECT).replace("`", "") if key_node is not None else prop.name
        value = prop.args.get("value")
        if value is None:
            continue
        if isinstance(value, exp.Literal):
            text = value.name
        elif isinstance(value, exp.Boolean):
            text = "true" if value.this else "false"
        else:
            text = value.sql(dialect=DIALECT)
        out[str(key)] = text
    return out


def _check_defaults(columns: list[Any], command: str, *, enabled: bool | None) -> None:
    """Column ``DEFAULT``s as delta-spark takes them: only where the table enables ``allowColumnDefaults``
    (``enabled``), and never on columns added to an existing table (``enabled`` is ``None``)."""
    from sqlglot import exp

    for col in columns:
        if not any(isinstance(c.kind, exp.DefaultColumnConstraint) for c in col.args.get("constraints") or []):
            continue
        if enabled is None:
            raise InvalidArgumentError(
                f"[WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN_NOT_SUPPORTED] column {col.name}: a column "
                "added to an existing Delta table cannot have a DEFAULT; add it without one, then ALTER TABLE ... "
                "ALTER COLUMN ... SET DEFAULT")
        if not enabled:
            _defaults_not_enabled(command)


def _defaults_not_enabled(command: str) -> None:
    raise InvalidArgumentError(
        f"[WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED] {command} assigns a column DEFAULT, but the table "
        f"does not enable the allowColumnDefaults feature; add TBLPROPERTIES ('{FEATURE_PROPERTY}' = 'supported') "
        f"or run ALTER TABLE ... SET TBLPROPERTIES ('{FEATURE_PROPERTY}' = 'supported') first")


def _spark_default(spark: Any, column: str, sql: str, dtype: Any) -> str:
    """``sql`` checked as a default of ``column``: a constant expression Spark can cast to ``dtype``."""
    from pyspark.sql import functions as F

    from deltalog.txn.defaults import default_metadata

    default_metadata(sql, column=column)  # names no column
    try:
        spark.range(0).select().select(F.expr(sql).cast(dtype)).schema  # noqa: B018 -- no column to name
    except Exception as exc:
        raise InvalidArgumentError(f"[INVALID_DEFAULT_VALUE] column {column}: DEFAULT {sql} is not a valid default "
                                   f"of type {dtype.simpleString()} ({str(exc).splitlines()[0]})") from None
    return sql


def _struct_from_columns(spark: Any, columns: list[Any], *, identity: bool = True) -> Any:
    """The ``pyspark.sql.types.StructType`` of column definitions, parsed by Spark itself; identity columns
    (``GENERATED ALWAYS | BY DEFAULT AS IDENTITY [(START WITH s INCREMENT BY i)]``) get their field metadata
    (refused where ``identity`` is false: columns added to an existing table)."""
    from pyspark.sql.types import StructField, StructType
    from sqlglot import exp

    from deltalog.spark.builder import IdentityGenerator, identity_field_metadata
    from deltalog.txn.constraints import CHAR_VARCHAR_KEY
    from deltalog.txn.generated import generated_metadata

    plain, generators, expressions, defaults = [], {}, {}, {}
    chars: dict[str, str] = {}  # CHAR(n) / VARCHAR(n): stored as string, the declared type in the metadata
    texts = (exp.DataType.Type.CHAR, exp.DataType.Type.VARCHAR, exp.DataType.Type.NCHAR, exp.DataType.Type.NVARCHAR)
    for col in columns:
        kind = col.args.get("kind")
        if isinstance(kind, exp.DataType) and any(t.this in texts for t in kind.find_all(exp.DataType)):
            if kind.this not in texts:
                raise InvalidArgumentError(
                    f"column {col.name!r}: CHAR/VARCHAR inside a struct, array or map is not supported (deltalog "
                    "checks the length of top-level CHAR/VARCHAR columns only); use STRING there")
            chars[col.name] = kind.sql(dialect=DIALECT).lower()
            col = col.copy()
            for t in list(col.args["kind"].find_all(exp.DataType)):
                if t.this in texts:
                    t.replace(exp.DataType.build("STRING"))
        given = [c for c in col.args.get("constraints") or [] if isinstance(c.kind, exp.DefaultColumnConstraint)]
        if given:  # DEFAULT expr: CURRENT_DEFAULT (checked by the callers: _check_defaults)
            defaults[col.name] = given[0].kind.this.sql(dialect=DIALECT)
            col = col.copy()
            col.set("constraints", [c for c in col.args.get("constraints") or []
                                    if not isinstance(c.kind, exp.DefaultColumnConstraint)])
        computed = [c for c in col.args.get("constraints") or [] if isinstance(c.kind, exp.ComputedColumnConstraint)]
        if computed:  # GENERATED ALWAYS AS (expr): a generated column
            if not identity:
                raise UnsupportedFeatureError(
                    f"[DELTA_GENERATED_COLUMNS_ALTER_NOT_SUPPORTED] column {col.name}: a generated column cannot be "
                    "added to an existing table", feature="generatedColumns")
            expressions[col.name] = computed[0].kind.this.sql(dialect=DIALECT)
            col = col.copy()
            col.set("constraints", [c for c in col.args.get("constraints") or []
                                    if not isinstance(c.kind, exp.ComputedColumnConstraint)])
        found = [c for c in col.args.get("constraints") or []
                 if isinstance(c.kind, exp.GeneratedAsIdentityColumnConstraint)]
        if not found:
            plain.append(col)
            continue
        if not identity:
            raise UnsupportedFeatureError(
                f"[DELTA_IDENTITY_COLUMNS_ALTER_NOT_SUPPORTED] column {col.name}: an identity column cannot be "
                "added to an existing table", feature="identityColumns")
        kind = found[0].kind
        start, step = (int(_literal_value(kind.args.get(k), default)) for k, default in (("start", 1),
                                                                                          ("increment", 1)))
        generators[col.name] = (IdentityGenerator(start, step), bool(kind.this))
        stripped = col.copy()
        stripped.set("constraints", [c for c in stripped.args.get("constraints") or []
                                     if not isinstance(c.kind, exp.GeneratedAsIdentityColumnConstraint)])
        plain.append(stripped)
    ddl = ", ".join(c.sql(dialect=DIALECT) for c in plain)
    try:
        struct = spark.createDataFrame([], ddl).schema
    except Exception as exc:
        raise InvalidArgumentError(f"the column definitions cannot be parsed: {ddl} ({str(exc).splitlines()[0]})") \
            from None
    if not generators and not expressions and not defaults and not chars:
        return struct
    fields = []
    for f in struct.fields:
        if f.name in chars:  # as Spark keeps a CHAR / VARCHAR column (the writes check the length)
            f = StructField(f.name, f.dataType, f.nullable, {**(f.metadata or {}), CHAR_VARCHAR_KEY: chars[f.name]})
        if f.name in defaults:
            f = StructField(f.name, f.dataType, f.nullable, {**(f.metadata or {}),
                            CURRENT_DEFAULT: _spark_default(spark, f.name, defaults[f.name], f.dataType)})
        if f.name in expressions:
            f = StructField(f.name, f.dataType, f.nullable,
                            {**(f.metadata or {}), **generated_metadata(expressions[f.name])})
        if f.name in generators:
            generator, always = generators[f.name]
            meta = {**(f.metadata or {}), **identity_field_metadata(f.name, f.dataType, generator, always=always)}
            f = StructField(f.name, f.dataType, f.nullable, meta)
        fields.append(f)
    return StructType(fields)


def _literal_value(node: Any, default: int) -> Any:
    if node is None:
        return default
    text = node.sql(dialect=DIALECT)
    try:
        return int(text)
    except ValueError:
        raise InvalidArgumentError(f"an identity column's START WITH / INCREMENT BY must be an integer, got {text}") \
            from None


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
    _check_defaults([*spec.columns, *spec.partition_columns], "CREATE TABLE",
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
            _struct_from_columns(spark, [*spec.columns, *spec.partition_columns]), spec.checks, spec.properties,
            table=name.qualified if name is not None else str(path)))
    if name is not None and entry is None:
        if df is not None:
            struct = df.schema
        elif spec.columns or spec.partition_columns:
            struct = _struct_from_columns(spark, [*spec.columns, *spec.partition_columns])
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
    from deltalog.spark._common import load_snapshot, spark_schema

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
    from deltalog.spark._common import open_table

    try:
        open_table(location).snapshot()
    except TableNotFoundError:
        return False
    return True


def register_table(
    spark: Any, name: TableName, struct: Any, spec: CreateSpec, location: str | None
) -> tuple[str, bool]:
    """Create the catalog entry (``USING delta``); returns the table's location and whether it is managed."""
    ensure_source(spark)
    from deltalog.protocol.schema import parse_schema
    from deltalog.spark.sql.table_ops import type_ddl

    fields = parse_schema(struct.json()).fields  # quoted names at every depth (simpleString quotes none)
    columns = ", ".join(f"`{f.name.replace('`', '``')}` {type_ddl(f.type)}" for f in fields)
    parts = f" PARTITIONED BY ({', '.join('`' + p + '`' for p in spec.partitions)})" if spec.partitions else ""
    where = f" LOCATION {sql_string(location)}" if location else ""
    comment = f" COMMENT {sql_string(spec.comment)}" if spec.comment else ""
    raw_sql(spark, f"CREATE TABLE {name.sql()} ({columns}) USING delta{parts}{where}{comment}")
    forget(spark, name)
    entry = lookup(spark, name)
    if entry is None:  # pragma: no cover -- Spark just created it
        raise TableNotFoundError(f"the catalog entry of {name.qualified} vanished right after it was created")
    return entry.location, entry.managed


def _create_empty(
    spark: Any, location: str, spec: CreateSpec, *, replace: bool, must_exist: bool, if_not_exists: bool,
    registering: bool, managed: bool = False,
) -> None:
    from deltalog.spark.builder import DeltaTableBuilder

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
    builder.addColumns(_struct_from_columns(spark, [*spec.columns, *spec.partition_columns]))
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
    from deltalog.spark._common import load_snapshot

    given = _struct_from_columns(spark, spec.columns)
    snap = load_snapshot(location)
    have = [(f.name.lower(), _type_obj(f)) for f in snap.schema.fields]
    want = [(f.name.lower(), f.dataType.jsonValue()) for f in given.fields]
    if have != want:
        raise InvalidArgumentError(
            f"[DELTA_CREATE_TABLE_SCHEME_MISMATCH] the schema given does not match the existing Delta table at "
            f"{location}: {[n for n, _ in want]} vs {[n for n, _ in have]}")


def _type_obj(f: Any) -> Any:
    from deltalog.protocol.schema import StructType

    return json.loads(StructType((f,)).to_json())["fields"][0]["type"]


def _create_as_select(
    spark: Any, df: Any, location: str, spec: CreateSpec, *, replace: bool, managed: bool, exists: bool,
    if_not_exists: bool,
) -> None:
    from deltalog.spark.write import write

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


# -------------------------------------------------------------------------------------------- ALTER


def _alter(spark: Any, expression: Any, text: str) -> Any:
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

            _check_defaults(action.expressions, "ALTER TABLE REPLACE COLUMNS", enabled=None)
            table.replace_columns(parse_schema(_struct_from_columns(spark, action.expressions, identity=False)
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
    raw_sql(spark, text)
    forget(spark, ref.name)
    new = action.this
    forget(spark, TableName(new.name, new.db or None, new.catalog or None))
    return empty_result(spark)


def _set_location(spark: Any, ref: TableRef, location: Any, text: str) -> Any:
    """``ALTER TABLE t SET LOCATION 'path'``: the catalog entry points at another Delta table with the same
    schema (as delta-spark; ``spark.databricks.delta.alterLocation.bypassSchemaCheck`` lets another schema
    pass); neither table's files change."""
    from deltalog.spark._common import load_snapshot

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

    return [(f.name.lower(), json.dumps(plain(_type_obj(f)), sort_keys=True), f.nullable) for f in schema.fields]


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
    from deltalog.spark._common import open_table

    return open_table(ref.location)


def _add_columns(spark: Any, table: Any, columns: list[Any], text: str) -> None:
    from sqlglot import exp

    from deltalog.protocol.schema import parse_schema

    _check_defaults(columns, "ALTER TABLE ADD COLUMNS", enabled=None)
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
    struct = _struct_from_columns(spark, plain, identity=False)
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
    from deltalog.spark._common import spark_type

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
            _defaults_not_enabled("ALTER TABLE ALTER COLUMN SET DEFAULT")
        field = next((f for f in snap.schema.fields if f.name.lower() == action.name.lower()), None)
        sql = default.sql(dialect=DIALECT)
        if field is not None:
            sql = _spark_default(spark, field.name, sql, spark_type(field.type))
        table.change_column(action.name, default=sql)
    elif action.args.get("drop"):  # DROP DEFAULT
        table.change_column(action.name, drop_default=True)
    else:
        raise refuse(text, "ALTER COLUMN supports COMMENT, TYPE (type widening), SET / DROP NOT NULL and SET / DROP "
                     "DEFAULT on Delta tables")


# -------------------------------------------------------------------------------------------- DESCRIBE


def _describe(spark: Any, expression: Any) -> Any:
    """``DESCRIBE [TABLE] [EXTENDED]`` of a Delta table: its columns (and partitioning) from the log."""
    from deltalog.spark._common import load_snapshot, spark_type, table_properties
    from deltalog.txn.constraints import CHAR_VARCHAR_KEY

    ref = resolve_table(spark, expression.this)
    if ref is None:
        return None
    snap = load_snapshot(ref.location)
    rows = [(f.name, f.metadata.get(CHAR_VARCHAR_KEY) or spark_type(f.type).simpleString(), f.metadata.get("comment"))
            for f in snap.schema.fields]
    if snap.partition_columns:
        rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
        rows += [r for r in rows[: len(snap.schema.fields)] if r[0] in snap.partition_columns]
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
