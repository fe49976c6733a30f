"""Reading and writing deletion vector bitmaps (the sets of deleted row indices of a data file).

A serialized DV is a 4-byte little-endian magic followed by a 64-bit roaring bitmap in the "portable"
layout (bucket count, then per bucket the high 32 bits and a standard 32-bit roaring bitmap). pyroaring's
``BitMap64`` reads and writes exactly that layout, which the tests check against bitmaps written by Spark.

On disk a DV file starts with a format-version byte (1) and then holds any number of DVs, each framed as
a big-endian int32 size, the serialized bytes, and a big-endian CRC-32 of those bytes; a descriptor's
``offset`` points at the size field. Inline (``'i'``) DVs put the serialized bytes themselves (no version
byte, size or checksum) Z85-encoded in the log; :func:`store_deletion_vectors` inlines those of at most
:data:`INLINE_DV_MAX_BYTES` and writes the others into one file.

Example:
    >>> dv = inline_descriptor([0, 9])
    >>> read_deletion_vector(dv, "/unused").tolist()
    [0, 9]
    >>> deletion_mask(dv, "/unused", 10).tolist()
    [False, True, True, True, True, True, True, True, True, False]
"""

from __future__ import annotations

import array
import os
import re
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap64

from deltalog.errors import DeletionVectorError
from deltalog.protocol.deletion_vectors import (
    STORAGE_INLINE,
    STORAGE_RELATIVE,
    DeletionVectorDescriptor,
    local_path,
    z85_decode,
    z85_encode,
)
from deltalog.storage import LogStore, store_for

__all__ = [
    "DV_FILE_FORMAT_VERSION",
    "INLINE_DV_MAX_BYTES",
    "MAGIC_PORTABLE",
    "MAX_ROW_INDEX",
    "ReadBytes",
    "deletion_mask",
    "deserialize_bitmap",
    "dv_file_bytes",
    "inline_descriptor",
    "read_deletion_vector",
    "read_local_bytes",
    "serialize_bitmap",
    "store_deletion_vectors",
    "write_deletion_vector_file",
    "write_deletion_vectors",
]

MAGIC_PORTABLE = 1681511377
"""Magic of a bitmap serialized in the portable 64-bit roaring layout (the only one Delta writes)."""
_MAGIC_NATIVE = 1681511376  # Delta's older "native" RoaringBitmapArray layout; not supported.
DV_FILE_FORMAT_VERSION = 1
"""Value of the first byte of every DV file."""
MAX_ROW_INDEX = ((2**31 - 2) << 32) | 0xFFFFFFFF
"""Largest row index Delta's JVM implementation can represent (high word must stay a valid Java int)."""

INLINE_DV_MAX_BYTES = 128
"""Largest serialized bitmap (magic included, in bytes) that DML writers store inline in the log.

A DV in a file costs one more object per command (written, listed by VACUUM, copied by deep CLONE) and
one more read per file with a DV on every scan; an inline DV costs log space instead: its Z85 text
(5 characters per 4 bytes, so at most 160 here) rides in the ``add`` action of the file and in every later
``remove`` / checkpoint entry of it, where a file DV takes a 20-character UUID and an offset. At 128 bytes
the inline text is about the ``stats`` string of a file with a handful of columns, so the log grows by a
small bounded amount per touched file, while the DVs of point deletes and updates -- up to 48 scattered
rows of one 64K-row range (32 + 2 bytes per row), a couple of dozen row ranges, or any number of
contiguous rows -- need no file. The threshold is a constant, not a table property: readers accept both
forms whatever the writer chose, so it never affects what a table means. (delta-spark itself always
writes files; the protocol allows both.)
"""

ReadBytes = Callable[[str, int, int], bytes]
"""``read_bytes(path, offset, length)``: return up to ``length`` bytes of ``path`` starting at ``offset``."""

_FRAME_OVERHEAD = 8  # int32 size before the bitmap + CRC-32 after it
_SINGLE_READ_LIMIT = 1 << 16  # read version byte and frame in one request when the frame starts this early
_PREFIX_RE = re.compile(r"[A-Za-z0-9]*")


# ---------------------------------------------------------------------------------------------------------
# Bitmap (de)serialization


