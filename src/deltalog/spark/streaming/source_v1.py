"""The Delta stream's reader on PySpark 4.0 and 4.1, whose streaming source API has no admission control.

There ``latestOffset()`` gets neither the micro-batch's start offset nor a read limit, and the reader cannot
tell the query's trigger; so it keeps its own position and applies ``maxFilesPerTrigger`` /
``maxBytesPerTrigger`` itself. What Spark calls, measured on 4.0.5 and 4.1.4 with a probe source logging every
call:

* a new query: ``latestOffset()``, then ``initialOffset()``, then ``partitions(initial, end)`` for the first
  micro-batch, ``commit`` of a batch when the next one is planned;
* a query restarted from its checkpoint: first ``partitions(seen, seen)`` with the last offset of its offsets
  log (Spark's ``setLatestSeenOffset``), then ``partitions(previous, seen)`` if that batch must be run again,
  and only then ``latestOffset()``. With ``spark.sql.streaming.triggerAvailableNowWrapper.enabled`` (off by
  default) an ``availableNow`` query calls ``latestOffset()`` *before* telling the checkpoint's position;
* ``trigger(availableNow=True)``: these Spark versions run a source without ``SupportsTriggerAvailableNow``
  as **one** micro-batch (a warning says "Falling back to single batch execution"), or with the wrapper
  setting above, as micro-batches up to the offset of a single ``latestOffset()`` call made at the start.

Hence the rule: **the first ``latestOffset()`` of a query run is not capped** -- it returns everything
there, up to the latest version then -- and the limits cap every micro-batch after it. So ``availableNow``
(and ``Trigger.Once``) reads everything available when the query starts, as on 4.2+, just in one
micro-batch; and an offset can never go back behind a checkpoint's, whatever Spark told the reader before
(exactly-once wins over the cap). The cost: a ``processingTime`` stream's first micro-batch after each
start or restart takes the whole backlog (a new stream: the whole starting snapshot). Later offsets are
planned from the furthest batch end Spark has planned or committed in this run. One case stays Spark's: an
``availableNow`` run whose checkpoint ends with a batch that was planned but not committed only runs that
batch again (Spark's single-batch fallback never asks for a new offset); the next run reads the rest.

Example:
    >>> reader = DeltaStreamReaderV1(StreamReadOptions.parse({"maxFilesPerTrigger": 2}, "/t"), schema_json)
    ...                                                                                 # doctest: +SKIP
    >>> reader.latestOffset()["reservoirVersion"]   # first call: everything there    # doctest: +SKIP
    9
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql.datasource import InputPartition

from deltalog.errors import DeltaError
from deltalog.feed.tail import StreamPosition
from deltalog.spark.streaming.source_base import DeltaStreamReaderBase, StreamReadOptions

__all__ = ["DeltaStreamReaderV1"]


class DeltaStreamReaderV1(DeltaStreamReaderBase):
    """Plans micro-batches over a Delta table's log on PySpark 4.0 / 4.1 (see the module docstring for the
    first micro-batch of a run, which is not capped).

    Example:
        >>> spark.readStream.format("delta").option("maxFilesPerTrigger", 2).load("/data/events")
        ...                                                                             # doctest: +SKIP
    """

    def __init__(self, options: StreamReadOptions, schema_json: str) -> None:
        super().__init__(options, schema_json)
        #: The furthest batch end Spark planned or committed in this run (``None``: none yet).
        self._planned: StreamPosition | None = None
        self._capped = False  # whether latestOffset() has answered once in this run

    # The 4.0 / 4.1 signature: no start offset, no read limit (mypy sees PySpark 4.2+'s, which has both).
    def latestOffset(self) -> dict[str, Any]:  # type: ignore[override]
        start = self._planned if self._planned is not None else self.start_position()
        limit = self.opts.limit if self._capped else None
        end = self.tail.latest_position(start, limit)
        self._capped = True
        return self.offset(end)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, last = self.position(start), self.position(end)
        if last < first:
            raise DeltaError(
                f"[DELTA_STREAM_OFFSET_WENT_BACK] Spark asked the Delta stream for a micro-batch from {first} back to "
                f"{last}: reading it would repeat or lose rows. This is a bug of deltalog's streaming source on "
                "this Spark version; report it with the query's checkpoint offsets, and start the stream again "
                "with a new checkpoint location (startingVersion after the last version the sink holds)",
                table=self.tail.where, version=last.version,
            )
        self._advance(last)
        return super().partitions(start, end)

    def commit(self, end: dict[str, Any]) -> None:
        self._advance(self.position(end))
        super().commit(end)

    def _advance(self, position: StreamPosition) -> None:
        if self._planned is None or self._planned < position:
            self._planned = position
