"""A Delta schema as an Iceberg schema: field ids from column mapping, the name mapping of the physical
(parquet) column names, and the identity partition spec of the partition columns.

Field ids are the column-mapping ids (``delta.columnMapping.id``); list elements and map keys and values
take theirs from ``delta.columnMapping.nested.ids`` of the nearest enclosing field (keys such as
``col-1.element``, ``col-2.key``, ``col-2.value.element``) and, where that has none, fresh ids above every
id of the schema, in the order the schema lists them, so the same schema always gets the same ids.

Example:
    >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
    >>> f = StructField("id", PrimitiveType("long"), True,
    ...                 {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-a"})
    >>> conf = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "1"}
    >>> converted = convert_schema(StructType((f,)), conf, table="t")
    >>> converted.schema.find_field(1).name, converted.physical_paths[1]
    ('id', ('col-a',))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.name_mapping import MappedField, NameMapping
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)
from pyiceberg.types import DecimalType as IcebergDecimal

from deltalog.errors import UnsupportedFeatureError
from deltalog.protocol import schema as ds
from deltalog.protocol.schema import COLUMN_MAPPING_NESTED_IDS_KEY, field_id, physical_name

__all__ = ["PARTITION_FIELD_START", "ConvertedSchema", "convert_schema", "partition_spec"]

#: Iceberg's first partition field id.
PARTITION_FIELD_START = 1000

_PRIMITIVES: dict[str, IcebergType] = {
    "boolean": BooleanType(),
    "byte": IntegerType(),
    "short": IntegerType(),
    "integer": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "date": DateType(),
    "timestamp": TimestamptzType(),
    "timestamp_ntz": TimestampType(),
    "string": StringType(),
    "binary": BinaryType(),
}


@dataclass
class ConvertedSchema:
    """The Iceberg schema of a Delta schema, with what the data-file conversion needs.

    ``leaves``: field id -> Iceberg primitive type of every primitive column that is not inside a list or a
    map (their statistics are per row); ``physical_paths``: field id -> physical path of such a column
    (the keys of Delta's statistics); ``name_mapping``: physical parquet names -> field ids.
    """

    schema: Schema
    name_mapping: NameMapping
    last_column_id: int
    leaves: dict[int, PrimitiveType] = field(default_factory=dict)
    physical_paths: dict[int, tuple[str, ...]] = field(default_factory=dict)
    top_level: dict[str, int] = field(default_factory=dict)  # logical top-level name -> field id
    top_level_physical: dict[str, str] = field(default_factory=dict)  # logical name -> physical name


class _Builder:
    def __init__(self, mode: str, next_id: int, table: str) -> None:
        self.mode = mode
        self.next_id = next_id
        self.table = table
        self.leaves: dict[int, PrimitiveType] = {}
        self.paths: dict[int, tuple[str, ...]] = {}
        self.max_id = next_id - 1

    def fresh(self) -> int:
        out = self.next_id
        self.next_id += 1
        self.max_id = max(self.max_id, out)
        return out

    def struct(
        self, struct: ds.StructType, path: tuple[str, ...], per_row: bool
    ) -> tuple[list[NestedField], list[MappedField]]:
        fields, mapped = [], []
        for f in struct.fields:
            fid = field_id(f)
            if fid is None:
                raise UnsupportedFeatureError(
                    f"column {'.'.join((*path, f.name))!r} has no column-mapping id: Iceberg metadata needs "
                    "column mapping (set 'delta.columnMapping.mode' = 'name' on the table)",
                    table=self.table, feature="icebergCompatV2",
                )
            self.max_id = max(self.max_id, fid)
            phys = physical_name(f, self.mode)
            nested = f.metadata.get(COLUMN_MAPPING_NESTED_IDS_KEY) or {}
            itype, children = self.type(f.type, (*path, phys), per_row, nested, phys, fid)
            fields.append(NestedField(fid, f.name, itype, required=not f.nullable, doc=_comment(f)))
            mapped.append(_mapped(field_id=fid, names=[phys], fields=children))
        return fields, mapped

    def nested_id(self, ids: Mapping[str, Any], key: str) -> int:
        raw = ids.get(key)
        if isinstance(raw, int) and not isinstance(raw, bool):
            self.max_id = max(self.max_id, raw)
            return raw
        return self.fresh()

    def type(
        self, dtype: ds.DataType, path: tuple[str, ...], per_row: bool, nested: Mapping[str, Any], key: str,
        fid: int,
    ) -> tuple[IcebergType, list[MappedField]]:
        if isinstance(dtype, ds.DecimalType):
            prim: PrimitiveType = IcebergDecimal(dtype.precision, dtype.scale)
            if per_row:
                self.leaves[fid], self.paths[fid] = prim, path
            return prim, []
        if isinstance(dtype, ds.PrimitiveType):
            found = _PRIMITIVES.get(dtype.name)
            if found is None:
                raise UnsupportedFeatureError(
                    f"column {'.'.join(path)!r} has type {dtype.name}, which Iceberg cannot hold; UniForm "
                    "(Iceberg) needs a table without such columns", table=self.table, feature="icebergCompatV2",
                )
            assert isinstance(found, PrimitiveType)
            if per_row:
                self.leaves[fid], self.paths[fid] = found, path
            return found, []
        if isinstance(dtype, ds.StructType):
            fields, mapped = self.struct(dtype, path, per_row)
            return StructType(*fields), mapped
        if isinstance(dtype, ds.ArrayType):
            eid = self.nested_id(nested, f"{key}.element")
            etype, emapped = self.type(dtype.element_type, (*path, "element"), False, nested, f"{key}.element", eid)
            mapping = [_mapped(field_id=eid, names=["element", "item"], fields=emapped)]
            return ListType(eid, etype, element_required=not dtype.contains_null), mapping
        if isinstance(dtype, ds.MapType):
            kid = self.nested_id(nested, f"{key}.key")
            vid = self.nested_id(nested, f"{key}.value")
            ktype, kmapped = self.type(dtype.key_type, (*path, "key"), False, nested, f"{key}.key", kid)
            vtype, vmapped = self.type(dtype.value_type, (*path, "value"), False, nested, f"{key}.value", vid)
            mapping = [_mapped(field_id=kid, names=["key"], fields=kmapped),
                       _mapped(field_id=vid, names=["value"], fields=vmapped)]
            return MapType(kid, ktype, vid, vtype, value_required=not dtype.value_contains_null), mapping
        raise UnsupportedFeatureError(f"column {'.'.join(path)!r}: unsupported type {dtype!r}", table=self.table,
                                      feature="icebergCompatV2")


def _mapped(*, field_id: int, names: list[str], fields: list[MappedField]) -> MappedField:
    return MappedField.model_validate({"field-id": field_id, "names": names, "fields": fields})


def _comment(f: ds.StructField) -> str | None:
    c = f.metadata.get("comment")
    return c if isinstance(c, str) else None


def _max_nested(dtype: ds.DataType) -> int:
    best = 0
    if isinstance(dtype, ds.StructType):
        for f in dtype.fields:
            best = max(best, field_id(f) or 0, _max_nested(f.type))
            for v in (f.metadata.get(COLUMN_MAPPING_NESTED_IDS_KEY) or {}).values():
                if isinstance(v, int) and not isinstance(v, bool):
                    best = max(best, v)
    elif isinstance(dtype, ds.ArrayType):
        best = _max_nested(dtype.element_type)
    elif isinstance(dtype, ds.MapType):
        best = max(_max_nested(dtype.key_type), _max_nested(dtype.value_type))
    return best


def convert_schema(
    schema: ds.StructType, configuration: Mapping[str, str], *, table: str, schema_id: int = 0
) -> ConvertedSchema:
    """The Iceberg schema (ids as described in the module docstring), the name mapping of the physical column
    names and the statistics lookup of a Delta schema; raises :class:`UnsupportedFeatureError` for a column
    without a column-mapping id or of a type Iceberg has not (variant, geometry, void).

    Example:
        >>> convert_schema(snap.schema, snap.properties, table=snap.table).schema.highest_field_id  # doctest: +SKIP
        3
    """
    mode = (configuration.get("delta.columnMapping.mode") or "none").lower()
    if mode == "none":
        raise UnsupportedFeatureError(
            "UniForm (Iceberg) needs column mapping: set 'delta.columnMapping.mode' = 'name' (REORG TABLE ... "
            "APPLY (UPGRADE UNIFORM ...) does it for an existing table)", table=table, feature="icebergCompatV2",
        )
    try:
        configured = int(configuration.get("delta.columnMapping.maxColumnId", "0"))
    except ValueError:
        configured = 0
    start = max(configured, _max_nested(schema)) + 1
    b = _Builder(mode, start, table)
    fields, mapped = b.struct(schema, (), True)
    iceberg = Schema(*fields, schema_id=schema_id)
    out = ConvertedSchema(iceberg, NameMapping(mapped), max(b.max_id, start - 1), b.leaves, b.paths)
    for f in schema.fields:
        fid = field_id(f)
        assert fid is not None
        out.top_level[f.name] = fid
        out.top_level_physical[f.name] = physical_name(f, mode)
    return out


def same_schema(a: Schema, b: Schema) -> bool:
    """Whether two Iceberg schemas have the same fields (ids, names, types, optionality), ignoring schema ids.

    Example:
        >>> same_schema(Schema(schema_id=0), Schema(schema_id=3))
        True
    """
    return a.as_struct() == b.as_struct() and a.identifier_field_ids == b.identifier_field_ids


def partition_spec(
    partition_columns: Sequence[str], converted: ConvertedSchema, existing: Sequence[PartitionSpec],
    last_partition_id: int | None, *, table: str,
) -> tuple[PartitionSpec, bool]:
    """The identity partition spec of ``partition_columns``: an ``existing`` spec on the same source columns
    when there is one (``False``), else a new one whose field ids follow ``last_partition_id`` (``True``).

    Example:
        >>> spec, new = partition_spec([], converted, [], None, table="t")   # doctest: +SKIP
        >>> spec.is_unpartitioned(), new                                     # doctest: +SKIP
        (True, True)
    """
    sources = []
    for name in partition_columns:
        fid = converted.top_level.get(name)
        if fid is None:
            raise UnsupportedFeatureError(f"partition column {name!r} is not in the schema", table=table,
                                          feature="icebergCompatV2")
        sources.append((fid, name))
    for spec in existing:
        if [(f.source_id, str(f.transform)) for f in spec.fields] == [(s, "identity") for s, _ in sources]:
            return spec, False
    next_field = max(last_partition_id if last_partition_id is not None else PARTITION_FIELD_START - 1,
                     PARTITION_FIELD_START - 1) + 1
    spec_id = max((s.spec_id for s in existing), default=-1) + 1
    fields = [PartitionField(source_id=s, field_id=next_field + i, transform=IdentityTransform(), name=n)
              for i, (s, n) in enumerate(sources)]
    return PartitionSpec(*fields, spec_id=spec_id), True
