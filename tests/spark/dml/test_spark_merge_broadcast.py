"""MERGE's first job broadcasts the source when its estimated size allows (``_broadcast``), so the target
rows are probed where they are read instead of shuffled and sorted; the setting and Spark's own
``autoBroadcastJoinThreshold=-1`` turn it off. Same rows and counts either way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sparkutil import arrow_rows, data, frame

import deltalog
from deltalog.errors import InvalidArgumentError
from deltalog.spark.dml import merge
from deltalog.spark.dml.broadcast import SOURCE_BROADCAST_CONF, estimated_bytes, parse_bytes, threshold

pytestmark = pytest.mark.spark

_AUTO = "spark.sql.autoBroadcastJoinThreshold"


@pytest.fixture
def settings(spark: Any) -> Iterator[Any]:
    """Sets session settings for one test and restores them after it."""
    saved: dict[str, str | None] = {}

    def put(key: str, value: str) -> None:
        saved.setdefault(key, spark.conf.get(key, None))
        spark.conf.set(key, value)

    yield put
    for key, old in saved.items():
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


@pytest.fixture
def plans(spark: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The executed plan of every ``collect()`` (the ``mapInArrow`` writes) and every ``write.parquet`` (Spark's
    own writer) while the test runs."""
    seen: list[str] = []
    cls = type(spark.range(1))
    real = cls.collect

    def spy(self: Any) -> Any:
        out = real(self)
        seen.append(str(self._jdf.queryExecution().executedPlan().toString()))
        return out

    writer = type(spark.range(1).write)
    real_parquet = writer.parquet

    def spy_parquet(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = real_parquet(self, *args, **kwargs)
        seen.append(str(self._df._jdf.queryExecution().executedPlan().toString()))
        return out

    monkeypatch.setattr(cls, "collect", spy)
    monkeypatch.setattr(writer, "parquet", spy_parquet)
    return seen


def _table(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    for start in (0, 40, 80):
        deltalog.write_table(path, data(start, 40), mode="append")
    return path


@pytest.mark.parametrize("one_job", [False, True], ids=["two-job", "one-job"])
@pytest.mark.parametrize("inserts", [True, False], ids=["upsert", "update-only"])
@pytest.mark.parametrize("limit", ["1g", "-1", "16"], ids=["broadcast", "off", "too-small"])
def test_merge_broadcasts_the_source_when_it_fits(
    spark: Any, tmp_path: Path, settings: Any, plans: list[str], monkeypatch: pytest.MonkeyPatch, limit: str,
    inserts: bool, one_job: bool,
) -> None:
    """The two-job way: the first job always may; without inserts the write job (the touched files left-joined
    with the source) may too. An upsert's write job is a full outer join, which Spark cannot broadcast. The
    one-job way (every file touched) joins once: as the two-job way's write job."""
    from deltalog.spark.dml import merge_one_pass

    path = _table(tmp_path)
    if not one_job:
        monkeypatch.setattr(merge_one_pass, "one_pass_applies", lambda run, candidates: False)
    settings(_AUTO, "1")  # Spark itself broadcasts nothing: a broadcast join comes from the setting alone
    settings(SOURCE_BROADCAST_CONF, limit)
    before = arrow_rows(deltalog.Table(path).snapshot().to_arrow())
    src = [{"id": i, "k": 7, "v": -1.0, "s": "new"} for i in (1, 44, 45, 60, 119, 200, 201)]
    source = frame(spark, pa.Table.from_pylist(src)).alias("s")
    builder = merge(spark, path, source, "t.id = s.id", target_alias="t").whenMatchedUpdateAll()
    (builder.whenNotMatchedInsertAll() if inserts else builder).execute()
    joins = [p for p in plans if "Join" in p]
    assert len(joins) == (1 if one_job else 2), joins  # (the first job, then) the write job
    broadcast = limit == "1g"
    for plan, can in zip(joins, (not inserts,) if one_job else (True, not inserts), strict=True):
        assert ("BroadcastHashJoin" in plan) == (broadcast and can), plan
        assert ("SortMergeJoin" in plan or "ShuffledHashJoin" in plan) == (not (broadcast and can)), plan
    ids = {r["id"] for r in src}
    new = {r["id"]: r for r in src}
    want = [new[r["id"]] if r["id"] in ids else r for r in before]
    want += [r for r in src if r["id"] > 119] if inserts else []
    assert arrow_rows(deltalog.Table(path).snapshot().to_arrow()) == sorted(want, key=lambda r: r["id"])
    m = deltalog.Table(path).history(limit=1)[0]["operationMetrics"]
    assert (m["numSourceRows"], m["numTargetRowsUpdated"], m["numTargetRowsInserted"]) == (
        "7", "5", "2" if inserts else "0")


def test_broadcast_threshold_settings(spark: Any, settings: Any) -> None:
    heap = int(spark._jvm.java.lang.Runtime.getRuntime().maxMemory())
    assert threshold(spark) == min(1 << 30, heap // 8)  # the default: an eighth of the driver's heap
    settings(SOURCE_BROADCAST_CONF, "64m")
    assert threshold(spark) == 64 << 20
    settings(_AUTO, "-1")  # broadcasts turned off for the session win
    assert threshold(spark) == -1
    settings(_AUTO, "10485760")
    settings(SOURCE_BROADCAST_CONF, "lots")
    with pytest.raises(InvalidArgumentError, match=r"spark.deltalog.merge.sourceBroadcastThreshold='lots'"):
        threshold(spark)


def test_estimated_bytes_counts_the_columns_the_join_keeps(spark: Any) -> None:
    from pyspark.sql import functions as F

    target = spark.range(10)
    source = spark.range(10).select("id", F.col("id").cast("string").alias("s"), (F.col("id") * 2).alias("w"))
    # only the key survives column pruning on the source side: 8 bytes of row overhead + 8 for the long
    assert estimated_bytes(target.join(source, "id").select(target["id"]), 1000) == 1000 * 16
    # a string column kept: Spark sizes it at 20 bytes
    assert estimated_bytes(target.join(source, "id").select("s"), 1000) == 1000 * (8 + 8 + 20)
    assert estimated_bytes(target.select("id"), 1000) is None  # no join in the plan
    assert parse_bytes("2G") == 2 << 30 and parse_bytes(" 300 ") == 300
