"""Identity columns in Spark writes: the values are computed in the DataFrame, by the tasks, and the
commit records the new high-water mark from the written files' statistics (see
:mod:`deltalog.txn.identity` for the rules).

A task numbers its rows: row ``r`` of partition ``p`` gets ``next + step * (r * P + p)``, where ``next`` is
the first value after the high-water mark and ``P`` the number of partitions Spark planned (a bound on
Connect sessions, where the plan cannot be asked). Values are unique across the write and increase
within a partition; they are not consecutive. A partition index at or above ``P`` (Spark split a skewed
partition at run time) fails the task rather than risk a duplicate; the write is then retried once with a
bound no plan reaches.

Example:
    >>> gen = identity_for(df, snapshot.schema, table="/t")                       # doctest: +SKIP
    >>> df = with_identity(df, gen)                                               # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from deltalog.data.write_files import WrittenFile
from deltalog.protocol.schema import StructType
from deltalog.txn.identity import IdentityColumn, IdentityGenerator

__all__ = ["BOUND", "GUARD_MESSAGE", "identity_for", "identity_value", "observe_files", "planned_partitions",
           "with_identity"]

#: The partition bound used when the plan's partition count is unknown or was exceeded.
BOUND = 1 << 20
GUARD_MESSAGE = "deltalog identity columns: partition index beyond the planned partitions"


def identity_for(df: Any, schema: StructType, *, table: str) -> IdentityGenerator | None:
    """The identity columns ``df`` leaves out of a table with ``schema``; ``None`` when there are none.
    Explicit values for a ``GENERATED ALWAYS`` column are refused here.

    Example:
        >>> identity_for(spark.range(3), snapshot.schema, table="/t")             # doctest: +SKIP
    """
    generator = IdentityGenerator.for_schema(schema, list(df.columns), table=table)
    return generator if generator else None


def planned_partitions(df: Any) -> int:
    """How many partitions Spark plans for ``df`` (classic sessions), else :data:`BOUND`.

    Example:
        >>> planned_partitions(spark.range(10, numPartitions=3))                  # doctest: +SKIP
        3
    """
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return BOUND
    try:
        plan = jdf.queryExecution().executedPlan()
        n = int(plan.outputPartitioning().numPartitions())
        if n == 0 and not any(word in str(plan.treeString()) for word in _EAGER):
            # unknown partitioning (VALUES, createDataFrame): a plan without exchanges or subqueries builds its
            # RDD without running a job, and the RDD knows
            n = int(plan.execute().getNumPartitions())
    except Exception:
        return BOUND
    return n if 0 < n < BOUND else BOUND


#: Plan nodes whose ``execute()`` may run jobs (shuffles, broadcasts, subqueries, adaptive stages).
_EAGER = ("Exchange", "Subquery", "Adaptive", "Broadcast")


def _values(col: IdentityColumn, partitions: int) -> Any:
    from pyspark.sql import functions as F

    pid = F.spark_partition_id().cast("long")
    local = F.monotonically_increasing_id() - F.shiftleft(pid, 33)
    value = F.lit(col.next_value) + F.lit(col.step) * (local * F.lit(partitions) + pid)
    return F.when(pid < F.lit(partitions), value).otherwise(F.raise_error(F.lit(GUARD_MESSAGE)).cast("long"))


def with_identity(df: Any, generator: IdentityGenerator, *, partitions: int | None = None) -> Any:
    """``df`` with the generated identity columns appended (``partitions``: the bound ``P``).

    Example:
        >>> with_identity(spark.range(3), gen).columns                           # doctest: +SKIP
        ['id', 'row_id']
    """
    bound = partitions if partitions is not None else planned_partitions(df)
    for col in generator.generated:
        df = df.withColumn(col.name, _values(col, bound))
    return df


def identity_value(col: IdentityColumn, partitions: int) -> Any:
    """The ``Column`` computing ``col``'s values in a projection (``partitions``: the bound ``P``).

    Example:
        >>> df.select(identity_value(gen.generated[0], 2).alias("id"))            # doctest: +SKIP
    """
    return _values(col, partitions)


def observe_files(generator: IdentityGenerator, files: Iterable[WrittenFile], *, partitions: int) -> None:
    """Feed the generator the min/max of its columns in the files' statistics (the new high-water mark).
    A file without statistics for a column (stats disabled for it) counts with the largest value the write
    could have generated: ``next + step * (rows * P + P - 1)``, so no value is ever handed out twice.

    Example:
        >>> observe_files(gen, files, partitions=2); gen.high_water_marks()       # doctest: +SKIP
        {'id': 7}
    """
    written = list(files)
    rows = sum(f.num_records for f in written)
    for f in written:
        try:
            stats = json.loads(f.stats) if f.stats else {}
        except ValueError:
            stats = {}
        lows, highs = stats.get("minValues") or {}, stats.get("maxValues") or {}
        for col in generator.generated:
            low, high = lows.get(col.name), highs.get(col.name)
            if f.num_records and (low is None or high is None):
                bound = col.next_value + col.step * (rows * partitions + partitions - 1)
                low, high = (col.next_value, bound) if col.step > 0 else (bound, col.next_value)
            generator.observe(col.name, low, high)
