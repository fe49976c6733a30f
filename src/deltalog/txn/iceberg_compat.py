"""The commit-time rules of Iceberg compatibility (``delta.enableIcebergCompatV1`` / ``V2``): what a
commit to a compat table must hold, checked with its final protocol, metadata and staged actions before
anything is written to the log. Each refusal is a
:class:`~deltalog.errors.IcebergCompatError` whose message starts with delta-spark's error
class and says what to do; nothing is committed.

* one compat version at a time (``VERSION_MUTUAL_EXCLUSIVE``);
* column mapping ``name`` or ``id`` (``WRONG_REQUIRED_TABLE_PROPERTY``), and the ``columnMapping`` feature
  kept in the protocol (``DISABLING_REQUIRED_TABLE_FEATURE``);
* only the types the version allows (``UNSUPPORTED_DATA_TYPE``) and the type changes Iceberg can follow
  (``UNSUPPORTED_TYPE_WIDENING``);
* no deletion vectors: ``delta.enableDeletionVectors`` off (``DELETION_VECTORS_SHOULD_BE_DISABLED``), no
  live file or new add with one (``DELETION_VECTORS_NOT_PURGED``);
* no replace of a partitioned table with other partition columns (``REPLACE_TABLE_CHANGE_PARTITION_NAMES``);
* ``numRecords`` in the statistics of every add.

Turning a compat version on for a table with data rewrites nothing, as delta-spark 3.3+ enables UniForm
without a rewrite: files written before (no ``ICEBERG_COMPAT_VERSION`` tag, no field ids, partition values
only in the log) are read by Iceberg readers through the name mapping and identity partitions of the
Iceberg metadata; ``REORG ... APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION = 2))`` rewrites them.

Example:
    >>> from deltalog.protocol.actions import Format, Metadata, Protocol
    >>> md = Metadata(id="t", format=Format(), schemaString='{"type":"struct","fields":[]}', configuration={
    ...     "delta.enableIcebergCompatV2": "true", "delta.columnMapping.mode": "name",
    ...     "delta.enableDeletionVectors": "true"})
    >>> check_commit(Protocol(2, 7, None, ("columnMapping", "icebergCompatV2")), md, None, [], table="t")
    Traceback (most recent call last):
    ...
    deltalog.errors.IcebergCompatError: [DELTA_ICEBERG_COMPAT_VIOLATION.\
DELETION_VECTORS_SHOULD_BE_DISABLED] The validation of IcebergCompatV2 has failed. IcebergCompatV2 requires \
Deletion Vectors to be disabled on the table first. Then run REORG PURGE command to purge the Deletion Vectors \
on the table. (ALTER TABLE ... SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false'), then REORG TABLE \
... APPLY (PURGE)) [table t]
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from deltalog.protocol.actions import Add, Metadata, Protocol
from deltalog.protocol.features import reader_features, writer_features
from deltalog.protocol.iceberg_compat import (
    TAG,
    IcebergCompatError,
    compat_error,
    compat_version,
    describe_type,
    enabled_versions,
    unsupported_type,
    unsupported_widening,
)
from deltalog.protocol.schema import parse_schema

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["check_commit", "untagged_files"]

_MODE_KEY = "delta.columnMapping.mode"


def _num_records(stats: str | None) -> Any:
    if not stats:
        return None
    try:
        obj = json.loads(stats)
    except ValueError:
        return None
    return obj.get("numRecords") if isinstance(obj, dict) else None


def untagged_files(snapshot: Snapshot, version: int, *, skip: Iterable[str] = ()) -> tuple[int, int]:
    """``(live files, live files without the tag ICEBERG_COMPAT_VERSION = version)`` of ``snapshot``, leaving
    out the paths in ``skip`` (files a commit removes).

    Example:
        >>> untagged_files(deltalog.Table("/data/t").snapshot(), 2)                  # doctest: +SKIP
        (12, 0)
    """
    files = snapshot.add_files()
    gone = set(skip)
    total = bad = 0
    for path, tags in zip(files.column("path").to_pylist(), files.column("tags").to_pylist()):
        if path in gone:
            continue
        total += 1
        if dict(tags or []).get(TAG) != str(version):
            bad += 1
    return total, bad


def _live_dvs(snapshot: Snapshot, skip: set[str]) -> int:
    files = snapshot.add_files()
    return sum(1 for p, dv in zip(files.column("path").to_pylist(), files.column("deletionVector").to_pylist())
               if dv is not None and p not in skip)


def check_commit(
    protocol: Protocol,
    metadata: Metadata,
    snapshot: Snapshot | None,
    adds: Iterable[Add],
    *,
    removed: Iterable[str] = (),
    table: str | None = None,
) -> None:
    """Refuse a commit to an Iceberg-compatible table that breaks a rule (see the module docstring):
    ``protocol`` and ``metadata`` are what the commit leaves, ``snapshot`` what it read (``None`` for a new
    table), ``adds`` its staged adds and ``removed`` the paths it removes. Tables without a compat version
    pass at once.

    Example:
        >>> check_commit(Protocol(1, 2), md_without_compat, None, [])                # doctest: +SKIP
    """
    conf = metadata.configuration
    version = compat_version(conf)
    if not version:
        return
    if len(enabled_versions(conf)) > 1:
        raise compat_error(version, "VERSION_MUTUAL_EXCLUSIVE",
                           "Only one IcebergCompat version can be enabled, please explicitly disable all other "
                           "IcebergCompat versions that are not needed.", table=table)
    mode = str(conf.get(_MODE_KEY, "none") or "none").lower()
    if mode not in ("name", "id"):
        raise compat_error(version, "WRONG_REQUIRED_TABLE_PROPERTY",
                           f"IcebergCompatV{version} requires table property '{_MODE_KEY}' to be set to 'name'. "
                           f"Current value: '{mode}'.", table=table)
    features = set(writer_features(protocol)) | set(reader_features(protocol))
    if "columnMapping" not in features:
        raise compat_error(version, "DISABLING_REQUIRED_TABLE_FEATURE",
                           f"IcebergCompatV{version} requires feature columnMapping to be supported and enabled. "
                           f"You cannot drop it from the table. Instead, please disable IcebergCompatV{version} "
                           "first.", table=table)
    _check_schema(version, metadata, table)
    if str(conf.get("delta.enableDeletionVectors", "false")).strip().lower() == "true":
        raise compat_error(version, "DELETION_VECTORS_SHOULD_BE_DISABLED",
                           f"IcebergCompatV{version} requires Deletion Vectors to be disabled on the table first. "
                           "Then run REORG PURGE command to purge the Deletion Vectors on the table. (ALTER TABLE "
                           "... SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false'), then REORG TABLE ... "
                           "APPLY (PURGE))", table=table)
    adds = list(adds)
    gone = set(removed)
    with_dv = [a.path for a in adds if a.deletionVector is not None]
    was = compat_version(snapshot.metadata.configuration) if snapshot is not None else 0
    if with_dv or (snapshot is not None and was != version and _live_dvs(snapshot, gone)):
        raise compat_error(version, "DELETION_VECTORS_NOT_PURGED",
                           f"IcebergCompatV{version} requires Deletion Vectors to be completely purged from the "
                           "table. Please run the REORG TABLE APPLY (PURGE) command.", table=table)
    if snapshot is not None and snapshot.metadata.partitionColumns and \
            tuple(snapshot.metadata.partitionColumns) != tuple(metadata.partitionColumns):
        raise compat_error(version, "REPLACE_TABLE_CHANGE_PARTITION_NAMES",
                           f"IcebergCompatV{version} doesn't support replacing partitioned tables with a "
                           "differently-named partition spec, because Iceberg-Spark 1.1.0 doesn't.\n"
                           f"Prev Partition Spec: {list(snapshot.metadata.partitionColumns)}\n"
                           f"New Partition Spec: {list(metadata.partitionColumns)}", table=table)
    for a in adds:
        if _num_records(a.stats) is None:
            raise IcebergCompatError(
                f"IcebergCompatV{version} requires all AddFiles to contain the numRecords statistic. AddFile "
                f"{a.path} is missing this statistic. Stats: {a.stats}", feature=f"icebergCompatV{version}",
                table=table)


def _check_schema(version: int, metadata: Metadata, table: str | None) -> None:
    if not metadata.schemaString:
        return
    schema = parse_schema(metadata.schemaString)
    bad = unsupported_type(schema, version)
    if bad is not None:
        raise compat_error(version, "UNSUPPORTED_DATA_TYPE",
                           f"IcebergCompatV{version} does not support the data type {describe_type(bad)} in your "
                           f"schema. Your schema:\n{schema.to_json()}", table=table)
    widened = unsupported_widening(schema)
    if widened is not None:
        path, old, new = widened
        raise compat_error(version, "UNSUPPORTED_TYPE_WIDENING",
                           f"IcebergCompatV{version} is incompatible with a type change applied to this table:\n"
                           f"Field {path} was changed from {old} to {new}.", table=table)

