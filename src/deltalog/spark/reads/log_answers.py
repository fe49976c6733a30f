"""Answers from the Delta log, without reading a data file: ``count()`` of a table read.

delta-spark answers ``SELECT count(*)`` of a whole table from the log (``numRecords`` of every live file's
statistics, less the rows its deletion vector deletes). deltalog does the same for the frames
:mod:`deltalog.spark.reads.skipping` tracks: ``count()`` of ``spark.read.format("delta").load(p)``,
``DeltaTable.toDF()``, ``spark.table(t)`` (and of those frames after steps that keep every row: ``select`` of
column names, ``drop``, renames, sorting, repartitioning: :data:`ROW_KEEPING_STEPS`) is the log's count when
the log can prove it:

* no row filter (``where``, ``filter``) and no file skipping condition;
* every live file's statistics have ``numRecords`` (a file written without statistics -- by another writer,
  or with ``delta.dataSkippingNumIndexedCols = 0`` on some writers -- makes Spark count the rows instead);
* every deletion vector has its ``cardinality`` (the protocol requires it).

Otherwise ``count()`` runs as Spark's. No Spark job runs for an answer from the log.

Example:
    >>> df = spark.read.format("delta").load("/data/events")                     # doctest: +SKIP
    >>> df.count()                      # from the log: no Spark job              # doctest: +SKIP
    1000

May import: the kernel, :mod:`deltalog.spark.common`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.health.files import num_records_array

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["EXACT_BOUND_TYPES", "ROW_KEEPING_STEPS", "aggregate_specs", "aggregate_sql", "aggregates_from_log",
           "answer_frame", "logged_count", "rows_from_log"]

#: Steps after which a frame still has every row of its scan, once each (``select`` only of column names).
ROW_KEEPING_STEPS = frozenset({"select", "drop", "withColumnRenamed", "withColumnsRenamed", "toDF", "alias", "hint",
                               "orderBy", "sort", "sortWithinPartitions", "repartition", "repartitionByRange",
                               "coalesce"})


def rows_from_log(files: pa.Table) -> int | None:
    """The live rows of ``files`` (an ``add_files()`` table): their ``numRecords`` less their deletion vectors'
    cardinalities; ``None`` when a file has no row count in its statistics, or a deletion vector no cardinality.

    Example:
        >>> import pyarrow as pa
        >>> dv = pa.array([None, {"cardinality": 2}], pa.struct([("cardinality", pa.int64())]))
        >>> rows_from_log(pa.table({"stats": ['{"numRecords":5}', '{"numRecords":4}'], "deletionVector": dv}))
        7
        >>> rows_from_log(pa.table({"stats": ['{"numRecords":5}', None]})) is None
        True
    """
    if files.num_rows == 0:
        return 0
    records, known = num_records_array(files.column("stats"))
    if not bool(np.all(known)):
        return None
    total = int(records.sum())
    if "deletionVector" in files.column_names:
        dv = files.column("deletionVector")
        if dv.null_count < len(dv):
            cardinality = pc.struct_field(dv, "cardinality")
            if pc.sum(pc.is_valid(dv)).as_py() != pc.sum(pc.is_valid(cardinality)).as_py():
                return None
            total -= int(pc.sum(cardinality).as_py() or 0)
    return total


#: Column types whose ``min`` / ``max`` the log answers: their statistics are exact (strings are truncated,
#: timestamps kept to milliseconds, floating point has NaN, decimals may be written at another scale).
EXACT_BOUND_TYPES = {"byte": pa.int64(), "short": pa.int64(), "integer": pa.int64(), "long": pa.int64(),
                     "date": pa.date32()}


def aggregates_from_log(snapshot: Snapshot, wanted: Sequence[tuple[str, str | None]]) -> list[Any] | None:
    """The values of ``wanted`` aggregates -- ``("count", None)`` (rows), ``("count", column)`` (non-null values),
    ``("min", column)``, ``("max", column)`` over the table's top-level data columns -- from ``snapshot``'s log,
    or ``None`` when the log cannot prove every one of them: a file without the statistics needed; for
    ``min`` / ``max`` a column type without exact bounds (:data:`EXACT_BOUND_TYPES`), a partition column, or a
    file with a deletion vector (its bounds may be of deleted rows); for ``count(column)`` a file with a
    deletion vector and some but not all of its values null.

    Example:
        >>> aggregates_from_log(snap, [("count", None), ("min", "id"), ("max", "id")])  # doctest: +SKIP
        [1000, 0, 999]
    """
    from deltalog.log.stats_parsed import parse_stats
    from deltalog.protocol.schema import PrimitiveType, physical_name

    files = snapshot.add_files()
    rows = rows_from_log(files)
    if rows is None:
        return None
    schema, mode = snapshot.schema, snapshot.column_mapping_mode
    parts = {c.lower() for c in snapshot.partition_columns}
    columns: dict[str, tuple[str, pa.DataType]] = {}
    for kind, name in wanted:
        if name is None:
            continue
        if name not in schema or name.lower() in parts:
            return None
        field = schema.field(name)
        exact = EXACT_BOUND_TYPES.get(field.type.name) if isinstance(field.type, PrimitiveType) else None
        if kind in ("min", "max") and exact is None:
            return None
        columns[name] = (physical_name(field, mode), exact or pa.int64())
    if files.num_rows == 0:
        return [0 if kind == "count" else None for kind, _ in wanted]
    has_dv = np.zeros(files.num_rows, dtype=bool)
    cardinality = np.zeros(files.num_rows, dtype=np.int64)
    if "deletionVector" in files.column_names:
        dv = files.column("deletionVector")
        has_dv = pc.is_valid(dv).to_numpy(zero_copy_only=False)
        cardinality = pc.fill_null(pc.struct_field(dv, "cardinality"), 0).to_numpy(zero_copy_only=False)
    bounded = {name for kind, name in wanted if kind in ("min", "max") and name is not None}
    bounds = pa.struct([pa.field(key, t) for name, (key, t) in columns.items() if name in bounded])
    target = pa.struct([pa.field("numRecords", pa.int64()), pa.field("minValues", bounds),
                        pa.field("maxValues", bounds),
                        pa.field("nullCount", pa.struct([pa.field(key, pa.int64()) for key, _ in columns.values()]))])
    parsed = parse_stats(files.column("stats"), target) if columns else None
    records = num_records_array(files.column("stats"))[0]
    out: list[Any] = []
    for kind, name in wanted:
        if name is None:
            out.append(rows)
            continue
        assert parsed is not None
        key = columns[name][0]
        nulls_arr = pc.struct_field(pc.struct_field(parsed, "nullCount"), key)
        if nulls_arr.null_count:
            return None
        nulls = nulls_arr.to_numpy(zero_copy_only=False)
        all_null = nulls == records
        if kind == "count":
            if bool(np.any(has_dv & (nulls != 0) & ~all_null)):
                return None
            live = records - cardinality
            out.append(int(np.where(all_null, 0, np.where(has_dv, live, records - nulls)).sum()))
            continue
        if bool(np.any(has_dv)):
            return None
        side = pc.struct_field(pc.struct_field(parsed, "minValues" if kind == "min" else "maxValues"), key)
        known = pc.is_valid(side).to_numpy(zero_copy_only=False)
        if bool(np.any(~known & ~all_null)):
            return None
        present = side.filter(pa.array(~all_null))
        value = (pc.min(present) if kind == "min" else pc.max(present)).as_py() if len(present) else None
        out.append(value)
    return out


#: Spark's SQL name of each type :data:`EXACT_BOUND_TYPES` holds.
_SQL_TYPES = {"byte": "TINYINT", "short": "SMALLINT", "integer": "INT", "long": "BIGINT", "date": "DATE"}


def aggregate_specs(items: Sequence[Any]) -> list[tuple[str | None, str, str | None]] | None:
    """``(alias, kind, column)`` of each select item (sqlglot expressions) when every one is ``count(*)`` /
    ``count(1)`` / ``count(c)`` / ``min(c)`` / ``max(c)`` of a plain column (``kind`` ``count`` / ``min`` /
    ``max``; ``column`` ``None`` for rows; ``alias`` ``None`` when none is given); else ``None``.

    Example:
        >>> import sqlglot
        >>> aggregate_specs(sqlglot.parse_one("SELECT count(*), max(id) AS top FROM t", read="spark").expressions)
        [(None, 'count', None), ('top', 'max', 'id')]
    """
    from sqlglot import exp

    out: list[tuple[str | None, str, str | None]] = []
    for item in items:
        alias = item.alias if isinstance(item, exp.Alias) else None
        call = item.this if isinstance(item, exp.Alias) else item
        kinds = {exp.Count: "count", exp.Min: "min", exp.Max: "max"}
        kind = kinds.get(type(call))
        if kind is None or call.args.get("distinct") or call.args.get("expressions"):
            return None
        arg = call.this
        if kind == "count" and (isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not arg.is_string
                                                              and arg.this == "1")):
            out.append((alias or None, kind, None))
        elif isinstance(arg, exp.Column) and not arg.table:
            out.append((alias or None, kind, arg.name))
        else:
            return None
    return out or None


def aggregate_sql(snapshot: Snapshot, specs: Sequence[tuple[str | None, str, str | None]]) -> str | None:
    """A literal ``SELECT`` of the ``specs`` (:func:`aggregate_specs`) answered from ``snapshot``'s log, named and
    typed as Spark names and types the aggregates (``count(1)``, ``max(id)`` with the table's spelling of the
    column, or the alias; ``count`` a non-null ``BIGINT``, ``min`` / ``max`` the column's type, nullable), or
    ``None`` when the log cannot prove them (:func:`aggregates_from_log`).

    Example:
        >>> aggregate_sql(snap, [("count(1)", "count", None)])                        # doctest: +SKIP
        'SELECT 1000L AS `count(1)`'
    """
    schema = snapshot.schema
    resolved: list[tuple[str, str, str | None]] = []
    for alias, kind, column in specs:
        if column is not None:
            if column not in schema:
                return None
            column = schema.field(column).name
        resolved.append((alias or ("count(1)" if column is None else f"{kind}({column})"), kind, column))
    values = aggregates_from_log(snapshot, [(kind, column) for _, kind, column in resolved])
    if values is None:
        return None
    items = []
    for (name, kind, column), value in zip(resolved, values, strict=True):
        label = "`" + name.replace("`", "``") + "`"
        if kind == "count":
            items.append(f"{int(value)}L AS {label}")
            continue
        assert column is not None
        sql_type = _SQL_TYPES[str(getattr(schema.field(column).type, "name", ""))]
        if value is None:
            items.append(f"CAST(NULL AS {sql_type}) AS {label}")
        else:
            text = f"DATE '{value.isoformat()}'" if sql_type == "DATE" else str(int(value))
            # nullif(v, NULL) is v, declared nullable as Spark's min / max are
            items.append(f"nullif(CAST({text} AS {sql_type}), CAST(NULL AS {sql_type})) AS {label}")
    return "SELECT " + ", ".join(items)


_AUTO_ALIAS: dict[str, Any] = {}


def answer_frame(spark: Any, text: str, specs: Sequence[tuple[str | None, str, str | None]]) -> Any:
    """The one-row frame of ``text`` (:func:`aggregate_sql`), its columns named by Spark (``count(1)``, ...)
    carrying the field metadata the running Spark gives such generated names (``__autoGeneratedAlias`` on 4.x),
    so its schema equals that of Spark's own aggregate query. A literal query: Spark plans it as one local row.

    Example:
        >>> answer_frame(spark, "SELECT 3L AS `count(1)`", [(None, "count", None)]).first()[0]  # doctest: +SKIP
        3
    """
    from pyspark.sql import functions as F

    from deltalog.spark.common.statements import original_sql

    frame = original_sql(spark)(text)
    if "metadata" not in _AUTO_ALIAS:  # what this Spark attaches to a name it makes up, asked once
        _AUTO_ALIAS["metadata"] = dict(original_sql(spark)("SELECT max(1)").schema.fields[0].metadata)
    generated = _AUTO_ALIAS["metadata"]
    if not generated or all(alias is not None for alias, _, _ in specs):
        return frame
    names = frame.columns
    return frame.select(*[F.col(f"`{name}`").alias(name, metadata=generated) if alias is None else F.col(f"`{name}`")
                          for name, (alias, _, _) in zip(names, specs, strict=True)])


def _keeps_rows(steps: Sequence[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> bool:
    for name, args, kwargs in steps:
        if name not in ROW_KEEPING_STEPS:
            return False
        if name == "select" and (kwargs or not all(isinstance(a, str) for a in args)):
            return False  # an expression may aggregate or explode: Spark counts
    return True


def logged_count(snapshot: Snapshot, *, where: Any, prune: Sequence[Any],
                 steps: Sequence[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> int | None:
    """``count()`` of a tracked read of ``snapshot`` (its ``where``, file-skipping conditions ``prune`` and
    ``steps`` since the scan) from the log, or ``None`` when the log cannot prove it (see the module docstring).

    Example:
        >>> logged_count(deltalog.Table("/data/events").snapshot(), where=None, prune=(), steps=())
        ... # doctest: +SKIP
        1000
    """
    if where is not None or prune or not _keeps_rows(steps):
        return None
    return rows_from_log(snapshot.add_files())
