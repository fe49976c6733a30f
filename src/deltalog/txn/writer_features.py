"""Which table features deltalog can *write*, and the protocol a table needs for its metadata.

Writing is stricter than reading: a writer must implement every feature in ``writerFeatures`` (or
implied by a legacy writer version). Features fall in three groups here:

* :data:`SUPPORTED_WRITER_FEATURES` -- implemented whenever they are listed: ``appendOnly``,
  ``invariants``, ``checkConstraints`` (enforced by :mod:`deltalog.txn.constraints`),
  ``inCommitTimestamp``, ``timestampNtz``, ``domainMetadata``, ``vacuumProtocolCheck``,
  ``deletionVectors`` (DELETE/UPDATE/MERGE write new DVs when the table enables them),
  ``changeDataFeed`` (appends and whole-file removes only: a commit that rewrites rows without change
  data files is refused by :func:`check_change_data_feed`), ``identityColumns`` (values generated
  by every writer that adds rows, see :mod:`deltalog.txn.identity`), ``generatedColumns`` (computed
  or checked by every writer, see :mod:`deltalog.txn.generated`) and ``columnMapping`` (data files,
  statistics and partition values use physical names and field ids, see
  :mod:`deltalog.protocol.column_mapping`), ``allowColumnDefaults`` (defaults filled by every
  writer, see :mod:`deltalog.txn.defaults`), ``v2Checkpoint`` (V2 checkpoints with sidecars, see
  :mod:`deltalog.log.checkpoint_v2`), ``clustering`` (the ``delta.clustering`` domain, kept by
  :mod:`deltalog.commands.clustering`, OPTIMIZE clusters by it) , ``typeWidening`` (type changes
  recorded in ``delta.typeChanges``, see :mod:`deltalog.protocol.type_widening`; its preview
  ``typeWidening-preview`` too, whose tables keep the preview name) and ``rowTracking``
  (fresh row ids on every added file; commits that would move rows are refused, see
  :mod:`deltalog.txn.row_tracking`) and ``checkpointProtection`` (log cleanup never deletes part of the
  history before ``delta.requireCheckpointProtectionBeforeVersion``, see :mod:`deltalog.log.cleanup`) and
  ``geospatial`` (``geometry`` / ``geography`` columns written as WKB with parquet's geospatial logical types,
  a geometry's bounding box as its statistics, see :mod:`deltalog.protocol.geospatial`) and
  ``icebergCompatV1`` / ``icebergCompatV2`` (column mapping, field ids on every parquet field, partition
  values in the files, the ``ICEBERG_COMPAT_VERSION`` tag, no deletion vectors, only Iceberg's types and
  widenings, see :mod:`deltalog.protocol.iceberg_compat` and :mod:`deltalog.txn.iceberg_compat`);
* :data:`INACTIVE_ONLY_WRITER_FEATURES` -- allowed while *not active* on the table (listed, e.g.
  implied by a legacy writer version, but unused): none today;
  ``variantType`` / ``variantType-preview`` (unshredded variants: a struct of ``value`` / ``metadata``
  binaries, no min/max statistics, see :mod:`deltalog.data.write_variants`);
* everything else (``catalogManaged``, ``icebergCompatV3``, ...) -- refused.

Example:
    >>> from deltalog.protocol.actions import Format, Metadata, Protocol
    >>> md = Metadata(id="t", format=Format(), schemaString='{"type":"struct","fields":[]}',
    ...               configuration={"delta.enableInCommitTimestamps": "true"})
    >>> upgrade_protocol(Protocol(1, 2), md)
    Protocol(minReaderVersion=1, minWriterVersion=7, readerFeatures=None, \
writerFeatures=('appendOnly', 'inCommitTimestamp', 'invariants'), extra={})
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from deltalog.errors import DeltaError, InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.features import check_readable, reader_features, writer_features

__all__ = [
    "FEATURES",
    "INACTIVE_ONLY_WRITER_FEATURES",
    "SUPPORTED_WRITER_FEATURES",
    "AppendOnlyError",
    "FeatureInfo",
    "active_features",
    "check_append_only",
    "check_change_data_feed",
    "check_never_writable",
    "check_no_downgrade",
    "check_writable",
    "is_true",
    "required_features",
    "upgrade_protocol",
]

#: Writer features deltalog implements whenever the table lists them.
SUPPORTED_WRITER_FEATURES: frozenset[str] = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "inCommitTimestamp",
        "timestampNtz",
        "domainMetadata",
        "vacuumProtocolCheck",
        "deletionVectors",
        "changeDataFeed",
        "identityColumns",
        "generatedColumns",
        "columnMapping",
        "allowColumnDefaults",
        "v2Checkpoint",
        "clustering",
        "typeWidening",
        "typeWidening-preview",
        "rowTracking",
        "checkpointProtection",
        "variantType",
        "variantType-preview",
        "geospatial",
        "icebergCompatV1",
        "icebergCompatV2",
    }
)

#: Writer features allowed only while inactive (listed but unused by the table's metadata).
INACTIVE_ONLY_WRITER_FEATURES: frozenset[str] = frozenset()


class AppendOnlyError(DeltaError):
    """A commit would remove or change data of a table with ``delta.appendOnly=true``.

    Example:
        >>> issubclass(AppendOnlyError, DeltaError)
        True
    """


@dataclass(frozen=True)
class FeatureInfo:
    """How a feature maps onto protocol versions.

    ``legacy_writer`` / ``legacy_reader`` are the legacy versions that imply it (``None`` when only the
    table-features protocol (3, 7) can express it); ``reader`` says it is a reader-and-writer feature.

    Example:
        >>> FEATURES["columnMapping"]
        FeatureInfo(name='columnMapping', reader=True, legacy_writer=5, legacy_reader=2)
    """

    name: str
    reader: bool
    legacy_writer: int | None
    legacy_reader: int = 1


#: Known features and their protocol requirements.
FEATURES: dict[str, FeatureInfo] = {
    f.name: f
    for f in (
        FeatureInfo("appendOnly", False, 2),
        FeatureInfo("invariants", False, 2),
        FeatureInfo("checkConstraints", False, 3),
        FeatureInfo("changeDataFeed", False, 4),
        FeatureInfo("generatedColumns", False, 4),
        FeatureInfo("columnMapping", True, 5, 2),
        FeatureInfo("identityColumns", False, 6),
        FeatureInfo("deletionVectors", True, None),
        FeatureInfo("timestampNtz", True, None),
        FeatureInfo("inCommitTimestamp", False, None),
        FeatureInfo("domainMetadata", False, None),
        FeatureInfo("v2Checkpoint", True, None),
        FeatureInfo("vacuumProtocolCheck", True, None),
        FeatureInfo("typeWidening", True, None),
        FeatureInfo("typeWidening-preview", True, None),
        FeatureInfo("rowTracking", False, None),
        FeatureInfo("clustering", False, None),
        FeatureInfo("allowColumnDefaults", False, None),
        FeatureInfo("checkpointProtection", False, None),
        FeatureInfo("icebergCompatV1", False, None),
        FeatureInfo("icebergCompatV2", False, None),
        FeatureInfo("variantType", True, None),
        FeatureInfo("variantType-preview", True, None),
        FeatureInfo("variantShredding", True, None),
        FeatureInfo("variantShredding-preview", True, None),
        FeatureInfo("catalogManaged", True, None),
        FeatureInfo("geospatial", True, None),
    )
}

_PROPERTY_FEATURES = {
    "delta.appendOnly": "appendOnly",
    "delta.enableChangeDataFeed": "changeDataFeed",
    "delta.enableDeletionVectors": "deletionVectors",
    "delta.enableInCommitTimestamps": "inCommitTimestamp",
    "delta.enableTypeWidening": "typeWidening",
    "delta.enableRowTracking": "rowTracking",
    "delta.enableIcebergCompatV1": "icebergCompatV1",
    "delta.enableIcebergCompatV2": "icebergCompatV2",
}


def is_true(conf: Mapping[str, str], key: str) -> bool:
    """True when the table property ``key`` is set to ``true`` (case-insensitive).

    Example:
        >>> is_true({"delta.appendOnly": "TRUE"}, "delta.appendOnly")
        True
    """
    return str(conf.get(key, "false")).strip().lower() == "true"


def _schema_json(metadata: Metadata) -> dict[str, Any]:
    if not metadata.schemaString:
        return {"type": "struct", "fields": []}
    try:
        obj = json.loads(metadata.schemaString)
    except ValueError:
        return {"type": "struct", "fields": []}
    return obj if isinstance(obj, dict) else {"type": "struct", "fields": []}


def _walk_types(node: Any) -> Iterator[tuple[Any, dict[str, Any] | None]]:
    """Yield (type, field metadata of the enclosing struct field or None) for every nested type."""
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "struct":
            for f in node.get("fields") or []:
                if isinstance(f, dict):
                    meta = f.get("metadata") if isinstance(f.get("metadata"), dict) else {}
                    yield f.get("type"), meta
                    yield from _walk_types(f.get("type"))
        elif kind == "array":
            yield node.get("elementType"), None
            yield from _walk_types(node.get("elementType"))
        elif kind == "map":
            for key in ("keyType", "valueType"):
                yield node.get(key), None
                yield from _walk_types(node.get(key))


def active_features(metadata: Metadata) -> set[str]:
    """Features the metadata *uses* (so the protocol must support them).

    Table properties (``delta.appendOnly``, ``delta.enableChangeDataFeed``, ...), CHECK constraints,
    column invariants, generated/identity/default columns, ``timestamp_ntz``, variant and geospatial columns, a
    column mapping mode other than ``none``, and explicit ``delta.feature.<name>=supported`` properties count.

    Example:
        >>> from deltalog.protocol.actions import Format, Metadata
        >>> md = Metadata(id="t", format=Format(), schemaString='{"type":"struct","fields":[{"name":'
        ...     '"t","type":"timestamp_ntz","nullable":true,"metadata":{}}]}',
        ...     configuration={"delta.constraints.c": "t IS NOT NULL"})
        >>> sorted(active_features(md))
        ['checkConstraints', 'timestampNtz']
    """
    conf = metadata.configuration
    out: set[str] = set()
    for key, feature in _PROPERTY_FEATURES.items():
        if is_true(conf, key):
            out.add(feature)
    if any(k.startswith("delta.constraints.") for k in conf):
        out.add("checkConstraints")
    if conf.get("delta.columnMapping.mode", "none").lower() in ("name", "id"):
        out.add("columnMapping")
    if str(conf.get("delta.checkpointPolicy", "classic")).lower() == "v2":
        out.add("v2Checkpoint")
    for key, value in conf.items():
        if key.startswith("delta.feature.") and str(value).lower() in ("supported", "enabled"):
            out.add(key[len("delta.feature.") :])
    for dtype, meta in _walk_types(_schema_json(metadata)):
        if dtype == "timestamp_ntz":
            out.add("timestampNtz")
        elif isinstance(dtype, str) and dtype.startswith("variant"):
            out.add("variantType")
        elif isinstance(dtype, str) and dtype.startswith(("geometry(", "geography(")):
            out.add("geospatial")
        if meta:
            if "delta.invariants" in meta:
                out.add("invariants")
            if "delta.generationExpression" in meta:
                out.add("generatedColumns")
            if any(k.startswith("delta.identity.") for k in meta):
                out.add("identityColumns")
            if "CURRENT_DEFAULT" in meta:
                out.add("allowColumnDefaults")
    return out


def required_features(metadata: Metadata, *, extra: Iterable[str] = ()) -> set[str]:
    """:func:`active_features` plus ``extra`` (e.g. ``domainMetadata`` when a commit writes domains).

    Example:
        >>> from deltalog.protocol.actions import Format, Metadata
        >>> md = Metadata(id="t", format=Format(), schemaString=None)
        >>> sorted(required_features(md, extra=["domainMetadata"]))
        ['domainMetadata']
    """
    out = active_features(metadata) | set(extra)
    for feature, needs in _DEPENDS_ON.items():  # e.g. row tracking records its mark in a domain
        if feature in out:
            out |= needs
    return out


#: Features that need others (the protocol's feature dependencies).
_DEPENDS_ON = {"rowTracking": {"domainMetadata"}, "clustering": {"domainMetadata"},
               "icebergCompatV1": {"columnMapping"}, "icebergCompatV2": {"columnMapping"}}


#: Preview names that satisfy a feature the metadata uses (a variant column on a ``variantType-preview``
#: table needs no ``variantType``; ``delta.enableTypeWidening`` on a ``typeWidening-preview`` table, as
#: Delta 3.2/3.3 made them, needs no ``typeWidening``).
_PREVIEWS = {"variantType-preview": "variantType", "typeWidening-preview": "typeWidening"}


def _supported_by(protocol: Protocol) -> set[str]:
    have = set(writer_features(protocol)) | set(reader_features(protocol))
    return have | {_PREVIEWS[f] for f in have if f in _PREVIEWS}


def upgrade_protocol(
    current: Protocol | None,
    metadata: Metadata,
    *,
    extra_features: Iterable[str] = (),
    table: str | None = None,
    version: int | None = None,
) -> Protocol:
    """The smallest protocol at or above ``current`` that supports every feature ``metadata`` uses.

    ``current`` ``None`` means a new table, which starts at (1, 2). Legacy versions are kept when they
    can express the features (``appendOnly`` → writer 2, ``checkConstraints`` → 3, ``changeDataFeed``
    → 4, ``columnMapping`` → reader 2 / writer 5); anything else moves to writer 7 (and reader 3 when a
    reader feature other than column mapping is needed), listing every feature the old legacy
    versions implied. ``current`` itself is returned when nothing is missing. A feature deltalog does
    not know raises :class:`UnsupportedFeatureError` naming it and ``table`` (and ``version``).

    Example:
        >>> from deltalog.protocol.actions import Format, Metadata
        >>> md = Metadata(id="t", format=Format(), schemaString=None,
        ...               configuration={"delta.enableChangeDataFeed": "true"})
        >>> upgrade_protocol(Protocol(1, 2), md)
        Protocol(minReaderVersion=1, minWriterVersion=4, readerFeatures=None, writerFeatures=None, extra={})
        >>> md2 = Metadata(id="t", format=Format(), schemaString=None,
        ...                configuration={"delta.enableDeletionVectors": "true"})
        >>> upgrade_protocol(None, md2)
        Protocol(minReaderVersion=3, minWriterVersion=7, readerFeatures=('deletionVectors',), \
writerFeatures=('deletionVectors',), extra={})
    """
    needed = required_features(metadata, extra=extra_features)
    base = current if current is not None else Protocol(minReaderVersion=1, minWriterVersion=1)
    have = _supported_by(base)
    missing = needed - have
    if not missing:
        if current is None:
            return Protocol(minReaderVersion=1, minWriterVersion=2)
        return current
    unknown = [f for f in missing if f not in FEATURES]
    if unknown:
        raise UnsupportedFeatureError(
            f"table feature(s) {sorted(unknown)} are unknown to deltalog; cannot add them to the protocol",
            feature=sorted(unknown)[0],
            table=table,
            version=version,
        )
    infos = [FEATURES[f] for f in missing]
    if base.minWriterVersion < 7 and all(i.legacy_writer is not None for i in infos):
        writer = max([base.minWriterVersion, 2, *(i.legacy_writer or 0 for i in infos)])
        reader = max([base.minReaderVersion, *(i.legacy_reader for i in infos)])
        return Protocol(minReaderVersion=reader, minWriterVersion=writer)
    wf = set(writer_features(base)) | set(reader_features(base)) | missing
    needs_reader_features = base.minReaderVersion >= 3 or any(
        FEATURES[f].reader and f != "columnMapping" for f in wf if f in FEATURES
    )
    if needs_reader_features:
        rf = set(reader_features(base)) | {f for f in wf if f in FEATURES and FEATURES[f].reader}
        return Protocol(3, 7, tuple(sorted(rf)), tuple(sorted(wf)))
    reader = max(base.minReaderVersion, 2 if "columnMapping" in wf else 1)
    return Protocol(minReaderVersion=reader, minWriterVersion=7, writerFeatures=tuple(sorted(wf)))


def check_no_downgrade(old: Protocol, new: Protocol, *, table: str | None = None, dropping: str | None = None) -> None:
    """Refuse a protocol action that lowers a version or drops a supported feature; ``dropping`` (the
    feature a ``DROP FEATURE`` commit removes) may go, and versions may then fall to what the remaining
    features need.

    Example:
        >>> check_no_downgrade(Protocol(1, 2), Protocol(1, 7, None, ("invariants",)), table="t")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: the new protocol (1, 7) would drop table feature(s) \
