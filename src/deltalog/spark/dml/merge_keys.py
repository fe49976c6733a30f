"""The target files a MERGE's source can match, found from the source's join keys before any join.

A MERGE whose ``ON`` condition has equality conjuncts between a target column and a source column
(``t.id = s.id``) can only match target rows whose key is one of the source's keys. One aggregate over the
source (which also gives ``numSourceRows``, counted anyway) yields each key's smallest and largest value,
and for partition columns the set of values; they become kernel conditions (``id >= lo``, ``id <= hi``,
``day IN (...)``) that prune the target's files by partition values and min/max statistics, exactly as a
``WHERE`` clause would. A tiny source into a table of many files (fewer source rows than files left after
the range) also gets its exact key set, in a second small job, so files between two keys are skipped too.

Only keys whose target column can be compared exactly are used: integral numbers, strings, dates and
decimals of a top-level column, with a source column of the same kind; anything else (floats and their
NaN, timestamps whose statistics are truncated, casts between kinds, expressions) is left to the join.
A source row with a null key matches nothing, so it never widens the range; a source without a non-null
key in some key column matches no target row at all.

The pass is a Spark job of its own, but no longer a wait: it starts when the MERGE begins, on a thread that
inherits the caller's job group (:class:`KeyPass`), while the driver records the predicates and plans the
write for the files the ON condition leaves (measured 2026-12-04, a 1k-row upsert into 10k rows, 40 rounds:
264 ms against 284 ms with the pass run first). Where the keys prune files that plan is wasted, so a MERGE
whose plan ahead went unused the last time it ran on the table plans after the pass (:meth:`KeyPass.ahead_fits`).
A repeated upsert whose last run wrote every file the ON condition leaves in one job runs no pass at all
(``KeyPass(optional=True)``, :attr:`KeyPass.skipped`): its write job counts the source's rows.

With ``WHEN NOT MATCHED BY SOURCE`` clauses a target row that matches no source row is acted on too, so the
files read are those the keys leave plus every file a row of which such a clause's condition may hold for
(all of them when one such clause has no condition).

Imports: :mod:`deltalog.data`, :mod:`deltalog.protocol`, :mod:`deltalog.spark.reads.target`, a
:class:`~deltalog.txn.transaction.Transaction` it is handed.

Example:
    >>> pairs = key_pairs("t.id = s.id AND t.v > 0", snap, qualifiers=["t"], source=src)   # doctest: +SKIP
    >>> [(p.column, p.source) for p in pairs]                                             # doctest: +SKIP
    [('id', '`s`.`id`')]
    >>> source_keys(src, pairs, snap).conditions                                          # doctest: +SKIP
    [Condition(column='id', op='>=', value=9000), Condition(column='id', op='<=', value=9999)]
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.data.filters import Condition, prune_files
from deltalog.protocol.schema import PrimitiveType
from deltalog.spark.reads.target import Names, conjuncts, exact_conditions, pruning_conditions

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.transaction import Transaction

__all__ = ["KeyPair", "KeyPass", "SourceKeys", "key_pairs", "merge_candidates", "source_keys"]

DataFrame = Any

#: Delta type name -> the kind a source column must have to be compared without a cast changing values
_KINDS = {"byte": "int", "short": "int", "integer": "int", "long": "int", "string": "str", "date": "date"}
_SPARK_KINDS = {"tinyint": "int", "smallint": "int", "int": "int", "bigint": "int", "string": "str", "date": "date"}
#: the most source rows whose exact key set is collected (a second job) to skip files between keys
VALUE_SET_ROWS = 1000
#: the largest source (Spark's estimate, bytes) whose keys are aggregated in one task (one job, no shuffle)
ONE_TASK_BYTES = 32 << 20


@dataclass(frozen=True)
class KeyPair:
    """One ``target column = source column`` conjunct of a MERGE condition: the target's column name and
    the source column as a Spark SQL reference (backquoted parts)."""

    column: str
    source: str


@dataclass
class SourceKeys:
    """What one pass over the source says about its keys: the kernel conditions every target row a source
    row can match satisfies, the source's row count, and whether some key column has no non-null value
    (then no target row can match)."""

    conditions: list[Condition] = field(default_factory=list)
    rows: int = 0
    matches_nothing: bool = False


def _kind(name: str) -> str:
    return "decimal" if name.startswith("decimal") else _KINDS.get(name, _SPARK_KINDS.get(name, ""))


def key_pairs(
    condition: Any, snapshot: Snapshot, *, qualifiers: Collection[str], source: DataFrame
) -> list[KeyPair]:
    """The ``target column = source column`` conjuncts of ``condition`` (SQL text, or a ``Column`` whose text
    Spark prints as SQL) whose two sides have the same kind of comparable value (see the module docstring).

    Example:
        >>> key_pairs("t.id = s.id", snap, qualifiers=["t"], source=src)          # doctest: +SKIP
        [KeyPair(column='id', source='`s`.`id`')]
    """
    from deltalog.data.sql_expr import SqlParser, UnsupportedExpressionError
    from deltalog.spark.reads.target import describe

    text = describe(condition)
    if text is None:
        return []
    try:
        node = SqlParser(text).parse()
    except UnsupportedExpressionError:
        return []
    names = Names(snapshot.schema, qualifiers, source.columns)
    out: list[KeyPair] = []
    for term in conjuncts(node):
        if term.kind != "binary" or term.args[0] != "=":
            continue
        sides = term.args[1], term.args[2]
        for mine, other in (sides, sides[::-1]):
            column = names.resolve(mine)
            if column is None or other.kind != "col" or names.resolve(other) is not None:
                continue
            pair = _checked(KeyPair(column, ".".join(f"`{str(p).replace('`', '``')}`" for p in other.args)),
                            snapshot, source)
            if pair is not None:
                out.append(pair)
            break
    return out


def _checked(pair: KeyPair, snapshot: Snapshot, source: DataFrame) -> KeyPair | None:
    """``pair`` if its source side is a source column of the target column's kind."""
    from pyspark.sql import functions as F

    dtype = snapshot.schema.field(pair.column).type
    if not isinstance(dtype, PrimitiveType) or not _kind(dtype.name):
        return None
    try:
        found = source.select(F.expr(pair.source)).schema.fields[0].dataType.simpleString()
    except Exception:  # not a source column (the join reports what is wrong with the condition)
        return None
    return pair if _kind(found) == _kind(dtype.name) else None


