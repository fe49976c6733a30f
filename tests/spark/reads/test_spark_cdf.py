"""Change data feed with Spark: DELETE / UPDATE / MERGE write change data files on tables with
``delta.enableChangeDataFeed=true`` (compared with the changes computed independently in Python from the
rows before the command), the kernel's reader and Spark's batch reader (``readChangeFeed``) read them
identically, the conformance CDF tables read through Spark as through the kernel, and delta-rs reads the
table data the DML left."""

from __future__ import annotations

import concurrent.futures as cf
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import spark_deltars_worker
from sparkutil import data, frame, to_arrow

import deltalog
from deltalog.errors import InvalidArgumentError, VersionNotFoundError
from deltalog.feed.changes import ChangeDataNotRecordedError
from deltalog.feed.rows import changes_by_type
from deltalog.protocol.schema import physical_name
from deltalog.spark.dml import delete, merge, update
from deltalog.spark.reads.changes import read_changes

pytestmark = pytest.mark.spark

CORPUS = Path(__file__).resolve().parents[4] / "shared" / "conformance" / "kernel-rs-data"
COLS = ("id", "k", "v", "s")
Row = dict[str, Any]




def make(tmp_path: Path, *, partitioned: bool = False, dvs: bool = False, mapping: bool = False) -> str:
    path = str(tmp_path / "t")
    props = {"delta.enableChangeDataFeed": "true", **({"delta.enableDeletionVectors": "true"} if dvs else {}),
             **({"delta.columnMapping.mode": "name"} if mapping else {})}
    deltalog.write_table(path, data(0, 30), mode="append", partition_by=["k"] if partitioned else None,
                         properties=props)
    deltalog.write_table(path, data(30, 30), mode="append")
    return path


def current(path: str) -> list[Row]:
    return sorted(deltalog.Table(path).snapshot().to_arrow().to_pylist(), key=lambda r: r["id"])


def key(r: Row) -> tuple[Any, ...]:
    return (r["_change_type"], *(r[c] for c in COLS))


def kernel_changes(path: str, version: int) -> list[Row]:
    out = deltalog.read_changes(path, starting_version=version, ending_version=version).to_pylist()
    assert all(r["_commit_version"] == version for r in out)
    return sorted(({c: r[c] for c in (*COLS, "_change_type")} for r in out), key=key)


def spark_changes(spark: Any, path: str, start: int, end: int | None = None) -> list[Row]:
    reader = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", start)
    if end is not None:
        reader = reader.option("endingVersion", end)
    table = to_arrow(reader.load(path))
    return [dict(r) for r in table.to_pylist()]


def expect(kind: str, rows: list[Row]) -> list[Row]:
    return [{**{c: r[c] for c in COLS}, "_change_type": kind} for r in rows]