['appendOnly'] or lower a version of the current protocol (1, 2); features can only be added [table t]
    """
    dropped = sorted(_supported_by(old) - _supported_by(new) - ({dropping} if dropping else set()))
    lowered = new.minReaderVersion < old.minReaderVersion or new.minWriterVersion < old.minWriterVersion
    if dropped or (lowered and dropping is None):
        raise InvalidArgumentError(
            f"the new protocol ({new.minReaderVersion}, {new.minWriterVersion}) would drop table feature(s) "
            f"{dropped} or lower a version of the current protocol ({old.minReaderVersion}, "
            f"{old.minWriterVersion}); features can only be added",
            table=table,
        )


def check_writable(
    protocol: Protocol,
    metadata: Metadata | None,
    *,
    adds_data: bool = True,
    table: str | None = None,
    version: int | None = None,
) -> None:
    """Raise :class:`UnsupportedFeatureError` unless deltalog may commit to a table with this protocol.

    Every reader feature must be readable, and every writer feature (explicit or implied by a legacy
    writer version) supported -- or, for :data:`INACTIVE_ONLY_WRITER_FEATURES`, unused by
    ``metadata``. ``adds_data=False`` (metadata-only commits) lets column mapping tables through.

    Example:
        >>> check_writable(Protocol(3, 7, (), ("icebergCompatV3",)), None, table="t")
        Traceback (most recent call last):
        ...
        deltalog.errors.UnsupportedFeatureError: table needs writer feature 'icebergCompatV3', which \
