"""Spark's table statements that change, show or hold a Delta table: ``TRUNCATE TABLE``, ``COMMENT ON TABLE``
/ ``COMMENT ON COLUMN``, ``SHOW CREATE TABLE``, ``SHOW PARTITIONS``, ``CACHE TABLE`` and ``UNCACHE TABLE``.

* ``TRUNCATE TABLE t`` removes every row as ``DELETE FROM t`` does (one ``DELETE`` commit that removes
  every file; the files stay for time travel until ``VACUUM``); with a ``PARTITION`` clause it is refused as
  by delta-spark (``DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED``: use ``DELETE``).
* ``COMMENT ON TABLE t IS '...' | NULL`` sets the table's description in the log (``DESCRIBE DETAIL``'s
  ``description``), as ``ALTER TABLE t SET TBLPROPERTIES ('comment' = '...')`` does; a catalog table's
  own comment follows. ``COMMENT ON COLUMN t.c IS '...'`` is ``ALTER TABLE t ALTER COLUMN c COMMENT '...'``.
* ``SHOW CREATE TABLE t`` prints the statement that creates the table as its log describes it (columns with
  ``NOT NULL``, defaults, generated and identity columns and comments; ``USING delta``; ``PARTITIONED BY`` or
  ``CLUSTER BY``; the description; an external table's ``LOCATION``; the properties ``SHOW TBLPROPERTIES``
  lists), in the layout Spark prints it, in its ``createtab_stmt`` column.
* ``SHOW PARTITIONS t [PARTITION (c = v, ...)]`` lists the partitions that hold live files, one
  ``partition`` row each (``c=v/d=w``, escaped as directory names, null as ``__HIVE_DEFAULT_PARTITION__``),
  sorted, from the log.
* ``CACHE [LAZY] TABLE t [OPTIONS ('storageLevel' 'DISK_ONLY')]`` of a Delta table caches deltalog's read of
  its current version (eagerly unless ``LAZY``; ``MEMORY_AND_DISK`` by default, as Spark): later reads of that
  version -- SQL, ``spark.table``, ``spark.read.format("delta")`` -- plan the same scan, so Spark serves them
  from the cache (a query's ``WHERE`` then filters the cached rows rather than skipping files). After a commit
  reads plan the new version's files and read them, not the cache; run ``CACHE TABLE`` again to cache that
  (which drops what it cached of the older version).
  ``UNCACHE TABLE t`` drops it (and a ``cache()`` of a read of the same version). ``CACHE TABLE`` of a view
  over Delta tables is refused, naming what to do instead. ``CACHE [LAZY] TABLE name AS SELECT ...`` over
  Delta tables caches the query's rows as they are now, under the temporary view ``name``.

Other tables go to Spark unchanged.

Example:
    >>> spark.sql("TRUNCATE TABLE events")                                        # doctest: +SKIP
    >>> spark.sql("COMMENT ON TABLE events IS 'clicks, one row per click'")       # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from deltalog.spark.catalog.dialect import DIALECT, quoted_name, sql_string, string_value, type_ddl
from deltalog.spark.catalog.entries import raw_sql
from deltalog.spark.sql.refs import TableRef, read_ref, resolve, resolve_table
from deltalog.spark.sql.shared import refuse

__all__ = ["catalog_cache", "comment_on", "handle", "show_create_table", "show_partitions"]


def handle(spark: Any, expression: Any, text: str) -> Any:
    """Run ``TRUNCATE TABLE`` / ``COMMENT ON`` / ``CACHE TABLE`` on a Delta table; ``None`` when the
    statement is none of them or names another table (Spark runs it).

    Example:
        >>> handle(spark, parse("TRUNCATE TABLE events"), "TRUNCATE TABLE events")      # doctest: +SKIP
        DataFrame[]
    """
    from sqlglot import exp

    if isinstance(expression, exp.TruncateTable):
        return _truncate(spark, expression, text)
    if isinstance(expression, exp.Comment):
        return _comment(spark, expression, text)
    if isinstance(expression, exp.Cache):
        return _cache(spark, expression, text)
    if isinstance(expression, exp.Uncache):
        return _uncache(spark, expression)
    return None


def _empty(spark: Any) -> Any:
    from deltalog.spark.sql.shared import empty_result

    return empty_result(spark)


def _truncate(spark: Any, expression: Any, text: str) -> Any:
    from sqlglot import exp

    from deltalog.spark.dml import delete

    tables = [t for t in expression.expressions if isinstance(t, exp.Table)]
    refs = [resolve_table(spark, t) for t in tables]
    if len(tables) != 1 or refs[0] is None:
        if any(r is not None for r in refs):
            raise refuse(text, "TRUNCATE TABLE takes one table")
        return None
    ref = refs[0]
    if expression.args.get("partition") is not None:
        raise refuse(text, "[DELTA_TRUNCATE_TABLE_PARTITION_NOT_SUPPORTED] TRUNCATE TABLE on Delta tables does not "
                           f"support partition predicates; use DELETE FROM {ref.shown} WHERE ... to delete specific "
                           "partitions or rows")
    delete(spark, ref.location, None)
    return _empty(spark)


def _comment(spark: Any, expression: Any, text: str) -> Any:
    from sqlglot import exp

    value = string_value(expression.expression)
    target = expression.this
    if value is None or not isinstance(target, (exp.Table, exp.Column)):
        return None  # not a comment deltalog sets: Spark's own statement (and error)
    return comment_on(spark, str(expression.args.get("kind") or ""), target.sql(dialect=DIALECT), value, text)


def comment_on(spark: Any, kind: str, target: str, comment: str | None, text: str) -> Any:
    """``COMMENT ON TABLE | COLUMN target IS comment`` (``None``: ``IS NULL``) on a Delta table; ``None`` when
    ``target`` is not one (Spark runs the statement).

    Example:
        >>> comment_on(spark, "TABLE", "events", "clicks", "COMMENT ON TABLE events IS 'clicks'")   # doctest: +SKIP
        DataFrame[]
    """
    from sqlglot import exp

    from deltalog.spark.common.core import open_table

    if kind.upper() == "TABLE":
        ref = resolve_table(spark, exp.to_table(target, dialect=DIALECT))
        if ref is None:
            return None
        table = open_table(ref.location)
        if comment is None:
            table.unset_properties(["comment"], if_exists=True)
        else:
            table.set_properties({"comment": comment})
        _catalog_too(spark, ref, text)
        return _empty(spark)
    if kind.upper() == "COLUMN":
        column = exp.to_column(target, dialect=DIALECT)
        if not isinstance(column, exp.Column) or not column.table:
            return None
        owner = exp.Table(this=exp.to_identifier(column.table),
                          db=exp.to_identifier(column.db) if column.db else None,
                          catalog=exp.to_identifier(column.catalog) if column.catalog else None)
        ref = resolve_table(spark, owner)
        if ref is None:
            return None
        open_table(ref.location).change_column(column.name, comment=comment or "")
        return _empty(spark)
    return None


def _catalog_too(spark: Any, ref: TableRef, text: str) -> None:
    """A catalog table's own comment follows the log's (``SHOW TABLE EXTENDED``, ``spark.catalog``)."""
    if ref.name is not None:
        with contextlib.suppress(Exception):  # the log holds the description; the catalog's is a courtesy
            raw_sql(spark, text)


def _cache(spark: Any, expression: Any, text: str) -> Any:
    from sqlglot import exp

    from deltalog.spark.sql.refs import delta_view, frame_view, frame_view_rows

    target = expression.this
    if not isinstance(target, exp.Table):
        return None
    if expression.expression is not None:
        return _cache_query(spark, expression, target)
    ref = resolve_table(spark, target)
    remembered = frame_view(spark, target) if ref is None else None
    if remembered is not None:  # a temp view of a deltalog read: its rows now, cached by Spark from then on
        if not target.db:
            frame_view_rows(spark, remembered).createOrReplaceTempView(target.name)
        raw_sql(spark, text)
        return _empty(spark)
    if ref is not None:
        return _cache_table(spark, expression, ref, text)
    if delta_view(spark, target) is None:
        return None
    shown = target.sql(dialect=DIALECT)
    raise refuse(text, f"{shown} is a view over Delta tables, which deltalog reads anew at each query, so Spark's "
                       "cache would hold rows no query reads; cache its tables (CACHE TABLE t), or cache a snapshot "
                       f"with CACHE TABLE name AS SELECT * FROM {shown}")


#: deltalog's cached reads of Delta tables by table location, for ``UNCACHE TABLE``.
_CACHED: dict[str, list[Any]] = {}
_CACHED_LOCK = threading.Lock()


def _storage_level(expression: Any, text: str) -> Any:
    from pyspark import StorageLevel

    items = [string_value(o) or o.name for o in expression.args.get("options") or []]
    given = dict(zip(items[::2], items[1::2], strict=False))
    name = next((v for k, v in given.items() if str(k).lower() == "storagelevel"), "MEMORY_AND_DISK")
    level = getattr(StorageLevel, str(name).upper(), None)
    if not isinstance(level, StorageLevel):
        known = sorted(k for k, v in vars(StorageLevel).items() if isinstance(v, StorageLevel))
        raise refuse(text, f"invalid storageLevel {name!r}; use one of {', '.join(known)}")
    return level


def _cache_table(spark: Any, expression: Any, ref: TableRef, text: str) -> Any:
    """``CACHE [LAZY] TABLE t`` of a Delta table: deltalog's read of its current version, cached by Spark."""
    _cache_read(spark, ref, _storage_level(expression, text), lazy=bool(expression.args.get("lazy")))
    return _empty(spark)