def _as_row_indices(row_indices: npt.ArrayLike | Iterable[int]) -> npt.NDArray[np.uint64]:
    """Validate and convert row indices to a uint64 array (unsorted, possibly with duplicates)."""
    if isinstance(row_indices, np.ndarray):
        arr = row_indices
    else:
        seq: Any = row_indices
        if not isinstance(seq, (list, tuple, range)):
            seq = list(seq)
        arr = np.asarray(seq)
        if arr.dtype.kind == "f":  # numpy turns ints spanning int64 and uint64 into floats: check them
            arr = np.asarray(seq, dtype=object)
    arr = arr.reshape(-1)
    if arr.size == 0:
        return np.empty(0, dtype=np.uint64)
    kind = arr.dtype.kind
    if kind == "O":  # mixed Python ints (or junk); rare, so checked element by element
        values = arr.tolist()
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise DeletionVectorError(f"row indices must be non-negative integers, got {v!r:.40}")
        biggest = max(values)
        if biggest > MAX_ROW_INDEX:
            raise DeletionVectorError(f"row index {biggest} exceeds the maximum {MAX_ROW_INDEX}")
        return np.array(values, dtype=np.uint64)
    if kind not in "iu":
        raise DeletionVectorError(f"row indices must be integers, got an array of dtype {arr.dtype}")
    if kind == "i" and int(arr.min()) < 0:
        raise DeletionVectorError(f"row indices must not be negative, got {int(arr.min())}")
    out = arr.astype(np.uint64)
    if int(out.max()) > MAX_ROW_INDEX:
        raise DeletionVectorError(f"row index {int(out.max())} exceeds the maximum {MAX_ROW_INDEX}")
    return out


def serialize_bitmap(row_indices: npt.ArrayLike | Iterable[int]) -> bytes:
    """Serialize a set of row indices as Delta does: magic + portable 64-bit roaring bitmap.

    Duplicates are ignored and order does not matter; negative or non-integer input raises.

    Example:
        >>> data = serialize_bitmap([0, 9])
        >>> len(data), deserialize_bitmap(data).tolist()
        (36, [0, 9])
    """
    return _serialize_counted(row_indices)[0]


def _serialize_counted(row_indices: npt.ArrayLike | Iterable[int]) -> tuple[bytes, int]:
    """``serialize_bitmap`` plus the number of distinct row indices."""
    rows = _as_row_indices(row_indices)
    values = array.array("Q")
    values.frombytes(rows.tobytes())
    bitmap = BitMap64(values)
    bitmap.run_optimize()
    payload: bytes = bitmap.serialize()
    return MAGIC_PORTABLE.to_bytes(4, "little") + payload, len(bitmap)


def deserialize_bitmap(data: bytes, *, where: str = "deletion vector") -> npt.NDArray[np.uint64]:
    """Decode magic + portable 64-bit roaring bytes into a sorted uint64 array of row indices.

    ``where`` names the source (file and offset) in error messages.

    Example:
        >>> deserialize_bitmap(serialize_bitmap([2**32 + 1, 3])).tolist()
        [3, 4294967297]
    """
    if len(data) < 4:
        raise DeletionVectorError(f"{where}: {len(data)} bytes are too few to hold a bitmap")
    magic = int.from_bytes(data[:4], "little")
    if magic == _MAGIC_NATIVE:
        raise DeletionVectorError(f"{where}: the native RoaringBitmapArray serialization is not supported")
    if magic != MAGIC_PORTABLE:
        raise DeletionVectorError(f"{where}: bad magic number {magic} (expected {MAGIC_PORTABLE})")
    try:
        bitmap = BitMap64.deserialize(bytes(data[4:]))
    except (ValueError, TypeError) as exc:
        raise DeletionVectorError(f"{where}: corrupt roaring bitmap ({exc})") from None
    values = bitmap.to_array()
    return np.frombuffer(values, dtype=np.uint64) if len(values) else np.empty(0, dtype=np.uint64)


# ---------------------------------------------------------------------------------------------------------
# Reading


