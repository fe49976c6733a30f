"""The Spark write job: each task writes its rows as Delta data files through the kernel's file writer
(``mapInArrow``, one open file per task for input sorted by the partition columns) and returns one row
per file; the driver collects those rows (never the data) into :class:`~deltalog.data.write_files.WrittenFile`
objects for the commit. Used by appends and overwrites (:mod:`deltalog.spark.writes.save`), DML rewrites,
change data and OPTIMIZE.

Example:
    >>> spec = TaskSpec(StoreRef.of(store), "/data/t", schema, metadata, None, 128 << 20)  # doctest: +SKIP
    >>> run_job(df, spec)[0].num_records                                                  # doctest: +SKIP
    1000
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow.write import WritePlan, write_batches
from deltalog.data.write_files import DataFileWriter, WrittenFile
from deltalog.errors import DeltaError
from deltalog.protocol.actions import Metadata
from deltalog.protocol.column_mapping import mapping_mode
from deltalog.protocol.iceberg_compat import compat_version
from deltalog.protocol.schema import StructType
from deltalog.spark.common.core import map_in_arrow
from deltalog.spark.common.workers import worker_import_error
from deltalog.storage.locations import StoreRef
from deltalog.txn.predicates import ReadPredicate

__all__ = [
    "FILE_DDL", "FILE_SCHEMA", "RunWriter", "TaskSpec", "chunks", "delete_written", "file_rows", "run_job",
    "run_tallied", "task_error", "written_files",
]

_CHUNK_ROWS = 1_000_000
_CHUNK_BYTES = 64 * 1024 * 1024
_FILE_FIELDS = (
    ("path", pa.string()),
    ("rel_path", pa.string()),
    ("partition_values", pa.string()),
    ("size", pa.int64()),
    ("num_records", pa.int64()),
    ("stats", pa.string()),
    ("modification_time", pa.int64()),
    ("tags", pa.string()),
)
FILE_SCHEMA = pa.schema(_FILE_FIELDS)
FILE_DDL = ", ".join(f"{n} {'string' if t == pa.string() else 'bigint'}" for n, t in _FILE_FIELDS)
#: a tallying job's task rows: the files, then one row (no path) with the task's counts as JSON
_TALLY_SCHEMA = FILE_SCHEMA.append(pa.field("tally", pa.string()))
_TALLY_DDL = FILE_DDL + ", tally string"




class RunWriter(DataFileWriter):
    """The kernel's file writer for input sorted by the partition columns: rows are split into runs of
    equal partition values (no per-batch grouping), and a value's file is finished when the next
    value starts, so each task holds one open file at a time.

    Files dictionary-encode string and binary columns only (pyarrow's default encodes every column):
    a dictionary of unique numbers makes files larger and Spark's scan of them ~25% slower, which is
    why parquet-mr falls back to plain encoding for them."""

    def _parquet_options(self) -> dict[str, Any]:
        return {"compression": "snappy", "use_dictionary": _dictionary_columns(self._file_schema)}

    def write(self, table: pa.Table) -> None:
        if not self.partition_columns or table.num_rows == 0:
            super().write(table)
            return
        starts = _run_starts(table, self.partition_columns)
        bounds = [*starts, table.num_rows]
        for begin, end in itertools.pairwise(bounds):
            first = table.slice(begin, 1).select(self.partition_columns).to_pylist()[0]
            values = self.partition_values(first)
            key = tuple(values.values())
            for other in [k for k in self._open if k != key]:
                self._finish(other)
            self._append(key, values, table.slice(begin, end - begin))


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """Column paths (``a.b`` inside structs) of the string and binary leaves of ``schema``."""
    out: list[str] = []

    def visit(t: pa.DataType, path: str) -> None:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(t.field(i).type, f"{path}.{t.field(i).name}")
        elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
                or pa.types.is_large_binary(t):
            out.append(path)

    for f in schema:
        visit(f.type, f.name)
    return out


def _run_starts(table: pa.Table, columns: Sequence[str]) -> list[int]:
    """Row indices where the partition values differ from the previous row (always including 0)."""
    n = table.num_rows
    if n < 2:
        return [0]
    change: Any = None
    for name in columns:
        col = table.column(name).combine_chunks()
        cur, prev = col.slice(1), col.slice(0, n - 1)
        diff: Any = pc.fill_null(pc.not_equal(cur, prev), False)
        diff = pc.or_(diff, pc.xor(pc.is_null(cur), pc.is_null(prev)))
        if pa.types.is_floating(col.type):
            both_nan = pc.and_(pc.fill_null(pc.is_nan(cur), False), pc.fill_null(pc.is_nan(prev), False))
            diff = pc.and_(diff, pc.invert(both_nan))
        change = diff if change is None else pc.or_(change, diff)
    idx = pc.indices_nonzero(change).to_numpy() + 1
    return [0, *(int(i) for i in idx)]


def chunks(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Gather Spark's small Arrow batches into chunks of up to ~1M rows / 64 MB."""
    pending: list[pa.RecordBatch] = []
    rows = size = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        rows += batch.num_rows
        size += batch.nbytes
        if rows >= _CHUNK_ROWS or size >= _CHUNK_BYTES:
            yield _combine(pending)
            pending, rows, size = [], 0, 0
    if pending:
        yield _combine(pending)


def _combine(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    combined: pa.RecordBatch = pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
    return combined


@dataclass(frozen=True)
class TaskSpec:
    store: StoreRef
    table: str
    schema: StructType
    metadata: Metadata
    predicate: ReadPredicate | None
    target_file_size: int
    max_records: int | None = None
    #: a ``bigint`` column of tags, not written: the tasks count the rows per tag (see :func:`run_tallied`)
    #: and write only the rows whose tag is not negative (nor null)
    tally: str | None = None


def _tallied(batches: Iterable[pa.RecordBatch], column: str, counts: dict[int, int]) -> Iterator[pa.RecordBatch]:
    """``batches`` without the tag column and the rows of a negative tag; each tag's rows added to ``counts``."""
    for batch in batches:
        tags = batch.column(column)
        seen = pc.value_counts(tags).to_pylist()
        for entry in seen:
            if entry["values"] is not None:
                counts[entry["values"]] = counts.get(entry["values"], 0) + entry["counts"]
        if any(entry["values"] is None or entry["values"] < 0 for entry in seen):
            batch = batch.filter(pc.greater_equal(tags, 0))
        yield batch.drop_columns([column])


def _write_task(spec: TaskSpec, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Runs in a Spark task: write the task's rows as data files, yield one row per file (and, when the
    job tallies, one row of counts)."""
    store = spec.store.open()
    writer = RunWriter(
        store,
        spec.schema,
        spec.metadata.partitionColumns,
        target_file_size=spec.target_file_size,
        max_records_per_file=spec.max_records,
        column_mapping=mapping_mode(spec.metadata.configuration),
        iceberg_compat=compat_version(spec.metadata.configuration),
    )
    plan = WritePlan(None, spec.metadata, spec.schema, False, spec.predicate)
    counts: dict[int, int] = {}
    rows = chunks(batches) if spec.tally is None else _tallied(chunks(batches), spec.tally, counts)
    try:
        write_batches(writer, rows, plan, spec.table)
        files = writer.close()
    except BaseException:
        writer.abort()
        raise
    out = [_file_row(f) for f in files]
    if spec.tally is not None:
        out.append({"tally": json.dumps(sorted(counts.items()))})
    if out:
        yield pa.RecordBatch.from_pylist(out, schema=FILE_SCHEMA if spec.tally is None else _TALLY_SCHEMA)


def _file_row(f: WrittenFile) -> dict[str, Any]:
    return {"path": f.path, "rel_path": f.rel_path, "partition_values": json.dumps(f.partition_values),
            "size": f.size, "num_records": f.num_records, "stats": f.stats, "modification_time": f.modification_time,
            "tags": json.dumps(f.tags) if f.tags else None}


def delete_written(store: Any, files: Iterable[WrittenFile]) -> None:
    """Delete ``files`` (written, never committed) from ``store``; a failing delete is passed over, so that
    cleaning up never hides the error that made it necessary.

    Example:
        >>> delete_written(store, [])
    """
    for f in files:
        with contextlib.suppress(Exception):
            store.delete(f.rel_path)


def file_rows(files: Sequence[WrittenFile]) -> pa.RecordBatch:
    """What a task yields for the files it wrote: one row (:data:`FILE_SCHEMA`) per file.

    Example:
        >>> file_rows([]).num_rows
        0
    """
    return pa.RecordBatch.from_pylist([_file_row(f) for f in files], schema=FILE_SCHEMA)


def written_files(rows: Iterable[Any]) -> list[WrittenFile]:
    """The files of the rows a job's tasks yielded (:func:`file_rows`), as the driver collected them.

    Example:
        >>> written_files([])
        []
    """
    return [
        WrittenFile(path=r["path"], rel_path=r["rel_path"], partition_values=json.loads(r["partition_values"]),
                    size=int(r["size"]), num_records=int(r["num_records"]), stats=r["stats"],
                    modification_time=int(r["modification_time"]),
                    tags=json.loads(r["tags"]) if r["tags"] else None)
        for r in rows
    ]


#: ``deltalog.x.Error: message`` -- a task's traceback line, or a ``raise_error`` check's message (which Spark
#: prefixes with ``[USER_RAISED_EXCEPTION]`` and follows with ``SQLSTATE: P0001``; Spark 3.5 throws it as a plain
#: ``java.lang.RuntimeException``, the line of the JVM trace's cause).
_ERROR_LINE = re.compile(
    r"^(?:\[USER_RAISED_EXCEPTION\]\s*|Caused by: java\.lang\.RuntimeException: )?(deltalog(?:\.\w+)*)\.(\w+): "
    r"(.*?)(?:\s+SQLSTATE: \w+)?$", re.MULTILINE)


def named_error(text: str, *, table: str | None = None) -> DeltaError | None:
    """The deltalog error the text of a failed Spark job names (``deltalog.x.Error: message``, the last
    one: a Python task's traceback line or a ``raise_error`` check's message), rebuilt as that class; a
    class that cannot be imported becomes a ``DeltaError`` (on ``table``); ``None`` when none is named.

    Example:
        >>> named_error("Traceback ...\\ndeltalog.errors.SchemaError: bad")
        SchemaError('bad')
    """
    found = _ERROR_LINE.findall(text)
    if not found:
        return None
    module, name, message = found[-1]
    try:
        import importlib

        cls = getattr(importlib.import_module(module), name)
        if isinstance(cls, type) and issubclass(cls, DeltaError):
            made: DeltaError = cls(message)
            return made
    except (ImportError, AttributeError, TypeError):
        pass
    return DeltaError(message, table=table) if table is not None else DeltaError(message)


def task_error(exc: Exception, table: str) -> Exception:
    """The deltalog error a task raised, rebuilt from Spark's PythonException text (no JVM trace), or from
    the message of a ``raise_error`` check that names one.

    Example:
        >>> task_error(RuntimeError("[USER_RAISED_EXCEPTION] deltalog.errors.SchemaError: bad [table t] "
        ...                         "SQLSTATE: P0001"), "t")
        SchemaError('bad [table t]')
    """
    text = str(exc)
    named = named_error(text)
    if named is not None:
        return named
    missing = worker_import_error(exc, table)
    return missing if missing is not None else exc


def run_job(df: Any, spec: TaskSpec) -> list[WrittenFile]:
    """Write ``df``'s rows as data files of ``spec.table`` in one Spark job (see the module docstring).

    Example:
        >>> [f.num_records for f in run_job(df, spec)]                                  # doctest: +SKIP
        [1000]
    """
    return run_tallied(df, spec)[0]


def run_tallied(df: Any, spec: TaskSpec) -> tuple[list[WrittenFile], dict[int, int]]:
    """:func:`run_job`, and with ``spec.tally`` the number of rows per tag over the whole job: what a caller
    learns about the rows while they are written instead of in a job of its own (e.g. a MERGE's matches).
    Counted from the tasks' results, so a retried task is counted once.

    Example:
        >>> files, counts = run_tallied(df, replace(spec, tally="tag"))                 # doctest: +SKIP
        >>> counts
        {1: 990, -2: 10}
    """
    from pyspark.sql import functions as F

    parts = list(spec.metadata.partitionColumns)
    source = df
    present = {c.lower() for c in df.columns}
    sort_by = [c for c in parts if c.lower() in present]
    if sort_by:
        source = df.sortWithinPartitions(*[F.col("`" + c.replace("`", "``") + "`") for c in sort_by])
    job = map_in_arrow(source, functools.partial(_write_task, spec), FILE_DDL if spec.tally is None else _TALLY_DDL)
    try:
        collected = job.collect()
    except Exception as exc:
        raise task_error(exc, spec.table) from None
    counts: dict[int, int] = {}
    for r in collected:
        if spec.tally is not None and r["tally"] is not None:
            for tag, n in json.loads(r["tally"]):
                counts[int(tag)] = counts.get(int(tag), 0) + int(n)
    return written_files(r for r in collected if r["path"] is not None), counts