deltalog cannot write (it does not keep Iceberg metadata compatible); it can still be read [table t]
    """
    if protocol.minWriterVersion > 7 or protocol.minWriterVersion < 1:
        raise UnsupportedFeatureError(
            f"table needs writer version {protocol.minWriterVersion}; deltalog writes versions 1 to 7",
            feature=f"minWriterVersion={protocol.minWriterVersion}",
            table=table,
            version=version,
        )
    check_readable(protocol, table=table, version=version)
    used = active_features(metadata) if metadata is not None else set()
    for feature in sorted(writer_features(protocol)):
        if feature in SUPPORTED_WRITER_FEATURES:
            continue
        if feature in INACTIVE_ONLY_WRITER_FEATURES:
            if feature not in used or (feature == "columnMapping" and not adds_data):
                continue
            raise UnsupportedFeatureError(
                f"table uses writer feature '{feature}', which deltalog supports only while it is "
                "inactive (e.g. no column defaults, column mapping mode 'none')",
                feature=feature,
                table=table,
                version=version,
            )
        why = _REFUSAL_REASONS.get(feature, "it is not implemented for writing")
        raise UnsupportedFeatureError(
            f"table needs writer feature '{feature}', which deltalog cannot write ({why}); it can still be read",
            feature=feature,
            table=table,
            version=version,
        )


def check_never_writable(protocol: Protocol, *, table: str | None = None, version: int | None = None) -> None:
    """Refuse up front -- before any data file is written -- a table with a writer feature deltalog never
    writes, whatever the commit (``catalogManaged``, ``icebergCompatV3``, ...): such a feature stays while
    the table has it, so :func:`check_writable` would refuse the commit anyway. Other tables pass (their
    commit is checked).

    Example:
        >>> check_never_writable(Protocol(1, 2), table="t")
        >>> check_never_writable(Protocol(1, 7, None, ("icebergCompatV3",)), table="t")
        Traceback (most recent call last):
        ...
        deltalog.errors.UnsupportedFeatureError: table needs writer feature 'icebergCompatV3', which deltalog \