def read_local_bytes(path: str, offset: int, length: int) -> bytes:
    """Default ``read_bytes``: up to ``length`` bytes of a local file (``file:`` URIs allowed) at ``offset``.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "dv.bin")
        >>> write_deletion_vector_file(path, [serialize_bitmap([7])])
        [(1, 34)]
        >>> read_local_bytes(path, 0, 5)
        b'\\x01\\x00\\x00\\x00"'
    """
    with open(local_path(path), "rb") as fh:
        fh.seek(offset)
        return fh.read(length)


def _coerce(descriptor: DeletionVectorDescriptor | Mapping[str, Any]) -> DeletionVectorDescriptor:
    if isinstance(descriptor, DeletionVectorDescriptor):
        return descriptor
    return DeletionVectorDescriptor.from_dict(descriptor)


def _read(read_bytes: ReadBytes, dv: DeletionVectorDescriptor, path: str, offset: int, length: int) -> bytes:
    try:
        data = read_bytes(path, offset, length)
    except OSError as exc:
        raise dv.error(f"cannot read deletion vector ({exc.strerror or exc})", file=path) from exc
    if len(data) < length:
        raise dv.error(
            f"deletion vector file is truncated: wanted {length} bytes at offset {offset}, got {len(data)}",
            file=path,
        )
    return data


def _read_stored(dv: DeletionVectorDescriptor, path: str, read_bytes: ReadBytes) -> bytes:
    """Read, frame-check and CRC-check the serialized bitmap of a file-backed DV."""
    offset = 1 if dv.offset is None else dv.offset  # absent offset: the first DV, right after the version
    size = dv.sizeInBytes
    if offset < 1:
        raise dv.error(f"deletion vector offset {offset} overlaps the format version byte", file=path)
    frame_len = size + _FRAME_OVERHEAD
    if offset <= _SINGLE_READ_LIMIT:
        head = _read(read_bytes, dv, path, 0, offset + frame_len)
        version, frame = head[0], head[offset:]
    else:
        version = _read(read_bytes, dv, path, 0, 1)[0]
        frame = _read(read_bytes, dv, path, offset, frame_len)
    if version != DV_FILE_FORMAT_VERSION:
        raise dv.error(f"unsupported deletion vector file format version {version}", file=path)
    stored_size = int.from_bytes(frame[:4], "big", signed=True)
    if stored_size != size:
        raise dv.error(
            f"deletion vector at offset {offset} has size {stored_size} but the log says {size}", file=path
        )
    data = frame[4 : 4 + size]
    stored_crc = int.from_bytes(frame[4 + size : 8 + size], "big")
    actual_crc = zlib.crc32(data)
    if stored_crc != actual_crc:
        raise dv.error(
            f"deletion vector at offset {offset} fails its checksum "
            f"(stored {stored_crc:#010x}, computed {actual_crc:#010x})",
            file=path,
        )
    return data


def read_deletion_vector(
    descriptor: DeletionVectorDescriptor | Mapping[str, Any],
    table_root: str,
    *,
    read_bytes: ReadBytes | None = None,
) -> npt.NDArray[np.uint64]:
    """Return the sorted uint64 row indices a DV deletes, after checking checksum, magic and cardinality.

    ``descriptor`` may be the raw ``deletionVector`` JSON object. ``read_bytes(path, offset, length)``
    fetches file bytes (default: local files), so object stores can plug in.

    Example:
        >>> read_deletion_vector({"storageType": "i", "pathOrInlineDv": inline_descriptor([5]).pathOrInlineDv,
        ...                       "sizeInBytes": 34, "cardinality": 1}, "/t").tolist()
        [5]
    """
    dv = _coerce(descriptor)
    if dv.storageType == STORAGE_INLINE:
        try:
            raw = z85_decode(dv.pathOrInlineDv)
        except DeletionVectorError as exc:
            raise dv.error(f"cannot decode inline deletion vector: {exc.message}") from None
        if len(raw) < dv.sizeInBytes:
            raise dv.error(f"inline deletion vector holds {len(raw)} bytes, log says {dv.sizeInBytes}")
        data, source, file = raw[: dv.sizeInBytes], "inline deletion vector", None
    else:
        path = dv.absolute_path(table_root)
        assert path is not None
        data = _read_stored(dv, path, read_bytes or read_local_bytes)
        offset = 1 if dv.offset is None else dv.offset
        source, file = f"deletion vector at offset {offset}", path
    try:
        rows = deserialize_bitmap(data, where=source)
    except DeletionVectorError as exc:
        raise dv.error(exc.message, file=file) from None
    if rows.size != dv.cardinality:
        raise dv.error(
            f"{source} deletes {rows.size} rows but its cardinality is {dv.cardinality}", file=file
        )
    return rows