def source_keys(
    source: DataFrame, pairs: Sequence[KeyPair], snapshot: Snapshot, *, files: int
) -> SourceKeys:
    """One aggregate over ``source``: its row count and, for each pair, the conditions on the target column
    that every target row a source row can match satisfies; ``files``: how many target files the other
    conditions leave (a source with fewer rows than that also gets its exact key sets, see the module).

    Example:
        >>> source_keys(src, [KeyPair("id", "`s`.`id`")], snap, files=40).conditions   # doctest: +SKIP
        [Condition(column='id', op='>=', value=9000), Condition(column='id', op='<=', value=9999)]
    """
    from pyspark.sql import functions as F

    partitions = set(snapshot.metadata.partitionColumns or ())
    aggs = [F.count(F.lit(1)).alias("n")]
    for i, p in enumerate(pairs):
        key = F.expr(p.source)
        aggs += [F.min(key).alias(f"lo{i}"), F.max(key).alias(f"hi{i}")]
        if p.column in partitions:
            aggs.append(F.collect_set(key).alias(f"set{i}"))
    row = _one_task(source).agg(*aggs).collect()[0].asDict()
    out = SourceKeys(rows=int(row["n"]))
    if any(row[f"lo{i}"] is None for i in range(len(pairs))):
        out.matches_nothing = True
        return out
    sets = {i: list(row[f"set{i}"]) for i, p in enumerate(pairs) if p.column in partitions}
    if 0 < out.rows <= min(VALUE_SET_ROWS, files - 1) and len(sets) < len(pairs):
        values = source.select(*[F.expr(p.source).alias(f"k{i}") for i, p in enumerate(pairs)]).distinct().collect()
        for i in range(len(pairs)):
            sets.setdefault(i, sorted({r[f"k{i}"] for r in values if r[f"k{i}"] is not None}))
    for i, p in enumerate(pairs):
        if i in sets:
            out.conditions += exact_conditions(p.column, "in", sorted(sets[i]), snapshot)
        else:
            out.conditions += exact_conditions(p.column, ">=", row[f"lo{i}"], snapshot)
            out.conditions += exact_conditions(p.column, "<=", row[f"hi{i}"], snapshot)
    return out


