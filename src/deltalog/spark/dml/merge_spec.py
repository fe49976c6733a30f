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

__all__ = [
    "MATCHED", "NOT_MATCHED", "NOT_MATCHED_BY_SOURCE", "Clause", "MergeSpec", "action_sql", "check_clauses", "present",
]

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


def present(column: str) -> str:
    """Spark SQL that is true where the presence column ``column`` (true on one side's rows of a join) is set.

    Example:
        >>> present("__deltalog_target")
        '`__deltalog_target` IS NOT NULL'
    """
    return f"`{column}` IS NOT NULL"


def action_sql(ordered: Sequence[Clause], codes: Mapping[int, int], *, target: str, source: str,
               default: int) -> str | None:
    """Spark SQL of each joined row's clause code when no clause has a condition (else ``None``): the first of
    ``ordered`` whose kind fits the row, told by the presence columns ``target`` and ``source`` (true on the
    rows of each side, null on the other side of an unmatched row), each clause's code in ``codes`` (by
    ``id``), else ``default`` (then every row without a target row has a NOT MATCHED clause, or none joins).

    Example:
        >>> action_sql([Clause(MATCHED, "delete")], {}, target="t", source="s", default=-1)
        'CASE WHEN `t` IS NOT NULL AND `s` IS NOT NULL THEN 0 ELSE -1 END'
    """
    if any(c.condition is not None for c in ordered):
        return None
    t, s = present(target), present(source)
    tests = {MATCHED: f"{t} AND {s}", NOT_MATCHED: f"NOT {t}", NOT_MATCHED_BY_SOURCE: f"{t} AND NOT {s}"}
    chain = " ".join(f"WHEN {tests[c.kind]} THEN {int(codes.get(id(c), 0))}" for c in ordered)
    return f"CASE {chain} ELSE {int(default)} END" if chain else str(int(default))
