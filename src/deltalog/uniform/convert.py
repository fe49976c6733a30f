"""Bringing a table's Iceberg metadata up to a Delta version: incrementally (one Iceberg snapshot per Delta
commit that changes the files, a new metadata version for a commit that only changes schema or
properties), or rebuilt from the Delta snapshot when the commits in between are no longer in the log.

The Iceberg metadata records the Delta version it was converted from in its properties (``delta-version``,
``delta-timestamp``) and every snapshot's summary (``delta-version``). A writer reads the newest metadata
version N, builds N+1 (manifests and manifest list first, the metadata JSON last, put-if-absent) and then
moves ``version-hint.text``; a writer that loses the race for N+1 reads again and goes on from there, or
stops when the winner already converted its version.

Example:
    >>> result = sync_snapshot(deltalog.Table("/data/t").snapshot())            # doctest: +SKIP
    >>> result.converted_version, result.mode                                   # doctest: +SKIP
    (4, 'incremental')
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyiceberg.manifest import DataFile, ManifestEntry, ManifestEntryStatus, ManifestFile
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataV2
from pyiceberg.table.refs import SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import MetadataLogEntry, Operation, Snapshot, SnapshotLogEntry, Summary
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from deltalog.errors import DeltaError
from deltalog.log.files import ADD_SCHEMA, REMOVE_SCHEMA
from deltalog.log.reader import FileActions, read_commits_each
from deltalog.log.segment import list_log
from deltalog.protocol.actions import Metadata
from deltalog.protocol.schema import parse_schema
from deltalog.storage import LogStore
from deltalog.uniform.datafiles import FileContext, data_file, file_location
from deltalog.uniform.io import StoreFileIO, current_version, metadata_path, publish_metadata, read_metadata
from deltalog.uniform.manifests import live_entries, manifest_entries, manifest_list, new_manifest, write_list
from deltalog.uniform.schema import ConvertedSchema, convert_schema, partition_spec, same_schema

__all__ = [
    "DELTA_TIMESTAMP",
    "DELTA_VERSION",
    "SyncResult",
    "clear_caches",
    "sync_snapshot",
]

log = logging.getLogger(__name__)

DELTA_VERSION = "delta-version"
DELTA_TIMESTAMP = "delta-timestamp"
NAME_MAPPING = "schema.name-mapping.default"
_ATTEMPTS = 8
_MERGE_AT = 32  # manifests of the current snapshot before the small ones are merged into one
_SMALL_MANIFEST = 10_000  # live entries below which a manifest is merged
_ENTRIES_PER_MANIFEST = 50_000
_METADATA_LOG = 100


@dataclass
class SyncResult:
    """What a sync did: ``mode`` is ``up-to-date``, ``incremental``, ``created``, ``rebuilt`` or ``newer``
    (the Iceberg metadata already holds a later Delta version); ``snapshots`` the Iceberg snapshots added."""

    table: str
    mode: str
    converted_version: int | None
    iceberg_version: int | None
    metadata_location: str | None
    snapshots: list[int] = field(default_factory=list)


class _Building:
    """A mutable copy of Iceberg table metadata that commits are applied to, then frozen into N+1."""

    def __init__(self, base: TableMetadataV2 | None, fio: StoreFileIO, table: str, delta_id: str) -> None:
        self.fio = fio
        self.table = table
        self.base = base
        self.schemas: list[Schema] = list(base.schemas) if base else []
        self.schema_id = base.current_schema_id if base else 0
        self.specs: list[PartitionSpec] = list(base.partition_specs) if base else []
        self.spec_id = base.default_spec_id if base else 0
        self.last_partition_id = base.last_partition_id if base else None
        self.last_column_id = base.last_column_id if base else 0
        self.properties: dict[str, str] = dict(base.properties) if base else {}
        self.snapshots: list[Snapshot] = list(base.snapshots) if base else []
        self.snapshot_log: list[SnapshotLogEntry] = list(base.snapshot_log) if base else []
        self.current: Snapshot | None = base.current_snapshot() if base else None
        self.last_seq = base.last_sequence_number if base else 0
        self.manifests: list[ManifestFile] = manifest_list(fio, self.current.manifest_list) if self.current else []
        self.uuid = _table_uuid(delta_id)
        self.added: list[int] = []
        self.ctx: FileContext | None = None

    # ------------------------------------------------------------------------------------ metadata
    def apply_metadata(self, md: Metadata, version: int) -> None:
        schema, conv, mapping = _converted(md, self.table, version)
        same = next((s for s in self.schemas if same_schema(s, conv.schema)), None)
        if same is None:
            new_id = max((s.schema_id for s in self.schemas), default=-1) + 1
            conv = convert_schema(schema, md.configuration, table=self.table, schema_id=new_id)
            self.schemas.append(conv.schema)
            self.schema_id = new_id
        else:
            self.schema_id = same.schema_id
            conv = dataclasses.replace(conv, schema=same)
        self.last_column_id = max(self.last_column_id, conv.last_column_id)
        spec, new = partition_spec(md.partitionColumns, conv, self.specs, self.last_partition_id, table=self.table)
        if new:
            self.specs.append(spec)
            if spec.fields:
                self.last_partition_id = max(f.field_id for f in spec.fields)
        if self.last_partition_id is None:
            self.last_partition_id = 999
        self.spec_id = spec.spec_id
        keep = {k: v for k, v in self.properties.items() if not k.startswith("delta.")}
        keep.update(md.configuration)
        keep[NAME_MAPPING] = mapping
        self.properties = keep
        parts = []
        for name in md.partitionColumns:
            f = schema.field(name)
            parts.append((name, conv.top_level_physical[name], f.type))
        prefix = _int(md.configuration.get("delta.dataSkippingStringPrefixLength"), 32)
        self.ctx = FileContext(conv, spec, parts, self.fio.store, prefix, self.table, version)

    # -------------------------------------------------------------------------------------- files
    def apply_files(
        self, adds: pa.Table, removes: pa.Table, *, version: int, timestamp: int, data_change: bool
    ) -> None:
        ctx = self.ctx
        assert ctx is not None
        ctx.version = version
        add_rows = adds.to_pylist()
        removed = {file_location(ctx.store, p) for p in removes.column("path").to_pylist()}
        readded = {file_location(ctx.store, r["path"]) for r in add_rows if not r.get("dataChange", True)}
        doomed = removed | readded
        keep: list[ManifestFile] = []
        deleted_files: list[DataFile] = []
        rewritten: list[ManifestFile] = []
        snapshot_id = _new_snapshot_id(self.snapshots)
        seq = self.last_seq + 1
        for m in self.manifests:
            if doomed and any(e.data_file.file_path in doomed for e in live_entries(self.fio, m)):
                entries = live_entries(self.fio, m)
                gone = [e for e in entries if e.data_file.file_path in doomed]
                stay = [e for e in entries if e.data_file.file_path not in doomed]
                deleted_files.extend(e.data_file for e in gone)
                spec = self._spec(m.partition_spec_id)
                rewrite = new_manifest(self.fio, spec, self._schema(), snapshot_id, seq, existing=stay, deleted=gone)
                if rewrite is not None:
                    rewritten.append(rewrite)
            else:
                keep.append(m)
        new_files = [data_file(r, ctx) for r in add_rows]
        if not new_files and not deleted_files:
            return
        added = [mf for chunk in _chunks(new_files) if (mf := new_manifest(
            self.fio, ctx.spec, self._schema(), snapshot_id, seq, added=chunk)) is not None]
        manifests = added + rewritten + keep
        if len(manifests) > _MERGE_AT:
            manifests = self._merge(manifests, snapshot_id, seq)
        if new_files and deleted_files:
            op = Operation.OVERWRITE if data_change else Operation.REPLACE
        else:
            op = Operation.APPEND if new_files else Operation.DELETE
        self._snapshot(snapshot_id, seq, manifests, op, version, timestamp, new_files, deleted_files)

    def rebuild_files(self, files: pa.Table, *, version: int, timestamp: int) -> None:
        """One snapshot holding exactly ``files`` (the live files of a Delta snapshot)."""
        ctx = self.ctx
        assert ctx is not None
        ctx.version = version
        snapshot_id = _new_snapshot_id(self.snapshots)
        seq = self.last_seq + 1
        new_files = [data_file(r, ctx) for r in files.to_pylist()]
        manifests = [mf for chunk in _chunks(new_files) if (mf := new_manifest(
            self.fio, ctx.spec, self._schema(), snapshot_id, seq, added=chunk)) is not None]
        op = Operation.APPEND if self.current is None else Operation.OVERWRITE
        self._snapshot(snapshot_id, seq, manifests, op, version, timestamp, new_files, [], total=True)

    def _merge(self, manifests: list[ManifestFile], snapshot_id: int, seq: int) -> list[ManifestFile]:
        """The small manifests (and those of old specs' few files) merged into one per spec; large ones kept."""
        by_spec: dict[int, list[ManifestEntry]] = {}
        out = []
        for m in manifests:
            live = (m.added_files_count or 0) + (m.existing_files_count or 0)
            if live >= _SMALL_MANIFEST:
                out.append(m)
                continue
            by_spec.setdefault(m.partition_spec_id, []).extend(live_entries(self.fio, m))
        for spec_id, entries in by_spec.items():
            for chunk in _chunks(entries):
                merged = new_manifest(self.fio, self._spec(spec_id), self._schema(), snapshot_id, seq, existing=chunk)
                if merged is not None:
                    out.append(merged)
        return out

    def _snapshot(
        self, snapshot_id: int, seq: int, manifests: list[ManifestFile], op: Operation, version: int,
        timestamp: int, added: Sequence[DataFile], deleted: Sequence[DataFile], *, total: bool = False,
    ) -> None:
        prev = self.current.summary if self.current is not None and self.current.summary is not None else None
        def before(key: str) -> int:
            return 0 if total or prev is None else _int(prev.get(key), 0)
        add_rows = sum(f.record_count for f in added)
        del_rows = sum(f.record_count for f in deleted)
        add_size = sum(f.file_size_in_bytes for f in added)
        del_size = sum(f.file_size_in_bytes for f in deleted)
        summary = Summary(
            op,
            **{
                DELTA_VERSION: str(version),
                "added-data-files": str(len(added)),
                "deleted-data-files": str(len(deleted)),
                "added-records": str(add_rows),
                "deleted-records": str(del_rows),
                "added-files-size": str(add_size),
                "removed-files-size": str(del_size),
                "total-data-files": str(before("total-data-files") + len(added) - len(deleted)),
                "total-records": str(before("total-records") + add_rows - del_rows),
                "total-files-size": str(before("total-files-size") + add_size - del_size),
                "total-delete-files": "0",
                "total-position-deletes": "0",
                "total-equality-deletes": "0",
            },
        )
        parent = self.current.snapshot_id if self.current is not None else None
        last_ts = self.snapshot_log[-1].timestamp_ms if self.snapshot_log else 0
        ts = max(timestamp, last_ts)
        snap = Snapshot.model_validate(dict(
            snapshot_id=snapshot_id, parent_snapshot_id=parent, sequence_number=seq, timestamp_ms=ts,
            manifest_list=write_list(self.fio, snapshot_id, parent, seq, manifests), summary=summary,
            schema_id=self.schema_id,
        ))
        self.snapshots.append(snap)
        self.snapshot_log.append(SnapshotLogEntry.model_validate(dict(snapshot_id=snapshot_id, timestamp_ms=ts)))
        self.current = snap
        self.manifests = manifests
        self.last_seq = seq
        self.added.append(snapshot_id)

    def _spec(self, spec_id: int) -> PartitionSpec:
        return next(s for s in self.specs if s.spec_id == spec_id)

    def _schema(self) -> Schema:
        return next(s for s in self.schemas if s.schema_id == self.schema_id)

    # ------------------------------------------------------------------------------------- freeze
    def freeze(
        self, version: int, timestamp: int, now: int, previous: str | None, retention_ms: int
    ) -> TableMetadataV2:
        self.properties[DELTA_VERSION] = str(version)
        self.properties[DELTA_TIMESTAMP] = str(timestamp)
        metadata_log = list(self.base.metadata_log) if self.base else []
        if previous is not None and self.base is not None:
            metadata_log.append(MetadataLogEntry.model_validate(
                dict(metadata_file=previous, timestamp_ms=self.base.last_updated_ms)))
        metadata_log = metadata_log[-_METADATA_LOG:]
        cutoff = now - retention_ms
        current_id = self.current.snapshot_id if self.current else None
        snapshots = [s for s in self.snapshots if s.timestamp_ms >= cutoff or s.snapshot_id == current_id]
        kept = {s.snapshot_id for s in snapshots}
        last_updated = max(now, self.base.last_updated_ms if self.base else 0,
                           self.snapshot_log[-1].timestamp_ms if self.snapshot_log else 0)
        return TableMetadataV2.model_validate(dict(
            location=self.fio.root,
            table_uuid=self.uuid,
            last_updated_ms=last_updated,
            last_column_id=self.last_column_id,
            schemas=self.schemas,
            current_schema_id=self.schema_id,
            partition_specs=self.specs,
            default_spec_id=self.spec_id,
            last_partition_id=self.last_partition_id,
            properties=self.properties,
            current_snapshot_id=current_id,
            snapshots=snapshots,
            snapshot_log=[e for e in self.snapshot_log if e.snapshot_id in kept],
            metadata_log=metadata_log,
            sort_orders=[UNSORTED_SORT_ORDER],
            default_sort_order_id=UNSORTED_SORT_ORDER.order_id,
            refs={"main": SnapshotRef.model_validate({"snapshot-id": current_id, "type": SnapshotRefType.BRANCH})}
            if current_id is not None else {},
            last_sequence_number=self.last_seq,
        ))


_conversions: OrderedDict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[Any, ConvertedSchema, str]] = \
    OrderedDict()