def _one_task(source: DataFrame) -> DataFrame:
    """``source`` in one partition when Spark estimates it at most :data:`ONE_TASK_BYTES` (the aggregate then
    runs as one job, without a shuffle); else as it is (or when no estimate is at hand, e.g. Spark Connect)."""
    try:
        size = int(str(source._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:
        return source
    return source.coalesce(1) if size <= ONE_TASK_BYTES else source


#: (table, ON condition) -> whether the last such MERGE would have run the write planned ahead for the files the
#: ON condition leaves (the last few kept): a repeated MERGE (a streaming upsert) plans ahead only while it would
_FITS: OrderedDict[tuple[str, str], bool] = OrderedDict()
_FITS_KEPT = 64
_FITS_LOCK = threading.Lock()


class KeyPass:
    """The pass over a MERGE source's keys (:func:`source_keys`), started in the background when the MERGE
    begins so the driver plans the MERGE while Spark runs it; :meth:`keys` waits for
    it. Also holds what the ON condition alone prunes: :attr:`on` and :attr:`files_on`, the target files left
    before the source's keys are known (a guess of the files the MERGE reads, for planning ahead), and whether
    that guess is worth planning for (:meth:`ahead_fits`). ``by_source``: the conditions of the NOT MATCHED BY
    SOURCE clauses (``None`` for one without).

    ``optional``: the MERGE can do without the pass -- it counts the source's rows in its write job, and where
    the keys would have pruned a file it finds that file untouched by that job and takes its two-job way, which
    leaves the file in place. Then no pass runs (:attr:`skipped`, :meth:`keys` is ``None``) when the last such
    MERGE (same table and ON condition, without NOT MATCHED BY SOURCE clauses) wrote in one job every file the
    ON condition leaves: its keys pruned none. A repeated upsert whose keys spread over the table (a streaming
    ``foreachBatch`` of updates) so saves the pass's job; one whose keys fall in few files never skips it.

    Example:
        >>> kp = KeyPass(spark, snap, "t.id = s.id", src, alias="t")       # doctest: +SKIP
        >>> kp.keys().rows                                                          # doctest: +SKIP
        1000
    """

    def __init__(self, spark: Any, snapshot: Snapshot, condition: Any, source: DataFrame, *, alias: str | None,
                 by_source: Sequence[Any] = (), optional: bool = False) -> None:
        from deltalog.spark.common.compat import in_background
        from deltalog.spark.common.errors import spark_errors

        qualifiers = [alias] if alias else []
        self.on, _ = pruning_conditions(condition, snapshot, qualifiers=qualifiers, ambiguous=source.columns)
        self.by_source = list(by_source)
        self.unconditional = any(c is None for c in by_source)
        self._memo = (snapshot.table, condition if isinstance(condition, str) else repr(condition))
        #: no pass runs (see the class docstring)
        self.skipped = optional and not by_source and self._fitted() is True
        pairs = [] if self.skipped or self.unconditional or not snapshot.num_files() else \
            key_pairs(condition, snapshot, qualifiers=qualifiers, source=source)
        self.files_on = prune_files(snapshot, self.on)
        files = self.files_on.num_rows
        # spark_errors: the columns the thread builds record no call site, as on the caller's thread
        self._job = in_background(spark, spark_errors(lambda: source_keys(source, pairs, snapshot, files=files))) \
            if pairs else None

    def keys(self) -> SourceKeys | None:
        """What the pass found (``None``: the ON condition has no usable key pair, no pass ran); raises what
        the pass raised."""
        return None if self._job is None else self._job.result()

    def ahead_fits(self) -> bool:
        """Whether a write planned ahead for :attr:`files_on` is likely to be the one run: it would have been
        the last time a MERGE with this ON condition ran on this table in this process (true the first time).
        It is not where the source's keys prune files (a streaming upsert of recent keys into a table ordered
        by them) or where the MERGE takes its two-job way; planning ahead is then wasted, and on a small MERGE,
        measured on two cores, it costs as much (33 ms) as it saves where it fits (30 ms)."""
        return self._fitted() is not False

    def _fitted(self) -> bool | None:
        with _FITS_LOCK:
            return _FITS.get(self._memo)

    def remember(self, fits: bool) -> None:
        """Remember whether this MERGE ran (or would have run) the write planned for :attr:`files_on`."""
        with _FITS_LOCK:
            _FITS[self._memo] = fits
            _FITS.move_to_end(self._memo)
            while len(_FITS) > _FITS_KEPT:
                _FITS.popitem(last=False)

    def close(self) -> None:
        """Wait for the pass, whatever it found or raised (a MERGE that stops early leaves no job behind)."""
        with contextlib.suppress(BaseException):
            self.keys()


def merge_candidates(
    txn: Transaction, snapshot: Snapshot, keypass: KeyPass, *, alias: str | None,
) -> tuple[pa.Table, int | None]:
    """The target files a MERGE reads, recorded as read by ``txn``, and the source's row count when the pass
    over its keys counted it (else ``None``). ``keypass``: the started pass, which also holds the conditions of
    the NOT MATCHED BY SOURCE clauses.

    Example:
        >>> kp = KeyPass(spark, snap, "t.id = s.id", src, alias="t")             # doctest: +SKIP
        >>> files, rows = merge_candidates(txn, snap, kp, alias="t")                    # doctest: +SKIP
        >>> files.num_rows, rows                                                      # doctest: +SKIP
        (1, 10000)
    """
    qualifiers = [alias] if alias else []
    on, unconditional, by_source = keypass.on, keypass.unconditional, keypass.by_source
    conditions, rows, nothing = list(on), None, False
    keys = keypass.keys()
    if keys is not None:
        rows, nothing = keys.rows, keys.matches_nothing
        conditions += keys.conditions
    if not by_source and not nothing:
        return txn.read_candidates(conditions), rows
    if unconditional:
        return txn.read_candidates([]), rows
    # a row of a file left out matches no source row and satisfies no NOT MATCHED BY SOURCE condition
    paths = set() if nothing else set(prune_files(snapshot, conditions).column("path").to_pylist())
    for c in by_source:
        implied, _ = pruning_conditions(c, snapshot, qualifiers=qualifiers)
        paths.update(prune_files(snapshot, implied).column("path").to_pylist())
    every = snapshot.add_files()
    files = every.filter(pa.array([p in paths for p in every.column("path").to_pylist()], pa.bool_()))
    if not by_source:  # no source key: no target row can match, none is read (the predicate: a superset)
        txn.read_predicate([(c.column, c.op, c.value) for c in on])
        txn.read_files([])
        return files, rows
    txn.read_whole_table()
    txn.read_files(files.column("path").to_pylist())
    return files, rows
