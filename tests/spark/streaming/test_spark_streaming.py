"""Structured Streaming: readStream.format("delta") and writeStream.format("delta") (exactly-once)."""

from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sparkutil import version

import deltalog
from deltalog.errors import InvalidArgumentError, TableNotFoundError
from deltalog.spark.writes.idempotent import TXN_APP_ID_CONF, idempotent_batch

pytestmark = pytest.mark.spark


def append(path: str, ids: range | list[int], part: str | None = None) -> int:
    cols: dict[str, Any] = {"id": pa.array(list(ids), pa.int64())}
    if part is not None:
        cols["p"] = [part] * len(cols["id"])
    return deltalog.write_table(path, pa.table(cols), mode="append",
                                partition_by=["p"] if part is not None else None).version


def ids(spark: Any, path: str) -> list[int]:
    return sorted(r["id"] for r in spark.read.format("delta").load(path).select("id").collect())


def kernel_ids(path: str) -> list[int]:
    return sorted(deltalog.Table(path).snapshot().to_arrow(columns=["id"]).column("id").to_pylist())


def copy_stream(spark: Any, src: str, dst: str, chk: str, **options: Any) -> Any:
    """A→B query; ``trigger`` (default availableNow) picked from options."""
    trigger = options.pop("trigger", {"availableNow": True})
    reader = spark.readStream.format("delta")
    for k, v in options.items():
        reader = reader.option(k, v)
    return (reader.load(src).writeStream.format("delta").option("checkpointLocation", chk)
            .trigger(**trigger).start(dst))


def run(query: Any) -> str | None:
    """Wait for an availableNow query; its failure's text, or ``None``."""
    from pyspark.errors import StreamingQueryException

    try:
        query.awaitTermination(120)
    except StreamingQueryException as exc:
        return str(exc)
    finally:
        query.stop()
    return None


def wait_for(done: Callable[[], bool], query: Any, what: str, timeout: float = 120) -> None:
    """Poll ``done`` until it holds; fail naming ``what`` (and the query's error, if any) after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline and query.exception() is None, f"{what}: {query.exception()}"
        time.sleep(0.05)


def stop_mid_stream(spark: Any, a: str, b: str, chk: str) -> Any:
    """A→B one file a batch, a batch a second, stopped after its second batch, with files left to read: A has
    one file when the query starts and three more arrive after its first batch (on PySpark 4.0 / 4.1 the first
    batch of a run is not capped; later ones are, as on 4.2+)."""
    append(a, range(5))
    q = copy_stream(spark, a, b, chk, maxFilesPerTrigger=1, trigger={"processingTime": "1 second"})
    try:
        wait_for(lambda: version(b) >= 0, q, "the first batch")
        for i in range(1, 4):
            append(a, range(i * 10, i * 10 + 5))
        wait_for(lambda: version(b) >= 1, q, "a second batch")
    finally:
        q.stop()  # kill it in the middle of the three one-file batches
    assert 0 < len(ids(spark, b)) < 20  # really stopped mid-stream
    return q


def test_a_to_b_survives_optimize_and_a_restart_mid_stream(
    spark: Any, tmp_path: Path, compact_copy: Callable[[str], int]
) -> None:
    a, b, chk = str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "chk")
    first_id = stop_mid_stream(spark, a, b, chk).id
    append(a, range(100, 105))
    compact_copy(a)  # skipped by the stream: its rows were read already
    append(a, range(200, 203))
    q = copy_stream(spark, a, b, chk, maxFilesPerTrigger=2)
    assert run(q) is None
    assert q.id == first_id  # same checkpoint, same query id
    assert ids(spark, b) == kernel_ids(a)  # no duplicates, no gaps
    assert len(ids(spark, b)) == 28
    snap = deltalog.Table(b).snapshot()
    last_batch = q.lastProgress["batchId"]
    assert snap.txn_version(first_id) == last_batch  # every batch committed with txn(query id, batch id)


def test_a_capped_stream_restarted_mid_stream_goes_on_where_it_stopped(spark: Any, tmp_path: Path) -> None:
    """The first offset of a restarted query follows its checkpoint's: PySpark 4.0 / 4.1 give it no start
    offset, and one planned from the stream's start would read rows again (or skip some)."""
    a, b, chk = str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "chk")
    stop_mid_stream(spark, a, b, chk)
    append(a, range(100, 105))
    q = copy_stream(spark, a, b, chk, maxFilesPerTrigger=1, trigger={"processingTime": "1 second"})
    try:
        wait_for(lambda: len(ids(spark, b)) >= 25, q, "the rest of A")
        time.sleep(2)  # two more triggers: nothing read twice meanwhile
    finally:
        q.stop()
    assert ids(spark, b) == kernel_ids(a)  # no duplicates, no gaps


