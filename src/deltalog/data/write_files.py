"""Writing data files: hive-style partition directories, rolling parquet files, footer statistics.

:class:`DataFileWriter` receives Arrow tables already conformed to the table's logical schema, splits
them by partition values (partition columns are *not* stored in the files -- except on Iceberg-compatible
tables --, nor are ``void`` columns),
buffers rows into row groups and rolls to a new file once ``target_file_size`` bytes are written. Each finished file
becomes a :class:`WrittenFile` with its ``add`` action fields; statistics come from the footer
(:func:`deltalog.data.write_stats.stats_json`). Files are streamed to their final path through
``LogStore.open_output`` (a local file fsynced on close; a buffered put elsewhere).

Example:
    >>> import pyarrow as pa
    >>> from deltalog.protocol.schema import StructType
    >>> from deltalog.storage import InMemoryLogStore
    >>> data = pa.table({"x": [1, 2], "p": ["a", "b"]})
    >>> w = DataFileWriter(InMemoryLogStore(), StructType.from_arrow_schema(data.schema), ["p"])
    >>> w.write(data)
    >>> sorted(f.partition_values["p"] for f in w.close())
    ['a', 'b']
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.data.write_stats import FloatBounds, count_floats, stats_columns, stats_json
from deltalog.data.write_variants import fill_variant_table
from deltalog.protocol.actions import Add
from deltalog.protocol.column_mapping import physical_schema
from deltalog.protocol.partitions import partition_path, serialize_partition_value
from deltalog.protocol.schema import StructField, StructType, is_void, physical_arrow_schema, physical_name
from deltalog.storage import LogStore
from deltalog.storage.log_store import OutputFile

__all__ = ["DEFAULT_TARGET_FILE_SIZE", "MAX_OPEN_FILES", "DataFileWriter", "WrittenFile", "stored_columns"]

#: Files roll over once this many bytes were written to them.
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024
_ROW_GROUP_BYTES = 64 * 1024 * 1024
#: the fewest rows a large piece handed to a writer is cut into (see ``DataFileWriter._add``)
_MIN_PIECE_ROWS = 10_000
#: At most this many files are open at once; with more partitions the oldest open file is finished.
MAX_OPEN_FILES = 128


def stored_columns(schema: StructType) -> StructType:
    """The columns of ``schema`` a data file stores: all but the ``void`` ones (only nulls), as delta-spark
    writes them -- unless nothing else is left (a parquet file needs a column to count its rows).

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> s = StructType((StructField("a", PrimitiveType("long")), StructField("b", PrimitiveType("void"))))
        >>> stored_columns(s).field_names
        ['a']
    """
    if all(is_void(f.type) for f in schema.fields):
        return schema
    return StructType(tuple(f for f in schema.fields if not is_void(f.type)))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class WrittenFile:
    """A finished data file: ``path`` as written to the log (URL-encoded, relative to the table root)
    and ``rel_path`` as the store addresses it.

    Example:
        >>> WrittenFile("p=a%20b/x.parquet", "p=a b/x.parquet", {"p": "a b"}, 10, 1, "{}", 0).rel_path
        'p=a b/x.parquet'
    """

    path: str
    rel_path: str
    partition_values: dict[str, str | None]
    size: int
    num_records: int
    stats: str
    modification_time: int
    tags: dict[str, str] | None = None

    def to_add(self, *, data_change: bool = True) -> Add:
        """The ``add`` action for this file (with its ``tags``, e.g. ``ICEBERG_COMPAT_VERSION``).

        Example:
            >>> WrittenFile("a.parquet", "a.parquet", {}, 10, 1, "{}", 5).to_add().size
            10
        """
        return Add(
            path=self.path,
            partitionValues=dict(self.partition_values),
            size=self.size,
            modificationTime=self.modification_time,
            dataChange=data_change,
            stats=self.stats,
            tags=dict(self.tags) if self.tags else None,
        )


@dataclass
class _Open:
    rel_path: str
    partition_values: dict[str, str | None]
    sink: OutputFile
    writer: pq.ParquetWriter
    buffered: list[pa.Table] = field(default_factory=list)
    buffered_bytes: int = 0
    floats: dict[tuple[str, ...], FloatBounds] = field(default_factory=dict)
    rows: int = 0




def _without_field_ids(schema: pa.Schema) -> pa.Schema:
    def clean(f: pa.Field[Any]) -> pa.Field[Any]:
        t = f.type
        if pa.types.is_struct(t):
            t = pa.struct([clean(t.field(i)) for i in range(t.num_fields)])
        elif pa.types.is_list(t):
            t = pa.list_(clean(t.value_field))
        elif pa.types.is_map(t):
            t = pa.map_(clean(t.key_field), clean(t.item_field))
        return pa.field(f.name, t, f.nullable)

    return pa.schema([clean(f) for f in schema])


def _serialize(value: Any, f: StructField) -> str | None:
    text = serialize_partition_value(value, f.type)
    return None if text == "" else text  # an empty partition value means null in the protocol


class DataFileWriter:
    """Writes conformed Arrow data of one table into parquet data files (see the module docstring).

    ``schema`` is the table's full logical schema and ``partition_columns`` its partition columns.
    A file is finished once it reaches ``target_file_size`` bytes or, when given,
    ``max_records_per_file`` rows (Spark's ``maxRecordsPerFile``; a file never holds more). Files go
    below ``directory`` (relative to the table root) when one is given.

    ``iceberg_compat`` (the table's Iceberg compat version, 0 for none; see
    :mod:`deltalog.protocol.iceberg_compat`) writes files as Iceberg readers need them: the partition
    columns stored too (after the data columns), a field id on every parquet field (list elements and map
    keys and values included) in any column mapping mode, and the tag ``ICEBERG_COMPAT_VERSION`` on each
    file; timestamps are INT64 in every file.

    Example:
        >>> w = DataFileWriter(store, schema, ["day"], target_file_size=1 << 20)   # doctest: +SKIP
        >>> w.write(table); files = w.close()                                       # doctest: +SKIP
    """

    def __init__(
        self,
        store: LogStore,
        schema: StructType,
        partition_columns: Sequence[str],
        *,
        target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
        max_records_per_file: int | None = None,
        clock: Callable[[], int] = _now_ms,
        column_mapping: str = "none",
        directory: str = "",
        iceberg_compat: int = 0,
    ) -> None:
        self.directory = directory.strip("/")  # files go below it (change data: ``_change_data``)
        if max_records_per_file is not None and max_records_per_file <= 0:
            max_records_per_file = None  # Spark's convention: zero or negative means no limit
        self.max_records_per_file = max_records_per_file
        self.store = store
        self.schema = schema
        self.partition_columns = list(partition_columns)
        self.target_file_size = max(1, int(target_file_size))
        self._row_group_bytes = min(self.target_file_size, _ROW_GROUP_BYTES)
        self._clock = clock
        parts = set(self.partition_columns)
        self.column_mapping = (column_mapping or "none").lower()
        self.iceberg_compat = iceberg_compat
        self._tags = {"ICEBERG_COMPAT_VERSION": str(iceberg_compat)} if iceberg_compat else None
        stats_data = stored_columns(StructType(tuple(f for f in schema.fields if f.name not in parts)))
        self.data_schema = stats_data
        if iceberg_compat:  # partition values materialised in the files, after the data columns
            self.data_schema = StructType((*stats_data.fields, *(schema.field(c) for c in self.partition_columns)))
        self._arrow_schema = self.data_schema.to_arrow_schema()
        # Files, statistics and partition values use physical names (and field ids) under column mapping.
        self._file_schema = physical_arrow_schema(self.data_schema, self.column_mapping)
        if self.column_mapping != "id" and not iceberg_compat:  # ids in id mode, as delta-spark writes them
            self._file_schema = _without_field_ids(self._file_schema)
        self._stats_schema = physical_schema(stats_data, self.column_mapping)
        self._stats_columns = stats_columns(self._file_schema)  # no footer bounds for floats (NaN)
        self._part_fields: list[StructField] = [schema.field(c) for c in self.partition_columns]
        self._part_keys = [physical_name(f, self.column_mapping) for f in self._part_fields]
        self._open: dict[tuple[str | None, ...], _Open] = {}
        self._counter = 0
        self.files: list[WrittenFile] = []
        self._started: list[str] = []

    # ------------------------------------------------------------------------------------- writing

    def write(self, table: pa.Table) -> None:
        """Add rows (all columns of the table schema, partition columns included).

        Example:
            >>> w.write(pa.table({"x": [1], "day": ["2024-01-01"]}))                # doctest: +SKIP
        """
        if table.num_rows == 0:
            return
        if not self.partition_columns:
            self._append((), {}, table)
            return
        idx = "__deltalog_row__"
        grouped = (
            table.select(self.partition_columns)
            .append_column(idx, pa.array(range(table.num_rows), pa.int64()))
            .group_by(self.partition_columns, use_threads=False)
            .aggregate([(idx, "list")])
        )
        for row in grouped.to_pylist():
            serialized = self.partition_values(row)
            key = tuple(serialized.values())
            rows = table.take(pa.array(row[f"{idx}_list"], pa.int64()))
            self._append(key, serialized, rows)

    def partition_values(self, row: dict[str, Any]) -> dict[str, str | None]:
        """The ``partitionValues`` of a row (logical column -> value), keyed by physical names.

        Example:
            >>> w.partition_values({"day": datetime.date(2024, 1, 1)})                # doctest: +SKIP
            {'day': '2024-01-01'}
        """
        return {k: _serialize(row[f.name], f) for f, k in zip(self._part_fields, self._part_keys)}

    def _physical(self, data: pa.Table) -> pa.Table:
        if self.column_mapping == "none":
            return data
        columns = [pa.chunked_array([c.view(f.type) for c in col.chunks], type=f.type)
                   for col, f in zip(data.columns, self._file_schema)]
        return pa.Table.from_arrays(columns, schema=self._file_schema)

    def _append(self, key: tuple[str | None, ...], values: dict[str, str | None], rows: pa.Table) -> None:
        data = rows.select(self.data_schema.field_names)
        if not data.schema.equals(self._arrow_schema):  # (a cast to the same types can still refuse null
            data = data.cast(self._arrow_schema)        # structs over non-nullable children, e.g. variants)
        data = self._physical(fill_variant_table(data, self.data_schema))
        limit = self.max_records_per_file
        while limit is not None and data.num_rows:
            state = self._open.get(key)
            room = limit - (state.rows if state is not None else 0)
            if data.num_rows <= room:
                break
            self._add(key, values, data.slice(0, room))
            self._finish(key)
            data = data.slice(room)
        if data.num_rows or limit is None:
            self._add(key, values, data)
            state = self._open.get(key)
            if limit is not None and state is not None and state.rows >= limit:
                self._finish(key)

    def _add(self, key: tuple[str | None, ...], values: dict[str, str | None], data: pa.Table) -> None:
        # a large piece (a task's chunk of up to a million rows) is added a row group's worth at a time, so
        # that a file rolls over near the target size rather than one whole piece past it; pieces of at most
        # _MIN_PIECE_ROWS rows (Spark's Arrow batch) stay whole, as does each batch given with a tiny target
        per_group = self._row_group_bytes * data.num_rows // data.nbytes if data.nbytes else data.num_rows
        step = max(_MIN_PIECE_ROWS, per_group)
        if data.num_rows <= step:
            self._add_piece(key, values, data)
            return
        for start in range(0, data.num_rows, step):
            self._add_piece(key, values, data.slice(start, step))

    def _add_piece(self, key: tuple[str | None, ...], values: dict[str, str | None], data: pa.Table) -> None:
        state = self._open.get(key)
        if state is None:
            if len(self._open) >= MAX_OPEN_FILES:
                self._finish(next(iter(self._open)))
            state = self._open[key] = self._start(values)
        count_floats(data, state.floats)
        state.buffered.append(data)
        state.buffered_bytes += data.nbytes
        state.rows += data.num_rows
        if state.buffered_bytes >= self._row_group_bytes:
            self._flush(state)
            if state.sink.tell() >= self.target_file_size:
                self._finish(key)

    def _start(self, values: dict[str, str | None]) -> _Open:
        name = f"part-{self._counter:05d}-{uuid.uuid4()}-c000.snappy.parquet"
        self._counter += 1
        parts = partition_path(self._part_keys, values).rstrip("/") if values else ""
        rel = "/".join(d for d in (self.directory, parts, name) if d)
        sink = self.store.open_output(rel)
        self._started.append(rel)
        try:
            writer = pq.ParquetWriter(sink, self._file_schema, write_statistics=self._stats_columns,
                                      **self._parquet_options())
        except BaseException:
            sink.abort()
            raise
        return _Open(rel, dict(values), sink, writer)

    def _parquet_options(self) -> dict[str, Any]:
        """Keyword arguments of ``pyarrow.parquet.ParquetWriter`` for new files (subclasses tune them)."""
        return {"compression": "snappy"}

    @staticmethod
    def _flush(state: _Open) -> None:
        if state.buffered:
            state.writer.write_table(pa.concat_tables(state.buffered))
            state.buffered.clear()
            state.buffered_bytes = 0

    def _finish(self, key: tuple[str | None, ...]) -> None:
        state = self._open.pop(key)
        self._flush(state)
        state.writer.close()
        footer = state.writer.writer.metadata
        state.sink.close()
        info = self.store.stat(state.rel_path)
        self.files.append(
            WrittenFile(
                path=quote(state.rel_path, safe="/=-_.~"),
                rel_path=state.rel_path,
                partition_values=state.partition_values,
                size=info.size,
                num_records=footer.num_rows,
                stats=stats_json(footer, self._stats_schema, float_bounds=state.floats),
                modification_time=info.modification_time,
                tags=self._tags,
            )
        )

    def close(self) -> list[WrittenFile]:
        """Finish every open file; returns all files written.

        Example:
            >>> [f.path for f in w.close()]                                          # doctest: +SKIP
            ['day=2024-01-01/part-00000-....snappy.parquet']
        """
        for key in list(self._open):
            self._finish(key)
        return list(self.files)

    def abort(self) -> None:
        """Best effort: close and delete every file this writer started (they are unreferenced).

        Example:
            >>> w.abort()                                                            # doctest: +SKIP
        """
        for state in self._open.values():
            with contextlib.suppress(Exception):  # cleanup must not mask the original error
                state.writer.close()  # (else its finalizer writes a footer to the aborted sink later)
            with contextlib.suppress(Exception):
                state.sink.abort()
        self._open.clear()
        for rel in self._started:
            with contextlib.suppress(Exception):
                self.store.delete(rel)
