"""SQL DML on Delta tables: ``INSERT INTO`` / ``INSERT OVERWRITE`` (``PARTITION (...)``, ``REPLACE WHERE``,
a column list or ``BY NAME``), ``UPDATE``, ``DELETE FROM`` and ``MERGE INTO`` (every clause, ``UPDATE SET *``
/ ``INSERT *``, ``WHEN NOT MATCHED BY SOURCE``, a table, view or subquery as the source).

Each statement runs through deltalog's Spark engine (:mod:`deltalog.spark.writes.save`,
:mod:`deltalog.spark.dml`) and returns delta-spark's result DataFrame: ``num_affected_rows`` (and
``num_inserted_rows`` for INSERT; ``num_updated_rows``, ``num_deleted_rows``, ``num_inserted_rows`` for
MERGE). Source queries may read Delta tables too (they are rewritten as for any query).

Example:
    >>> spark.sql("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
    ...           "WHEN NOT MATCHED THEN INSERT *").first()                          # doctest: +SKIP
    Row(num_affected_rows=10, num_updated_rows=4, num_deleted_rows=0, num_inserted_rows=6)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import StructType
from deltalog.spark.catalog.dialect import DIALECT, unqualified
from deltalog.spark.catalog.entries import forget, sync_schema
from deltalog.spark.common.compat import ansi_cast
from deltalog.spark.common.core import view_safe
from deltalog.spark.sql.refs import (
    TableRef,
    delta_view,
    frame_view,
    read_ref,
    resolve_table,
    rewrite_condition,
    rewrite_query,
    table_sources,
)
from deltalog.spark.sql.shared import refuse, widened_columns
from deltalog.spark.sql.views import view_target
from deltalog.txn.defaults import default_columns
from deltalog.txn.generated import generated_columns
from deltalog.txn.identity import identity_columns

__all__ = ["handle"]


def handle(spark: Any, expression: Any, text: str) -> Any:
    """Run a DML statement on a Delta table; ``None`` when its target is not one (Spark runs it).

    Example:
        >>> handle(spark, parse("DELETE FROM t WHERE id = 1"), "...").first()[0]     # doctest: +SKIP
        1
    """
    from sqlglot import exp

    if isinstance(expression, exp.Insert):
        return _insert(spark, expression, text)
    if isinstance(expression, exp.Update):
        return _update(spark, expression, text)
    if isinstance(expression, exp.Delete):
        return _delete(spark, expression, text)
    if isinstance(expression, exp.Merge):
        return _merge(spark, expression, text)
    return None


def _with_clause(node: Any) -> Any:
    """The ``WITH`` clause of a statement or query (``None`` without one)."""
    return node.args.get("with_") or node.args.get("with")


def _under_ctes(statement: Any, query: Any) -> Any:
    """``query`` (the source of an ``INSERT`` or ``MERGE``) with the statement's leading ``WITH`` clause
    attached, so that it can name the CTEs: Spark allows ``WITH s AS (...) MERGE INTO t USING s ...`` and
    ``WITH s AS (...) INSERT INTO t SELECT * FROM s``. A query with a ``WITH`` of its own keeps it after the
    statement's CTEs; a ``VALUES`` list is returned as it is."""
    outer = _with_clause(statement)
    key = next((k for k in ("with_", "with") if k in type(query).arg_types), None)
    if outer is None or key is None:
        return query
    query = query.copy()
    own = _with_clause(query)
    if own is None:
        query.set(key, outer.copy())
    else:
        own.set("expressions", [*(e.copy() for e in outer.expressions), *own.expressions])
    return query


def _cte_names(statement: Any) -> set[str]:
    outer = _with_clause(statement)
    return {str(e.alias).lower() for e in outer.expressions} if outer is not None else set()


def _strip(node: Any, names: set[str]) -> str:
    """SQL of ``node`` with column qualifiers naming the target (its name or alias) dropped."""
    return str(unqualified(node, names).sql(dialect=DIALECT))