def _converted(md: Metadata, table: str, version: int) -> tuple[Any, ConvertedSchema, str]:
    """The Delta schema of ``md``, its Iceberg conversion (schema id 0) and the name mapping's JSON, remembered
    per table, schema and configuration (a commit's metadata is usually the one before's: this is per commit
    otherwise). The conversion is shared: callers replace its fields, never change them in place."""
    key = (table, md.schemaString or "", tuple(sorted(md.configuration.items())))
    found = _conversions.get(key)
    if found is None:
        schema = parse_schema(md.schemaString or '{"type":"struct","fields":[]}', table=table, version=version)
        conv = convert_schema(schema, md.configuration, table=table)
        found = (schema, conv, conv.name_mapping.model_dump_json())
        _conversions[key] = found
        while len(_conversions) > 64:
            _conversions.popitem(last=False)
    return found


def _int(raw: Any, default: int) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


def _chunks(items: Sequence[Any]) -> list[Sequence[Any]]:
    return [items[i:i + _ENTRIES_PER_MANIFEST] for i in range(0, len(items), _ENTRIES_PER_MANIFEST)]


def _new_snapshot_id(existing: Sequence[Snapshot]) -> int:
    taken = {s.snapshot_id for s in existing}
    while True:
        sid = uuid.uuid4().int & ((1 << 63) - 1)
        if sid and sid not in taken:
            return sid


