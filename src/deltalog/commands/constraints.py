"""``ADD CONSTRAINT`` / ``DROP CONSTRAINT``: CHECK constraints of a table, as delta-spark manages them.

A CHECK constraint is the table property ``delta.constraints.<name>`` holding a boolean SQL expression
(names are case-insensitive and stored in lower case). Once a table has one, every write checks its
rows against it (:mod:`deltalog.txn.constraints`).

:func:`add_constraint` first validates the expression against the table's schema with the kernel's
SQL subset (:mod:`deltalog.data.sql_expr`) -- an expression deltalog cannot evaluate is refused, never
stored unchecked -- then reads every live row (file by file, deletion vectors applied) and refuses when
any row makes it ``false`` or ``null`` (delta-spark's ``DELTA_NEW_CHECK_CONSTRAINT_VIOLATION``: "N rows
in <table> violate the new CHECK constraint (<expr>)"). The commit records that it read the whole
table, so a row appended concurrently makes it fail with a ``ConcurrentAppendException`` instead of
slipping past the check. The protocol is upgraded for the ``checkConstraints`` feature (writer
version 3, or the feature listed on a table-features protocol).

:func:`drop_constraint` removes one; the protocol keeps the feature.

Example:
    >>> import pyarrow as pa, deltalog
    >>> from deltalog.storage import InMemoryLogStore
    >>> store = InMemoryLogStore("memory://constraints-doc")
    >>> _ = deltalog.write_table("memory://constraints-doc", pa.table({"id": [1, 2]}), store=store)
    >>> table = deltalog.Table("memory://constraints-doc", store=store)
    >>> add_constraint(table, "pos", "id > 0").operation
    'ADD CONSTRAINT'
    >>> add_constraint(table, "big", "id > 1")
    Traceback (most recent call last):
    ...
    deltalog.txn.constraints.ConstraintViolationError: 1 rows in memory://constraints-doc violate the new \
CHECK constraint big (id > 1), e.g. the row with id = 1; nothing was committed [table memory://constraints-doc]
    >>> drop_constraint(table, "pos").operation
    'DROP CONSTRAINT'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data.sql_expr import Expression, UnsupportedExpressionError, compile_expression
from deltalog.errors import InvalidArgumentError
from deltalog.txn.constraints import ConstraintViolationError, describe_row
from deltalog.txn.operations import AddConstraint, DropConstraint
from deltalog.txn.transaction import CommitResult

if TYPE_CHECKING:
    from deltalog.protocol.schema import StructType
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["add_constraint", "compile_check", "constraint_key", "drop_constraint"]

_PREFIX = "delta.constraints."
#: The name delta-spark reserves for its CHAR/VARCHAR length checks.
_RESERVED = "__char_varchar_string_length_check__"


def constraint_key(name: Any, loc: str) -> str:
    """The table property holding the CHECK constraint ``name`` (``delta.constraints.<name in lower case>``),
    refusing an empty, padded or reserved name.

    Example:
        >>> constraint_key("Positive", "t")
        'delta.constraints.positive'
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(f"a constraint name must be a non-empty string, got {name!r}", table=loc)
    if name != name.strip():
        raise InvalidArgumentError(f"constraint name {name!r} has leading or trailing spaces", table=loc)
    if name.lower() == _RESERVED:
        raise InvalidArgumentError(f"constraint name {name!r} is reserved by Delta; choose another one", table=loc)
    return _PREFIX + name.lower()


def _existing(conf: dict[str, str], key: str) -> str | None:
    """The key of the constraint in ``conf`` (written in any case by another engine), if there is one."""
    return next((k for k in conf if k.lower() == key), None)


def _compile(name: str, sql: Any, snapshot: Snapshot, loc: str) -> Expression:
    return compile_check(name, sql, snapshot.schema, table=loc)


def compile_check(name: str, sql: Any, schema: StructType, *, table: str) -> Expression:
    """The CHECK constraint ``sql`` compiled and checked on an empty table of ``schema``: its columns
    exist, its types fit and it is a boolean expression.

    Example:
        >>> from deltalog.protocol.schema import StructType
        >>> schema = StructType.from_arrow_schema(pa.schema([("id", pa.int64())]))
        >>> compile_check("pos", "id > 0", schema, table="t").sql
        'id > 0'
        >>> compile_check("bad", "id + 1", schema, table="t")
        Traceback (most recent call last):
        ...
        deltalog.data.sql_parse.UnsupportedExpressionError: CHECK constraint bad (id + 1) should be a boolean \
expression (it evaluates to int64) [table t]
    """
    loc = table
    label = f"CHECK constraint {name} ({sql})"
    if not isinstance(sql, str) or not sql.strip():
        raise UnsupportedExpressionError(f"{label}: the expression is empty", table=loc)
    try:
        expr = compile_expression(sql)
        result = expr.evaluate(schema.to_arrow_schema().empty_table())
    except UnsupportedExpressionError as exc:
        raise UnsupportedExpressionError(
            f"{label} cannot be evaluated by deltalog: {exc.message}; the constraint was not added", table=loc
        ) from None
    if not pa.types.is_boolean(result.type):
        raise UnsupportedExpressionError(
            f"{label} should be a boolean expression (it evaluates to {result.type})", table=loc
        )
    return expr


