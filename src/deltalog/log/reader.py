"""Reading log files: commit JSON (Arrow fast path, validating line-by-line fallback) and checkpoints.

The result of reading one file is a :class:`FileActions`: its add and remove actions as Arrow tables
in the normalized schemas of :mod:`deltalog.log.files`, plus the (few) other actions as Python objects.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> store = InMemoryLogStore()
    >>> store.write("_delta_log/00000000000000000000.json",
    ...             b'{"txn":{"appId":"a","version":3}}\\n', overwrite=False)
    >>> from deltalog.log.paths import parse_log_name
    >>> read_commit(store, parse_log_name("00000000000000000000.json"), table="t").others
    [Txn(appId='a', version=3, lastUpdated=None, extra={})]
"""

from __future__ import annotations

import io
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from deltalog.errors import CorruptLogError
from deltalog.log.files import (
    ADD_SCHEMA,
    JSON_ADD_TYPE,
    JSON_REMOVE_TYPE,
    REMOVE_SCHEMA,
    drop_null_rows,
    normalize_files,
)
from deltalog.log.paths import LOG_DIR, SIDECAR_DIR, LogFile
from deltalog.protocol.actions import (
    Action,
    Add,
    AddCDCFile,
    CommitInfo,
    Metadata,
    Remove,
    Sidecar,
    action_to_dict,
    parse_action,
    parse_action_dict,
)
from deltalog.storage import LogStore

_NON_FILE_COLUMNS = ("metaData", "protocol", "txn", "domainMetadata", "checkpointMetadata", "sidecar")


@dataclass
class FileActions:
    """Actions of one or more log files: adds/removes columnar, the rest as objects (newest first)."""

    version: int
    adds: pa.Table
    removes: pa.Table
    others: list[Action] = field(default_factory=list)
    #: Replay order keys of the adds / removes when they come from JSON files: smaller means newer
    #: (file index newest first, then line number). Among actions with the same key the smaller
    #: order wins, which is also how log compaction files list newest-first actions.
    add_order: np.ndarray | None = None
    remove_order: np.ndarray | None = None
    commit_infos: dict[int, CommitInfo] = field(default_factory=dict)
    #: The actions are already reconciled (a checkpoint, or a previous snapshot's state): keys are
    #: unique and no file is both added and removed, so replay only has to drop what newer sources shadow.
    reconciled: bool = False

    @property
    def commit_info(self) -> CommitInfo | None:
        """The ``commitInfo`` of the newest file read, if any."""
        return self.commit_infos.get(self.version)