def test_available_now_with_sparks_wrapper_setting_restarts_exactly_once(spark: Any, tmp_path: Path) -> None:
    """``spark.sql.streaming.triggerAvailableNowWrapper.enabled``: on PySpark 4.0 / 4.1 Spark then asks the
    source for its latest offset before telling it the checkpoint's; the batch must still start there."""
    a, b, chk = str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "chk")
    key = "spark.sql.streaming.triggerAvailableNowWrapper.enabled"
    before = spark.conf.get(key, None)
    spark.conf.set(key, "true")
    try:
        append(a, range(5))
        append(a, range(5, 10))
        assert run(copy_stream(spark, a, b, chk, maxFilesPerTrigger=1)) is None
        assert ids(spark, b) == list(range(10))
        for i in range(2, 5):
            append(a, range(i * 5, i * 5 + 5))
        assert run(copy_stream(spark, a, b, chk, maxFilesPerTrigger=1)) is None
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
    assert ids(spark, b) == list(range(25))


def test_a_replayed_sink_batch_is_not_written_twice(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, chk = str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "chk")
    append(a, range(5))
    append(a, range(5, 8))
    q = copy_stream(spark, a, b, chk)
    assert run(q) is None
    before = version(b)
    last = q.lastProgress["batchId"]
    newest = deltalog.Table(b).history(limit=1)[0]
    assert (newest["operation"], newest["operationParameters"]["outputMode"], newest["isBlindAppend"]) == (
        "STREAMING UPDATE", "Append", True)
    assert newest["operationParameters"]["epochId"] == str(last)
    # Simulate a failure after the Delta commit but before Spark recorded the batch as done.
    for name in (str(last), f".{last}.crc"):  # (Hadoop's checksum side file too, if any)
        if os.path.exists(os.path.join(chk, "commits", name)):
            os.remove(os.path.join(chk, "commits", name))
    module = importlib.import_module("deltalog.spark.writes.save")
    calls: list[tuple[int, bool]] = []
    original = module.write

    def recording(*args: Any, **kwargs: Any) -> Any:  # the sink's write (foreachBatch runs in this process)
        result = original(*args, **kwargs)
        calls.append((kwargs["txnVersion"], result.skipped))
        return result

    monkeypatch.setattr(module, "write", recording)
    assert run(copy_stream(spark, a, b, chk)) is None
    assert calls == [(last, True)]  # Spark ran the batch again, the sink skipped it
    assert version(b) == before
    assert ids(spark, b) == list(range(8))


def test_complete_mode_overwrites_the_table_each_batch(spark: Any, tmp_path: Path) -> None:
    a, b, chk = str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "chk")
    append(a, [1, 2, 3], part="x")
    append(a, [4], part="y")

    def start() -> Any:
        counts = spark.readStream.format("delta").load(a).groupBy("p").count()
        return (counts.writeStream.format("delta").outputMode("complete").option("checkpointLocation", chk)
                .trigger(availableNow=True).start(b))

    assert run(start()) is None
    append(a, [5, 6], part="y")
    assert run(start()) is None
    got = {r["p"]: r["count"] for r in spark.read.format("delta").load(b).collect()}
    assert got == {"x": 3, "y": 3}
    # delta-spark's history: every commit a STREAMING UPDATE naming the output mode, query and epoch
    history = deltalog.Table(b).history()
    query = json.loads(Path(chk, "metadata").read_text(encoding="utf-8").splitlines()[0])["id"]
    assert [(h["operation"], h["operationParameters"]) for h in history] == [
        ("STREAMING UPDATE", {"outputMode": "Complete", "queryId": query, "epochId": str(epoch)})
        for epoch in (1, 0)
    ]
    assert history[0]["operationMetrics"]["numRemovedFiles"] != "0"
    assert history[0]["operationMetrics"]["numOutputRows"] == "2"
    assert history[0]["isBlindAppend"] is False


