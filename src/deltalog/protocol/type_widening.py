"""Type widening (table feature ``typeWidening``): the changes a column's type may go through without
rewriting data files, and the ``delta.typeChanges`` field metadata that records each one.

Allowed, as the protocol lists them: ``byte → short → integer → long``; ``float → double``; ``byte``,
``short``, ``integer`` to ``double``; integers to a decimal with room for every value (``p - s`` at least
3, 5, 10 or 20 digits); ``decimal(p, s)`` to ``decimal(p', s')`` with ``p' ≥ p``, ``s' ≥ s`` and as many
integer digits; ``date → timestamp_ntz`` (a date becomes its midnight). Readers cast the values of older
files to the table's type; deltalog's Arrow reader and Spark's parquet reader both do. The statistics of
files written before a ``date → timestamp_ntz`` change keep their date strings (``"2024-01-02"``); they
read as that day's midnight, which is exactly the widened value, so they still skip files.

Example:
    >>> from deltalog.protocol.schema import PrimitiveType, StructField
    >>> can_widen(PrimitiveType("integer"), PrimitiveType("long")), can_widen(PrimitiveType("long"),
    ...                                                                         PrimitiveType("integer"))
    (True, False)
    >>> widened(StructField("n", PrimitiveType("integer")), PrimitiveType("long")).metadata
    {'delta.typeChanges': [{'fromType': 'integer', 'toType': 'long'}]}
"""

from __future__ import annotations

from dataclasses import replace

from deltalog.protocol.schema import DataType, DecimalType, PrimitiveType, StructField

__all__ = ["TYPE_CHANGES", "can_widen", "type_name", "widened"]

TYPE_CHANGES = "delta.typeChanges"
_INT_RANK = {"byte": 1, "short": 2, "integer": 3, "long": 4}
_INT_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 20}


def type_name(t: DataType) -> str:
    """The protocol's name of a primitive or decimal type.

    Example:
        >>> type_name(DecimalType(10, 2))
        'decimal(10,2)'
    """
    if isinstance(t, DecimalType):
        return f"decimal({t.precision},{t.scale})"
    assert isinstance(t, PrimitiveType)
    return t.name


def can_widen(old: DataType, new: DataType) -> bool:
    """True when a column of type ``old`` may become ``new`` by type widening (see the module docstring).

    Example:
        >>> can_widen(DecimalType(10, 2), DecimalType(12, 4)), can_widen(DecimalType(10, 2), DecimalType(12, 5))
        (True, False)
        >>> can_widen(PrimitiveType("date"), PrimitiveType("timestamp_ntz"))
        True
    """
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return (new.precision >= old.precision and new.scale >= old.scale
                and new.precision - new.scale >= old.precision - old.scale and new != old)
    if not isinstance(old, PrimitiveType):
        return False
    if isinstance(new, DecimalType):
        digits = _INT_DIGITS.get(old.name)
        return digits is not None and new.precision - new.scale >= digits
    if not isinstance(new, PrimitiveType):
        return False
    if old.name in _INT_RANK and new.name in _INT_RANK:
        return _INT_RANK[old.name] < _INT_RANK[new.name]
    if new.name == "double":
        return old.name in ("float", "byte", "short", "integer")
    return old.name == "date" and new.name == "timestamp_ntz"


def widened(field: StructField, new: DataType) -> StructField:
    """``field`` with type ``new`` and the change appended to its ``delta.typeChanges``.

    Example:
        >>> widened(StructField("x", PrimitiveType("float")), PrimitiveType("double")).type
        PrimitiveType(name='double')
    """
    changes = [*list(field.metadata.get(TYPE_CHANGES) or []),
               {"fromType": type_name(field.type), "toType": type_name(new)}]
    return replace(field, type=new, metadata={**field.metadata, TYPE_CHANGES: changes})
