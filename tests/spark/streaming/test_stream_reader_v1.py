"""The PySpark 4.0 / 4.1 reader of the Delta streaming source, driven without a JVM in the orders Spark 4.0 and
4.1 call it (measured with a probe source; see :mod:`deltalog.spark.streaming.source_v1`): a new query asks
``latestOffset()`` before ``initialOffset()``; a restarted one first gets ``partitions(seen, seen)`` with its
checkpoint's last offset -- or, with ``spark.sql.streaming.triggerAvailableNowWrapper.enabled``, asks
``latestOffset()`` before that. The class runs on every PySpark 4.x (4.2+ only chooses another reader), so these
run on every lane; the end-to-end behaviour is test_spark_streaming.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog

pytestmark = pytest.mark.spark


def append(path: str, ids: list[int]) -> None:
    deltalog.write_table(path, pa.table({"id": pa.array(ids, pa.int64())}), mode="append")


def reader(path: str, **options: Any) -> Any:
    from deltalog.spark.common.core import spark_schema
    from deltalog.spark.streaming.source_base import StreamReadOptions, stream_fields
    from deltalog.spark.streaming.source_v1 import DeltaStreamReaderV1

    schema = spark_schema(stream_fields(deltalog.Table(path).snapshot(), change_feed=False)).json()
    return DeltaStreamReaderV1(StreamReadOptions.parse({k: str(v) for k, v in options.items()}, path), schema)


def batch(r: Any, start: dict[str, Any], end: dict[str, Any]) -> list[int]:
    """The ids of the micro-batch ``start``..``end``, planned and read as Spark does (one task per partition)."""
    out: list[int] = []
    for part in r.partitions(start, end):
        for b in r.read(part):
            out += b.column("id").to_pylist()
    return sorted(out)


def test_a_new_query_takes_everything_first_then_batches_are_capped(tmp_path: Path) -> None:
    a = str(tmp_path / "a")
    for i in range(5):
        append(a, [i])
    r = reader(a, maxFilesPerTrigger=2)
    end = r.latestOffset()  # Spark 4.0 / 4.1: before initialOffset; availableNow runs this one batch only
    start = r.initialOffset()
    assert batch(r, start, end) == [0, 1, 2, 3, 4]  # not capped: availableNow gets everything there
    assert r.latestOffset() == end  # nothing new: the same offset
    for i in range(5, 10):
        append(a, [i])
    sizes, prev = [], end
    while (nxt := r.latestOffset()) != prev:
        sizes.append(len(batch(r, prev, nxt)))
        r.commit(prev)
        prev = nxt
    assert sizes == [2, 2, 1]  # later batches: maxFilesPerTrigger


@pytest.mark.parametrize("first", ["seen_offset", "latest_offset"])
def test_a_restarted_query_neither_repeats_nor_skips(tmp_path: Path, first: str) -> None:
    """``seen_offset``: Spark's default order (the checkpoint's offset first); ``latest_offset``: the
    availableNow wrapper's (``latestOffset()`` before anything): the first offset of the new run must not lie
    behind the checkpoint's -- planned from the stream's start and capped, it would."""
    a = str(tmp_path / "a")
    append(a, [0])
    run1 = reader(a, maxFilesPerTrigger=1)
    first_end = run1.latestOffset()
    read = batch(run1, run1.initialOffset(), first_end)
    for i in range(1, 4):
        append(a, [i])
    seen = run1.latestOffset()  # capped: one of three new files
    read += batch(run1, first_end, seen)
    assert read == [0, 1]
    append(a, [4])  # the query stops; more data arrives; it restarts from its checkpoint (last offset: seen)
    run2 = reader(a, maxFilesPerTrigger=1)
    if first == "seen_offset":
        assert run2.partitions(seen, seen) == []
        end = run2.latestOffset()
    else:
        end = run2.latestOffset()
        assert run2.partitions(seen, seen) == []
    assert run2.position(end) >= run2.position(seen)
    read += batch(run2, seen, end)
    assert read == [0, 1, 2, 3, 4]  # the first batch of a run is not capped: everything, once


def test_a_restart_that_replays_its_last_batch_goes_on_from_its_end(tmp_path: Path) -> None:
    a = str(tmp_path / "a")
    for i in range(3):
        append(a, [i])
    run1 = reader(a, startingVersion=0, maxFilesPerTrigger=1)
    start, end = run1.initialOffset(), run1.latestOffset()
    assert batch(run1, start, end) == [0, 1, 2]  # run 1 planned it, then stopped before committing
    append(a, [3])
    run2 = reader(a, startingVersion=0, maxFilesPerTrigger=1)
    assert run2.partitions(end, end) == []  # Spark: setLatestSeenOffset(end)
    run2.initialOffset()
    assert batch(run2, start, end) == [0, 1, 2]  # the batch run again, same rows
    nxt = run2.latestOffset()
    assert batch(run2, end, nxt) == [3]


def test_an_offset_going_back_is_refused(tmp_path: Path) -> None:
    from deltalog.errors import DeltaError

    a = str(tmp_path / "a")
    append(a, [0])
    append(a, [1])
    r = reader(a, startingVersion=0)
    start, end = r.initialOffset(), r.latestOffset()
    with pytest.raises(DeltaError, match=rf"DELTA_STREAM_OFFSET_WENT_BACK.*back to.*{tmp_path.name}"):
        r.partitions(end, start)