def batch_sizes(query: Any) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_available_now_reads_everything_there_when_it_starts(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark.common import compat

    a = str(tmp_path / "a")
    for i in range(5):
        append(a, [i])
    q = (spark.readStream.format("delta").option("maxFilesPerTrigger", 2).load(a)
         .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "chk"))
         .trigger(availableNow=True).start())
    assert run(q) is None
    # PySpark 4.2+: capped batches up to the version current at the start. 4.0 / 4.1 run a source without
    # admission control (their Python source API has none) as one batch: everything, uncapped.
    assert batch_sizes(q) == ([2, 2, 1] if compat.STREAM_READ_LIMITS else [5])


def test_max_files_per_trigger_caps_batches(spark: Any, tmp_path: Path) -> None:
    a = str(tmp_path / "a")
    append(a, [0], part="a")
    q = (spark.readStream.format("delta").option("maxFilesPerTrigger", 2).load(a)
         .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "chk"))
         .trigger(processingTime="500 milliseconds").start())
    try:
        wait_for(lambda: sum(batch_sizes(q)) >= 1, q, "the first batch")
        five = pa.table({"id": pa.array(range(1, 6), pa.int64()), "p": list("abcde")})
        deltalog.write_table(a, five, mode="append", partition_by=["p"])  # one commit of five files
        wait_for(lambda: sum(batch_sizes(q)) >= 6, q, "the five files")
    finally:
        q.stop()
    assert batch_sizes(q) == [1, 2, 2, 1]  # a commit's files split over batches, as delta-spark does


def test_delete_commits_fail_the_stream_unless_told_otherwise(spark: Any, tmp_path: Path) -> None:
    a = str(tmp_path / "a")
    append(a, [1, 2], part="x")
    append(a, [3], part="y")
    deleted = deltalog.Table(a).delete([("p", "=", "x")]).version
    append(a, [4], part="z")
    error = run(copy_stream(spark, a, str(tmp_path / "b"), str(tmp_path / "chk"), startingVersion=0)) or ""
    assert "DELTA_SOURCE_IGNORE_DELETE" in error and f"version {deleted}" in error
    for option in ("ignoreDeletes", "skipChangeCommits"):
        b = str(tmp_path / f"b-{option}")
        assert run(copy_stream(spark, a, b, str(tmp_path / f"chk-{option}"), startingVersion=0,
                               **{option: "true"})) is None
        assert ids(spark, b) == [1, 2, 3, 4]


def test_a_vacuumed_file_is_data_loss(spark: Any, tmp_path: Path) -> None:
    a = str(tmp_path / "a")
    append(a, [1])
    append(a, [2])
    gone = deltalog.Table(a).snapshot(1).add_files().to_pylist()
    second = next(f for f in gone if f["path"] not in {r["path"] for r in
                                                         deltalog.Table(a).snapshot(0).add_files().to_pylist()})
    os.remove(os.path.join(a, second["path"]))
    error = run(copy_stream(spark, a, str(tmp_path / "b"), str(tmp_path / "chk"))) or ""
    assert "DELTA_FILE_NOT_FOUND" in error and second["path"] in error and "version 1" in error
    b = str(tmp_path / "b2")
    assert run(copy_stream(spark, a, b, str(tmp_path / "chk2"), failOnDataLoss="false")) is None
    assert ids(spark, b) == [1]


