"""delta-spark's ``IdentityGenerator`` and the field metadata it gives an identity column, shared by
:class:`~deltalog.spark.api.builder.DeltaTableBuilder` (``addColumn(..., generatedAlwaysAs=IdentityGenerator())``)
and SQL's column definitions (``GENERATED ALWAYS AS IDENTITY``, :mod:`deltalog.spark.sql.column_defs`).

Example:
    >>> IdentityGenerator(start=100, step=10)
    IdentityGenerator(start=100, step=10)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltalog.errors import UnsupportedFeatureError

__all__ = ["IdentityGenerator", "identity_field_metadata", "type_error"]


def type_error(message: str, *objs: Any) -> TypeError:
    """delta-spark's ``TypeError`` for a wrong argument: ``message`` and each object with its type.

    Example:
        >>> type_error("Column name must be str.", 3)
        TypeError("Column name must be str. Found 3 with type <class 'int'>")
    """
    found = "".join(f" Found {o!s} with type {type(o)!s}" for o in objs)
    return TypeError(message + found)


@dataclass
class IdentityGenerator:
    """delta-spark's ``IdentityGenerator``: an identity column's ``start`` and ``step`` (non-zero), for
    :meth:`DeltaTableBuilder.addColumn` (``generatedAlwaysAs=`` / ``generatedByDefaultAs=``).

    Example:
        >>> IdentityGenerator(start=100, step=10)
        IdentityGenerator(start=100, step=10)
    """

    start: int = 1
    step: int = 1


def identity_field_metadata(name: str, dtype: Any, generator: Any, *, always: bool) -> dict[str, Any]:
    """The field metadata of identity column ``name`` of Spark type ``dtype`` (``BIGINT`` only), numbered by
    ``generator`` (an :class:`IdentityGenerator`), ``GENERATED ALWAYS`` when ``always``.

    Example:
        >>> from pyspark.sql.types import LongType                                  # doctest: +SKIP
        >>> identity_field_metadata("id", LongType(), IdentityGenerator(1, 1), always=True)  # doctest: +SKIP
        {'delta.identity.start': 1, 'delta.identity.step': 1, 'delta.identity.allowExplicitInsert': False}
    """
    from pyspark.sql.types import LongType

    from deltalog.txn.identity import identity_metadata

    if not isinstance(generator, IdentityGenerator):
        raise type_error("Generated column must be str or IdentityGenerator.", generator)
    if not isinstance(dtype, LongType):
        raise UnsupportedFeatureError(
            f"[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE] column {name!r}: identity columns must be BIGINT "
            f"(LongType), not {dtype.simpleString()}", feature="identityColumns")
    for what, value in (("start", generator.start), ("step", generator.step)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise type_error(f"IdentityGenerator {what} must be int.", value)
    if generator.step == 0:
        raise ValueError("[DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP] IDENTITY column step cannot be 0.")
    return identity_metadata(start=generator.start, step=generator.step, always=always)