@contextlib.contextmanager
def _condition(spark: Any, statement: Any, node: Any, names: set[str], text: str) -> Iterator[str]:
    """The SQL of an UPDATE / DELETE condition (target qualifiers dropped, as :func:`_strip`) for the time the
    statement runs. Its subqueries may read Delta tables and the statement's CTEs
    (``WITH s AS (...) DELETE FROM t WHERE id IN (SELECT id FROM s)``): the CTEs are written into the
    condition as subqueries, and each Delta table read is a temporary view under a unique name until the
    statement is done (a condition is a ``Column``, which cannot carry DataFrame arguments). A ``[NOT]
    EXISTS`` correlated by equalities with the target's columns becomes an ``IN``
    (:mod:`deltalog.spark.sql.decorrelate`); any other subquery naming a column of the target by its
    qualifier (correlated) is refused: the target is not named in the plan the condition runs in, and
    unqualified the column would mean the subquery's own."""
    from sqlglot import exp

    from deltalog.spark.sql.decorrelate import decorrelated

    if node.find(exp.Select) is None:
        yield _strip(node, names)
        return
    node = decorrelated(node.copy(), names)  # EXISTS correlated by equalities: an IN
    for select in node.find_all(exp.Select):
        outer = next((c for c in select.find_all(exp.Column) if c.table and c.table.lower() in names), None)
        if outer is not None:
            raise refuse(text, f"[DELTA_UNSUPPORTED_SUBQUERY] its condition's subquery refers to the target's "
                         f"column {outer.sql(dialect=DIALECT)} (a correlated subquery), which deltalog does not "
                         "run beyond [NOT] EXISTS correlated by equalities (s.k = t.k AND ...); use MERGE INTO "
                         "the table USING the subquery's rows")
    tree = unqualified(_inline_ctes(statement, node.copy()), names)
    sql, frames = rewrite_condition(spark, tree)
    try:
        for name, df in frames.items():
            view_safe(df).createOrReplaceTempView(name)
        yield sql
    finally:
        for name in frames:
            spark.catalog.dropTempView(name)


def _inline_ctes(statement: Any, tree: Any) -> Any:
    """``tree`` with each reference to a CTE of ``statement``'s ``WITH`` clause replaced by the CTE's query
    (a subquery under the reference's name), CTEs naming earlier ones included."""
    from sqlglot import exp

    outer = _with_clause(statement)
    ctes = {str(c.alias).lower(): c.this for c in outer.expressions} if outer is not None else {}
    for _ in range(len(ctes)):  # each round inlines one more level of CTEs naming CTEs
        refs = [t for t in tree.find_all(exp.Table) if not t.db and t.name.lower() in ctes]
        if not refs:
            break
        for t in refs:
            alias = t.alias or t.name
            t.replace(exp.Subquery(this=ctes[t.name.lower()].copy(),
                                   alias=exp.TableAlias(this=exp.to_identifier(alias))))
    return tree


def _is_default(node: Any) -> bool:
    """The ``DEFAULT`` keyword (sqlglot reads it as a variable in VALUES, as a column in SET)."""
    from sqlglot import exp

    return (isinstance(node, exp.Var) and node.name.upper() == "DEFAULT") or \
        (isinstance(node, exp.Column) and not node.table and not node.this.args.get("quoted")
         and node.name.upper() == "DEFAULT")


def _default_sql(schema: StructType, column: str) -> str:
    """What ``DEFAULT`` means for ``column``: its default expression, else ``NULL`` (as in delta-spark)."""
    by_lower = {k.lower(): v for k, v in default_columns(schema).items()}
    return by_lower.get(column.lower(), "NULL")


def _target_names(table: Any) -> set[str]:
    names = {table.name.lower()}
    alias = table.args.get("alias")
    if alias is not None and alias.name:
        names.add(alias.name.lower())
    return names


def _set_key(column: Any, names: set[str]) -> str:
    """An UPDATE's ``SET`` target as a ``set`` key: the column, or ``s.b`` for a struct's field, without the
    table's name or alias (``t.s.b``)."""
    parts = [p.name for p in column.parts] if hasattr(column, "parts") else [column.name]
    if len(parts) > 1 and parts[0].lower() in names:
        parts = parts[1:]
    return ".".join(p if "." not in p and "`" not in p else "`" + p.replace("`", "``") + "`" for p in parts)


