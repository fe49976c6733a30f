"""Columnar (Arrow) form of ``add`` and ``remove`` actions, whatever file they came from.

Commit JSON, JSON checkpoints, parquet checkpoints and sidecars all carry file actions with slightly
different physical shapes (partition values as a JSON object or a parquet map, optional fields absent,
``stats`` only as ``stats_parsed``). :func:`normalize_files` brings any of them to one schema so replay
can concatenate and reconcile them with vectorized kernels.

Example:
    >>> import pyarrow as pa
    >>> raw = pa.array([{"path": "a.parquet", "size": 1, "modificationTime": 2, "dataChange": True,
    ...                  "partitionValues": {"k": "1"}}])
    >>> normalize_files(raw, ADD_SCHEMA).column("partitionValues").to_pylist()
    [[('k', '1')]]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

STRING_MAP = pa.map_(pa.string(), pa.string())

DV_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)

ADD_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string(), nullable=False),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
    ]
)

REMOVE_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string(), nullable=False),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("extendedFileMetadata", pa.bool_()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("stats", pa.string()),
        ("tags", STRING_MAP),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
    ]
)

# Explicit types handed to the JSON reader; partitionValues/tags keys vary so they are inferred.
JSON_ADD_TYPE = pa.struct(
    [f.with_nullable(True) for f in ADD_SCHEMA if f.name not in ("partitionValues", "tags")]
)
JSON_REMOVE_TYPE = pa.struct(
    [f.with_nullable(True) for f in REMOVE_SCHEMA if f.name not in ("partitionValues", "tags")]
)


def struct_to_map(arr: pa.Array, *, drop_nulls: bool) -> pa.Array:
    """Turn a struct array of string-ish fields (JSON objects read by Arrow) into ``map<string,string>``.

    With ``drop_nulls`` entries whose value is null are dropped (a key absent in one JSON object but
    present in another reads as null); otherwise every field becomes an entry.

    Example:
        >>> import pyarrow as pa
        >>> s = pa.array([{"a": "1", "b": None}], pa.struct([("a", pa.string()), ("b", pa.string())]))
        >>> struct_to_map(s, drop_nulls=True).to_pylist()
        [[('a', '1')]]
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if pa.types.is_map(arr.type):
        return arr.cast(STRING_MAP)
    if pa.types.is_null(arr.type):
        return pa.nulls(n, STRING_MAP)
    struct = arr if pa.types.is_struct(arr.type) else None
    if struct is None:
        raise TypeError(f"expected a struct or map of strings, got {arr.type}")
    names = [struct.type.field(i).name for i in range(struct.type.num_fields)]
    k = len(names)
    row_valid = np.ones(n, dtype=bool) if struct.null_count == 0 else struct.is_valid().to_numpy(
        zero_copy_only=False
    )
    if k == 0:
        offsets = np.zeros(n + 1, dtype=np.int32)
        return pa.MapArray.from_arrays(
            pa.array(offsets), pa.array([], pa.string()), pa.array([], pa.string()),
            mask=pa.array(~row_valid),
        ).cast(STRING_MAP)
    fields = [_as_string(struct.field(i)) for i in range(k)]
    values = pa.concat_arrays(fields)
    perm = (np.arange(k)[None, :] * n + np.arange(n)[:, None]).ravel()
    keep = np.repeat(row_valid, k)
    if drop_nulls:
        keep &= values.is_valid().to_numpy(zero_copy_only=False)[perm]
    sel = perm[keep]
    counts = keep.reshape(n, k).sum(axis=1)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    keys = pa.array(np.array(names, dtype=object)[sel // max(n, 1)], pa.string())
    items = values.take(pa.array(sel))
    return pa.MapArray.from_arrays(
        pa.array(offsets), keys, items, mask=pa.array(~row_valid) if not row_valid.all() else None
    ).cast(STRING_MAP)


def _as_string(arr: pa.Array) -> pa.Array:
    if pa.types.is_string(arr.type):
        return arr
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), pa.string())
    if pa.types.is_boolean(arr.type):
        return pc.if_else(arr, "true", "false")
    return arr.cast(pa.string())


def normalize_files(arr: pa.Array | pa.ChunkedArray, schema: pa.Schema) -> pa.Table:
    """Bring a struct array of add (or remove) actions to ``schema``; null rows must be filtered first.

    Missing fields become nulls, JSON objects become maps, narrower integers are widened.

    Example:
        >>> import pyarrow as pa
        >>> t = normalize_files(pa.array([{"path": "x", "dataChange": False}]), REMOVE_SCHEMA)
        >>> t.column("deletionTimestamp").to_pylist()
        [None]
    """
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            arr = arr.chunk(0)
        else:
            parts = [normalize_files(c, schema) for c in arr.chunks if len(c)]
            return pa.concat_tables(parts) if parts else schema.empty_table()
    n = len(arr)
    have = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
    columns: list[pa.Array] = []
    for f in schema:
        if f.name not in have:
            columns.append(pa.nulls(n, f.type))
            continue
        col = arr.field(have[f.name])
        if f.type == STRING_MAP:
            col = struct_to_map(col, drop_nulls=f.name == "tags")
        elif f.type == DV_TYPE:
            col = _normalize_dv(col)
        elif col.type != f.type:
            col = col.cast(f.type)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema)


