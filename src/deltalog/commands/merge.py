"""``MERGE INTO`` in the kernel, executed with Arrow, with delta-rs's builder API.

``Table.merge(source, "target.id = source.id")`` joins the source rows (a ``pyarrow.Table``, record batch
reader or pandas frame) to the target table's rows and applies the clauses added to the builder, each with
an optional SQL condition, the first whose condition holds winning (as in SQL):

* ``when_matched_update(updates)`` / ``when_matched_update_all()`` / ``when_matched_delete()`` for target rows
  the join condition pairs with a source row;
* ``when_not_matched_insert(updates)`` / ``when_not_matched_insert_all()`` for source rows no target row
  pairs with;
* ``when_not_matched_by_source_update(updates)`` / ``when_not_matched_by_source_delete()`` for target rows no
  source row pairs with.

``updates`` map target columns to SQL expressions (strings) over ``target.<col>`` and ``source.<col>``
(the aliases are the builder's; an unqualified name is fine when only one side has it). The join
condition must hold at least one equality of a target column and a source column (the hash join's keys);
its other ``AND`` terms are checked on each pair. A target row paired with several source rows is an error
unless the only matched clause is an unconditional delete (``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_
IN_MERGE``). Without ``not matched by source`` clauses only the target files that can hold the source's keys
are read (partition values and min/max statistics of the first key). The changed files are handled as by
the kernel's UPDATE: deletion vectors when the table enables them, else copy-on-write; inserted rows go to
new files; generated columns, defaults, NOT NULL and CHECK constraints apply; row ids are kept by updated
rows; change data files are written when the change data feed is on. Tables with identity columns take no
inserts here (use Spark's MERGE). Everything is read into memory: this is for tables that fit.

Example:
    >>> (deltalog.Table("/data/t").merge(updates, "target.id = source.id")     # doctest: +SKIP
    ...  .when_matched_update_all().when_not_matched_insert_all().execute()).num_target_rows_inserted
    3
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.commands.merge_run import MergeClause, MergeResult, run_merge
from deltalog.errors import InvalidArgumentError

if TYPE_CHECKING:
    from deltalog.txn.handle import TableHandle

__all__ = ["MergeResult", "TableMerger"]


class TableMerger:
    """A MERGE being built (see the module docstring); :meth:`execute` runs it.

    Example:
        >>> merger = deltalog.Table("/data/t").merge(src, "target.id = source.id")   # doctest: +SKIP
        >>> merger.when_matched_delete("source.deleted").execute().num_target_rows_deleted  # doctest: +SKIP
        2
    """

    def __init__(
        self, table: TableHandle, source: Any, predicate: str, *, source_alias: str = "source",
        target_alias: str = "target", use_deletion_vectors: bool | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self._table = table
        self._source = _as_table(source, table.location)
        if not isinstance(predicate, str) or not predicate.strip():
            raise InvalidArgumentError(f"merge needs a join condition string, got {predicate!r}",
                                       table=table.location)
        if source_alias.lower() == target_alias.lower():
            raise InvalidArgumentError(f"source and target aliases are both {source_alias!r}", table=table.location)
        self._predicate = predicate
        self._aliases = (target_alias, source_alias)
        self._dvs = use_deletion_vectors
        self._clock = clock
        self._clauses: list[MergeClause] = []

    def _add(self, clause: MergeClause) -> TableMerger:
        if clause.updates is not None and (not isinstance(clause.updates, Mapping) or not clause.updates):
            raise InvalidArgumentError(
                f"updates must be a non-empty dict of target column to SQL expression, got {clause.updates!r}",
                table=self._table.location,
            )
        if clause.updates is not None:
            clause = replace(clause, updates=dict(clause.updates))  # the caller's dict may change later
        self._clauses.append(clause)
        return self

    def when_matched_update(self, updates: Mapping[str, str], predicate: str | None = None) -> TableMerger:
        """Set target columns of matched rows to SQL expressions (``{"v": "source.v"}``).

        Example:
            >>> merger.when_matched_update({"v": "source.v + target.v"})     # doctest: +SKIP
        """
        return self._add(MergeClause("matched", "update", predicate, updates))

    def when_matched_update_all(self, predicate: str | None = None,
                                except_cols: Sequence[str] = ()) -> TableMerger:
        """Set every target column of matched rows (but ``except_cols``) to the source's column of that name.

        Example:
            >>> merger.when_matched_update_all()                              # doctest: +SKIP
        """
        return self._add(MergeClause("matched", "update", predicate, None, tuple(except_cols)))

    def when_matched_delete(self, predicate: str | None = None) -> TableMerger:
        """Delete matched target rows.

        Example:
            >>> merger.when_matched_delete("source.op = 'D'")                  # doctest: +SKIP
        """
        return self._add(MergeClause("matched", "delete", predicate, None))

    def when_not_matched_insert(self, updates: Mapping[str, str], predicate: str | None = None) -> TableMerger:
        """Insert a row per unmatched source row: target columns from SQL expressions over the source's
        (columns left out take their default, or null).

        Example:
            >>> merger.when_not_matched_insert({"id": "source.id", "v": "0"})  # doctest: +SKIP
        """
        return self._add(MergeClause("not_matched", "insert", predicate, updates))

    def when_not_matched_insert_all(self, predicate: str | None = None,
                                    except_cols: Sequence[str] = ()) -> TableMerger:
        """Insert each unmatched source row, target columns from the source's of the same name.

        Example:
            >>> merger.when_not_matched_insert_all()                          # doctest: +SKIP
        """
        return self._add(MergeClause("not_matched", "insert", predicate, None, tuple(except_cols)))

    def when_not_matched_by_source_update(self, updates: Mapping[str, str],
                                          predicate: str | None = None) -> TableMerger:
        """Set target columns of target rows no source row matches.

        Example:
            >>> merger.when_not_matched_by_source_update({"active": "false"})  # doctest: +SKIP
        """
        return self._add(MergeClause("not_matched_by_source", "update", predicate, updates))

    def when_not_matched_by_source_delete(self, predicate: str | None = None) -> TableMerger:
        """Delete target rows no source row matches.

        Example:
            >>> merger.when_not_matched_by_source_delete()                    # doctest: +SKIP
        """
        return self._add(MergeClause("not_matched_by_source", "delete", predicate, None))

    def execute(self) -> MergeResult:
        """Run the MERGE in one commit (see the module docstring).

        Example:
            >>> merger.when_not_matched_insert_all().execute().version        # doctest: +SKIP
            4
        """
        if not self._clauses:
            raise InvalidArgumentError("merge has no when_... clause: nothing to do", table=self._table.location)
        return run_merge(self._table, self._source, self._predicate, self._aliases, list(self._clauses),
                         use_deletion_vectors=self._dvs, clock=self._clock)


def _as_table(source: Any, loc: str) -> pa.Table:
    if isinstance(source, pa.Table):
        return source
    if isinstance(source, pa.RecordBatchReader):
        return source.read_all()
    if isinstance(source, pa.RecordBatch):
        return pa.Table.from_batches([source])
    if type(source).__module__.startswith("pandas"):
        return pa.Table.from_pandas(source, preserve_index=False)
    raise InvalidArgumentError(
        f"merge source must be a pyarrow Table, RecordBatch(Reader) or pandas DataFrame, got {type(source).__name__}",
        table=loc,
    )