def _once(assignments: dict[str, str], key: str, text: str) -> None:
    """Refuse a ``SET`` naming a column or field twice (a dict would keep the last silently)."""
    if key.lower() in {k.lower() for k in assignments}:
        raise refuse(text, f"[DELTA_CONFLICT_SET_COLUMN] there is a conflict from these SET columns: [{key}, {key}]; "
                           "assign each column or field once")


def _rows(spark: Any, values: dict[str, int], ddl: str) -> Any:
    return spark.createDataFrame([tuple(values.values())], ddl)


def _touch(spark: Any, ref: TableRef) -> None:
    if ref.name is not None:
        forget(spark, ref.name)
        sync_schema(spark, ref.name, ref.location)  # schema evolution: the catalog's copy follows


# ------------------------------------------------------------------------------------------- INSERT


def _insert(spark: Any, expression: Any, text: str) -> Any:
    from pyspark.sql import functions as F
    from sqlglot import exp

    from deltalog.spark.columns.defaults import default_value
    from deltalog.spark.common.conf import auto_merge
    from deltalog.spark.common.core import load_snapshot, spark_type
    from deltalog.spark.writes.save import write

    node = expression.this
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(table, exp.Table):
        return None
    ref = resolve_table(spark, table)
    if ref is None:
        if frame_view(spark, table) is not None or delta_view(spark, table) is not None:
            raise refuse(text, f"{table.name} is a view over a Delta table; INSERT writes to a table: insert into "
                               "the table itself")
        return None
    if ref.version is not None or ref.timestamp is not None:
        raise refuse(text, "a time-travel version cannot be written to")
    listed = [i.name for i in node.expressions] if isinstance(node, exp.Schema) else None
    static: dict[str, Any] = {}
    partition = table.args.get("partition")
    for item in partition.expressions if partition is not None else []:
        if isinstance(item, exp.EQ):  # PARTITION (day = '...'); a bare PARTITION (day) is dynamic
            value = item.expression
            static[item.this.name] = value.this if isinstance(value, exp.Literal) else value.sql(DIALECT)
    snap = load_snapshot(ref.location)
    fields = list(snap.schema.fields)
    by_lower = {f.name.lower(): f for f in fields}
    for name in [*static, *(listed or [])]:
        if name.lower() not in by_lower:
            raise InvalidArgumentError(f"[UNRESOLVED_COLUMN] column {name!r} is not in {ref.shown}: "
                                       f"{snap.schema.field_names}", table=ref.location)
    static_lower = {k.lower() for k in static}
    generated = {c.name.lower() for c in identity_columns(snap.schema)} | \
        {n.lower() for n in generated_columns(snap.schema)}  # may be left out: computed by the write

    def targets_for(width: int, listed: list[str] | None) -> list[str]:
        targets = [by_lower[n.lower()].name for n in listed] if listed is not None else \
            [f.name for f in fields if f.name.lower() not in static_lower]
        if listed is None and generated and width == len(targets) - len(generated & {t.lower() for t in targets}):
            targets = [t for t in targets if t.lower() not in generated]
        return targets

    table_sources(expression)  # INSERT INTO t TABLE s
    query = expression.expression
    if isinstance(query, exp.Values) and query.expressions and not expression.args.get("by_name"):
        query = _values_with_defaults(query, targets_for(len(query.expressions[0].expressions), listed),
                                      snap.schema)
    df = rewrite_query(spark, _under_ctes(expression, query)).sql(spark)
    # Columns the table lacks (by name, or past the table's by position under schema evolution) go to the
    # write as they are: it adds them with autoMerge, else refuses naming the setting, as delta-spark does.
    extra: list[int] = []
    if expression.args.get("by_name"):
        listed = [c for c in df.columns if c.lower() in by_lower]
        extra = [i for i, c in enumerate(df.columns) if c.lower() not in by_lower]
    targets = targets_for(len(df.columns) - len(extra), listed)
    if listed is None and len(df.columns) > len(targets) and auto_merge(spark):
        extra = list(range(len(targets), len(df.columns)))
    if len(df.columns) - len(extra) != len(targets):
        raise InvalidArgumentError(
            f"[INSERT_COLUMN_ARITY_MISMATCH] cannot write to {ref.shown}: the data has {len(df.columns)} column(s) "
            f"but {len(targets)} are expected ({targets})", table=ref.location)
    names = list(df.columns)
    positional = [f"_insert_col{i}" for i in range(len(df.columns))]  # the query's names may repeat (SELECT 3, 3)
    df = df.toDF(*positional)
    source_of = {t.lower(): c for t, c in zip(targets, [c for i, c in enumerate(positional) if i not in extra])}
    widening = widened_columns(spark, snap, df, source_of)
    columns = []
    for f in fields:
        dtype = spark_type(f.type)
        if f.name.lower() in static_lower:
            value = next(v for k, v in static.items() if k.lower() == f.name.lower())
            columns.append(ansi_cast(F.lit(value), dtype).alias(f.name))
        elif f.name.lower() in source_of:
            source = F.col(source_of[f.name.lower()])
            kept = f.name.lower() in widening  # the write widens the column to the query's type
            columns.append((source if kept else ansi_cast(source, dtype)).alias(f.name))  # as Spark's INSERT
        elif f.name.lower() not in generated:  # an unlisted column: its default, else null
            columns.append(default_value(snap.schema, f.name).alias(f.name))
    columns += [F.col(positional[i]).alias(names[i]) for i in extra]
    data = df.select(*columns)
    overwrite = bool(expression.args.get("overwrite"))
    options: dict[str, Any] = {}
    where = expression.args.get("where")
    if where is not None:
        options["replaceWhere"] = where.sql(dialect=DIALECT)
        overwrite = True
    elif overwrite and _dynamic_overwrite(spark):  # as Spark: every INSERT OVERWRITE is dynamic in that mode
        options["partitionOverwriteMode"] = "dynamic"
    elif overwrite and static:  # static mode: the PARTITION values say what is replaced (else the whole table)
        options["replaceWhere"] = " AND ".join(
            f"`{k}` = {exp.Literal.string(str(v)).sql(DIALECT) if isinstance(v, str) else v}"
            for k, v in static.items())
    result = write(data, ref.location, mode="overwrite" if overwrite else "append", **options)
    _touch(spark, ref)
    n = int(result.num_rows)
    return _rows(spark, {"num_affected_rows": n, "num_inserted_rows": n},
                 "num_affected_rows bigint, num_inserted_rows bigint")


