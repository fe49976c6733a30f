"""MERGE's schema evolution (``withSchemaEvolution()`` / ``spark.databricks.delta.schema.autoMerge.enabled``):
the target's evolved schema for a source DataFrame (:func:`evolved_target`, the kernel's rules), and target
values read in the old struct type widened to the new one (:func:`widened_struct`).

Example:
    >>> evolved_target(snap.schema, source, star=True, keys=[], alias=None).field_names  # doctest: +SKIP
    ['id', 'v', 'extra']
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from deltalog.protocol.schema import ArrayType, DataType, MapType, StructType, parse_schema
from deltalog.protocol.schema_evolution import evolved_schema
from deltalog.spark.common.core import spark_type

__all__ = ["evolved_target", "widened_struct"]

DataFrame = Any
Column = Any


def evolved_target(target: StructType, source: DataFrame, *, star: bool, keys: Iterable[Any],
                   alias: str | None, widen: bool = False) -> StructType:
    """The target schema after schema evolution (:func:`deltalog.protocol.schema_evolution.evolved_schema`):
    with a ``*`` clause (``star``) every source column the target lacks and the fields its struct columns
    lack, else the source columns an explicit ``set`` / ``values`` key (``keys``: ``new_col`` or
    ``t.new_col``) names, as delta-spark does; with ``widen`` (type widening enabled) wider source types widen
    the target's columns. ``target`` itself when nothing changes.

    Example:
        >>> evolved_target(snap.schema, source, star=True, keys=[], alias="t").field_names  # doctest: +SKIP
        ['id', 'v', 'extra']
    """
    names = []
    for key in keys:
        name = key if isinstance(key, str) else ""
        if alias and name.lower().startswith(alias.lower() + "."):
            name = name[len(alias) + 1:]
        names.append(name)
    src = parse_schema(json.dumps({"type": "struct", "fields": [f.jsonValue() for f in source.schema.fields]}))
    return evolved_schema(target, src, star=star, keys=names, widen=widen)


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