def deletion_mask(
    descriptor: DeletionVectorDescriptor | Mapping[str, Any],
    table_root: str,
    num_rows: int,
    *,
    read_bytes: ReadBytes | None = None,
) -> npt.NDArray[np.bool_]:
    """Boolean mask over a data file's ``num_rows`` rows: True = keep, False = deleted by the DV.

    Raises if the DV deletes a row index at or beyond ``num_rows``.

    Example:
        >>> deletion_mask(inline_descriptor([1]), "/t", 3).tolist()
        [True, False, True]
    """
    rows = read_deletion_vector(descriptor, table_root, read_bytes=read_bytes)
    mask = np.ones(num_rows, dtype=np.bool_)
    if rows.size:
        if int(rows[-1]) >= num_rows:
            raise _coerce(descriptor).error(
                f"deletion vector deletes row {int(rows[-1])} but the data file has only {num_rows} rows"
            )
        mask[rows.astype(np.intp)] = False
    return mask


# ---------------------------------------------------------------------------------------------------------
# Writing


def inline_descriptor(row_indices: npt.ArrayLike | Iterable[int]) -> DeletionVectorDescriptor:
    """Build an inline (``'i'``) descriptor holding the given row indices.

    Example:
        >>> d = inline_descriptor([0, 9])
        >>> d.storageType, d.sizeInBytes, d.cardinality
        ('i', 36, 2)
    """
    data, cardinality = _serialize_counted(row_indices)
    return _inline(data, cardinality)


def _inline(data: bytes, cardinality: int) -> DeletionVectorDescriptor:
    """The ``'i'`` descriptor of serialized bitmap bytes: the protocol's Z85 of exactly those bytes (zero
    padded to a multiple of 4 as delta-spark's ``Base85Codec`` does; readers cut the padding off at
    ``sizeInBytes``), no ``offset``, ``sizeInBytes`` = the unpadded length."""
    return DeletionVectorDescriptor(STORAGE_INLINE, z85_encode(data), len(data), cardinality)


def write_deletion_vector_file(
    path: str | os.PathLike[str], bitmaps: Sequence[bytes]
) -> list[tuple[int, int]]:
    """Write serialized bitmaps into a new DV file; return each one's ``(offset, sizeInBytes)``.

    The file must not exist yet (DV files are never overwritten).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "dv.bin"
        >>> write_deletion_vector_file(p, [serialize_bitmap([0, 9]), serialize_bitmap([3])])
        [(1, 36), (45, 34)]
    """
    payload, placed = dv_file_bytes(bitmaps, file=str(path))
    try:
        with open(local_path(os.fspath(path)), "xb") as fh:
            fh.write(payload)
    except OSError as exc:
        raise DeletionVectorError(
            f"cannot write deletion vector file ({exc.strerror or exc})", file=str(path)
        ) from exc
    return placed


def dv_file_bytes(bitmaps: Sequence[bytes], *, file: str = "") -> tuple[bytes, list[tuple[int, int]]]:
    """The content of a DV file holding serialized ``bitmaps``, and each one's ``(offset, sizeInBytes)``.

    Example:
        >>> data, placed = dv_file_bytes([serialize_bitmap([0, 9])])
        >>> data[0], placed
        (1, [(1, 36)])
    """
    chunks = [DV_FILE_FORMAT_VERSION.to_bytes(1, "big")]
    position = 1
    placed: list[tuple[int, int]] = []
    for i, data in enumerate(bitmaps):
        data = bytes(data)
        if len(data) < 4 or int.from_bytes(data[:4], "little") != MAGIC_PORTABLE:
            raise DeletionVectorError(f"bitmap #{i} does not start with the portable DV magic", file=file or None)
        if len(data) > 2**31 - 1:
            raise DeletionVectorError(f"bitmap #{i} is too large ({len(data)} bytes)", file=file or None)
        chunks += [len(data).to_bytes(4, "big"), data, zlib.crc32(data).to_bytes(4, "big")]
        placed.append((position, len(data)))
        position += len(data) + _FRAME_OVERHEAD
    return b"".join(chunks), placed