def _values_with_defaults(values: Any, targets: list[str], schema: StructType) -> Any:
    """``VALUES`` rows with each ``DEFAULT`` keyword replaced by its column's default (``targets`` are the
    columns the positions fill; a row of another width is left for the arity check to refuse)."""
    import sqlglot
    from sqlglot import exp

    out = values.copy()
    for row in out.expressions:
        items = row.expressions if isinstance(row, exp.Tuple) else [row]
        if len(items) != len(targets):
            continue
        for i, item in enumerate(items):
            if _is_default(item):
                item.replace(sqlglot.parse_one(_default_sql(schema, targets[i]), read=DIALECT))
    return out


def _dynamic_overwrite(spark: Any) -> bool:
    try:
        mode = spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static")
    except Exception:
        mode = "static"
    return str(mode).strip().lower() == "dynamic"


# ------------------------------------------------------------------------------------ UPDATE / DELETE


def _update(spark: Any, expression: Any, text: str) -> Any:
    from sqlglot import exp

    from deltalog.spark.dml import update

    table = expression.this
    if not isinstance(table, exp.Table):
        return None
    ref = resolve_table(spark, table) or view_target(spark, table, text, "UPDATE")
    if ref is None:
        return None
    if expression.args.get("from") or expression.args.get("from_"):
        raise refuse(text, "UPDATE ... FROM is not Delta syntax; use MERGE INTO")
    _refuse_row_limits(expression, "UPDATE", text)
    from deltalog.spark.common.core import load_snapshot

    names = _target_names(table)
    assignments: dict[str, str] = {}
    for eq in expression.expressions:
        column = eq.this
        key = _set_key(column, names)
        _once(assignments, key, text)
        assignments[key] = _default_sql(load_snapshot(ref.location).schema, column.name) \
            if _is_default(eq.expression) else _strip(eq.expression, names)
    where = expression.args.get("where")
    with contextlib.ExitStack() as scope:
        condition = scope.enter_context(_condition(spark, expression, where.this, names, text)) \
            if where is not None else None
        result = update(spark, ref.location, condition, assignments)
    _touch(spark, ref)
    return _rows(spark, {"num_affected_rows": int(result.metric("numUpdatedRows"))}, "num_affected_rows bigint")


