"""MERGE's schema evolution (``withSchemaEvolution()`` / ``spark.databricks.delta.schema.autoMerge.enabled``):
the source columns the target gains (:func:`new_columns`), the fields its struct columns gain
(:func:`evolved_structs`), and target values read in the old struct type widened to the new one
(:func:`widened_struct`).

Example:
    >>> new_columns(snap.schema, source, star=True, keys=[], alias=None)             # doctest: +SKIP
    [StructField(name='extra', ...)]
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from deltalog.protocol.schema import ArrayType, DataType, MapType, StructField, StructType, parse_schema
from deltalog.spark._common import spark_type

__all__ = ["evolved_structs", "new_columns", "widened_struct"]

DataFrame = Any
Column = Any


def new_columns(target: StructType, source: DataFrame, *, star: bool, keys: Iterable[Any],
                alias: str | None) -> list[StructField]:
    """Source columns schema evolution adds to the target, in the source's order: every source column the
    target lacks when a ``*`` clause exists (``star``), else those that an explicit ``set`` / ``values`` key
    (``keys``) names (``new_col`` or ``t.new_col``), as delta-spark does.

    Example:
        >>> new_columns(snap.schema, source, star=True, keys=[], alias="t")           # doctest: +SKIP
        [StructField(name='extra', ...)]
    """
    known = {n.lower() for n in target.field_names}
    wanted: set[str] | None = None
    if not star:
        wanted = set()
        for key in keys:
            name = key.lower() if isinstance(key, str) else ""
            if alias and name.startswith(alias.lower() + "."):
                name = name[len(alias) + 1:]
            wanted.add(name)
    extra = [f for f in source.schema.fields
             if f.name.lower() not in known and (wanted is None or f.name.lower() in wanted)]
    if not extra:
        return []
    fields = []
    for f in extra:
        node = f.jsonValue()
        node["nullable"] = True
        fields.append(node)
    return list(parse_schema(json.dumps({"type": "struct", "fields": fields})).fields)


def _evolved_type(target: DataType, source: DataType) -> DataType:
    """``target`` with the fields ``source`` has and it lacks, at any depth of structs, including structs
    inside arrays and maps (nullable, in the source's order after the target's); other types stay the
    target's."""
    if isinstance(target, ArrayType) and isinstance(source, ArrayType):
        return replace(target, element_type=_evolved_type(target.element_type, source.element_type))
    if isinstance(target, MapType) and isinstance(source, MapType):
        return replace(target, key_type=_evolved_type(target.key_type, source.key_type),
                       value_type=_evolved_type(target.value_type, source.value_type))
    if not (isinstance(target, StructType) and isinstance(source, StructType)):
        return target
    by_name = {f.name.lower(): f for f in source.fields}
    fields = []
    for f in target.fields:
        match = by_name.pop(f.name.lower(), None)
        fields.append(f if match is None else replace(f, type=_evolved_type(f.type, match.type)))
    fields += [StructField(f.name, f.type, True, {}) for f in by_name.values()]
    return StructType(tuple(fields))


def evolved_structs(target: StructType, source: DataFrame) -> list[StructField]:
    """Schema evolution inside struct columns (``UPDATE SET *`` / ``INSERT *``, as delta-spark): each target
    struct column gains the fields the source column of the same name has and it lacks.

    Example:
        >>> [f.type.simpleString() for f in evolved_structs(snap.schema, source)]     # doctest: +SKIP
        ['long', 'struct<a:int,b:string>']
    """
    src = parse_schema(json.dumps({"type": "struct", "fields": [f.jsonValue() for f in source.schema.fields]}))
    by_name = {f.name.lower(): f for f in src.fields}
    out = []
    for f in target.fields:
        match = by_name.get(f.name.lower())
        out.append(f if match is None else replace(f, type=_evolved_type(f.type, match.type)))
    return out


def widened_struct(col: Column, old: DataType, new: DataType) -> Column:
    """A value of type ``old`` as type ``new``, whose structs have more fields (at any depth, in arrays and
    maps too): the new fields are null, a null struct stays null.

    Example:
        >>> widened_struct(F.col("s"), old_type, new_type)                              # doctest: +SKIP
        Column<'CASE WHEN (s IS NULL) THEN NULL ELSE struct(s.a AS a, NULL AS b) END'>
    """
    from pyspark.sql import functions as F

    if old == new:
        return col
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return F.transform(col, lambda e: widened_struct(e, old.element_type, new.element_type))
    if isinstance(old, MapType) and isinstance(new, MapType):
        out = col
        if old.key_type != new.key_type:
            out = F.transform_keys(out, lambda k, _v: widened_struct(k, old.key_type, new.key_type))
        if old.value_type != new.value_type:
            out = F.transform_values(out, lambda _k, v: widened_struct(v, old.value_type, new.value_type))
        return out
    if not (isinstance(old, StructType) and isinstance(new, StructType)):
        return col
    have = {f.name.lower(): f for f in old.fields}
    parts = []
    for f in new.fields:
        was = have.get(f.name.lower())
        if was is None:
            parts.append(F.lit(None).cast(spark_type(f.type)).alias(f.name))
        else:
            parts.append(widened_struct(col.getField(was.name), was.type, f.type).alias(f.name))
    return F.when(col.isNull(), F.lit(None).cast(spark_type(new))).otherwise(F.struct(*parts))
