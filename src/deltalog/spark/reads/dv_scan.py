"""Deletion vectors applied inside Spark's parquet scan without a per-row file path.

Spark's scan reports each row's ``_metadata.row_index``; which file a row comes from is the costly
part: ``_metadata.file_path`` is a string per row, and a join on ``(path, row_index)`` hashes it for
every row (most of a deletion-vector scan's time). A file's size identifies it just as well when no
two files of the scan share a size, and ``_metadata.file_size`` is a number Spark fills per file. So:

* sizes are used only when they are unique among the scan's files and the store reports each
  deletion-vector file with exactly the size the log records -- else :func:`keyed_scan` returns
  ``None`` and the caller joins on the path;
* each row's key is ``row_index << b | file_size``, ``b`` the bit length of the largest size, when the
  log's ``numRecords`` statistics show that every row index fits in the remaining bits: two shifts per
  row and no per-file expression. Otherwise the deletion-vector files get small ids by size and the key
  is ``id << 40 | row_index`` (a CASE over the sizes, measured ~0.5 s slower on 10M rows; files without
  a deletion vector get a null key and keep every row). Each deleted row's key is built the same way on
  the driver from the decoded deletion vectors;
* a broadcast ``left_anti`` join on that single ``long`` key drops the deleted rows (Spark's hash join
  on one long key probes an array-backed map);
* except when one file of the scan deletes rows (its deleted rows below :data:`BIT_TEST_MAX_ROWS`): then
  each row's ``row_index`` bit is tested in that deletion vector, a constant ``array<bigint>`` in the plan
  (no key, no join, no job to broadcast the deleted rows; the file told apart by its size when the scan
  has others).

Example:
    >>> keyed_scan(spark, snap, files, raw, columns)                           # doctest: +SKIP
    DataFrame[id: bigint, v: double]
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import DeltaError
from deltalog.spark.common.compat import frame_from_arrow

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = [
    "BIT_TEST_MAX_ROWS", "MAX_KEYED_FILES", "ROW_KEY", "deleted_row_keys", "deleted_rows_per_file", "keyed_scan",
    "row_key_bits", "without_deleted_rows",
]

#: Above this many deletion-vector files the CASE that maps sizes to ids gets long; the path join is
#: used instead (packed keys have no such limit).
MAX_KEYED_FILES = 128
#: A scan with one deletion vector tests each row's bit in it (a constant of ``max deleted row / 64`` longs)
#: when its deleted rows lie below this; else, and with several deletion vectors, the anti join.
BIT_TEST_MAX_ROWS = 1 << 22
#: The packed ``row_index << bits | file_size`` column :func:`keyed_scan` keeps with ``key_bits``.
ROW_KEY = "__deltalog_row_key"
_KEY = ROW_KEY
_ROW_BITS = 40  # row indexes below 2**40 (a trillion rows per file)
#: Deleted-row key frames kept for later reads of the same deletion vectors (dashboards re-reading one table
#: version plan again without decoding the vectors or sending their keys to the JVM): at most this many frames,
#: holding at most :data:`KEPT_KEYS` keys.
KEPT_FRAMES = 16
KEPT_KEYS = 20_000_000
_KEPT: OrderedDict[tuple[str, str], tuple[Any, int]] = OrderedDict()
_KEPT_LOCK = threading.Lock()


def deleted_rows_per_file(snapshot: Snapshot, files: pa.Table) -> list[tuple[int, np.ndarray]]:
    """``(index in files, deleted row indexes)`` of each file whose deletion vector deletes rows.

    Example:
        >>> deleted_rows_per_file(snap, snap.add_files())[0][1][:3]             # doctest: +SKIP
        array([ 7, 107, 207], dtype=uint64)
    """
    from deltalog.data.read import deleted_rows

    out: list[tuple[int, np.ndarray]] = []
    dvs = files.column("deletionVector").to_pylist()
    paths = files.column("path").to_pylist()
    for i, (dv, path) in enumerate(zip(dvs, paths, strict=True)):
        if not dv:
            continue
        try:
            rows = deleted_rows(snapshot.store, dv)
        except DeltaError as exc:
            raise DeltaError(f"deletion vector of {path} cannot be read: {exc.message}",
                             table=snapshot.table, version=snapshot.version) from None
        except OSError as exc:
            raise DeltaError(f"deletion vector file of {path} cannot be read: {exc}",
                             table=snapshot.table, version=snapshot.version) from None
        if rows.size:
            out.append((i, rows))
    return out


def deleted_row_keys(snapshot: Snapshot, files: pa.Table, uris: Sequence[str]) -> pa.Table:
    """The deleted rows of ``files`` as a :data:`~deltalog.spark.reads.files.FILE` / ``ROW`` table (``uris[i]``
    is file ``i``'s key), for the anti join on ``_metadata.file_path`` and ``_metadata.row_index``.

    Example:
        >>> deleted_row_keys(snap, files, file_keys(snap, files)).num_rows       # doctest: +SKIP
        100000
    """
    from deltalog.spark.reads.files import FILE, ROW

    per_file = deleted_rows_per_file(snapshot, files)
    keys = [pc.take(pa.array([uris[i]], pa.string()), pa.array(np.zeros(rows.size, np.int32))) for i, rows in per_file]
    return pa.table({
        FILE: pa.chunked_array(keys, pa.string()),
        ROW: pa.chunked_array([pa.array(rows.astype(np.int64)) for _, rows in per_file], pa.int64()),
    })


def without_deleted_rows(spark: Any, df: Any, snapshot: Snapshot, files: pa.Table, uris: Sequence[str]) -> Any:
    """``df``, a scan of ``files`` keyed by :data:`~deltalog.spark.reads.files.FILE` / ``ROW`` (``uris[i]`` is file
    ``i``'s key), without the rows the files' deletion vectors delete: a broadcast anti join on the keys.

    Example:
        >>> without_deleted_rows(spark, scan, snap, files, file_keys(snap, files)).count()     # doctest: +SKIP
        900000
    """
    from pyspark.sql import functions as F

    from deltalog.spark.common.core import spark_schema
    from deltalog.spark.reads.files import FILE, ROW, key_fields

    deleted = deleted_row_keys(snapshot, files, uris)
    if not deleted.num_rows:
        return df
    ddf = frame_from_arrow(spark, deleted, spark_schema(key_fields(with_row=True)))
    return df.join(F.broadcast(ddf), on=[FILE, ROW], how="left_anti")


def row_key_bits(files: pa.Table) -> int | None:
    """Bits for the file size in a packed ``row_index << bits | file_size`` key, or ``None`` when some
    file's ``numRecords`` is unknown or its row indexes would not fit in the bits left of a positive
    ``long``.

    Example:
        >>> row_key_bits(snap.add_files())                                       # doctest: +SKIP
        14
    """
    from deltalog.log.stats_parsed import parse_stats

    if "stats" not in files.column_names or files.num_rows == 0:
        return None
    parsed = parse_stats(files.column("stats"), pa.struct([("numRecords", pa.int64())]))
    counts = pc.struct_field(parsed, "numRecords")  # null where the whole stats string is
    if counts.null_count:
        return None
    bits = int(pc.max(files.column("size")).as_py()).bit_length()
    most = int(pc.max(counts).as_py() or 0)  # twice the room the row indexes need, in case a count is off
    return bits if bits + most.bit_length() <= 62 else None


def _ids_by_size(
    snapshot: Snapshot, files: pa.Table, deleted: list[tuple[int, np.ndarray]], *, sizes_from_log: bool,
    limit: bool = True,
) -> dict[int, int] | None:
    """``{size: id}`` for the files with deleted rows, or ``None`` when sizes cannot tell the scan's
    files apart (shared sizes; or, when Spark takes the sizes from the file system rather than from the log,
    absolute paths or a store that reports another size than the log). ``limit``: more than
    :data:`MAX_KEYED_FILES` such files is refused too (the CASE over them gets long)."""
    sizes = files.column("size").to_pylist()
    if len(set(sizes)) != len(sizes) or (limit and len(deleted) > MAX_KEYED_FILES):
        return None
    paths = files.column("path").to_pylist()
    ids: dict[int, int] = {}
    for n, (i, _) in enumerate(deleted):
        path = paths[i]
        if sizes_from_log:
            ids[int(sizes[i])] = n
            continue
        if "://" in path or path.startswith(("/", "file:")):
            return None
        try:
            actual = snapshot.store.stat(unquote(path)).size
        except OSError:
            return None  # the scan reports the missing file itself
        if actual != sizes[i]:
            return None
        ids[int(sizes[i])] = n
    return ids


def _bit(rows: np.ndarray, row: Any) -> Any:
    """1 for a scan row whose ``row`` (its ``_metadata.row_index``) is among ``rows`` (one file's deleted
    row indexes), else 0: the row's bit tested in the deletion vector as one constant ``array<bigint>`` (a
    JSON string Spark's optimizer parses once)."""
    from pyspark.sql import functions as F

    indexes = rows.astype(np.uint64)
    words = np.zeros(int(indexes.max()) // 64 + 1, dtype=np.uint64)
    np.bitwise_or.at(words, indexes >> np.uint64(6), np.left_shift(np.uint64(1), indexes & np.uint64(63)))
    bitmap = F.from_json(F.lit(json.dumps(words.view(np.int64).tolist())), "array<bigint>")
    word = F.shiftright(row, 6)
    bit = F.getbit(F.element_at(bitmap, (word + 1).cast("int")), row.bitwiseAND(63).cast("int"))
    return F.when(word < F.lit(len(words)), bit).otherwise(F.lit(0))


def _not_deleted(rows: np.ndarray, row: Any, file_size: Any, size: int | None) -> Any:
    """True for the rows of a scan that ``rows`` (one file's deleted row indexes) does not delete, given each
    row's ``row`` index and ``file_size`` columns; that file's ``size`` tells it apart, ``None`` when it is the
    scan's only file. One bitmap only: a CASE over 16 files' bitmaps measured slower than the anti join
    (5.2 s against 4.1 s on 10M rows)."""
    from pyspark.sql import functions as F

    keep = _bit(rows, row) == 0
    return keep if size is None else keep | (file_size != F.lit(size))


def _keys_frame(spark: Any, keys: np.ndarray) -> Any:
    """A one-column frame of the deleted rows' ``keys`` with a broadcast hint, the same frame for the same keys
    in one session (Arrow to the JVM costs about 25 ms plus 0.6 ms per 1,000 keys; a kept frame nothing)."""
    from pyspark.sql import functions as F

    try:
        session = str(spark._jsparkSession.sessionUUID())
    except Exception:  # Spark Connect: frames are plans the server receives anew; keep nothing
        return F.broadcast(frame_from_arrow(spark, pa.table({_KEY: pa.array(keys, pa.int64())})))
    digest = (session, hashlib.blake2b(np.ascontiguousarray(keys).tobytes(), digest_size=20).hexdigest())
    with _KEPT_LOCK:
        found = _KEPT.get(digest)
        if found is not None:
            _KEPT.move_to_end(digest)
            return found[0]
    frame = F.broadcast(frame_from_arrow(spark, pa.table({_KEY: pa.array(keys, pa.int64())})))
    with _KEPT_LOCK:
        _KEPT[digest] = (frame, len(keys))
        total = sum(n for _, n in _KEPT.values())
        while _KEPT and (len(_KEPT) > KEPT_FRAMES or total > KEPT_KEYS):
            _, (_, n) = _KEPT.popitem(last=False)
            total -= n
    return frame


def keyed_scan(
    spark: Any, snapshot: Snapshot, files: pa.Table, raw: Any, columns: Sequence[str], *, sizes_from_log: bool = False,
    key_bits: int | None = None,
) -> Any | None:
    """``raw`` (Spark's parquet scan of ``files``, in which every file with a deletion vector is read
    whole) without the deleted rows, selecting ``columns``; ``None`` when the files cannot be told apart
    by size (the caller then joins on ``_metadata.file_path``). ``sizes_from_log``: ``raw`` was planned
    from the log (:mod:`deltalog.spark.reads.log_index`), so ``_metadata.file_size`` is the log's size.
    ``key_bits`` (:func:`row_key_bits` of ``files``, computed by the caller): every row keeps its packed
    :data:`ROW_KEY` (``row_index << key_bits | file_size``) as a last column; ``None`` when the sizes are
    not the log's.

    Example:
        >>> keyed_scan(spark, snap, files, spark.read.parquet(*paths), ["id"]).count()  # doctest: +SKIP
        990
    """
    from pyspark.sql import functions as F

    keep_key = key_bits is not None
    if keep_key and not sizes_from_log:  # every file's key must decode to the log's size
        return None
    bits = key_bits if keep_key else row_key_bits(files)
    deleted = deleted_rows_per_file(snapshot, files)
    ids = _ids_by_size(snapshot, files, deleted, sizes_from_log=sizes_from_log, limit=bits is None)
    if ids is None:
        return None
    selected = [F.col(f"`{c.replace('`', '``')}`") for c in columns]
    size = F.col("_metadata.file_size")
    row = F.col("_metadata.row_index")
    if not deleted:
        if keep_key:
            assert bits is not None
            return raw.select(*selected, F.shiftleft(row, bits).bitwiseOR(size).alias(_KEY))
        return raw.select(*selected)
    if not keep_key and len(deleted) == 1 and int(deleted[0][1].max()) < BIT_TEST_MAX_ROWS:
        own = None if files.num_rows == 1 else int(files.column("size")[deleted[0][0]].as_py())
        return raw.filter(_not_deleted(deleted[0][1], row, size, own)).select(*selected)
    if bits is not None:  # row index above the size: unique per row of the scan, no per-file CASE
        key = F.shiftleft(row, bits).bitwiseOR(size)
        sizes = files.column("size").to_numpy(zero_copy_only=False).astype(np.int64)
        keys = np.concatenate([(rows.astype(np.int64) << bits) | sizes[i] for i, rows in deleted])
    else:
        case = None
        for s, n in ids.items():
            case = F.when(size == F.lit(s), F.lit(n)) if case is None else case.when(size == F.lit(s), F.lit(n))
        assert case is not None
        key = F.shiftleft(case.cast("long"), _ROW_BITS).bitwiseOR(row)
        keys = np.concatenate([(np.int64(n) << _ROW_BITS) | rows.astype(np.int64)
                               for n, (_, rows) in enumerate(deleted)])
    gone = _keys_frame(spark, keys)  # broadcast-hinted
    if keep_key:
        return raw.select(*selected, key.alias(_KEY)).join(gone, on=_KEY, how="left_anti")
    # one join and one select: each DataFrame call is a Spark analysis of the plan (~10-25 ms here)
    return raw.join(gone, on=key == gone[_KEY], how="left_anti").select(*selected)