def _normalize_dv(col: pa.Array) -> pa.Array:
    if col.type == DV_TYPE:
        return col
    if pa.types.is_null(col.type):
        return pa.nulls(len(col), DV_TYPE)
    have = {col.type.field(i).name: i for i in range(col.type.num_fields)}
    children = []
    for f in DV_TYPE:
        child = col.field(have[f.name]) if f.name in have else pa.nulls(len(col), f.type)
        children.append(child.cast(f.type))
    mask = col.is_null() if col.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(DV_TYPE), mask=mask)


def dv_unique_ids(dv: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The deletion-vector unique id per row (``storageType + pathOrInlineDv [+ '@' + offset]``), null
    where a file has no deletion vector.

    Example:
        >>> import pyarrow as pa
        >>> dv = pa.array([None, {"storageType": "u", "pathOrInlineDv": "ab", "offset": 1,
        ...                       "sizeInBytes": 3, "cardinality": 1, "maxRowIndex": None}], DV_TYPE)
        >>> dv_unique_ids(dv).to_pylist()
        [None, 'uab@1']
    """
    if isinstance(dv, pa.ChunkedArray):
        dv = dv.combine_chunks()
    base = pc.binary_join_element_wise(dv.field("storageType"), dv.field("pathOrInlineDv"), "")
    offset = dv.field("offset").cast(pa.string())
    with_offset = pc.binary_join_element_wise(base, offset, "@")
    out = pc.coalesce(with_offset, base)
    return pc.if_else(dv.is_valid(), out, pa.scalar(None, pa.string()))


def drop_null_rows(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
    """The non-null rows of a column; zero-copy slices when the nulls form few runs (checkpoints hold
    a handful of non-file rows among many file rows), a filter otherwise.

    Example:
        >>> import pyarrow as pa
        >>> drop_null_rows(pa.array([None, 1, 2, None])).to_pylist()
        [1, 2]
    """
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    out: list[pa.Array] = []
    for chunk in chunks:
        if chunk.null_count == 0:
            out.append(chunk)
            continue
        valid = chunk.is_valid().to_numpy(zero_copy_only=False)
        edges = np.flatnonzero(np.diff(np.concatenate([[False], valid, [False]]).astype(np.int8)))
        starts, ends = edges[0::2], edges[1::2]
        if len(starts) > 64:
            out.append(chunk.filter(pa.array(valid)))
            continue
        out.extend(chunk.slice(int(a), int(b - a)) for a, b in zip(starts, ends))
    return pa.chunked_array(out, type=col.type)


def restrict_map_keys(
    arr: pa.ChunkedArray | pa.Array, keys: frozenset[str], *, drop_null: frozenset[str] = frozenset()
) -> pa.Array:
    """Keep only the entries of a ``map<string,string>`` column whose key is in ``keys`` (and, for keys in
    ``drop_null``, whose value is not null).

    Example:
        >>> import pyarrow as pa
        >>> m = pa.array([[("a", "1"), ("b", None)]], STRING_MAP)
        >>> restrict_map_keys(m, frozenset({"a"})).to_pylist()
        [[('a', '1')]]
        >>> restrict_map_keys(m, frozenset({"a", "b"}), drop_null=frozenset({"b"})).to_pylist()
        [[('a', '1')]]
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return arr
    if arr.offset:
        arr = pa.concat_arrays([arr])  # normalise offsets for the flat views below
    offsets = arr.offsets.to_numpy()
    flat_keys = arr.keys
    keep = pc.is_in(flat_keys, value_set=pa.array(sorted(keys), pa.string())).to_numpy(zero_copy_only=False)
    if drop_null:
        droppable = pc.and_(pc.is_in(flat_keys, value_set=pa.array(sorted(drop_null), pa.string())),
                            pc.is_null(arr.items))
        keep = keep & ~droppable.to_numpy(zero_copy_only=False)
    if keep.all():
        return arr
    counts = np.add.reduceat(keep.astype(np.int64), offsets[:-1]) if len(keep) else np.zeros(len(arr), np.int64)
    counts[offsets[:-1] == offsets[1:]] = 0  # reduceat quirk: empty rows take the next value
    new_offsets = np.zeros(len(arr) + 1, dtype=np.int32)
    np.cumsum(counts, out=new_offsets[1:])
    sel = pa.array(np.flatnonzero(keep))
    mask = arr.is_null() if arr.null_count else None
    return pa.MapArray.from_arrays(
        pa.array(new_offsets), flat_keys.take(sel), arr.items.take(sel), mask=mask
    ).cast(STRING_MAP)
