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

import io
import json
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from pyiceberg.avro import file as _avro_file
from pyiceberg.avro.codecs import AvroCompressionCodec
from pyiceberg.avro.file import AvroOutputFile
from pyiceberg.avro.resolver import resolve_writer
from pyiceberg.avro.writer import Writer
from pyiceberg.io import OutputFile
from pyiceberg.manifest import (
    DataFile,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestListWriter,
    ManifestListWriterV2,
    ManifestWriter,
    ManifestWriterV2,
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
    output = fio.new_output(location)
    writer: ManifestWriter = _ManifestWriter(spec, schema, output, snapshot_id, CODEC) if _PREBUILT \
        else write_manifest(2, spec, schema, output, snapshot_id, CODEC)
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
    output = fio.new_output(location)
    lister: ManifestListWriter = _ManifestListWriter(output, snapshot_id, parent_id, sequence_number, CODEC) \
        if _PREBUILT else write_manifest_list(2, output, snapshot_id, parent_id, sequence_number, CODEC)
    with lister as w:
        w.add_manifests(list(manifests))
        # with this snapshot's sequence numbers
        written = getattr(w, "prepared", None) or [w.prepare_manifest(m) for m in manifests]
    _remember_list(location, written)
    return location


# -------------------------------------------------------------------------- Avro writers built once per schema
# pyiceberg builds, for every manifest and manifest list it writes, the file schema, the record writer resolved
# against it (a visitor over the whole manifest-entry schema) and the header's metadata (the table schema as
# JSON): most of the cost of a commit's small manifest. They depend only on the table schema and partition
# spec, so they are kept per (spec, schema) object -- the same objects from commit to commit, as the last
# metadata is remembered -- and the bytes written are pyiceberg's own. With a pyiceberg whose writers lack
# these hooks, its own writers are used as they are.

_PREBUILT = all(hasattr(ManifestWriterV2, name) for name in ("new_writer", "_with_partition", "_meta")) and all(
    hasattr(AvroOutputFile, name) for name in ("_write_header", "write_block", "compression_codec")) and all(
    hasattr(_avro_file, name) for name in ("_SCHEMA_KEY", "META_SCHEMA", "AvroFileHeader", "MAGIC"))
_parts: OrderedDict[tuple[int, int, str], tuple[PartitionSpec, Schema, Schema, Writer, dict[str, str]]] = OrderedDict()
_list_writer: Writer | None = None


_headers: OrderedDict[tuple[int, str], tuple[Schema, str]] = OrderedDict()
_header_writer: Writer | None = None


class _PrebuiltAvroFile(AvroOutputFile[Any]):
    """pyiceberg's Avro file writer, given the record writer instead of resolving it from the schemas, and
    writing the header with the file schema's Avro JSON converted once per schema."""

    def __init__(self, output_file: OutputFile, file_schema: Schema, schema_name: str, writer: Writer,
                 metadata: dict[str, str]) -> None:
        self.output_file = output_file
        self.file_schema = file_schema
        self.schema_name = schema_name
        self.sync_bytes = os.urandom(16)
        self.writer = writer
        self.metadata = metadata

    def _write_header(self) -> None:  # as pyiceberg's, with the schema JSON and the header writer kept
        global _header_writer
        from pyiceberg.avro import file as avro_file
        from pyiceberg.avro.codecs import AVRO_CODEC_KEY, CODEC_MAPPING_ICEBERG_TO_AVRO
        from pyiceberg.avro.resolver import construct_writer
        from pyiceberg.table import TableProperties
        from pyiceberg.utils.schema_conversion import AvroSchemaConversion

        codec_name = self.metadata.get(AVRO_CODEC_KEY, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT)
        codec_name = CODEC_MAPPING_ICEBERG_TO_AVRO.get(codec_name) or codec_name
        key = (id(self.file_schema), self.schema_name)
        with _lock:
            found = _headers.get(key)
        if found is None or found[0] is not self.file_schema:
            found = (self.file_schema, json.dumps(
                AvroSchemaConversion().iceberg_to_avro(self.file_schema, schema_name=self.schema_name)))
            with _lock:
                _headers[key] = found
                while len(_headers) > 64:
                    _headers.popitem(last=False)
        meta = {**self.metadata, avro_file._SCHEMA_KEY: found[1], AVRO_CODEC_KEY: codec_name}
        if _header_writer is None:
            _header_writer = construct_writer(avro_file.META_SCHEMA)
        _header_writer.write(self.encoder, avro_file.AvroFileHeader(avro_file.MAGIC, meta, self.sync_bytes))


class _ManifestWriter(ManifestWriterV2):
    def new_writer(self) -> AvroOutputFile[ManifestEntry]:
        key = (id(self._spec), id(self._schema), str(self._compression))
        with _lock:
            found = _parts.get(key)
        if found is None or found[0] is not self._spec or found[1] is not self._schema:
            file_schema = self._with_partition(2)
            writer = resolve_writer(record_schema=self._with_partition(2), file_schema=file_schema)
            found = (self._spec, self._schema, file_schema, writer, self._meta)  # holding them keeps the ids unique
            with _lock:
                _parts[key] = found
                while len(_parts) > 64:
                    _parts.popitem(last=False)
        return _PrebuiltAvroFile(self._output_file, found[2], "manifest_entry", found[3], found[4])


_encoded: OrderedDict[tuple[str, int, int], bytes] = OrderedDict()


class _ManifestListWriter(ManifestListWriterV2):
    """Writes the list's records with each manifest's Avro record encoded once: a manifest never changes once
    written, and the list of the next snapshot names the same manifests again (with the same sequence
    numbers once assigned), so only the new ones are encoded per commit."""

    prepared: list[ManifestFile]

    def add_manifests(self, manifest_files: list[ManifestFile]) -> ManifestListWriter:
        from pyiceberg.avro.encoder import BinaryEncoder

        self.prepared = [self.prepare_manifest(m) for m in manifest_files]
        out = self._writer
        records = []
        for m in self.prepared:
            key = (m.manifest_path, m.sequence_number, m.min_sequence_number)
            with _lock:
                found = _encoded.get(key)
            if found is None:
                buf = io.BytesIO()
                out.writer.write(BinaryEncoder(buf), m)
                found = buf.getvalue()
                with _lock:
                    _encoded[key] = found
                    while len(_encoded) > _CACHE_SIZE:
                        _encoded.popitem(last=False)
            records.append(found)
        block = b"".join(records)  # the block AvroOutputFile.write_block writes, from the encoded records
        out.encoder.write_int(len(records))
        codec = out.compression_codec()
        if codec:
            content, length = codec.compress(block)
            out.encoder.write_int(length)
            out.encoder.write(content)
        else:
            out.encoder.write_int(len(block))
            out.encoder.write(block)
        out.encoder.write(out.sync_bytes)
        return self

    def __enter__(self) -> ManifestListWriter:
        global _list_writer
        from pyiceberg.manifest import MANIFEST_LIST_FILE_SCHEMAS

        schema = MANIFEST_LIST_FILE_SCHEMAS[2]
        if _list_writer is None:
            _list_writer = resolve_writer(record_schema=schema, file_schema=schema)
        self._writer = _PrebuiltAvroFile(self._output_file, schema, "manifest_file", _list_writer, self._meta)
        self._writer.__enter__()
        return self
