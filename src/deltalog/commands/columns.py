"""``ADD COLUMNS`` and ``CHANGE COLUMN``: schema changes that rewrite no data.

* :func:`add_columns` adds columns -- top-level, or fields of struct columns at any depth -- (nullable:
  existing rows read them as null) in one ``ADD COLUMNS`` commit, appended or placed (``FIRST`` / ``AFTER``);
  a name already in its struct (any case, as Spark resolves columns) is refused.
* :func:`change_column` changes a top-level column's comment, its default (``ALTER COLUMN ... SET / DROP
  DEFAULT``, :mod:`deltalog.txn.defaults`), or its nullability: ``nullable=True`` drops ``NOT NULL``;
  ``nullable=False`` sets it after checking that no live row holds a null there (delta-spark does the
  same), in one ``CHANGE COLUMN`` commit.

Both read the table as a transaction that depends on the whole table (a concurrent write conflicts with
a nullability change; metadata changes conflict with each other).

Example:
    >>> import deltalog
    >>> from deltalog.protocol.schema import PrimitiveType, StructField
    >>> t = deltalog.Table("/data/events")                                                  # doctest: +SKIP
    >>> add_columns(t, [StructField("note", PrimitiveType("string"), True, {})]).operation  # doctest: +SKIP
    'ADD COLUMNS'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import ArrayType, DataType, MapType, StructField, StructType, physical_name
from deltalog.protocol.stats import FileStats
from deltalog.txn.constraints import ConstraintViolationError
from deltalog.txn.defaults import CURRENT_DEFAULT, default_metadata
from deltalog.txn.operations import AddColumns, ChangeColumn

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.commit import CommitResult
    from deltalog.txn.handle import TableHandle

__all__ = ["NewColumn", "add_columns", "change_column", "set_column_type"]


def _identity_or_generated(metadata: dict[str, Any]) -> bool:
    return "delta.generationExpression" in metadata or any(k.startswith("delta.identity.") for k in metadata)


def _field_obj(f: StructField) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(StructType((f,)).to_json())["fields"][0]
    return obj


def _options(clock: Callable[[], int] | None, snapshot: Snapshot) -> dict[str, Any]:
    out: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        out["clock"] = clock
    return out


#: What :func:`add_columns` takes for each column: a top-level field, or ``(parent, field)`` to add ``field``
#: inside the struct column ``parent`` -- a path as a dotted string (``"s.inner"``) or a sequence of names
#: (``("s", "inner")``), stepping into arrays with ``element`` and into maps with ``key`` / ``value``.
NewColumn = StructField | tuple[str | Sequence[str], StructField]


def add_columns(
    table: TableHandle, fields: Sequence[NewColumn], *, after: Mapping[str, str | None] | None = None,
    clock: Callable[[], int] | None = None,
) -> CommitResult:
    """Add ``fields`` to the table's schema in one ``ADD COLUMNS`` commit (see the module docstring): appended,
    or placed by ``after`` (SQL's ``AFTER col`` / ``FIRST``): ``{"z": "id"}`` puts ``z`` right after the
    column ``id`` of the same struct (one added before it included), ``{"z": None}`` first. A nested column
    (``(parent, field)``, see :data:`NewColumn`) is appended to its struct, or placed by ``after`` keyed by its
    dotted path (``{"s.x": "a"}``).

    Example:
        >>> add_columns(t, [StructField("z", PrimitiveType("integer"), True, {})]).version   # doctest: +SKIP
        5
        >>> add_columns(t, [StructField("y", PrimitiveType("long"), True, {})], after={"y": "id"})  # doctest: +SKIP
        >>> add_columns(t, [("address", StructField("zip", PrimitiveType("string"), True, {}))])   # doctest: +SKIP
    """
    loc = table.location
    new = [_new_column(c, loc) for c in fields]
    if not new:
        raise InvalidArgumentError("ADD COLUMNS needs at least one column", table=loc)
    snapshot = table.snapshot()
    places = dict(after or {})
    unknown = sorted(set(places) - {_dotted(parent, f) for parent, f in new})
    if unknown:
        raise InvalidArgumentError(f"ADD COLUMNS: positions given for columns not being added: {unknown}", table=loc)
    root: DataType = snapshot.schema
    for parent, f in new:
        if not f.nullable:
            raise InvalidArgumentError(
                f"[DELTA_NOT_NULL_COLUMN_NOT_ALLOWED] column {_dotted(parent, f)!r} cannot be added as NOT NULL: the "
                "rows already in the table would hold nulls; add it as nullable", table=loc)
        if CURRENT_DEFAULT in f.metadata:  # the rows already written could not read the default (as delta-spark)
            raise InvalidArgumentError(
                f"[WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN_NOT_SUPPORTED] column {f.name!r} cannot be "
                "added with a DEFAULT; add it without one, then set it with ALTER COLUMN ... SET DEFAULT "
                "(change_column(default=...))", table=loc)
        key = _dotted(parent, f)
        root = _add_at(root, list(parent), f, places.get(key, _APPEND), loc, parent)
    assert isinstance(root, StructType)
    schema = StructType(root.fields)  # validates names
    from deltalog.txn.transaction import start_transaction

    def position(parent: tuple[str, ...], f: StructField) -> str | None:
        key = _dotted(parent, f)
        return None if key not in places else "FIRST" if places[key] is None else f"AFTER {places[key]}"

    logged = tuple({**_field_obj(f), "name": _dotted(parent, f)} for parent, f in new)
    txn = start_transaction(table, AddColumns(columns=logged, positions=tuple(position(p, f) for p, f in new)),
                            **_options(clock, snapshot))
    txn.update_metadata(replace(snapshot.metadata, schemaString=schema.to_json()))
    return txn.commit()


_APPEND = object()  # no position given: the column goes last


def _new_column(column: Any, loc: str) -> tuple[tuple[str, ...], StructField]:
    if isinstance(column, StructField):
        return (), column
    if isinstance(column, tuple) and len(column) == 2 and isinstance(column[1], StructField):
        path = column[0]
        parts = tuple(path.split(".")) if isinstance(path, str) else tuple(path)
        if not parts or not all(isinstance(p, str) and p for p in parts):
            raise InvalidArgumentError(f"ADD COLUMNS: {path!r} is not a column path (e.g. 's' or 's.inner')", table=loc)
        return parts, column[1]
    raise InvalidArgumentError(
        f"ADD COLUMNS takes StructFields or (parent path, StructField) pairs, got {type(column).__name__}", table=loc)


def _dotted(parent: Sequence[str], f: StructField) -> str:
    return ".".join([*parent, f.name])


def _add_at(dtype: DataType, path: list[str], f: StructField, anchor: Any, loc: str,
            full: tuple[str, ...]) -> DataType:
    """``dtype`` with ``f`` added to the struct ``path`` leads to (placed by ``anchor``)."""
    where = ".".join(full[:len(full) - len(path)]) or "the table"  # the struct reached so far
    if path:
        step, rest = path[0], path[1:]
        if isinstance(dtype, StructType):
            at = next((i for i, g in enumerate(dtype.fields) if g.name.lower() == step.lower()), None)
            if at is not None:
                fields = list(dtype.fields)
                fields[at] = replace(fields[at], type=_add_at(fields[at].type, rest, f, anchor, loc, full))
                return StructType(tuple(fields))
        elif isinstance(dtype, ArrayType) and step.lower() == "element":
            return replace(dtype, element_type=_add_at(dtype.element_type, rest, f, anchor, loc, full))
        elif isinstance(dtype, MapType) and step.lower() in ("key", "value"):
            if step.lower() == "key":
                return replace(dtype, key_type=_add_at(dtype.key_type, rest, f, anchor, loc, full))
            return replace(dtype, value_type=_add_at(dtype.value_type, rest, f, anchor, loc, full))
        raise InvalidArgumentError(
            f"[DELTA_COLUMN_NOT_FOUND] cannot add column {_dotted(full, f)!r}: {where} has no field {step!r} "
            "(a path steps into arrays with 'element' and into maps with 'key' / 'value')", table=loc)
    if not isinstance(dtype, StructType):
        raise InvalidArgumentError(
            f"cannot add column {_dotted(full, f)!r}: {where} is not a struct (it is {_type_name(dtype)})", table=loc)
    fields = list(dtype.fields)
    if any(g.name.lower() == f.name.lower() for g in fields):
        raise InvalidArgumentError(
            f"[DELTA_DUPLICATE_COLUMNS_FOUND] column {_dotted(full, f)!r} already exists in the table", table=loc)
    if anchor is _APPEND:
        fields.append(f)
    elif anchor is None:
        fields.insert(0, f)
    else:
        at = next((i for i, g in enumerate(fields) if g.name.lower() == str(anchor).lower()), None)
        if at is None:
            raise InvalidArgumentError(
                f"[DELTA_COLUMN_NOT_FOUND] cannot add column {_dotted(full, f)!r} AFTER {anchor!r}: {where} has no "
                f"{'top-level ' if not full else ''}column {anchor!r} (columns: {[g.name for g in fields]})",
                table=loc)
        fields.insert(at + 1, f)
    return StructType(tuple(fields))


def _type_name(dtype: DataType) -> str:
    if isinstance(dtype, ArrayType):
        return "an array"
    if isinstance(dtype, MapType):
        return "a map"
    return str(getattr(dtype, "name", dtype))


def _stats_say_no_nulls(add: dict[str, Any], physical: str) -> bool:
    """Whether the file's statistics count no null in ``physical`` (counted over every physical row, so
    a zero holds for the live rows too); ``False`` when they do not say (or cannot be parsed)."""
    try:
        stats = FileStats.from_json(add.get("stats"))
    except InvalidArgumentError:
        return False
    count = stats.null_count.get(physical) if stats is not None else None
    return type(count) is int and count == 0


def _nulls(snapshot: Snapshot, column: str) -> int:
    """Null values of the top-level ``column`` in the live rows; files whose statistics count no null
    in it are not read."""
    from deltalog.data.read import read_file_columns

    physical = physical_name(snapshot.schema.field(column), snapshot.column_mapping_mode)
    count = 0
    for add in snapshot.add_files().to_pylist():
        if _stats_say_no_nulls(add, physical):
            continue
        data = read_file_columns(snapshot, add, [column])
        count += int(pc.sum(pc.is_null(data.column(column)).cast("int64")).as_py() or 0)
    return count


def change_column(
    table: TableHandle,
    name: str,
    *,
    comment: str | None = None,
    nullable: bool | None = None,
    default: str | None = None,
    drop_default: bool = False,
    clock: Callable[[], int] | None = None,
) -> CommitResult:
    """Change column ``name``'s comment, nullability and/or default (``default=`` a constant SQL
    expression sets it, ``drop_default=True`` removes it; rows already written keep their values) in one
    ``CHANGE COLUMN`` commit (see the module docstring).

    Example:
        >>> change_column(t, "note", comment="free text").operation                           # doctest: +SKIP
        'CHANGE COLUMN'
    """
    loc = table.location
    if comment is None and nullable is None and default is None and not drop_default:
        raise InvalidArgumentError("CHANGE COLUMN needs a comment, a nullability or a default to change", table=loc)
    if default is not None and drop_default:
        raise InvalidArgumentError("CHANGE COLUMN cannot both set and drop a default", table=loc)
    snapshot = table.snapshot()
    matches = [f for f in snapshot.schema.fields if f.name.lower() == str(name).lower()]
    if not matches:
        raise InvalidArgumentError(
            f"[DELTA_COLUMN_NOT_FOUND] column {name!r} does not exist; the table has {snapshot.schema.field_names}",
            table=loc)
    old = matches[0]
    metadata = dict(old.metadata)
    if comment is not None:
        metadata["comment"] = comment
    if default is not None:
        if _identity_or_generated(metadata):
            raise InvalidArgumentError(f"column {old.name} is an identity or generated column; it cannot have a "
                                       "default", table=loc)
        metadata.update(default_metadata(default, column=old.name))
    elif drop_default:
        metadata.pop(CURRENT_DEFAULT, None)
    changed = StructField(old.name, old.type, old.nullable if nullable is None else nullable, metadata)
    if old.nullable and nullable is False:
        if old.name in snapshot.partition_columns:
            key = physical_name(old, snapshot.column_mapping_mode)
            bad = sum(1 for r in snapshot.add_files().column("partitionValues").to_pylist()
                      if dict(r or []).get(key) is None)
        else:
            bad = _nulls(snapshot, old.name)
        if bad:
            raise ConstraintViolationError(
                f"[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] column {old.name} cannot be set NOT NULL: {bad} row(s) hold "
                "null there; nothing was committed", table=loc)
    fields = tuple(changed if f is old else f for f in snapshot.schema.fields)
    from deltalog.txn.transaction import start_transaction

    txn = start_transaction(table, ChangeColumn(column=_field_obj(changed)), **_options(clock, snapshot))
    txn.read_whole_table()  # a nullability change checked every row: a concurrent write must conflict
    txn.update_metadata(replace(snapshot.metadata, schemaString=StructType(fields).to_json()))
    return txn.commit()


_SQL_TYPE_NAMES = {"bigint": "long", "int": "integer", "tinyint": "byte", "smallint": "short", "real": "float"}


def set_column_type(
    table: TableHandle, name: str, data_type: Any, *, clock: Callable[[], int] | None = None
) -> CommitResult:
    """Widen column ``name`` to ``data_type`` (a :mod:`deltalog.protocol.schema` type or a name such as
    ``"bigint"``, ``"double"``, ``"decimal(12,2)"``) in one ``CHANGE COLUMN`` commit, without rewriting
    data files: the table must set ``delta.enableTypeWidening=true`` and the change must be one type
    widening allows (:mod:`deltalog.protocol.type_widening`); it is recorded in ``delta.typeChanges``.

    Example:
        >>> set_column_type(t, "n", "bigint").operation                                        # doctest: +SKIP
        'CHANGE COLUMN'
    """
    from deltalog.protocol.schema import parse_data_type, type_string
    from deltalog.protocol.type_widening import can_widen, widened
    from deltalog.txn.transaction import start_transaction
    from deltalog.txn.writer_features import is_true

    loc = table.location
    if isinstance(data_type, str):
        text = data_type.strip().lower().replace(" ", "")
        try:
            data_type = parse_data_type(_SQL_TYPE_NAMES.get(text, text))
        except Exception:
            raise InvalidArgumentError(f"unknown column type {data_type!r}", table=loc) from None
    snapshot = table.snapshot()
    matches = [f for f in snapshot.schema.fields if f.name.lower() == str(name).lower()]
    if not matches:
        raise InvalidArgumentError(
            f"[DELTA_COLUMN_NOT_FOUND] column {name!r} does not exist; the table has {snapshot.schema.field_names}",
            table=loc)
    old = matches[0]
    if not is_true(snapshot.properties, "delta.enableTypeWidening"):
        raise InvalidArgumentError(
            f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] changing the type of column {old.name} needs type "
            "widening: set delta.enableTypeWidening=true first", table=loc)
    if old.name in snapshot.partition_columns:
        raise InvalidArgumentError(f"column {old.name} is a partition column; its type cannot be changed", table=loc)
    if not can_widen(old.type, data_type):
        shown, wanted = type_string(old.type), type_string(data_type)
        raise InvalidArgumentError(
            f"[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP] column {old.name} cannot change from {shown} to {wanted}: "
            "type "
            "widening allows byte -> short -> integer -> long, float -> double, integers to double or a wide "
            "enough decimal, decimal precision/scale increases, and date -> timestamp_ntz", table=loc)
    changed = widened(old, data_type)
    fields = tuple(changed if f is old else f for f in snapshot.schema.fields)
    txn = start_transaction(table, ChangeColumn(column=_field_obj(changed)), **_options(clock, snapshot))
    txn.update_metadata(replace(snapshot.metadata, schemaString=StructType(fields).to_json()))
    return txn.commit()
