"""DML on Delta tables with Spark: ``DELETE``, ``UPDATE`` and ``MERGE``, as delta-spark's ``DeltaTable`` has them.

Spark does the row work -- scans with ``_metadata.file_path`` / ``_metadata.row_index``, joins, the
rewrite of touched files (the Spark writer of :mod:`deltalog.spark.writes.save`) and, for tables with
deletion vectors, the new bitmaps (built and written by the executors) -- and the kernel does the rest:
file pruning, the transaction (read predicate and read files recorded for conflict detection) and the
single commit with delta-spark's ``operationMetrics``. A failure before the commit leaves the table at
its version (files already written are unreferenced; ``VACUUM`` removes them).

* :func:`delete` -- deletion vectors or copy-on-write; whole files for partition-only conditions;
* :func:`update` -- copy-on-write, or deletion vectors + new files for the updated rows;
* :func:`merge` -- a :class:`MergeBuilder` with every delta-spark clause (copy-on-write or deletion vectors).

Each function takes the Spark session and the table path; they return a :class:`DmlResult` (the
``DeltaTable`` methods return what delta-spark returns: ``None``, ``None`` and a builder).

Modules: :mod:`.delete`, :mod:`.update`, :mod:`.merge` (the builder) with its run (:mod:`.merge_run`, the
one-job path in :mod:`.merge_one_pass`), assignments (:mod:`.assign`), schema evolution (:mod:`.evolve`) and
broadcast sources (:mod:`.broadcast`).

May import: the kernel and the floors below: :mod:`deltalog.spark.common`, ``columns``, ``reads``, ``jobs``,
``layout``, ``writes``.

Example:
    >>> from deltalog.spark.dml import delete, merge, update
    >>> delete(spark, "/data/t", "id < 10").metric("numDeletedRows")               # doctest: +SKIP
    10
    >>> update(spark, "/data/t", "id = 12", {"v": "v + 1"}).version               # doctest: +SKIP
    7
    >>> merge(spark, "/data/t", src.alias("s"), "t.id = s.id", target_alias="t") \\
    ...     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()            # doctest: +SKIP
    DataFrame[num_affected_rows: bigint, num_updated_rows: bigint, ...]
"""

from __future__ import annotations

from deltalog.spark.dml.delete import delete
from deltalog.spark.dml.merge import MergeBuilder, merge
from deltalog.spark.dml.update import update
from deltalog.spark.jobs.staged import DmlResult

__all__ = ["DmlResult", "MergeBuilder", "delete", "merge", "update"]
