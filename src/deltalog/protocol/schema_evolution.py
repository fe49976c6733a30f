"""MERGE's schema evolution, shared by the kernel's MERGE (``merge(..., merge_schema=True)``) and Spark's
(``withSchemaEvolution()``), as delta-spark evolves a target:

* with an ``update_all`` / ``insert_all`` clause (``UPDATE SET *`` / ``INSERT *``), every source column the
  target lacks is added (nullable, with its metadata, after the target's columns, in the source's order),
  and each target struct column gains the fields its source column of the same name has and it lacks, at
  any depth (inside arrays and maps too);
* otherwise only the source columns an explicit assignment names (``{"new_col": "source.new_col"}``) are
  added.

Target columns keep their types: source values are cast to them.

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

__all__ = ["evolved_schema", "evolved_type"]


def evolved_type(target: DataType, source: DataType) -> DataType:
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
        return replace(target, element_type=evolved_type(target.element_type, source.element_type))
    if isinstance(target, MapType) and isinstance(source, MapType):
        return replace(target, key_type=evolved_type(target.key_type, source.key_type),
                       value_type=evolved_type(target.value_type, source.value_type))
    if not (isinstance(target, StructType) and isinstance(source, StructType)):
        return target
    by_name = {f.name.lower(): f for f in source.fields}
    fields = []
    for f in target.fields:
        match = by_name.pop(f.name.lower(), None)
        fields.append(f if match is None else replace(f, type=evolved_type(f.type, match.type)))
    fields += [StructField(f.name, f.type, True, {}) for f in by_name.values()]
    return StructType(tuple(fields))


def evolved_schema(target: StructType, source: StructType, *, star: bool, keys: Iterable[str]) -> StructType:
    """The target schema after a MERGE's schema evolution (see the module docstring): ``star`` when the
    merge has an ``*_all`` clause, ``keys`` the target columns its explicit assignments name (unqualified).
    Returns ``target`` itself when nothing changes.

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
    kept = list(target.fields)
    if star:
        by_name = {f.name.lower(): f for f in source.fields}
        kept = [f if f.name.lower() not in by_name else
                replace(f, type=evolved_type(f.type, by_name[f.name.lower()].type)) for f in kept]
    if not new and kept == list(target.fields):
        return target
    return StructType((*kept, *new))
