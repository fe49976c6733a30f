"""Delta tables in Spark's own catalog (in-memory, Hive metastore, whatever the session has).

A catalog Delta table is an ordinary entry of Spark's catalog whose provider is ``delta``: Spark accepts
``CREATE TABLE ... USING delta`` once a Python data source of that name is registered
(:class:`DeltaCatalogSource`; :func:`ensure_source` does it when a catalog Delta table is first created or
looked up in the session), lists the table, drops it (a managed table's directory with it) and keeps
its location. deltalog reads and writes the table at that location itself, so reads take deltalog's
fast path (Spark's parquet scan) rather than the data source's. Lookups ask the session catalog
directly on classic sessions (about 2 ms) and run ``SHOW TABLE EXTENDED`` on Connect sessions (the one
statement that reports provider and location there). Nothing is cached across statements -- another
session or cluster sharing the metastore may drop or move a table at any time -- only within one
statement (:func:`statement_scope`), which looks the same name up several times.

Example:
    >>> entry = lookup(spark, "events")                                         # doctest: +SKIP
    >>> entry.provider, entry.location, entry.managed                            # doctest: +SKIP
    ('delta', '/warehouse/events', True)
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from deltalog.errors import InvalidArgumentError, TableNotFoundError

__all__ = [
    "CatalogEntry",
    "DeltaCatalogSource",
    "TableName",
    "TableRef",
    "alter_entry",
    "check_location",
    "ensure_source",
    "forget",
    "lookup",
    "managed_location",
    "parse_name",
    "raw_sql",
    "statement_scope",
]

_LOCK = threading.Lock()
_SCOPE = threading.local()


class _Scope:
    def __enter__(self) -> None:
        if getattr(_SCOPE, "depth", 0) == 0:
            _SCOPE.cache = {}
        _SCOPE.depth = getattr(_SCOPE, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _SCOPE.depth -= 1
        if _SCOPE.depth == 0:
            _SCOPE.cache = None


def statement_scope() -> _Scope:
    """A context (re-entrant) within which catalog lookups are remembered: one statement or API call.

    Example:
        >>> with statement_scope():                                             # doctest: +SKIP
        ...     lookup(spark, "events") is lookup(spark, "events")
        True
    """
    return _Scope()


def _scope_cache() -> dict[tuple[int, str], CatalogEntry | None] | None:
    cache: dict[tuple[int, str], CatalogEntry | None] | None = getattr(_SCOPE, "cache", None)
    return cache


@dataclass(frozen=True)
class TableName:
    """A (possibly qualified) catalog table name: ``[catalog.][database.]table``.

    Example:
        >>> parse_name("db.events").qualified
        'db.events'
    """

    table: str
    database: str | None = None
    catalog: str | None = None

    @property
    def qualified(self) -> str:
        """``database.table`` (or ``table``), as typed (case kept)."""
        return f"{self.database}.{self.table}" if self.database else self.table

    @property
    def key(self) -> str:
        """The cache key: lower-cased, with the default database spelled out."""
        return f"{(self.database or 'default').lower()}.{self.table.lower()}"

    def full(self) -> str:
        """The fully qualified name as Spark shows it: ``spark_catalog.default.t``.

        Example:
            >>> TableName("t").full()
            'spark_catalog.default.t'
        """
        return f"{self.catalog or 'spark_catalog'}.{self.database or 'default'}.{self.table}"

    def sql(self) -> str:
        """The name for a SQL statement, every part back-quoted.

        Example:
            >>> TableName("t x", "db").sql()
            '`db`.`t x`'
        """
        parts = [p for p in (self.catalog, self.database, self.table) if p]
        return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def parse_name(name: str) -> TableName:
    """A table name as Spark reads it (dots separate parts, back-quotes quote them).

    Example:
        >>> parse_name("spark_catalog.`my db`.t")
        TableName(table='t', database='my db', catalog='spark_catalog')
    """
    import sqlglot
    from sqlglot import exp

    from deltalog.spark.catalog.dialect import DIALECT

    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(f"a table name must be a non-empty string, got {name!r}")
    try:
        table = exp.to_table(name.strip(), dialect=DIALECT)
    except (sqlglot.errors.ParseError, ValueError):
        raise InvalidArgumentError(f"{name!r} is not a table name") from None
    return TableName(table.name, table.db or None, table.catalog or None)


def raw_sql(spark: Any, text: str) -> Any:
    """Run ``text`` with Spark's own ``sql`` (never through deltalog's SQL front end).

    Example:
        >>> raw_sql(spark, "SHOW TABLES").count()                               # doctest: +SKIP
        2
    """
    from deltalog.spark.common.statements import original_sql

    return original_sql(spark)(text)


class DeltaCatalogSource:
    """Placeholder: replaced by a ``pyspark.sql.datasource.DataSource`` subclass in :func:`ensure_source`."""


def _source_class() -> type:
    from pyspark.sql.datasource import DataSource, DataSourceReader

    message = (
        "a Delta catalog table was read through Spark's data source path, which cannot locate it; read it "
        "with spark.table(...) or SQL in a session registered with deltalog (deltalog.spark.register(spark))"
    )

    class _Reader(DataSourceReader):
        def read(self, partition: Any) -> Any:
            raise RuntimeError(message)

    class DeltaCatalogSourceImpl(DataSource):
        """The ``delta`` provider of catalog entries; deltalog reads and writes the tables itself."""

        @classmethod
        def name(cls) -> str:
            return "delta"

        def schema(self) -> Any:
            raise RuntimeError(message)

        def reader(self, schema: Any) -> Any:
            return _Reader()

    return DeltaCatalogSourceImpl


def ensure_source(spark: Any) -> None:
    """Register the ``delta`` provider with the session (once), so Spark accepts ``USING delta`` tables; nothing
    on Spark 3.5, which has no Python data sources (Spark's own paths meeting a Delta table then report that
    it finds no ``delta`` data source; deltalog's reads, writes and SQL never ask Spark for it).

    Example:
        >>> ensure_source(spark)                                                # doctest: +SKIP
    """
    from deltalog.spark.common import compat
    from deltalog.spark.common.sources import register_once

    if not compat.PYTHON_DATA_SOURCES:  # Spark 3.5: none to register (catalog/create.py makes entries without it)
        return
    register_once(spark, "delta", _source_class)


@dataclass(frozen=True)
class CatalogEntry:
    """What the catalog says of a table: its provider, location and whether it is managed."""

    name: TableName
    provider: str
    location: str
    managed: bool

    @property
    def is_delta(self) -> bool:
        """True for ``USING delta`` tables."""
        return self.provider.lower() == "delta"


def _local(location: str) -> str:
    """A catalog location as deltalog opens it (``file:`` URIs become local paths)."""
    if location.startswith("file:"):
        rest = location[5:]
        while rest.startswith("//"):
            rest = rest[1:]
        return unquote(rest)
    return location


def check_location(name: str, existing: str, given: str | None) -> None:
    """Refuse replacing the catalog table ``name`` (at ``existing``) with a table at another location
    ``given``, as delta-spark does (``DELTA_TABLE_LOCATION_MISMATCH``); the same place spelled as a ``file:``
    URI or with a trailing slash is the same location.

    Example:
        >>> check_location("t", "file:/data/t", "/data/t/")
    """
    if given is None:
        return
    import os

    def norm(location: str) -> str:
        local = _local(location)
        return os.path.normpath(local) if "://" not in local else local.rstrip("/")

    if norm(existing) != norm(given):
        from deltalog.errors import InvalidArgumentError

        raise InvalidArgumentError(
            f"[DELTA_TABLE_LOCATION_MISMATCH] The location of the existing table {name} is {existing}. The "
            f"location of the specified table is {given}: a table keeps its location when it is replaced (drop "
            "it first to create it elsewhere, or leave LOCATION out)", table=name)


def lookup(spark: Any, name: TableName | str, *, cached: bool = True) -> CatalogEntry | None:
    """The catalog entry of ``name``, or ``None`` when there is no such table (a temporary view of that
    name shadows the table, as in Spark's resolution: ``None`` too).

    Example:
        >>> lookup(spark, "events").is_delta                                    # doctest: +SKIP
        True
    """
    tn = parse_name(name) if isinstance(name, str) else name
    key = (id(spark), tn.key)
    cache = _scope_cache()
    if cached and cache is not None and key in cache:
        return cache[key]
    entry = _jvm_lookup(spark, tn)
    if entry is _UNKNOWN:
        entry = _sql_lookup(spark, tn)
    assert not isinstance(entry, _Unknown)
    if entry is not None and entry.is_delta:
        # a catalog Delta table is in use: from now on Spark's own paths that meet it find the ``delta``
        # provider (and its message saying how to read the table) instead of "data source not found"
        with contextlib.suppress(Exception):
            ensure_source(spark)
    if cache is not None:
        cache[key] = entry
    return entry


class _Unknown:
    pass


_UNKNOWN = _Unknown()


@dataclass(frozen=True)
class JvmCatalog:
    """The session catalog of a classic session and what naming a table in it takes, fetched once per
    session (every py4j lookup of a JVM class is a round trip)."""

    session: Any
    catalog: Any
    _ident: Any
    _some: Any
    _none: Any

    def ident(self, tn: TableName) -> Any:
        """The ``TableIdentifier`` of ``tn`` (its database, if any; the catalog part is the session's)."""
        return self._ident(tn.table, self._some(tn.database) if tn.database else self._none)


_JVM_CATALOGS: dict[int, JvmCatalog] = {}


def jvm_catalog(spark: Any) -> JvmCatalog | None:
    """The session catalog of ``spark`` (``None`` for Spark Connect sessions).

    Example:
        >>> jvm_catalog(spark).catalog.getCurrentDatabase()                      # doctest: +SKIP
        'default'
    """
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return None
    found = _JVM_CATALOGS.get(id(jsession))
    if found is not None and found.session is jsession:
        return found
    jvm = spark._jvm
    made = JvmCatalog(jsession, jsession.sessionState().catalog(), jvm.org.apache.spark.sql.catalyst.TableIdentifier,
                      jvm.scala.Some, jvm.scala.Option.empty())
    _JVM_CATALOGS.clear()  # one session at a time in practice: never hold on to a stopped one
    _JVM_CATALOGS[id(jsession)] = made
    return made


def _option(text: str) -> str:
    """The value of a Scala ``Option`` printed as text (``Some(x)`` / ``None``), ``""`` for ``None``."""
    return text[5:-1] if text.startswith("Some(") and text.endswith(")") else ""


def _jvm_lookup(spark: Any, tn: TableName) -> CatalogEntry | _Unknown | None:
    """The session catalog asked directly (classic sessions, ``spark_catalog`` names)."""
    if tn.catalog and tn.catalog.lower() != "spark_catalog":
        return _UNKNOWN
    try:
        jc = jvm_catalog(spark)
        if jc is None:
            return _UNKNOWN
        catalog = jc.catalog
        if not tn.database and catalog.getTempView(tn.table).isDefined():
            return None
        if tn.database and not catalog.databaseExists(tn.database):
            return None
        ident = jc.ident(tn)
        if not catalog.tableExists(ident):
            return None
        meta = catalog.getTableMetadata(ident)
        provider = _option(str(meta.provider()))
        kind = str(meta.tableType().name()).upper()
        location = _option(str(meta.storage().locationUri()))
    except Exception:  # a catalog this path does not understand: ask with SQL
        return _UNKNOWN
    if kind == "VIEW":
        provider = provider or "view"
    return CatalogEntry(tn, provider, _local(location), kind == "MANAGED")


def _sql_lookup(spark: Any, tn: TableName) -> CatalogEntry | None:
    db = f" IN `{tn.database.replace('`', '``')}`" if tn.database else ""
    pattern = tn.table.replace("'", "\\'")
    try:
        rows = raw_sql(spark, f"SHOW TABLE EXTENDED{db} LIKE '{pattern}'").collect()
    except Exception as exc:  # an unknown database: no table
        if "SCHEMA_NOT_FOUND" in str(exc) or "NoSuchDatabase" in str(exc) or "not found" in str(exc).lower():
            rows = []
        else:
            raise
    entry: CatalogEntry | None = None
    for row in rows:
        if str(row["tableName"]).lower() != tn.table.lower():
            continue
        if row["isTemporary"]:
            return None
        info = _information(str(row["information"]))
        entry = CatalogEntry(tn, info.get("Provider", ""), _local(info.get("Location", "")),
                             info.get("Type", "").upper() == "MANAGED")
    return entry


def _information(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and not key.startswith(" "):
            out.setdefault(key.strip(), value.strip())
    return out


def sync_schema(spark: Any, name: TableName, location: str) -> None:
    """Bring the catalog's copy of a Delta table's columns up to date with its log, where Spark keeps
    one it reads itself (classic sessions): Spark checks a ``CREATE VIEW`` against it and lists it in
    ``SHOW CREATE TABLE`` / ``spark.catalog.listColumns``, while deltalog's reads follow the log.

    Example:
        >>> sync_schema(spark, parse_name("events"), "/spark-warehouse/events")      # doctest: +SKIP
    """
    import json

    from deltalog.spark.common.core import load_snapshot, spark_schema

    jc = jvm_catalog(spark)
    if jc is None or (name.catalog and name.catalog.lower() != "spark_catalog"):
        return
    try:
        meta = jc.catalog.getTableMetadata(jc.ident(name))
        parts = {p.lower() for p in str(meta.partitionColumnNames().mkString("\x1f")).split("\x1f") if p}
        snapshot = load_snapshot(location)
        wanted = spark_schema([f for f in snapshot.schema.fields if f.name.lower() not in parts])
        current = json.loads(str(meta.dataSchema().json()))

        def shape(struct: Any) -> list[tuple[str, str]]:
            return [(f["name"], json.dumps(f["type"], sort_keys=True)) for f in struct["fields"]]

        if shape(current) == shape(json.loads(wanted.json())):
            return
        # the external catalog's own call: the session catalog's refuses dropped columns (a replaced table)
        canonical = meta.identifier()
        jc.catalog.externalCatalog().alterTableDataSchema(
            str(canonical.database().get()), str(canonical.table()),
            spark._jvm.org.apache.spark.sql.types.DataType.fromJson(wanted.json()))
        jc.catalog.refreshTable(canonical)
    except Exception:  # a catalog this path does not understand: its copy stays (the log is the table's truth)
        return


def alter_entry(spark: Any, name: TableName, *, rename_to: TableName | None = None,
                location: str | None = None) -> bool:
    """Rename the catalog table ``name`` or point it at ``location`` in the session catalog directly (classic
    sessions): what Spark's ``ALTER TABLE ... RENAME TO`` / ``SET LOCATION`` do, without the look-up of the table's
    provider they start with (Spark 3.5 has no ``delta`` data source to find). A managed table's directory moves
    with its name, as in Spark. False where there is no session catalog to ask (Spark Connect, other catalogs).

    Example:
        >>> alter_entry(spark, parse_name("events"), rename_to=parse_name("events_old"))  # doctest: +SKIP
        True
    """
    jc = jvm_catalog(spark)
    if jc is None or (name.catalog and name.catalog.lower() != "spark_catalog"):
        return False
    ident = jc.ident(name)
    if location is not None:
        jvm = spark._jvm
        meta = jc.catalog.getTableRawMetadata(ident)
        st = meta.storage()
        uri = jvm.org.apache.spark.sql.catalyst.catalog.CatalogUtils.stringToURI(location)
        jc.catalog.alterTable(meta.withNewStorage(jvm.scala.Some(uri), st.inputFormat(), st.outputFormat(),
                                                  st.compressed(), st.serde(), st.properties()))
    if rename_to is not None:
        jc.catalog.renameTable(ident, jc.ident(rename_to))
    return True


def forget(spark: Any, name: TableName | str | None = None) -> None:
    """Drop remembered lookups (of ``name``, or all of the session's) after the catalog changed.

    Example:
        >>> forget(spark, "events")                                             # doctest: +SKIP
    """
    cache = _scope_cache()
    if cache is None:
        return
    if name is None:
        for k in [k for k in cache if k[0] == id(spark)]:
            del cache[k]
        return
    tn = parse_name(name) if isinstance(name, str) else name
    cache.pop((id(spark), tn.key), None)


def managed_location(spark: Any, name: TableName) -> str:
    """Where Spark keeps a managed table: ``<warehouse>/<table>`` (default database) or
    ``<warehouse>/<database>.db/<table>``.

    Example:
        >>> managed_location(spark, parse_name("db.t"))                          # doctest: +SKIP
        '/spark-warehouse/db.db/t'
    """
    if name.database and name.database.lower() != "default":
        try:
            rows = raw_sql(spark, f"DESCRIBE DATABASE `{name.database.replace('`', '``')}`").collect()
            loc = next((str(r[1]) for r in rows if str(r[0]).lower() == "location"), None)
        except Exception:
            loc = None
        if loc:
            return os.path.join(_local(loc), name.table.lower())
    warehouse = str(spark.conf.get("spark.sql.warehouse.dir", "spark-warehouse"))
    base = _local(warehouse)
    if name.database and name.database.lower() != "default":
        base = os.path.join(base, f"{name.database.lower()}.db")
    return os.path.join(base, name.table.lower())


def require_delta(spark: Any, name: TableName | str) -> CatalogEntry:
    """The entry of a catalog Delta table; named errors for a missing table or another provider.

    Example:
        >>> require_delta(spark, "events").location                             # doctest: +SKIP
        '/spark-warehouse/events'
    """
    entry = lookup(spark, name)
    shown = name.qualified if isinstance(name, TableName) else name
    if entry is None:
        raise TableNotFoundError(
            f"[TABLE_OR_VIEW_NOT_FOUND] the table {shown} cannot be found in the catalog", table=str(shown))
    if not entry.is_delta:
        raise InvalidArgumentError(
            f"[DELTA_TABLE_ONLY_OPERATION] {shown} is not a Delta table (provider {entry.provider or 'unknown'})",
            table=str(shown))
    return entry


@dataclass(frozen=True)
class TableRef:
    """A Delta table named in a statement: ``location`` (path or URI), the catalog ``name`` when it is a
    catalog table, time travel, and the alias the statement gives it."""

    location: str
    name: TableName | None = None
    version: int | None = None
    timestamp: str | None = None
    alias: str | None = None
    managed: bool = False

    @property
    def shown(self) -> str:
        """How messages name the table."""
        return self.name.qualified if self.name is not None else f"delta.`{self.location}`"
