"""Column invariants, CHECK constraints and NOT NULL columns, enforced on data before it is committed.

* CHECK constraints are table properties ``delta.constraints.<name>`` holding a boolean SQL expression;
* column invariants are column metadata ``delta.invariants`` = ``{"expression": {"expression": "..."}}``;
* non-nullable columns (``"nullable": false``, also nested struct fields) must hold no nulls;
* ``CHAR(n)`` / ``VARCHAR(n)`` columns (``string`` with Spark's ``__CHAR_VARCHAR_TYPE_STRING`` metadata) must
  hold no value longer than ``n``.

A row violates a constraint when the expression is ``false`` *or* ``null`` for it. Expressions are
compiled by :mod:`deltalog.data.sql_expr` (a practical Spark SQL subset) to ``pyarrow.compute`` calls;
an expression outside that subset raises :class:`UnsupportedExpressionError` naming the constraint --
an unsupported constraint never silently passes.

Example:
    >>> import pyarrow as pa
    >>> data = pa.table({"x": [5, 1]})
    >>> compile_expression("x > 3 AND x IS NOT NULL").evaluate(data).to_pylist()
    [True, False]
    >>> check_expressions(data, {"CHECK constraint positive": "x > 3"}, table_name="t")
    Traceback (most recent call last):
    ...
    deltalog.txn.constraints.ConstraintViolationError: [DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK \
constraint positive (x > 3) is violated by 1 of 2 rows, e.g. the row with x = 1; nothing was written [table t]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data.sql_expr import Expression, UnsupportedExpressionError, compile_expression
from deltalog.errors import DeltaError
from deltalog.protocol.actions import Metadata

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = [
    "CHAR_VARCHAR_KEY",
    "ConstraintViolationError",
    "Expression",
    "UnsupportedExpressionError",
    "check_char_varchar",
    "check_constraints",
    "check_expressions",
    "check_not_null",
    "check_table_constraints",
    "compile_expression",
    "describe_row",
    "table_constraints",
]


class ConstraintViolationError(DeltaError):
    """Data violates a CHECK constraint, a column invariant or a NOT NULL column; nothing was committed.

    Example:
        >>> str(ConstraintViolationError("CHECK constraint c (x > 0) is violated", table="t"))
        'CHECK constraint c (x > 0) is violated [table t]'
    """


# ------------------------------------------------------------------------------------------ checks


def table_constraints(metadata: Metadata) -> dict[str, str]:
    """Every constraint of a table as ``{label: sql}``: CHECK constraints and column invariants.

    Example:
        >>> from deltalog.protocol.actions import Format
        >>> md = Metadata(id="t", format=Format(), schemaString=None,
        ...               configuration={"delta.constraints.pos": "x > 0"})
        >>> table_constraints(md)
        {'CHECK constraint pos': 'x > 0'}
    """
    out: dict[str, str] = {}
    for key, value in metadata.configuration.items():
        if key.startswith("delta.constraints."):
            out[f"CHECK constraint {key[len('delta.constraints.') :]}"] = value
    try:
        schema = json.loads(metadata.schemaString) if metadata.schemaString else {}
    except ValueError:
        schema = {}
    for path, meta in _fields_with_metadata(schema, ()):
        raw = meta.get("delta.invariants")
        if raw is None:
            continue
        label = f"invariant on column {'.'.join(path)}"
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else raw
            sql = parsed["expression"]["expression"]
            if not isinstance(sql, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            raise UnsupportedExpressionError(
                f'{label}: delta.invariants is not {{"expression": {{"expression": "<SQL>"}}}}: {raw!r}'
            ) from None
        out[label] = sql
    return out


def _fields_with_metadata(node: Any, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    out: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    if not isinstance(node, dict) or (node.get("type") != "struct" and "fields" not in node):
        return out
    for f in node.get("fields") or []:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            continue
        path = (*prefix, f["name"])
        meta = f.get("metadata")
        if isinstance(meta, dict) and meta:
            out.append((path, meta))
        if isinstance(f.get("type"), dict) and f["type"].get("type") == "struct":
            out.extend(_fields_with_metadata(f["type"], path))
    return out


def describe_row(table: pa.Table, index: int, columns: list[tuple[str, ...]]) -> str:
    """Row ``index`` of ``table`` as ``col = value`` pairs of ``columns`` (paths; the first five
    columns when empty), for error messages.

    Example:
        >>> import pyarrow as pa
        >>> describe_row(pa.table({"x": [1, 2], "s": ["a", "b"]}), 1, [("x",)])
        'x = 2'
    """
    names = {n.lower(): n for n in table.column_names}
    parts = []
    for path in columns or [(n,) for n in table.column_names[:5]]:
        name = names.get(path[0].lower())
        if name is None:
            continue
        value = table.column(name)[index].as_py()
        for p in path[1:]:
            value = value.get(p) if isinstance(value, dict) else None
        shown = value if isinstance(value, str) else repr(value)
        parts.append(f"{'.'.join(path)} = {shown}")
    return ", ".join(dict.fromkeys(parts))


def check_expressions(data: pa.Table, constraints: Mapping[str, str], *, table_name: str | None = None) -> None:
    """Evaluate each ``{label: sql}`` constraint on ``data``; the first one not ``true`` for every row
    raises :class:`ConstraintViolationError` (an unsupported one :class:`UnsupportedExpressionError`).

    Example:
        >>> import pyarrow as pa
        >>> check_expressions(pa.table({"s": ["ab"]}), {"c": "length(s) = 2"})
    """
    for label, sql in constraints.items():
        try:
            expr = compile_expression(sql)
            result = expr.evaluate(data)
        except UnsupportedExpressionError as exc:
            raise UnsupportedExpressionError(
                f"{label} ({sql}) cannot be evaluated by deltalog: {exc.message}; the write is refused "
                "rather than left unchecked",
                table=table_name,
            ) from None
        if not pa.types.is_boolean(result.type):
            raise UnsupportedExpressionError(
                f"{label} ({sql}) does not evaluate to a boolean (got {result.type})", table=table_name
            )
        as_bool: Any = result
        ok: Any = pc.fill_null(as_bool, False)
        bad = len(ok) - (pc.sum(ok.cast(pa.int64())).as_py() or 0)
        if bad:
            first = pc.index(ok, False).as_py()
            raise ConstraintViolationError(
                f"[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] {label} ({sql}) is violated by {bad} of {data.num_rows} "
                "rows, e.g. the row with "
                f"{describe_row(data, first, expr.columns())}; nothing was written",
                table=table_name,
            )


def check_not_null(data: pa.Table, schema_string: str | None, *, table_name: str | None = None) -> None:
    """Refuse nulls in columns (and nested struct fields) declared ``"nullable": false``.

    Example:
        >>> import pyarrow as pa
        >>> s = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}'
        >>> check_not_null(pa.table({"id": [1, None]}), s, table_name="t")
        Traceback (most recent call last):
        ...
        deltalog.txn.constraints.ConstraintViolationError: [DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL \
constraint violated for column id: 1 of 2 rows are null; nothing was written [table t]
    """
    try:
        schema = json.loads(schema_string) if schema_string else {}
    except ValueError:
        return
    names = {n.lower(): n for n in data.column_names}
    for f in schema.get("fields") or []:
        name = names.get(str(f.get("name")).lower())
        if name is None:
            continue
        _check_field(data.column(name), f, (f["name"],), None, data.num_rows, table_name)


def _check_field(
    values: Any,
    field: Mapping[str, Any],
    path: tuple[str, ...],
    parent_valid: Any,
    total: int,
    table_name: str | None,
) -> None:
    nulls = pc.call_function("is_null", [values])
    if parent_valid is not None:
        nulls = pc.call_function("and", [nulls, parent_valid])
    if field.get("nullable", True) is False:
        count = pc.sum(nulls.cast(pa.int64())).as_py() or 0
        if count:
            raise ConstraintViolationError(
                f"[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL constraint violated for column {'.'.join(path)}: "
                f"{count} of {total} rows are "
                "null; nothing was written",
                table=table_name,
            )
    ftype = field.get("type")
    if isinstance(ftype, dict) and ftype.get("type") == "struct" and pa.types.is_struct(values.type):
        valid = pc.call_function("is_valid", [values])
        if parent_valid is not None:
            valid = pc.call_function("and", [valid, parent_valid])
        vtype = values.type
        child_names = {vtype.field(i).name: i for i in range(vtype.num_fields)}
        for child in ftype.get("fields") or []:
            idx = child_names.get(child.get("name"))
            if idx is not None:
                child_values = pc.struct_field(values, [idx])
                _check_field(child_values, child, (*path, child["name"]), valid, total, table_name)


#: Column metadata Spark gives a ``CHAR(n)`` / ``VARCHAR(n)`` column, stored as ``string``.
CHAR_VARCHAR_KEY = "__CHAR_VARCHAR_TYPE_STRING"
_CHAR_VARCHAR = re.compile(r"^\s*(?:char|varchar)\s*\(\s*(\d+)\s*\)\s*$", re.IGNORECASE)


def check_char_varchar(data: pa.Table, schema_string: str | None, *, table_name: str | None = None) -> None:
    """Refuse values longer than a top-level ``CHAR(n)`` / ``VARCHAR(n)`` column's length (Spark's write-side
    check: characters past ``n`` that are all spaces are allowed).

    Example:
        >>> import pyarrow as pa
        >>> s = ('{"type":"struct","fields":[{"name":"v","type":"string","nullable":true,'
        ...      '"metadata":{"__CHAR_VARCHAR_TYPE_STRING":"varchar(3)"}}]}')
        >>> check_char_varchar(pa.table({"v": ["abc  ", "abcd"]}), s, table_name="t")
        Traceback (most recent call last):
        ...
        deltalog.txn.constraints.ConstraintViolationError: [EXCEED_LIMIT_LENGTH] column v is varchar(3): \