cannot write (it does not keep Iceberg metadata compatible); it can still be read [table t]
    """
    blocked = writer_features(protocol) - SUPPORTED_WRITER_FEATURES - INACTIVE_ONLY_WRITER_FEATURES
    if blocked or not 1 <= protocol.minWriterVersion <= 7:
        check_writable(protocol, None, adds_data=True, table=table, version=version)


_REFUSAL_REASONS = {
    "icebergCompatV3": "it does not keep Iceberg metadata compatible",
    "icebergWriterCompatV1": "it does not keep Iceberg metadata compatible",
    "catalogManaged": "it commits to the file system, not through a catalog",
}


def check_append_only(
    metadata: Metadata | None, removes: Iterable[tuple[str, bool]], *, table: str | None = None
) -> None:
    """Refuse ``(path, dataChange)`` removes with ``dataChange=true`` on an append-only table.

    Example:
        >>> from deltalog.protocol.actions import Format, Metadata
        >>> md = Metadata(id="t", format=Format(), schemaString=None,
        ...               configuration={"delta.appendOnly": "true"})
        >>> check_append_only(md, [("a.parquet", False)])      # compaction is fine
        >>> check_append_only(md, [("a.parquet", True)], table="t")
        Traceback (most recent call last):
        ...
        deltalog.txn.writer_features.AppendOnlyError: table is append-only (delta.appendOnly=true): \
