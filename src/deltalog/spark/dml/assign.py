"""Assignments of UPDATE and MERGE: ``column = expression``, checked and cast the way Spark stores values.

* :func:`resolve_path` -- a target column or struct field named in ``set`` (case-insensitive, an optional
  table-alias prefix, ``s.b`` for field ``b`` of struct ``s``); an unknown name raises
  :class:`~deltalog.errors.InvalidArgumentError` listing the table's columns; :func:`resolve_column` the
  same for the top-level columns of ``values``;
* :func:`combine` -- a struct column's new value from the assignments of its fields (the others kept);
* :func:`assignable` -- the casts delta-spark's UPDATE and MERGE accept (Spark's ANSI cast rules),
  checked on the driver from the analysed expression types; an array to a ``bigint`` or a date to a
  ``boolean`` is refused before any job runs with a :class:`~deltalog.errors.SchemaError` naming the
  column;
* :func:`assign` -- the expression cast to the column's type; a value the cast cannot represent
  (overflow, malformed text) fails the job with ``[DELTA_CAST_FAILURE]`` naming the column and value
  (``raise_error``), which :func:`~deltalog.spark.jobs.staged.spark_error` turns into a ``SchemaError``;
* :func:`identity_assignments` -- what a MERGE's clauses may assign to generated and identity columns.

Example:
    >>> from pyspark.sql.types import IntegerType, LongType, StringType
    >>> assignable(IntegerType(), LongType()), assignable(StringType(), IntegerType())   # doctest: +SKIP
    (True, False)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from deltalog.errors import InvalidArgumentError, InvalidArgumentTypeError, SchemaError
from deltalog.protocol.schema import StructField, StructType, bare_json
from deltalog.spark.columns.identity import BOUND, identity_value
from deltalog.spark.common.arguments import is_column
from deltalog.spark.common.compat import try_cast
from deltalog.spark.common.core import spark_type
from deltalog.txn.generated import generated_columns

__all__ = [
    "assign", "assignable", "combine", "expression", "identity_assignments", "resolve_column", "resolve_path",
    "same_type",
]

Column = Any  # pyspark.sql.Column


def expression(value: Any, *, what: str) -> Column:
    """A ``set`` / ``values`` entry as a ``Column``: a SQL expression string or a ``Column``.

    Example:
        >>> expression("v + 1", what="UPDATE set['v']")                          # doctest: +SKIP
        Column<'(v + 1)'>
    """
    from pyspark.sql import functions as F

    if isinstance(value, str):
        if not value.strip():
            raise InvalidArgumentError(f"{what} is an empty expression")
        return F.expr(value)
    if is_column(value):
        return value
    raise InvalidArgumentTypeError(
        f"{what} must be a SQL expression string or a Spark Column, got {type(value).__name__} "
        "(wrap literals with pyspark.sql.functions.lit)"
    )


def resolve_column(name: Any, schema: StructType, *, what: str, qualifiers: Collection[str] = ()) -> StructField:
    """The top-level column of ``schema`` that ``name`` designates (case-insensitive, like Spark; an
    alias prefix in ``qualifiers`` is dropped); a nested field (``s.b``) is refused (INSERT lists name
    top-level columns only).

    Example:
        >>> resolve_column("T.ID", snap.schema, what="UPDATE", qualifiers=["t"]).name  # doctest: +SKIP
        'id'
    """
    field, path = resolve_path(name, schema, what=what, qualifiers=qualifiers)
    if path:
        raise InvalidArgumentError(f"{what}: {name!r} names a nested field; only top-level columns can be listed "
                                   "here (assign the whole struct, e.g. with named_struct)")
    return field


def _parts(name: str) -> list[str]:
    """``name`` split at the dots outside backticks, the backticks removed (```a.b`.c`` -> ``['a.b', 'c']``)."""
    parts, cur, quoted_, i = [], "", False, 0
    while i < len(name):
        ch = name[i]
        if ch == "`":
            if quoted_ and name[i + 1:i + 2] == "`":
                cur += "`"
                i += 2
                continue
            quoted_ = not quoted_
        elif ch == "." and not quoted_:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    parts.append(cur)
    return parts


def _find(names: list[str], wanted: str) -> str | None:
    if wanted in names:
        return wanted
    found = [n for n in names if n.lower() == wanted.lower()]
    return found[0] if len(found) == 1 else None


def resolve_path(name: Any, schema: StructType, *, what: str,
                 qualifiers: Collection[str] = ()) -> tuple[StructField, tuple[str, ...]]:
    """The top-level column and the path of struct fields below it (the schema's spelling) that ``name``
    designates, as Spark resolves an assignment target: case-insensitive, a qualifier in ``qualifiers``
    dropped, dots separating struct fields (a column whose own name has a dot is found by that name, or
    quoted with backticks).

    Example:
        >>> resolve_path("t.s.b", snap.schema, what="UPDATE", qualifiers=["t"])          # doctest: +SKIP
        (StructField(name='s', ...), ('b',))
    """
    from deltalog.protocol.schema import StructType as DeltaStruct

    if not isinstance(name, str):
        raise InvalidArgumentTypeError(f"{what}: column names must be strings, got {name!r}")
    if not name:
        raise InvalidArgumentError(f"{what}: column names must be non-empty strings, got {name!r}")
    names = schema.field_names
    whole = _find(names, name) if "`" not in name else None
    if whole is not None:
        return schema.field(whole), ()
    parts = _parts(name)
    if len(parts) > 1 and parts[0].lower() in {q.lower() for q in qualifiers}:
        rest = ".".join(parts[1:])
        whole = _find(names, rest) if len(parts) > 2 and "`" not in name else None
        if whole is not None:
            return schema.field(whole), ()
        parts = parts[1:]
    top = _find(names, parts[0])
    if top is None or any(not p for p in parts):
        raise InvalidArgumentError(
            f"[DELTA_COLUMN_NOT_FOUND] {what}: column {name!r} does not exist in the table; its columns are {names}"
        )
    field = schema.field(top)
    path: list[str] = []
    dtype = field.type
    for part in parts[1:]:
        if not isinstance(dtype, DeltaStruct):
            raise InvalidArgumentError(
                f"{what}: {name!r} assigns a field inside column {top!r}, whose {'.'.join([top, *path])} is not a "
                "struct (fields of arrays and maps cannot be assigned one by one); assign the whole value")
        found = _find(dtype.field_names, part)
        if found is None:
            raise InvalidArgumentError(
                f"[DELTA_COLUMN_NOT_FOUND] {what}: field {part!r} of {name!r} does not exist; "
                f"{'.'.join([top, *path])} has the fields {dtype.field_names}")
        path.append(found)
        dtype = dtype.field(found).type
    return field, tuple(path)


def combine(field: StructField, assigned: list[tuple[tuple[str, ...], Column]], current: Column, *,
            what: str, shown: str | None = None) -> Column:
    """The new value of column ``field`` given its assignments (``(path, value)``; an empty path assigns
    the whole column): a struct rebuilt field by field as delta-spark does -- assigned fields take their
    value, the others keep ``current``'s. Assigning a field and a field or struct that contains it is
    refused (``DELTA_CONFLICT_SET_COLUMN``).

    Example:
        >>> combine(snap.schema.field("s"), [(("b",), F.lit("x"))], F.col("s"), what="UPDATE")  # doctest: +SKIP
        Column<'struct(s.a AS a, x AS b)'>
    """
    from pyspark.sql import functions as F

    label = shown or field.name
    whole = [value for path, value in assigned if not path]
    if whole:
        if len(assigned) > 1:
            listed = sorted(".".join([label, *p]) for p, _ in assigned)
            raise InvalidArgumentError(f"[DELTA_CONFLICT_SET_COLUMN] {what}: there is a conflict from these SET "
                                       f"columns: {listed}; assign each column or field once")
        return whole[0]
    from deltalog.protocol.schema import StructType as DeltaStruct

    assert isinstance(field.type, DeltaStruct)
    members = []
    for sub in field.type.fields:
        below = [(path[1:], value) for path, value in assigned if path[0] == sub.name]
        value = current.getField(sub.name) if not below else \
            combine(sub, below, current.getField(sub.name), what=what, shown=f"{label}.{sub.name}")
        members.append(value.alias(sub.name))
    return F.struct(*members)


def same_type(a: Any, b: Any) -> bool:
    """Equal Spark types, ignoring nullability and field metadata.

    Example:
        >>> from pyspark.sql.types import ArrayType, LongType
        >>> same_type(ArrayType(LongType(), True), ArrayType(LongType(), False))  # doctest: +SKIP
        True
    """
    return bool(bare_json(a.jsonValue()) == bare_json(b.jsonValue()))


def assignable(src: Any, dst: Any, *, evolve: bool = False) -> bool:
    """Whether delta-spark's UPDATE / MERGE store a ``src``-typed value in a ``dst`` column: Spark's ANSI
    cast rules (``Cast.canAnsiCast``), which delta-spark applies under the default store-assignment
    policy -- numbers, booleans and strings among themselves, strings to dates, timestamps and binary,
    any atomic value to a string, dates and timestamps among themselves, arrays / maps element-wise -- and
    structs field by *name* (delta-spark's ``resolveMergeUpdateStructsByName``, on by default): every field
    of ``src`` must be one of ``dst``'s, and unless schema evolution is on (``evolve``: a MERGE's fields
    ``src`` lacks become null) ``dst`` may have no other. A value the cast cannot represent fails the job
    (:func:`assign`).

    Example:
        >>> from pyspark.sql.types import DateType, IntegerType, StringType, TimestampType
        >>> assignable(DateType(), TimestampType()), assignable(StringType(), IntegerType())   # doctest: +SKIP
        (True, True)
    """
    from pyspark.sql import types as T

    if isinstance(src, T.NullType) or same_type(src, dst):
        return True
    if isinstance(dst, T.StructType):
        if not isinstance(src, T.StructType):
            return False
        targets = {d.name.lower(): d for d in dst.fields}
        if any(s.name.lower() not in targets for s in src.fields):
            return False  # a field the column cannot hold would be lost
        if not evolve and len(src.fields) != len(dst.fields):
            return False
        return all(assignable(s.dataType, targets[s.name.lower()].dataType, evolve=evolve) for s in src.fields)
    if isinstance(dst, T.ArrayType):
        return isinstance(src, T.ArrayType) and assignable(src.elementType, dst.elementType, evolve=evolve)
    if isinstance(dst, T.MapType):
        return (
            isinstance(src, T.MapType)
            and assignable(src.keyType, dst.keyType, evolve=evolve)
            and assignable(src.valueType, dst.valueType, evolve=evolve)
        )
    scalars = (T.NumericType, T.BooleanType)
    datetimes = (T.DateType, T.TimestampType, T.TimestampNTZType)
    if isinstance(dst, T.StringType):
        return isinstance(src, T.AtomicType)
    if isinstance(src, T.StringType):
        return isinstance(dst, (*scalars, *datetimes, T.BinaryType))
    if isinstance(dst, scalars):
        return isinstance(src, scalars) or (isinstance(dst, T.NumericType) and isinstance(src, T.TimestampType))
    if isinstance(dst, T.TimestampType) and isinstance(src, T.NumericType):
        return True
    return isinstance(src, datetimes) and isinstance(dst, datetimes)


def _shaped(src: Any, dst: Any) -> Any:
    """The type :func:`by_name` gives a ``src`` value: its structs' fields named and ordered as ``dst``'s."""
    from pyspark.sql import types as T

    if same_type(src, dst):
        return src
    if isinstance(src, T.StructType) and isinstance(dst, T.StructType):
        have = {f.name.lower(): f for f in src.fields}
        return T.StructType([T.StructField(d.name, d.dataType if d.name.lower() not in have else
                                           _shaped(have[d.name.lower()].dataType, d.dataType), True)
                             for d in dst.fields])
    if isinstance(src, T.ArrayType) and isinstance(dst, T.ArrayType):
        return T.ArrayType(_shaped(src.elementType, dst.elementType), True)
    if isinstance(src, T.MapType) and isinstance(dst, T.MapType):
        return T.MapType(_shaped(src.keyType, dst.keyType), _shaped(src.valueType, dst.valueType), True)
    return src


def by_name(value: Column, src: Any, dst: Any) -> tuple[Column, Any]:
    """``value`` (of type ``src``) with the fields of its structs -- at any depth, in arrays and maps too --
    taken by name in ``dst``'s order (a field ``src`` lacks is null), and its new type: what is left for a
    cast is positional. A null struct stays null.

    Example:
        >>> by_name(F.col("s"), parse("struct<b:int,a:int>"), parse("struct<a:int,b:int>"))[1].simpleString()
        ... # doctest: +SKIP
        'struct<a:int,b:int>'
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    shaped = _shaped(src, dst)
    if same_type(shaped, src):  # (names and their order are part of the type)
        return value, src
    if isinstance(src, T.StructType) and isinstance(dst, T.StructType):
        have = {f.name.lower(): f for f in src.fields}
        parts = []
        for d in dst.fields:
            s = have.get(d.name.lower())
            part = F.lit(None).cast(d.dataType) if s is None else by_name(value.getField(s.name), s.dataType,
                                                                           d.dataType)[0]
            parts.append(part.alias(d.name))
        return F.when(value.isNull(), F.lit(None).cast(shaped)).otherwise(F.struct(*parts)), shaped
    if isinstance(src, T.ArrayType) and isinstance(dst, T.ArrayType):
        return F.transform(value, lambda e: by_name(e, src.elementType, dst.elementType)[0]), shaped
    if isinstance(src, T.MapType) and isinstance(dst, T.MapType):
        out = value
        if not same_type(_shaped(src.keyType, dst.keyType), src.keyType):
            out = F.transform_keys(out, lambda k, _v: by_name(k, src.keyType, dst.keyType)[0])
        if not same_type(_shaped(src.valueType, dst.valueType), src.valueType):
            out = F.transform_values(out, lambda _k, v: by_name(v, src.valueType, dst.valueType)[0])
        return out, shaped
    return value, src


def assign(value: Column, src_type: Any, field: StructField, *, what: str, evolve: bool = False) -> Column:
    """``value`` (whose analysed type is ``src_type``) cast to ``field``'s type, struct fields matched by
    name (:func:`by_name`); refuses types Spark would not store (:func:`assignable`; ``evolve``: a MERGE
    with schema evolution, where struct fields the value lacks become null) and makes values the cast
    cannot hold fail the job naming the column.

    Example:
        >>> assign(F.col("s.v"), LongType(), table_field, what="MERGE UPDATE")    # doctest: +SKIP
        Column<'CASE WHEN ... raise_error(...) ... END'>
    """
    from pyspark.sql import functions as F

    dst = spark_type(field.type)
    if same_type(src_type, dst):
        return value
    if not assignable(src_type, dst, evolve=evolve):
        raise SchemaError(
            f"[DELTA_UPDATE_SCHEMA_MISMATCH] {what}: cannot assign a value of type {src_type.simpleString()} to "
            f"column {field.name!r} of type {dst.simpleString()}; cast the expression explicitly"
        )
    value, src_type = by_name(value, src_type, dst)
    if same_type(src_type, dst):
        return value
    casted = try_cast(value, dst)
    chain: Column = None
    for label, old, new, dtype in _losses(value, casted, src_type, dst, field.name):
        message = F.concat(
            F.lit(f"[DELTA_CAST_FAILURE] {what}: value "),
            F.coalesce(old.cast("string"), F.lit("?")),
            F.lit(f" cannot be stored in column {label!r} of type {dtype.simpleString()}"),
        )
        test = old.isNotNull() & new.isNull()
        chain = F.when(test, F.raise_error(message)) if chain is None else chain.when(test, F.raise_error(message))
    return casted if chain is None else chain.otherwise(casted)


def _losses(value: Column, casted: Column, src: Any, dst: Any, label: str) -> list[tuple[str, Column, Column, Any]]:
    """Where the cast of ``value`` to ``dst`` can lose a value: ``(column, value, cast value, type)`` for each
    atomic value a try-cast may turn into null -- the fields of structs one by one (a struct's try-cast keeps
    the struct and nulls the field), arrays and maps as a whole."""
    from pyspark.sql import types as T

    if same_type(src, dst) or isinstance(src, T.NullType):
        return []
    if isinstance(src, T.StructType) and isinstance(dst, T.StructType):
        return [loss for s, d in zip(src.fields, dst.fields) for loss in
                _losses(value.getField(s.name), casted.getField(d.name), s.dataType, d.dataType, f"{label}.{d.name}")]
    return [(label, value, casted, dst)]


def identity_assignments(schema: StructType, identity: Any, writers: Sequence[Any],
                         values: dict[tuple[int, str], Any], *, table: str) -> None:
    """The values of generated and identity columns in ``values`` (``(id(clause), column) -> value`` of the
    MERGE clauses ``writers``), fixed in place: a generated column is recomputed from the final row (an
    explicit ``SET`` of it is refused, ``*`` drops it); inserted rows get identity values (explicit ones only
    for ``BY DEFAULT`` columns), updates leave them alone (``UPDATE SET *`` skips them, an explicit ``SET`` is
    refused). ``identity``: the table's :class:`~deltalog.txn.identity.IdentityGenerator`.

    Example:
        >>> identity_assignments(schema, generator, [clause], values, table="/data/t")   # doctest: +SKIP
    """
    for name, sql in generated_columns(schema).items():  # recomputed by write_rows from the final row
        for c in writers:
            if (id(c), name) not in values:
                continue
            if not c.star:
                raise InvalidArgumentError(
                    f"[DELTA_GENERATED_COLUMN_UPDATE_NOT_SUPPORTED] MERGE {c.label()} sets generated column "
                    f"{name}, which is computed as {sql}; leave it out", table=table)
            del values[(id(c), name)]
    for col in identity.generated:
        for c in writers:
            given = values.get((id(c), col.name))
            if c.action == "update" and given is not None:
                if not c.star:
                    raise InvalidArgumentError(
                        f"[DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] MERGE {c.label()} sets identity column "
                        f"{col.name}; identity values cannot be updated", table=table)
                del values[(id(c), col.name)]
            elif c.action == "insert":
                if given is not None and not col.allow_explicit:
                    raise InvalidArgumentError(
                        f"[DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED] MERGE {c.label()} provides "
                        f"column {col.name}, which is GENERATED ALWAYS AS IDENTITY; leave it out of the insert",
                        table=table)
                if given is None:  # a join's partitions may be split at run time: the unplanned bound
                    values[(id(c), col.name)] = identity_value(col, BOUND)
