"""``ALTER TABLE ... DROP FEATURE``: take a table feature out of the protocol, so clients that do not
support it can read (or write) the table again.

A feature is dropped in two steps, as delta-spark does: first its *traces* go -- the properties that
enable it, and whatever the data or the log hold that needs it (deletion vectors are purged by
rewriting the files that have them, v2 checkpoints are followed by a classic one, files written before a
type change are rewritten with the new type) -- then one ``DROP FEATURE`` commit writes the protocol
without the feature. Versions may fall back to legacy ones when the remaining features allow
(``(3, 7, [deletionVectors], [appendOnly, deletionVectors, invariants])`` becomes ``(1, 2)``).

*Writer features* (``checkConstraints`` once no constraint is left, ``inCommitTimestamp``,
``icebergCompatV1/V2``) are dropped in one commit, and so is the reader-writer feature ``geospatial`` once no
``geometry`` / ``geography`` column is left (at any depth; ``DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE`` names
those there are): its columns leave no trace in the history that older readers would trip on, so delta-spark
drops it without protecting or truncating the history. *Reader-writer features* (``deletionVectors``,
``v2Checkpoint``, ``vacuumProtocolCheck``, ``typeWidening``, ``typeWidening-preview``) need the older
versions protected, since they still list the feature:

* by default (delta-spark 4's way) the drop commit adds the ``checkpointProtection`` writer feature and
  records its own version in ``delta.requireCheckpointProtectionBeforeVersion``, and a classic checkpoint
  is written at that version: clients read from there, and log cleanup removes the history before it all
  at once or not at all;
* with ``truncate_history=True`` (``DROP FEATURE ... TRUNCATE HISTORY``) the log is truncated instead. The
  traces must have been gone for ``delta.dropFeatureTruncateHistory.retentionDuration`` (default 24
  hours): a first call removes them and raises ``DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD``; the call
  made after that period checks the retained history, drops the feature and deletes the log before the
  cutoff.

``checkpointProtection`` itself can be dropped once the history before its version is gone (with
``truncate_history=True`` deltalog removes it, once that version is older than the retention period).
Other features are refused (``DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE``), and so is ``columnMapping``,
which needs every file rewritten with logical names, something deltalog does not do yet. Every refusal is
a :class:`~deltalog.errors.FeatureDropError` that says what, if anything, was committed.

Example:
    >>> import deltalog
    >>> drop_feature(deltalog.Table("/data/t"), "deletionVectors").protocol.minReaderVersion  # doctest: +SKIP
    1
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.errors import FeatureDropError
from deltalog.log.cleanup import PROTECTED_BEFORE, duration_property_ms
from deltalog.log.paths import LogFile, commit_name
from deltalog.log.segment import complete_checkpoints, list_log
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.features import LEGACY_READER_FEATURES, LEGACY_WRITER_FEATURES, reader_features, writer_features
from deltalog.protocol.iceberg_compat import compat_version
from deltalog.protocol.schema import ArrayType, DataType, MapType, StructType, contains_geo, join_path
from deltalog.txn.operations import DropTableFeature, Reorg, SetTableProperties
from deltalog.txn.writer_features import FEATURES, is_true

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["REMOVABLE_FEATURES", "DropFeatureResult", "drop_feature", "feature_traces", "protocol_without",
           "rewrite_files"]

_RETENTION = "delta.dropFeatureTruncateHistory.retentionDuration"
_DEFAULT_RETENTION = "interval 24 hours"
_TYPE_CHANGES = "delta.typeChanges"
#: Properties whose presence keeps a feature in use (removed before the drop).
_PROPERTIES: dict[str, tuple[str, ...]] = {
    "deletionVectors": ("delta.enableDeletionVectors",),
    "inCommitTimestamp": ("delta.enableInCommitTimestamps", "delta.inCommitTimestampEnablementVersion",
                          "delta.inCommitTimestampEnablementTimestamp"),
    "typeWidening": ("delta.enableTypeWidening",),
    "typeWidening-preview": ("delta.enableTypeWidening",),
    "icebergCompatV1": ("delta.enableIcebergCompatV1",),
    "icebergCompatV2": ("delta.enableIcebergCompatV2",),
    "checkpointProtection": (PROTECTED_BEFORE,),
}
_READER_WRITER = ("deletionVectors", "v2Checkpoint", "vacuumProtocolCheck", "typeWidening", "typeWidening-preview")
_WRITER = ("checkConstraints", "inCommitTimestamp", "icebergCompatV1", "icebergCompatV2", "checkpointProtection")
#: Reader-writer features without history protection (delta-spark's ``requiresHistoryProtection = false``):
#: dropped in one commit, as writer features are.
_NO_HISTORY = ("geospatial",)
#: The features :func:`drop_feature` can drop.
REMOVABLE_FEATURES: frozenset[str] = frozenset(_READER_WRITER + _WRITER + _NO_HISTORY)
_WHY_NOT = {
    "columnMapping": "dropping it needs every data file rewritten with logical column names, which deltalog "
                     "does not do yet",
    "variantShredding": "dropping it needs every shredded data file rewritten unshredded, which deltalog does not "
                        "do yet",
    "variantShredding-preview": "dropping it needs every shredded data file rewritten unshredded, which deltalog "
                                "does not do yet",
}
_Clock = Callable[[], int]


@dataclass(frozen=True)
class DropFeatureResult:
    """What :func:`drop_feature` did: ``version`` is the ``DROP FEATURE`` commit (``None`` with
    ``dry_run``), ``prepared_versions`` the commits that removed the feature's traces before it,
    ``truncated_before`` the first version the log keeps after ``truncate_history``, and ``steps`` what
    was (or, with ``dry_run``, would be) done.

    Example:
        >>> DropFeatureResult(feature="vacuumProtocolCheck", version=None, protocol=None).prepared_versions
        ()
    """

    feature: str
    version: int | None
    protocol: Protocol | None
    prepared_versions: tuple[int, ...] = ()
    truncated_before: int | None = None
    steps: tuple[str, ...] = ()


def _error(code: str, message: str, table: TableHandle) -> FeatureDropError:
    return FeatureDropError(f"[{code}] {message}", table=table.location)


def _canonical(name: Any, table: TableHandle) -> str:
    if not isinstance(name, str) or not name.strip():
        raise _error("DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE", f"a feature name is needed, got {name!r}",
                     table)
    for known in FEATURES:
        if known.lower() == name.strip().lower():
            return known
    raise _error("DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE",
                 f"'{name}' is not a table feature deltalog knows; known: {', '.join(sorted(FEATURES))}", table)


def protocol_without(protocol: Protocol, feature: str, *, add: tuple[str, ...] = ()) -> Protocol:
    """``protocol`` without ``feature`` (and with the writer features ``add``), at the lowest versions
    that express what remains.

    Example:
        >>> dv = ("deletionVectors",)
        >>> protocol_without(Protocol(3, 7, dv, ("appendOnly", "deletionVectors", "invariants")), dv[0])
        Protocol(minReaderVersion=1, minWriterVersion=2, readerFeatures=None, writerFeatures=None, extra={})
        >>> protocol_without(Protocol(3, 7, dv, dv), dv[0], add=("checkpointProtection",))
        Protocol(minReaderVersion=1, minWriterVersion=7, readerFeatures=None, \
writerFeatures=('checkpointProtection',), extra={})
    """
    rf = set(reader_features(protocol)) - {feature}
    wf = (set(writer_features(protocol)) | set(add)) - {feature}
    reader = next((v for v, implied in sorted(LEGACY_READER_FEATURES.items()) if implied == rf), None)
    writer = next((v for v, implied in sorted(LEGACY_WRITER_FEATURES.items()) if implied == wf), None)
    if reader is not None and writer is not None and (reader == 1 or writer >= 5):
        return Protocol(minReaderVersion=reader, minWriterVersion=max(writer, 1))
    if reader is not None and (reader == 1 or rf <= wf):  # legacy reader version, explicit writer features
        return Protocol(minReaderVersion=reader, minWriterVersion=7, writerFeatures=tuple(sorted(wf | rf)))
    return Protocol(3, 7, tuple(sorted(rf)), tuple(sorted(wf | rf)))


def _schema_type_changes(schema_string: str | None) -> bool:
    return bool(schema_string) and f'"{_TYPE_CHANGES}"' in str(schema_string)


def _without_type_changes(schema_string: str) -> str:
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != _TYPE_CHANGES}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return json.dumps(strip(json.loads(schema_string)), separators=(",", ":"))


def _latest_checkpoint(snapshot: Snapshot) -> tuple[int | None, bool]:
    """The version of the latest complete checkpoint up to ``snapshot`` and whether only v2 checkpoints
    exist there."""
    files = [f for f in list_log(snapshot.store, 0) if f.version <= snapshot.version]
    done = complete_checkpoints(files)
    if not done:
        return None, False
    latest = max(done)
    kinds = {f.is_v2_checkpoint for f in files if f.kind == "checkpoint" and f.version == latest}
    return latest, kinds == {True}


def _latest_checkpoint_is_v2(snapshot: Snapshot) -> bool:
    return _latest_checkpoint(snapshot)[1]


def _checkpoint(snapshot: Snapshot, clock: _Clock | None) -> None:
    """A classic checkpoint of ``snapshot`` unless one is there already (the post-commit hook may have
    written it)."""
    from deltalog.log.checkpoint_writer import write_checkpoint

    version, only_v2 = _latest_checkpoint(snapshot)
    if version != snapshot.version or only_v2:
        write_checkpoint(snapshot, clock=clock)


def _geo_columns(dt: DataType, path: str = "") -> list[str]:
    """The paths of the geospatial columns in ``dt`` (``s.p``, ``xs.element``, ``m.value``)."""
    if not contains_geo(dt):
        return []
    if isinstance(dt, StructType):
        return [p for f in dt.fields for p in _geo_columns(f.type, join_path(path, f.name))]
    if isinstance(dt, ArrayType):
        return _geo_columns(dt.element_type, join_path(path, "element"))
    if isinstance(dt, MapType):
        return _geo_columns(dt.key_type, join_path(path, "key")) + _geo_columns(dt.value_type, join_path(path, "value"))
    return [path]


def feature_traces(snapshot: Snapshot, feature: str) -> list[str]:
    """What in ``snapshot`` still uses ``feature`` (empty: it can be dropped from the protocol).

    Example:
        >>> feature_traces(deltalog.Table("/data/t").snapshot(), "deletionVectors")  # doctest: +SKIP
        ['property delta.enableDeletionVectors=true', '3 files with deletion vectors']
    """
    conf = snapshot.metadata.configuration
    out = [f"property {k}={conf[k]}" for k in _PROPERTIES.get(feature, ()) if k in conf
           and (k != "delta.enableDeletionVectors" or is_true(conf, k))
           and (k != "delta.enableTypeWidening" or is_true(conf, k))]
    if feature == "deletionVectors":
        n = snapshot.add_files().column("deletionVector").drop_null().length()
        if n:
            out.append(f"{n} files with deletion vectors")
    elif feature == "v2Checkpoint":
        if str(conf.get("delta.checkpointPolicy", "classic")).lower() == "v2":
            out.append("property delta.checkpointPolicy=v2")
        if _latest_checkpoint_is_v2(snapshot):
            out.append("the latest checkpoint is a v2 checkpoint")
    elif feature.startswith("typeWidening"):
        if _schema_type_changes(snapshot.metadata.schemaString):
            out.append(f"{_TYPE_CHANGES} in the schema")
    elif feature == "checkConstraints":
        names = sorted(k[len("delta.constraints."):] for k in conf if k.startswith("delta.constraints."))
        if names:
            out.append(f"CHECK constraints {names}")
    elif feature == "geospatial":
        columns = _geo_columns(snapshot.schema)
        if columns:
            out.append(f"geospatial columns {', '.join(columns)}")
    return out


def _options(clock: _Clock | None, snapshot: Snapshot | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if snapshot is not None:
        out["snapshot"] = snapshot
    if clock is not None:
        out["clock"] = clock
    return out


def _set_conf(table: TableHandle, snap: Snapshot, conf: dict[str, str], clock: _Clock | None) -> int:
    txn = table.transaction(SetTableProperties(properties={k: v for k, v in conf.items()
                                                           if conf.get(k) != snap.metadata.configuration.get(k)}),
                            **_options(clock, snap))
    txn.update_metadata(replace(snap.metadata, configuration=conf))
    return txn.commit().version


def rewrite_files(table: TableHandle, snap: Snapshot, rows: list[dict[str, Any]], clock: _Clock | None,
                  *, purge: bool, iceberg_compat: int | None = None) -> int:
    """Rewrite ``rows`` (live files) with their kept rows in the table's current types, ``dataChange=false``,
    in one REORG commit (``purge``: deletion vectors are purged); returns its version. ``iceberg_compat``: the
    Iceberg compat version the new files follow (default: the table's own).

    Example:
        >>> rewrite_files(table, snap, snap.add_files().to_pylist(), None, purge=True)   # doctest: +SKIP
        7
    """
    from deltalog.data.read import kept_rows, read_file_rows, with_row_tracking_columns
    from deltalog.data.write_files import DataFileWriter
    from deltalog.txn.row_tracking import tracked_fields, tracked_schema

    txn = table.transaction(Reorg(apply_purge=purge), **_options(clock, snap))
    txn.read_files(r["path"] for r in rows)
    tracked = tracked_fields(snap.protocol, snap.metadata)  # row tracking: the rows keep their ids
    schema = tracked_schema(snap.schema, tracked)
    writer = DataFileWriter(table.store, schema, snap.partition_columns, column_mapping=snap.column_mapping_mode,
                            iceberg_compat=iceberg_compat if iceberg_compat is not None else
                            compat_version(snap.metadata.configuration))
    written: list[str] = []

    def discard() -> None:
        for rel in written:
            table.store.delete(rel)

    with txn.discard_unless_committed(discard):
        try:
            for row in rows:
                if tracked is None:
                    writer.write(read_file_rows(snap, row))
                    continue
                data = with_row_tracking_columns(snap, row, read_file_rows(snap, row, apply_deletion_vector=False),
                                                 (tracked[0].name, tracked[1].name))
                writer.write(data.filter(pa.array(kept_rows(snap, row, data.num_rows))))
            files = writer.close()
        except BaseException:
            writer.abort()
            raise
        written.extend(f.rel_path for f in files)
        txn.remove_files(rows, data_change=False)
        for f in files:
            txn.add_file(replace(f.to_add(), dataChange=False))
        txn.keeps_row_ids = tracked is not None
        return txn.commit().version


def _old_type_files(snap: Snapshot) -> list[dict[str, Any]]:
    """Live files whose parquet schema holds a column with ``delta.typeChanges`` in an older type."""
    from deltalog.data.read import file_arrow_schema
    from deltalog.protocol.column_mapping import physical_schema

    changed = [f for f in snap.schema.fields if _schema_type_changes(json.dumps(f.metadata, default=str))]
    nested = [f for f in snap.schema.fields if f not in changed and _schema_type_changes(
        json.dumps(f.metadata, default=str) + str(f.type))]
    expected = physical_schema(snap.schema, snap.column_mapping_mode).to_arrow_schema()
    names = [str(f.metadata.get("delta.columnMapping.physicalName") or f.name) for f in changed]
    out = []
    for row in snap.add_files().to_pylist():
        if nested:
            out.append(row)
            continue
        have = file_arrow_schema(snap, row)
        if any(n in have.names and have.field(n).type != expected.field(n).type for n in names):
            out.append(row)
    return out


def _remove_traces(table: TableHandle, feature: str, clock: _Clock | None) -> list[int]:
    """Commit what takes ``feature``'s traces out of the latest version; the versions committed."""
    versions: list[int] = []
    snap = table.snapshot()
    conf = dict(snap.metadata.configuration)
    if feature == "deletionVectors":
        if "delta.enableDeletionVectors" in conf and is_true(conf, "delta.enableDeletionVectors"):
            conf["delta.enableDeletionVectors"] = "false"
            versions.append(_set_conf(table, snap, conf, clock))
            snap = table.snapshot()
        rows = [r for r in snap.add_files().to_pylist() if r.get("deletionVector")]
        if rows:
            versions.append(rewrite_files(table, snap, rows, clock, purge=True))
    elif feature == "v2Checkpoint":
        at, only_v2 = _latest_checkpoint(snap)
        if str(conf.get("delta.checkpointPolicy", "classic")).lower() == "v2" or (only_v2 and at == snap.version):
            conf["delta.checkpointPolicy"] = "classic"  # also a new version to write the classic checkpoint at
            versions.append(_set_conf(table, snap, conf, clock))
            snap = table.snapshot()
        if _latest_checkpoint_is_v2(snap):
            _checkpoint(snap, clock)
    elif feature.startswith("typeWidening"):
        if is_true(conf, "delta.enableTypeWidening"):
            conf["delta.enableTypeWidening"] = "false"
            versions.append(_set_conf(table, snap, conf, clock))
            snap = table.snapshot()
        if _schema_type_changes(snap.metadata.schemaString):
            rows = _old_type_files(snap)
            if rows:
                versions.append(rewrite_files(table, snap, rows, clock, purge=False))
                snap = table.snapshot()
            txn = table.transaction(SetTableProperties(properties={}), **_options(clock, snap))
            txn.update_metadata(replace(snap.metadata, schemaString=_without_type_changes(
                str(snap.metadata.schemaString))))
            versions.append(txn.commit().version)
    return versions


def _commit_drop(table: TableHandle, snap: Snapshot, feature: str, *, truncate: bool, protect: bool,
                 clock: _Clock | None) -> tuple[int, Protocol]:
    conf = {k: v for k, v in snap.metadata.configuration.items()
            if k not in _PROPERTIES.get(feature, ()) and k.lower() != f"delta.feature.{feature.lower()}"}
    protocol = protocol_without(snap.protocol, feature, add=("checkpointProtection",) if protect else ())
    txn = table.transaction(DropTableFeature(feature_name=feature, truncate_history=truncate,
                                             protect_checkpoints=protect), **_options(clock, snap))
    txn.read_whole_table()
    txn.update_protocol(protocol)
    metadata = replace(snap.metadata, configuration=conf)
    if metadata != snap.metadata or protect:
        txn.update_metadata(metadata)
    return txn.commit().version, protocol


def _check_traces(table: TableHandle, snap: Snapshot, feature: str, prepared: list[int]) -> None:
    traces = feature_traces(snap, feature)
    if traces:
        done = f"versions {prepared} removed traces, but " if prepared else ""
        raise _error("DELTA_FEATURE_DROP_FEATURE_TRACES_REMAIN",
                     f"cannot drop {feature}: {done}version {snap.version} still has {'; '.join(traces)} "
                     "(a concurrent writer may have added them); run the drop again", table)


def _commit_traces(table: TableHandle, snap: Snapshot, feature: str, version: int) -> str | None:
    """The first trace of ``feature`` in commit ``version`` (a history check for TRUNCATE HISTORY)."""
    from deltalog.log.reader import read_commit

    actions = read_commit(table.store, LogFile(commit_name(version), "commit", version), table=table.location)
    if feature == "deletionVectors" and "deletionVector" in actions.adds.column_names and \
            actions.adds.column("deletionVector").drop_null().length():
        return "files with deletion vectors"
    for action in actions.others:
        if isinstance(action, Metadata):
            conf = action.configuration
            if feature == "v2Checkpoint" and str(conf.get("delta.checkpointPolicy", "")).lower() == "v2":
                return "delta.checkpointPolicy=v2"
            if feature.startswith("typeWidening") and (is_true(conf, "delta.enableTypeWidening")
                                                       or _schema_type_changes(action.schemaString)):
                return "type widening enabled or recorded"
            if feature == "deletionVectors" and is_true(conf, "delta.enableDeletionVectors"):
                return "delta.enableDeletionVectors=true"
    return None


def _truncate(table: TableHandle, feature: str, prepared: list[int], clock: _Clock | None) -> tuple[int, Protocol, int]:
    from deltalog.log.checkpoint_writer import write_checkpoint
    from deltalog.log.cleanup import cleanup_expired_logs
    from deltalog.log.timestamps import commit_timestamps

    snap = table.snapshot()
    retention = duration_property_ms(snap.properties, _RETENTION, _DEFAULT_RETENTION)
    now = clock() if clock is not None else int(time.time() * 1000)
    hours = retention / 3_600_000
    wait = (f"run the drop with TRUNCATE HISTORY again after {_RETENTION} ({hours:g} hours) has passed; "
            "nothing else was changed")
    if prepared:
        raise _error("DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD",
                     f"the traces of {feature} were removed in versions {prepared}; {wait}", table)
    files = list_log(table.store, 0)
    commits = [f for f in files if f.kind == "commit" and f.version <= snap.version]
    stamps = commit_timestamps(table.store, commits, table=table.location)
    old = [c.version for c, ts in zip(commits, stamps) if ts <= now - retention]
    if not old:
        raise _error("DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD",
                     f"every version of the log is younger than {hours:g} hours; {wait}", table)
    keep = old[-1]
    kept = table.snapshot(version=keep)
    found = feature_traces(kept, feature) if feature != "v2Checkpoint" else [
        t for t in feature_traces(kept, feature) if "checkpointPolicy" in t]
    for v in range(keep + 1, snap.version + 1):
        trace = _commit_traces(table, snap, feature, v)
        if trace:
            found.append(f"version {v}: {trace}")
    if feature == "v2Checkpoint":
        found += [f"v2 checkpoint {f.name}" for f in files if f.is_v2_checkpoint and f.version >= keep]
    if found:
        raise _error("DELTA_FEATURE_DROP_HISTORICAL_VERSIONS_EXIST",
                     f"versions kept after truncation (from {keep}) still use {feature}: {'; '.join(found)}; "
                     f"{wait}", table)
    if keep not in complete_checkpoints(files):
        write_checkpoint(kept, clock=clock, update_last_checkpoint=False)
    version, protocol = _commit_drop(table, snap, feature, truncate=True, protect=False, clock=clock)
    _checkpoint(table.snapshot(version=version), clock)
    keep_stamp = next(ts for c, ts in zip(commits, stamps) if c.version == keep)
    cleanup_expired_logs(table.snapshot(), retention=now - keep_stamp, clock=lambda: now, truncate_to_day=False)
    return version, protocol, keep


def drop_feature(table: TableHandle, feature: str, *, truncate_history: bool = False, dry_run: bool = False,
                 clock: _Clock | None = None) -> DropFeatureResult:
    """Drop ``feature`` from ``table``'s protocol (see the module docstring for the rules).

    ``dry_run`` commits nothing and lists the steps a real run would take.

    Example:
        >>> drop_feature(deltalog.Table("/data/t"), "v2Checkpoint", dry_run=True).steps  # doctest: +SKIP
        ('set delta.checkpointPolicy=classic', 'commit DROP FEATURE v2Checkpoint', ...)
    """
    name = _canonical(feature, table)
    snap = table.snapshot()
    present = set(reader_features(snap.protocol)) | set(writer_features(snap.protocol))
    if name not in present:
        raise _error("DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT",
                     f"the table's protocol ({snap.protocol.minReaderVersion}, {snap.protocol.minWriterVersion}) "
                     f"does not have {name}; nothing to drop", table)
    if name not in REMOVABLE_FEATURES:
        why = _WHY_NOT.get(name, "delta-spark cannot drop it either" if name in FEATURES else "")
        raise _error("DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE", f"{name} cannot be dropped: {why}", table)
    if name not in (snap.protocol.writerFeatures or ()) and name not in (snap.protocol.readerFeatures or ()):
        raise _error("DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE",
                     f"{name} is implied by the legacy protocol ({snap.protocol.minReaderVersion}, "
                     f"{snap.protocol.minWriterVersion}) and cannot be dropped on its own", table)
    if name == "checkConstraints" and feature_traces(snap, name):
        raise _error("DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE",
                     f"drop the table's {feature_traces(snap, name)[0]} first (ALTER TABLE ... DROP CONSTRAINT)",
                     table)
    reader_writer = name in _READER_WRITER
    if truncate_history and not reader_writer and name != "checkpointProtection":
        kind = "a writer feature" if name in _WRITER else "a feature that leaves no trace in the table's history"
        raise _error("DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED",
                     f"{name} is {kind}: it is dropped without truncating history (run the drop without "
                     "TRUNCATE HISTORY)", table)
    if name == "geospatial" and feature_traces(snap, name):
        raise _error("DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE",
                     f"cannot drop the geospatial table feature: the table still has {feature_traces(snap, name)[0]}; "
                     "drop those columns first (ALTER TABLE ... DROP COLUMN, which needs column mapping), then the "
                     "feature", table)
    steps = (*tuple(f"remove {t}" for t in feature_traces(snap, name)), f"commit DROP FEATURE {name}")
    if dry_run:
        if reader_writer:
            steps += (("truncate the log before the retention period",) if truncate_history
                      else ("add checkpointProtection", "write a checkpoint"))
        return DropFeatureResult(feature=name, version=None, protocol=None, steps=steps)
    if name == "checkpointProtection":
        return _drop_protection(table, snap, truncate_history, clock)
    if not reader_writer:  # one commit: the properties go with the feature
        version, protocol = _commit_drop(table, snap, name, truncate=False, protect=False, clock=clock)
        return DropFeatureResult(feature=name, version=version, protocol=protocol, steps=steps)
    prepared = _remove_traces(table, name, clock)
    _check_traces(table, table.snapshot(), name, prepared)
    if truncate_history:
        version, protocol, keep = _truncate(table, name, prepared, clock)
        return DropFeatureResult(feature=name, version=version, protocol=protocol, prepared_versions=tuple(prepared),
                                 truncated_before=keep, steps=steps)
    version, protocol = _commit_drop(table, table.snapshot(), name, truncate=False, protect=True, clock=clock)
    _checkpoint(table.snapshot(version=version), clock)
    return DropFeatureResult(feature=name, version=version, protocol=protocol, prepared_versions=tuple(prepared),
                             steps=steps)


def _drop_protection(table: TableHandle, snap: Snapshot, truncate: bool, clock: _Clock | None) -> DropFeatureResult:
    from deltalog.log.cleanup import cleanup_expired_logs
    from deltalog.log.timestamps import commit_timestamps

    protected = int(snap.properties.get(PROTECTED_BEFORE, "0") or 0)
    files = list_log(table.store, 0)
    oldest = min((f.version for f in files if f.kind in ("commit", "checkpoint")), default=0)
    if oldest < protected:
        if not truncate:
            raise _error("DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD",
                         f"the log still holds versions {oldest}..{protected - 1}, which checkpointProtection "
                         "protects; drop it with TRUNCATE HISTORY once they are older than "
                         f"{_RETENTION}", table)
        now = clock() if clock is not None else int(time.time() * 1000)
        retention = duration_property_ms(snap.properties, _RETENTION, _DEFAULT_RETENTION)
        commits = [f for f in files if f.kind == "commit" and f.version == protected]
        stamp = commit_timestamps(table.store, commits, table=table.location)[0] if commits else now
        if protected not in complete_checkpoints(files) or stamp > now - retention:
            raise _error("DELTA_FEATURE_DROP_CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD",
                         f"version {protected} must be checkpointed and older than {_RETENTION} before the "
                         "history before it can be truncated; nothing was changed", table)
        cleanup_expired_logs(snap, retention=now - stamp, clock=lambda: now, truncate_to_day=False)
    version, protocol = _commit_drop(table, table.snapshot(), "checkpointProtection", truncate=truncate,
                                     protect=False, clock=clock)
    return DropFeatureResult(feature="checkpointProtection", version=version, protocol=protocol,
                             truncated_before=protected if oldest < protected else None,
                             steps=("commit DROP FEATURE checkpointProtection",))