def _table_uuid(delta_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(delta_id)
    except ValueError:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"delta-table-id:{delta_id}")


def _commit_time(fa: FileActions, fallback: int) -> int:
    info = fa.commit_info
    if info is not None:
        for value in (info.inCommitTimestamp, info.timestamp):
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return fallback


def _commits_between(store: LogStore, first: int, last: int, table: str) -> list[tuple[FileActions, int]] | None:
    """The commits ``first..last`` read from the log with their files' modification times, or None when one
    of them is gone (log cleanup)."""
    files = [f for f in list_log(store, first) if f.kind == "commit" and f.version <= last]
    if [f.version for f in files] != list(range(first, last + 1)):
        return None
    out = read_commits_each(store, files, table=table) if files else []
    return [(fa, f.modification_time) for fa, f in zip(out, files, strict=True)]


def _metadata_of(fa: FileActions) -> Metadata | None:
    return next((a for a in fa.others if isinstance(a, Metadata)), None)


def _data_change(fa: FileActions) -> bool:
    values = [*fa.adds.column("dataChange").to_pylist(), *fa.removes.column("dataChange").to_pylist()]
    return any(v is not False for v in values)


def sync_snapshot(
    snapshot: Any,
    *,
    commit: FileActions | None = None,
    rebuild: bool = False,
    clock: Callable[[], int] | None = None,
    metadata_at: Callable[[int], Metadata] | None = None,
) -> SyncResult:
    """Bring the Iceberg metadata of ``snapshot``'s table up to ``snapshot.version`` (see the module docstring).

    ``commit``: the actions of ``snapshot.version`` itself when the caller has them (a writer after its
    commit). ``rebuild``: write the Iceberg metadata anew from the snapshot, dropping the Iceberg history.
    ``metadata_at``: the Delta metadata at a version (for catching up over commits that changed it).

    Example:
        >>> sync_snapshot(deltalog.Table("/data/t").snapshot()).mode               # doctest: +SKIP
        'incremental'
    """
    from deltalog.log.cleanup import duration_property_ms

    store: LogStore = snapshot.store
    table = snapshot.table
    fio = StoreFileIO(store)
    fio.deferring = True
    version = snapshot.version
    now = int(clock()) if clock is not None else time.time_ns() // 1_000_000
    retention_ms = duration_property_ms(snapshot.properties, "delta.logRetentionDuration", "interval 30 days")
    metadata_at = metadata_at or metadata_at_loader(store, table)
    for _ in range(_ATTEMPTS):
        n = current_version(store)
        base = _read_cached(store, fio.root, n) if n is not None else None
        if base is not None and not isinstance(base, TableMetadataV2):
            base = None  # another format version: start over
        converted = _int(base.properties.get(DELTA_VERSION), -1) if base is not None else None
        if base is not None and (str(base.table_uuid) != str(_table_uuid(snapshot.metadata.id))
                                 or base.location.rstrip("/") != fio.root):
            base, converted = None, None  # another table's metadata, or a copy's of another place: start over
        if not rebuild and converted is not None and converted >= version:
            mode = "up-to-date" if converted == version else "newer"
            return SyncResult(table, mode, converted, n, fio.location(metadata_path(n)) if n is not None else None)
        b = _Building(None if rebuild else base, fio, table, snapshot.metadata.id)
        commits: list[tuple[FileActions, int]] | None = None
        if b.base is not None and converted is not None:
            if commit is not None and converted == version - 1:
                commits = [(commit, 0)]
            else:
                commits = _commits_between(store, converted + 1, version, table)
        ts = now
        if commits is not None:
            mode = "incremental"
            ts = _apply_commits(b, commits, snapshot, now, metadata_at)
        else:
            mode = "created" if base is None else "rebuilt"
            b.apply_metadata(snapshot.metadata, version)
            ts = _snapshot_time(snapshot, now)
            if snapshot.num_files() or b.current is not None:
                b.rebuild_files(snapshot.add_files(), version=version, timestamp=ts)
        target = (n or 0) + 1
        previous = fio.location(metadata_path(n)) if n is not None else None
        md = b.freeze(version, ts, now, previous, retention_ms)
        # manifests and manifest lists, all durable before the metadata that names them, then the hint
        if not publish_metadata(fio, target, md.model_dump_json(exclude_none=True).encode("utf-8")):
            log.info("table %s: Iceberg metadata v%d was written by another writer; reading it again", table, target)
            rebuild = False
            continue
        _remember_metadata(store, fio.root, target, md)
        _expire(fio, base, md)
        _drop_old_metadata(store, target)
        return SyncResult(table, mode, version, target, fio.location(metadata_path(target)), b.added)
    raise DeltaError(
        f"gave up writing Iceberg metadata after {_ATTEMPTS} attempts: other writers kept writing it first; the "
        "next commit or `deltalog uniform sync` brings it up to date", table=table, version=version,
    )


