"""Column mapping (``delta.columnMapping.mode`` = ``name`` / ``id``): assigning column ids and physical
names, and the physical view of a schema that data files, statistics and partition values use.

With column mapping on, every field (nested struct fields included) carries ``delta.columnMapping.id``
(unique, at most ``delta.columnMapping.maxColumnId``) and ``delta.columnMapping.physicalName``. New
tables and new columns get ``col-<uuid>`` physical names; a table switched from ``none`` to ``name``
keeps its existing columns' names as their physical names (its data files already use them), as
delta-spark does. Renaming or dropping a column then changes only the schema: data files keep the
physical names.

Example:
    >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
    >>> schema = StructType((StructField("a", PrimitiveType("long")),))
    >>> new, conf = assign_column_mapping(schema, {"delta.columnMapping.mode": "name"}, previous=None)
    >>> new.fields[0].metadata["delta.columnMapping.id"], conf["delta.columnMapping.maxColumnId"]
    (1, '1')
    >>> new.fields[0].metadata["delta.columnMapping.physicalName"].startswith("col-")
    True
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any

from deltalog.errors import UnsupportedFeatureError
from deltalog.protocol.actions import Metadata
from deltalog.protocol.iceberg_compat import assign_nested_ids, compat_version, prepare_metadata
from deltalog.protocol.schema import (
    COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    field_id,
    parse_schema,
)

__all__ = [
    "MAX_COLUMN_ID_KEY",
    "MODE_KEY",
    "assign_column_mapping",
    "mapping_mode",
    "physical_schema",
    "with_column_mapping",
]

MODE_KEY = "delta.columnMapping.mode"
MAX_COLUMN_ID_KEY = "delta.columnMapping.maxColumnId"


def mapping_mode(configuration: Mapping[str, str] | None) -> str:
    """The table's column mapping mode, lower case (``none`` when unset).

    Example:
        >>> mapping_mode({"delta.columnMapping.mode": "Name"}), mapping_mode(None)
        ('name', 'none')
    """
    return str((configuration or {}).get(MODE_KEY, "none") or "none").lower()


def _max_id(dtype: DataType) -> int:
    best = 0
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            best = max(best, field_id(f) or 0, _max_id(f.type))
    elif isinstance(dtype, ArrayType):
        best = _max_id(dtype.element_type)
    elif isinstance(dtype, MapType):
        best = max(_max_id(dtype.key_type), _max_id(dtype.value_type))
    return best


def _names(dtype: DataType, prefix: str = "") -> set[str]:
    """Dotted paths of every struct field (through arrays and maps) of ``dtype``."""
    out: set[str] = set()
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            path = f"{prefix}{f.name}".lower()
            out.add(path)
            out |= _names(f.type, path + ".")
    elif isinstance(dtype, ArrayType):
        out |= _names(dtype.element_type, prefix + "element.")
    elif isinstance(dtype, MapType):
        out |= _names(dtype.key_type, prefix + "key.") | _names(dtype.value_type, prefix + "value.")
    return out


class _Assigner:
    def __init__(self, start: int, keep_names: set[str]) -> None:
        self.next_id = start
        self.keep_names = keep_names

    def struct(self, struct: StructType, prefix: str) -> StructType:
        return StructType(tuple(self.field(f, prefix) for f in struct.fields))

    def field(self, f: StructField, prefix: str) -> StructField:
        path = f"{prefix}{f.name}".lower()
        meta: dict[str, Any] = dict(f.metadata)
        if meta.get(COLUMN_MAPPING_ID_KEY) is None:
            self.next_id += 1
            meta[COLUMN_MAPPING_ID_KEY] = self.next_id
        if not meta.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY):
            meta[COLUMN_MAPPING_PHYSICAL_NAME_KEY] = f.name if path in self.keep_names else f"col-{uuid.uuid4()}"
        return dataclasses.replace(f, type=self.type(f.type, path + "."), metadata=meta)

    def type(self, dtype: DataType, prefix: str) -> DataType:
        if isinstance(dtype, StructType):
            return self.struct(dtype, prefix)
        if isinstance(dtype, ArrayType):
            return dataclasses.replace(dtype, element_type=self.type(dtype.element_type, prefix + "element."))
        if isinstance(dtype, MapType):
            return dataclasses.replace(dtype, key_type=self.type(dtype.key_type, prefix + "key."),
                                       value_type=self.type(dtype.value_type, prefix + "value."))
        return dtype


def assign_column_mapping(
    schema: StructType, configuration: Mapping[str, str], *, previous: Metadata | None, table: str | None = None
) -> tuple[StructType, dict[str, str]]:
    """``schema`` with an id and a physical name on every field that lacks them, and ``configuration`` with
    ``delta.columnMapping.maxColumnId`` raised to match; unchanged when the mode is ``none``. ``previous``
    is the table's metadata before this change (``None`` for a new table): switching it from ``none`` to
    ``name`` keeps the existing columns' names as physical names; switching to ``id`` is refused (data
    files written without ids could not be read by id), as delta-spark refuses it.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
        >>> from deltalog.protocol.actions import Format
        >>> old = Metadata(id="t", format=Format(), schemaString='{"type":"struct","fields":[]}')
        >>> s = StructType((StructField("a", PrimitiveType("long")),))
        >>> new, _ = assign_column_mapping(s, {"delta.columnMapping.mode": "name"}, previous=old)
        >>> new.fields[0].metadata["delta.columnMapping.physicalName"].startswith("col-")  # not in the old schema
        True
    """
    mode = mapping_mode(configuration)
    conf = dict(configuration)
    if mode == "none":
        return schema, conf
    keep: set[str] = set()
    if previous is not None and mapping_mode(previous.configuration) == "none":
        if mode == "id" and previous.schemaString and parse_schema(previous.schemaString).fields:
            raise UnsupportedFeatureError(
                "[DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE] changing delta.columnMapping.mode from 'none' to "
                "'id' is not supported (existing data files have no field ids); use 'name'",
                feature="columnMapping", table=table)
        keep = _names(parse_schema(previous.schemaString)) if previous.schemaString else set()
    try:
        start = max(int(conf.get(MAX_COLUMN_ID_KEY) or 0), _max_id(schema))
    except ValueError:
        start = _max_id(schema)
    assigner = _Assigner(start, keep)
    new = assigner.struct(schema, "")
    conf[MAX_COLUMN_ID_KEY] = str(assigner.next_id)
    return new, conf


def with_column_mapping(metadata: Metadata, previous: Metadata | None, *, table: str | None = None,
                        replacing: bool = False) -> Metadata:
    """:func:`assign_column_mapping` applied to a metadata action (the same object when nothing changes),
    after what Iceberg compatibility implies (:func:`deltalog.protocol.iceberg_compat.prepare_metadata`:
    column mapping ``name`` on a new compat table, ...) and, on ``icebergCompatV2`` tables, with the ids of
    list elements and map keys and values (:func:`~deltalog.protocol.iceberg_compat.assign_nested_ids`).
    ``replacing``: a ``REPLACE TABLE`` / ``CREATE OR REPLACE``, which Iceberg compatibility treats as a new
    table (column mapping ``name`` set when the new properties do not choose).

    Example:
        >>> from deltalog.protocol.actions import Format
        >>> md = Metadata(id="t", format=Format(), schemaString='{"type":"struct","fields":[]}')
        >>> with_column_mapping(md, None) is md
        True
    """
    metadata = prepare_metadata(metadata, None if replacing else previous, table=table)  # Iceberg compatibility
    if mapping_mode(metadata.configuration) == "none" or not metadata.schemaString:
        return metadata
    schema, conf = assign_column_mapping(parse_schema(metadata.schemaString), metadata.configuration,
                                         previous=previous, table=table)
    text = schema.to_json()
    if text != metadata.schemaString or conf != dict(metadata.configuration):
        metadata = dataclasses.replace(metadata, schemaString=text, configuration=conf)
    if compat_version(metadata.configuration) == 2:  # ids of list elements and map keys / values
        metadata = assign_nested_ids(metadata)
    return metadata


def physical_schema(schema: StructType, mode: str) -> StructType:
    """``schema`` with every field named by its physical name (the names in data files and statistics).

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
        >>> s = StructType((StructField("a", PrimitiveType("long"), True,
        ...     {"delta.columnMapping.physicalName": "col-a"}),))
        >>> physical_schema(s, "name").field_names
        ['col-a']
    """
    if mode == "none":
        return schema

    def rename(dtype: DataType) -> DataType:
        if isinstance(dtype, StructType):
            return StructType(tuple(
                dataclasses.replace(f, name=str(f.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY) or f.name),
                                    type=rename(f.type))
                for f in dtype.fields))
        if isinstance(dtype, ArrayType):
            return dataclasses.replace(dtype, element_type=rename(dtype.element_type))
        if isinstance(dtype, MapType):
            return dataclasses.replace(dtype, key_type=rename(dtype.key_type), value_type=rename(dtype.value_type))
        return dtype

    out = rename(schema)
    assert isinstance(out, StructType)
    return out
