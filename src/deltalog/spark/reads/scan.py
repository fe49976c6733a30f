"""Reading a Delta table into a Spark DataFrame with Spark's own parquet scan.

The kernel reconstructs the snapshot (time travel included) and picks the live files; simple
``(column, op, value)`` filters prune partitions and skip files by min/max statistics on the driver.
Everything else runs in Spark, and no row reaches the driver:

* data columns come from ``spark.read.schema(<physical schema>).parquet(*live_files)``; under column
  mapping the physical names are read and renamed (nested structs cast) to the logical names; a column
  a file lacks reads as null;
* partition values are the log's. When the driver has verified that every file's Hive directories
  spell exactly those values as Spark parses them (:mod:`deltalog.spark.reads.hive`; the usual case), the
  scan gets ``basePath`` and the typed partition columns in its schema, and Spark's own partition
  discovery supplies them -- so filters on partition columns applied after ``load()`` prune files
  (``PartitionFilters``). Otherwise (odd layouts, binary or NaN values, zoned timestamp texts, ...)
  a small DataFrame of ``(file, typed partition columns)`` built from Arrow is broadcast-joined on
  ``_metadata.file_path``;
* deletion vectors are decoded on the driver into a small DataFrame of deleted rows, removed with a
  broadcast ``left_anti`` join; the files that have one are scanned apart from the others (the two
  scans are unioned). Rows are keyed by ``_metadata.file_size`` and ``_metadata.row_index`` packed in
  one ``long`` when the sizes tell the files apart (:mod:`deltalog.spark.reads.dv_scan`), else by
  ``_metadata.file_path`` and ``_metadata.row_index`` (a string per row: several times slower);
* a SQL string or ``Column`` as ``where`` skips files too: its simple conjuncts (``column op literal``,
  ``IN``, ``BETWEEN``, joined by ``AND``) prune partitions and skip files by min/max statistics, and
  Spark applies the whole condition;
* filters applied *after* loading skip files as well: the frame returned here (so
  ``spark.read.format("delta").load(p)`` and ``DeltaTable.toDF()``) and the frames derived from it by
  ``select`` / ``withColumn(s)`` / ``withColumn(s)Renamed`` / ``drop`` / ``filter`` re-plan the scan
  on a ``filter`` / ``where`` -- the same snapshot read again with more files skipped, the steps
  replayed (:mod:`deltalog.spark.reads.skipping`). Only conditions on columns that are still the table's own
  skip files. Limit: after any other transformation (``join``, ``groupBy``, ``alias``, ...) Spark
  filters the rows without skipping files (the result is the same); conditions or steps naming a
  particular frame's columns (``df.id``) end the re-planning.

Example:
    >>> from deltalog.spark import read
    >>> df = read(spark, "/data/events", versionAsOf=3, where=[("day", "=", "2024-01-01")])  # doctest: +SKIP
    >>> df.count()                                                                          # doctest: +SKIP
    1000
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data.filters import Condition, normalize_filter, prune_files
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import PrimitiveType, StructField, StructType, physical_name
from deltalog.spark.common.compat import frame_from_arrow, with_relation_schema
from deltalog.spark.common.core import (
    READ_METADATA,
    load_snapshot,
    needs_cast,
    physical_field,
    quoted,
    read_field,
    spark_schema,
    spark_type,
)
from deltalog.spark.reads.dv_scan import (
    READER_ROW_INDEX,
    ROW_KEY,
    keyed_scan,
    row_index_sql,
    row_key_bits,
    without_deleted_rows,
)
from deltalog.spark.reads.files import FILE as _FILE
from deltalog.spark.reads.files import ROW as _ROW
from deltalog.spark.reads.files import check_keys as _check_join_keys
from deltalog.spark.reads.files import file_keys, key_fields, parquet_scan, partition_table, uses_native_io
from deltalog.spark.reads.files import scan_error as _scan_error
from deltalog.spark.reads.hive import hive_layout_matches
from deltalog.spark.reads.lazy_frames import lazy_frame, materialise
from deltalog.spark.reads.log_index import log_indexed, usable
from deltalog.spark.reads.skipping import attach, skipping_conditions

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["READ_OPTIONS", "file_keyed_rows", "keyed_rows", "read", "read_snapshot", "scan_rows"]

#: Options ``spark.read.format("delta")`` accepts (case-insensitive), besides ``path``.
READ_OPTIONS = ("versionAsOf", "timestampAsOf", "path")

DataFrame = Any  # pyspark.sql.DataFrame (classic or Connect)


def read(
    spark: Any,
    path: str,
    *,
    versionAsOf: int | str | None = None,
    timestampAsOf: Any = None,
    where: Any = None,
    columns: Sequence[str] | None = None,
    storage_options: Any = None,
) -> DataFrame:
    """The Delta table at ``path`` (latest, or at ``versionAsOf`` / ``timestampAsOf``; a timestamp without a
    zone is in the session time zone, as delta-spark reads it) as a DataFrame.

    ``path`` may be an object-store URI; its credentials come from the session's Hadoop settings
    (``spark.hadoop.fs.s3a.*``, ...), ``storage_options`` (Hadoop ``fs.*`` keys for this read) and the
    environment (see :mod:`deltalog.spark.common.storage`).

    ``where`` is a list of ``(column, op, value)`` conditions (AND; ops ``= != < <= > >= in not in``)
    used for partition pruning and min/max file skipping and then as the row filter, or a Spark
    ``Column`` / SQL string, whose simple conjuncts prune and skip files before Spark applies it as
    the row filter. ``columns`` selects logical columns. Later ``filter`` / ``where`` calls on the result (also after
    ``select``, ``withColumn``, ...) re-plan the scan with skipping (see the module docstring).

    Example:
        >>> read(spark, "/data/events", columns=["id"], where=[("day", ">=", "2024-01-01")]).count()
        ... # doctest: +SKIP
        42
    """
    from deltalog.spark.common.instants import session_instant

    at = session_instant(spark, timestampAsOf, option="timestampAsOf")  # no zone: the session's, as delta-spark
    snapshot = load_snapshot(path, version=versionAsOf, timestamp=at, options=storage_options, at_syntax=True,
                             instant=lambda text: session_instant(spark, text, option="the path's @ timestamp"))
    # not time travel: no version or timestamp, and no ``path@v3`` (whose table is the path before the @)
    latest = versionAsOf is None and at is None and snapshot.table == str(path)
    return read_snapshot(spark, snapshot, where=where, columns=columns, latest=latest)


def _split_where(where: Any, schema: StructType, table: str) -> tuple[list[Condition], Any]:
    """Kernel conditions (pruning + row filter) and/or a Spark filter (row filter only)."""
    if where is None:
        return [], None
    if isinstance(where, str) or type(where).__name__ == "Column":
        return [], where
    if isinstance(where, (list, tuple)):
        conditions, _ = normalize_filter(where, schema, table=table)
        return conditions, None
    raise InvalidArgumentError(
        "where must be a list of (column, op, value) conditions, a SQL string or a Spark Column, "
        f"got {type(where).__name__}",
        table=table,
    )



def _condition_column(cond: Condition) -> Any:
    from pyspark.sql import functions as F

    col = F.col(quoted(cond.column))
    if cond.op == "in":
        return col.isin(list(cond.value))
    if cond.op == "not in":
        return ~col.isin(list(cond.value))
    value = F.lit(cond.value)
    ops = {"=": col.__eq__, "!=": col.__ne__, "<": col.__lt__, "<=": col.__le__, ">": col.__gt__, ">=": col.__ge__}
    return ops[cond.op](value)


def read_snapshot(
    spark: Any,
    snapshot: Snapshot,
    *,
    where: Any = None,
    columns: Sequence[str] | None = None,
    prune: Sequence[Condition] = (),
    row_metadata: bool = False,
    latest: bool = False,
) -> Any:
    """A snapshot's rows as a DataFrame (see :func:`read`; the snapshot is already loaded). ``prune``:
    more conditions that skip files (only skip: Spark does not apply them as a filter). With
    ``row_metadata`` the frame also has a ``_metadata`` struct column (file fields, and a row-tracking
    table's row ids: :mod:`deltalog.spark.reads.row_metadata`) and is returned untracked. ``latest``: the
    snapshot is the table's latest, not time travel (a temporary view of the frame then reads the table
    as it is at each query: :mod:`deltalog.spark.reads.frame_views`).

    Example:
        >>> import deltalog
        >>> read_snapshot(spark, deltalog.Table("/data/events").snapshot()).count()   # doctest: +SKIP
        1000
    """
    from pyspark.sql import functions as F

    schema = snapshot.schema
    mode = snapshot.column_mapping_mode
    parts = set(snapshot.partition_columns)
    where_table = snapshot.table
    names = list(columns) if columns is not None else schema.field_names
    if isinstance(columns, str):
        raise InvalidArgumentError("columns must be a list of column names, not a string", table=where_table)
    unknown = [c for c in names if c not in schema]
    if unknown:
        raise InvalidArgumentError(
            f"[UNRESOLVED_COLUMN] unknown column(s) {unknown}; the table has {schema.field_names}",
            table=where_table, version=snapshot.version,
        )
    names = [schema.field(c).name for c in names]
    conditions, spark_filter = _split_where(where, schema, where_table)
    needed = list(dict.fromkeys([*names, *(c.column for c in conditions)]))
    if spark_filter is not None:
        needed = list(dict.fromkeys([*needed, *schema.field_names]))
    skipping = [] if spark_filter is None else skipping_conditions(spark_filter, snapshot) or []
    files = prune_files(snapshot, [*conditions, *skipping, *prune])
    logical = [schema.field(n) for n in needed]
    if row_metadata:
        from deltalog.spark.reads.row_metadata import METADATA, metadata_scan

        df = metadata_scan(spark, snapshot, files)
        names = [*names, METADATA]
        needed = [*needed, METADATA]
    elif files.num_rows == 0:
        df = spark.createDataFrame([], spark_schema([read_field(f) for f in logical], keep_metadata=True))
    elif not conditions and spark_filter is None and needed == names and _has_dv(files):
        # the plan of a deletion-vector read is built when first needed: a count() from the log needs none
        lazy = lazy_frame(spark, lambda: _scan(spark, snapshot, files, logical, mode, parts, reuse=True),
                          columns=names)
        if lazy is not None:
            df = attach(lazy, snapshot, where=where, columns=columns, prune=prune, rescan=read_snapshot, latest=latest)
            if type(df).__dict__.get("__getattr__") is None:  # not tracked, so nothing builds it later: now
                materialise(df)
            return df
        df = _scan(spark, snapshot, files, logical, mode, parts, reuse=True)
    else:
        df = _scan(spark, snapshot, files, logical, mode, parts, reuse=True)
    for cond in conditions:
        df = df.filter(_condition_column(cond))
    if spark_filter is not None:
        df = df.filter(spark_filter)
    if needed != names or row_metadata:  # each select costs a few driver round trips; skip needless ones
        df = df.select(*[F.col(quoted(n)) for n in names])
    if row_metadata:
        return df
    # Later filters (directly or after select / withColumn / ...) re-plan this scan with file skipping.
    return attach(df, snapshot, where=where, columns=columns, prune=prune, rescan=read_snapshot, latest=latest)


def _has_dv(files: pa.Table) -> bool:
    return "deletionVector" in files.column_names and files.column("deletionVector").null_count < files.num_rows


def scan_rows(spark: Any, snapshot: Snapshot, files: pa.Table) -> Any:
    """The live rows of ``files`` (an ``add_files()`` table) in the table's logical columns, as a read scans
    them (deletion vectors applied, partition values attached) and without per-row file keys: what a
    copy-on-write rewrite copies when no row ids need to travel with the rows.

    Example:
        >>> scan_rows(spark, snap, snap.add_files()).count()                          # doctest: +SKIP
        1000
    """
    fields = list(snapshot.schema.fields)
    if files.num_rows == 0:
        return spark.createDataFrame([], spark_schema([read_field(f) for f in fields], keep_metadata=True))
    return _scan(spark, snapshot, files, fields, snapshot.column_mapping_mode, set(snapshot.partition_columns))


def keyed_rows(spark: Any, snapshot: Snapshot, files: pa.Table) -> tuple[Any, int] | None:
    """:func:`scan_rows` of ``files`` plus, last, each row's :data:`~deltalog.spark.reads.dv_scan.ROW_KEY`: its row
    index and its file's size (a file's key, when no two of ``files`` share a size) packed in one ``long``,
    ``row_index << bits | size``; returns the frame and ``bits``. A number per row instead of the file's path
    and row index (a string per row) for jobs that shuffle every row. ``None`` when the rows cannot be keyed
    so: shared sizes, row counts missing from the statistics, scans not planned from the log, files read by
    Arrow tasks or partition values joined on the path.

    Example:
        >>> df, bits = keyed_rows(spark, snap, snap.add_files())                       # doctest: +SKIP
        >>> df.select((F.col(ROW_KEY) % (1 << bits)).alias("size")).distinct().count()  # doctest: +SKIP
        4
    """
    if files.num_rows == 0 or len(set(files.column("size").to_pylist())) != files.num_rows:
        return None
    bits = row_key_bits(files)
    if bits is None:
        return None
    fields = list(snapshot.schema.fields)
    df = _scan_files(spark, snapshot, files, fields, snapshot.column_mapping_mode, set(snapshot.partition_columns),
                     row_key=bits)
    return None if df is None else (df, bits)


def file_keyed_rows(
    spark: Any, snapshot: Snapshot, files: pa.Table, *, declared: bool = True, extra: Sequence[Any] = ()
) -> tuple[Any, int, list[int]] | None:
    """:func:`scan_rows` of ``files`` plus, last, :data:`~deltalog.spark.reads.dv_scan.ROW_KEY` holding each row's
    file id and no row index: the file's size when no two of ``files`` share one, else a perfect hash of size
    and modification time (:func:`~deltalog.spark.reads.dv_scan.hashed_file_ids`); returns the frame, the ids'
    bit length and ``ids[i]``, file ``i``'s id. For jobs that count rows per file (a one-job MERGE): no
    ``_metadata.row_index`` read, and no row counts needed in the statistics. Files with a deletion vector
    need their row indexes: then :func:`keyed_rows` (its key's low ``bits`` are the size). ``None`` when the
    rows cannot be keyed by file: scans not planned from the log, files read by Arrow tasks, partition values
    joined on the path, files sharing size and modification time. ``declared=False``: the columns may be
    nullable where the table says they are not (for one side of a full outer join, whose columns all are).
    ``extra``: columns (of constants) the rows carry after the key, added by the same projection.

    Example:
        >>> df, bits, ids = file_keyed_rows(spark, snap, snap.add_files())                # doctest: +SKIP
        >>> sorted(r[0] for r in df.select(ROW_KEY).distinct().collect()) == sorted(ids)  # doctest: +SKIP
        True
    """
    from deltalog.spark.reads.dv_scan import file_ids

    if files.num_rows == 0:
        return None
    if _has_dv(files):
        keyed = keyed_rows(spark, snapshot, files)
        if keyed is None:
            return None
        rows = keyed[0].select("*", *extra) if extra else keyed[0]
        return rows, keyed[1], [int(s) for s in files.column("size").to_pylist()]
    sizes = files.column("size").to_pylist()
    unique = len(set(sizes)) == len(sizes)
    told = file_ids(files, unique, sizes_from_log=True)
    if told is None:
        return None
    sql, ids, bits = told
    fields = list(snapshot.schema.fields)
    df = _scan_files(spark, snapshot, files, fields, snapshot.column_mapping_mode, set(snapshot.partition_columns),
                     file_key=sql, declared=declared, extra=extra)
    return None if df is None else (df, bits, [int(i) for i in ids])


def _scan(
    spark: Any, snapshot: Snapshot, files: pa.Table, logical: list[StructField], mode: str, parts: set[str], *,
    reuse: bool = False,
) -> Any:
    """Spark's parquet scan of ``files``; files with a deletion vector are scanned apart from the others,
    so only their rows pay for ``_metadata.file_path`` / ``row_index`` (materialising the path string per
    row is most of a deletion-vector scan's cost) and the anti join. ``reuse``: a user's read, whose relation
    a later read of the same files shares (:func:`deltalog.spark.reads.log_index.log_indexed`)."""
    if "deletionVector" in files.column_names:
        with_dv = pc.is_valid(files.column("deletionVector"))
        n = pc.sum(with_dv).as_py() or 0
        if 0 < n < files.num_rows:
            clean = _scan_files(spark, snapshot, files.filter(pc.invert(with_dv)), logical, mode, parts, reuse=reuse)
            return clean.unionByName(_scan_files(spark, snapshot, files.filter(with_dv), logical, mode, parts,
                                                 reuse=reuse))
    return _scan_files(spark, snapshot, files, logical, mode, parts, reuse=reuse)


def _scan_files(
    spark: Any, snapshot: Snapshot, files: pa.Table, logical: list[StructField], mode: str, parts: set[str],
    *, row_key: int | None = None, file_key: str | None = None, reuse: bool = False, declared: bool = True,
    extra: Sequence[Any] = (),
) -> Any:
    """``row_key``: the bits of :func:`keyed_rows`' packed key, which the rows then carry (``None`` is
    returned when they cannot). ``file_key``: Spark SQL of a file id over ``_metadata`` fields
    (:func:`file_keyed_rows`, files without deletion vectors), which the rows carry as ``ROW_KEY``; ``None`` is
    returned unless the scan is planned from the log (whose ``_metadata`` sizes and times are the log's).
    ``declared``, ``extra`` (with ``file_key`` only): see :func:`file_keyed_rows`."""
    from pyspark.sql import functions as F

    from deltalog.data.read import resolve_path

    schema = snapshot.schema
    part_all = [schema.field(c) for c in snapshot.partition_columns]
    keys = [physical_name(f, mode) for f in part_all]
    part_fields = [f for f in logical if f.name in parts]
    # Spark gets every data column (its column pruning reads only the selected ones), declared as the table
    # declares them (nullability, comments) ...
    physical = [physical_field(f, mode, keep=READ_METADATA) for f in schema.fields if f.name not in parts]
    by_name = {f.name: p for f, p in zip((f for f in schema.fields if f.name not in parts), physical)}
    log_paths = files.column("path").to_pylist()
    has_dv = "deletionVector" in files.column_names and files.column("deletionVector").null_count < files.num_rows
    native = uses_native_io(spark, snapshot)
    # ... and, when the directories provably spell the log's values, the partition columns as well.
    hive = native and bool(part_fields) and hive_layout_matches(files, part_all, keys)
    join_parts = bool(part_fields) and not hive
    keyed_by = row_key is not None or file_key is not None
    if keyed_by and (not native or join_parts):
        return None
    read_fields = list(physical)
    from_log = False
    # a deletion-vector read takes each row's index from the reader's own column (no ``_metadata`` field); a
    # table with a column of that name is never native (uses_native_io)
    reader_row = native and has_dv and not join_parts and not keyed_by
    if native:
        root = snapshot.store.full_path("")
        from_log = usable(spark, table=snapshot.table, root=root if hive else None)
        if file_key is not None and (not from_log or has_dv):  # before any relation is built
            return None
        options = {}
        if hive:
            read_fields += [replace(read_field(f), name=k) for f, k in zip(part_all, keys)]
            options["timeZone"] = "UTC"
            if not from_log:
                options["basePath"] = root
        read_schema = spark_schema(read_fields + ([StructField(READER_ROW_INDEX, PrimitiveType("long"), True)]
                                                  if reader_row else []), keep_metadata=True)
        try:
            if from_log:
                raw = log_indexed(spark, read_schema, file_keys(snapshot, files), files.column("size").to_pylist(),
                                  files.column("modificationTime").to_pylist(), hive=hive, options=options,
                                  reuse=reuse, declared=declared)
            else:
                raw = with_relation_schema(spark, spark.read.schema(read_schema).options(**options).parquet(
                    *[resolve_path(snapshot, p) for p in log_paths]), read_schema)
        except Exception as exc:
            raise _scan_error(exc, snapshot) from None
    else:  # object store without a Hadoop connector: Arrow tasks read the files (keys come with the rows)
        raw = parquet_scan(spark, snapshot, log_paths, physical, keys=has_dv or join_parts,
                           sizes=files.column("size").to_pylist())
    df = raw
    keyed = None
    if file_key is not None:  # no deletion vector (the caller's check): every row kept, with its file's id
        keyed = raw  # the id is computed by the projection below (one projection less to analyse)
    elif native and (has_dv or row_key is not None) and not join_parts:  # rows keyed by file size + row index, no path
        keyed = keyed_scan(spark, snapshot, files, raw, [f.name for f in read_fields], sizes_from_log=from_log,
                           key_bits=row_key, whole=True, reader_row=reader_row)  # read_fields' schema
        if keyed is None and row_key is not None:
            return None
    if keyed is not None:
        df = keyed
    elif has_dv or join_parts:
        uris = file_keys(snapshot, files)
        if native:
            # Only here: a _metadata column in the plan is never pruned and slows every scan down.
            _check_join_keys(raw, uris, snapshot)
            meta = [F.col("_metadata.file_path").alias(_FILE)]
            if has_dv:
                where = f"{snapshot.table} version {snapshot.version}"
                meta.append(F.expr(row_index_sql(reader_row, where)).alias(_ROW))
            df = raw.select(*[F.col(quoted(f.name)) for f in read_fields], *meta)
        if has_dv:
            df = without_deleted_rows(spark, df, snapshot, files, uris)
        if join_parts:
            ptable = partition_table(files, uris, part_fields, mode)
            pdf = frame_from_arrow(spark, ptable, spark_schema([*key_fields(with_row=False), *part_fields]))
            df = df.join(F.broadcast(pdf), on=_FILE, how="inner")
    sources = []  # (column of df, logical field)
    for f in logical:
        if f.name in parts:
            sources.append((keys[snapshot.partition_columns.index(f.name)] if hive else f.name, f))
        else:
            sources.append((by_name[f.name].name, f))
    casts = any(needs_cast(f, mode) for f in logical if f.name not in parts)
    current = [f.name for f in read_fields] if keyed is not None or not (has_dv or join_parts) else None
    if not casts and not keyed_by and current == [f.name for f in logical] == [c for c, _ in sources]:
        return df  # already the requested columns: a select would only cost driver round trips
    out = []
    for name, f in sources:
        col = F.col(quoted(name))
        shown = read_field(f)
        if f.name not in parts and needs_cast(f, mode):
            col = col.cast(spark_type(shown.type))  # positional: renames nested physical fields; wide decimals
        out.append(col.alias(f.name, metadata=shown.metadata))
    if keyed_by:
        out.append(F.expr(file_key).alias(ROW_KEY) if file_key is not None else F.col(ROW_KEY))
    return df.select(*out, *(extra if file_key is not None else ()))
