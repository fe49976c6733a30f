"""Iceberg compatibility (``icebergCompatV1`` / ``icebergCompatV2``) and UniForm's
``delta.universalFormat.enabledFormats``: the table properties, and the pure rules on a table's metadata.

A table is *Iceberg compatible* when ``delta.enableIcebergCompatV2`` (or ``V1``, for tables that already use
it) is ``true``. Its writers then keep the rules of the protocol's "Iceberg Compatibility" sections: column
mapping (``name`` is set when a new table does not choose), only types Iceberg holds, no deletion vectors,
``numRecords`` on every add, partition values materialised in the data files, a parquet field id on every
field -- the ids of list elements and map keys and values kept in the field metadata
``delta.columnMapping.nested.ids`` (as delta-spark keeps them), keyed by the physical name of the nearest
struct field -- and the tag ``ICEBERG_COMPAT_VERSION`` on every file they add. UniForm
(``enabledFormats`` holding ``iceberg``) needs a compat version enabled; turning the compat version off
takes ``iceberg`` out of ``enabledFormats``, as delta-spark does.

:func:`prepare_metadata` applies what a metadata change implies (it is called before column ids are
assigned); :func:`assign_nested_ids` gives list elements and map keys/values their ids. The commit-time
checks that need the protocol, the live files or the staged adds are in :mod:`deltalog.txn.iceberg_compat`.

Example:
    >>> from deltalog.protocol.actions import Format, Metadata
    >>> md = Metadata(id="t", format=Format(), schemaString='{"type":"struct","fields":[]}',
    ...               configuration={"delta.enableIcebergCompatV2": "true"})
    >>> compat_version(md.configuration)
    2
    >>> prepare_metadata(md, None).configuration["delta.columnMapping.mode"]   # set on a new table
    'name'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from deltalog.errors import IcebergCompatError, UnsupportedFeatureError
from deltalog.protocol.actions import Metadata
from deltalog.protocol.schema import (
    COLUMN_MAPPING_NESTED_IDS_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    parse_schema,
    type_string,
)

__all__ = [
    "COMPAT_KEYS",
    "ENABLED_FORMATS_KEY",
    "TAG",
    "IcebergCompatError",
    "assign_nested_ids",
    "compat_error",
    "compat_version",
    "enabled_formats",
    "enabled_versions",
    "prepare_metadata",
    "unsupported_type",
    "unsupported_widening",
]

#: The property enabling each compat version.
COMPAT_KEYS = {1: "delta.enableIcebergCompatV1", 2: "delta.enableIcebergCompatV2"}
ENABLED_FORMATS_KEY = "delta.universalFormat.enabledFormats"
#: The ``add`` tag naming the compat version a data file was written for.
TAG = "ICEBERG_COMPAT_VERSION"
_MODE_KEY = "delta.columnMapping.mode"
_MAX_ID_KEY = "delta.columnMapping.maxColumnId"
_V2_TYPES = frozenset({"byte", "short", "integer", "long", "float", "double", "string", "binary", "boolean",
                       "timestamp", "timestamp_ntz", "date"})
_INTEGRAL = {"byte": 1, "short": 2, "integer": 3, "long": 4}


def compat_error(version: int, sub_class: str, detail: str, *, table: str | None = None) -> IcebergCompatError:
    """An :class:`~deltalog.errors.IcebergCompatError` of class ``DELTA_ICEBERG_COMPAT_VIOLATION.<sub_class>``
    with delta-spark's opening sentence, then ``detail``.

    Example:
        >>> compat_error(2, "X", "Fix it.").feature
        'icebergCompatV2'
        >>> str(compat_error(2, "VERSION_MUTUAL_EXCLUSIVE", "Only one ...", table="t")).split("]")[0]
        '[DELTA_ICEBERG_COMPAT_VIOLATION.VERSION_MUTUAL_EXCLUSIVE'
    """
    return IcebergCompatError(
        f"[DELTA_ICEBERG_COMPAT_VIOLATION.{sub_class}] The validation of IcebergCompatV{version} has failed. "
        f"{detail}", feature=f"icebergCompatV{version}", table=table)


def _true(conf: Mapping[str, str], key: str) -> bool:
    return str(conf.get(key, "false")).strip().lower() == "true"


def enabled_versions(conf: Mapping[str, str]) -> list[int]:
    """Every compat version whose property is ``true`` (more than one is refused at commit).

    Example:
        >>> enabled_versions({"delta.enableIcebergCompatV1": "true", "delta.enableIcebergCompatV2": "TRUE"})
        [1, 2]
    """
    return [v for v, key in COMPAT_KEYS.items() if _true(conf, key)]


def compat_version(conf: Mapping[str, str] | None) -> int:
    """The enabled compat version (the highest when several are), or 0.

    Example:
        >>> compat_version({"delta.enableIcebergCompatV1": "true"}), compat_version(None)
        (1, 0)
    """
    versions = enabled_versions(conf or {})
    return versions[-1] if versions else 0


def enabled_formats(conf: Mapping[str, str] | None) -> list[str]:
    """The formats of ``delta.universalFormat.enabledFormats`` (comma-separated, lower case).

    Example:
        >>> enabled_formats({"delta.universalFormat.enabledFormats": "Iceberg"})
        ['iceberg']
    """
    text = str((conf or {}).get(ENABLED_FORMATS_KEY, "") or "")
    return [f.strip().lower() for f in text.split(",") if f.strip()]


def _uniform_error(detail: str, table: str | None) -> IcebergCompatError:
    return IcebergCompatError(
        f"[DELTA_UNIVERSAL_FORMAT_VIOLATION] The validation of Universal Format (iceberg) has failed: {detail}",
        feature="icebergCompatV2", table=table)


def prepare_metadata(metadata: Metadata, previous: Metadata | None, *, table: str | None = None) -> Metadata:
    """What a metadata change implies for Iceberg compatibility, before column ids are assigned:

    * a compat version turned off (``false`` or unset) takes ``iceberg`` out of ``enabledFormats``;
    * ``enabledFormats`` naming ``iceberg`` without a compat version is refused
      (``DELTA_UNIVERSAL_FORMAT_VIOLATION``), and so is any other format (deltalog writes no Hudi metadata);
    * a compat version on a table without column mapping: a new table (``previous`` is ``None``) that did
      not set ``delta.columnMapping.mode`` gets ``name``; otherwise it is refused
      (``DELTA_ICEBERG_COMPAT_VIOLATION.WRONG_REQUIRED_TABLE_PROPERTY``) -- turning column mapping on
      for an existing table is asked for explicitly (or done by ``REORG ... APPLY (UPGRADE UNIFORM ...)``).

    Example:
        >>> from deltalog.protocol.actions import Format
        >>> old = Metadata(id="t", format=Format(), schemaString=None, configuration={
        ...     "delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg",
        ...     "delta.columnMapping.mode": "name"})
        >>> new = dataclasses.replace(old, configuration={"delta.columnMapping.mode": "name"})
        >>> prepare_metadata(new, old).configuration
        {'delta.columnMapping.mode': 'name'}
    """
    conf = dict(metadata.configuration)
    version = compat_version(conf)
    formats = enabled_formats(conf)
    if "iceberg" in formats and not version:
        was = compat_version(previous.configuration) if previous is not None else 0
        if was and "iceberg" in enabled_formats(previous.configuration if previous else None):
            formats = [f for f in formats if f != "iceberg"]  # the compat version was turned off
            if formats:
                conf[ENABLED_FORMATS_KEY] = ",".join(formats)
            else:
                conf.pop(ENABLED_FORMATS_KEY, None)
        else:
            raise _uniform_error(
                "Requires IcebergCompat to be explicitly enabled in order for Universal Format (Iceberg) to be "
                "enabled: set delta.enableIcebergCompatV2 = true together with "
                "delta.universalFormat.enabledFormats = iceberg", table)
    other = [f for f in formats if f != "iceberg"]
    if other:
        raise UnsupportedFeatureError(
            f"[DELTA_UNIVERSAL_FORMAT_VIOLATION] Universal Format {other[0]!r} is not supported by deltalog: "
            f"{ENABLED_FORMATS_KEY} may only name iceberg", feature="universalFormat", table=table)
    if version and str(conf.get(_MODE_KEY, "none") or "none").lower() == "none":
        if previous is None and _MODE_KEY not in conf:
            conf[_MODE_KEY] = "name"
        else:
            raise compat_error(
                version, "WRONG_REQUIRED_TABLE_PROPERTY",
                f"IcebergCompatV{version} requires table property '{_MODE_KEY}' to be set to 'name'. Current "
                f"value: '{conf.get(_MODE_KEY, 'none')}'. Set '{_MODE_KEY}' = 'name' too (the same ALTER TABLE "
                f"... SET TBLPROPERTIES may do both), or run REORG TABLE ... APPLY (UPGRADE UNIFORM "
                f"(ICEBERG_COMPAT_VERSION = {version})), which does every step", table=table)
    if conf == dict(metadata.configuration):
        return metadata
    return dataclasses.replace(metadata, configuration=conf)


# --------------------------------------------------------------------------------------- nested ids


def _nested_keys(dt: DataType, prefix: str) -> list[str]:
    """The ``nested.ids`` keys a field of type ``dt`` (named ``prefix`` in the files) needs, parents first."""
    out: list[str] = []
    if isinstance(dt, ArrayType):
        out.append(f"{prefix}.element")
        out += _nested_keys(dt.element_type, f"{prefix}.element")
    elif isinstance(dt, MapType):
        out += [f"{prefix}.key", f"{prefix}.value"]
        out += _nested_keys(dt.key_type, f"{prefix}.key") + _nested_keys(dt.value_type, f"{prefix}.value")
    return out


class _NestedIds:
    def __init__(self, start: int) -> None:
        self.next_id = start

    def struct(self, s: StructType) -> StructType:
        return StructType(tuple(self.field(f) for f in s.fields))

    def field(self, f: StructField) -> StructField:
        name = str(f.metadata.get(COLUMN_MAPPING_PHYSICAL_NAME_KEY) or f.name)
        keys = _nested_keys(f.type, name)
        old = f.metadata.get(COLUMN_MAPPING_NESTED_IDS_KEY)
        have = dict(old) if isinstance(old, Mapping) else {}
        ids: dict[str, Any] = {}
        for key in keys:
            if have.get(key) is None:
                self.next_id += 1
                ids[key] = self.next_id
            else:
                ids[key] = have[key]
        meta = dict(f.metadata)
        if ids or COLUMN_MAPPING_NESTED_IDS_KEY in meta:
            meta[COLUMN_MAPPING_NESTED_IDS_KEY] = ids
        return dataclasses.replace(f, type=self.type(f.type), metadata=meta)

    def type(self, dt: DataType) -> DataType:
        if isinstance(dt, StructType):
            return self.struct(dt)
        if isinstance(dt, ArrayType):
            return dataclasses.replace(dt, element_type=self.type(dt.element_type))
        if isinstance(dt, MapType):
            return dataclasses.replace(dt, key_type=self.type(dt.key_type), value_type=self.type(dt.value_type))
        return dt


def _max_nested(dt: DataType) -> int:
    best = 0
    if isinstance(dt, StructType):
        for f in dt.fields:
            ids = f.metadata.get(COLUMN_MAPPING_NESTED_IDS_KEY)
            if isinstance(ids, Mapping):
                best = max([best, *(int(v) for v in ids.values() if isinstance(v, int | str) and str(v).isdigit())])
            best = max(best, _max_nested(f.type))
    elif isinstance(dt, ArrayType):
        best = _max_nested(dt.element_type)
    elif isinstance(dt, MapType):
        best = max(_max_nested(dt.key_type), _max_nested(dt.value_type))
    return best


def assign_nested_ids(metadata: Metadata) -> Metadata:
    """``metadata`` with an id for every list element and map key and value (kept in
    ``delta.columnMapping.nested.ids`` of the nearest struct field, keyed by its physical name), new ids
    above ``delta.columnMapping.maxColumnId`` (raised to match); existing ids are kept. Run after the
    column-mapping ids and physical names are assigned.

    Example:
        >>> from deltalog.protocol.actions import Format
        >>> md = Metadata(id="t", format=Format(), configuration={"delta.columnMapping.maxColumnId": "1"},
        ...     schemaString='{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":'
        ...     '"long","containsNull":true},"nullable":true,"metadata":{"delta.columnMapping.id":1,'
        ...     '"delta.columnMapping.physicalName":"col-a"}}]}')
        >>> out = assign_nested_ids(md)
        >>> parse_schema(out.schemaString).fields[0].metadata["delta.columnMapping.nested.ids"]
        {'col-a.element': 2}
        >>> out.configuration["delta.columnMapping.maxColumnId"]
        '2'
    """
    if not metadata.schemaString:
        return metadata
    schema = parse_schema(metadata.schemaString)
    try:
        start = int(metadata.configuration.get(_MAX_ID_KEY) or 0)
    except ValueError:
        start = 0
    assigner = _NestedIds(max(start, _max_nested(schema)))
    new = assigner.struct(schema)
    text = new.to_json()
    conf = dict(metadata.configuration)
    if assigner.next_id > start:
        conf[_MAX_ID_KEY] = str(assigner.next_id)
    if text == metadata.schemaString and conf == dict(metadata.configuration):
        return metadata
    return dataclasses.replace(metadata, schemaString=text, configuration=conf)


# ------------------------------------------------------------------------------------- type rules


def unsupported_type(schema: StructType, version: int) -> DataType | None:
    """The first type of ``schema`` compat ``version`` does not allow, or ``None``: V2 allows the
    protocol's list (integers, floats, decimal, string, binary, boolean, timestamps, date, array, map,
    struct); V1 refuses arrays, maps and ``void``.

    Example:
        >>> unsupported_type(StructType((StructField("v", PrimitiveType("variant")),)), 2)
        PrimitiveType(name='variant')
    """
    def walk(dt: DataType) -> DataType | None:
        if isinstance(dt, StructType):
            for f in dt.fields:
                found = walk(f.type)
                if found is not None:
                    return found
            return None
        if isinstance(dt, ArrayType | MapType):
            if version == 1:
                return dt
            parts = [dt.element_type] if isinstance(dt, ArrayType) else [dt.key_type, dt.value_type]
            for p in parts:
                found = walk(p)
                if found is not None:
                    return found
            return None
        if isinstance(dt, DecimalType):
            return None
        if isinstance(dt, PrimitiveType):
            if version == 1:
                return dt if dt.name == "void" else None
            return None if dt.name in _V2_TYPES else dt
        return dt

    return walk(schema)


def _iceberg_widening(old: str, new: str) -> bool:
    if old in _INTEGRAL and new in _INTEGRAL:
        return _INTEGRAL[old] <= _INTEGRAL[new]
    if (old, new) == ("float", "double"):
        return True
    if old.startswith("decimal(") and new.startswith("decimal("):
        p1, s1 = (int(x) for x in old[8:-1].split(","))
        p2, s2 = (int(x) for x in new[8:-1].split(","))
        return s1 == s2 and p1 <= p2
    return False


def unsupported_widening(schema: StructType) -> tuple[str, str, str] | None:
    """The first recorded type change (``delta.typeChanges``) Iceberg cannot follow, as ``(field path,
    from, to)``, or ``None``: Iceberg widens integers to wider integers, ``float`` to ``double`` and a
    decimal to a larger precision of the same scale.

    Example:
        >>> f = StructField("n", PrimitiveType("double"), True,
        ...                 {"delta.typeChanges": [{"fromType": "integer", "toType": "double"}]})
        >>> unsupported_widening(StructType((f,)))
        ('n', 'integer', 'double')
    """
    def walk(dt: DataType, prefix: str) -> tuple[str, str, str] | None:
        if isinstance(dt, StructType):
            for f in dt.fields:
                path = f"{prefix}{f.name}"
                for change in f.metadata.get("delta.typeChanges") or []:
                    if not isinstance(change, Mapping):
                        continue
                    old, new = str(change.get("fromType")), str(change.get("toType"))
                    if not _iceberg_widening(old.replace(" ", ""), new.replace(" ", "")):
                        where = f"{path}.{change['fieldPath']}" if change.get("fieldPath") else path
                        return where, old, new
                found = walk(f.type, path + ".")
                if found is not None:
                    return found
        elif isinstance(dt, ArrayType):
            return walk(dt.element_type, prefix)
        elif isinstance(dt, MapType):
            return walk(dt.key_type, prefix) or walk(dt.value_type, prefix)
        return None

    return walk(schema, "")


def describe_type(dt: DataType) -> str:
    """A type as delta-spark's messages write it (the schema's type string).

    Example:
        >>> describe_type(PrimitiveType("variant"))
        'variant'
    """
    return type_string(dt)