def _cache_read(spark: Any, ref: TableRef, level: Any, *, lazy: bool) -> None:
    """Cache deltalog's read of ``ref`` now; what ``CACHE TABLE`` cached of an older version of it, which no read
    uses any more, leaves Spark's cache."""
    frame = read_ref(spark, ref)
    with _CACHED_LOCK:
        earlier = _CACHED.pop(ref.location, [])
    for old in earlier:
        with contextlib.suppress(Exception):  # the same version (Spark keeps one entry for both) stays cached
            if not old.sameSemantics(frame):
                old.unpersist()
    frame.persist(level)
    if not lazy:
        frame.count()
    with _CACHED_LOCK:
        _CACHED.setdefault(ref.location, []).append(frame)


def catalog_cache(spark: Any, method: str, name: str, *args: Any, **kwargs: Any) -> Any:
    """``spark.catalog.cacheTable`` / ``uncacheTable`` / ``isCached`` of a Delta table, as ``CACHE LAZY TABLE``,
    ``UNCACHE TABLE`` and whether its current version's read is served from the cache; ``NotImplemented`` for
    other tables and on Spark Connect (Spark's own method runs).

    Example:
        >>> catalog_cache(spark, "isCached", "events")                           # doctest: +SKIP
        False
    """
    from pyspark import StorageLevel

    from deltalog.spark.common.core import served_by_cache
    from deltalog.spark.common.storage import is_connect

    if is_connect(spark) or not isinstance(name, str):
        return NotImplemented
    try:
        ref = resolve(spark, name)
    except Exception:  # not a Delta table (or not a table): Spark's own method says so
        return NotImplemented
    if method == "cacheTable":
        level = kwargs.get("storageLevel", args[0] if args else None)
        _cache_read(spark, ref, level if level is not None else StorageLevel.MEMORY_AND_DISK, lazy=True)
        return None
    if method == "uncacheTable":
        _uncache_ref(spark, ref)
        return None
    return served_by_cache(read_ref(spark, ref))


