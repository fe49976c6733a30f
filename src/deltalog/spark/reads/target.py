"""What a DML command reads: the candidate files of a condition and a Spark scan of their rows.

* :func:`pruning_conditions` turns the simple part of a SQL condition (top-level ``AND`` of ``column op
  literal``, ``IN``, ``BETWEEN``) into the kernel's conditions, used for partition pruning and min/max
  skipping (:func:`~deltalog.data.filters.prune_files`) and as the transaction's read predicate. Only
  conjuncts whose meaning is the same in Spark and in the kernel are kept (no timestamps -- the session
  time zone --, no ``>``/``>=``/``!=`` on floating point -- NaN sorts last in Spark --); a dropped
  conjunct only means fewer files are skipped, never a wrong result: Spark evaluates the whole condition.
* :func:`target_scan` reads the candidate files with Spark's parquet scan and keeps, for every row, the
  file (``_metadata.file_path``) and its position in the file (``_metadata.row_index``), so rows can be
  marked in deletion vectors and touched files found; partition values come from the log (broadcast join)
  and rows already deleted by a deletion vector can be dropped (broadcast ``left_anti`` join);
  :func:`partition_frame` is that table of partition values alone (one row per file).

Example:
    >>> pruning_conditions("day = '2024-01-01' AND id > 10 AND lower(name) = 'x'", snap)  # doctest: +SKIP
    ([Condition(column='day', op='=', value=datetime.date(2024, 1, 1)), Condition(column='id', ...)], False)
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.data.filters import Condition, normalize_filter
from deltalog.errors import InvalidArgumentError, InvalidArgumentTypeError
from deltalog.protocol.schema import PrimitiveType, StructField, StructType
from deltalog.spark.common.arguments import is_column
from deltalog.spark.common.compat import frame_from_arrow
from deltalog.spark.common.core import needs_cast, physical_field, quoted, spark_schema, spark_type
from deltalog.spark.reads.dv_scan import without_deleted_rows
from deltalog.spark.reads.files import FILE, ROW, file_keys, key_fields, parquet_scan, partition_table

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = [
    "FILE",
    "ROW",
    "Names",
    "condition_column",
    "conjuncts",
    "describe",
    "exact_conditions",
    "file_uris",
    "footer_rows",
    "live_rows",
    "local_file",
    "partition_frame",
    "plan_line",
    "pruning_conditions",
    "recorded_join_predicate",
    "recorded_partition_predicate",
    "recorded_predicate",
    "shared_probe",
    "table_probe",
    "target_scan",
]


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
_NO_PRUNING_TYPES = ("timestamp", "timestamp_ntz", "binary")
_FLOAT_TYPES = ("float", "double")
_FLOAT_UNSAFE_OPS = (">", ">=", "!=", "not in")

DataFrame = Any  # pyspark.sql.DataFrame (classic or Connect)
Column = Any  # pyspark.sql.Column




def condition_column(condition: Any, what: str) -> Column:
    """A condition (SQL string or ``Column``) as a ``Column`` that is never null (null counts as false).

    Example:
        >>> condition_column("id > 3", "delete")                               # doctest: +SKIP
        Column<'coalesce((id > 3), false)'>
    """
    from pyspark.sql import functions as F

    if condition is None:
        return F.lit(True)
    if isinstance(condition, str):
        if not condition.strip():
            raise InvalidArgumentError(f"the {what} condition is an empty string")
        col = F.expr(condition)
    elif is_column(condition):
        col = condition
    else:
        raise InvalidArgumentTypeError(
            f"the {what} condition must be a SQL string or a Spark Column, got {type(condition).__name__}"
        )
    return F.coalesce(col, F.lit(False))


def describe(condition: Any) -> str | None:
    """A condition as text for ``commitInfo.operationParameters`` (``None`` for no condition).

    Example:
        >>> describe("id > 3"), describe(None)
        ('id > 3', None)
    """
    if condition is None:
        return None
    if isinstance(condition, str):
        return condition
    text = str(condition)
    if text.startswith("Column<'") and text.endswith("'>"):
        return text[len("Column<'") : -2]
    return text


# ------------------------------------------------------------------------------------------ history
#
# delta-spark records a command's predicates as Catalyst prints them (``simpleString`` of the expression):
# DELETE, UPDATE and MERGE the condition as analysed against the table (``(id#12L = cast(1 as bigint))``: each
# column with its expression id, literals cast to the column's type), OPTIMIZE and REORG their partition
# filters as parsed, not analysed (``('p = a)``). Spark prints them here too: through the JVM on classic
# Spark, from the plan's text (``explain``) on Spark Connect; where it cannot, the condition's own text.


def recorded_predicate(frame: DataFrame, condition: Any) -> str | None:
    """``condition`` (SQL text or ``Column``) as delta-spark records a DELETE / UPDATE / MERGE clause
    predicate: Catalyst's text of it analysed against ``frame`` (``None`` for no condition).

    Example:
        >>> recorded_predicate(table_probe(spark, snap), "id = 1")               # doctest: +SKIP
        '(id#12L = cast(1 as bigint))'
    """
    from pyspark.sql import functions as F

    if condition is None:
        return None
    try:
        filtered = frame.filter(F.expr(condition) if isinstance(condition, str) else condition)
        text = _analysed_condition(filtered, "Filter")
    except Exception:  # not analysable here (e.g. names of another scope): the text as given
        text = None
    return text if text is not None else describe(condition)


def recorded_join_predicate(
    target: DataFrame, source: DataFrame, condition: Any, *, joined: DataFrame | None = None
) -> str | None:
    """A MERGE's ON ``condition`` as delta-spark records it: analysed against the join of ``target`` and
    ``source`` (aliased as in the statement); ``joined``: a join of the two on ``condition`` already planned
    (the MERGE's own), whose analysed condition is read instead of analysing another join.

    Example:
        >>> recorded_join_predicate(probe.alias("t"), src.alias("s"), "t.id = s.id")  # doctest: +SKIP
        '(id#12L = id#40L)'
    """
    from pyspark.sql import functions as F

    if condition is None:
        return None
    try:
        text = _analysed_condition(joined, "Join") if joined is not None else None
        if text is None:
            joined = target.join(source, on=F.expr(condition) if isinstance(condition, str) else condition)
            text = _analysed_condition(joined, "Join")
    except Exception:
        text = None
    return text if text is not None else describe(condition)


def recorded_partition_predicate(frame: DataFrame, text: str) -> str:
    """A partition filter of OPTIMIZE / REORG as delta-spark records it: Spark's parse of ``text``, not
    analysed (a column is ``'name``, a string literal its bare value). ``frame`` has the table's columns
    (:func:`table_probe`): on Spark Connect the parse is read from the plan of ``frame`` filtered by ``text``.

    Example:
        >>> recorded_partition_predicate(table_probe(spark, snap), "p = 'a' AND q > 1")  # doctest: +SKIP
        "(('p = a) AND ('q > 1))"
    """
    from pyspark.sql import functions as F

    try:
        jsession = getattr(frame.sparkSession, "_jsparkSession", None)
        if jsession is not None:
            parsed = jsession.sessionState().sqlParser().parseExpression(text)
            return str(parsed.simpleString(_max_fields(frame.sparkSession)))
        explain = getattr(frame.filter(F.expr(text)), "_explain_string", None)
        found = plan_line(explain(extended=True), "Parsed", "'Filter ") if explain is not None else None
    except Exception:  # not a condition Spark can parse: the text as given
        found = None
    return found if found is not None else text


def plan_line(plan: str, section: str, prefix: str) -> str | None:
    """The rest of the top node's line of ``section`` (``"Parsed"`` or ``"Analyzed"``) of an extended
    ``explain`` text, when that line starts with ``prefix``; ``None`` otherwise.

    Example:
        >>> plan_line("== Parsed Logical Plan ==\\n'Filter ('p = 1)\\n+- Range", "Parsed", "'Filter ")
        "('p = 1)"
    """
    lines = plan.splitlines()
    header = f"== {section} Logical Plan =="
    if header not in lines:
        return None
    at = lines.index(header) + (2 if section == "Analyzed" else 1)  # the analysed plan's schema line first
    top = lines[at] if at < len(lines) else ""
    return top[len(prefix):] if top.startswith(prefix) else None


def _max_fields(spark: Any) -> int:
    try:
        return int(spark.conf.get("spark.sql.debug.maxToStringFields", "25"))
    except (TypeError, ValueError):
        return 25


def _analysed_condition(frame: DataFrame, node: str) -> str | None:
    """The condition of the top node (``Filter`` or inner ``Join``) of ``frame``'s analysed plan, as Catalyst
    prints it."""
    jdf = getattr(frame, "_jdf", None)
    if jdf is not None:
        plan = jdf.queryExecution().analyzed()
        if plan.nodeName() != node:
            return None
        condition = plan.condition()
        if node == "Join":
            if condition.isEmpty():
                return None
            condition = condition.get()
        return str(condition.simpleString(_max_fields(frame.sparkSession)))
    explain = getattr(frame, "_explain_string", None)
    if explain is None:
        return None
    return plan_line(explain(extended=True), "Analyzed", "Filter " if node == "Filter" else "Join Inner, ")


# ------------------------------------------------------------------------------------------ pruning


def conjuncts(node: Any) -> list[Any]:
    """The terms of a parsed condition's top-level ``AND``s.

    Example:
        >>> [t.kind for t in conjuncts(SqlParser("a = 1 AND b > 2").parse())]       # doctest: +SKIP
        ['binary', 'binary']
    """
    if node.kind == "binary" and node.args[0] == "AND":
        return conjuncts(node.args[1]) + conjuncts(node.args[2])
    return [node]


def _literal(node: Any) -> tuple[bool, Any]:
    if node.kind == "lit":
        return True, node.args[0]
    if node.kind == "unary" and node.args[0] == "-" and node.args[1].kind == "lit":
        value = node.args[1].args[0]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return True, -value
    return False, None


class Names:
    """Resolves a column reference of a condition to a table column, the way Spark would: ``qualifiers``
    may prefix a name (the target alias of a MERGE), unqualified names in ``ambiguous`` (a MERGE's source
    columns) are never taken as the table's.

    Example:
        >>> Names(snap.schema, ["t"], ["id"]).resolve(SqlParser("t.id").parse())      # doctest: +SKIP
        'id'
    """

    def __init__(self, schema: StructType, qualifiers: Collection[str], ambiguous: Collection[str]) -> None:
        self.names = schema.field_names
        self.lower: dict[str, list[str]] = {}
        for n in self.names:
            self.lower.setdefault(n.lower(), []).append(n)
        self.qualifiers = {q.lower() for q in qualifiers}
        self.ambiguous = {a.lower() for a in ambiguous}

    def resolve(self, node: Any) -> str | None:
        if node.kind != "col":
            return None
        path = list(node.args)
        if len(path) == 2 and path[0].lower() in self.qualifiers:
            path = path[1:]
        elif len(path) == 1 and path[0].lower() in self.ambiguous:
            return None  # might be a source column (MERGE)
        if len(path) != 1:
            return None
        name = str(path[0])
        if name in self.names:
            return name
        found = self.lower.get(name.lower(), [])
        return found[0] if len(found) == 1 else None


def _simple(node: Any, names: Names) -> list[tuple[str, str, Any]] | None:
    kind, args = node.kind, node.args
    if kind == "binary" and args[0] in _FLIP:
        left, right = names.resolve(args[1]), names.resolve(args[2])
        ok_r, val_r = _literal(args[2])
        ok_l, val_l = _literal(args[1])
        if left is not None and ok_r:
            return [(left, args[0], val_r)]
        if right is not None and ok_l:
            return [(right, _FLIP[args[0]], val_l)]
        return None
    if kind == "in":
        column = names.resolve(args[0])
        values = [_literal(i) for i in args[1]]
        if column is None or not all(ok for ok, _ in values):
            return None
        return [(column, "not in" if args[2] else "in", [v for _, v in values])]
    if kind == "between" and not args[3]:
        column = names.resolve(args[0])
        (ok_lo, lo), (ok_hi, hi) = _literal(args[1]), _literal(args[2])
        if column is None or not (ok_lo and ok_hi):
            return None
        return [(column, ">=", lo), (column, "<=", hi)]
    return None


def _safe(cond: Condition, schema: StructType) -> bool:
    dtype = schema.field(cond.column).type
    if not isinstance(dtype, PrimitiveType) or dtype.name in _NO_PRUNING_TYPES:
        return False
    values = cond.value if cond.op in ("in", "not in") else (cond.value,)
    if any(isinstance(v, float) and math.isnan(v) for v in values):
        return False
    return not (dtype.name in _FLOAT_TYPES and cond.op in _FLOAT_UNSAFE_OPS)


def _exact(cond: Condition, original: Any) -> bool:
    """The literal survived the conversion to the column's type unchanged (``id < 2.5`` on a long column
    must not become ``id < 2``)."""
    pairs = zip(cond.value, original) if cond.op in ("in", "not in") else [(cond.value, original)]
    for converted, value in pairs:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                if float(converted) != float(value):
                    return False
            except (TypeError, ValueError):
                return False
    return True


def pruning_conditions(
    condition: Any,
    snapshot: Snapshot,
    *,
    qualifiers: Collection[str] = (),
    ambiguous: Collection[str] = (),
) -> tuple[list[Condition], bool]:
    """The kernel conditions implied by ``condition`` and whether they say everything it says.

    ``qualifiers`` are names a column may be prefixed with (the target alias of a MERGE);
    unqualified names in ``ambiguous`` (source columns of a MERGE) are not taken as table columns.
    A Spark ``Column`` is opaque here: no conditions, not complete.

    Example:
        >>> pruning_conditions("k = 1 AND v > 2", snap)                            # doctest: +SKIP
        ([Condition(column='k', op='=', value=1), Condition(column='v', op='>', value=2)], True)
    """
    if condition is None:
        return [], True
    if not isinstance(condition, str):
        return [], False
    from deltalog.data.sql_expr import SqlParser, UnsupportedExpressionError

    try:
        node = SqlParser(condition).parse()
    except UnsupportedExpressionError:
        return [], False
    schema = snapshot.schema
    names = Names(schema, qualifiers, ambiguous)
    out: list[Condition] = []
    complete = True
    for conjunct in conjuncts(node):
        simple = _simple(conjunct, names)
        if simple is None:
            complete = False
            continue
        for column, op, value in simple:
            conds = exact_conditions(column, op, value, snapshot)
            complete = complete and bool(conds)
            out.extend(conds)
    return out, complete


def exact_conditions(column: str, op: str, value: Any, snapshot: Snapshot) -> list[Condition]:
    """``column op value`` as kernel conditions in the column's type, or none when pruning by it could be
    wrong: a type without safe statistics, a NaN, a float compared by order, a value the conversion changes
    (``id < 2.5`` on a long column must not become ``id < 2``), one that does not fit the column.

    Example:
        >>> exact_conditions("id", ">=", 3, snap)                                  # doctest: +SKIP
        [Condition(column='id', op='>=', value=3)]
    """
    schema = snapshot.schema
    try:
        conds, _ = normalize_filter([(column, op, value)], schema, table=snapshot.table)
    except InvalidArgumentError:
        return []
    return conds if all(_safe(c, schema) and _exact(c, value) for c in conds) else []


# ------------------------------------------------------------------------------------------ files


def footer_rows(snapshot: Snapshot, row: Mapping[str, Any]) -> int:
    """Rows of a data file by its parquet footer (read through the table's store: local or object store).

    Example:
        >>> footer_rows(snap, snap.add_files().to_pylist()[0])                     # doctest: +SKIP
        1000
    """
    import pyarrow.parquet as pq

    from deltalog.data.read import open_data_file

    source = open_data_file(snapshot, row["path"], local_file(snapshot, row["path"]), row.get("size"))
    return int(pq.ParquetFile(source).metadata.num_rows)


def local_file(snapshot: Snapshot, log_path: str) -> str:
    """The local path of a data file named in the log (relative and URL-encoded, or absolute).

    Example:
        >>> local_file(snap, "p=a%20b/x.parquet")                                  # doctest: +SKIP
        '/data/t/p=a b/x.parquet'
    """
    from deltalog.data.read import resolve_path

    return resolve_path(snapshot, log_path)


def file_uris(snapshot: Snapshot, files: pa.Table) -> list[str]:
    """The :data:`FILE` key of each file of an ``add_files()`` table, in order (``_metadata.file_path``
    as Spark reports it; see :func:`deltalog.spark.reads.files.file_key`).

    Example:
        >>> file_uris(snap, snap.add_files())[:1]                                  # doctest: +SKIP
        ['file:/data/t/part-00000-....snappy.parquet']
    """
    return file_keys(snapshot, files)


def num_records(row: Mapping[str, Any]) -> int | None:
    """``numRecords`` of an ``add`` row's stats (``None`` when unknown).

    Example:
        >>> num_records({"stats": '{"numRecords": 4}'})
        4
    """
    try:
        n = json.loads(row.get("stats") or "{}").get("numRecords")
    except (ValueError, AttributeError):
        return None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def dv_cardinality(row: Mapping[str, Any]) -> int:
    """How many rows of a file its current deletion vector deletes.

    Example:
        >>> dv_cardinality({"deletionVector": {"cardinality": 3}}), dv_cardinality({})
        (3, 0)
    """
    dv = row.get("deletionVector") or {}
    return int(dv.get("cardinality") or 0)


def live_rows(snapshot: Snapshot, rows: Sequence[Mapping[str, Any]]) -> int:
    """Rows the files hold (stats, else the parquet footer), minus their deletion vectors.

    Example:
        >>> live_rows(snap, snap.add_files().to_pylist())                          # doctest: +SKIP
        1000
    """

    total = 0
    for row in rows:
        n = num_records(row)
        if n is None:
            n = footer_rows(snapshot, row)
        total += n - dv_cardinality(row)
    return total


# ------------------------------------------------------------------------------------------ scan




def table_probe(spark: Any, snapshot: Snapshot) -> Any:
    """An empty DataFrame of the table's own columns, on which a statement's condition and expressions are
    analysed before any job runs, so that an unknown column is reported among the table's columns only.

    Example:
        >>> table_probe(spark, snap).filter("nope = 1")                           # doctest: +SKIP
        Traceback (most recent call last):
        ...
        AnalysisException: [UNRESOLVED_COLUMN.WITH_SUGGESTION] ... Did you mean one of the following? [`id`]
    """
    from pyspark.sql import functions as F

    scan = target_scan(spark, snapshot, snapshot.add_files().slice(0, 0))
    return scan.select(*[F.col(quoted(f.name)) for f in snapshot.schema.fields])


#: (session, table schema) -> the table's probe frame (:func:`table_probe`), the last few kept: building one (an
#: empty local relation) costs a MERGE ~50 ms of its fixed cost
_PROBES: OrderedDict[tuple[int, str], tuple[Any, Any]] = OrderedDict()
_PROBES_KEPT = 8


def shared_probe(spark: Any, snapshot: Snapshot) -> Any:
    """:func:`table_probe` of ``snapshot`` in ``spark``, reused while the session and the table's schema stay the
    same (a probe has no rows: only its columns matter).

    Example:
        >>> shared_probe(spark, snap) is shared_probe(spark, snap)                  # doctest: +SKIP
        True
    """
    key = (id(spark), snapshot.metadata.schemaString or "")
    found = _PROBES.get(key)
    if found is not None and found[0] is spark:
        _PROBES.move_to_end(key)
        return found[1]
    probe = table_probe(spark, snapshot)
    _PROBES[key] = (spark, probe)
    while len(_PROBES) > _PROBES_KEPT:
        _PROBES.popitem(last=False)
    return probe


def target_scan(spark: Any, snapshot: Snapshot, files: pa.Table, *, drop_deleted: bool = True,
                row_ids: bool = False, file_columns: Mapping[str, pa.Array] | None = None) -> DataFrame:
    """Every column of the table's rows in ``files`` (an ``add_files()`` table) plus :data:`FILE` and
    :data:`ROW`; with ``drop_deleted`` the rows the files' deletion vectors delete are left out. With
    ``row_ids`` on a row-tracking table, the materialized row-id and row-commit-version columns follow,
    filled in (see :mod:`deltalog.spark.reads.row_ids`). ``file_columns``: ``long`` columns with one value per
    file of ``files``, put on each of its rows last (joined with the row ids' per-file values when there
    are any: one broadcast join).

    Example:
        >>> target_scan(spark, snap, snap.add_files()).columns                     # doctest: +SKIP
        ['id', 'k', '__deltalog_file', '__deltalog_row']
    """
    from pyspark.sql import functions as F

    from deltalog.spark.reads.row_ids import fill_row_ids, tracked_fields

    schema = snapshot.schema
    mode = snapshot.column_mapping_mode
    parts = set(snapshot.partition_columns)
    fields = list(schema.fields)
    keys = [F.col(FILE), F.col(ROW)]
    tracked = tracked_fields(snapshot) if row_ids else None
    extra = list(tracked or ())
    per_file = dict(file_columns or {})
    if files.num_rows == 0:
        longs = [StructField(n, PrimitiveType("long"), True, {}) for n in per_file]
        return spark.createDataFrame([], spark_schema([*fields, *key_fields(with_row=True), *extra, *longs]))
    data_fields = [f for f in fields if f.name not in parts] + extra
    physical = [physical_field(f, mode) for f in data_fields]
    uris = file_uris(snapshot, files)
    raw = parquet_scan(spark, snapshot, files.column("path").to_pylist(), physical, keys=True,
                       sizes=files.column("size").to_pylist(), mtimes=files.column("modificationTime").to_pylist())
    has_dv = (drop_deleted and "deletionVector" in files.column_names
              and files.column("deletionVector").null_count < files.num_rows)
    columns = []
    for f, p in zip(data_fields, physical):
        col = F.col(quoted(p.name))
        if needs_cast(f, mode):
            col = col.cast(spark_type(f.type))  # positional: renames nested physical fields; wide decimals
        columns.append(col.alias(f.name))
    df = raw.select(*columns, F.col(FILE), F.col(ROW))
    if has_dv:
        df = without_deleted_rows(spark, df, snapshot, files, uris)
    if parts:
        df = df.join(F.broadcast(partition_frame(spark, snapshot, files)), on=FILE, how="inner")
    if tracked is not None:
        df = fill_row_ids(spark, df, files, uris, tracked, extra=per_file)
    elif per_file:
        frame = pa.table({FILE: pa.array(uris, pa.string()), **per_file})
        df = df.join(F.broadcast(frame_from_arrow(spark, frame)), on=FILE, how="inner")
    return df.select(*[F.col(quoted(f.name)) for f in fields], *keys, *[F.col(quoted(f.name)) for f in extra],
                     *[F.col(quoted(n)) for n in per_file])


def partition_frame(spark: Any, snapshot: Snapshot, files: pa.Table) -> DataFrame:
    """One row per file of ``files`` (an ``add_files()`` table): :data:`FILE` and the file's partition
    values, typed, from the log alone (no data file is opened).

    Example:
        >>> partition_frame(spark, snap, snap.add_files()).columns                 # doctest: +SKIP
        ['__deltalog_file', 'day']
    """
    parts = set(snapshot.partition_columns)
    part_fields = [f for f in snapshot.schema.fields if f.name in parts]
    table = partition_table(files, file_uris(snapshot, files), part_fields, snapshot.column_mapping_mode)
    return frame_from_arrow(spark, table, spark_schema([*key_fields(with_row=False), *part_fields]))
