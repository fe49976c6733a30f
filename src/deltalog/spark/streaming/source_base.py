"""What the two readers of the Delta streaming source share: options, the planner, partitions and reading.

:mod:`deltalog.spark.streaming.source` is the source itself (the ``DataSource`` Spark calls); it hands each query
a reader built on :class:`DeltaStreamReaderBase`: :class:`~deltalog.spark.streaming.source_limits.DeltaStreamReader`
on PySpark 4.2+, where Spark passes the read limit and the start offset to ``latestOffset``, or
:class:`~deltalog.spark.streaming.source_v1.DeltaStreamReaderV1` on 4.0 and 4.1, where it passes neither.
Both plan with the kernel's :class:`deltalog.feed.tail.LogTail`: this module turns Spark's offsets into its
positions (and back), splits a micro-batch's files into partitions and reads them in the tasks; the readers
only decide how far each micro-batch goes.

Example:
    >>> opts = StreamReadOptions.parse({"maxBytesPerTrigger": "10m"}, "/data/events")
    >>> opts.limit
    AdmissionLimit(max_files=None, max_bytes=10485760)
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from deltalog.errors import DeltaError, InvalidArgumentError, SchemaError
from deltalog.feed.changes import CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION
from deltalog.feed.tail import AdmissionLimit, IndexedFile, LogTail, StreamPosition, TailOptions, file_reader_snapshot
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.schema import PrimitiveType, StructField
from deltalog.snapshot import Snapshot
from deltalog.spark.common.core import illegal_option, open_table, option_map, parse_bool, parse_int, spark_schema
from deltalog.spark.streaming.arrow_form import spark_arrow_table

__all__ = [
    "DEFAULT_MAX_FILES",
    "STORAGE_OPTION",
    "STREAM_READ_OPTIONS",
    "DeltaStreamReaderBase",
    "StreamReadOptions",
    "arrow_schema",
    "read_files",
    "stream_fields",
]

log = logging.getLogger(__name__)

#: Options ``readStream.format("delta")`` accepts (case-insensitive).
STREAM_READ_OPTIONS = (
    "maxFilesPerTrigger",
    "maxBytesPerTrigger",
    "startingVersion",
    "startingTimestamp",
    "ignoreDeletes",
    "ignoreChanges",
    "skipChangeCommits",
    "failOnDataLoss",
    "readChangeFeed",
    "excludeRegex",
    "path",
)
DEFAULT_MAX_FILES = 1000
#: Option carrying the table's storage options (JSON) to the source's Python workers, which have no
#: session to translate Hadoop settings; "secret" in the name makes Spark redact it in plans and the UI.
STORAGE_OPTION = "__deltalog_storage_secret"
_PARTITION_BYTES = 128 * 1024 * 1024
_PARTITION_FILES = 256
_BATCH_ROWS = 65536


@dataclass(frozen=True)
class StreamReadOptions:
    """The parsed options of a Delta stream read."""

    path: str
    max_files: int | None
    max_bytes: int | None
    starting_version: str | None
    starting_timestamp: str | None
    tail: TailOptions
    change_feed: bool = False
    storage: tuple[tuple[str, str], ...] = ()

    def open_table(self) -> Any:
        """The streamed table, with its storage options."""
        return open_table(self.path, storage_options=dict(self.storage))

    @property
    def limit(self) -> AdmissionLimit:
        """How much one micro-batch takes when Spark does not say otherwise (``maxFilesPerTrigger`` and / or
        ``maxBytesPerTrigger``; 1000 files when neither is given).

        Example:
            >>> StreamReadOptions.parse({}, "/t").limit
            AdmissionLimit(max_files=1000, max_bytes=None)
        """
        return AdmissionLimit(self.max_files, self.max_bytes)

    @classmethod
    def parse(cls, options: Mapping[str, Any], path: Any = None) -> StreamReadOptions:
        """Validate ``readStream`` options (values may be strings); ``path`` overrides the ``path`` option.

        Example:
            >>> StreamReadOptions.parse({"maxFilesPerTrigger": "5"}, "/t").max_files
            5
        """
        options = dict(options)
        storage_json = next((options.pop(k) for k in list(options) if k.lower() == STORAGE_OPTION), None)
        storage = tuple(sorted(json.loads(storage_json).items())) if storage_json else ()
        opts = option_map(options, STREAM_READ_OPTIONS, what="Delta stream read")
        opts = {k: v for k, v in opts.items() if not k.startswith(("delta.", "fs.", "spark.hadoop."))}
        target = path if path is not None else opts.get("path")
        if not isinstance(target, str) or not target:
            raise InvalidArgumentError(f"a Delta stream read needs exactly one table path, got {target!r}")
        change_feed = parse_bool(opts.get("readChangeFeed", False), "readChangeFeed")
        max_files = max_bytes = None
        if "maxFilesPerTrigger" in opts:
            max_files = parse_int(opts["maxFilesPerTrigger"], "maxFilesPerTrigger")
            if max_files <= 0:
                raise illegal_option("maxFilesPerTrigger", opts["maxFilesPerTrigger"], "a positive integer")
        if "maxBytesPerTrigger" in opts:
            max_bytes = _parse_bytes(opts["maxBytesPerTrigger"])
        if max_files is None and max_bytes is None:
            max_files = DEFAULT_MAX_FILES
        AdmissionLimit(max_files, max_bytes)  # validates
        tail = TailOptions(
            ignore_deletes=parse_bool(opts.get("ignoreDeletes", False), "ignoreDeletes"),
            ignore_changes=parse_bool(opts.get("ignoreChanges", False), "ignoreChanges"),
            skip_change_commits=parse_bool(opts.get("skipChangeCommits", False), "skipChangeCommits"),
            fail_on_data_loss=parse_bool(opts.get("failOnDataLoss", True), "failOnDataLoss"),
            exclude_regex=None if opts.get("excludeRegex") is None else str(opts["excludeRegex"]),
        )
        sv, st = opts.get("startingVersion"), opts.get("startingTimestamp")
        return cls(target, max_files, max_bytes, None if sv is None else str(sv), None if st is None else str(st), tail,
                   change_feed, storage)


_UNITS = {"b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}


def _parse_bytes(value: Any) -> int:
    """``maxBytesPerTrigger``: a number of bytes or a size such as ``10m`` / ``1g``."""
    text = str(value).strip().lower()
    digits = text.rstrip("bkmg")
    unit = text[len(digits):] or "b"
    if not digits.isdigit() or unit not in _UNITS or int(digits) == 0:
        raise illegal_option("maxBytesPerTrigger", value, "a positive size such as 1048576 or 10m")
    return int(digits) * _UNITS[unit]


@dataclass(frozen=True)
class _Context:
    """What a task needs to read files: table location, protocol and metadata the stream reads with."""

    location: str
    version: int
    protocol: Protocol
    metadata: Metadata
    schema_json: str
    fail_on_data_loss: bool
    change_feed: bool = False
    storage: tuple[tuple[str, str], ...] = ()


class _FilesPartition(InputPartition):
    def __init__(self, context: _Context, files: Sequence[IndexedFile]) -> None:
        super().__init__(len(files))
        self.context = context
        self.files = list(files)

class DeltaStreamReaderBase(DataSourceStreamReader):
    """A Delta stream's reader, less the choice of how far a micro-batch goes (``latestOffset``, whose
    signature depends on the PySpark version: the subclasses have it).

    Offsets are :class:`~deltalog.feed.tail.StreamPosition` s in delta-spark's offset JSON. The planner is built
    on first use and never pickled: Spark ships this object to the workers that run :meth:`read`, which
    needs only the partition.

    Example:
        >>> reader = DeltaStreamReaderV1(StreamReadOptions.parse({}, "/data/events"), schema_json)  # doctest: +SKIP
        >>> reader.initialOffset()                                                      # doctest: +SKIP
        {'sourceVersion': 1, 'reservoirId': '...', 'reservoirVersion': 4, 'index': -1, 'isStartingVersion': True}
    """

    def __init__(self, options: StreamReadOptions, schema_json: str) -> None:
        self.opts = options
        self.schema_json = schema_json
        self._tail: LogTail | None = None
        self._start: StreamPosition | None = None
        self._read_version = -1

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_tail"] = None
        return state

    @property
    def tail(self) -> LogTail:
        """The planner (built on first use, refusing a table whose schema changed since the stream was loaded)."""
        if self._tail is None:
            table = self.opts.open_table()
            latest = table.snapshot()
            declared = json.loads(self.schema_json)
            fields = stream_fields(latest, change_feed=self.opts.change_feed)
            if json.loads(spark_schema(fields).json()) != declared:
                raise SchemaError(
                    "[DELTA_SCHEMA_CHANGED] the table's schema changed between loading the stream and starting it; "
                    "load it again",
                    table=table.location, version=latest.version,
                )
            self._tail = LogTail(table, metadata=latest.metadata, options=self.opts.tail,
                                 change_feed=self.opts.change_feed)
            self._read_version = latest.version
        return self._tail

    def position(self, offset: Any) -> StreamPosition:
        """``offset`` (Spark's, of this table) as a planner position."""
        tail = self.tail
        return StreamPosition.from_offset(offset, table_id=tail.table_id, table=tail.where)

    def start_position(self) -> StreamPosition:
        """Where a new stream starts (``startingVersion`` / ``startingTimestamp``, or the latest snapshot); the
        same answer for the whole life of this reader, however often it is asked."""
        if self._start is None:
            self._start = self.tail.start_position(
                starting_version=self.opts.starting_version, starting_timestamp=self.opts.starting_timestamp
            )
        return self._start

    def offset(self, position: StreamPosition) -> dict[str, Any]:
        """``position`` as the offset JSON Spark checkpoints."""
        return position.to_offset(self.tail.table_id)

    def initialOffset(self) -> dict[str, Any]:
        return self.offset(self.start_position())

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        tail = self.tail
        files = tail.files_between(self.position(start), self.position(end))
        if not files:
            return []
        context = _Context(tail.where, self._read_version, tail.protocol, tail.metadata, self.schema_json,
                           self.opts.tail.fail_on_data_loss, self.opts.change_feed, self.opts.storage)
        out: list[_FilesPartition] = []
        group: list[IndexedFile] = []
        size = 0
        for f in files:
            if group and (size + f.size > _PARTITION_BYTES or len(group) >= _PARTITION_FILES):
                out.append(_FilesPartition(context, group))
                group, size = [], 0
            group.append(f)
            size += f.size
        out.append(_FilesPartition(context, group))
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _FilesPartition)
        return read_files(partition.context, partition.files)

    def commit(self, end: dict[str, Any]) -> None:
        self.tail.forget_before(self.position(end))


