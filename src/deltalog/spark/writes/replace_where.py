"""``replaceWhere``: an overwrite that replaces exactly the rows of the table a condition matches.

``df.write.format("delta").mode("overwrite").option("replaceWhere", cond).save(path)`` follows
delta-spark (1.1 and later, ``spark.databricks.delta.replaceWhere.dataColumns.enabled=true``): the rows
of the table where ``cond`` is true are replaced by the rows of ``df``, in one ``WRITE`` commit (mode
``Overwrite``, ``cond`` in ``operationParameters.predicate``); rows where it is false or null stay. Every
row of ``df`` must satisfy ``cond`` (true, not null), or the write fails with
``[DELTA_REPLACE_WHERE_MISMATCH]`` and commits nothing (unless
``spark.databricks.delta.replaceWhere.constraintCheck.enabled=false``). ``cond`` is a SQL condition, a
Spark ``Column`` (through :func:`deltalog.spark.write`) or a list of ``(column, op, value)``.

Two ways, chosen on the driver (:meth:`ReplaceWhere.on_partitions`):

* **Partition fast path** -- ``cond`` is AND-ed ``column op literal`` comparisons (``=``, ``!=``, ``<``,
  ``<=``, ``>``, ``>=``, ``IN``, ``NOT IN``, ``BETWEEN``) on partition columns: the kernel's plan
  (:mod:`deltalog.arrow.write`) -- the writing tasks refuse rows outside it, the files of the matching
  partitions are removed from the log without being read;
* **any other condition** -- :func:`overwrite_where`:

  1. ``cond`` is resolved against the table's columns and the data's before any job (an unknown
     column is named in the error);
  2. one job counts the rows of ``df`` where ``cond`` is false or null (only the columns ``cond`` reads
     are computed; cache an expensive ``df``); any such row fails the write before anything is written;
  3. ``df`` is written by the Spark writer of :mod:`deltalog.spark.writes.save`;
  4. the simple conjuncts of ``cond`` prune partitions and skip files by min/max statistics, and are
     the transaction's read predicate (the candidate files its read files), so concurrent writers
     elsewhere do not conflict;
  5. a condition reading partition columns only (``k = 1 OR k = 3``, ``year(day) = 2024``) is evaluated
     by Spark on the candidate files' partition values, one row per file taken from the log: the
     matching files are removed whole, none is read. Otherwise copy-on-write, as ``DELETE`` does
     (:mod:`deltalog.spark.jobs.rewrite`): one job counts the matches per file, files entirely matched
     are removed whole, the rows the condition does not match (false or null) of the others are
     rewritten into new files. Deletion vectors are applied by the scans and go with their files;
  6. with the change data feed on and rows rewritten, the replaced rows (``delete``) and the rows of
     ``df`` (``insert``) are written as change data files.

A failure after a job wrote files (a later job, the commit) deletes them
(:class:`~deltalog.spark.jobs.staged.Staged`); a failing job deletes what its failed tasks wrote (files of
its tasks that had finished stay unreferenced, as with any Spark write; ``VACUUM`` removes them). The
commit's ``operationMetrics`` add ``numDeletedRows``, ``numCopiedRows`` and ``numAddedChangeFiles``
to the write's (``numFiles``, ``numOutputRows``, ``numOutputBytes`` count every added file, copies
included).

Example:
    >>> (df.write.format("delta").mode("overwrite")
    ...    .option("replaceWhere", "day = '2024-05-01' AND status = 'late'").save("/data/events"))  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import StructType
from deltalog.spark.common.arguments import is_column
from deltalog.spark.common.core import quoted, spark_type
from deltalog.spark.jobs.change_files import change_rows, records_changes, stage_change_files, write_change_files
from deltalog.spark.jobs.rewrite import Touched, touched_files, write_survivors
from deltalog.spark.jobs.staged import Staged, spark_error
from deltalog.spark.reads.target import (
    FILE,
    ROW,
    condition_column,
    describe,
    file_uris,
    live_rows,
    partition_frame,
    pruning_conditions,
    target_scan,
)

if TYPE_CHECKING:
    from deltalog.arrow.write import WritePlan
    from deltalog.data.write_files import WrittenFile
    from deltalog.snapshot import Snapshot
    from deltalog.table import Table
    from deltalog.txn.transaction import CommitResult, Transaction

__all__ = ["MISMATCH", "ReplaceWhere", "overwrite_where", "parse_replace_where"]

DataFrame = Any  # pyspark.sql.DataFrame (classic or Connect)
Column = Any  # pyspark.sql.Column

#: delta-spark's error class for data outside the ``replaceWhere`` condition.
MISMATCH = "DELTA_REPLACE_WHERE_MISMATCH"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNRESOLVED = re.compile(r"with name (`(?:[^`]|``)*`(?:\.`(?:[^`]|``)*`)*) cannot be resolved")
#: Functions whose value differs from row to row: never evaluated once per file.
_NONDETERMINISTIC = frozenset({
    "rand", "randn", "random", "uuid", "shuffle", "monotonically_increasing_id", "spark_partition_id",
    "input_file_name", "input_file_block_start", "input_file_block_length",
})


# ------------------------------------------------------------------------------------------ parsing


@dataclass(frozen=True)
class ReplaceWhere:
    """A ``replaceWhere`` option: ``condition`` as Spark evaluates it (SQL text or a ``Column``), ``text``
    as ``commitInfo`` records it and, when the condition is AND-ed ``column op literal`` comparisons,
    those comparisons (``simple``, the kernel's ``(column, op, value)`` form).

    Example:
        >>> rw = ReplaceWhere("k = 1 AND id > 3", "k = 1 AND id > 3", (("k", "=", 1), ("id", ">", 3)))
        >>> rw.on_partitions(["k"]), rw.on_partitions(["k", "id"])
        (False, True)
    """

    condition: Any
    text: str
    simple: tuple[tuple[str, str, Any], ...] | None = None

    def on_partitions(self, partition_columns: Sequence[str]) -> bool:
        """Whether the kernel's partition overwrite applies: simple comparisons, each on a partition
        column named exactly.

        Example:
            >>> ReplaceWhere("k = 1 OR k = 2", "k = 1 OR k = 2").on_partitions(["k"])
            False
        """
        return self.simple is not None and all(c[0] in partition_columns for c in self.simple)


def _sql_name(name: str) -> str:
    return name if _IDENTIFIER.fullmatch(name) else quoted(name)


def _render(conditions: Sequence[tuple[str, str, Any]]) -> str:
    from deltalog.arrow.write import sql_literal

    out = []
    for column, op, value in conditions:
        if op.strip().lower() in ("in", "not in"):
            rendered = "(" + ", ".join(sql_literal(v) for v in value) + ")"
        else:
            rendered = sql_literal(value)
        out.append(f"{_sql_name(column)} {op.strip().upper()} {rendered}")
    return " AND ".join(out)


def _simple(node: Any) -> list[tuple[str, str, Any]]:
    """The ``(column, op, value)`` comparisons an AND of ``column op literal`` (``IN``, ``BETWEEN``) says."""
    from deltalog.data.sql_expr import UnsupportedExpressionError

    def column(n: Any) -> str | None:
        return str(n.args[0]) if n.kind == "col" and len(n.args) == 1 else None

    def literal(n: Any) -> tuple[bool, Any]:
        if n.kind == "lit":
            return True, n.args[0]
        if n.kind == "unary" and n.args[0] == "-" and n.args[1].kind == "lit":
            return True, -n.args[1].args[0]
        return False, None

    kind, args = node.kind, node.args
    if kind == "binary" and args[0] == "AND":
        return _simple(args[1]) + _simple(args[2])
    flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
    if kind == "binary" and args[0] in flipped:
        left, right = column(args[1]), column(args[2])
        ok_r, val_r = literal(args[2])
        ok_l, val_l = literal(args[1])
        if left is not None and ok_r:
            return [(left, args[0], val_r)]
        if right is not None and ok_l:
            return [(right, flipped[args[0]], val_l)]
    if kind == "in" and column(args[0]) is not None:
        values = [literal(i) for i in args[1]]
        if all(ok for ok, _ in values):
            return [(str(column(args[0])), "not in" if args[2] else "in", [v for _, v in values])]
    if kind == "between" and column(args[0]) is not None and not args[3]:
        (ok_lo, lo), (ok_hi, hi) = literal(args[1]), literal(args[2])
        if ok_lo and ok_hi:
            name = str(column(args[0]))
            return [(name, ">=", lo), (name, "<=", hi)]
    raise UnsupportedExpressionError("not an AND of comparisons of a column with literals")


def parse_replace_where(where: Any, table: str) -> ReplaceWhere:
    """The ``replaceWhere`` option: a SQL condition, a Spark ``Column`` or a list of ``(column, op,
    value)`` tuples.

    Example:
        >>> parse_replace_where("k IN (1, 2) AND id > 3", "/t").simple
        (('k', 'in', [1, 2]), ('id', '>', 3))
        >>> parse_replace_where([("day", "=", "2024-01-01")], "/t").text
        "day = '2024-01-01'"
        >>> parse_replace_where("k = 1 OR id > 3", "/t").simple is None
        True
    """
    if is_column(where):
        return ReplaceWhere(where, describe(where) or str(where))
    if isinstance(where, (list, tuple)):
        conds = [tuple(c) for c in where]
        if not conds or not all(len(c) == 3 for c in conds):
            raise InvalidArgumentError(
                f"replaceWhere conditions must be (column, op, value), got {where!r}", table=table
            )
        simple = tuple((str(c[0]), str(c[1]), c[2]) for c in conds)
        sql = _render(simple)
        return ReplaceWhere(sql, sql, simple)
    sql = str(where)
    if not sql.strip():
        raise InvalidArgumentError("replaceWhere is an empty condition", table=table)
    from deltalog.data.sql_expr import SqlParser, UnsupportedExpressionError

    try:
        simple_conds: tuple[tuple[str, str, Any], ...] | None = tuple(_simple(SqlParser(sql).parse()))
    except UnsupportedExpressionError:
        simple_conds = None
    return ReplaceWhere(sql, sql, simple_conds)


def _references(sql: str) -> list[tuple[str, ...]] | None:
    """The column paths a SQL condition reads; ``None`` when it cannot be told (outside the kernel's SQL
    subset) or the condition calls a nondeterministic function."""
    from deltalog.data.sql_expr import SqlNode, SqlParser, UnsupportedExpressionError

    try:
        node = SqlParser(sql).parse()
    except UnsupportedExpressionError:
        return None
    out: list[tuple[str, ...]] = []
    pending: list[Any] = [node]
    while pending:
        n = pending.pop()
        if isinstance(n, tuple):
            pending.extend(n)
        elif isinstance(n, SqlNode):
            if n.kind == "col":
                out.append(tuple(str(p) for p in n.args))
            elif n.kind == "func" and str(n.args[0]).lower() in _NONDETERMINISTIC:
                return None
            elif n.kind != "lit":
                pending.extend(n.args)
    return out


def _partitions_only(where: ReplaceWhere, snapshot: Snapshot) -> bool:
    """Whether the condition reads partition columns only (so it has one value per file)."""
    if not isinstance(where.condition, str):
        return False  # a Column is opaque
    refs = _references(where.condition)
    if refs is None:
        return False
    parts = {c.lower() for c in snapshot.partition_columns}
    return all(len(path) == 1 and path[0].lower() in parts for path in refs)


# ------------------------------------------------------------------------------------------ checks


def _with_columns(df: DataFrame, schema: StructType) -> DataFrame:
    """``df`` with every column of ``schema`` it lacks added as nulls of the column's type (as the rows
    will be stored)."""
    from pyspark.sql import functions as F

    present = {c.lower() for c in df.columns}
    missing = [f for f in schema.fields if f.name.lower() not in present]
    if not missing:
        return df
    return df.select("*", *[F.lit(None).cast(spark_type(f.type)).alias(f.name) for f in missing])


def _invalid(exc: Exception, where: ReplaceWhere, table: str, what: str) -> InvalidArgumentError:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return InvalidArgumentError(
        f"replaceWhere {where.text!r} is not a valid condition on the columns of {what}: {first}", table=table
    )


def _condition(where: ReplaceWhere, table: str) -> Column:
    """The condition as a never-null ``Column`` (a SQL string is parsed by Spark here)."""
    try:
        return condition_column(where.condition, "replaceWhere")
    except InvalidArgumentError:
        raise
    except Exception as exc:
        raise _invalid(exc, where, table, "the table") from None


def _resolve(frame: DataFrame, cond: Column, where: ReplaceWhere, table: str, what: str) -> None:
    """Analyse ``cond`` on ``frame`` (no job): an unknown column or a type error fails here, named."""
    try:
        _ = frame.filter(cond).schema
    except Exception as exc:
        columns = [c for c in frame.columns if c not in (FILE, ROW)]
        text = str(exc)
        found = _UNRESOLVED.search(text)
        if found:
            raise InvalidArgumentError(
                f"replaceWhere {where.text!r} refers to column {found.group(1)}, which {what} does not have "
                f"(columns: {columns})",
                table=table,
            ) from None
        raise _invalid(exc, where, table, what) from None


def _check_rows(data: DataFrame, cond: Column, where: ReplaceWhere, table: str) -> None:
    """Refuse data with rows outside the condition (false or null): one count job on the executors."""
    try:
        outside = data.filter(~cond).count()
    except Exception as exc:
        raise spark_error(exc, table) from None
    if outside:
        raise InvalidArgumentError(
            f"[{MISMATCH}] Written data does not conform to partial table overwrite condition or constraint "
            f"'{where.text}': {outside} row(s) of the data do not satisfy it (false or null); an overwrite "
            "with replaceWhere may only write rows it replaces -- filter the data or widen the condition",
            table=table,
        )


# ------------------------------------------------------------------------------------------ files


def _matching_partitions(spark: Any, snapshot: Snapshot, candidates: pa.Table, cond: Column) -> pa.Table:
    """The candidate files whose partition values satisfy ``cond``, by Spark on one row per file."""
    if candidates.num_rows == 0:
        return candidates
    try:
        hits = {r[FILE] for r in partition_frame(spark, snapshot, candidates).filter(cond).select(FILE).collect()}
    except Exception as exc:
        raise spark_error(exc, snapshot.table) from None
    return candidates.filter(pa.array([u in hits for u in file_uris(snapshot, candidates)], pa.bool_()))


def _replaced(
    spark: Any, table: Table, snapshot: Snapshot, txn: Transaction, where: ReplaceWhere, cond: Column
) -> Touched:
    """The files holding rows the condition matches (recorded as read, with the read predicate)."""
    conditions, _ = pruning_conditions(where.condition, snapshot)
    candidates = txn.read_candidates(conditions)
    if _partitions_only(where, snapshot):
        whole = _matching_partitions(spark, snapshot, candidates, cond)
        return Touched(whole, whole.slice(0, 0), live_rows(snapshot, whole.to_pylist()))
    return touched_files(spark, table, snapshot, candidates, cond)


def _change_files(
    spark: Any, table: Table, snapshot: Snapshot, plan: WritePlan, touched: Touched, cond: Column, df: DataFrame
) -> list[WrittenFile]:
    """Change data files: the replaced rows (``delete``) and the written ones (``insert``)."""
    from pyspark.sql import functions as F

    schema = plan.schema
    values = [F.col(quoted(f.name)).cast(spark_type(f.type)) for f in schema.fields]
    gone = _with_columns(target_scan(spark, snapshot, touched.files, drop_deleted=True).filter(cond), schema)
    rows = change_rows(gone, F.lit("delete"), values, values, schema).union(
        change_rows(_with_columns(df, schema), F.lit("insert"), values, values, schema)
    )
    return write_change_files(rows, table, schema, plan.metadata)


# ------------------------------------------------------------------------------------------ command


def overwrite_where(
    spark: Any,
    df: DataFrame,
    table: Table,
    txn: Transaction,
    plan: WritePlan,
    where: ReplaceWhere,
    write_data: Callable[[DataFrame], list[WrittenFile]],
    *,
    data_change: bool = True,
    app_txn: tuple[str, int] | None = None,
    check: bool = True,
) -> tuple[CommitResult, list[WrittenFile]]:
    """Replace the rows of the table matching ``where`` by the rows of ``df`` in one commit of ``txn``
    (see the module docstring); ``write_data`` writes ``df`` as data files (the Spark writer). Returns
    the commit and the files of ``df``.

    Example:
        >>> result, files = overwrite_where(spark, df, table, txn, plan, parse_replace_where("id > 9", "/t"),
        ...                                 write_data)                         # doctest: +SKIP
        >>> result.operation_metrics["numDeletedRows"]                          # doctest: +SKIP
        '120'
    """
    loc = table.location
    snapshot: Snapshot | None = plan.snapshot
    cond = _condition(where, loc)
    data = _with_columns(df, plan.schema)
    if snapshot is not None:
        _resolve(target_scan(spark, snapshot, snapshot.add_files().slice(0, 0)), cond, where, loc, "the table")
    _resolve(data, cond, where, loc, "the data")
    if check:
        _check_rows(data, cond, where, loc)
    staged = Staged(table.store)
    copied = 0
    touched: Touched | None = None
    try:
        written = write_data(df)
        staged.data.extend(written)
        if snapshot is not None:
            touched = _replaced(spark, table, snapshot, txn, where, cond)
            copied = write_survivors(spark, table, snapshot, touched.partial, cond, staged)
            if data_change and touched.partial.num_rows and records_changes(snapshot):
                staged.cdc.extend(_change_files(spark, table, snapshot, plan, touched, cond, df))
        if plan.metadata_changed:
            txn.update_metadata(plan.metadata)
        if touched is not None:
            txn.remove_files(touched.files, data_change=data_change)
        for f in staged.data:
            txn.add_file(f.to_add(data_change=data_change))
        stage_change_files(txn, staged.cdc)
        if app_txn is not None:
            txn.set_app_transaction(*app_txn)
    except BaseException:
        staged.cleanup()
        raise
    metrics = {
        "numDeletedRows": touched.matched if touched is not None else 0,
        "numCopiedRows": copied,
        "numAddedChangeFiles": len(staged.cdc),
    }
    return staged.commit(txn, metrics), written
