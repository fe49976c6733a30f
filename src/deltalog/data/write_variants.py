"""Variant columns made ready for the parquet writer.

A variant is stored unshredded: a struct of non-nullable ``value`` and ``metadata`` binaries. Arrow data
coming from Spark (``mapInArrow``) or from a parquet read can hold null variants whose child slots are
null too; the parquet writer refuses those for non-nullable children even though the parent masks them.
:func:`fill_variant_slots` puts empty binaries in those slots (they stay hidden by the null parent), at
any depth (struct fields, list elements, map values).

Example:
    >>> import pyarrow as pa
    >>> from deltalog.protocol.schema import VARIANT, to_arrow_type
    >>> t = to_arrow_type(VARIANT)
    >>> raw = pa.StructArray.from_arrays([pa.array([b"\\x0c\\x01", None]), pa.array([b"\\x01\\x00\\x00", None])],
    ...                                  fields=list(t), mask=pa.array([False, True]))
    >>> fill_variant_slots(raw, VARIANT).field("value").null_count
    0
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.protocol.schema import VARIANT, ArrayType, DataType, MapType, StructType, contains_variant

__all__ = ["fill_variant_slots", "fill_variant_table"]


def fill_variant_slots(arr: Any, dt: DataType) -> Any:
    """``arr`` (an Arrow array of Delta type ``dt``) with the child slots of null variants filled."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([fill_variant_slots(c, dt) for c in arr.chunks], type=arr.type)
    if not contains_variant(dt) or len(arr) == 0:
        return arr
    mask = arr.is_null() if arr.null_count else None
    if dt == VARIANT:
        kids = [arr.field(i) for i in range(arr.type.num_fields)]
        if not any(k.null_count for k in kids):
            return arr
        kids = [pc.fill_null(k, pa.scalar(b"", k.type)) for k in kids]
        return pa.StructArray.from_arrays(kids, fields=list(arr.type), mask=mask)
    if isinstance(dt, StructType):
        kids = [fill_variant_slots(arr.field(i), f.type) for i, f in enumerate(dt.fields)]
        return pa.StructArray.from_arrays(kids, fields=list(arr.type), mask=mask)
    if isinstance(dt, ArrayType):
        values = fill_variant_slots(arr.values, dt.element_type)
        return type(arr).from_arrays(arr.offsets, values, type=arr.type, mask=mask)
    if isinstance(dt, MapType):
        items = fill_variant_slots(arr.items, dt.value_type)
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, items, type=arr.type, mask=mask)
    return arr


def fill_variant_table(data: pa.Table, schema: StructType) -> pa.Table:
    """:func:`fill_variant_slots` for every column of ``data`` (in the order of ``schema``'s fields) that
    holds variants; ``data`` itself when none does.

    Example:
        >>> fill_variant_table(pa.table({"x": [1]}), StructType(())).num_rows
        1
    """
    fields = [f for f in schema.fields if contains_variant(f.type)]
    if not fields:
        return data
    for f in fields:
        i = data.schema.get_field_index(f.name)
        data = data.set_column(i, data.schema.field(i), fill_variant_slots(data.column(i), f.type))
    return data