def stream_fields(snapshot: Snapshot, *, change_feed: bool) -> list[StructField]:
    """The columns of a stream of ``snapshot``'s table: its schema, plus the change data feed's
    ``_change_type``, ``_commit_version`` and ``_commit_timestamp`` with ``change_feed``.

    Example:
        >>> [f.name for f in stream_fields(snap, change_feed=True)][-1]               # doctest: +SKIP
        '_commit_timestamp'
    """
    fields = list(snapshot.schema.fields)
    if change_feed:
        from deltalog.feed.rows import change_schema

        change_schema(snapshot)  # refuses tables whose columns use the reserved names
        fields += [
            StructField(CHANGE_TYPE, PrimitiveType("string"), True, {}),
            StructField(COMMIT_VERSION, PrimitiveType("long"), True, {}),
            StructField(COMMIT_TIMESTAMP, PrimitiveType("timestamp"), True, {}),
        ]
    return fields


def _read_changes(snap: Snapshot, f: IndexedFile) -> pa.Table:
    from deltalog.feed.changes import ChangeFile
    from deltalog.feed.rows import ChangeFileView, change_schema, read_change_file

    a = f.add
    change = ChangeFile(a["kind"], a["path"], dict(a.get("partitionValues") or []), a.get("size"), a["changeType"],
                        a.get("deletionVector"), a.get("selectionVector"))
    view = ChangeFileView(snap)
    return read_change_file(view, change, f.version, int(a["commitTimestamp"]), snap.schema.field_names,
                             change_schema(snap))