def _violations(snapshot: Snapshot, name: str, expr: Expression, loc: str) -> tuple[int, str | None]:
    """Live rows for which ``expr`` is false or null, and a description of the first one."""
    from deltalog.data.read import read_file_columns

    bad, example = 0, None
    columns = {path[0] for path in expr.columns()}
    for add in snapshot.add_files().to_pylist():
        data = read_file_columns(snapshot, add, columns)  # only the columns the expression names
        if not data.num_rows:
            continue
        try:
            result: Any = expr.evaluate(data)
        except UnsupportedExpressionError as exc:
            raise UnsupportedExpressionError(
                f"CHECK constraint {name} ({expr.sql}) cannot be evaluated on file {add['path']}: {exc.message}; "
                "the constraint was not added",
                table=loc,
            ) from None
        ok: Any = pc.fill_null(result, False)
        failed = len(ok) - (pc.sum(ok.cast(pa.int64())).as_py() or 0)
        if failed and example is None:
            example = describe_row(data, pc.index(ok, False).as_py(), expr.columns())
        bad += failed
    return bad, example


def add_constraint(
    table: TableHandle, name: str, expression: str, *, clock: Callable[[], int] | None = None
) -> CommitResult:
    """Add the CHECK constraint ``name`` in one ``ADD CONSTRAINT`` commit, after checking every
    existing row (see the module docstring). A constraint of that name (any case) must not exist.

    Example:
        >>> import deltalog
        >>> add_constraint(deltalog.Table("/data/events"), "valid_day", "day >= '2020-01-01'").version
        ... # doctest: +SKIP
        8
    """
    loc = table.location
    key = constraint_key(name, loc)
    snapshot = table.snapshot()
    conf = dict(snapshot.metadata.configuration)
    found = _existing(conf, key)
    if found is not None:
        raise InvalidArgumentError(
            f"constraint {name!r} already exists as a CHECK constraint ({conf[found]}); drop the old constraint "
            "first (Table.drop_constraint)",
            table=loc,
        )
    expr = _compile(name, expression, snapshot, loc)
    bad, example = _violations(snapshot, name, expr, loc)
    if bad:
        raise ConstraintViolationError(
            f"{bad} rows in {loc} violate the new CHECK constraint {name} ({expression})"
            + (f", e.g. the row with {example}" if example else "")
            + "; nothing was committed",
            table=loc,
        )
    conf[key] = expression
    from deltalog.txn.transaction import start_transaction

    options: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        options["clock"] = clock
    txn = start_transaction(table, AddConstraint(constraint=name, expr=expression), **options)
    txn.read_whole_table()  # the rows were checked: a concurrent append must conflict
    txn.update_metadata(replace(snapshot.metadata, configuration=conf))
    return txn.commit()


def drop_constraint(
    table: TableHandle, name: str, *, if_exists: bool = False, clock: Callable[[], int] | None = None
) -> CommitResult:
    """Remove the CHECK constraint ``name`` (any case) in one ``DROP CONSTRAINT`` commit.

    A missing constraint is an error unless ``if_exists`` (then the commit records ``existed=false``,
    as delta-spark does). The protocol keeps the ``checkConstraints`` feature.

    Example:
        >>> import deltalog
        >>> drop_constraint(deltalog.Table("/data/events"), "valid_day").operation   # doctest: +SKIP
        'DROP CONSTRAINT'
    """
    loc = table.location
    key = constraint_key(name, loc)
    snapshot = table.snapshot()
    conf = dict(snapshot.metadata.configuration)
    found = _existing(conf, key)
    if found is None and not if_exists:
        have = sorted(k[len(_PREFIX) :] for k in conf if k.lower().startswith(_PREFIX))
        raise InvalidArgumentError(
            f"[DELTA_CONSTRAINT_DOES_NOT_EXIST] cannot drop CHECK constraint {name!r}: it does not exist (the "
            f"table's CHECK constraints: {have}); DROP CONSTRAINT IF EXISTS (if_exists=True) ignores a missing "
            "constraint",
            table=loc,
        )
    old = conf.pop(found) if found is not None else None
    from deltalog.txn.transaction import start_transaction

    options: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        options["clock"] = clock
    txn = start_transaction(table, DropConstraint(constraint=name, expr=old), **options)
    txn.update_metadata(replace(snapshot.metadata, configuration=conf))
    return txn.commit()
