"""``REORG TABLE t APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION = 2))``: make an existing table Iceberg
compatible and turn UniForm (Iceberg) on, in up to three commits, as delta-spark does it step by step:

1. ``SET TBLPROPERTIES`` -- deletion vectors off (``delta.enableDeletionVectors=false``), column mapping
   ``name`` when the table has none (existing columns keep their names as physical names), and ids for
   list elements and map keys and values (``delta.columnMapping.nested.ids``); only when something changes;
2. ``REORG`` -- every live file written without the compat version's tag (no field ids, partition values
   not in the file) or with a deletion vector is rewritten, ``dataChange=false``, with its kept rows (the
   deletion vectors are purged), field ids at every level, the partition columns and the tag; row ids and
   commit versions are kept on row-tracking tables;
3. ``SET TBLPROPERTIES`` -- ``delta.enableIcebergCompatV2=true`` (the other compat version off) and
   ``delta.universalFormat.enabledFormats=iceberg``; refused with
   ``DELTA_ICEBERG_COMPAT_VIOLATION.FILES_NOT_ICEBERG_COMPAT`` if a concurrent writer added files without
   the tag in between (run the command again).

Example:
    >>> import deltalog
    >>> res = upgrade_uniform(deltalog.Table("/data/events"))                  # doctest: +SKIP
    >>> res.files_rewritten, res.versions                                      # doctest: +SKIP
    (12, [4, 5, 6])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from deltalog.protocol.column_mapping import with_column_mapping
from deltalog.protocol.iceberg_compat import (
    COMPAT_KEYS,
    ENABLED_FORMATS_KEY,
    TAG,
    assign_nested_ids,
    compat_error,
    enabled_formats,
)
from deltalog.txn.iceberg_compat import untagged_files
from deltalog.txn.operations import SetTableProperties
from deltalog.txn.writer_features import is_true

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["UpgradeUniformResult", "upgrade_uniform"]

_Clock = Callable[[], int]


@dataclass
class UpgradeUniformResult:
    """What :func:`upgrade_uniform` did: the versions it committed (each step's, in order) and how many live
    files it rewrote.

    Example:
        >>> UpgradeUniformResult().files_rewritten
        0
    """

    versions: list[int] = field(default_factory=list)
    files_rewritten: int = 0


def _options(clock: _Clock | None, snapshot: Snapshot) -> dict[str, Any]:
    out: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        out["clock"] = clock
    return out


def _set_properties(table: TableHandle, snap: Snapshot, metadata: Any, clock: _Clock | None) -> int:
    old = snap.metadata.configuration
    changed = {k: v for k, v in metadata.configuration.items()
               if old.get(k) != v and k != "delta.columnMapping.maxColumnId"}  # (kept by column mapping)
    txn = table.transaction(SetTableProperties(properties=changed), **_options(clock, snap))
    txn.update_metadata(metadata)
    return txn.commit().version


def _needs_rewrite(snap: Snapshot, version: int) -> list[dict[str, Any]]:
    rows = snap.add_files().to_pylist()
    return [r for r in rows if dict(r.get("tags") or []).get(TAG) != str(version) or r.get("deletionVector")]


def _rewrite(table: TableHandle, snap: Snapshot, rows: list[dict[str, Any]], version: int,
             clock: _Clock | None) -> int:
    """Rewrite ``rows`` (live files) for compat ``version``: kept rows only, ``dataChange=false``."""
    from deltalog.commands.drop_feature import rewrite_files

    purge = any(r.get("deletionVector") for r in rows)
    return rewrite_files(table, snap, rows, clock, purge=purge, iceberg_compat=version)


def upgrade_uniform(table: TableHandle, *, iceberg_compat_version: int = 2,
                    clock: _Clock | None = None) -> UpgradeUniformResult:
    """Make ``table`` Iceberg compatible (``iceberg_compat_version`` 1 or 2) and enable UniForm (Iceberg); see
    the module docstring for the steps. A table already upgraded commits nothing.

    Example:
        >>> import deltalog, pyarrow as pa
        >>> deltalog.write_table("/data/t", pa.table({"id": [1, 2]}))                  # doctest: +SKIP
        >>> upgrade_uniform(deltalog.Table("/data/t")).versions                        # doctest: +SKIP
        [1, 2, 3]
        >>> deltalog.Table("/data/t").snapshot().properties["delta.universalFormat.enabledFormats"]  # doctest: +SKIP
        'iceberg'
    """
    version = iceberg_compat_version
    loc = getattr(table, "location", None)
    if version not in COMPAT_KEYS:
        raise compat_error(version, "COMPAT_VERSION_NOT_SUPPORTED",
                           f"IcebergCompatVersion = {version} is not supported. Supported versions are between 1 "
                           f"and {max(COMPAT_KEYS)}", table=loc)
    out = UpgradeUniformResult()
    snap = table.snapshot()
    conf = dict(snap.metadata.configuration)
    if is_true(conf, "delta.enableDeletionVectors"):
        conf["delta.enableDeletionVectors"] = "false"
    if str(conf.get("delta.columnMapping.mode", "none")).lower() == "none":
        conf["delta.columnMapping.mode"] = "name"
    md = with_column_mapping(replace(snap.metadata, configuration=conf), snap.metadata, table=loc)
    if version == 2:
        md = assign_nested_ids(md)
    if md != snap.metadata:
        out.versions.append(_set_properties(table, snap, md, clock))
        snap = table.snapshot()
    rows = _needs_rewrite(snap, version)
    if rows:
        out.versions.append(_rewrite(table, snap, rows, version, clock))
        out.files_rewritten = len(rows)
        snap = table.snapshot()
    conf = dict(snap.metadata.configuration)
    for v, key in COMPAT_KEYS.items():
        if v != version and is_true(conf, key):
            conf[key] = "false"
    conf[COMPAT_KEYS[version]] = "true"
    formats = enabled_formats(conf)
    conf[ENABLED_FORMATS_KEY] = ",".join([*formats, "iceberg"] if "iceberg" not in formats else formats)
    if conf != dict(snap.metadata.configuration):
        total, bad = untagged_files(snap, version)
        if bad:
            raise compat_error(
                version, "FILES_NOT_ICEBERG_COMPAT",
                f"Enabling Uniform Iceberg with IcebergCompatV{version} requires all files to be iceberg "
                f"compatible.\nThere are {total} files in table version {snap.version} and {bad} files are not "
                "iceberg compatible, which is usually a result of concurrent write.\nPlease run the REORG TABLE "
                f"table APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION={version}) command again.", table=loc)
        out.versions.append(_set_properties(table, snap, replace(snap.metadata, configuration=conf), clock))
    return out
