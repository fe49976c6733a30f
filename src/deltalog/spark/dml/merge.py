"""``MERGE INTO target USING source ON condition WHEN ...``: delta-spark's merge builder on Spark jobs.

:func:`merge` returns a :class:`MergeBuilder` with delta-spark's clause methods (``whenMatchedUpdate``,
``whenMatchedUpdateAll``, ``whenMatchedDelete``, ``whenNotMatchedInsert``, ``whenNotMatchedInsertAll``,
``whenNotMatchedBySourceUpdate``, ``whenNotMatchedBySourceDelete``, ``withSchemaEvolution``) and
``execute()``. delta-spark's rules hold: clauses of a kind are tried in order and the first whose
condition holds wins; only the last clause of a kind may omit its condition; a target row matched by
more than one source row is an error (``[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE]``,
naming the condition) unless the only matched clause is an unconditional delete.

Execution (the source is evaluated once per job, like delta-spark without source materialization, so
it should be deterministic):

1. target files are pruned by the target-only simple conjuncts of a SQL condition (not with
   ``whenNotMatchedBySource`` clauses, which concern every target row); the transaction records them as
   its read predicate and read files;
2. **insert-only** merges (only ``whenNotMatched`` clauses) write the source rows that match no target
   row (``left_anti`` join) as new files: a commit that only adds files;
3. otherwise one job joins target and source (inner / right / left / full outer, as the clauses need),
   picks each row's clause, checks for multiple matches and counts per file and clause; then
   **copy-on-write**: a second job writes the touched files' rows (updated or copied; deleted ones
   dropped) and the inserted rows, and the touched files are removed; or, with **deletion vectors**
   (``delta.enableDeletionVectors=true`` + feature), only the updated and inserted rows are written and
   a third job marks the updated / deleted target rows in the touched files' deletion vectors.
   Without ``whenNotMatched`` clauses the second join reads the touched files only. With the change
   data feed on, one more job writes the change data files (pre/post-images, deletes, inserts; see
   :mod:`~deltalog.spark.jobs.change_files`); an insert-only merge needs none;
4. **one job** when the table has no deletion vectors, row tracking or change data feed and the pruning
   leaves a single target file, or several files (with distinct sizes) and at least as many source rows
   (:mod:`~deltalog.spark.dml.merge_one_pass`): the write job runs at once and the multiple-match check,
   the clause counts and the touched files come from counts observed while it writes; if some candidate
   file had no acted-on target row, the written files are deleted and the merge runs as in 3 from its
   second job, with the counts the first would make (the untouched files stay in place).

With ``withSchemaEvolution()`` the source columns missing from the target are added to the table schema
by ``*All`` clauses (target columns missing from the source keep their value / are null). Metrics are
delta-spark's (``numSourceRows``, ``numTargetRowsInserted``/``Updated``/``Deleted``/``Copied`` and the
matched / not-matched-by-source splits, ``numOutputRows``, ``numTargetFilesAdded``/``Removed``,
``numTargetBytesAdded``/``Removed``, ``executionTimeMs``, ...). ``execute()`` returns delta-spark's
one-row DataFrame (``num_affected_rows``, ``num_updated_rows``, ``num_deleted_rows``,
``num_inserted_rows``); the full result stays in :attr:`MergeBuilder.result`.

Example:
    >>> (merge(spark, "/data/t", updates.alias("s"), "t.id = s.id", target_alias="t")
    ...     .whenMatchedUpdate(set={"v": "s.v"})
    ...     .whenNotMatchedInsertAll()
    ...     .execute().first().num_affected_rows)                                  # doctest: +SKIP
    12
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.spark.common.arguments import check_condition, check_source, column_mapping
from deltalog.spark.common.compat import metrics_row
from deltalog.spark.dml.merge_one_pass import OnePassRun
from deltalog.spark.dml.merge_spec import MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, Clause, MergeSpec
from deltalog.spark.jobs.staged import (
    DmlResult,
)

__all__ = ["MergeBuilder", "merge"]

DataFrame = Any
Column = Any

_RESULT_COLUMNS = ("num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows")


def _check_condition(condition: Any, what: str) -> None:
    check_condition(condition)
    if isinstance(condition, str) and not condition.strip():
        raise InvalidArgumentError(f"{what} is an empty string")


def merge(spark: Any, path: str, source: DataFrame, condition: Any, *, target_alias: str | None = None) -> MergeBuilder:
    """A :class:`MergeBuilder` merging ``source`` into the Delta table at ``path`` on ``condition`` (SQL
    string or ``Column``); ``target_alias`` is how the condition and clauses name the target.

    Example:
        >>> b = merge(spark, "/data/t", src.alias("s"), "t.id = s.id", target_alias="t")  # doctest: +SKIP
        >>> b.whenMatchedDelete().execute()                                        # doctest: +SKIP
        DataFrame[num_affected_rows: bigint, ...]
    """
    check_source(source)
    if condition is None:
        raise InvalidArgumentError("'condition' in merge cannot be None")
    _check_condition(condition, "merge condition")
    return MergeBuilder(spark, path, source, condition, target_alias=target_alias)


class MergeBuilder:
    """delta-spark's ``DeltaMergeBuilder``: each ``when...`` method returns a new builder with the clause
    added; :meth:`execute` runs the merge.

    Example:
        >>> (DeltaTable.forPath(spark, "/data/t").alias("t").merge(src.alias("s"), "t.id = s.id")
        ...     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())       # doctest: +SKIP
    """

    def __init__(
        self,
        spark: Any,
        path: str,
        source: DataFrame,
        condition: Any,
        *,
        target_alias: str | None = None,
        clauses: Sequence[Clause] = (),
        schema_evolution: bool = False,
    ) -> None:
        self._spark = spark
        self._path = path
        self._source = source
        self._condition = condition
        self._alias = target_alias
        self._clauses = tuple(clauses)
        self._evolve = schema_evolution
        #: The :class:`~deltalog.spark.dml.DmlResult` of the last :meth:`execute` (``None`` before).
        self.result: DmlResult | None = None

    def _with(self, clause: Clause | None = None, *, evolve: bool | None = None) -> MergeBuilder:
        if clause is not None and clause.condition is not None:
            _check_condition(clause.condition, f"the condition of {clause.label()}")
        return MergeBuilder(
            self._spark, self._path, self._source, self._condition, target_alias=self._alias,
            clauses=self._clauses + ((clause,) if clause is not None else ()),
            schema_evolution=self._evolve if evolve is None else evolve,
        )

    @staticmethod
    def _mapping(value: Any, name: str, method: str) -> Mapping[str, Any]:
        return column_mapping(value, f"'{name}' in {method}")

    def whenMatchedUpdate(self, condition: Any = None, set: Mapping[str, Any] | None = None) -> MergeBuilder:
        """Update matched target rows (where ``condition`` holds): ``set`` maps target columns to
        expressions over target and source.

        Example:
            >>> b.whenMatchedUpdate("s.v > t.v", {"v": "s.v"})                     # doctest: +SKIP
        """
        return self._with(Clause(MATCHED, "update", condition, self._mapping(set, "set", "whenMatchedUpdate")))

    def whenMatchedUpdateAll(self, condition: Any = None) -> MergeBuilder:
        """Update every target column of matched rows from the source column of the same name.

        Example:
            >>> b.whenMatchedUpdateAll()                                           # doctest: +SKIP
        """
        return self._with(Clause(MATCHED, "update", condition, None, star=True))

    def whenMatchedDelete(self, condition: Any = None) -> MergeBuilder:
        """Delete matched target rows (where ``condition`` holds).

        Example:
            >>> b.whenMatchedDelete("s.deleted")                                   # doctest: +SKIP
        """
        return self._with(Clause(MATCHED, "delete", condition))

    def whenNotMatchedInsert(self, condition: Any = None, values: Mapping[str, Any] | None = None) -> MergeBuilder:
        """Insert source rows matching no target row: ``values`` maps target columns to expressions over
        the source; other columns are null.

        Example:
            >>> b.whenNotMatchedInsert(values={"id": "s.id", "v": "s.v"})          # doctest: +SKIP
        """
        return self._with(
            Clause(NOT_MATCHED, "insert", condition, self._mapping(values, "values", "whenNotMatchedInsert"))
        )

    def whenNotMatchedInsertAll(self, condition: Any = None) -> MergeBuilder:
        """Insert unmatched source rows, every target column from the source column of the same name.

        Example:
            >>> b.whenNotMatchedInsertAll()                                        # doctest: +SKIP
        """
        return self._with(Clause(NOT_MATCHED, "insert", condition, None, star=True))

    def whenNotMatchedBySourceUpdate(self, condition: Any = None, set: Mapping[str, Any] | None = None) -> MergeBuilder:
        """Update target rows no source row matches (expressions over the target only).

        Example:
            >>> b.whenNotMatchedBySourceUpdate(set={"active": "false"})            # doctest: +SKIP
        """
        return self._with(
            Clause(NOT_MATCHED_BY_SOURCE, "update", condition,
                    self._mapping(set, "set", "whenNotMatchedBySourceUpdate"))
        )

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> MergeBuilder:
        """Delete target rows no source row matches (where ``condition`` holds).

        Example:
            >>> b.whenNotMatchedBySourceDelete()                                   # doctest: +SKIP
        """
        return self._with(Clause(NOT_MATCHED_BY_SOURCE, "delete", condition))

    def withSchemaEvolution(self) -> MergeBuilder:
        """Let the merge add source columns to the table schema: the source's extra columns for ``*All``
        clauses, and a source column named by an explicit ``set`` / ``values`` key the table lacks.

        Example:
            >>> b.withSchemaEvolution().whenNotMatchedInsertAll()                  # doctest: +SKIP
        """
        return self._with(evolve=True)

    def execute(self) -> DataFrame:
        """Run the merge (one commit, or none when nothing changes); returns delta-spark's metrics
        DataFrame and keeps the full :class:`~deltalog.spark.dml.DmlResult` in :attr:`result`.

        Example:
            >>> b.whenMatchedUpdateAll().execute().first().num_updated_rows        # doctest: +SKIP
            3
        """
        from deltalog.spark.reads.skipping import latest_frame

        self._source = latest_frame(self._source)  # a Delta read as its table is now, as delta-spark reads it
        spec = MergeSpec(self._spark, self._path, self._source, self._condition, self._alias, self._clauses,
                         self._evolve)
        self.result = OnePassRun(spec).run()
        m = self.result.metric
        updated, deleted, inserted = m("numTargetRowsUpdated"), m("numTargetRowsDeleted"), m("numTargetRowsInserted")
        values = (updated + deleted + inserted, updated, deleted, inserted)
        return metrics_row(self._spark, _RESULT_COLUMNS, values)
