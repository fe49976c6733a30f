"""Column definitions of SQL DDL, read the way Spark and delta-spark read them: the types Spark parses from a
column list (with identity, generated, ``DEFAULT`` and ``CHAR``/``VARCHAR`` columns carried in field
metadata), ``TBLPROPERTIES`` pairs and ``CLUSTER BY`` columns. Shared by ``CREATE``/``REPLACE TABLE``
(:mod:`deltalog.spark.sql.ddl`) and ``ALTER TABLE`` (:mod:`deltalog.spark.sql.alter`).

Example:
    >>> struct_from_columns(spark, parse("CREATE TABLE t (id BIGINT)").this.expressions)  # doctest: +SKIP
    StructType([StructField('id', LongType(), True)])
"""

from __future__ import annotations

import json
from typing import Any

from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.spark.catalog.dialect import DIALECT
from deltalog.txn.defaults import CURRENT_DEFAULT, FEATURE_PROPERTY

__all__ = [
    "check_defaults", "cluster_names", "defaults_not_enabled", "property_pairs", "spark_default", "struct_from_columns",
    "type_obj",
]


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


def check_defaults(columns: list[Any], command: str, *, enabled: bool | None) -> None:
    """Column ``DEFAULT``s as delta-spark takes them: only where the table enables ``allowColumnDefaults``
    (``enabled``), and never on columns added to an existing table (``enabled`` is ``None``).

    Example:
        >>> check_defaults(parse("CREATE TABLE t (a INT DEFAULT 1)").this.expressions, "CREATE TABLE",
        ...                enabled=False)                                        # doctest: +SKIP
        Traceback (most recent call last):
        InvalidArgumentError: [WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED] CREATE TABLE assigns ...
    """
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
            defaults_not_enabled(command)


def defaults_not_enabled(command: str) -> None:
    """Refuse ``command``: it assigns a column ``DEFAULT`` on a table without the ``allowColumnDefaults`` feature.

    Example:
        >>> defaults_not_enabled("ALTER TABLE ALTER COLUMN SET DEFAULT")              # doctest: +SKIP
        Traceback (most recent call last):
        InvalidArgumentError: [WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED] ALTER TABLE ALTER COLUMN ...
    """
    raise InvalidArgumentError(
        f"[WRONG_COLUMN_DEFAULTS_FOR_DELTA_FEATURE_NOT_ENABLED] {command} assigns a column DEFAULT, but the table "
        f"does not enable the allowColumnDefaults feature; add TBLPROPERTIES ('{FEATURE_PROPERTY}' = 'supported') "
        f"or run ALTER TABLE ... SET TBLPROPERTIES ('{FEATURE_PROPERTY}' = 'supported') first")


def spark_default(spark: Any, column: str, sql: str, dtype: Any) -> str:
    """``sql`` checked as a default of ``column``: a constant expression Spark can cast to ``dtype``.

    Example:
        >>> spark_default(spark, "n", "42", IntegerType())                          # doctest: +SKIP
        '42'
    """
    from pyspark.sql import functions as F

    from deltalog.txn.defaults import default_metadata

    default_metadata(sql, column=column)  # names no column
    try:
        spark.range(0).select().select(F.expr(sql).cast(dtype)).schema  # noqa: B018 -- no column to name
    except Exception as exc:
        raise InvalidArgumentError(f"[INVALID_DEFAULT_VALUE] column {column}: DEFAULT {sql} is not a valid default "
                                   f"of type {dtype.simpleString()} ({str(exc).splitlines()[0]})") from None
    return sql


def struct_from_columns(spark: Any, columns: list[Any], *, identity: bool = True) -> Any:
    """The ``pyspark.sql.types.StructType`` of column definitions, parsed by Spark itself; identity columns
    (``GENERATED ALWAYS | BY DEFAULT AS IDENTITY [(START WITH s INCREMENT BY i)]``) get their field metadata
    (refused where ``identity`` is false: columns added to an existing table).

    Example:
        >>> struct_from_columns(spark, parse("CREATE TABLE t (a INT, b STRING)").this.expressions)  # doctest: +SKIP
        StructType([StructField('a', IntegerType(), True), StructField('b', StringType(), True)])
    """
    from pyspark.sql.types import StructField, StructType
    from sqlglot import exp

    from deltalog.spark.columns.identity_generator import IdentityGenerator, identity_field_metadata
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
        if given:  # DEFAULT expr: CURRENT_DEFAULT (checked by the callers: check_defaults)
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
                            CURRENT_DEFAULT: spark_default(spark, f.name, defaults[f.name], f.dataType)})
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


def type_obj(f: Any) -> Any:
    """The JSON value of a log schema field's type, as the log writes it.

    Example:
        >>> type_obj(StructField("a", PrimitiveType("long")))                     # doctest: +SKIP
        'long'
    """
    from deltalog.protocol.schema import StructType

    return json.loads(StructType((f,)).to_json())["fields"][0]["type"]