this commit would remove data (file a.parquet); only appends and dataChange=false rearrangements are \
allowed -- set delta.appendOnly=false first to delete or overwrite [table t]
    """
    if metadata is None or not is_true(metadata.configuration, "delta.appendOnly"):
        return
    for path, data_change in removes:
        if data_change:
            raise AppendOnlyError(
                f"table is append-only (delta.appendOnly=true): this commit would remove data (file {path}); "
                "only appends and dataChange=false rearrangements are allowed -- set "
                "delta.appendOnly=false first to delete or overwrite",
                table=table,
            )


def check_change_data_feed(
    metadata: Metadata | None,
    *,
    rewrites_rows: bool,
    data_adds: int,
    data_removes: int,
    cdc_files: int,
    table: str | None = None,
) -> None:
    """Refuse row rewrites without change data files while ``delta.enableChangeDataFeed=true``.

    Pure appends and whole-file removes need no change data files; an UPDATE/MERGE/DELETE that
    removes files and adds rewritten copies does.

    Example:
        >>> from deltalog.protocol.actions import Format, Metadata
        >>> md = Metadata(id="t", format=Format(), schemaString=None,
        ...               configuration={"delta.enableChangeDataFeed": "true"})
        >>> check_change_data_feed(md, rewrites_rows=False, data_adds=3, data_removes=0, cdc_files=0)
    """
    if metadata is None or not is_true(metadata.configuration, "delta.enableChangeDataFeed"):
        return
    if rewrites_rows and data_adds and data_removes and not cdc_files:
        raise UnsupportedFeatureError(
            "change data feed is enabled (delta.enableChangeDataFeed=true) and this commit rewrites rows "
            "without change data files: stage the changed rows as cdc actions "
            "(deltalog.data.change_files.write_change_files, as the kernel's DELETE and UPDATE do), or "
            "disable the change data feed",
            feature="changeDataFeed",
            table=table,
        )
