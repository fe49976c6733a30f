"""Column defaults (writer feature ``allowColumnDefaults``): a column whose field metadata holds
``CURRENT_DEFAULT`` (a SQL expression) gets that expression's value in every row a write adds without a
value for it -- the column left out of the data, of an ``INSERT`` column list or of a MERGE insert -- and
wherever a statement says ``DEFAULT`` (``INSERT ... VALUES (1, DEFAULT)``, ``UPDATE ... SET c = DEFAULT``).

A default is a constant expression: it may not name columns. Readers ignore it, and the rows already in
the table are not changed when a default is set or dropped. The kernel evaluates defaults with
:mod:`deltalog.data.sql_expr` (literals, casts, arithmetic, ...); an expression outside that subset (e.g.
``current_date()``) is refused naming the column, and Spark writes (:mod:`deltalog.spark.columns.defaults`)
evaluate any Spark expression.

Example:
    >>> import pyarrow as pa
    >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
    >>> schema = StructType((StructField("id", PrimitiveType("long")),
    ...     StructField("status", PrimitiveType("string"), True, {"CURRENT_DEFAULT": "'new'"})))
    >>> fill_defaults(pa.table({"id": [1, 2]}), schema, table="t").to_pydict()
    {'id': [1, 2], 'status': ['new', 'new']}
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from deltalog.data.sql_expr import UnsupportedExpressionError, compile_expression
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.schema import StructType

__all__ = ["CURRENT_DEFAULT", "FEATURE_PROPERTY", "default_columns", "default_metadata", "fill_defaults"]

CURRENT_DEFAULT = "CURRENT_DEFAULT"
#: The table property delta-spark asks for before a column may have a default.
FEATURE_PROPERTY = "delta.feature.allowColumnDefaults"


#: SQL functions written without parentheses, which the kernel's parser reads as column names.
_NILADIC = frozenset({"CURRENT_DATE", "CURRENT_TIMESTAMP", "CURRENT_USER", "CURRENT_TIMEZONE", "CURRENT_CATALOG",
                      "CURRENT_SCHEMA", "CURRENT_DATABASE", "SESSION_USER", "USER"})


def default_columns(schema: StructType) -> dict[str, str]:
    """``{column: expression}`` of the schema's top-level columns that have a default.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
        >>> default_columns(StructType((StructField("n", PrimitiveType("integer"), True,
        ...     {"CURRENT_DEFAULT": "0"}),)))
        {'n': '0'}
    """
    return {f.name: str(f.metadata[CURRENT_DEFAULT]) for f in schema.fields
            if f.metadata.get(CURRENT_DEFAULT) is not None}


def default_metadata(expression: str, *, column: str = "?") -> dict[str, str]:
    """The field metadata of a column whose default is ``expression``; refuses expressions that name columns
    (a default is computed without a row to read from).

    Example:
        >>> default_metadata("'new'", column="status")
        {'CURRENT_DEFAULT': "'new'"}
        >>> default_metadata("id + 1", column="n")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: column n: DEFAULT id + 1 names column(s) ['id']; a default must \
be a constant expression
    """
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidArgumentError(f"column {column}: a default must be a non-empty SQL string, got {expression!r}")
    text = expression.strip()
    try:
        names = sorted(".".join(path) for path in compile_expression(text).columns()
                       if ".".join(path).upper() not in _NILADIC)
    except UnsupportedExpressionError:
        names = []  # outside the kernel's subset (e.g. current_date()): Spark validates it
    if names:
        raise InvalidArgumentError(f"column {column}: DEFAULT {text} names column(s) {names}; a default must be "
                                   "a constant expression")
    return {CURRENT_DEFAULT: text}


def fill_defaults(data: pa.Table, schema: StructType, *, table: str | None = None) -> pa.Table:
    """``data`` with every defaulted column it leaves out appended, holding the default's value.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
        >>> schema = StructType((StructField("n", PrimitiveType("integer"), True, {"CURRENT_DEFAULT": "7"}),))
        >>> fill_defaults(pa.table({"n": [1]}), schema).to_pydict()     # given: kept
        {'n': [1]}
    """
    from deltalog.protocol.schema import StructType as _Struct

    given = {n.lower() for n in data.column_names}
    for name, sql in default_columns(schema).items():
        if name.lower() in given:
            continue
        field = schema.field(name)
        target = _Struct((dataclasses.replace(field, metadata={}),)).to_arrow_schema().field(0).type
        try:
            values = compile_expression(sql).evaluate(data)
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            values = values.cast(target) if values.type != target else values
        except (UnsupportedExpressionError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise UnsupportedFeatureError(
                f"column {name} DEFAULT {sql} cannot be computed by deltalog's kernel ({exc}); give the column a "
                "value, or write through Spark (deltalog.spark), which evaluates any Spark expression",
                feature="allowColumnDefaults", table=table) from None
        data = data.append_column(pa.field(name, target), values)
    return data
