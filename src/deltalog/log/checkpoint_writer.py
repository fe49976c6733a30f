"""Writing checkpoints -- classic (V1) parquet ones, and on ``v2Checkpoint`` tables V2 ones through
:mod:`deltalog.log.checkpoint_v2` -- and the ``_last_checkpoint`` hint.

A checkpoint holds one action per row in top-level nullable struct columns ``txn``, ``add``,
``remove``, ``metaData``, ``protocol`` (plus ``domainMetadata`` when the table uses domains and
``checkpointMetadata`` on ``v2Checkpoint`` tables), laid out as the protocol's "Checkpoint Schema"
appendix describes. The ``add`` column is assembled from the snapshot's Arrow ``add_files()`` table
without per-row Python: its columns are wrapped into struct arrays batch by batch. With
``delta.checkpoint.writeStatsAsStruct=true`` the typed ``stats_parsed`` and ``partitionValues_parsed``
are built by parsing every ``stats`` JSON string in one call of Arrow's JSON reader against an explicit
schema derived from the table schema (physical column names).

Remove tombstones are kept while ``deletionTimestamp`` is within ``delta.deletedFileRetentionDuration``
(default one week). Multi-part checkpoints (``parts`` > 1, or automatically above ``part_size``
actions) distribute file actions by Spark-compatible Murmur3 hash partitioning of the path (and the
deletion-vector id), as the protocol requires. Every file is published with put-if-absent: an existing
checkpoint makes the call a no-op success.

Example:
    >>> json_checksum({"version": 1, "size": 3})
    '2d1c4a67e48423945dbe5ddb010b2c9e'
    >>> write_checkpoint(deltalog.Table("/data/t").snapshot()).paths  # doctest: +SKIP
    ('_delta_log/00000000000000000010.checkpoint.parquet',)
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.log.cleanup import DEFAULT_DELETED_FILE_RETENTION, Clock, duration_property_ms, now_ms
from deltalog.log.files import DV_TYPE, STRING_MAP, dv_unique_ids
from deltalog.log.paths import LAST_CHECKPOINT, LOG_DIR, classic_checkpoint_name, multipart_checkpoint_name
from deltalog.log.segment import complete_checkpoints, list_log, read_last_checkpoint
from deltalog.log.stats_parsed import parse_stats, stats_struct_type
from deltalog.storage import LogStore

if TYPE_CHECKING:
    from typing import TypeAlias

    from deltalog.snapshot import Snapshot

    Arr: TypeAlias = pa.Array[Any]
    Chunked: TypeAlias = pa.ChunkedArray[Any]
    Field: TypeAlias = pa.Field[Any]

log = logging.getLogger(__name__)

#: Above this many actions a checkpoint is split into parts (unless the table uses v2Checkpoint).
DEFAULT_PART_SIZE = 5_000_000
#: Rows per parquet row group.
ROW_GROUP_ROWS = 1 << 18


def _f(name: str, t: pa.DataType) -> Field:
    return pa.field(name, t, nullable=True)


def _nullable(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_f(t.field(i).name, _nullable(t.field(i).type)) for i in range(t.num_fields)])
    return t


_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(), "long": pa.int64(), "int": pa.int32(), "bool": pa.bool_(), "map": STRING_MAP,
    "list": pa.list_(pa.string()), "dv": _nullable(DV_TYPE),
}  # fmt: skip


def _fields(spec: str) -> list[Field]:
    """Nullable fields from ``"name:type name:type ..."`` (types from ``_TYPES``)."""
    return [_f(name, _TYPES[kind]) for name, kind in (item.split(":") for item in spec.split())]


_TYPES["format"] = pa.struct(_fields("provider:string options:map"))
TXN_TYPE = pa.struct(_fields("appId:string version:long lastUpdated:long"))
METADATA_TYPE = pa.struct(_fields(
    "id:string name:string description:string format:format schemaString:string partitionColumns:list "
    "configuration:map createdTime:long"
))  # fmt: skip
PROTOCOL_TYPE = pa.struct(_fields("minReaderVersion:int minWriterVersion:int readerFeatures:list writerFeatures:list"))
DOMAIN_TYPE = pa.struct(_fields("domain:string configuration:string removed:bool"))
CHECKPOINT_METADATA_TYPE = pa.struct(_fields("version:long tags:map"))
ADD_FIELDS = tuple(_fields(
    "path:string partitionValues:map size:long modificationTime:long dataChange:bool stats:string tags:map "
    "deletionVector:dv baseRowId:long defaultRowCommitVersion:long clusteringProvider:string"
))  # fmt: skip
REMOVE_TYPE = pa.struct(_fields(
    "path:string deletionTimestamp:long dataChange:bool extendedFileMetadata:bool partitionValues:map "
    "size:long deletionVector:dv baseRowId:long defaultRowCommitVersion:long"
))  # fmt: skip
_COLUMN_ORDER = ("txn", "add", "remove", "metaData", "protocol", "domainMetadata", "checkpointMetadata")
_CODECS = {"uncompressed": "none", "lz4_raw": "lz4", **{c: c for c in ("none", "snappy", "gzip", "lz4", "zstd")}}


@dataclass(frozen=True)
class CheckpointResult:
    """What :func:`write_checkpoint` produced (or found already there, with ``written=False``)."""

    version: int
    paths: tuple[str, ...]
    num_actions: int
    num_add_files: int
    num_remove_files: int
    size_in_bytes: int
    parts: int | None
    written: bool
    last_checkpoint: Mapping[str, Any] | None


# --------------------------------------------------------------------------------------------- JSON checksum


def _encode(text: str) -> str:
    return '"' + quote(text, safe="-._~") + '"'


def canonical_json(obj: Mapping[str, Any]) -> str:
    """The protocol's canonical form of a ``_last_checkpoint`` object (top-level ``checksum`` ignored).

    Example:
        >>> canonical_json({"b": {"y": None, "x": "https://delta.io"}, "a": 10, "checksum": "z"})
        '"a"=10,"b"+"x"="https%3A%2F%2Fdelta.io","b"+"y"=null'
    """
    pairs: list[tuple[str, str]] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, f"{path}+{_encode(str(k))}")
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, f"{path}+{i}")
        elif value is None or isinstance(value, bool):
            pairs.append((path, json.dumps(value)))
        elif isinstance(value, str):
            pairs.append((path, _encode(value)))
        else:
            pairs.append((path, json.dumps(value)))

    for key, value in obj.items():
        if key != "checksum":
            walk(value, _encode(str(key)))
    pairs.sort(key=lambda p: p[0].encode("utf-8"))
    return ",".join(f"{p}={v}" for p, v in pairs)


def json_checksum(obj: Mapping[str, Any]) -> str:
    """MD5 hex digest of :func:`canonical_json`, the ``checksum`` field of ``_last_checkpoint``.

    Example:
        >>> json_checksum({"k0": "'v 0'", "checksum": "x", "k1": {"k2": 2, "k3": ["v3", [1, 2],
        ...     {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}})
        '6a92d155a59bf2eecbd4b4ec7fd1f875'
    """
    return hashlib.md5(canonical_json(obj).encode("utf-8"), usedforsecurity=False).hexdigest()


def write_last_checkpoint(store: LogStore, info: Mapping[str, Any], *, table: str | None = None) -> bool:
    """Overwrite ``_delta_log/_last_checkpoint`` with ``info`` plus its checksum, unless the current
    hint already names a newer version. Returns whether the file was written.

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> write_last_checkpoint(InMemoryLogStore(), {"version": 10, "size": 4})
        True
    """
    current = read_last_checkpoint(store, table or store.root)
    if current is not None and current.version > int(info["version"]):
        return False
    body = dict(info)
    body.pop("checksum", None)
    body["checksum"] = json_checksum(body)
    store.write(f"{LOG_DIR}/{LAST_CHECKPOINT}", json.dumps(body, separators=(",", ":")).encode(), overwrite=True)
    return True


# ---------------------------------------------------------------------------------- Spark hash partitioning


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k(k: np.ndarray) -> np.ndarray:
    return _rotl(k * np.uint32(0xCC9E2D51), 15) * np.uint32(0x1B873593)


def _mix_h(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    return _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _view(buf: Any, dtype: Any) -> np.ndarray:
    return np.frombuffer(buf, dtype=dtype)


def spark_hash(strings: Arr, seed: np.ndarray | int = 42) -> np.ndarray:
    """Spark's ``hash()`` (Murmur3 x86-32 over UTF-8 bytes, trailing bytes mixed one by one) of a
    string column; null rows keep their seed. Returns signed 32-bit hashes.

    Example:
        >>> int(spark_hash(pa.array(["a"]))[0]) == int(spark_hash(pa.array(["a"]), 42)[0])
        True
    """
    arr: Any = strings.cast(pa.string())
    n = len(arr)
    seeds = np.broadcast_to(np.asarray(seed, dtype=np.int64).astype(np.uint32), (n,))
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    offs = _view(arr.buffers()[1], np.int32)[arr.offset : arr.offset + n + 1].astype(np.int64)
    raw = arr.buffers()[2]
    data = np.concatenate([_view(raw, np.uint8) if raw is not None else np.zeros(0, np.uint8), np.zeros(8, np.uint8)])
    start, lens = offs[:-1], offs[1:] - offs[:-1]
    words = lens // 4
    h = seeds.copy()
    with np.errstate(over="ignore"):
        for j in range(int(words.max())):
            rows = np.flatnonzero(words > j)
            p = start[rows] + 4 * j
            w = data[p].astype(np.uint32) | (data[p + 1].astype(np.uint32) << np.uint32(8))
            w |= (data[p + 2].astype(np.uint32) << np.uint32(16)) | (data[p + 3].astype(np.uint32) << np.uint32(24))
            h[rows] = _mix_h(h[rows], _mix_k(w))
        for t in range(3):
            rows = np.flatnonzero(lens % 4 > t)
            b = data[start[rows] + words[rows] * 4 + t].astype(np.int8).astype(np.int32).astype(np.uint32)
            h[rows] = _mix_h(h[rows], _mix_k(b))
        h ^= lens.astype(np.uint32)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    if arr.null_count:
        h = np.where(arr.is_valid().to_numpy(zero_copy_only=False), h, seeds)
    return h.view(np.int32)


def part_of(paths: Arr, dv_ids: Arr | None, num_parts: int) -> np.ndarray:
    """0-based part index of file actions: ``pmod(hash(path[, dvId]), num_parts)`` as Spark computes it.

    Example:
        >>> part_of(pa.array(["x.parquet", "y.parquet"]), None, 1).tolist()
        [0, 0]
    """
    h = spark_hash(paths)
    if dv_ids is not None and dv_ids.null_count < len(dv_ids):
        h = spark_hash(dv_ids, h)
    return np.mod(h.astype(np.int64), num_parts)


# ------------------------------------------------------------------------------------------ typed stats


def stats_parsed_type(snapshot: Snapshot) -> pa.StructType:
    """The ``add.stats_parsed`` struct type of a table (``numRecords``, ``minValues``, ``maxValues``,
    ``nullCount``, ``tightBounds``; physical column names; partition columns excluded).

    Example:
        >>> stats_parsed_type(snap).names                          # doctest: +SKIP
        ['numRecords', 'minValues', 'maxValues', 'nullCount', 'tightBounds']
    """
    return stats_struct_type(snapshot.schema, snapshot.column_mapping_mode, snapshot.partition_columns)


def partition_values_parsed(
    snapshot: Snapshot, partition_values: Arr | Chunked, paths: Arr | Chunked | None = None
) -> Arr:
    """Typed partition values (struct keyed by physical partition column names) of a
    ``map<string,string>`` column of partition values.

    Example:
        >>> partition_values_parsed(snap, snap.add_files()["partitionValues"]).type  # doctest: +SKIP
        StructType(struct<day: date32[day]>)
    """
    from deltalog.protocol.partitions import log_partition_array
    from deltalog.protocol.schema import physical_name, to_arrow_type

    pv = partition_values.combine_chunks() if isinstance(partition_values, pa.ChunkedArray) else partition_values
    schema, mode = snapshot.schema, snapshot.column_mapping_mode
    arrays: list[Arr] = []
    fields: list[Field] = []
    for name in snapshot.partition_columns:
        fld = schema.field(name)
        key = physical_name(fld, mode)
        raw = pc.map_lookup(pv, pa.scalar(key, pa.string()), "first")
        if key != name:
            raw = pc.coalesce(raw, pc.map_lookup(pv, pa.scalar(name, pa.string()), "first"))
        typed = log_partition_array(
            raw, fld.type, column=name, table=snapshot.table, version=snapshot.version, paths=paths
        )
        if isinstance(typed, pa.ChunkedArray):
            typed = typed.combine_chunks()
        arrays.append(typed.cast(to_arrow_type(fld.type)))
        fields.append(_f(key, arrays[-1].type))
    return pa.StructArray.from_arrays(arrays, fields=fields)


# ------------------------------------------------------------------------------------------ assembling


def _flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    value = props.get(key)
    return default if value is None else value.strip().lower() == "true"


def _build_adds(snapshot: Snapshot) -> Chunked:
    files = snapshot.add_files()
    props = snapshot.properties
    fields = [f for f in ADD_FIELDS if f.name != "stats" or _flag(props, "delta.checkpoint.writeStatsAsJson", True)]
    extra: list[tuple[Field, Arr]] = []
    if _flag(props, "delta.checkpoint.writeStatsAsStruct", False) and files.num_rows:
        try:
            if snapshot.partition_columns:
                pv = partition_values_parsed(
                    snapshot, files.column("partitionValues"), files.column("path")
                )
                extra.append((_f("partitionValues_parsed", pv.type), pv))
            target = stats_parsed_type(snapshot)
            extra.append((_f("stats_parsed", target), parse_stats(files.column("stats"), target)))
        except Exception as exc:  # a checkpoint without typed columns beats no checkpoint
            log.warning("checkpoint of %s: typed stats/partition values left out: %s", snapshot.table, exc)
            extra = []
    all_fields = fields + [f for f, _ in extra]
    add_type = pa.struct(all_fields)
    chunks: list[Arr] = []
    offset = 0
    for batch in files.to_batches():
        cols: list[Any] = [batch.column(f.name) for f in fields]
        cols += [arr.slice(offset, batch.num_rows) for _, arr in extra]
        chunks.append(pa.StructArray.from_arrays(cols, fields=all_fields))
        offset += batch.num_rows
    chunked: Chunked = pa.chunked_array(chunks, type=cast(Any, add_type))
    return chunked


def _build_removes(snapshot: Snapshot, now: int) -> Arr:
    tombs = snapshot.tombstones()
    keep_ms = duration_property_ms(
        snapshot.properties, "delta.deletedFileRetentionDuration", DEFAULT_DELETED_FILE_RETENTION
    )
    if tombs.num_rows:
        stamps: Any = tombs.column("deletionTimestamp")
        alive = pc.fill_null(pc.greater(stamps, pa.scalar(now - keep_ms, pa.int64())), False)
        tombs = tombs.filter(alive)
    if tombs.num_rows == 0:
        return pa.array([], REMOVE_TYPE)
    cols: list[Any] = [tombs.column(f.name).combine_chunks() for f in REMOVE_TYPE]
    return pa.StructArray.from_arrays(cols, fields=list(REMOVE_TYPE))


def _uses_domains(snapshot: Snapshot) -> bool:
    return bool(snapshot.domains) or snapshot.has_feature("domainMetadata")


def _nonfile_rows(snapshot: Snapshot, v2: bool) -> list[tuple[str, Mapping[str, Any]]]:
    state = snapshot.state  # the reconciled Txn / DomainMetadata actions
    rows: list[tuple[str, Mapping[str, Any]]] = [
        ("protocol", snapshot.protocol.to_dict()),
        ("metaData", snapshot.metadata.to_dict()),
    ]
    if v2:
        rows.insert(0, ("checkpointMetadata", {"version": snapshot.version}))
    rows += [("txn", state.txns[app].to_dict()) for app in sorted(state.txns)]
    rows += [("domainMetadata", state.domains[d].to_dict()) for d in sorted(state.domains)]
    return rows


def _build_nonfile(snapshot: Snapshot, v2: bool) -> dict[str, Arr]:
    rows = _nonfile_rows(snapshot, v2)
    types = {"txn": TXN_TYPE, "metaData": METADATA_TYPE, "protocol": PROTOCOL_TYPE}
    if _uses_domains(snapshot):
        types["domainMetadata"] = DOMAIN_TYPE
    if v2:
        types["checkpointMetadata"] = CHECKPOINT_METADATA_TYPE
    return {col: pa.array([r if k == col else None for k, r in rows], t) for col, t in types.items()}


@dataclass
class _Pieces:
    """The checkpoint's actions: non-file rows (one array per column), adds and removes as structs."""

    nonfile: dict[str, Arr]
    adds: Chunked
    removes: Arr

    @classmethod
    def of(cls, snapshot: Snapshot, now: int) -> _Pieces:
        return cls(_build_nonfile(snapshot, _is_v2(snapshot)), _build_adds(snapshot), _build_removes(snapshot, now))

    def table(self, add_rows: Any = None, remove_rows: Any = None, with_nonfile: bool = True) -> pa.Table:
        """All actions (or the given add/remove rows, with or without the non-file rows) as one table."""
        adds = self.adds if add_rows is None else self.adds.take(add_rows)
        removes = self.removes if remove_rows is None else self.removes.take(remove_rows)
        types: dict[str, Any] = {"add": self.adds.type, "remove": REMOVE_TYPE}
        types.update((k, v.type) for k, v in self.nonfile.items())
        k = len(self.nonfile["protocol"]) if with_nonfile else 0
        out: dict[str, Chunked] = {}
        for name in (c for c in _COLUMN_ORDER if c in types):
            t = types[name]
            chunks: list[Arr] = [self.nonfile[name] if name in self.nonfile else pa.nulls(k, t)] if k else []
            chunks.extend(adds.chunks if name == "add" else [pa.nulls(len(adds), t)])
            chunks.append(removes if name == "remove" else pa.nulls(len(removes), t))
            out[name] = pa.chunked_array([c for c in chunks if len(c)], type=t)
        return pa.table(out)

    def part_builders(self, snapshot: Snapshot, n_parts: int) -> list[Callable[[], pa.Table]]:
        """One table builder per part of a multi-part checkpoint (Spark hash partitioning)."""
        use_dv = snapshot.has_feature("deletionVectors")

        def assign(arr: Any) -> np.ndarray:
            if len(arr) == 0:
                return np.zeros(0, dtype=np.int64)
            arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
            return part_of(arr.field("path"), dv_unique_ids(arr.field("deletionVector")) if use_dv else None, n_parts)

        add_part, rem_part = assign(self.adds), assign(self.removes)
        home = 42 % n_parts  # non-file actions have a null path, whose hash is the seed
        return [
            functools.partial(self.table, np.flatnonzero(add_part == i), np.flatnonzero(rem_part == i), i == home)
            for i in range(n_parts)
        ]


def build_checkpoint(snapshot: Snapshot, *, clock: Clock | None = None) -> pa.Table:
    """The whole checkpoint of ``snapshot`` as one Arrow table (one action per row), as written to a
    single-file checkpoint.

    Example:
        >>> build_checkpoint(snap).column_names                    # doctest: +SKIP
        ['txn', 'add', 'remove', 'metaData', 'protocol']
    """
    return _Pieces.of(snapshot, now_ms(clock)).table()


def _is_v2(snapshot: Snapshot) -> bool:
    return snapshot.has_feature("v2Checkpoint")


# ---------------------------------------------------------------------------------------------- writing


def _compression(props: Mapping[str, str], table: str) -> str:
    codec = props.get("delta.parquet.compression.codec", "zstd").strip().lower()
    if codec not in _CODECS:
        log.warning("table %s: unknown delta.parquet.compression.codec %r; using zstd", table, codec)
        return "zstd"
    return _CODECS[codec]


def _to_parquet(t: pa.Table, compression: Any) -> bytes:
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(
        sink,
        t.schema,
        compression=compression,
        use_dictionary=False,
        write_statistics=False,
        data_page_version="1.0",
        store_schema=False,
    ) as writer:
        writer.write_table(t, row_group_size=ROW_GROUP_ROWS)
    return bytes(sink.getvalue().to_pybytes())


def _publish(store: LogStore, path: str, data: bytes) -> bool:
    try:
        store.write(path, data, overwrite=False)
    except FileExistsError:
        return False
    return True


def write_checkpoint(
    snapshot: Snapshot,
    *,
    parts: int | None = None,
    part_size: int = DEFAULT_PART_SIZE,
    clock: Clock | None = None,
    update_last_checkpoint: bool = True,
    v2_format: str = "parquet",
) -> CheckpointResult:
    """Write the checkpoint of ``snapshot.version`` and point ``_last_checkpoint`` at it.

    ``parts`` > 1 writes a multi-part checkpoint; by default one file, or ``ceil(actions / part_size)``
    parts for very large tables. ``clock`` (epoch ms) decides which tombstones have expired. When a
    checkpoint of the version already exists nothing is rewritten (``written=False``). On ``v2Checkpoint``
    tables multi-part is refused and the checkpoint is a V2 one (:mod:`deltalog.log.checkpoint_v2`:
    a UUID-named top-level file in ``v2_format``, parquet or json, with the file actions in sidecars of at
    most ``part_size`` rows), or -- with ``delta.checkpointPolicy=classic`` -- a classic-named file
    carrying a ``checkpointMetadata`` row.

    Example:
        >>> r = write_checkpoint(deltalog.Table("/data/t").snapshot())  # doctest: +SKIP
        >>> r.paths, r.num_add_files                                  # doctest: +SKIP
        (('_delta_log/00000000000000000010.checkpoint.parquet',), 48)
    """
    if parts is not None and (not isinstance(parts, int) or isinstance(parts, bool) or parts < 1):
        raise InvalidArgumentError(f"parts must be a positive integer, got {parts!r}", table=snapshot.table)
    if part_size < 1:
        raise InvalidArgumentError(f"part_size must be positive, got {part_size!r}", table=snapshot.table)
    v2 = _is_v2(snapshot)
    if v2 and parts is not None and parts > 1:
        raise UnsupportedFeatureError(
            "multi-part checkpoints are forbidden on tables with the v2Checkpoint feature",
            feature="v2Checkpoint",
            table=snapshot.table,
            version=snapshot.version,
        )
    store, version = snapshot.store, snapshot.version
    pieces = _Pieces.of(snapshot, now_ms(clock))
    na, nr = len(pieces.adds), len(pieces.removes)
    total = len(pieces.nonfile["protocol"]) + na + nr
    n_parts = parts if parts is not None else 1 if v2 else max(1, -(-total // part_size))
    compression = _compression(snapshot.properties, snapshot.table)
    if v2 and parts is None and snapshot.properties.get("delta.checkpointPolicy", "v2").lower() != "classic":
        return _write_v2(snapshot, pieces, compression, v2_format=v2_format, part_size=part_size,
                         update_last_checkpoint=update_last_checkpoint)
    builders: list[Callable[[], pa.Table]] = [pieces.table]
    names = [classic_checkpoint_name(version)]
    if n_parts > 1:
        names = [multipart_checkpoint_name(version, i + 1, n_parts) for i in range(n_parts)]
        builders = pieces.part_builders(snapshot, n_parts)
    paths = tuple(f"{LOG_DIR}/{n}" for n in names)

    def write_one(i: int) -> tuple[bool, int]:
        if not store.exists(paths[i]):
            data = _to_parquet(builders[i](), compression)
            if _publish(store, paths[i], data):
                return True, len(data)
        return False, store.stat(paths[i]).size  # already there: checkpoints are idempotent

    with ThreadPoolExecutor(max_workers=max(1, min(n_parts, os.cpu_count() or 1))) as pool:
        outcomes = list(pool.map(write_one, range(n_parts)))
    size = sum(s for _, s in outcomes)
    info: dict[str, Any] = {"version": version, "size": total, **({"parts": n_parts} if n_parts > 1 else {})}
    info.update(sizeInBytes=size, numOfAddFiles=na)
    info["checksum"] = json_checksum(info)
    hint = update_last_checkpoint and write_last_checkpoint(store, info, table=snapshot.table)
    log.info("checkpoint of %s at version %d: %d actions, %d part(s), %d bytes", snapshot.table, version, total,
             n_parts, size)  # fmt: skip
    return CheckpointResult(
        version, paths, total, na, nr, size, n_parts if n_parts > 1 else None, any(w for w, _ in outcomes),
        info if hint else None,
    )  # fmt: skip


def _write_v2(snapshot: Snapshot, pieces: _Pieces, compression: str, *, v2_format: str, part_size: int,
              update_last_checkpoint: bool) -> CheckpointResult:
    from deltalog.log.checkpoint_v2 import write_v2_checkpoint

    store, version = snapshot.store, snapshot.version
    na, nr = len(pieces.adds), len(pieces.removes)
    there = complete_checkpoints([f for f in list_log(store, version) if f.version == version]).get(version)
    if there:  # checkpoints are idempotent: any complete one of this version will do
        paths = tuple(f.path for f in there)
        return CheckpointResult(version, paths, 0, na, nr, sum(f.size for f in there), None, False, None)
    files = pieces.table(with_nonfile=False).select(["add", "remove"])
    out = write_v2_checkpoint(
        store, version, rows=_nonfile_rows(snapshot, True), nonfile=pieces.nonfile, files=files,
        to_parquet=lambda t: _to_parquet(t, compression), top_level=v2_format, sidecar_rows=part_size,
        table=snapshot.table)
    info: dict[str, Any] = {"version": version, "size": out.num_actions, "sizeInBytes": out.size_in_bytes,
                            "numOfAddFiles": na}
    info["checksum"] = json_checksum(info)
    hint = update_last_checkpoint and write_last_checkpoint(store, info, table=snapshot.table)
    log.info("V2 checkpoint of %s at version %d: %d actions, %d sidecar(s), %d bytes", snapshot.table, version,
             out.num_actions, len(out.sidecars), out.size_in_bytes)  # fmt: skip
    return CheckpointResult(version, (out.path, *out.sidecars), out.num_actions, na, nr, out.size_in_bytes, None,
                            True, info if hint else None)


__all__ = [
    "DEFAULT_PART_SIZE",
    "CheckpointResult",
    "build_checkpoint",
    "canonical_json",
    "json_checksum",
    "part_of",
    "partition_values_parsed",
    "spark_hash",
    "stats_parsed_type",
    "write_checkpoint",
    "write_last_checkpoint",
]
