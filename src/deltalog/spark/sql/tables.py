"""Catalog Delta tables through the DataFrame API: ``saveAsTable``, ``insertInto``, ``writeTo(...)``
(``create`` / ``replace`` / ``createOrReplace`` / ``append`` / ``overwrite`` / ``overwritePartitions``),
``toTable``, ``spark.table`` and ``spark.read.table``.

Each resolves the name in Spark's catalog (:mod:`deltalog.spark.catalog.entries`): an existing ``USING delta``
table is read or written at its location by deltalog; a new one is registered (managed under
``spark.sql.warehouse.dir``, or external with a ``path`` option) and written there. Other tables and
formats go to Spark unchanged. Reads take deltalog's fast path (Spark's parquet scan of the live files);
``versionAsOf`` / ``timestampAsOf`` reader options time-travel as with paths.

Example:
    >>> df.write.format("delta").mode("overwrite").saveAsTable("events")             # doctest: +SKIP
    >>> spark.table("events").count()                                                 # doctest: +SKIP
    1000
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.errors import InvalidArgumentError, TableNotFoundError
from deltalog.spark.catalog.dialect import DIALECT
from deltalog.spark.catalog.entries import TableName, ensure_source, forget, lookup, parse_name, sync_schema
from deltalog.spark.common.conf import default_source

__all__ = ["insert_into", "read_table", "save_as_table", "write_v2"]


def _is_delta(fmt: Any) -> bool:
    return isinstance(fmt, str) and fmt.strip().lower() == "delta"


def catalog_delta(spark: Any, name: str) -> Any:
    """The catalog entry of ``name`` when it is a Delta table, else ``None``.

    Example:
        >>> catalog_delta(spark, "events").location                                  # doctest: +SKIP
        '/spark-warehouse/events'
    """
    from deltalog.spark.sql.refs import resolve

    stripped = name.strip()
    if stripped.lower().startswith("delta.`"):
        return resolve(spark, stripped)
    entry = lookup(spark, parse_name(stripped))
    return entry if entry is not None and entry.is_delta else None


def read_table(spark: Any, name: str, options: Mapping[str, Any] | None = None) -> Any:
    """deltalog's read of the catalog Delta table (or ``delta.`<path>```) ``name`` (its change data feed with
    ``readChangeFeed``); ``None`` when it is not a Delta table.

    Example:
        >>> read_table(spark, "events", {"versionAsOf": 3}).count()                 # doctest: +SKIP
        900
    """
    from deltalog.spark.common.core import option_map
    from deltalog.spark.reads.scan import READ_OPTIONS, read

    found = catalog_delta(spark, name)
    if found is None:
        return _view(spark, name, options)
    from deltalog.spark.reads.changes import is_change_feed_read, load_changes

    if is_change_feed_read(dict(options or {})):  # spark.read.option("readChangeFeed", "true").table(name)
        return load_changes(spark, found.location, dict(options or {}))
    opts = option_map(dict(options or {}), READ_OPTIONS, what="Delta read")
    return read(spark, found.location, versionAsOf=opts.get("versionAsOf"), timestampAsOf=opts.get("timestampAsOf"))


def _view(spark: Any, name: str, options: Mapping[str, Any] | None) -> Any:
    """A view over Delta tables (see :mod:`deltalog.spark.sql.views`) read now; ``None`` for anything else."""
    from sqlglot import exp

    from deltalog.spark.sql.refs import delta_view, frame_view, frame_view_rows, view_frame

    try:
        table = exp.to_table(name.strip(), dialect=DIALECT)
    except Exception:
        return None
    remembered = frame_view(spark, table)  # a view of a deltalog read: made again from the latest version
    view = delta_view(spark, table) if remembered is None else None
    if remembered is None and view is None:
        return None
    if options:
        raise InvalidArgumentError(f"{name} is a view: it takes no read options (got {sorted(options)})", table=name)
    return frame_view_rows(spark, remembered) if view is None else view_frame(spark, view)


def register_table(spark: Any, name: TableName, df: Any, partitions: Sequence[str], path: str | None,
              comment: str | None = None) -> tuple[str, bool]:
    from deltalog.spark.catalog.create import CreateSpec, register_table

    ensure_source(spark)
    spec = CreateSpec(partitions=list(partitions), comment=comment)
    return register_table(spark, name, df.schema, spec, path)


def _drop(spark: Any, name: TableName) -> None:
    from deltalog.spark.catalog.entries import raw_sql

    raw_sql(spark, f"DROP TABLE IF EXISTS {name.sql()}")
    forget(spark, name)


def save_as_table(
    df: Any, name: str, *, fmt: Any, mode: Any, partition_by: Any, options: Mapping[str, Any],
    cluster_by: Any = None,
) -> bool:
    """``df.write.saveAsTable(name)`` for Delta: returns False when Spark should run it (another format, or
    no format given and no Delta table of that name). Mode ``overwrite`` replaces an existing table (schema
    and partitioning as given), unless ``replaceWhere`` or a dynamic ``partitionOverwriteMode`` asks to
    overwrite a part of it, as ``save(path)`` does.

    Example:
        >>> save_as_table(df, "events", fmt="delta", mode="append", partition_by=None, options={})  # doctest: +SKIP
        True
    """
    from deltalog.spark.common.core import session_of
    from deltalog.spark.writes.save import write

    spark = session_of(df)
    tn = parse_name(name)
    entry = lookup(spark, tn)
    existing_delta = entry is not None and entry.is_delta
    if fmt is None and entry is None:  # a new table: spark.sql.sources.default decides, as in Spark
        fmt = default_source(spark)
    if not _is_delta(fmt) and not (fmt is None and existing_delta):
        return False
    chosen = str(mode).lower() if mode is not None else "errorifexists"
    opts = {k: v for k, v in options.items() if k.lower() != "path"}
    path = next((v for k, v in options.items() if k.lower() == "path"), None)
    if entry is not None and not existing_delta:
        if chosen in ("ignore",):
            return True
        raise InvalidArgumentError(
            f"[DELTA_TABLE_ONLY_OPERATION] {name} exists and is not a Delta table (provider {entry.provider}); a "
            "Delta write cannot replace it", table=name)
    if entry is not None:
        if chosen in ("error", "errorifexists", "default"):
            raise InvalidArgumentError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] table {name} already exists; use mode "
                                       "'append' or 'overwrite' (or 'ignore')", table=name)
        if chosen == "ignore":
            return True
        lowered = {k.lower(): str(v) for k, v in opts.items()}
        selective = "replacewhere" in lowered or lowered.get("partitionoverwritemode", "").lower() == "dynamic"
        if chosen == "overwrite" and selective:  # a part of the table is overwritten, as by save(path)
            write(df, entry.location, mode="overwrite", partitionBy=partition_by, clusterBy=cluster_by, **opts)
        elif chosen == "overwrite":  # delta-spark replaces the table (schema and partitioning as given)
            opts.setdefault("overwriteSchema", "true")
            write(df, entry.location, mode="overwrite", partitionBy=partition_by, clusterBy=cluster_by,
                  _statement={"kind": "CREATE OR REPLACE TABLE AS SELECT", "managed": entry.managed}, **opts)
        else:
            write(df, entry.location, mode=chosen, partitionBy=partition_by, clusterBy=cluster_by, **opts)
        forget(spark, tn)
        sync_schema(spark, tn, entry.location)  # mergeSchema / overwriteSchema: the catalog's copy follows
        return True
    parts = [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
    location, managed = register_table(spark, tn, df, parts, path)
    try:
        write(df, location, mode="errorifexists" if chosen != "overwrite" else "overwrite", partitionBy=parts or None,
              clusterBy=cluster_by, _statement={"kind": "CREATE TABLE AS SELECT", "managed": managed}, **opts)
    except BaseException:
        _drop(spark, tn)
        raise
    forget(spark, tn)
    return True


def insert_into(df: Any, name: str, overwrite: bool | None) -> bool:
    """``df.write.insertInto(name)`` into a catalog Delta table (columns by position, as Spark does; under
    ``spark.databricks.delta.schema.autoMerge.enabled`` the columns past the table's are added to it); False
    when ``name`` is not a Delta table.

    Example:
        >>> insert_into(df, "events", overwrite=False)                               # doctest: +SKIP
        True
    """
    from pyspark.sql import functions as F

    from deltalog.spark.common.conf import auto_merge
    from deltalog.spark.common.core import load_snapshot, session_of, spark_type
    from deltalog.spark.sql.shared import widened_columns
    from deltalog.spark.writes.save import write

    spark = session_of(df)
    found = catalog_delta(spark, name)
    if found is None:
        return False
    snapshot = load_snapshot(found.location)
    fields = list(snapshot.schema.fields)
    evolve = len(df.columns) > len(fields) and auto_merge(spark)  # the columns past the table's are added
    if len(df.columns) != len(fields) and not evolve:
        raise InvalidArgumentError(
            f"[INSERT_COLUMN_ARITY_MISMATCH] cannot insert into {name}: the data has {len(df.columns)} column(s), "
            f"the table {len(fields)}", table=name)
    names = list(df.columns)
    positional = df.toDF(*[f"_insert_col{i}" for i in range(len(names))])  # the names may repeat
    extra = zip(positional.columns[len(fields):], names[len(fields):], strict=True)
    widening = widened_columns(spark, snapshot, positional,
                               {f.name.lower(): c for c, f in zip(positional.columns, fields)})
    data = positional.select(*[(F.col(c) if f.name.lower() in widening else F.col(c).cast(spark_type(f.type)))
                               .alias(f.name) for c, f in zip(positional.columns, fields)],
                             *[F.col(c).alias(n) for c, n in extra])
    write(data, found.location, mode="overwrite" if overwrite else "append")
    return True


def _up_cast_by_name(df: Any, location: str) -> Any:
    """``df`` with each column whose type safely widens to the table's column of that name (``int`` into a
    ``bigint`` column) cast to it, as Spark's analyser does for a ``DataFrameWriterV2`` write by name; other
    differences are left for the write's schema check to refuse or evolve."""
    import json

    from pyspark.sql import functions as F

    from deltalog.data.write_schema import widens
    from deltalog.protocol.schema import parse_data_type
    from deltalog.spark.common.core import load_snapshot, spark_type

    table = {f.name.lower(): f for f in load_snapshot(location).schema.fields}
    columns, changed = [], False
    for field in df.schema.fields:
        quoted = F.col("`" + field.name.replace("`", "``") + "`")
        target = table.get(field.name.lower())
        try:
            data_type = parse_data_type(json.loads(field.dataType.json()))
        except Exception:  # a type the log cannot name: the write's schema check words it
            data_type = None
        if target is not None and data_type is not None and widens(data_type, target.type):
            columns.append(quoted.cast(spark_type(target.type)).alias(field.name))
            changed = True
        else:
            columns.append(quoted)
    return df.select(*columns) if changed else df