_metadata_cache: dict[str, tuple[tuple[int, int, int], TableMetadata]] = {}


def clear_caches() -> None:
    """Forget the Iceberg metadata, manifest lists and manifest entries remembered in this process (the next
    sync reads them from storage, as a fresh process does; the benchmark uses it).

    Example:
        >>> clear_caches()
    """
    import deltalog.uniform.manifests as manifests

    _metadata_cache.clear()
    _conversions.clear()
    with manifests._lock:
        manifests._cache.clear()
        manifests._lists.clear()


def _read_cached(store: LogStore, root: str, n: int) -> TableMetadata:
    """Metadata version ``n``; the last one read or written per table is kept, checked by size and time (a
    table removed and written again may reach the same version with other content)."""
    info = store.stat(metadata_path(n))
    key = (n, info.size, info.modification_time)
    found = _metadata_cache.get(root)
    if found is not None and found[0] == key:
        return found[1]
    md = read_metadata(store, n)
    _remember_metadata(store, root, n, md)
    return md


def _remember_metadata(store: LogStore, root: str, n: int, md: TableMetadata) -> None:
    info = store.stat(metadata_path(n))
    if len(_metadata_cache) > 256:
        _metadata_cache.clear()
    _metadata_cache[root] = ((n, info.size, info.modification_time), md)


