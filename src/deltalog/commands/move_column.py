"""``ALTER TABLE t ALTER COLUMN c FIRST | AFTER x``: a column moved to another place in the schema.

A top-level column, or a field of a struct column at any depth (``s.inner.c``, within its struct), moves
first or right after a sibling, optionally with a new comment, in one ``CHANGE COLUMN`` commit whose
``operationParameters`` name the column and its ``position`` (``FIRST`` / ``AFTER x``), as delta-spark
records it. No data is rewritten: readers find columns by name (or by physical name under column mapping),
not by place. Names match in any case, as Spark resolves them.

Example:
    >>> import deltalog
    >>> move_column(deltalog.Table("/data/events"), "note", after="id").operation   # doctest: +SKIP
    'CHANGE COLUMN'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import DataType, StructField, StructType
from deltalog.txn.operations import ChangeColumn

if TYPE_CHECKING:
    from deltalog.txn.commit import CommitResult
    from deltalog.txn.handle import TableHandle

__all__ = ["move_column"]


def move_column(
    table: TableHandle,
    name: str | Sequence[str],
    *,
    after: str | None,
    comment: str | None = None,
    clock: Callable[[], int] | None = None,
) -> CommitResult:
    """Move column ``name`` (a dotted path, or a sequence of names, for a struct's field) right after its
    sibling ``after``, or first when ``after`` is None, setting its ``comment`` when one is given, in one
    ``CHANGE COLUMN`` commit (see the module docstring).

    Example:
        >>> move_column(t, "s.b", after=None).operation_parameters["position"]      # doctest: +SKIP
        'FIRST'
    """
    loc = table.location
    path = name.split(".") if isinstance(name, str) else list(name)
    if not path or not all(isinstance(p, str) and p for p in path):
        raise InvalidArgumentError(f"move_column needs a column name or path, got {name!r}", table=loc)
    if after is not None and (not isinstance(after, str) or not after):
        raise InvalidArgumentError(f"move_column's after= must name a column (or be None for first), got {after!r}",
                                   table=loc)
    snapshot = table.snapshot()
    moved: list[StructField] = []
    schema = _moved(snapshot.schema, path, after, comment, moved, [], loc)
    assert isinstance(schema, StructType)
    field = moved[0]
    position = "FIRST" if after is None else f"AFTER {after}"
    from deltalog.txn.transaction import start_transaction

    options: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        options["clock"] = clock
    column = json.loads(StructType((field,)).to_json())["fields"][0]
    txn = start_transaction(table, ChangeColumn(column=column, position=position), **options)
    if schema != snapshot.schema:
        txn.update_metadata(replace(snapshot.metadata, schemaString=schema.to_json()))
    return txn.commit()


def _moved(dtype: DataType, path: list[str], after: str | None, comment: str | None, out: list[StructField],
           seen: list[str], loc: str) -> DataType:
    """``dtype`` (a struct) with the field ``path`` leads to moved (and given ``comment``); the field goes
    into ``out``."""
    where = repr(".".join(seen)) if seen else "the table"
    if not isinstance(dtype, StructType):
        raise InvalidArgumentError(
            f"cannot move column {'.'.join([*seen, *path])!r}: {where} is not a struct, so it has no fields to "
            "order", table=loc)
    fields = list(dtype.fields)
    at = next((i for i, f in enumerate(fields) if f.name.lower() == path[0].lower()), None)
    if at is None:
        raise InvalidArgumentError(
            f"[DELTA_COLUMN_NOT_FOUND] cannot move column {'.'.join([*seen, *path])!r}: {where} has no column "
            f"{path[0]!r} (columns: {[f.name for f in fields]})", table=loc)
    if len(path) > 1:
        fields[at] = replace(fields[at], type=_moved(fields[at].type, path[1:], after, comment, out,
                                                     [*seen, fields[at].name], loc))
        return StructType(tuple(fields))
    field = fields.pop(at)
    if comment is not None:
        field = replace(field, metadata={**field.metadata, "comment": comment})
    out.append(field)
    if after is None:
        fields.insert(0, field)
        return StructType(tuple(fields))
    anchor = next((i for i, f in enumerate(fields) if f.name.lower() == after.lower()), None)
    if anchor is None:
        problem = "is the column being moved" if after.lower() == field.name.lower() else "does not exist"
        raise InvalidArgumentError(
            f"[DELTA_COLUMN_NOT_FOUND] cannot move column {'.'.join([*seen, field.name])!r} AFTER {after!r}: "
            f"{after!r} {problem} in {where} (columns: {[f.name for f in dtype.fields]})", table=loc)
    fields.insert(anchor + 1, field)
    return StructType(tuple(fields))