def arrow_schema(schema_json: str) -> pa.Schema:
    """The Spark schema ``schema_json`` as the Arrow schema Spark expects a Python source's batches in (timestamps
    in UTC; :func:`deltalog.spark.common.compat.arrow_schema_utc` knows how each PySpark says so).

    Example:
        >>> arrow_schema('{"type":"struct","fields":[{"name":"t","type":"timestamp","nullable":true,"metadata":{}}]}')
        t: timestamp[us, tz=UTC]
    """
    from pyspark.sql.types import StructType as SparkStruct

    from deltalog.spark.common.compat import arrow_schema_utc

    return arrow_schema_utc(SparkStruct.fromJson(json.loads(schema_json)))


def read_files(context: _Context, files: Sequence[IndexedFile]) -> Iterator[pa.RecordBatch]:
    """Rows of ``files`` as Arrow batches in the stream's schema (runs in a Spark task)."""
    from deltalog.data.read import read_file_rows, resolve_path

    table = open_table(context.location, storage_options=dict(context.storage))
    snap = file_reader_snapshot(table.store, context.protocol, context.metadata, version=context.version,
                                table=table.location)
    target = arrow_schema(context.schema_json)
    root = table.store.full_path("").rstrip("/") + "/"
    for f in files:
        local = resolve_path(snap, f.add["path"])
        present = os.path.exists(local) if "://" not in local else (
            table.store.exists(local[len(root):]) if local.startswith(root) else True)
        if not present:
            if context.fail_on_data_loss:
                raise DeltaError(
                    f"[DELTA_FILE_NOT_FOUND] data file {f.add['path']} added in version {f.version} no longer exists "
                    "(deleted by VACUUM while the stream was behind?); data would be lost -- set failOnDataLoss=false "
                    "to skip missing files",
                    table=table.location, version=f.version,
                )
            log.warning("skipping missing data file %s of %s (failOnDataLoss=false)", f.add["path"], table.location)
            continue
        rows = _read_changes(snap, f) if context.change_feed else read_file_rows(snap, f.add)
        if rows.num_rows == 0:
            continue
        yield from spark_arrow_table(rows, target).to_batches(max_chunksize=_BATCH_ROWS)