def _uncache(spark: Any, expression: Any) -> Any:
    """``UNCACHE TABLE [IF EXISTS] t`` of a Delta table: the reads ``CACHE TABLE t`` cached, and a cached read
    of its current version, leave Spark's cache."""
    from sqlglot import exp

    target = expression.this
    ref = resolve_table(spark, target) if isinstance(target, exp.Table) else None
    if ref is None:
        return None
    _uncache_ref(spark, ref)
    return _empty(spark)


def _uncache_ref(spark: Any, ref: TableRef) -> None:
    with _CACHED_LOCK:
        frames = _CACHED.pop(ref.location, [])
    for frame in frames:
        frame.unpersist()
    with contextlib.suppress(Exception):  # nothing to read (an empty log): nothing cached either
        read_ref(spark, ref).unpersist()


def _cache_query(spark: Any, expression: Any, target: Any) -> Any:
    """``CACHE [LAZY] TABLE name AS SELECT ...`` over Delta tables: a temporary view of the query's rows now
    (deltalog's reads), cached by Spark."""
    from deltalog.spark.sql.refs import rewrite_query

    rewritten = rewrite_query(spark, expression.expression)
    if not rewritten.frames:
        return None
    rewritten.sql(spark).createTempView(target.sql(dialect=DIALECT))
    lazy = "LAZY " if expression.args.get("lazy") else ""
    raw_sql(spark, f"CACHE {lazy}TABLE {target.sql(dialect=DIALECT)}")
    return _empty(spark)


