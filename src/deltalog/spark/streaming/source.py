"""``spark.readStream.format("delta")``: a Delta table as a Structured Streaming source.

Mechanism: PySpark's **Python streaming data source** (``pyspark.sql.datasource``), registered under
:data:`SOURCE_NAME` by :func:`register_source`; the routing of :mod:`deltalog.spark.session` sends
``readStream.format("delta").load(path)`` there (the JVM has no ``delta`` provider). Planning is the
kernel's (:class:`deltalog.feed.tail.LogTail`): offsets are log positions in delta-spark's offset JSON,
admission control takes whole files up to ``maxFilesPerTrigger`` (default 1000) and/or
``maxBytesPerTrigger``, ``Trigger.AvailableNow`` stops at the version current when the query started
(on PySpark 4.0 and 4.1, whose source API has no admission control, Spark runs it as one micro-batch, and
the first micro-batch of every query run takes everything there: :mod:`deltalog.spark.streaming.source_v1`),
OPTIMIZE-style ``dataChange=false`` commits are skipped, files whose path matches ``excludeRegex`` are left
out, commits removing data fail the stream unless
``ignoreDeletes`` / ``ignoreChanges`` / ``skipChangeCommits`` say otherwise, and a schema change the
stream cannot read fails it with the version named. Where the stream starts follows delta-spark: the
latest snapshot and then its changes by default; with ``startingVersion`` (or ``"latest"``) /
``startingTimestamp`` the *changes* from that commit on (not that version's snapshot). A query
restarted from its checkpoint location resumes from its last offset (these options are then ignored).
With ``readChangeFeed=true`` the stream carries the change data feed instead (the kernel's
:mod:`deltalog.feed.changes` plan): the table's columns plus ``_change_type``, ``_commit_version`` and
``_commit_timestamp``; the starting snapshot arrives as inserts, later commits as their inserts,
deletes and update pre/post-images, and deletes do not fail the stream.

Reading: each Spark task reads a group of files with the kernel's Arrow reader
(:func:`deltalog.data.read.read_file_rows`: partition values from the log, deletion vectors, column
mapping, missing columns as nulls) and yields Arrow batches in the stream's schema -- the table's
schema when the stream was loaded. A file deleted under the stream (VACUUM) fails the task naming the
file and the version that added it, or is skipped with ``failOnDataLoss=false``.

The readers: :mod:`~deltalog.spark.streaming.source_limits` on PySpark 4.2+ (Spark passes the read limit),
:mod:`~deltalog.spark.streaming.source_v1` on 4.0 and 4.1, both on :mod:`~deltalog.spark.streaming.source_base`
(options, offsets, partitions, reading); :data:`deltalog.spark.common.compat.STREAM_READ_LIMITS` chooses.

Where things run: the source object plans in a long-lived Python worker on the driver (one per
query), ``read`` runs in executor Python workers -- all need to import deltalog (``PYSPARK_PYTHON``).

Example:
    >>> q = (spark.readStream.format("delta").option("maxFilesPerTrigger", 10).load("/data/events")
    ...      .writeStream.format("delta").option("checkpointLocation", "/chk/copy")
    ...      .trigger(availableNow=True).start("/data/events_copy"))                    # doctest: +SKIP
    >>> q.awaitTermination()                                                            # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource

from deltalog.spark.common import compat
from deltalog.spark.common.core import spark_schema
from deltalog.spark.streaming.source_base import (
    DEFAULT_MAX_FILES,
    STORAGE_OPTION,
    STREAM_READ_OPTIONS,
    DeltaStreamReaderBase,
    StreamReadOptions,
    stream_fields,
)
from deltalog.spark.streaming.source_v1 import DeltaStreamReaderV1

if compat.STREAM_READ_LIMITS:  # pyspark.sql.streaming.datasource: PySpark 4.2+
    from deltalog.spark.streaming.source_limits import DeltaStreamReader

__all__ = [
    "DEFAULT_MAX_FILES",
    "SOURCE_NAME",
    "STORAGE_OPTION",
    "STREAM_READ_OPTIONS",
    "DeltaStreamDataSource",
    "StreamReadOptions",
    "stream_fields",
]

#: The name the source is registered under with ``spark.dataSource.register``.
SOURCE_NAME = "deltalog_delta_stream"


class DeltaStreamDataSource(DataSource):
    """The Python data source behind ``readStream.format("delta")`` (streaming reads only).

    Example:
        >>> spark.dataSource.register(DeltaStreamDataSource)                         # doctest: +SKIP
        >>> spark.readStream.format(SOURCE_NAME).load("/data/events")                 # doctest: +SKIP
        DataFrame[id: bigint, day: date]
    """

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> Any:
        opts = StreamReadOptions.parse(dict(self.options))
        snapshot = opts.open_table().snapshot()
        return spark_schema(stream_fields(snapshot, change_feed=opts.change_feed))

    def streamReader(self, schema: Any) -> DeltaStreamReaderBase:
        """The reader of the running PySpark's streaming source API (with read limits on 4.2+)."""
        opts = StreamReadOptions.parse(dict(self.options))
        if compat.STREAM_READ_LIMITS:
            return DeltaStreamReader(opts, schema.json())
        return DeltaStreamReaderV1(opts, schema.json())