def _snapshot_time(snapshot: Any, fallback: int) -> int:
    info = snapshot.commit_info
    if info is not None:
        for value in (info.inCommitTimestamp, info.timestamp):
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return fallback


def _apply_commits(
    b: _Building, commits: list[tuple[FileActions, int]], snapshot: Any, now: int,
    metadata_at: Callable[[int], Metadata] | None,
) -> int:
    first_md = next((i for i, (fa, _) in enumerate(commits) if _metadata_of(fa) is not None), None)
    first = commits[0][0]
    if first_md is None:
        md: Metadata = snapshot.metadata
    elif first_md == 0:
        md = _metadata_of(first)  # type: ignore[assignment]
    elif metadata_at is not None:
        md = metadata_at(first.version - 1)
    else:
        md = snapshot.metadata
    b.apply_metadata(md, first.version)
    ts = now
    for fa, mtime in commits:
        changed = _metadata_of(fa)
        if changed is not None:
            b.apply_metadata(changed, fa.version)
        ts = _commit_time(fa, mtime or now)
        adds = fa.adds if fa.adds.num_rows else ADD_SCHEMA.empty_table()
        removes = fa.removes if fa.removes.num_rows else REMOVE_SCHEMA.empty_table()
        if adds.num_rows or removes.num_rows:
            b.apply_files(adds, removes, version=fa.version, timestamp=ts, data_change=_data_change(fa))
    return ts