def check_cdc_commit(path: str, version: int, *, cdc: bool) -> None:
    """The commit has change data files iff ``cdc``: under _change_data/, dataChange=false, holding
    ``_change_type``; no live data file holds ``_change_type``."""
    actions = [line for line in (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]
    cdc_actions = [a for a in actions if a.startswith('{"cdc"')]
    assert bool(cdc_actions) == cdc
    snap = deltalog.Table(path).snapshot(version)
    for a in cdc_actions:
        import json

        body = json.loads(a)["cdc"]
        assert body["path"].startswith("_change_data/") and body["dataChange"] is False
        local = os.path.join(path, body["path"])
        assert os.path.getsize(local) == body["size"]
        names = pq.read_schema(local).names
        assert "_change_type" in names and not set(snap.partition_columns) & set(names)
        # the columns are named as in the data files: physical names under column mapping
        data_names = pq.read_schema(os.path.join(path, snap.add_files().column("path")[0].as_py())).names
        assert names == [*data_names, "_change_type"]
        if snap.partition_columns:  # keyed and laid out as the data files: by physical name
            k = physical_name(snap.schema.field("k"), snap.column_mapping_mode)
            assert body["path"].split("/")[1] == f"{k}={body['partitionValues'][k]}"
    for p in snap.add_files().column("path").to_pylist():
        assert "_change_type" not in pq.read_schema(os.path.join(path, p)).names


def check_readers_agree(spark: Any, path: str, version: int, expected: list[Row]) -> None:
    got = kernel_changes(path, version)
    assert got == sorted(expected, key=key)
    via_spark = spark_changes(spark, path, version, version)
    assert sorted(({c: r[c] for c in (*COLS, "_change_type")} for r in via_spark), key=key) == got
    assert {r["_commit_version"] for r in via_spark} == {version}


@pytest.mark.parametrize(("partitioned", "dvs", "mapping"),
                         [(False, False, False), (True, False, False), (False, True, False)],
                         ids=["plain", "partitioned", "dv"])  # column mapping: test_merge's deletes
def test_delete(spark: Any, tmp_path: Path, partitioned: bool, dvs: bool, mapping: bool) -> None:
    path = make(tmp_path, partitioned=partitioned, dvs=dvs, mapping=mapping)
    before = current(path)
    res = delete(spark, path, "id % 4 = 1 AND id < 50")
    gone = [r for r in before if r["id"] % 4 == 1 and r["id"] < 50]
    assert current(path) == [r for r in before if r not in gone]
    # with deletion vectors the DV updates are the changes (as delta-spark): no change data files
    check_cdc_commit(path, res.version or -1, cdc=not dvs)
    assert res.metric("numAddedChangeFiles") == (0 if dvs else len(
        [a for a in (Path(path) / "_delta_log" / f"{res.version:020d}.json").read_text().splitlines()
         if a.startswith('{"cdc"')]))
    check_readers_agree(spark, path, res.version or -1, expect("delete", gone))


def test_partition_delete_needs_no_change_files(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=True)
    before = current(path)
    res = delete(spark, path, "k = 1")
    check_cdc_commit(path, res.version or -1, cdc=False)
    check_readers_agree(spark, path, res.version or -1, expect("delete", [r for r in before if r["k"] == 1]))


@pytest.mark.parametrize(("partitioned", "dvs", "mapping"),
                         [(False, False, False), (True, True, False), (True, True, True)],
                         ids=["plain", "partitioned-dv", "partitioned-dv-column-mapping"])
def test_update(spark: Any, tmp_path: Path, partitioned: bool, dvs: bool, mapping: bool) -> None:
    path = make(tmp_path, partitioned=partitioned, dvs=dvs, mapping=mapping)
    before = current(path)
    res = update(spark, path, "id >= 10 AND id < 25", {"v": "coalesce(v, 0) + 100", "s": "'upd'"})
    hit = [r for r in before if 10 <= r["id"] < 25]
    post = [{**r, "v": (r["v"] or 0) + 100, "s": "upd"} for r in hit]
    assert current(path) == sorted([r for r in before if r not in hit] + post, key=lambda r: r["id"])
    check_cdc_commit(path, res.version or -1, cdc=True)
    assert res.metric("numAddedChangeFiles") >= 1
    expected = expect("update_preimage", hit) + expect("update_postimage", post)
    check_readers_agree(spark, path, res.version or -1, expected)


def run_merge(spark: Any, path: str, source: list[Row]) -> Any:
    src = frame(spark, pa.Table.from_pylist(source, schema=data(0, 0).schema)).alias("s")
    return (
        merge(spark, path, src, "t.id = s.id", target_alias="t")
        .whenMatchedDelete("s.s = 'gone'")
        .whenMatchedUpdate(set={"v": "s.v", "s": "concat(t.s, '+')"})
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceUpdate("t.id >= 55", {"s": "'orphan'"})
        .execute()
    )


@pytest.mark.parametrize(("partitioned", "dvs", "mapping"),
                         [(False, False, False), (True, True, False), (False, False, True)],
                         ids=["plain", "partitioned-dv", "column-mapping"])  # copy-on-write partitions: test_delete
def test_merge(spark: Any, tmp_path: Path, partitioned: bool, dvs: bool, mapping: bool) -> None:
    path = make(tmp_path, partitioned=partitioned, dvs=dvs, mapping=mapping)
    before = current(path)
    source = [
        {"id": i, "k": i % 3, "v": float(i), "s": "gone" if i % 2 else "new"} for i in range(40, 52)
    ] + [{"id": i, "k": i % 3, "v": 1.5, "s": "ins"} for i in range(100, 104)]
    run_merge(spark, path, source)
    version = deltalog.Table(path).latest_version()
    by_id = {r["id"]: r for r in source}
    deleted = [r for r in before if r["id"] in by_id and by_id[r["id"]]["s"] == "gone"]
    pre = [r for r in before if r["id"] in by_id and by_id[r["id"]]["s"] != "gone"]
    post = [{**r, "v": by_id[r["id"]]["v"], "s": r["s"] + "+"} for r in pre]
    orphans = [r for r in before if r["id"] not in by_id and r["id"] >= 55]
    orphans_post = [{**r, "s": "orphan"} for r in orphans]
    inserted = [r for r in source if r["id"] >= 100]
    untouched = [r for r in before if r not in deleted + pre + orphans]
    assert current(path) == sorted(untouched + post + orphans_post + inserted, key=lambda r: r["id"])
    check_cdc_commit(path, version, cdc=True)
    assert int(deltalog.Table(path).history(limit=1)[0]["operationMetrics"]["numTargetChangeFilesAdded"]) >= 1
    expected = (
        expect("delete", deleted) + expect("update_preimage", pre + orphans)
        + expect("update_postimage", post + orphans_post) + expect("insert", inserted)
    )
    check_readers_agree(spark, path, version, expected)


def test_insert_only_merge_is_a_plain_append(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path)
    src = frame(spark, data(200, 3)).alias("s")
    merge(spark, path, src, "t.id = s.id", target_alias="t").whenNotMatchedInsertAll().execute()
    version = deltalog.Table(path).latest_version()
    check_cdc_commit(path, version, cdc=False)
    check_readers_agree(spark, path, version, expect("insert", data(200, 3).to_pylist()))


def test_whole_feed_and_delta_rs_reads_the_data(spark: Any, rs: cf.ProcessPoolExecutor, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=True)
    proto = deltalog.Table(path).snapshot().protocol  # the feed needs writer version 4 (or the feature)
    assert proto.minWriterVersion >= 4 or "changeDataFeed" in (proto.writerFeatures or ())
    delete(spark, path, "id = 3")
    update(spark, path, "id = 4", {"v": "-1.0"})
    every = deltalog.read_changes(path, starting_version=0)
    assert changes_by_type(every) == {"insert": 60, "delete": 1, "update_preimage": 1, "update_postimage": 1}
    via_spark = spark_changes(spark, path, 0)
    assert sorted((r["_commit_version"], *key(r)) for r in via_spark) == sorted(
        (r["_commit_version"], *key(r)) for r in every.to_pylist()
    )
    ours = deltalog.Table(path).snapshot().to_arrow()
    theirs: pa.Table = rs.submit(spark_deltars_worker.read_table, path).result(timeout=120)
    assert sorted(theirs.select(list(COLS)).to_pylist(), key=lambda r: r["id"]) == sorted(
        ours.select(list(COLS)).to_pylist(), key=lambda r: r["id"]
    )


@pytest.mark.skipif(not CORPUS.is_dir(), reason="conformance corpus missing")
@pytest.mark.parametrize(
    ("name", "start"),
    [("cdf-table-with-dv", 0), ("cdf-table", 0), ("cdf-table-with-cdc-and-dvs", 0),
     ("cdf-column-mapping-name-mode", 1), ("cdf-table-partitioned", 0)],
)
def test_conformance_tables_read_as_the_kernel_reads_them(spark: Any, name: str, start: int) -> None:
    path = str(CORPUS / name)
    ours = deltalog.read_changes(path, starting_version=start).to_pylist()
    theirs = to_arrow(read_changes(spark, path, startingVersion=start)).to_pylist()

    def norm(rows: list[Row]) -> list[str]:
        return sorted(repr(sorted(r.items())) for r in rows)

    assert norm(theirs) == norm(ours) and len(ours) > 0


def test_options_timestamps_and_errors(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path)
    delete(spark, path, "id < 3")  # v2
    for v, ms in ((0, 1_700_000_000_000), (1, 1_700_000_060_000), (2, 1_700_000_120_000)):
        f = Path(path) / "_delta_log" / f"{v:020d}.json"
        os.utime(f, ns=(ms * 1_000_000, ms * 1_000_000))
    df = (spark.read.format("delta").option("readChangeFeed", "true")
          .option("startingTimestamp", "2023-11-14 22:13:30").option("endingTimestamp", "2023-11-14 22:15:19")
          .load(path))  # v0 is at 22:13:20 UTC, v1 at 22:14:20, v2 at 22:15:20
    assert df.columns == [*COLS, "_change_type", "_commit_version", "_commit_timestamp"]
    got = df.selectExpr("_commit_version", "unix_timestamp(_commit_timestamp)").distinct().collect()
    assert [tuple(r) for r in got] == [(1, 1_700_000_060)]
    assert spark_changes(spark, path, 2) and {r["_change_type"] for r in spark_changes(spark, path, 2)} == {"delete"}
    reader = spark.read.format("delta").option("readChangeFeed", "true")
    with pytest.raises(InvalidArgumentError, match="DELTA_NO_START_FOR_CDC_READ"):
        reader.load(path)
    with pytest.raises(InvalidArgumentError, match="cannot be combined"):
        reader.option("startingVersion", 0).option("versionAsOf", 1).load(path)
    with pytest.raises(VersionNotFoundError, match="DELTA_CDC_START_VERSION_AFTER_LATEST"):
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 9).load(path)
    late = spark.read.format("delta").option("readChangeFeed", "true").option("startingTimestamp", "2099-01-01")
    with pytest.raises(VersionNotFoundError, match="DELTA_TIMESTAMP_GREATER_THAN_COMMIT"):
        late.load(path)
    out_of_range = "spark.databricks.delta.changeDataFeed.timestampOutOfRange.enabled"
    spark.conf.set(out_of_range, "true")  # delta-spark's setting: no changes instead of the error
    try:
        none = late.load(path)
        assert none.count() == 0 and none.columns == df.columns
        assert spark.sql(f"SELECT count(*) FROM table_changes_by_path('{path}', '2099-01-01')").first()[0] == 0
    finally:
        spark.conf.unset(out_of_range)
    plain = str(tmp_path / "plain")
    deltalog.write_table(plain, data(0, 3), mode="append")
    with pytest.raises(ChangeDataNotRecordedError, match="DELTA_MISSING_CHANGE_DATA"):
        read_changes(spark, plain, startingVersion=0)
    empty = read_changes(spark, path, startingVersion=0, endingVersion=0).filter("id < 0")
    assert empty.count() == 0


def test_changes_of_files_read_twice_keep_their_own_rows(spark: Any, tmp_path: Path) -> None:
    # v0 adds a file (ids 0..29), v2 deletes some of its rows with a deletion vector, v3 removes the rest:
    # one read of versions 0..3 reads that data file for three changes, each with its own rows
    path = make(tmp_path, dvs=True)
    delete(spark, path, "id < 5")
    delete(spark, path, "id < 30")
    every = spark_changes(spark, path, 0)
    by_version: dict[int, list[tuple[str, int]]] = {}
    for r in every:
        by_version.setdefault(r["_commit_version"], []).append((r["_change_type"], r["id"]))
    assert sorted(by_version[0]) == [("insert", i) for i in range(30)]
    assert sorted(by_version[1]) == [("insert", i) for i in range(30, 60)]
    assert sorted(by_version[2]) == [("delete", i) for i in range(5)]
    assert sorted(by_version[3]) == [("delete", i) for i in range(5, 30)]
    assert len(every) == 90
