"""Log replay: reconcile a log segment's actions into the table state at one version.

File actions are reconciled with vectorized Arrow/numpy kernels: every add and remove of the segment is
laid out newest first, keyed by (canonical path, deletion-vector id), and the first occurrence of each
key wins. Winners that are adds are the live files; winners that are removes are tombstones. Within one
commit an add beats a remove of the same key. Protocol, metadata, ``txn`` and domain metadata take the
newest value.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> from deltalog.log.segment import build_segment
    >>> s = InMemoryLogStore()
    >>> s.write("_delta_log/00000000000000000000.json", b'{"protocol":{"minReaderVersion":1,'
    ...         b'"minWriterVersion":2}}\\n{"metaData":{"id":"x","format":{"provider":"parquet"},'
    ...         b'"schemaString":"{\\\\"type\\\\":\\\\"struct\\\\",\\\\"fields\\\\":[]}","partitionColumns":[]}}',
    ...         overwrite=False)
    >>> replay(s, build_segment(s, table="t")).files.num_rows
    0
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import InvalidTableError
from deltalog.log.files import ADD_SCHEMA, REMOVE_SCHEMA, dv_unique_ids, restrict_map_keys
from deltalog.log.reader import (
    FileActions,
    metadata_partition_keys,
    partition_key_aliases,
    read_checkpoint,
    read_commits,
)
from deltalog.log.segment import LogSegment
from deltalog.protocol.actions import Action, CommitInfo, DomainMetadata, Metadata, Protocol, Txn
from deltalog.storage import LogStore

_KEY_SEP = "\x1f"


@dataclass
class TableState:
    """Reconciled state of a table at ``version``."""

    version: int
    protocol: Protocol
    metadata: Metadata
    files: pa.Table
    tombstones: pa.Table
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    commit_info: CommitInfo | None = None


def read_segment(store: LogStore, segment: LogSegment) -> list[FileActions]:
    """Read every file of the segment; newest first (commits, then the checkpoint last)."""
    files = list(reversed(segment.replay_files))
    checkpoint = read_checkpoint(store, segment.checkpoint, table=segment.table) if segment.checkpoint else None
    keys: set[str] = set()
    for action in checkpoint.others if checkpoint else ():
        if isinstance(action, Metadata):
            keys |= metadata_partition_keys(action)
    sources = [read_commits(store, files, table=segment.table, partition_keys=frozenset(keys))] if files else []
    if checkpoint is not None:
        sources.append(checkpoint)
    return sources


def replay(store: LogStore, segment: LogSegment) -> TableState:
    """Reconstruct the table state described by ``segment``.

    Raises :class:`InvalidTableError` when no protocol or metadata action is found.
    """
    return _reduce(store, segment, read_segment(store, segment))


def advance(
    store: LogStore, base: TableState, segment: LogSegment, *, actions: list[FileActions] | None = None
) -> TableState:
    """The state at ``segment.version`` from ``base`` plus only the commits after ``base.version``.

    ``base`` plays the part of a checkpoint: its live files and tombstones are the oldest source.
    ``actions``: those commits already read (newest first, read with the base's partition keys, as a
    writer has its winners and its own commit), so no log file is read again.
    """
    new = [f for f in segment.replay_files if f.version > base.version]
    keys = frozenset(metadata_partition_keys(base.metadata))
    if actions is not None:
        if [a.version for a in actions] != [f.version for f in reversed(new)]:
            raise ValueError(f"actions for versions {[a.version for a in actions]}, segment needs "
                             f"{[f.version for f in reversed(new)]}")
        sources = list(actions)
    elif new:
        sources = [read_commits(store, list(reversed(new)), table=segment.table, partition_keys=keys)]
    else:
        sources = []
    others: list[Action] = [base.protocol, base.metadata, *base.txns.values(), *base.domains.values()]
    sources.append(FileActions(base.version, base.files, base.tombstones, others, reconciled=True))
    return _reduce(store, segment, sources)


def _reduce(store: LogStore, segment: LogSegment, sources: list[FileActions]) -> TableState:
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, Txn] = {}
    domains: dict[str, DomainMetadata] = {}
    commit_info: CommitInfo | None = None
    for src in sources:
        for action in src.others:
            if isinstance(action, Protocol) and protocol is None:
                protocol = action
            elif isinstance(action, Metadata) and metadata is None:
                metadata = action
            elif isinstance(action, Txn):
                txns.setdefault(action.appId, action)
            elif isinstance(action, DomainMetadata):
                domains.setdefault(action.domain, action)
        if commit_info is None:
            commit_info = src.commit_infos.get(segment.version)
    if protocol is None:
        raise _missing("protocol", segment)
    if metadata is None:
        raise _missing("metaData", segment)
    files, tombstones = reconcile_files(sources, store.full_path(""))
    files = _only_partition_keys(files, frozenset(metadata_partition_keys(metadata)),
                                 partition_key_aliases(metadata))
    return TableState(
        version=segment.version,
        protocol=protocol,
        metadata=metadata,
        files=files,
        tombstones=tombstones,
        txns=txns,
        domains={k: v for k, v in domains.items() if not v.removed},
        commit_info=commit_info,
    )


def _only_partition_keys(files: pa.Table, keys: frozenset[str], aliases: frozenset[str] = frozenset()) -> pa.Table:
    """Live files carry exactly the current partition columns' values (entries a JSON batch read as
    null for keys of an older partitioning, or for the logical names of mapped columns, are dropped)."""
    if files.num_rows == 0:
        return files
    idx = files.schema.get_field_index("partitionValues")
    col = files.column(idx)
    restricted = restrict_map_keys(col, keys, drop_null=aliases)
    return files if restricted is col else files.set_column(idx, files.schema.field(idx), restricted)


def _missing(what: str, segment: LogSegment) -> InvalidTableError:
    if segment.checkpoint:
        file: str | None = segment.checkpoint[0].path
    elif segment.commits:
        file = segment.commits[0].path
    else:
        file = None
    return InvalidTableError(
        f"no {what} action found while reconstructing the table state (searched from {file} on)",
        table=segment.table, version=segment.version, file=file,
    )


def reconcile_files(sources: Iterable[FileActions], table_root: str) -> tuple[pa.Table, pa.Table]:
    """Vectorized add/remove reconciliation over sources ordered newest first.

    Within one source, actions on the same key are resolved by line order (the earlier line wins,
    which is how log compaction files list newest-first actions); without line positions adds come
    first. A trailing *reconciled* source (a checkpoint, or a previous state) is not deduplicated
    again: only its rows shadowed by newer actions are dropped, the rest is kept as zero-copy slices.
    Returns ``(live adds, tombstones)``, each in its normalized schema.
    """
    ordered = list(sources)
    base = ordered.pop() if ordered and ordered[-1].reconciled else None
    live, tombs, seen = _reconcile_log(ordered, table_root)
    if base is None:
        return live, tombs
    base_adds, base_removes = base.adds, base.removes
    if seen is not None:
        base_adds = _drop_shadowed(base_adds, seen, table_root)
        base_removes = _drop_shadowed(base_removes, seen, table_root)
    return _concat(live, base_adds), _concat(tombs, base_removes)


#: A state advanced commit by commit gains a chunk per commit; past this many, the small leading
#: (newest) chunks are merged, so compute calls over the state do not pay per chunk.
_MAX_CHUNKS = 32
_SMALL_CHUNK = 1 << 16


def _concat(newer: pa.Table, older: pa.Table) -> pa.Table:
    if newer.num_rows == 0:
        return older
    if older.num_rows == 0:
        return newer
    return _merge_small_chunks(pa.concat_tables([newer, older]))


def _merge_small_chunks(t: pa.Table) -> pa.Table:
    """``t`` with its leading run of small chunks merged into one once it has more than
    :data:`_MAX_CHUNKS` chunks; row order and the large (checkpoint) chunks after the run are kept.

    Example:
        >>> t = pa.concat_tables([pa.table({"a": [i]}) for i in range(40)])
        >>> _merge_small_chunks(t).column("a").num_chunks, _merge_small_chunks(t).column("a").to_pylist()[:3]
        (1, [0, 1, 2])
    """
    if t.num_columns == 0:
        return t
    lengths = [len(c) for c in t.column(0).chunks]
    if len(lengths) <= _MAX_CHUNKS:
        return t
    run = 0
    while run < len(lengths) and lengths[run] < _SMALL_CHUNK:
        run += 1
    if run < 2:
        return t
    head = sum(lengths[:run])
    merged = t.slice(0, head).combine_chunks()
    return merged if head == t.num_rows else pa.concat_tables([merged, t.slice(head)])


def _drop_shadowed(t: pa.Table, seen: pa.Array, table_root: str) -> pa.Table:
    """Rows of a reconciled source whose key a newer action already decided."""
    if t.num_rows == 0:
        return t
    shadowed = pc.is_in(_keys(t, table_root), value_set=seen)
    drop = np.flatnonzero(np.asarray(shadowed.to_numpy(zero_copy_only=False), dtype=bool))
    if len(drop) == 0:
        return t
    if len(drop) > 256:
        return t.filter(pc.invert(shadowed))
    starts = np.concatenate([[0], drop + 1])
    ends = np.concatenate([drop, [t.num_rows]])
    pieces = [t.slice(int(a), int(b - a)) for a, b in zip(starts, ends) if b > a]
    return pa.concat_tables(pieces) if pieces else t.schema.empty_table()


def _reconcile_log(
    sources: list[FileActions], table_root: str
) -> tuple[pa.Table, pa.Table, pa.Array | None]:
    """Reconcile commit sources; also returns the distinct keys they decide (``None`` if there are none)."""
    add_parts: list[pa.Table] = []
    rem_parts: list[pa.Table] = []
    seq_keys: list[pa.Array] = []
    kinds: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    n_add = n_rem = 0
    for src in sources:
        na, nr = src.adds.num_rows, src.removes.num_rows
        if na + nr == 0:
            continue
        keys = [_keys(src.adds, table_root), _keys(src.removes, table_root)]
        kind = np.concatenate([np.zeros(na, dtype=np.int8), np.ones(nr, dtype=np.int8)])
        row = np.concatenate([np.arange(n_add, n_add + na), np.arange(n_rem, n_rem + nr)])
        key = pa.concat_arrays(keys) if na and nr else keys[0] if na else keys[1]
        if na and nr and src.add_order is not None and src.remove_order is not None:
            perm = np.argsort(np.concatenate([src.add_order, src.remove_order]), kind="stable")
            key, kind, row = key.take(pa.array(perm)), kind[perm], row[perm]
        seq_keys.append(key)
        kinds.append(kind)
        rows.append(row)
        if na:
            add_parts.append(src.adds)
        if nr:
            rem_parts.append(src.removes)
        n_add += na
        n_rem += nr
    adds = pa.concat_tables(add_parts) if add_parts else ADD_SCHEMA.empty_table()
    removes = pa.concat_tables(rem_parts) if rem_parts else REMOVE_SCHEMA.empty_table()
    if not seq_keys:
        return adds, removes, None
    all_keys = pa.chunked_array(seq_keys, pa.string()).combine_chunks()
    encoded = pc.dictionary_encode(all_keys)
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)
    kind_arr = np.concatenate(kinds)[first]
    row_arr = np.concatenate(rows)[first]
    live_rows = np.sort(row_arr[kind_arr == 0])
    tomb_rows = np.sort(row_arr[kind_arr == 1])
    live = adds if len(live_rows) == adds.num_rows else adds.take(pa.array(live_rows))
    tombs = removes if len(tomb_rows) == removes.num_rows else removes.take(pa.array(tomb_rows))
    return live, tombs, encoded.dictionary


def _keys(t: pa.Table, table_root: str) -> pa.Array:
    if t.num_rows == 0:
        return pa.array([], pa.string())
    col = t.column("path")
    path = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    path = _canonical_paths(path, table_root)
    dv = t.column("deletionVector")
    if dv.null_count == len(dv):
        return path
    ids = dv_unique_ids(dv)
    return pc.coalesce(pc.binary_join_element_wise(path, ids, _KEY_SEP), path)


def _canonical_paths(path: pa.Array, table_root: str) -> pa.Array:
    """Make absolute ``file:`` URIs, absolute paths and table-relative paths of one file compare equal."""
    absolute = pc.starts_with(path, "/")
    has_scheme = pc.starts_with(path, "file:")
    if not pc.any(pc.or_(absolute, has_scheme)).as_py():
        return path
    out = pc.replace_substring_regex(path, r"^file:(?://)?/", "/")
    root = table_root.rstrip("/")
    if root.startswith("file:"):
        root = "/" + root[5:].lstrip("/")
    prefix = quote(root, safe="/:@") + "/"
    inside = pc.starts_with(out, prefix)
    if pc.any(inside).as_py():
        out = pc.if_else(inside, pc.utf8_slice_codeunits(out, len(prefix)), out)
    return out