def show_create_table(spark: Any, ref: TableRef) -> Any:
    """``SHOW CREATE TABLE`` of a Delta table: one row, ``createtab_stmt`` (see the module docstring).

    Example:
        >>> print(show_create_table(spark, resolve(spark, "events")).first()[0])       # doctest: +SKIP
        CREATE TABLE spark_catalog.default.events (
          id BIGINT NOT NULL,
          day DATE)
        USING delta
        PARTITIONED BY (day)
        TBLPROPERTIES (
          'delta.minReaderVersion' = '1',
          'delta.minWriterVersion' = '2')
    """
    from deltalog.commands.clustering import clustering_of
    from deltalog.spark.common.core import load_snapshot, table_properties

    snapshot = load_snapshot(ref.location)
    name = (".".join(quoted_name(p) for p in ("spark_catalog", ref.name.database or _current_database(spark),
                                          ref.name.table)) if ref.name is not None else ref.shown)
    lines = [f"CREATE TABLE {name} ("]
    columns = [f"  {_column_ddl(f)}" for f in snapshot.schema.fields]
    lines.append(",\n".join(columns) + ")")
    lines.append("USING delta")
    clustering = clustering_of(snapshot)
    if snapshot.partition_columns:
        lines.append(f"PARTITIONED BY ({', '.join(quoted_name(c) for c in snapshot.partition_columns)})")
    elif clustering:
        lines.append(f"CLUSTER BY ({', '.join(quoted_name(c) for c in clustering)})")
    if snapshot.metadata.description:
        lines.append(f"COMMENT {sql_string(snapshot.metadata.description)}")
    if ref.name is not None and not ref.managed:
        lines.append(f"LOCATION {sql_string(ref.location)}")
    props = table_properties(snapshot)
    if props:
        lines.append("TBLPROPERTIES (")
        lines.append(",\n".join(f"  {sql_string(k)} = {sql_string(v)}" for k, v in props.items()) + ")")
    return spark.createDataFrame([("\n".join(lines) + "\n",)], "createtab_stmt string")


def _current_database(spark: Any) -> str:
    return str(spark.catalog.currentDatabase())


def _column_ddl(f: Any) -> str:
    """A top-level column as ``CREATE TABLE`` spells it, with its default, generation or identity."""
    from deltalog.txn.constraints import CHAR_VARCHAR_KEY
    from deltalog.txn.defaults import CURRENT_DEFAULT
    from deltalog.txn.generated import GENERATION_EXPRESSION
    from deltalog.txn.identity import ALLOW_EXPLICIT, START, STEP

    meta = f.metadata
    out = f"{quoted_name(f.name)} {str(meta.get(CHAR_VARCHAR_KEY) or '').upper() or type_ddl(f.type)}"  # CHAR(n)
    if not f.nullable:
        out += " NOT NULL"
    if meta.get(CURRENT_DEFAULT) is not None:
        out += f" DEFAULT {meta[CURRENT_DEFAULT]}"
    if meta.get(GENERATION_EXPRESSION) is not None:
        out += f" GENERATED ALWAYS AS ({meta[GENERATION_EXPRESSION]})"
    elif meta.get(START) is not None:
        how = "BY DEFAULT" if str(meta.get(ALLOW_EXPLICIT)).lower() == "true" else "ALWAYS"
        out += f" GENERATED {how} AS IDENTITY (START WITH {meta[START]} INCREMENT BY {meta.get(STEP, 1)})"
    if meta.get("comment") is not None:
        out += f" COMMENT {sql_string(str(meta['comment']))}"
    return out


def show_partitions(spark: Any, ref: TableRef, spec: dict[str, str], text: str) -> Any:
    """``SHOW PARTITIONS`` of a Delta table: the partitions of its live files (those matching ``spec``, a
    partition column to value mapping), one ``partition`` row each (see the module docstring).

    Example:
        >>> show_partitions(spark, resolve(spark, "events"), {}, "SHOW PARTITIONS events").first()[0]  # doctest: +SKIP
        'day=2024-05-01'
    """
    from deltalog.protocol.partitions import partition_path
    from deltalog.protocol.schema import physical_name
    from deltalog.spark.common.core import load_snapshot

    snapshot = load_snapshot(ref.location)
    columns = list(snapshot.partition_columns)
    if not columns:
        raise refuse(text, f"[INVALID_PARTITION_OPERATION.PARTITION_SCHEMA_IS_EMPTY] {ref.shown} is not partitioned")
    by_lower = {c.lower(): c for c in columns}
    unknown = [k for k in spec if k.lower() not in by_lower]
    if unknown:
        raise refuse(text, f"{unknown} are not partition columns of {ref.shown} (it is partitioned by {columns})")
    wanted = {by_lower[k.lower()]: v for k, v in spec.items()}
    keys = {c: physical_name(snapshot.schema.field(c), snapshot.column_mapping_mode) for c in columns}
    seen: set[str] = set()
    for values in snapshot.add_files().column("partitionValues").to_pylist():
        raw = dict(values or [])
        logical = {c: raw.get(keys[c], raw.get(c)) for c in columns}
        if all(logical[c] == v for c, v in wanted.items()):
            seen.add(partition_path(columns, logical).rstrip("/"))
    return spark.createDataFrame([(p,) for p in sorted(seen)], "partition string")
