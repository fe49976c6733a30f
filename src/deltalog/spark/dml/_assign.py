"""Assignments of UPDATE and MERGE: ``column = expression``, checked and cast the way Spark stores values.

* :func:`resolve_column` -- a target column named in ``set`` / ``values`` (case-insensitive, an optional
  table-alias prefix); an unknown name raises :class:`~deltalog.errors.InvalidArgumentError` listing the
  table's columns;
* :func:`assignable` -- the casts delta-spark's UPDATE and MERGE accept (Spark's ANSI cast rules),
  checked on the driver from the analysed expression types; an array to a ``bigint`` or a date to a
  ``boolean`` is refused before any job runs with a :class:`~deltalog.errors.SchemaError` naming the
  column;
* :func:`assign` -- the expression cast to the column's type; a value the cast cannot represent
  (overflow, malformed text) fails the job with ``[DELTA_CAST_FAILURE]`` naming the column and value
  (``raise_error``), which :func:`~deltalog.spark.dml._jobs.spark_error` turns into a ``SchemaError``.

Example:
    >>> from pyspark.sql.types import IntegerType, LongType, StringType
    >>> assignable(IntegerType(), LongType()), assignable(StringType(), IntegerType())   # doctest: +SKIP
    (True, False)
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from deltalog.errors import InvalidArgumentError, InvalidArgumentTypeError, SchemaError
from deltalog.protocol.schema import StructField, StructType
from deltalog.spark._common import spark_type
from deltalog.spark.dml._scan import is_column

__all__ = ["assign", "assignable", "expression", "resolve_column", "same_type"]

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
    alias prefix in ``qualifiers`` is dropped).

    Example:
        >>> resolve_column("T.ID", snap.schema, what="UPDATE", qualifiers=["t"]).name  # doctest: +SKIP
        'id'
    """
    if not isinstance(name, str):
        raise InvalidArgumentTypeError(f"{what}: column names must be strings, got {name!r}")
    if not name:
        raise InvalidArgumentError(f"{what}: column names must be non-empty strings, got {name!r}")
    names = schema.field_names
    candidates = [name]
    head, _, rest = name.partition(".")
    if rest and head.lower() in {q.lower() for q in qualifiers}:
        candidates.append(rest)
    for cand in candidates:
        if cand in names:
            return schema.field(cand)
        found = [n for n in names if n.lower() == cand.lower()]
        if len(found) == 1:
            return schema.field(found[0])
    if "." in name and name.split(".")[0].lower() in {n.lower() for n in names}:
        raise InvalidArgumentError(
            f"{what}: assigning nested field {name!r} is not supported yet; assign the whole struct column "
            "(e.g. with named_struct or Column.withField)"
        )
    raise InvalidArgumentError(
        f"[DELTA_COLUMN_NOT_FOUND] {what}: column {name!r} does not exist in the table; its columns are {names}"
    )


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if k not in ("nullable", "containsNull", "valueContainsNull",
                                                                      "metadata")}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def same_type(a: Any, b: Any) -> bool:
    """Equal Spark types, ignoring nullability and field metadata.

    Example:
        >>> from pyspark.sql.types import ArrayType, LongType
        >>> same_type(ArrayType(LongType(), True), ArrayType(LongType(), False))  # doctest: +SKIP
        True
    """
    return bool(_strip(a.jsonValue()) == _strip(b.jsonValue()))


def assignable(src: Any, dst: Any) -> bool:
    """Whether delta-spark's UPDATE / MERGE store a ``src``-typed value in a ``dst`` column: Spark's ANSI
    cast rules (``Cast.canAnsiCast``), which delta-spark applies under the default store-assignment
    policy -- numbers, booleans and strings among themselves, strings to dates, timestamps and binary,
    any atomic value to a string, dates and timestamps among themselves, structs / arrays / maps
    element-wise. A value the cast cannot represent fails the job (:func:`assign`).

    Example:
        >>> from pyspark.sql.types import DateType, IntegerType, StringType, TimestampType
        >>> assignable(DateType(), TimestampType()), assignable(StringType(), IntegerType())   # doctest: +SKIP
        (True, True)
    """
    from pyspark.sql import types as T

    if isinstance(src, T.NullType) or same_type(src, dst):
        return True
    if isinstance(dst, T.StructType):
        return (
            isinstance(src, T.StructType)
            and len(src.fields) == len(dst.fields)
            and all(assignable(s.dataType, d.dataType) for s, d in zip(src.fields, dst.fields))
        )
    if isinstance(dst, T.ArrayType):
        return isinstance(src, T.ArrayType) and assignable(src.elementType, dst.elementType)
    if isinstance(dst, T.MapType):
        return (
            isinstance(src, T.MapType)
            and assignable(src.keyType, dst.keyType)
            and assignable(src.valueType, dst.valueType)
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


def assign(value: Column, src_type: Any, field: StructField, *, what: str) -> Column:
    """``value`` (whose analysed type is ``src_type``) cast to ``field``'s type; refuses types Spark would
    not store (:func:`assignable`) and makes values the cast cannot hold fail the job naming the column.

    Example:
        >>> assign(F.col("s.v"), LongType(), table_field, what="MERGE UPDATE")    # doctest: +SKIP
        Column<'CASE WHEN ... raise_error(...) ... END'>
    """
    from pyspark.sql import functions as F

    dst = spark_type(field.type)
    if same_type(src_type, dst):
        return value
    if not assignable(src_type, dst):
        raise SchemaError(
            f"[DELTA_UPDATE_SCHEMA_MISMATCH] {what}: cannot assign a value of type {src_type.simpleString()} to "
            f"column {field.name!r} of type {dst.simpleString()}; cast the expression explicitly"
        )
    casted = value.try_cast(dst)
    message = F.concat(
        F.lit(f"[DELTA_CAST_FAILURE] {what}: value "),
        F.coalesce(value.cast("string"), F.lit("?")),
        F.lit(f" cannot be stored in column {field.name!r} of type {dst.simpleString()}"),
    )
    return F.when(value.isNotNull() & casted.isNull(), F.raise_error(message)).otherwise(casted)
