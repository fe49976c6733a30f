"""The Delta stream's reader on PySpark 4.2 and later, where Spark runs admission control.

Spark passes ``latestOffset`` the micro-batch's start offset and a read limit: the source's own
(:meth:`DeltaStreamReader.getDefaultReadLimit`, from ``maxFilesPerTrigger`` / ``maxBytesPerTrigger``) or
``ReadAllAvailable`` where the trigger wants everything (``Trigger.Once``); for ``Trigger.AvailableNow`` it calls
:meth:`~DeltaStreamReader.prepareForTriggerAvailableNow` first, and the stream stops at the version current
then, in as many capped micro-batches as that takes. This module imports ``pyspark.sql.streaming.datasource``,
which PySpark 4.0 and 4.1 lack: :mod:`deltalog.spark.streaming.source` imports it only where
:data:`deltalog.spark.common.compat.STREAM_READ_LIMITS` says the API is there (elsewhere
:mod:`deltalog.spark.streaming.source_v1` reads).

Example:
    >>> reader = DeltaStreamReader(StreamReadOptions.parse({"maxFilesPerTrigger": 2}, "/t"), schema_json)
    ...                                                                                 # doctest: +SKIP
    >>> reader.getDefaultReadLimit()                                                    # doctest: +SKIP
    ReadMaxFiles(max_files=2)
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)

from deltalog.feed.tail import AdmissionLimit
from deltalog.spark.streaming.source_base import DeltaStreamReaderBase, StreamReadOptions

__all__ = ["DeltaStreamReader"]


class DeltaStreamReader(DeltaStreamReaderBase, SupportsTriggerAvailableNow):
    """Plans micro-batches over a Delta table's log with the read limits Spark passes (PySpark 4.2+).

    Example:
        >>> spark.readStream.format("delta").option("maxFilesPerTrigger", 2).load("/data/events")
        ...                                                                             # doctest: +SKIP
    """

    def __init__(self, options: StreamReadOptions, schema_json: str) -> None:
        super().__init__(options, schema_json)
        self._end_version: int | None = None

    def getDefaultReadLimit(self) -> Any:
        if self.opts.max_files is not None:
            return ReadMaxFiles(self.opts.max_files)
        assert self.opts.max_bytes is not None  # parse() sets one of the two
        return ReadMaxBytes(self.opts.max_bytes)

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        position = self.position(start)
        admission: AdmissionLimit | None
        if isinstance(limit, ReadAllAvailable):
            admission = None
        elif isinstance(limit, ReadMaxFiles):
            admission = AdmissionLimit(limit.max_files, self.opts.max_bytes)
        elif isinstance(limit, ReadMaxBytes):
            admission = AdmissionLimit(self.opts.max_files, limit.max_bytes)
        else:
            admission = self.opts.limit
        return self.offset(self.tail.latest_position(position, admission, end_version=self._end_version))

    def prepareForTriggerAvailableNow(self) -> None:
        self._end_version = self.tail.table.latest_version()
