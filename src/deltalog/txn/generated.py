"""Generated columns (writer feature ``generatedColumns``): a column whose field metadata holds
``delta.generationExpression`` is computed from the row's other columns on every write.

A write that leaves the column out gets it computed; a write that provides it must agree with the
expression for every row (``col <=> expr``), else nothing is written -- as delta-spark enforces it. The
kernel evaluates expressions with :mod:`deltalog.data.sql_expr` (date parts and casts in UTC); an
expression outside that subset is refused naming the column, and Spark writes
(:mod:`deltalog.spark.columns.generated`) evaluate any Spark expression.

Example:
    >>> import pyarrow as pa
    >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
    >>> schema = StructType((StructField("x", PrimitiveType("long")),
    ...     StructField("y", PrimitiveType("long"), True, {"delta.generationExpression": "x * 2"})))
    >>> fill_generated(pa.table({"x": [1, 2]}), schema, table="t").to_pydict()
    {'x': [1, 2], 'y': [2, 4]}
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data.sql_expr import UnsupportedExpressionError, compile_expression
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.schema import StructType
from deltalog.txn.constraints import ConstraintViolationError, describe_row

__all__ = ["GENERATION_EXPRESSION", "fill_generated", "generated_columns", "generated_metadata"]

GENERATION_EXPRESSION = "delta.generationExpression"


def generated_columns(schema: StructType) -> dict[str, str]:
    """``{column: expression}`` of the schema's generated (top-level) columns.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
        >>> generated_columns(StructType((StructField("d", PrimitiveType("date"), True,
        ...     {"delta.generationExpression": "CAST(ts AS DATE)"}),)))
        {'d': 'CAST(ts AS DATE)'}
    """
    return {f.name: str(f.metadata[GENERATION_EXPRESSION]) for f in schema.fields
            if f.metadata.get(GENERATION_EXPRESSION) is not None}


def generated_metadata(expression: str) -> dict[str, str]:
    """The field metadata of a generated column.

    Example:
        >>> generated_metadata("year(ts)")
        {'delta.generationExpression': 'year(ts)'}
    """
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidArgumentError(f"a generation expression must be a non-empty SQL string, got {expression!r}")
    return {GENERATION_EXPRESSION: expression.strip()}


def fill_generated(data: pa.Table, schema: StructType, *, table: str | None = None) -> pa.Table:
    """``data`` with the schema's generated columns computed (appended when absent, checked when given).

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
        >>> schema = StructType((StructField("x", PrimitiveType("long")),
        ...     StructField("y", PrimitiveType("long"), True, {"delta.generationExpression": "x + 1"})))
        >>> fill_generated(pa.table({"x": [1], "y": [5]}), schema, table="t")
        Traceback (most recent call last):
        ...
        deltalog.txn.constraints.ConstraintViolationError: [DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] generated \
column y (x + 1) does not match 1 of 1 rows, e.g. the row with x = 1, y = 5; leave the column out to have it \
computed; nothing was written [table t]
    """
    from deltalog.protocol.schema import StructType as _Struct

    columns = generated_columns(schema)
    if not columns:
        return data
    given = {n.lower(): n for n in data.column_names}
    for name, sql in columns.items():
        field = schema.field(name)
        target = _Struct((dataclasses.replace(field, metadata={}),)).to_arrow_schema().field(0).type
        try:
            values = compile_expression(sql).evaluate(data)
            values = values.cast(target) if values.type != target else values
        except (UnsupportedExpressionError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise UnsupportedFeatureError(
                f"generated column {name} = {sql} cannot be computed by deltalog's kernel ({exc}); write through "
                "Spark (deltalog.spark), which evaluates any Spark expression", feature="generatedColumns",
                table=table) from None
        present = given.get(name.lower())
        if present is None:
            data = data.append_column(pa.field(name, target), values)
            continue
        actual = data.column(present)
        if actual.type != target:
            actual = actual.cast(target)
        same = pc.or_(pc.fill_null(pc.equal(actual, values), False), pc.and_(pc.is_null(actual), pc.is_null(values)))
        bad = len(same) - (pc.sum(pc.cast(same, pa.int64())).as_py() or 0)
        if bad:
            first = pc.index(same, False).as_py()
            raise ConstraintViolationError(
                f"[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] generated column {name} ({sql}) does not match {bad} of "
                f"{data.num_rows} rows, e.g. the row with "
                f"{describe_row(data, first, [])}; leave the column out to have it computed; nothing was written",
                table=table)
    return data
