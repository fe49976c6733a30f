"""What a MERGE was asked to do (:class:`MergeSpec`): its WHEN clauses (:class:`Clause`) in order, checked as
delta-spark checks them (:func:`check_clauses`). :mod:`deltalog.spark.dml.merge` builds it,
:mod:`deltalog.spark.dml.merge_run` runs it.

May import: :mod:`deltalog.errors`, :mod:`deltalog.spark.reads.target`.

Example:
    >>> Clause(MATCHED, "delete").label()
    'WHEN MATCHED THEN DELETE'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.spark.reads.target import describe

__all__ = ["MATCHED", "NOT_MATCHED", "NOT_MATCHED_BY_SOURCE", "Clause", "MergeSpec", "check_clauses"]

DataFrame = Any

MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE = "matched", "notMatched", "notMatchedBySource"
_KIND_TEXT = {MATCHED: "MATCHED", NOT_MATCHED: "NOT MATCHED", NOT_MATCHED_BY_SOURCE: "NOT MATCHED BY SOURCE"}


@dataclass(frozen=True)
class Clause:
    """One WHEN clause of a merge."""

    kind: str
    action: str  # update, delete, insert
    condition: Any = None
    assignments: Mapping[str, Any] | None = None
    star: bool = False

    def parameters(self, recorded: str | None = None) -> dict[str, str]:
        """delta-spark's ``MergePredicate``: the condition (``recorded``: as Spark printed it analysed, else
        its own text) and the action."""
        out = {"actionType": self.action}
        text = recorded if recorded is not None else describe(self.condition)
        if text is not None:
            out = {"predicate": text, **out}
        return out

    def label(self) -> str:
        star = " *" if self.star else ""
        return f"WHEN {_KIND_TEXT[self.kind]} THEN {self.action.upper()}{star}"


def check_clauses(clauses: Sequence[Clause], table: str) -> None:
    """Refuse a MERGE without WHEN clauses, or with a clause that omits its condition before the last of its
    kind (delta-spark's errors).

    Example:
        >>> try:
        ...     check_clauses([], "/data/t")
        ... except InvalidArgumentError as exc:
        ...     print(str(exc).split("]")[0])
        [DELTA_MERGE_MISSING_WHEN
    """
    if not clauses:
        raise InvalidArgumentError(
            "[DELTA_MERGE_MISSING_WHEN] There must be at least one WHEN clause in a MERGE statement", table=table
        )
    for kind in (MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE):
        of_kind = [c for c in clauses if c.kind == kind]
        if any(c.condition is None for c in of_kind[:-1]):
            raise InvalidArgumentError(
                f"[NON_LAST_{kind.upper()}_CLAUSE_OMIT_CONDITION] When there are more than one {_KIND_TEXT[kind]} "
                f"clauses in a MERGE statement, only the last {_KIND_TEXT[kind]} clause can omit the condition",
                table=table,
            )


@dataclass(frozen=True)
class MergeSpec:
    """What a MERGE was asked to do: the builder's state when ``execute()`` ran -- the session, the target
    table's path, the source frame, the ON condition (SQL text or ``Column``), the target's alias, the WHEN
    clauses in order and whether the schema may evolve (``withSchemaEvolution()``)."""

    spark: Any
    path: str
    source: DataFrame
    condition: Any
    alias: str | None
    clauses: tuple[Clause, ...]
    evolve: bool