def write_v2(state: Mapping[str, Any], action: str, condition: Any = None) -> bool:
    """A ``DataFrameWriterV2`` action (``create``, ``replace``, ``createOrReplace``, ``append``, ``overwrite``,
    ``overwritePartitions``) on a Delta table; False when the table is not Delta and no ``using("delta")``
    was given.

    Example:
        >>> write_v2({"df": df, "table": "t", "provider": "delta"}, "create")         # doctest: +SKIP
        True
    """
    from deltalog.spark.common.core import session_of
    from deltalog.spark.writes.save import write

    df, name = state["df"], state["table"]
    spark = session_of(df)
    tn = parse_name(name)
    entry = lookup(spark, tn)
    provider = state.get("provider")
    if provider is None and entry is None and action in ("create", "createOrReplace"):
        provider = default_source(spark)  # no using(...): spark.sql.sources.default, as in Spark
    delta = _is_delta(provider) or (provider is None and entry is not None and entry.is_delta)
    if not delta:
        return False
    opts = dict(state.get("options") or {})
    props = {k: v for k, v in (state.get("properties") or {}).items()}
    parts = list(state.get("partitions") or [])
    clustering = list(state["clustering"]) if state.get("clustering") is not None else None
    if entry is not None and not entry.is_delta:
        raise InvalidArgumentError(f"{name} exists and is not a Delta table (provider {entry.provider})", table=name)
    if action in ("append", "overwrite", "overwritePartitions"):
        if entry is None:
            raise TableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] the table {name} cannot be found", table=name)
        df = _up_cast_by_name(df, entry.location)
        if action == "append":
            write(df, entry.location, mode="append", **opts)
        elif action == "overwrite":
            where = condition if condition is not None else "true"
            write(df, entry.location, mode="overwrite", replaceWhere=where, **opts)
        else:
            write(df, entry.location, mode="overwrite", partitionOverwriteMode="dynamic", **opts)
        forget(spark, tn)
        sync_schema(spark, tn, entry.location)
        return True
    if action == "create" and entry is not None:
        raise InvalidArgumentError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] table {name} already exists", table=name)
    if action == "replace" and entry is None:
        raise TableNotFoundError(
            f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] table {name} cannot be replaced: it does not exist", table=name)
    if entry is not None:  # replace / createOrReplace an existing Delta table
        write(df, entry.location, mode="overwrite", partitionBy=parts or None, clusterBy=clustering,
              overwriteSchema="true",
              _statement={"kind": "REPLACE TABLE AS SELECT" if action == "replace" else
                          "CREATE OR REPLACE TABLE AS SELECT", "managed": entry.managed, "properties": props},
              **opts)
        forget(spark, tn)
        sync_schema(spark, tn, entry.location)
        return True
    location, managed = register_table(spark, tn, df, parts, opts.pop("path", None))
    try:
        write(df, location, mode="errorifexists", partitionBy=parts or None, clusterBy=clustering,
              _statement={"kind": "CREATE TABLE AS SELECT", "managed": managed, "properties": props}, **opts)
    except BaseException:
        _drop(spark, tn)
        raise
    forget(spark, tn)
    return True