1 of 2 rows hold a longer value, e.g. 'abcd' (4 characters); nothing was written [table t]
    """
    if not schema_string or CHAR_VARCHAR_KEY not in schema_string:
        return
    names = {n.lower(): n for n in data.column_names}
    for f in json.loads(schema_string).get("fields") or []:
        declared = str((f.get("metadata") or {}).get(CHAR_VARCHAR_KEY, ""))
        match = _CHAR_VARCHAR.match(declared)
        name = names.get(str(f.get("name")).lower())
        if match is None or name is None or f.get("type") != "string":
            continue
        limit = int(match.group(1))
        values = data.column(name)
        trimmed = pc.utf8_rtrim(values, characters=" ")
        too_long = pc.fill_null(pc.greater(pc.utf8_length(trimmed), limit), False)
        bad = pc.sum(too_long.cast(pa.int64())).as_py() or 0
        if bad:
            example = values.filter(too_long)[0].as_py()
            raise ConstraintViolationError(
                f"[EXCEED_LIMIT_LENGTH] column {f['name']} is {declared.strip().lower()}: {bad} of {data.num_rows} "
                f"rows hold a longer value, e.g. {example!r} ({len(example)} characters); nothing was written",
                table=table_name,
            )


def check_table_constraints(data: pa.Table, metadata: Metadata, *, table_name: str | None = None) -> None:
    """NOT NULL columns, ``CHAR`` / ``VARCHAR`` lengths, column invariants and CHECK constraints of
    ``metadata`` against ``data`` (all columns, partition columns included).

    Example:
        >>> import pyarrow as pa
        >>> from deltalog.protocol.actions import Format
        >>> md = Metadata(id="t", format=Format(), schemaString=None,
        ...               configuration={"delta.constraints.c": "x < 10"})
        >>> check_table_constraints(pa.table({"x": [1]}), md)
    """
    check_not_null(data, metadata.schemaString, table_name=table_name)
    check_char_varchar(data, metadata.schemaString, table_name=table_name)
    constraints = table_constraints(metadata)
    if constraints:
        check_expressions(data, constraints, table_name=table_name)


def check_constraints(table: pa.Table, snapshot: Snapshot) -> None:
    """The hook the Arrow writer calls: every constraint of ``snapshot``'s table against ``table``.

    Example:
        >>> check_constraints(batch, deltalog.Table("/data/t").snapshot())   # doctest: +SKIP
    """
    check_table_constraints(table, snapshot.metadata, table_name=snapshot.table)