def _expire(fio: StoreFileIO, base: TableMetadataV2 | None, md: TableMetadataV2) -> None:
    """Delete the manifest lists and manifests only the snapshots ``md`` dropped used (best effort)."""
    if base is None:
        return
    kept = {s.snapshot_id for s in md.snapshots}
    gone = [s for s in base.snapshots if s.snapshot_id not in kept]
    if not gone:
        return
    try:
        live: set[str] = set()
        for s in md.snapshots:
            live.update(m.manifest_path for m in manifest_list(fio, s.manifest_list))
        for s in gone:
            for m in manifest_list(fio, s.manifest_list):
                if m.manifest_path not in live:
                    fio.delete(m.manifest_path)
            fio.delete(s.manifest_list)
    except Exception as exc:  # leftovers are harmless: the next expiry or a rebuild finds nothing to read them
        log.warning("table %s: could not delete the files of expired Iceberg snapshots: %s", fio.root, exc)


def _drop_old_metadata(store: LogStore, target: int) -> None:
    """Delete the metadata JSON that just left the metadata log (the newest 100 are kept), best effort."""
    old = target - _METADATA_LOG - 1
    if old < 1:
        return
    try:
        store.delete(metadata_path(old))
    except FileNotFoundError:
        pass
    except Exception as exc:
        log.warning("table %s: could not delete old Iceberg metadata %s: %s", store.root, metadata_path(old), exc)


def referenced_data_files(store: LogStore) -> set[str]:
    """Locations of every data file a snapshot of the current Iceberg metadata reads (empty without one).

    Example:
        >>> sorted(referenced_data_files(store))                                  # doctest: +SKIP
        ['/data/t/part-0.parquet']
    """
    n = current_version(store)
    if n is None:
        return set()
    fio = StoreFileIO(store)
    md = read_metadata(store, n)
    out: set[str] = set()
    seen: set[str] = set()
    for s in md.snapshots:
        for m in manifest_list(fio, s.manifest_list):
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            out.update(e.data_file.file_path for e in manifest_entries(fio, m)
                       if e.status != ManifestEntryStatus.DELETED)
    return out


def metadata_at_loader(store: LogStore, location: str) -> Callable[[int], Metadata]:
    """A ``metadata_at`` for :func:`sync_snapshot` that loads the Delta snapshot of a version from the log."""
    def load(v: int) -> Metadata:
        from deltalog.snapshot_load import load_snapshot

        return load_snapshot(store, location, v, verify_checksums=False).metadata
    return load