def _refuse_row_limits(expression: Any, what: str, text: str) -> None:
    """``ORDER BY`` / ``LIMIT`` on UPDATE or DELETE (not Spark syntax): refused rather than ignored."""
    for arg in ("order", "limit"):
        if expression.args.get(arg):
            raise refuse(text, f"{what} ... {arg.upper()} is not Delta syntax: the statement applies to every row "
                         "its condition matches; narrow the condition instead")


def _delete(spark: Any, expression: Any, text: str) -> Any:
    from sqlglot import exp

    from deltalog.spark.dml import delete

    table = expression.this
    if not isinstance(table, exp.Table):
        return None
    ref = resolve_table(spark, table) or view_target(spark, table, text, "DELETE")
    if ref is None:
        return None
    if expression.args.get("using"):
        raise refuse(text, "DELETE ... USING is not Delta syntax; use MERGE INTO t USING s ON ... WHEN MATCHED THEN "
                     "DELETE, or a subquery in the condition (WHERE EXISTS (SELECT 1 FROM s WHERE s.k = t.k))")
    _refuse_row_limits(expression, "DELETE", text)
    where = expression.args.get("where")
    with contextlib.ExitStack() as scope:
        condition = scope.enter_context(_condition(spark, expression, where.this, _target_names(table), text)) \
            if where is not None else None
        result = delete(spark, ref.location, condition)
    _touch(spark, ref)
    return _rows(spark, {"num_affected_rows": int(result.metric("numDeletedRows"))}, "num_affected_rows bigint")


# -------------------------------------------------------------------------------------------- MERGE


def _source_frame(spark: Any, using: Any, statement: Any) -> tuple[Any, str]:
    from sqlglot import exp

    alias = using.args.get("alias")
    if isinstance(using, exp.Table) and not using.db and using.name.lower() in _cte_names(statement):
        plain = using.copy()  # a CTE of the statement's WITH clause (it hides a table of that name)
        plain.set("alias", None)
        query = _under_ctes(statement, exp.select("*").from_(plain))
        return rewrite_query(spark, query).sql(spark), alias.name if alias is not None and alias.name else using.name
    if isinstance(using, exp.Table):
        name = alias.name if alias is not None and alias.name else using.name
        ref = resolve_table(spark, using)
        if ref is not None:
            return read_ref(spark, ref), name
        plain = using.copy()  # another table or a view: Spark reads it (deltalog the Delta tables of a view)
        plain.set("alias", None)
        return rewrite_query(spark, exp.select("*").from_(plain)).sql(spark), name
    if isinstance(using, exp.Subquery):
        if alias is None or not alias.name:
            raise InvalidArgumentError("a MERGE source subquery needs an alias")
        return rewrite_query(spark, _under_ctes(statement, using.this)).sql(spark), alias.name
    raise InvalidArgumentError(f"unsupported MERGE source: {using.sql(dialect=DIALECT)}")


