"""Patches that route the catalog parts of the DataFrame API to :mod:`deltalog.spark.sql.tables`.

Installed by :func:`deltalog.spark.register` with the rest of the routing (classic and Connect):
``DataFrameWriter.saveAsTable`` / ``insertInto``, ``DataFrame.writeTo`` and the ``DataFrameWriterV2``
actions, ``DataStreamWriter.toTable``, ``SparkSession.table``, ``DataFrameReader.table``,
``DataStreamReader.table`` (a stream of a catalog Delta table is deltalog's streaming source) and
``Catalog.createTable(..., source="delta")`` (a commit 0 as ``DeltaTable.create()``), and
``Catalog.getTable`` / ``listTables`` (a Delta table's description), ``Catalog.cacheTable`` /
``uncacheTable`` / ``isCached`` (deltalog's read of the table,
:func:`deltalog.spark.sql.table_ops.catalog_cache`). Each falls back to Spark's own method when the table
is not a Delta table (and no ``delta`` format was asked for).

Example:
    >>> patches()[:1]                                                              # doctest: +SKIP
    [(<class 'pyspark.sql.readwriter.DataFrameWriter'>, 'saveAsTable', <function ...>)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deltalog.spark.common.compat import CLUSTER_BY_WRITER, DATAFRAME_MODULES
from deltalog.spark.common.recorded import recorded_state, session_of_reader, session_of_stream_writer, writer_dataframe

__all__ = ["patches"]

Make = Callable[[Callable[..., Any]], Callable[..., Any]]
_V2 = "_deltalog_v2"


def _save_as_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def saveAsTable(self: Any, name: str, format: Any = None, mode: Any = None, partitionBy: Any = None,
                    **options: Any) -> Any:
        from deltalog.spark.sql.tables import save_as_table

        state = recorded_state(self)
        fmt = format if format is not None else state["format"]
        handled = save_as_table(
            writer_dataframe(self), name, fmt=fmt, mode=mode if mode is not None else state["mode"],
            partition_by=partitionBy if partitionBy is not None else state["partitionBy"],
            options={**state["options"], **options}, cluster_by=state["clusterBy"],
        )
        if not handled:
            return original(self, name, format, mode, partitionBy, **options)
        return None

    return saveAsTable


def _insert_into(original: Callable[..., Any]) -> Callable[..., Any]:
    def insertInto(self: Any, tableName: str, overwrite: Any = None) -> Any:
        from deltalog.spark.sql.tables import insert_into

        mode = recorded_state(self)["mode"]
        over = overwrite if overwrite is not None else (str(mode).lower() == "overwrite" if mode else False)
        if insert_into(writer_dataframe(self), tableName, over):
            return None
        return original(self, tableName, overwrite)

    return insertInto


def _to_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def toTable(self: Any, tableName: str, format: Any = None, outputMode: Any = None, partitionBy: Any = None,
                queryName: Any = None, **options: Any) -> Any:
        from deltalog.spark.sql.tables import catalog_delta

        state = recorded_state(self)
        fmt = format if format is not None else state["format"]
        spark = session_of_stream_writer(self)
        found = catalog_delta(spark, tableName) if spark is not None else None
        if fmt is None and found is None and spark is not None:
            from deltalog.spark.catalog.entries import lookup
            from deltalog.spark.common.conf import default_source

            if lookup(spark, tableName) is None:  # a new table: spark.sql.sources.default decides, as in Spark
                fmt = default_source(spark)
        delta = isinstance(fmt, str) and fmt.lower() == "delta"
        if found is None and spark is not None and delta:
            # as Spark's toTable: a missing table is created with the stream's schema and partitioning
            found = _create_for_stream(spark, self, tableName,
                                       partitionBy if partitionBy is not None else state["partitionBy"],
                                       {**state["options"], **options})
        if found is None and delta:  # no DataFrame to take the schema from: Spark's path cannot write Delta
            from deltalog.errors import TableNotFoundError

            raise TableNotFoundError(
                f"[TABLE_OR_VIEW_NOT_FOUND] {tableName}: create the Delta table before streaming into it "
                f"(CREATE TABLE {tableName} (...) USING DELTA)", table=tableName)
        if found is None:
            return original(self, tableName, format, outputMode, partitionBy, queryName, **options)
        return self.start(found.location, format="delta", outputMode=outputMode, partitionBy=partitionBy,
                          queryName=queryName, **options)

    return toTable


def _create_for_stream(spark: Any, writer: Any, name: str, partition_by: Any, options: dict[str, Any]) -> Any:
    """Create catalog Delta table ``name`` for a stream writer's DataFrame (``CREATE TABLE IF NOT EXISTS``, so
    a query started beside it finds the same table); ``delta.*`` options become its properties."""
    from deltalog.spark.api.table import DeltaTableBuilder
    from deltalog.spark.sql.tables import catalog_delta

    df = getattr(writer, "_df", None)
    if df is None:
        return None
    builder = DeltaTableBuilder(spark, "createIfNotExists").tableName(name).addColumns(df.schema)
    parts = [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
    if parts:
        builder = builder.partitionedBy(*parts)
    for key, value in options.items():
        if str(key).lower().startswith("delta."):
            builder = builder.property(str(key), str(value))
    builder.execute()
    return catalog_delta(spark, name)


def _spark_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def table(self: Any, tableName: str) -> Any:
        from deltalog.spark.sql.tables import read_table

        found = read_table(self, tableName)
        return found if found is not None else original(self, tableName)

    return table


def _reader_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def table(self: Any, tableName: str) -> Any:
        from deltalog.spark.sql.tables import read_table

        found = read_table(session_of_reader(self), tableName, recorded_state(self)["options"])
        return found if found is not None else original(self, tableName)

    return table


def _stream_reader_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def table(self: Any, tableName: str) -> Any:
        from deltalog.spark.sql.tables import catalog_delta

        found = catalog_delta(session_of_reader(self), tableName)
        if found is None:
            return original(self, tableName)
        return self.format("delta").load(found.location)  # deltalog's streaming source, options as given

    return table


def _catalog_create_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def createTable(self: Any, tableName: str, path: Any = None, source: Any = None, schema: Any = None,
                    description: Any = None, **options: Any) -> Any:
        from deltalog.arrow.write import TableExistsError
        from deltalog.errors import InvalidArgumentError
        from deltalog.spark.api.table import DeltaTableBuilder
        from deltalog.spark.common.conf import default_source

        spark = self._sparkSession
        fmt = default_source(spark, source)
        if not (isinstance(fmt, str) and fmt.strip().lower() == "delta"):
            return original(self, tableName, path, source, schema, description, **options)
        where = path if path is not None else options.pop("path", None)
        unknown = sorted(k for k in options if not k.startswith("delta."))
        if unknown:
            raise InvalidArgumentError(f"spark.catalog.createTable({tableName!r}, source='delta'): unknown option(s) "
                                       f"{unknown}; Delta tables take table properties (delta.*) here",
                                       table=tableName)
        if schema is None and where is None:
            raise InvalidArgumentError(f"spark.catalog.createTable({tableName!r}, source='delta') needs a schema, or "
                                       "the path of an existing Delta table", table=tableName)
        if schema is None:  # an existing Delta table registered with the schema of its log
            from deltalog.spark.catalog.dialect import sql_string
            from deltalog.spark.catalog.entries import parse_name

            def literal(text: Any) -> str:
                return sql_string(str(text))

            props = ", ".join(f"{literal(k)} = {literal(v)}" for k, v in options.items())
            spark.sql(f"CREATE TABLE {parse_name(tableName).sql()} USING DELTA LOCATION {literal(where)}"
                      + (f" COMMENT {literal(description)}" if description is not None else "")
                      + (f" TBLPROPERTIES ({props})" if props else ""))
            return spark.table(tableName)
        builder = DeltaTableBuilder(spark, "create").tableName(tableName).addColumns(schema)
        if where is not None:
            builder = builder.location(str(where))
        if description is not None:
            builder = builder.comment(str(description))
        for key, value in options.items():
            builder = builder.property(key, str(value))
        try:
            builder.execute()
        except TableExistsError:
            raise TableExistsError(f"[TABLE_OR_VIEW_ALREADY_EXISTS] cannot create table {tableName}: it already "
                                   "exists (drop it first, or choose another name)", table=tableName) from None
        return spark.table(tableName)

    return createTable


def _described(spark: Any, table: Any) -> Any:
    """A ``spark.catalog`` ``Table`` of a Delta table with the table's description (its log's, as
    delta-spark's table reports it): Spark takes it from properties deltalog's provider does not carry."""
    from deltalog.spark.catalog.entries import TableName, lookup
    from deltalog.spark.common.core import load_snapshot

    namespace = list(getattr(table, "namespace", None) or [])
    if getattr(table, "description", None) is not None or getattr(table, "isTemporary", True) or len(namespace) != 1:
        return table
    try:
        entry = lookup(spark, TableName(table.name, namespace[0], table.catalog))
        if entry is None or not entry.is_delta:
            return table
        return table._replace(description=load_snapshot(entry.location).metadata.description)
    except Exception:  # a table deltalog cannot read: Spark's answer stands
        return table


def _catalog_get_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def getTable(self: Any, tableName: str) -> Any:
        return _described(self._sparkSession, original(self, tableName))

    return getTable


def _catalog_list_tables(original: Callable[..., Any]) -> Callable[..., Any]:
    def listTables(self: Any, *args: Any, **kwargs: Any) -> Any:
        return [_described(self._sparkSession, t) for t in original(self, *args, **kwargs)]

    return listTables


def _catalog_cache(name: str) -> Make:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def method(self: Any, tableName: str, *args: Any, **kwargs: Any) -> Any:
            from deltalog.spark.sql.table_ops import catalog_cache

            handled = catalog_cache(self._sparkSession, name, tableName, *args, **kwargs)
            return original(self, tableName, *args, **kwargs) if handled is NotImplemented else handled

        method.__name__ = name
        method.__doc__ = original.__doc__
        return method

    return make


def _write_to(original: Callable[..., Any]) -> Callable[..., Any]:
    def writeTo(self: Any, table: str) -> Any:
        writer = original(self, table)
        writer.__dict__[_V2] = {"df": self, "table": table, "provider": None, "options": {}, "properties": {},
                                "partitions": []}
        return writer

    return writeTo


def _v2(writer: Any) -> dict[str, Any]:
    state: dict[str, Any] = writer.__dict__.setdefault(_V2, {"df": None, "table": None, "provider": None,
                                                              "options": {}, "properties": {}, "partitions": []})
    return state


def _column_name(col: Any) -> str:
    if isinstance(col, str):
        return col
    text = str(col)
    if text.startswith("Column<'") and text.endswith("'>"):
        return text[len("Column<'"):-2].strip("`")
    return text


def _v2_recording(name: str) -> Make:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            state = _v2(self)
            if name == "using":
                state["provider"] = args[0] if args else kwargs.get("provider")
            elif name == "option":
                state["options"][args[0]] = args[1]
            elif name == "options":
                state["options"].update(kwargs)
            elif name == "tableProperty":
                state["properties"][args[0]] = args[1]
            elif name in ("partitionedBy", "clusterBy"):
                cols = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
                state["partitions" if name == "partitionedBy" else "clustering"] = [_column_name(c) for c in cols]
            return original(self, *args, **kwargs)

        return method

    return make


def _v2_action(name: str) -> Make:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            from deltalog.spark.sql.tables import write_v2

            state = _v2(self)
            if state.get("df") is not None:
                condition = args[0] if args else kwargs.get("condition")
                if write_v2(state, name, condition):
                    return None
            return original(self, *args, **kwargs)

        return method

    return make


def _classes(module: str, name: str) -> list[type]:
    import importlib

    out: list[type] = []
    for mod in (module, module.replace("pyspark.sql.", "pyspark.sql.connect.", 1)):
        try:
            out.append(getattr(importlib.import_module(mod), name))
        except Exception:
            continue
    return out


def patches() -> list[tuple[type, str, Make]]:
    """Every (class, method, wrapper factory) this module installs.

    Example:
        >>> len(patches()) > 5                                                      # doctest: +SKIP
        True
    """
    out: list[tuple[type, str, Make]] = []
    for cls in _classes("pyspark.sql.readwriter", "DataFrameWriter"):
        out += [(cls, "saveAsTable", _save_as_table), (cls, "insertInto", _insert_into)]
    for cls in _classes("pyspark.sql.readwriter", "DataFrameReader"):
        out.append((cls, "table", _reader_table))
    for cls in _classes("pyspark.sql.streaming.readwriter", "DataStreamWriter"):
        out.append((cls, "toTable", _to_table))
    for cls in _classes("pyspark.sql.streaming.readwriter", "DataStreamReader"):
        out.append((cls, "table", _stream_reader_table))
    for cls in _classes("pyspark.sql.catalog", "Catalog"):  # createExternalTable calls createTable
        out += [(cls, "createTable", _catalog_create_table), (cls, "getTable", _catalog_get_table),
                (cls, "listTables", _catalog_list_tables)]
        out += [(cls, name, _catalog_cache(name)) for name in ("cacheTable", "uncacheTable", "isCached")]
    for cls in _classes("pyspark.sql.session", "SparkSession"):
        out.append((cls, "table", _spark_table))
    for module in DATAFRAME_MODULES:
        try:
            import importlib

            out.append((importlib.import_module(module).DataFrame, "writeTo", _write_to))
        except Exception:  # Spark Connect's optional packages (grpcio, ...) are missing
            continue
    recorded = ("using", "option", "options", "tableProperty", "partitionedBy", *(
        ("clusterBy",) if CLUSTER_BY_WRITER else ()))
    for cls in _classes("pyspark.sql.readwriter", "DataFrameWriterV2"):
        out += [(cls, name, _v2_recording(name)) for name in recorded]
        for name in ("create", "replace", "createOrReplace", "append", "overwrite", "overwritePartitions"):
            out.append((cls, name, _v2_action(name)))
    return out