def write_deletion_vectors(
    table_root: str | LogStore,
    row_index_sets: Sequence[npt.ArrayLike | Iterable[int]],
    *,
    prefix: str = "",
    inline_max_bytes: int = 0,
) -> list[DeletionVectorDescriptor]:
    """Serialize several DVs and store them with :func:`store_deletion_vectors`: by default (nothing
    inlined) all in one new ``deletion_vector_<uuid>.bin`` file, as ``'u'`` descriptors.

    ``prefix`` (letters and digits) puts the file in that subdirectory of the table root; pass
    ``inline_max_bytes=INLINE_DV_MAX_BYTES`` to keep small DVs inline in the log instead.

    Example:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> [d] = write_deletion_vectors(root, [[1, 2]])
        >>> read_deletion_vector(d, root).tolist(), d.offset, d.cardinality
        ([1, 2], 1, 2)
        >>> [d.storageType for d in write_deletion_vectors(root, [[1], range(0, 200, 2)],
        ...                                                inline_max_bytes=INLINE_DV_MAX_BYTES)]
        ['i', 'u']
    """
    serialized = [_serialize_counted(rows) for rows in row_index_sets]
    return store_deletion_vectors(table_root, serialized, prefix=prefix, inline_max_bytes=inline_max_bytes)


def store_deletion_vectors(
    table_root: str | LogStore,
    bitmaps: Sequence[tuple[bytes, int]],
    *,
    inline_max_bytes: int = INLINE_DV_MAX_BYTES,
    prefix: str = "",
) -> list[DeletionVectorDescriptor]:
    """Descriptors for serialized DVs, given as ``(serialize_bitmap(rows), number of rows)`` pairs, in order.

    A bitmap of at most ``inline_max_bytes`` bytes becomes an inline ``'i'`` descriptor; the others are
    written together into one new ``deletion_vector_<uuid>.bin`` (under ``prefix``, letters and digits)
    and get ``'u'`` descriptors. No file is written when every DV is inline; ``inline_max_bytes=0``
    inlines nothing (the smallest bitmap takes 12 bytes).

    Example:
        >>> import tempfile, os
        >>> root = tempfile.mkdtemp()
        >>> small, big = serialize_bitmap([3]), serialize_bitmap(range(0, 100, 2))
        >>> len(small), len(big)
        (34, 132)
        >>> [d.storageType for d in store_deletion_vectors(root, [(small, 1), (big, 50)])]
        ['i', 'u']
        >>> [d.storageType for d in store_deletion_vectors(root, [(small, 1)])], len(os.listdir(root))
        (['i'], 1)
    """
    if not _PREFIX_RE.fullmatch(prefix):
        raise DeletionVectorError(f"deletion vector prefix must be letters and digits, got {prefix!r}")
    out: list[DeletionVectorDescriptor | None] = [
        _inline(bytes(data), count) if len(data) <= inline_max_bytes else None for data, count in bitmaps
    ]
    stored = [i for i, d in enumerate(out) if d is None]
    if stored:
        encoded = prefix + z85_encode(uuid.uuid4().bytes)
        probe = DeletionVectorDescriptor(STORAGE_RELATIVE, encoded, 0, 0, 1)
        rel = probe.relative_path()
        assert rel is not None
        store = table_root if isinstance(table_root, LogStore) else store_for(table_root)
        payload, placed = dv_file_bytes([bitmaps[i][0] for i in stored], file=rel)
        try:
            store.write(rel, payload, overwrite=False)  # a new uuid: put-if-absent never loses here
        except FileExistsError as exc:
            raise DeletionVectorError("a deletion vector file with this name exists already", file=rel) from exc
        for i, (offset, size) in zip(stored, placed, strict=True):
            out[i] = DeletionVectorDescriptor(STORAGE_RELATIVE, encoded, size, bitmaps[i][1], offset)
    return [d for d in out if d is not None]