def test_options_are_checked_when_the_stream_is_defined(spark: Any, tmp_path: Path) -> None:
    a = str(tmp_path / "a")
    append(a, [1])
    with pytest.raises(InvalidArgumentError, match="maxFilesPerTriger"):
        spark.readStream.format("delta").option("maxFilesPerTriger", 5).load(a)
    with pytest.raises(InvalidArgumentError, match=r"schema at read time: the table's schema is struct<id:bigint>"):
        spark.readStream.format("delta").schema("id string").load(a)
    # the table's own schema may be given, as delta-spark accepts it (batch reads too)
    assert spark.readStream.format("delta").schema("id long NOT NULL").load(a).columns == ["id"]
    assert spark.read.format("delta").schema("id long").load(a).count() == 1
    with pytest.raises(InvalidArgumentError, match="schema at read time"):
        spark.read.format("delta").schema("id long, extra int").load(a)
    for option, value, want in (("ignoreDeletes", "yes", "'true' or 'false'"),  # delta-spark: true/false only
                                ("maxFilesPerTrigger", 0, "positive integer"),
                                ("maxBytesPerTrigger", "0", "positive size")):
        with pytest.raises(InvalidArgumentError, match=rf"DELTA_ILLEGAL_OPTION.*'{value}' for option {option}.*{want}"):
            spark.readStream.format("delta").option(option, value).load(a)
    with pytest.raises(InvalidArgumentError, match=r"DELTA_ILLEGAL_OPTION.*'1' for option mergeSchema"):
        spark.range(1).write.format("delta").mode("append").option("mergeSchema", "1").save(a)
    with pytest.raises(TableNotFoundError, match=r"DELTA_MISSING_DELTA_TABLE.*nothing is not a Delta table"):
        spark.readStream.format("delta").load(str(tmp_path / "nothing"))  # not a worker's traceback at start
    df = spark.readStream.format("delta").load(a)
    with pytest.raises(InvalidArgumentError, match="output mode 'update'"):
        df.writeStream.format("delta").outputMode("update").option("checkpointLocation", str(tmp_path / "c")).start(
            str(tmp_path / "b"))
    with pytest.raises(InvalidArgumentError, match="checkpointLocation"):
        df.writeStream.format("delta").start(str(tmp_path / "b"))
    assert not spark.streams.active


def test_exclude_regex_leaves_out_matching_files(spark: Any, tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    append(a, [1, 2], part="keep")
    append(a, [3], part="skip")
    assert run(copy_stream(spark, a, b, str(tmp_path / "chk"), excludeRegex="p=skip/")) is None
    append(a, [4], part="skip")
    append(a, [5], part="keep")
    assert run(copy_stream(spark, a, b, str(tmp_path / "chk"), excludeRegex="p=skip/")) is None
    assert ids(spark, b) == [1, 2, 5]
    with pytest.raises(InvalidArgumentError, match=r"DELTA_REGEX_OPT_SYNTAX_ERROR.*excludeRegex"):
        spark.readStream.format("delta").option("excludeRegex", "p=(").load(a)


def test_idempotent_merge_per_batch(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark import DeltaTable

    target = str(tmp_path / "t")
    spark.range(3).selectExpr("id", "0L as n").write.format("delta").save(target)
    updates = spark.range(2).selectExpr("id", "1L as n")

    def upsert(batch: Any, batch_id: int) -> None:
        with idempotent_batch(spark, app_id="counter", batch_id=batch_id):
            (DeltaTable.forPath(spark, target).alias("t").merge(batch.alias("s"), "t.id = s.id")
             .whenMatchedUpdate(set={"n": "t.n + s.n"}).execute())

    upsert(updates, 0)
    upsert(updates, 0)  # the replay of batch 0: skipped
    upsert(updates, 1)
    got = {r["id"]: r["n"] for r in spark.read.format("delta").load(target).collect()}
    assert got == {0: 2, 1: 2, 2: 0}
    assert deltalog.Table(target).snapshot().txn_version("counter") == 1
    assert spark.conf.get(TXN_APP_ID_CONF, None) is None  # restored after the block


def test_streaming_change_feed_matches_the_batch_change_feed(spark: Any, tmp_path: Path) -> None:
    from deltalog import read_changes

    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    deltalog.write_table(a, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x", "y", "y"]}),
                         partition_by=["p"], properties={"delta.enableChangeDataFeed": "true"})
    deltalog.Table(a).delete([("p", "=", "x")])
    append(a, [4], part="z")
    q = copy_stream(spark, a, b, str(tmp_path / "chk"), readChangeFeed="true", startingVersion=0)
    assert run(q) is None
    cols = ["id", "p", "_change_type", "_commit_version", "_commit_timestamp"]
    got = sorted(tuple(r) for r in spark.read.format("delta").load(b).select(*cols).collect())
    expected = read_changes(a, starting_version=0).select(cols).to_pylist()
    naive = [(*list(r.values())[:4], r["_commit_timestamp"].replace(tzinfo=None)) for r in expected]  # session tz UTC
    assert got == sorted(naive)
    assert {g[2] for g in got} == {"insert", "delete"}
