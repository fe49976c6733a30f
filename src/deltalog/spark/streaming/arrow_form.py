"""Kernel rows in the Arrow form PySpark wants a Python streaming source's batches in.

The kernel reads a ``geometry`` / ``geography`` column as GeoArrow WKB (``geoarrow.wkb`` over ``binary``,
:class:`~deltalog.protocol.geospatial.GeoArrowWKB`); PySpark (4.2+) takes ``GeometryType`` /
``GeographyType`` from Arrow as ``struct<srid: int32, wkb: binary>``, the ``wkb`` child marked ``geometry`` or
``geography`` with its SRID. No Arrow cast turns one into the other, so :func:`spark_arrow_table` builds those
structs (at any depth: in structs, lists and maps) and casts every other column as before.

Example:
    >>> spark_arrow_table(pa.table({"id": [1]}), pa.schema([("id", pa.int64())])).schema
    id: int64
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from deltalog.protocol.geospatial import wkb_storage

__all__ = ["spark_arrow_table"]


def _geo_srid(at: pa.DataType) -> int | None:
    """The SRID of PySpark's Arrow form of a geometry / geography (``struct<srid, wkb>``), None for other types."""
    if not pa.types.is_struct(at) or at.get_field_index("srid") < 0 or at.get_field_index("wkb") < 0:
        return None
    marks = at.field("wkb").metadata or {}
    if marks.get(b"geometry") != b"true" and marks.get(b"geography") != b"true":
        return None
    return int(marks.get(b"srid", b"0"))


def _holds_geo(at: pa.DataType) -> bool:
    if _geo_srid(at) is not None:
        return True
    if pa.types.is_struct(at):
        return any(_holds_geo(at.field(i).type) for i in range(at.num_fields))
    if pa.types.is_map(at):
        return _holds_geo(at.key_type) or _holds_geo(at.item_type)
    if pa.types.is_list(at) or pa.types.is_large_list(at):
        return _holds_geo(at.value_type)
    return False


def _column(arr: Any, target: pa.DataType, path: str) -> Any:
    """One column (or nested value array) ``arr`` in the Arrow type ``target``."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([_column(c, target, path) for c in arr.chunks], target)
    if not _holds_geo(target):
        return arr.cast(target)
    srid = _geo_srid(target)
    if srid is not None:
        wkb = wkb_storage(arr, path)
        values = wkb.fill_null(pa.scalar(b"", pa.binary())) if wkb.null_count else wkb
        return pa.StructArray.from_arrays([pa.repeat(pa.scalar(srid, pa.int32()), len(wkb)), values],
                                          fields=list(target), mask=wkb.is_null() if wkb.null_count else None)
    nulls = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(target):
        children = [_column(arr.field(i), target.field(i).type, f"{path}.{target.field(i).name}")
                    for i in range(target.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=nulls)
    if pa.types.is_map(target):
        keys = _column(arr.keys, target.key_type, f"{path}.key")
        items = _column(arr.items, target.item_type, f"{path}.value")
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=nulls)
    values = _column(arr.values, target.value_type, f"{path}.element")
    kind = pa.LargeListArray if pa.types.is_large_list(target) else pa.ListArray
    return kind.from_arrays(arr.offsets, values, type=target, mask=nulls)


def spark_arrow_table(rows: pa.Table, target: pa.Schema) -> pa.Table:
    """``rows`` (the kernel's, with the columns of ``target`` in its order) in the Arrow schema ``target`` that
    PySpark derived from the stream's Spark schema: geospatial values as PySpark's ``struct<srid, wkb>``, every
    other column cast.

    Example:
        >>> spark_arrow_table(pa.table({"t": pa.array([1], pa.int32())}), pa.schema([("t", pa.int64())]))["t"].type
        DataType(int64)
    """
    if not any(_holds_geo(f.type) for f in target):
        return rows.cast(target)
    columns = [_column(rows.column(i), f.type, f.name) for i, f in enumerate(target)]
    return pa.Table.from_arrays(columns, schema=target)