def _empty(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()


_FILE_PREFIXES = (b'{"add":', b'{"remove":')
_FILE_BITS = 32  # order key = file index << 32 | line number


def read_commit(store: LogStore, f: LogFile, *, table: str) -> FileActions:
    """Read one commit (or compacted, or V2 JSON checkpoint) file of newline-delimited JSON actions."""
    return read_commits(store, [f], table=table)


def _read_bytes(store: LogStore, f: LogFile, table: str) -> bytes:
    try:
        return store.read(f.path)
    except FileNotFoundError:
        raise CorruptLogError(
            "log file disappeared while reading (concurrent cleanup?)", table=table, version=f.version,
            file=f.path,
        ) from None


def read_commits(
    store: LogStore,
    files: list[LogFile],
    *,
    table: str,
    partition_keys: frozenset[str] = frozenset(),
    data: list[bytes] | None = None,
) -> FileActions:
    """Read JSON log files given newest first into one :class:`FileActions`.

    Every line is classified in Python; the add/remove lines of all files go through one call of
    Arrow's JSON reader, the other (few) actions are parsed and validated in Python. When Arrow cannot
    read the batch, each file is parsed strictly so the error names the exact file and line.

    ``partition_keys`` (plus the partition columns of any ``metaData`` in these files) are read as
    strings explicitly, so Arrow never re-types a value such as ``2021-09-08``. ``data``: the files'
    contents when the caller has them already (a writer's own commit), one per file; nothing is read.

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> from deltalog.log.paths import parse_log_name
        >>> one = b'{"commitInfo":{"operation":"WRITE"}}\\n'
        >>> fa = read_commits(InMemoryLogStore(), [parse_log_name(f"{3:020d}.json")], table="t", data=[one])
        >>> fa.version, fa.commit_info.operation
        (3, 'WRITE')
    """
    if data is not None and len(data) != len(files):
        raise ValueError(f"{len(data)} file contents for {len(files)} files")
    return _read_batch(store, files, table=table, partition_keys=partition_keys, blobs=data)[0]


def read_commits_each(
    store: LogStore, files: list[LogFile], *, table: str, partition_keys: frozenset[str] = frozenset()
) -> list[FileActions]:
    """One :class:`FileActions` per file (as :func:`read_commit` gives), read with one parse of all their
    add/remove lines -- for a writer catching up with several winning commits at once. ``partition_keys``
    as for :func:`read_commits`.

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> from deltalog.log.paths import parse_log_name
        >>> s = InMemoryLogStore()
        >>> for v in (1, 2):
        ...     s.write(f"_delta_log/{v:020d}.json", b'{"commitInfo":{"operation":"WRITE"}}\\n', overwrite=False)
        >>> [fa.version for fa in read_commits_each(s, [parse_log_name(f"{v:020d}.json") for v in (1, 2)], table="t")]
        [1, 2]
    """
    if len(files) < 2:
        return [read_commits(store, [f], table=table, partition_keys=partition_keys) for f in files]
    batch, owners = _read_batch(store, files, table=table, partition_keys=partition_keys)
    add_files = None if batch.add_order is None else batch.add_order >> _FILE_BITS
    remove_files = None if batch.remove_order is None else batch.remove_order >> _FILE_BITS
    out = []
    for idx, f in enumerate(files):
        adds, add_order = _rows_of(batch.adds, batch.add_order, add_files, idx)
        removes, remove_order = _rows_of(batch.removes, batch.remove_order, remove_files, idx)
        info = batch.commit_infos.get(f.version)
        out.append(FileActions(
            f.version, adds, removes, [a for a, o in zip(batch.others, owners, strict=True) if o == idx],
            add_order, remove_order, {f.version: info} if info is not None else {},
        ))
    return out


def _rows_of(
    t: pa.Table, order: np.ndarray | None, owner: np.ndarray | None, idx: int
) -> tuple[pa.Table, np.ndarray | None]:
    """The rows of ``t`` read from file ``idx`` of a batch, with their order keys."""
    if order is None or owner is None:
        return t.slice(0, 0), None
    rows = np.flatnonzero(owner == idx)
    return t.take(pa.array(rows, pa.int64())), order[rows]


def _read_all(store: LogStore, files: list[LogFile], table: str) -> list[bytes]:
    if len(files) > 8 and "://" in store.full_path(""):  # remote stores: overlap the round trips
        with ThreadPoolExecutor(max_workers=4) as pool:
            return list(pool.map(lambda f: _read_bytes(store, f, table), files))
    return [_read_bytes(store, f, table) for f in files]


def _read_batch(
    store: LogStore, files: list[LogFile], *, table: str, partition_keys: frozenset[str] = frozenset(),
    blobs: list[bytes] | None = None,
) -> tuple[FileActions, list[int]]:
    """:func:`read_commits`, plus the index in ``files`` of the file each of ``others`` came from."""
    if blobs is None:
        blobs = _read_all(store, files, table)
    file_lines: list[bytes] = []
    orders: list[int] = []
    others: list[Action] = []
    owners: list[int] = []
    infos: dict[int, CommitInfo] = {}
    for idx, (f, data) in enumerate(zip(files, blobs)):
        base = idx << _FILE_BITS
        for i, raw in enumerate(data.split(b"\n"), start=1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith(_FILE_PREFIXES):
                file_lines.append(line)
                orders.append(base | i)
                continue
            action = parse_action(line, table=table, version=f.version, file=f.path, line=i)
            if isinstance(action, (Add, Remove)):  # unusual spacing: still read through Arrow
                file_lines.append(line)
                orders.append(base | i)
            elif action is not None:
                others.append(action)
                owners.append(idx)
                if isinstance(action, CommitInfo):
                    infos.setdefault(f.version, action)
    version = files[0].version if files else -1
    if not file_lines:
        return FileActions(version, _empty(ADD_SCHEMA), _empty(REMOVE_SCHEMA), others, commit_infos=infos), owners
    order = np.array(orders, dtype=np.int64)
    keys = set(partition_keys)
    for action in others:
        if isinstance(action, Metadata):
            keys |= metadata_partition_keys(action)
    try:
        blob = b"\n".join(file_lines)
        parsed = pj.read_json(
            io.BytesIO(blob),
            read_options=pj.ReadOptions(
                use_threads=len(blob) > (4 << 20),
                block_size=max(4 << 20, 2 * max(map(len, file_lines)) + 2),
            ),
            parse_options=pj.ParseOptions(
                explicit_schema=_json_schema(frozenset(keys)),
                unexpected_field_behavior="infer",
            ),
        )
        if parsed.num_rows != len(file_lines):
            raise ValueError("row count mismatch")
        adds, add_rows = _file_column(parsed, "add", ADD_SCHEMA)
        removes, remove_rows = _file_column(parsed, "remove", REMOVE_SCHEMA)
        _validate(adds, ("path", "size", "modificationTime", "dataChange", "partitionValues"))
        _validate(removes, ("path", "dataChange"))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
        return _parse_strict(files, blobs, table=table, others=others, infos=infos), owners
    return FileActions(version, adds, removes, others, order[add_rows], order[remove_rows], infos), owners


def _json_schema(keys: frozenset[str]) -> pa.Schema:
    pv = pa.field("partitionValues", pa.struct([(k, pa.string()) for k in sorted(keys)]))
    return pa.schema([
        ("add", pa.struct([*JSON_ADD_TYPE, pv])),
        ("remove", pa.struct([*JSON_REMOVE_TYPE, pv])),
    ])


def metadata_partition_keys(md: Metadata) -> set[str]:
    """Keys of ``partitionValues`` under this metadata: partition columns' physical names."""
    keys = set(md.partitionColumns)
    mode = md.configuration.get("delta.columnMapping.mode", "none")
    if mode != "none" and md.schemaString and md.partitionColumns:
        from deltalog.errors import SchemaError
        from deltalog.protocol.schema import parse_schema, physical_name

        try:
            schema = parse_schema(md.schemaString)
            keys |= {physical_name(schema.field(c), mode) for c in md.partitionColumns}
        except SchemaError:
            pass
    return keys


def partition_key_aliases(md: Metadata) -> frozenset[str]:
    """Logical partition column names that are not ``partitionValues`` keys under column mapping (their
    physical names are): a batch JSON read gives them null entries, which readers drop.

    Example:
        >>> from deltalog.protocol.actions import Format
        >>> partition_key_aliases(Metadata(id="t", format=Format(), schemaString=None))
        frozenset()
    """
    return frozenset(metadata_partition_keys(md) - _physical_partition_keys(md))


def _physical_partition_keys(md: Metadata) -> set[str]:
    mode = md.configuration.get("delta.columnMapping.mode", "none")
    if mode == "none" or not md.schemaString or not md.partitionColumns:
        return set(md.partitionColumns)
    from deltalog.errors import SchemaError
    from deltalog.protocol.schema import parse_schema, physical_name

    try:
        schema = parse_schema(md.schemaString)
        return {physical_name(schema.field(c), mode) for c in md.partitionColumns}
    except SchemaError:
        return set(md.partitionColumns)


def _check_string_children(col: pa.ChunkedArray, field: str) -> None:
    """Arrow infers types inside JSON objects; partition values and tags must stay verbatim strings."""
    t = col.type
    if not pa.types.is_struct(t) or t.get_field_index(field) < 0:
        return
    inner = t.field(t.get_field_index(field)).type
    if pa.types.is_struct(inner):
        for i in range(inner.num_fields):
            ct = inner.field(i).type
            if not (pa.types.is_string(ct) or pa.types.is_null(ct)):
                raise ValueError(f"{field} value typed {ct}")


def _file_column(parsed: pa.Table, name: str, schema: pa.Schema) -> tuple[pa.Table, np.ndarray]:
    if name not in parsed.column_names:
        return _empty(schema), np.zeros(0, dtype=np.int64)
    col = parsed.column(name)
    _check_string_children(col, "partitionValues")
    _check_string_children(col, "tags")
    valid = pc.is_valid(col)
    rows = np.flatnonzero(valid.to_numpy(zero_copy_only=False))
    return normalize_files(col.filter(valid), schema), rows


def _validate(t: pa.Table, required: tuple[str, ...]) -> None:
    for name in required:
        if t.column(name).null_count:
            raise ValueError(f"null {name}")


def _parse_strict(
    files: list[LogFile],
    blobs: list[bytes],
    *,
    table: str,
    others: list[Action],
    infos: dict[int, CommitInfo],
) -> FileActions:
    adds: list[pa.Table] = []
    removes: list[pa.Table] = []
    add_order: list[int] = []
    remove_order: list[int] = []
    for idx, (f, data) in enumerate(zip(files, blobs)):
        base = idx << _FILE_BITS
        file_adds: list[dict[str, Any]] = []
        file_removes: list[dict[str, Any]] = []
        for i, raw in enumerate(data.split(b"\n"), start=1):
            line = raw.strip()
            if not line:
                continue
            action = parse_action(line, table=table, version=f.version, file=f.path, line=i)
            if isinstance(action, Add):
                file_adds.append(action_to_dict(action)["add"])
                add_order.append(base | i)
            elif isinstance(action, Remove):
                file_removes.append(action_to_dict(action)["remove"])
                remove_order.append(base | i)
        adds.append(_from_dicts(file_adds, ADD_SCHEMA, table=table, version=f.version, file=f.path))
        removes.append(_from_dicts(file_removes, REMOVE_SCHEMA, table=table, version=f.version, file=f.path))
    return FileActions(
        files[0].version,
        pa.concat_tables(adds),
        pa.concat_tables(removes),
        others,
        np.array(add_order, dtype=np.int64),
        np.array(remove_order, dtype=np.int64),
        infos,
    )


def _from_dicts(
    rows: list[dict[str, Any]], schema: pa.Schema, *, table: str, version: int, file: str
) -> pa.Table:
    if not rows:
        return _empty(schema)
    for r in rows:
        for key in ("partitionValues", "tags"):
            if r.get(key) is not None:
                r[key] = list(r[key].items())
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
        raise CorruptLogError(
            f"file action has a field of the wrong type: {exc}", table=table, version=version, file=file
        ) from None


# ---------------------------------------------------------------------------------------------------
# checkpoints


def read_checkpoint(
    store: LogStore,
    parts: tuple[LogFile, ...],
    *,
    table: str,
    need_removes: bool = True,
    need_files: bool = True,
) -> FileActions:
    """Read every part of one checkpoint (classic, multi-part or V2 with sidecars, JSON or parquet).

    File actions are validated column by column: a required field (``path``, ``size``,
    ``modificationTime``, ``dataChange``, ``partitionValues`` of an add; ``path``, ``dataChange`` of a
    remove) that is null raises :class:`CorruptLogError` naming the checkpoint (or sidecar) file.
    Without ``need_files`` only the other actions (protocol, metadata, txn, ...) are read.
    """
    version = parts[0].version
    adds: list[pa.Table] = []
    removes: list[pa.Table] = []
    others: list[Action] = []
    for part in parts:
        if part.fmt == "json":
            fa = read_commit(store, part, table=table)
            adds.append(fa.adds)
            removes.append(fa.removes)
            others.extend(fa.others)
            continue
        t = _read_parquet(
            store, part.path, table=table, version=version, need_removes=need_removes, need_files=need_files
        )
        a, r, o = _split_checkpoint_table(t, table=table, version=version, file=part.path)
        adds.append(a)
        removes.append(r)
        others.extend(o)
    for sidecar in [o for o in others if isinstance(o, Sidecar)] if need_files else ():
        path = _sidecar_path(sidecar.path)
        t = _read_parquet(store, path, table=table, version=version, need_removes=need_removes)
        a, r, _ = _split_checkpoint_table(t, table=table, version=version, file=path)
        adds.append(a)
        removes.append(r)
    return FileActions(
        version,
        pa.concat_tables(adds) if adds else _empty(ADD_SCHEMA),
        pa.concat_tables(removes) if removes else _empty(REMOVE_SCHEMA),
        others,
        reconciled=True,
    )


def _sidecar_path(p: str) -> str:
    if "/" not in p:
        return f"{LOG_DIR}/{SIDECAR_DIR}/{p}"
    marker = f"{LOG_DIR}/{SIDECAR_DIR}/"
    idx = p.find(marker)
    return p[idx:] if idx >= 0 else p


def _read_parquet(
    store: LogStore, path: str, *, table: str, version: int, need_removes: bool, need_files: bool = True
) -> pa.Table:
    full = store.full_path(path)
    try:
        source: Any = full if "://" not in full else io.BytesIO(store.read(path))
        pf = pq.ParquetFile(source)
        names = set(pf.schema_arrow.names)
        files = ["add", *(["remove"] if need_removes else [])] if need_files else []
        wanted = [*files, *_NON_FILE_COLUMNS]
        return pf.read(columns=[c for c in wanted if c in names], use_threads=True)
    except FileNotFoundError:
        raise CorruptLogError(
            "checkpoint file is missing (listed but not readable)", table=table, version=version, file=path
        ) from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptLogError(
            f"checkpoint file is not readable parquet: {exc}", table=table, version=version, file=path
        ) from None


def _split_checkpoint_table(
    t: pa.Table, *, table: str, version: int, file: str
) -> tuple[pa.Table, pa.Table, list[Action]]:
    adds = _empty(ADD_SCHEMA)
    removes = _empty(REMOVE_SCHEMA)
    where = _Where(table, version, file)
    try:
        if "add" in t.column_names:
            col = drop_null_rows(t.column("add"))
            adds = normalize_files(col, ADD_SCHEMA)
            adds = _stats_from_parsed(col, adds)
        if "remove" in t.column_names:
            removes = normalize_files(drop_null_rows(t.column("remove")), REMOVE_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as exc:
        raise CorruptLogError(
            f"checkpoint file action has a field of the wrong type: {exc}", table=table, version=version, file=file
        ) from None
    _check_required(adds, t, "add", _ADD_REQUIRED, where)
    _check_required(removes, t, "remove", _REMOVE_REQUIRED, where)
    others: list[Action] = []
    for name in _NON_FILE_COLUMNS:
        if name not in t.column_names:
            continue
        col = t.column(name)
        col = col.filter(pc.is_valid(col))
        for row in col.to_pylist():
            action = parse_action_dict(
                {name: _clean_parquet_row(name, row)}, table=table, version=version, file=file
            )
            if action is not None and not isinstance(action, AddCDCFile):
                others.append(action)
    return adds, removes, others


_ADD_REQUIRED = ("path", "size", "modificationTime", "dataChange", "partitionValues")
_REMOVE_REQUIRED = ("path", "dataChange")


@dataclass(frozen=True)
class _Where:
    table: str
    version: int
    file: str


def _check_required(files: pa.Table, raw: pa.Table, action: str, required: tuple[str, ...], where: _Where) -> None:
    """Raise when a required field of a checkpoint's file actions is null (null counts only; the row
    is looked up on the error path)."""
    for name in required:
        if not files.column(name).null_count:
            continue
        col = raw.column(action)
        kind = col.type
        present = any(kind.field(i).name == name for i in range(kind.num_fields))
        row = None
        if present:
            flat = col.combine_chunks()
            bad = pc.and_(flat.is_valid(), pc.is_null(flat.field(name)))
            row = int(np.argmax(bad.to_numpy(zero_copy_only=False)))
        detail = f"at row {row} of the file " if row is not None else "(the column is absent) "
        raise CorruptLogError(
            f"checkpoint {action} action {detail}has no value for required field '{name}' "
            f"(column {action}.{name})",
            table=where.table, version=where.version, file=where.file,
        )


_MAP_KEYS = frozenset({"configuration", "options", "tags", "partitionValues"})


def _clean_parquet_row(name: str, row: dict[str, Any]) -> dict[str, Any]:
    """Parquet maps come back as lists of pairs; JSON-style actions want objects."""
    out = dict(row)
    for key, value in row.items():
        if key in _MAP_KEYS and isinstance(value, list):
            out[key] = dict(value)
        elif isinstance(value, dict):
            out[key] = _clean_parquet_row(key, value)
    if name == "metaData" and out.get("configuration") is None:
        out["configuration"] = {}
    return out


def _stats_from_parsed(raw: pa.ChunkedArray | pa.Array, adds: pa.Table) -> pa.Table:
    """Checkpoints may carry only ``stats_parsed``; render it as JSON where ``stats`` is missing."""
    names = {raw.type.field(i).name for i in range(raw.type.num_fields)}
    if "stats_parsed" not in names or adds.num_rows == 0:
        return adds
    stats = adds.column("stats")
    if stats.null_count == 0:
        return adds
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    from deltalog.protocol.stats import stats_parsed_to_json

    parsed_json = stats_parsed_to_json(raw.field("stats_parsed"))
    merged = pc.coalesce(stats.combine_chunks(), parsed_json)
    return adds.set_column(adds.schema.get_field_index("stats"), "stats", merged)


def commit_info_json(fa: FileActions) -> dict[str, Any] | None:
    """The ``commitInfo`` of a commit as a plain dict (for history), or ``None``."""
    ci = fa.commit_info
    return None if ci is None else json.loads(json.dumps(ci.to_dict()))
