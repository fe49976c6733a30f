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
import pyarrow.compute as pc

from deltalog.health.files import num_records_array

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.snapshot import Snapshot

__all__ = ["ROW_KEEPING_STEPS", "logged_count", "rows_from_log"]

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
