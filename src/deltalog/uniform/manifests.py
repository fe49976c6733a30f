"""Iceberg manifests and manifest lists of the converted table: written with pyiceberg's Avro writers into
memory and put through the store under fresh names, read back through the same store, and the entries of
each manifest remembered (manifests never change once written) so that a commit that removes files only
reads the manifests it has not seen.

Example:
    >>> entries = manifest_entries(fio, manifest)                               # doctest: +SKIP
    >>> [e.data_file.file_path for e in entries]                                # doctest: +SKIP
    ['/data/t/part-0.parquet']
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence

from pyiceberg.avro.codecs import AvroCompressionCodec
from pyiceberg.manifest import (
    DataFile,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from deltalog.uniform.io import METADATA_DIR, StoreFileIO

__all__ = [
    "CODEC",
    "live_entries",
    "manifest_entries",
    "new_manifest",
    "write_list",
]

#: Avro codec of every manifest and manifest list (Iceberg's own default).
CODEC: AvroCompressionCodec = "deflate"
_CACHE_SIZE = 4096
_cache: OrderedDict[str, list[ManifestEntry]] = OrderedDict()
_lock = threading.Lock()


def _remember(location: str, entries: list[ManifestEntry]) -> None:
    with _lock:
        _cache[location] = entries
        _cache.move_to_end(location)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)


def manifest_entries(fio: StoreFileIO, manifest: ManifestFile) -> list[ManifestEntry]:
    """Every entry of ``manifest`` (deleted ones too), sequence numbers inherited as Iceberg's readers do.

    Example:
        >>> len(manifest_entries(fio, manifest))                                   # doctest: +SKIP
        2
    """
    with _lock:
        found = _cache.get(manifest.manifest_path)
    if found is not None:
        return found
    entries = manifest.fetch_manifest_entry(fio, discard_deleted=False)
    _remember(manifest.manifest_path, entries)
    return entries


def live_entries(fio: StoreFileIO, manifest: ManifestFile) -> list[ManifestEntry]:
    """The entries of ``manifest`` that are live (added or existing).

    Example:
        >>> [e.status for e in live_entries(fio, manifest)]                        # doctest: +SKIP
        [ManifestEntryStatus.ADDED]
    """
    return [e for e in manifest_entries(fio, manifest) if e.status != ManifestEntryStatus.DELETED]


_lists: OrderedDict[str, list[ManifestFile]] = OrderedDict()


def manifest_list(fio: StoreFileIO, location: str) -> list[ManifestFile]:
    """The manifests a manifest list names (remembered: a manifest list never changes once written).

    Example:
        >>> [m.manifest_path for m in manifest_list(fio, snapshot.manifest_list)]  # doctest: +SKIP
        ['/data/t/metadata/manifest-1-....avro']
    """
    with _lock:
        found = _lists.get(location)
    if found is not None:
        return list(found)
    from pyiceberg.manifest import read_manifest_list

    manifests = list(read_manifest_list(fio.new_input(location)))
    _remember_list(location, manifests)
    return list(manifests)


def _remember_list(location: str, manifests: list[ManifestFile]) -> None:
    with _lock:
        _lists[location] = manifests
        _lists.move_to_end(location)
        while len(_lists) > 256:
            _lists.popitem(last=False)


def _name(kind: str, snapshot_id: int) -> str:
    return f"{METADATA_DIR}/{kind}-{snapshot_id}-{uuid.uuid4().hex}.avro"


def new_manifest(
    fio: StoreFileIO,
    spec: PartitionSpec,
    schema: Schema,
    snapshot_id: int,
    sequence_number: int,
    *,
    added: Sequence[DataFile] = (),
    existing: Sequence[ManifestEntry] = (),
    deleted: Sequence[ManifestEntry] = (),
) -> ManifestFile | None:
    """Write one manifest of ``spec`` for snapshot ``snapshot_id`` (whose sequence number is
    ``sequence_number``); None when it would be empty. ``added`` files, ``existing`` entries carried over
    from a manifest being rewritten and ``deleted`` entries (files this snapshot removes).

    Example:
        >>> new_manifest(fio, spec, schema, 1, 1, added=[data_file]).added_files_count  # doctest: +SKIP
        1
    """
    if not added and not existing and not deleted:
        return None
    location = fio.location(_name("manifest", snapshot_id))
    kept: list[ManifestEntry] = []
    writer = write_manifest(2, spec, schema, fio.new_output(location), snapshot_id, CODEC)
    with writer:
        for df in added:
            writer.add_entry(ManifestEntry.from_args(
                status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, sequence_number=None,
                file_sequence_number=None, data_file=df))
            kept.append(ManifestEntry.from_args(
                status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id, sequence_number=sequence_number,
                file_sequence_number=sequence_number, data_file=df))
        for e in existing:
            writer.existing(e)
            kept.append(ManifestEntry.from_args(
                status=ManifestEntryStatus.EXISTING, snapshot_id=e.snapshot_id, sequence_number=e.sequence_number,
                file_sequence_number=e.file_sequence_number, data_file=e.data_file))
        for e in deleted:
            writer.delete(e)
            kept.append(ManifestEntry.from_args(
                status=ManifestEntryStatus.DELETED, snapshot_id=snapshot_id, sequence_number=e.sequence_number,
                file_sequence_number=e.file_sequence_number, data_file=e.data_file))
    manifest = writer.to_manifest_file()
    _remember(manifest.manifest_path, kept)
    return manifest


def write_list(
    fio: StoreFileIO, snapshot_id: int, parent_id: int | None, sequence_number: int, manifests: Sequence[ManifestFile]
) -> str:
    """Write the manifest list of a snapshot; returns its location.

    Example:
        >>> write_list(fio, 7, None, 1, [manifest])                                # doctest: +SKIP
        '/data/t/metadata/snap-7-....avro'
    """
    location = fio.location(_name("snap", snapshot_id))
    with write_manifest_list(2, fio.new_output(location), snapshot_id, parent_id, sequence_number, CODEC) as w:
        w.add_manifests(list(manifests))
        written = [w.prepare_manifest(m) for m in manifests]  # with this snapshot's sequence numbers
    _remember_list(location, written)
    return location
