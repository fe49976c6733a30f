"""MERGE's schema evolution, shared by the kernel's MERGE (``merge(..., merge_schema=True)``) and Spark's
(``withSchemaEvolution()``), as delta-spark evolves a target:

* with an ``update_all`` / ``insert_all`` clause (``UPDATE SET *`` / ``INSERT *``), every source column the
  target lacks is added (nullable, with its metadata, after the target's columns, in the source's order),
  and each target struct column gains the fields its source column of the same name has and it lacks, at
  any depth (inside arrays and maps too);
* otherwise only the source columns an explicit assignment names (``{"new_col": "source.new_col"}``) are
  added.

Target columns keep their types (source values are cast to them), unless the table enables type widening
(``delta.enableTypeWidening``): then a column whose source column is of a wider type it may widen to
(:func:`deltalog.protocol.type_widening.can_widen`) takes that type, recorded in ``delta.typeChanges``, as
delta-spark widens it.

Example:
    >>> import pyarrow as pa
    >>> target = StructType.from_arrow_schema(pa.schema([("id", pa.int64())]))
    >>> source = StructType.from_arrow_schema(pa.schema([("id", pa.int64()), ("v", pa.string())]))
    >>> evolved_schema(target, source, star=True, keys=()).field_names
    ['id', 'v']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from deltalog.protocol.schema import ArrayType, DataType, MapType, StructField, StructType
from deltalog.protocol.type_widening import can_widen, widened

__all__ = ["evolved_schema", "evolved_type"]


def evolved_type(target: DataType, source: DataType, *, widen: bool = False) -> DataType:
    """``target`` with the struct fields ``source`` has and it lacks, at any depth (structs inside arrays and
    maps too), nullable, after the target's fields in the source's order; other types stay the target's.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> t = StructType((StructField("a", PrimitiveType("long"), True, {}),))
        >>> s = StructType((StructField("b", PrimitiveType("string"), False, {}),))
        >>> evolved_type(t, s).field_names
        ['a', 'b']
    """
    if isinstance(target, ArrayType) and isinstance(source, ArrayType):
        return replace(target, element_type=evolved_type(target.element_type, source.element_type, widen=widen))
    if isinstance(target, MapType) and isinstance(source, MapType):
        return replace(target, key_type=evolved_type(target.key_type, source.key_type, widen=widen),
                       value_type=evolved_type(target.value_type, source.value_type, widen=widen))
    if not (isinstance(target, StructType) and isinstance(source, StructType)):
        return target
    by_name = {f.name.lower(): f for f in source.fields}
    fields = [_evolved_field(f, by_name.pop(f.name.lower(), None), widen) for f in target.fields]
    fields += [StructField(f.name, f.type, True, {}) for f in by_name.values()]
    return StructType(tuple(fields))


def _evolved_field(field: StructField, source: StructField | None, widen: bool) -> StructField:
    """``field`` evolved by the source's field of its name: a wider type where type widening allows it
    (recorded in ``delta.typeChanges``), else new nested fields."""
    if source is None:
        return field
    if widen and can_widen(field.type, source.type):
        return widened(field, source.type)
    return replace(field, type=evolved_type(field.type, source.type, widen=widen))


def evolved_schema(target: StructType, source: StructType, *, star: bool, keys: Iterable[str],
                   widen: bool = False) -> StructType:
    """The target schema after a MERGE's schema evolution (see the module docstring): ``star`` when the
    merge has an ``*_all`` clause, ``keys`` the target columns its explicit assignments name (unqualified),
    ``widen`` when the table enables type widening (``delta.enableTypeWidening``). Returns ``target`` itself
    when nothing changes.

    Example:
        >>> import pyarrow as pa
        >>> target = StructType.from_arrow_schema(pa.schema([("id", pa.int64())]))
        >>> source = StructType.from_arrow_schema(pa.schema([("id", pa.int64()), ("v", pa.string()),
        ...                                                  ("op", pa.string())]))
        >>> evolved_schema(target, source, star=False, keys=["v"]).field_names
        ['id', 'v']
    """
    known = {n.lower() for n in target.field_names}
    wanted = None if star else {k.lower() for k in keys}
    new = [replace(f, nullable=True) for f in source.fields
           if f.name.lower() not in known and (wanted is None or f.name.lower() in wanted)]
    by_name = {f.name.lower(): f for f in source.fields}
    kept = list(target.fields)
    if star:
        kept = [_evolved_field(f, by_name.get(f.name.lower()), widen) for f in kept]
    elif widen and wanted:  # an explicit assignment of the source column of its name may widen a column
        named = [by_name.get(f.name.lower()) if f.name.lower() in wanted else None for f in kept]
        kept = [widened(f, src.type) if src is not None and can_widen(f.type, src.type) else f
                for f, src in zip(kept, named, strict=True)]
    if not new and kept == list(target.fields):
        return target
    return StructType((*kept, *new))
