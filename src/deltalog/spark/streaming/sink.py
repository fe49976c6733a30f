"""``df.writeStream.format("delta")``: a Delta table as an exactly-once Structured Streaming sink.

Mechanism: **foreachBatch under the hood**. The routing of :mod:`deltalog.spark.session` turns
``writeStream.format("delta")...start(path)`` into ``foreachBatch(DeltaSinkBatch(...)).start()``; each
micro-batch is written by :func:`deltalog.spark.write` -- Spark's own parallel write path (its parquet
writer or ``mapInArrow`` tasks) with the kernel's schema enforcement -- and committed with
``txn(appId=<query id>, version=<batch id>)`` in the same commit as the data. The query id is the one
Spark keeps in ``<checkpointLocation>/metadata``, so it survives restarts from the same checkpoint; a
batch Spark replays after a failure that came after the Delta commit (but before Spark recorded the
batch as done) finds its txn version in the table and writes nothing. ``complete`` output mode
overwrites the table on every batch; ``update`` is refused, as delta-spark does. Each commit is a
``STREAMING UPDATE`` with the output mode, query id and epoch (batch) id as its parameters, as in
delta-spark's history.

Why not a Python ``DataSourceStreamArrowWriter``: its ``commit`` runs in a separate worker process
with only the tasks' messages, it accepts neither ``partitionBy`` nor schema evolution, and
``abort`` cannot clean up finished tasks' files (see ``NOTES.md``); ``foreachBatch`` reuses the whole
batch write path and works over Spark Connect (the function runs in the server's Python worker, which
must import deltalog).

Options: ``checkpointLocation`` (required; a local or shared file system path), ``mergeSchema``,
``userMetadata``, ``targetFileSize``, ``delta.*`` table properties; ``partitionBy`` columns for a new
table (given to ``partitionBy()`` or ``start()``: the routing takes them off Spark's writer, which refuses
partitioning beside ``foreachBatch``). ``toTable(name)`` creates a missing catalog table first.

Example:
    >>> q = (events.writeStream.format("delta").outputMode("append")
    ...      .option("checkpointLocation", "/chk/events").start("/data/events"))          # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.errors import DeltaError, InvalidArgumentError
from deltalog.spark.common.core import option_map

__all__ = ["OUTPUT_MODES", "SINK_OPTIONS", "DeltaSinkBatch", "query_id", "sink_batch_function"]

#: Output modes (case-insensitive) and the save mode each micro-batch is written with.
OUTPUT_MODES = {"append": "append", "complete": "overwrite"}
#: Options ``writeStream.format("delta")`` accepts (case-insensitive); ``delta.*`` keys are table properties.
SINK_OPTIONS = ("checkpointLocation", "mergeSchema", "userMetadata", "targetFileSize", "path", "queryName")
_WRITE_PASSED = ("mergeSchema", "userMetadata", "targetFileSize")


def query_id(checkpoint: str) -> str:
    """The id of the streaming query whose checkpoint is at ``checkpoint`` (Spark writes it to
    ``<checkpoint>/metadata`` when the query first starts; it stays the same across restarts).

    Example:
        >>> query_id("/chk/events")                                     # doctest: +SKIP
        '8b1f2c4e-...'
    """
    path = os.path.join(checkpoint, "metadata")
    try:
        with open(path, encoding="utf-8") as fh:
            first = fh.readline()
        value = json.loads(first)["id"]
    except FileNotFoundError:
        raise DeltaError(
            f"the streaming checkpoint {checkpoint} has no metadata file; the Delta sink needs the query id Spark "
            "keeps there (is checkpointLocation on a file system this process can read?)"
        ) from None
    except (ValueError, KeyError, TypeError):
        raise DeltaError(f"the streaming checkpoint metadata {path} does not hold a query id") from None
    if not isinstance(value, str) or not value:
        raise DeltaError(f"the streaming checkpoint metadata {path} does not hold a query id")
    return value


def _local_checkpoint(location: Any, table: str) -> str:
    if not isinstance(location, str) or not location.strip():
        raise InvalidArgumentError(
            "[CHECKPOINT_LOCATION_REQUIRED] a Delta streaming sink needs option('checkpointLocation', ...): the "
            "exactly-once guarantee rests on the query id and batch ids kept there",
            table=table,
        )
    text = location.strip()
    if text.startswith("file:"):
        text = text[5:]
        while text.startswith("//"):
            text = text[1:]
    elif "://" in text:
        raise InvalidArgumentError(
            f"checkpointLocation {location!r} is not on a local or shared file system; deltalog's Delta sink reads "
            "the query id from it",
            table=table,
        )
    return os.path.abspath(text)


@dataclass
class DeltaSinkBatch:
    """The ``foreachBatch`` function of a Delta sink: one idempotent commit per micro-batch.

    Example:
        >>> f = sink_batch_function("/data/t", checkpoint="/chk/t")     # doctest: +SKIP
        >>> df.writeStream.foreachBatch(f).option("checkpointLocation", "/chk/t").start()  # doctest: +SKIP
    """

    path: str
    checkpoint: str
    mode: str = "append"
    partition_by: tuple[str, ...] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    _app_id: str | None = field(default=None, repr=False)

    def app_id(self) -> str:
        """The ``txn`` application id: the query id from the checkpoint (read once)."""
        if self._app_id is None:
            self._app_id = query_id(self.checkpoint)
        return self._app_id

    def __call__(self, df: Any, batch_id: int) -> None:
        from deltalog.spark.writes.save import write

        write(
            df,
            self.path,
            mode=self.mode,
            partitionBy=list(self.partition_by) if self.partition_by else None,
            txnAppId=self.app_id(),
            txnVersion=int(batch_id),
            _stream={"query_id": self.app_id(), "epoch_id": int(batch_id)},
            **dict(self.options),
        )


def sink_batch_function(
    path: str,
    *,
    checkpoint: Any,
    output_mode: str | None = None,
    partition_by: Sequence[str] | str | None = None,
    options: Mapping[str, Any] | None = None,
) -> DeltaSinkBatch:
    """Validate a Delta sink's settings and build its ``foreachBatch`` function.

    Example:
        >>> sink_batch_function("/data/t", checkpoint="/chk/t", output_mode="complete").mode
        'overwrite'
    """
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(f"a Delta streaming sink needs a table path, got {path!r}")
    key = "append" if output_mode is None else str(output_mode).strip().lower()
    if key not in OUTPUT_MODES:
        raise InvalidArgumentError(
            f"[DELTA_UNSUPPORTED_OUTPUT_MODE] the Delta sink does not support output mode {output_mode!r}; use "
            "'append' or 'complete'",
            table=path,
        )
    given = dict(options or {})
    refused = [k for k in given if str(k).lower() in ("txnappid", "txnversion")]
    if refused:
        raise InvalidArgumentError(
            f"the Delta streaming sink sets txnAppId/txnVersion itself (query id, batch id); remove {refused}",
            table=path,
        )
    opts = option_map(given, SINK_OPTIONS, what="Delta streaming sink")
    passed = {k: v for k, v in opts.items() if k in _WRITE_PASSED or k.startswith("delta.")}
    parts = (partition_by,) if isinstance(partition_by, str) else (tuple(partition_by) if partition_by else None)
    return DeltaSinkBatch(
        path=path,
        checkpoint=_local_checkpoint(checkpoint if checkpoint is not None else opts.get("checkpointLocation"), path),
        mode=OUTPUT_MODES[key],
        partition_by=parts,
        options=passed,
    )
