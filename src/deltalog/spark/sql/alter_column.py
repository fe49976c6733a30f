"""The ``ALTER TABLE t {ALTER | CHANGE} [COLUMN] ...`` forms sqlglot leaves as text:

* ``ALTER [COLUMN] c [COMMENT '...'] FIRST | AFTER x`` and ``CHANGE [COLUMN] c c type [COMMENT '...']
  FIRST | AFTER x`` move a column (``s.inner`` for a struct's field, within its struct) in one
  ``CHANGE COLUMN`` commit (:meth:`deltalog.Table.move_column`), as delta-spark does; the ``CHANGE`` form
  restates the column's name and type, which must be the ones it has;
* ``{ALTER | CHANGE} [COLUMN] c SYNC IDENTITY`` (:meth:`deltalog.Table.sync_identity`).

Example:
    >>> alter_column_text(table, "ALTER", "note AFTER id", text)                 # doctest: +SKIP
"""

from __future__ import annotations

import re
from typing import Any

from deltalog.spark.sql.shared import refuse

__all__ = ["alter_column_text", "same_declared_type"]

_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"
_PATH = rf"{_IDENT}(?:\s*\.\s*{_IDENT})*"
_STRING = r"(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
_SYNC = re.compile(rf"^\s*(?P<col>{_PATH})\s+SYNC\s+IDENTITY\s*$", re.IGNORECASE | re.DOTALL)
_POSITION = re.compile(rf"^(?P<head>.*?)\s+(?:(?P<first>FIRST)|AFTER\s+(?P<after>{_IDENT}))\s*$",
                       re.IGNORECASE | re.DOTALL)
_ALTER_HEAD = re.compile(rf"^\s*(?P<col>{_PATH})(?:\s+COMMENT\s+(?P<comment>{_STRING}))?\s*$",
                         re.IGNORECASE | re.DOTALL)
_CHANGE_HEAD = re.compile(rf"^\s*(?P<col>{_PATH})\s+(?P<new>{_PATH})\s+(?P<type>.+?)"
                          rf"(?:\s+COMMENT\s+(?P<comment>{_STRING}))?\s*$", re.IGNORECASE | re.DOTALL)


def _names(path: str) -> list[str]:
    parts = re.findall(_IDENT, path)
    return [p[1:-1].replace("``", "`") if p.startswith("`") else p for p in parts]


def _string(literal: str | None) -> str | None:
    if literal is None:
        return None
    body = literal[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


def alter_column_text(table: Any, keyword: str, rest: str, text: str) -> None:
    """Run ``ALTER TABLE t <keyword> [COLUMN] <rest>`` (``keyword`` ``ALTER`` or ``CHANGE``, ``COLUMN``
    already read) on ``table`` (a :class:`deltalog.Table`); see the module docstring. Other forms are refused.

    Example:
        >>> alter_column_text(deltalog.Table("/data/t"), "ALTER", "`v` FIRST", sql)  # doctest: +SKIP
    """
    rest = rest.strip().rstrip(";")
    sync = _SYNC.match(rest)
    if sync is not None:
        table.sync_identity(".".join(_names(sync["col"])))
        return
    placed = _POSITION.match(rest)
    head = (_CHANGE_HEAD if keyword.upper() == "CHANGE" else _ALTER_HEAD).match(placed["head"]) if placed else None
    if placed is None or head is None:
        raise refuse(text, "this ALTER TABLE ... ALTER COLUMN form is not supported on Delta tables by deltalog; "
                     "ALTER COLUMN takes COMMENT, TYPE, SET / DROP NOT NULL, SET / DROP DEFAULT, FIRST / AFTER and "
                     "SYNC IDENTITY")
    path = _names(head["col"])
    if keyword.upper() == "CHANGE":
        if [n.lower() for n in _names(head["new"])] != [n.lower() for n in path[-1:]] and \
                [n.lower() for n in _names(head["new"])] != [n.lower() for n in path]:
            raise refuse(text, "CHANGE COLUMN cannot rename a column; use ALTER TABLE ... RENAME COLUMN")
        _check_type(table, path, head["type"], text)
    after = _names(placed["after"])[0] if placed["after"] else None
    table.move_column(path, after=after, comment=_string(head["comment"]))


def same_declared_type(table: Any, path: list[str], type_sql: str) -> tuple[bool, str] | None:
    """Whether the column (or struct field) at ``path`` has the type ``type_sql``, compared as Spark spells
    types, and the column's type; None when there is no such column. A type Spark cannot parse is not the
    column's.

    Example:
        >>> same_declared_type(deltalog.Table("/data/t"), ["id"], "INT")             # doctest: +SKIP
        (True, 'int')
    """
    from pyspark.sql.types import _parse_datatype_string

    from deltalog.protocol.schema import StructType
    from deltalog.spark.common.core import spark_type

    dtype: Any = table.snapshot().schema
    for name in path:
        found = next((f for f in dtype.fields if f.name.lower() == name.lower()), None) \
            if isinstance(dtype, StructType) else None
        if found is None:
            return None
        dtype = found.type
    have = spark_type(dtype).simpleString()
    try:
        return have == _parse_datatype_string(type_sql).simpleString(), have
    except Exception:
        return False, have


def _check_type(table: Any, path: list[str], type_sql: str, text: str) -> None:
    """``CHANGE COLUMN c c type ... FIRST | AFTER x`` restates the column's type; another one is refused (a
    missing column is left for ``move_column`` to name)."""
    found = same_declared_type(table, path, type_sql)
    if found is not None and not found[0]:
        raise refuse(text, f"CHANGE COLUMN ... FIRST / AFTER keeps the column's type ({found[1]}); change a type "
                     "with ALTER TABLE ... ALTER COLUMN c TYPE t, on its own")