def _merge(spark: Any, expression: Any, text: str) -> Any:
    from sqlglot import exp

    from deltalog.spark.api.table import DeltaTable

    target = expression.this
    if not isinstance(target, exp.Table):
        return None
    ref = resolve_table(spark, target) or view_target(spark, target, text, "MERGE")
    if ref is None:
        return None
    alias = target.args.get("alias")
    target_alias = alias.name if alias is not None and alias.name else target.name
    source, source_alias = _source_frame(spark, expression.args["using"], expression)
    on = expression.args.get("on")
    if on is None:
        raise refuse(text, "MERGE needs an ON condition")
    builder = DeltaTable(spark, ref.location).alias(target_alias).merge(
        source.alias(source_alias), on.sql(dialect=DIALECT))
    if expression.meta.get("schema_evolution"):  # MERGE WITH SCHEMA EVOLUTION INTO ...
        builder = builder.withSchemaEvolution()
    whens = expression.args.get("whens")
    for when in whens.expressions if whens is not None else []:
        condition = when.args.get("condition")
        cond = condition.sql(dialect=DIALECT) if condition is not None else None
        then = when.args.get("then")
        matched, by_source = bool(when.args.get("matched")), bool(when.args.get("source"))
        if matched:
            builder = _matched(builder.whenMatchedUpdate, builder.whenMatchedUpdateAll, builder.whenMatchedDelete,
                               then, cond, target_alias, text, ref.location)
        elif by_source:
            builder = _matched(builder.whenNotMatchedBySourceUpdate, None, builder.whenNotMatchedBySourceDelete,
                               then, cond, target_alias, text, ref.location)
        else:
            builder = _not_matched(builder, then, cond, target_alias, text, ref.location)
    result = builder.execute()
    _touch(spark, ref)
    return result


def _set_target(column: Any, target_alias: str) -> str:
    return str(column.name) if column.table.lower() in ("", target_alias.lower()) else column.sql(dialect=DIALECT)


def _value(column: str, value: Any, location: str) -> str:
    """The SQL a MERGE clause assigns to ``column``: ``value``, or its default for the ``DEFAULT`` keyword."""
    from deltalog.spark.common.core import load_snapshot

    return _default_sql(load_snapshot(location).schema, column) if _is_default(value) else \
        str(value.sql(dialect=DIALECT))


def _matched(update: Any, update_all: Any, delete: Any, then: Any, cond: str | None, target_alias: str,
             text: str, location: str) -> Any:
    from sqlglot import exp

    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        return delete(condition=cond) if cond is not None else delete()
    if isinstance(then, exp.Update):
        items = then.expressions
        if len(items) == 1 and isinstance(items[0], exp.Star):
            if update_all is None:
                raise refuse(text, "UPDATE SET * is not allowed in WHEN NOT MATCHED BY SOURCE (there is no source row)")
            return update_all(condition=cond) if cond is not None else update_all()
        assignments: dict[str, str] = {}
        for eq in items:
            key = _set_target(eq.this, target_alias)
            _once(assignments, key, text)
            assignments[key] = _value(eq.this.name, eq.expression, location)
        return update(condition=cond, set=assignments) if cond is not None else update(set=assignments)
    raise refuse(text, f"unsupported action {then.sql(dialect=DIALECT)} in a WHEN MATCHED clause")


def _not_matched(builder: Any, then: Any, cond: str | None, target_alias: str, text: str, location: str) -> Any:
    from sqlglot import exp

    if isinstance(then, exp.Insert):
        columns, values = then.this, then.expression
        if isinstance(columns, exp.Star) or (columns is None and values is None):
            return builder.whenNotMatchedInsertAll(condition=cond) if cond is not None else \
                builder.whenNotMatchedInsertAll()
        if not isinstance(columns, exp.Tuple) or not isinstance(values, exp.Tuple) or \
                len(columns.expressions) != len(values.expressions):
            raise refuse(text, "INSERT in WHEN NOT MATCHED needs a column list and as many values")
        mapping = {_set_target(c, target_alias): _value(c.name, v, location)
                   for c, v in zip(columns.expressions, values.expressions)}
        return builder.whenNotMatchedInsert(condition=cond, values=mapping) if cond is not None else \
            builder.whenNotMatchedInsert(values=mapping)
    raise refuse(text, f"unsupported action {then.sql(dialect=DIALECT)} in a WHEN NOT MATCHED clause")
