"""``REPLACE COLUMNS``: give the table a new list of top-level columns in one commit, as delta-spark's
``ALTER TABLE t REPLACE COLUMNS (...)`` does.

Columns are matched by name (any case). A kept column keeps its type, its column mapping id and physical
name, and its generation, identity, default and constraint metadata; its comment follows the new list
(none given: none kept), and a ``NOT NULL`` column may become nullable. The new list may reorder columns
and add nullable ones. Refused, with nothing committed:

* a kept column of another type (``ALTER COLUMN ... TYPE`` widens types; ``ADD COLUMNS`` adds nested fields)
  or made ``NOT NULL`` (``ALTER COLUMN ... SET NOT NULL`` checks the rows first);
* a new column that is ``NOT NULL`` or has a ``DEFAULT`` (the rows already written could not hold it);
* a column left out, unless column mapping is on -- then it is dropped, as ``DROP COLUMNS`` drops it (not a
  partition or clustering column, nor one a constraint or generated column uses);
* a name given twice.

Example:
    >>> import deltalog
    >>> from deltalog.protocol.schema import PrimitiveType, StructField
    >>> t = deltalog.Table("/data/events")                                             # doctest: +SKIP
    >>> replace_columns(t, [StructField("id", PrimitiveType("long"), True, {}),
    ...                     StructField("note", PrimitiveType("string"), True, {})]).operation  # doctest: +SKIP
    'REPLACE COLUMNS'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deltalog.commands.clustering import clustering_of
from deltalog.commands.rename_drop import column_users, commit_schema, require_column_mapping
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import DataType, StructField, StructType, bare_json
from deltalog.txn.defaults import CURRENT_DEFAULT
from deltalog.txn.operations import ReplaceColumns

if TYPE_CHECKING:
    from deltalog.txn.commit import CommitResult
    from deltalog.txn.handle import TableHandle

__all__ = ["replace_columns"]


def _bare(dtype: DataType) -> Any:
    """``dtype`` without nullability or field metadata (what a type comparison looks at)."""
    return bare_json(json.loads(StructType((StructField("x", dtype, True, {}),)).to_json())["fields"][0]["type"])


def replace_columns(
    table: TableHandle, fields: Sequence[StructField], *, clock: Callable[[], int] | None = None
) -> CommitResult:
    """Make ``fields`` the table's top-level columns in one ``REPLACE COLUMNS`` commit (see the module
    docstring for what is kept, allowed and refused).

    Example:
        >>> replace_columns(t, [StructField("id", PrimitiveType("long"), True, {"comment": "key"})]).version
        ... # doctest: +SKIP
        4
    """
    loc = table.location
    if isinstance(fields, (str, bytes)) or not fields or not all(isinstance(f, StructField) for f in fields):
        raise InvalidArgumentError(f"REPLACE COLUMNS takes a non-empty list of StructFields, got {fields!r}",
                                   table=loc)
    seen: dict[str, str] = {}
    for f in fields:
        if f.name.lower() in seen:
            raise InvalidArgumentError(f"REPLACE COLUMNS: column {f.name!r} is listed twice", table=loc)
        seen[f.name.lower()] = f.name
    snapshot = table.snapshot()
    old = {f.name.lower(): f for f in snapshot.schema.fields}
    columns: list[StructField] = []
    for f in fields:
        was = old.get(f.name.lower())
        if was is None:
            if not f.nullable or CURRENT_DEFAULT in f.metadata:
                raise InvalidArgumentError(
                    f"[DELTA_NOT_NULL_COLUMN_NOT_ALLOWED] REPLACE COLUMNS: new column {f.name!r} cannot be NOT NULL or "
                    "have a DEFAULT: the rows already in the table would hold nulls; add it as a plain nullable column",
                    table=loc)
            columns.append(f)
            continue
        if _bare(was.type) != _bare(f.type):
            raise InvalidArgumentError(
                f"[DELTA_UNSUPPORTED_ALTER_TABLE_REPLACE_COL_OP] REPLACE COLUMNS cannot change the type of column "
                f"{was.name!r}; change types with ALTER COLUMN ... TYPE (type widening) and add nested fields with "
                "ADD COLUMNS", table=loc)
        if was.nullable and not f.nullable:
            raise InvalidArgumentError(
                f"[DELTA_UNSUPPORTED_ALTER_TABLE_REPLACE_COL_OP] REPLACE COLUMNS cannot make column {was.name!r} NOT "
                "NULL; use ALTER COLUMN ... SET NOT NULL, which checks the rows first", table=loc)
        metadata = {k: v for k, v in was.metadata.items() if k != "comment"}
        if f.metadata.get("comment") is not None:
            metadata["comment"] = f.metadata["comment"]
        columns.append(replace(was, nullable=f.nullable, metadata=metadata))
    dropped = [f for f in snapshot.schema.fields if f.name.lower() not in seen]
    if dropped:
        require_column_mapping(snapshot, "DROP COLUMN")
    clustered = {c.split(".")[0].lower() for c in clustering_of(snapshot) or []}
    for f in dropped:
        why = "a partition column" if f.name in snapshot.partition_columns else \
            "a clustering column" if f.name.lower() in clustered else None
        users = column_users(snapshot, [f])
        if why is not None or users:
            raise InvalidArgumentError(
                f"[DELTA_UNSUPPORTED_ALTER_TABLE_REPLACE_COL_OP] REPLACE COLUMNS leaves out column {f.name!r}, which "
                f"is {why or 'used by ' + '; '.join(users)}; keep it in the list", table=loc)
    schema = StructType(tuple(columns))
    op = ReplaceColumns(columns=tuple(json.loads(StructType((c,)).to_json())["fields"][0] for c in columns))
    return commit_schema(table, snapshot, op, schema, snapshot.partition_columns, clock)
