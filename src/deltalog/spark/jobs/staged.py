"""The Spark jobs of DML commands and what surrounds them on the driver.

* :func:`run_dv_job` -- marks rows deleted in deletion vectors. The ``(file, row_index)`` pairs to
  delete are shuffled by file and sorted, so each file's rows arrive in one task, contiguously; the task
  (:func:`_dv_task`) reads the file's current deletion vector (inline or in a file), builds the union
  bitmap, keeps it inline in the log when it serializes to at most
  :data:`~deltalog.data.deletion_vectors.INLINE_DV_MAX_BYTES` bytes and writes the larger bitmaps of its
  files into one ``deletion_vector_<uuid>.bin`` next to the table (no file when all are small). The
  driver only collects one small row per touched file (the new descriptor, the counts);
* :func:`write_rows` -- writes rows as new data files with the Spark writer of
  :mod:`deltalog.spark.writes.save` (conformed to the schema, constraints checked in the tasks);
* :class:`Staged` -- files written for a commit that has not happened: deleted if anything fails;
* preflight checks (append-only tables, writable protocol) and the translation of
  Spark task failures into deltalog errors.

Example:
    >>> results = run_dv_job(matches.select(FILE, ROW), snap, candidates)       # doctest: +SKIP
    >>> results[0].cardinality                                                   # doctest: +SKIP
    12
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.commands.dv_actions import wide_bounds
from deltalog.data.deletion_vectors import INLINE_DV_MAX_BYTES
from deltalog.errors import DeltaError, SchemaError
from deltalog.protocol.actions import Add, Metadata
from deltalog.protocol.schema import StructType
from deltalog.spark.common.core import quoted
from deltalog.spark.common.storage import is_connect
from deltalog.spark.jobs.native import native_columns_ok, native_table_ok, write_native
from deltalog.spark.jobs.tasks import delete_written, named_error
from deltalog.spark.reads.target import FILE, ROW, file_uris, num_records
from deltalog.storage import LocalLogStore
from deltalog.storage.locations import StoreRef
from deltalog.txn.writer_features import (
    AppendOnlyError,
    check_writable,
    is_true,
    upgrade_protocol,
)

if TYPE_CHECKING:
    from deltalog.data.write_files import WrittenFile
    from deltalog.snapshot import Snapshot
    from deltalog.table import Table
    from deltalog.txn.transaction import CommitResult, Transaction

__all__ = [
    "DmlResult",
    "DvOutcome",
    "DvResult",
    "Staged",
    "Timer",
    "apply_dv_results",
    "check_can_write",
    "count_matches",
    "refuse_append_only",
    "run_dv_job",
    "spark_error",
    "write_rows",
    "write_tallied",
]

DataFrame = Any  # pyspark.sql.DataFrame (classic or Connect)

_DV_SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("dv", pa.string()),
        ("new_rows", pa.int64()),
        ("cardinality", pa.int64()),
        ("all_deleted", pa.bool_()),
    ]
)
_DV_DDL = "file string, dv string, new_rows bigint, cardinality bigint, all_deleted boolean"


@dataclass(frozen=True)
class DmlResult:
    """What a DML command did: the committed ``version`` (``None`` when nothing changed and nothing
    was committed) and the ``operationMetrics`` (also in the commit's ``commitInfo``).

    Example:
        >>> DmlResult(version=None, metrics={"numDeletedRows": "0"}).metric("numDeletedRows")
        0
    """

    version: int | None
    metrics: Mapping[str, str] = field(default_factory=dict)

    def metric(self, name: str) -> int:
        """An integer metric (0 when absent).

        Example:
            >>> DmlResult(version=3, metrics={"numCopiedRows": "7"}).metric("numCopiedRows")
            7
        """
        try:
            return int(self.metrics.get(name, 0))
        except (TypeError, ValueError):
            return 0


class Timer:
    """Milliseconds since construction, and named phases (``scanTimeMs``, ``rewriteTimeMs``).

    Example:
        >>> t = Timer(); t.elapsed_ms() >= 0
        True
    """

    def __init__(self) -> None:
        self.start = time.monotonic()

    def elapsed_ms(self) -> int:
        """Milliseconds since the timer started.

        Example:
            >>> Timer().elapsed_ms() < 1000
            True
        """
        return int((time.monotonic() - self.start) * 1000)


# ------------------------------------------------------------------------------------- preflight


def refuse_append_only(snapshot: Snapshot, operation: str) -> None:
    """Refuse a DML command that changes data on a ``delta.appendOnly=true`` table, before any job.

    Example:
        >>> refuse_append_only(snap, "DELETE")                                   # doctest: +SKIP
    """
    if is_true(snapshot.metadata.configuration, "delta.appendOnly"):
        raise AppendOnlyError(
            f"[DELTA_CANNOT_MODIFY_APPEND_ONLY] This table is configured to only allow appends; {operation} "
            "would change existing rows. Set delta.appendOnly=false first to update or delete rows",
            table=snapshot.table,
        )


def check_can_write(snapshot: Snapshot) -> None:
    """Refuse early (before any job) what the commit would refuse: a protocol deltalog cannot write.
    (Rewrites on tables with the change data feed on are fine: DML writes change data files,
    :mod:`deltalog.spark.jobs.change_files`.)

    Example:
        >>> check_can_write(snap)                                 # doctest: +SKIP
    """
    md = snapshot.metadata
    check_writable(upgrade_protocol(snapshot.protocol, md), md, adds_data=True, table=snapshot.table)


# ------------------------------------------------------------------------------------- errors


#: A ``raise_error`` check's message: ``[USER_RAISED_EXCEPTION] ... SQLSTATE: P0001`` (Spark 3.5: thrown as a plain
#: ``java.lang.RuntimeException``).
_RAISED = re.compile(r"(?:\[USER_RAISED_EXCEPTION\]|java\.lang\.RuntimeException:)\s*(\[DELTA_.*?)"
                     r"(?:\s+SQLSTATE: \w+)?\s*$", re.MULTILINE)


def spark_error(exc: Exception, table: str) -> Exception:
    """The deltalog error behind a failed Spark job: a value check raised with ``raise_error`` (see
    :mod:`deltalog.spark.dml.assign`) becomes a :class:`~deltalog.errors.SchemaError`, a deltalog error
    raised in a Python task is rebuilt; anything else is returned unchanged.

    Example:
        >>> spark_error(RuntimeError("[USER_RAISED_EXCEPTION] [DELTA_CAST_FAILURE] x SQLSTATE: P0001"), "t")
        SchemaError('[DELTA_CAST_FAILURE] x [table t]')
    """
    if isinstance(exc, DeltaError):
        return exc
    text = str(exc)
    raised = _RAISED.search(text)
    if raised and raised.group(1).startswith("[DELTA_"):
        return SchemaError(raised.group(1), table=table)
    named = named_error(text, table=table)
    return exc if named is None else named


# ------------------------------------------------------------------------------------- staging


class Staged:
    """Files written for a commit that has not happened yet (data files, deletion vector files); all
    are deleted by :meth:`cleanup` when the command fails.

    Example:
        >>> staged = Staged(table.store)                                          # doctest: +SKIP
        >>> staged.data.extend(write_rows(df, table, schema, md))                  # doctest: +SKIP
    """

    def __init__(self, store: Any) -> None:
        self.store = store
        self.data: list[WrittenFile] = []
        self.dv_files: set[str] = set()
        #: Change data files (``_change_data/``) of tables with the change data feed on.
        self.cdc: list[WrittenFile] = []
        #: Row tracking: the rows copied into :attr:`data` carry their ids (see ``_row_ids``).
        self.keeps_row_ids = False

    def cleanup(self) -> None:
        """Best effort: delete every staged file (they are not referenced by any commit).

        Example:
            >>> staged.cleanup()                                                  # doctest: +SKIP
        """
        delete_written(self.store, [*self.data, *self.cdc])
        for path in self.dv_files:
            with contextlib.suppress(OSError):
                os.remove(path)

    def commit(self, txn: Transaction, metrics: Mapping[str, Any]) -> CommitResult:
        """Commit ``txn`` with ``metrics``; on failure delete the staged files and re-raise.

        Example:
            >>> staged.commit(txn, {"numDeletedRows": 3}).version                 # doctest: +SKIP
            4
        """
        # Never delete files a commit may reference: only while the transaction is provably uncommitted.
        txn.keeps_row_ids = txn.keeps_row_ids or self.keeps_row_ids
        with txn.discard_unless_committed(self.cleanup):
            result = txn.commit(metrics=metrics)
        return result


# ------------------------------------------------------------------------------------- writing


def target_file_size(metadata: Metadata) -> int:
    from deltalog.data.write_files import DEFAULT_TARGET_FILE_SIZE

    try:
        size = int(metadata.configuration.get("delta.targetFileSize", DEFAULT_TARGET_FILE_SIZE))
    except (TypeError, ValueError):
        return DEFAULT_TARGET_FILE_SIZE
    return size if size > 0 else DEFAULT_TARGET_FILE_SIZE


def write_rows(df: DataFrame, table: Table, schema: StructType, metadata: Metadata) -> list[WrittenFile]:
    """Write ``df`` (which has the columns of ``schema``) as new data files of ``table`` with the Spark
    writer (one ``mapInArrow`` job); returns the files, nothing is committed. Rows that carry the
    materialized row-tracking columns (:mod:`deltalog.spark.reads.row_ids`) are written with them.

    Example:
        >>> [f.num_records for f in write_rows(df, table, snap.schema, snap.metadata)]  # doctest: +SKIP
        [120]
    """
    return write_tallied(df, table, schema, metadata)[0]


def native_applies(df: DataFrame, table: Table, schema: StructType, metadata: Metadata) -> bool:
    """Whether ``df``'s rows go to ``table`` through Spark's own parquet writer
    (:func:`~deltalog.spark.jobs.native.native_rows_ok`: a local unpartitioned table without row checks);
    Spark Connect keeps the ``mapInArrow`` tasks.

    Example:
        >>> native_applies(df, table, snap.schema, snap.metadata)                   # doctest: +SKIP
        True
    """
    return native_table_applies(df.sparkSession, table, schema, metadata) and native_columns_ok(df, schema)


def native_table_applies(spark: Any, table: Table, schema: StructType, metadata: Metadata) -> bool:
    """What :func:`native_applies` asks of the table and the session alone, before any rows are planned
    (:func:`~deltalog.spark.jobs.native.native_table_ok`, a local table, a classic session).

    Example:
        >>> native_table_applies(spark, table, snap.schema, snap.metadata)          # doctest: +SKIP
        True
    """
    return isinstance(table.store, LocalLogStore) and not is_connect(spark) \
        and native_table_ok(spark, metadata, schema)


def write_tallied(
    df: DataFrame, table: Table, schema: StructType, metadata: Metadata, *, tally: str | None = None
) -> tuple[list[WrittenFile], dict[int, int]]:
    """:func:`write_rows`; with ``tally``, ``df``'s ``bigint`` column of that name is not written but
    counted: the rows per tag over the job (rows of a negative tag are counted and not written). Without
    ``tally`` the rows go through Spark's own parquet writer where :func:`native_applies`.

    Example:
        >>> files, counts = write_tallied(df, table, schema, md, tally="tag")         # doctest: +SKIP
        >>> counts
        {4: 118, -6: 2}
    """
    from pyspark.sql import functions as F

    from deltalog.spark.columns.generated import recompute_generated
    from deltalog.spark.jobs.tasks import TaskSpec, run_tallied
    from deltalog.spark.reads.row_ids import written_fields

    kept = written_fields(metadata, df.columns)  # row tracking: moved rows keep their ids
    if tally is None and not kept and native_applies(df, table, schema, metadata):
        store = table.store
        assert isinstance(store, LocalLogStore)  # native_applies said so
        try:
            return write_native(df, store, schema), {}
        except Exception as exc:
            raise spark_error(exc, table.location) from None
    full = StructType((*schema.fields, *kept)) if kept else schema
    spec = TaskSpec(StoreRef.of(table.store), table.location, full, metadata, None, target_file_size(metadata),
                    tally=tally)
    df = recompute_generated(df, schema)  # generated columns follow the rows' final values
    names = [f.name for f in full.fields] + ([tally] if tally else [])
    if df.columns != names:  # else already so: a select would cost one more round of plan analysis
        df = df.select(*[F.col(quoted(n)) for n in names])
    try:
        return run_tallied(df, spec)
    except Exception as exc:
        raise spark_error(exc, table.location) from None


def count_matches(scan: DataFrame, condition: Any, table: str) -> dict[str, int]:
    """Rows of ``scan`` (a :func:`~deltalog.spark.reads.target.target_scan`) where ``condition`` holds, per
    file (one job; only the files with at least one match appear).

    Example:
        >>> count_matches(scan, F.col("id") < 10, "/data/t")                     # doctest: +SKIP
        {'file:/data/t/part-0.parquet': 10}
    """
    from pyspark.sql import functions as F

    try:
        rows = scan.filter(condition).groupBy(FILE).agg(F.count(F.lit(1)).alias("n")).collect()
    except Exception as exc:
        raise spark_error(exc, table) from None
    return {r[FILE]: int(r["n"]) for r in rows}


# ------------------------------------------------------------------------------- deletion vectors


@dataclass(frozen=True)
class _DvSpec:
    store: StoreRef
    #: uri -> (path in the log, size, current deletion vector or None, numRecords or None)
    files: Mapping[str, tuple[str, int | None, Mapping[str, Any] | None, int | None]]
    #: bitmaps of at most this many bytes are stored inline (read on the driver, so tests can lower it)
    inline_max_bytes: int = INLINE_DV_MAX_BYTES


@dataclass(frozen=True)
class DvResult:
    """One touched file: its new deletion vector (``None`` when every row is gone), the rows newly
    deleted and the new cardinality.

    Example:
        >>> DvResult("file:/t/a.parquet", None, 4, 4, True).all_deleted
        True
    """

    uri: str
    dv: Mapping[str, Any] | None
    new_rows: int
    cardinality: int
    all_deleted: bool


def _finish_file(
    spec: _DvSpec, uri: str, parts: list[np.ndarray], bitmaps: list[tuple[bytes, int]],
    pending: list[tuple[str, int]], done: list[dict[str, Any]],
) -> None:
    import pyarrow.parquet as pq

    from deltalog.data.deletion_vectors import serialize_bitmap
    from deltalog.data.read import deleted_rows

    log_path, size, old_dv, total = spec.files[uri]
    store = spec.store.open()
    new = np.unique(np.concatenate(parts)).astype(np.uint64)
    old = deleted_rows(store, old_dv) if old_dv else None
    union = new if old is None or old.size == 0 else np.union1d(old, new)
    added = int(union.size - (0 if old is None else old.size))
    if total is None:
        total = pq.ParquetFile(_task_input(store, log_path, size)).metadata.num_rows
    if added == 0 and union.size < total:
        return  # every matching row was deleted already: the file keeps its deletion vector
    if union.size >= total:
        done.append({"file": uri, "dv": None, "new_rows": added, "cardinality": int(union.size), "all_deleted": True})
        return
    bitmaps.append((serialize_bitmap(union), int(union.size)))
    pending.append((uri, added))


def _dv_task(spec: _DvSpec, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Runs in a Spark task over ``(file, row)`` sorted by file: one new bitmap per file (old deletion
    vector included), small ones inline, the others written into one new deletion vector file; yields
    one row per file."""
    from deltalog.data.deletion_vectors import store_deletion_vectors

    bitmaps: list[tuple[bytes, int]] = []
    pending: list[tuple[str, int]] = []
    done: list[dict[str, Any]] = []
    current: str | None = None
    parts: list[np.ndarray] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        encoded = pc.dictionary_encode(batch.column(0))
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        names = encoded.dictionary.to_pylist()
        rows = batch.column(1).to_numpy(zero_copy_only=False)
        bounds = [0, *(np.flatnonzero(codes[1:] != codes[:-1]) + 1).tolist(), len(codes)]
        for begin, end in itertools.pairwise(bounds):
            uri = names[codes[begin]]
            if uri != current:
                if current is not None:
                    _finish_file(spec, current, parts, bitmaps, pending, done)
                current, parts = uri, []
            parts.append(rows[begin:end])
    if current is not None:
        _finish_file(spec, current, parts, bitmaps, pending, done)
    if bitmaps:
        descriptors = store_deletion_vectors(spec.store.open(), bitmaps, inline_max_bytes=spec.inline_max_bytes)
        for (uri, added), dv in zip(pending, descriptors, strict=True):
            done.append({
                "file": uri, "dv": json.dumps(dv.to_dict()), "new_rows": added, "cardinality": dv.cardinality,
                "all_deleted": False,
            })
    if done:
        yield pa.RecordBatch.from_pylist(done, schema=_DV_SCHEMA)


def _task_input(store: Any, log_path: str, size: int | None) -> Any:
    """A data file named in the log, opened through ``store`` inside a task (local path or ranged reads)."""
    from deltalog.spark.reads.files import open_file

    return open_file(store, log_path, size)


def run_dv_job(matches: DataFrame, snapshot: Snapshot, candidates: pa.Table) -> list[DvResult]:
    """Mark the ``(FILE, ROW)`` rows of ``matches`` deleted: the tasks build the new deletion vectors
    (inline when at most :data:`~deltalog.data.deletion_vectors.INLINE_DV_MAX_BYTES` bytes, else in new
    deletion vector files); returns one :class:`DvResult` per touched file (nothing is committed).

    Example:
        >>> run_dv_job(scan.filter("id < 10").select(FILE, ROW), snap, files)[0].new_rows  # doctest: +SKIP
        10
    """
    from pyspark.sql import functions as F

    rows = candidates.to_pylist()
    uris = file_uris(snapshot, candidates)
    spec = _DvSpec(
        StoreRef.of(snapshot.store),
        {
            uri: (
                r["path"],
                r.get("size"),
                {k: v for k, v in r["deletionVector"].items() if v is not None} if r.get("deletionVector") else None,
                num_records(r),
            )
            for uri, r in zip(uris, rows)
        },
        INLINE_DV_MAX_BYTES,
    )
    job = (
        matches.select(F.col(FILE), F.col(ROW))
        .repartition(F.col(FILE))
        .sortWithinPartitions(F.col(FILE))
        .mapInArrow(functools.partial(_dv_task, spec), _DV_DDL)
    )
    try:
        collected = job.collect()
    except Exception as exc:
        raise spark_error(exc, snapshot.table) from None
    return [
        DvResult(
            uri=r["file"],
            dv=json.loads(r["dv"]) if r["dv"] else None,
            new_rows=int(r["new_rows"]),
            cardinality=int(r["cardinality"]),
            all_deleted=bool(r["all_deleted"]),
        )
        for r in collected
    ]


@dataclass
class DvOutcome:
    """What re-adding files with new deletion vectors staged (delta-spark's metric meanings: a DV is
    *added* to a file that had none, *updated* when it replaces one, *removed* with a file that goes).

    Example:
        >>> DvOutcome().removed_files
        0
    """

    deleted_rows: int = 0
    removed_files: int = 0
    removed_bytes: int = 0
    dvs_added: int = 0
    dvs_updated: int = 0
    dvs_removed: int = 0


def apply_dv_results(
    txn: Transaction, snapshot: Snapshot, candidates: pa.Table, results: list[DvResult], staged: Staged
) -> DvOutcome:
    """Stage the actions of :func:`run_dv_job`'s results: each touched file is removed and, unless every
    row is gone, re-added with its new deletion vector (data file untouched, ``tightBounds: false``).

    Example:
        >>> apply_dv_results(txn, snap, files, results, staged).dvs_added         # doctest: +SKIP
        2
    """
    from deltalog.commands.dv_rebase import rebase_deletion_vectors
    from deltalog.protocol.deletion_vectors import DeletionVectorDescriptor

    if rebase_deletion_vectors not in txn.conflict_resolvers:  # other rows of these files may change concurrently
        txn.conflict_resolvers.append(rebase_deletion_vectors)
    root = snapshot.store.full_path("")
    by_uri = dict(zip(file_uris(snapshot, candidates), candidates.to_pylist()))
    out = DvOutcome()
    for r in results:
        if r.dv is not None:
            path = DeletionVectorDescriptor.from_dict(r.dv).absolute_path(root)
            if path is not None:
                staged.dv_files.add(path)
    for r in results:
        row = by_uri[r.uri]
        had_dv = bool(row.get("deletionVector"))
        out.deleted_rows += r.new_rows
        txn.remove_files([row])
        if r.all_deleted or r.dv is None:
            out.removed_files += 1
            out.removed_bytes += int(row.get("size") or 0)
            out.dvs_removed += int(had_dv)
            continue
        txn.add_file(
            Add(
                path=row["path"],
                partitionValues=dict(row.get("partitionValues") or []),
                size=row["size"],
                modificationTime=row["modificationTime"],
                dataChange=True,
                stats=wide_bounds(row.get("stats")),
                tags=dict(row["tags"]) if row.get("tags") else None,
                deletionVector=dict(r.dv),
                baseRowId=row.get("baseRowId"),
                defaultRowCommitVersion=row.get("defaultRowCommitVersion"),
                clusteringProvider=row.get("clusteringProvider"),
            )
        )
        if had_dv:
            out.dvs_updated += 1
        else:
            out.dvs_added += 1
    return out
