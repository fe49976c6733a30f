"""The change data feed planner (:mod:`deltalog.feed.changes`) and the kernel's Arrow reader of it, on
tables written here: enablement rules, version and timestamp ranges, commit timestamps (file times and
in-commit timestamps), deletion-vector deletes by the kernel, hand-crafted logs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from logbuilder import add, commit_info, metadata, protocol, remove, write_commit

import deltalog
from deltalog.commands.properties import set_properties
from deltalog.errors import InvalidArgumentError, SchemaError, VersionNotFoundError
from deltalog.feed.changes import (
    ChangeDataNotRecordedError,
    ChangeFile,
    iter_commit_changes,
    resolve_range,
)
from deltalog.feed.rows import changes_by_type
from deltalog.protocol.actions import Add
from deltalog.storage import LocalLogStore
from deltalog.txn.operations import Write

CDF = {"delta.enableChangeDataFeed": "true"}


def batch(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array([f"p{i % 2}" for i in ids])})


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [c for c in table.column_names if c != "_commit_timestamp"]
    return sorted(tuple(r[c] for c in cols) for r in table.to_pylist())


def set_commit_time(path: Path, version: int, ms: int) -> None:
    f = path / "_delta_log" / f"{version:020d}.json"
    os.utime(f, ns=(ms * 1_000_000, ms * 1_000_000))


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """v0 create + 10 rows (feed on), v1 append 5, v2 append 5, commit times 1s apart."""
    path = tmp_path / "t"
    deltalog.write_table(path, batch(0, 10), mode="append", partition_by=["k"], properties=CDF)
    deltalog.write_table(path, batch(10, 5), mode="append")
    deltalog.write_table(path, batch(15, 5), mode="append")
    for v in range(3):
        set_commit_time(path, v, 1_700_000_000_000 + v * 1000)
    return path


def test_appends_are_inserts_with_version_and_file_time(table: Path) -> None:
    out = deltalog.read_changes(table, starting_version=0)
    assert rows(out) == sorted([(i, f"p{i % 2}", "insert", 0 if i < 10 else 1 if i < 15 else 2) for i in range(20)])
    assert out.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    by_version = {r["_commit_version"]: r["_commit_timestamp"] for r in out.to_pylist()}
    assert {v: int(ts.timestamp() * 1000) for v, ts in by_version.items()} == {
        0: 1_700_000_000_000, 1: 1_700_000_001_000, 2: 1_700_000_002_000
    }
    assert deltalog.Table(table).changes(starting_version=1, ending_version=1).num_rows == 5


def test_a_filter_keeps_the_matching_changes(table: Path) -> None:
    t = deltalog.Table(table)
    t.delete("id IN (1, 2)")  # v3
    got = deltalog.read_changes(table, starting_version=0, filter="_change_type = 'delete' OR id >= 18")
    assert rows(got) == [(1, "p1", "delete", 3), (2, "p0", "delete", 3), (18, "p0", "insert", 2),
                         (19, "p1", "insert", 2)]
    assert t.changes(starting_version=1, filter=[("_commit_version", "=", 3)]).num_rows == 2
    with pytest.raises(InvalidArgumentError, match="nope"):  # named before any file is read
        deltalog.read_changes(table, starting_version=0, filter="nope = 1")


def test_timestamp_ranges(table: Path) -> None:
    t = deltalog.Table(table)
    # a starting timestamp means the first commit at or after it; an ending one the last at or before it
    assert resolve_range(t, starting_timestamp=1_700_000_000_500) == (1, 2)
    assert resolve_range(t, starting_timestamp="2023-11-14T22:13:20Z") == (0, 2)  # exactly commit 0
    assert resolve_range(t, starting_timestamp=0, ending_timestamp=1_700_000_001_999) == (0, 1)
    assert resolve_range(t, starting_version=0, ending_timestamp=1_900_000_000_000) == (0, 2)
    with pytest.raises(VersionNotFoundError, match="DELTA_TIMESTAMP_GREATER_THAN_COMMIT"):
        resolve_range(t, starting_timestamp=1_700_000_002_001)
    with pytest.raises(VersionNotFoundError, match="before the earliest"):
        resolve_range(t, starting_version=0, ending_timestamp=1_600_000_000_000)
    with pytest.raises(InvalidArgumentError, match="not both"):
        resolve_range(t, starting_version=0, starting_timestamp=0)
    got = deltalog.read_changes(table, starting_timestamp=1_700_000_000_001, ending_timestamp=1_700_000_001_000)
    assert set(got.column("_commit_version").to_pylist()) == {1}


def test_feed_enabled_later_and_disabled_in_range(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalog.write_table(path, batch(0, 4), mode="append")                 # v0: feed off
    set_properties(deltalog.Table(path), CDF)                               # v1: on
    deltalog.write_table(path, batch(4, 2), mode="append")                 # v2
    set_properties(deltalog.Table(path), {"delta.enableChangeDataFeed": "false"})  # v3: off
    deltalog.write_table(path, batch(6, 2), mode="append")                 # v4
    with pytest.raises(ChangeDataNotRecordedError, match=r"range \[0 , 4\].*version \[0\]"):
        deltalog.read_changes(path, starting_version=0)
    with pytest.raises(ChangeDataNotRecordedError, match=r"version \[3\]") as info:
        deltalog.read_changes(path, starting_version=1)
    assert info.value.version == 3 and "delta.enableChangeDataFeed=true" in info.value.message
    assert rows(deltalog.read_changes(path, starting_version=1, ending_version=2)) == [
        (4, "p0", "insert", 2), (5, "p1", "insert", 2)
    ]
    with pytest.raises(ChangeDataNotRecordedError):
        deltalog.read_changes(path, starting_version=4)
    # without the check a planner caller (e.g. a stream ignoring it) still gets the file lists
    plan = list(iter_commit_changes(deltalog.Table(path), 0, 4, check_enabled=False))
    assert [(c.version, [f.kind for f in c.files]) for c in plan] == [
        (0, ["add"]), (1, []), (2, ["add"]), (3, []), (4, ["add"])
    ]
    assert plan[1].metadata is not None and plan[0].commit_info is not None


def test_kernel_delete_with_deletion_vectors_reads_as_deletes(tmp_path: Path) -> None:
    path = tmp_path / "t"
    props = {**CDF, "delta.enableDeletionVectors": "true"}
    data = batch(0, 30)
    deltalog.write_table(path, data, mode="append", partition_by=["k"], properties=props)
    res = deltalog.Table(path).delete([("id", "<", 7)])                     # v1: DV updates, no cdc files
    assert res.num_deleted_rows == 7
    deltalog.Table(path).delete([("id", "in", [3, 8, 9])])                 # v2: 3 again (already gone), 8, 9
    log = (path / "_delta_log" / f"{1:020d}.json").read_text()
    assert '"cdc"' not in log and '"deletionVector"' in log
    out = deltalog.read_changes(path, starting_version=1)
    expected = [(i, f"p{i % 2}", "delete", 1) for i in range(7)] + [(i, f"p{i % 2}", "delete", 2) for i in (8, 9)]
    assert rows(out) == sorted(expected)
    # independently: the rows gone between versions are exactly the deletes
    before = set(deltalog.Table(path).snapshot(0).to_arrow().column("id").to_pylist())
    after = set(deltalog.Table(path).snapshot(2).to_arrow().column("id").to_pylist())
    assert sorted(before - after) == sorted(r[0] for r in expected)
    assert changes_by_type(out) == {"delete": 9}


def test_remove_without_partition_values_takes_them_from_the_table(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    write_commit(store, 0, commit_info(), protocol(1, 4), metadata(["part"], **CDF), add("part=a/f1.parquet", "a"))
    write_commit(store, 1, commit_info("DELETE"), remove("part=a/f1.parquet"))  # an old-style remove
    plan = list(iter_commit_changes(deltalog.Table(str(tmp_path)), 0, 1))
    assert plan[1].files == (ChangeFile("remove", "part=a/f1.parquet", {"part": "a"}, 10, "delete"),)


def test_data_change_false_and_cdc_precedence(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    cdc = {"cdc": {"path": "_change_data/c.parquet", "partitionValues": {}, "size": 3, "dataChange": False}}
    write_commit(store, 0, commit_info(), protocol(1, 4), metadata(**CDF), add("a.parquet"))
    write_commit(store, 1, commit_info("OPTIMIZE"), remove("a.parquet", dataChange=False),
                 add("b.parquet", dataChange=False))
    write_commit(store, 2, commit_info("UPDATE"), remove("b.parquet"), add("c.parquet"), cdc)
    dv = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
          "offset": None, "sizeInBytes": 40, "cardinality": 3}
    write_commit(store, 3, commit_info("DELETE"), remove("c.parquet"), add("c.parquet", deletionVector=dv))
    plan = {c.version: c for c in iter_commit_changes(deltalog.Table(str(tmp_path)), 0, 3)}
    assert [f.kind for f in plan[0].files] == ["add"] and plan[1].files == ()
    assert plan[2].has_cdc and [(f.kind, f.path, f.change_type) for f in plan[2].files] == [
        ("cdc", "_change_data/c.parquet", None)
    ]
    (dv_change,) = plan[3].files
    assert (dv_change.kind, dv_change.change_type, dv_change.deletion_vector) == ("add", "delete", None)
    assert dv_change.selection_vector is not None and dv_change.selection_vector["cardinality"] == 3


def test_in_commit_timestamps_are_the_commit_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "t"
    props = {**CDF, "delta.enableInCommitTimestamps": "true"}
    deltalog.write_table(path, batch(0, 2), mode="append", properties=props)
    deltalog.write_table(path, batch(2, 2), mode="append")
    set_commit_time(path, 1, 1_000)  # file times no longer matter
    ict = []
    for v in range(2):
        first = (path / "_delta_log" / f"{v:020d}.json").read_text().splitlines()[0]
        ict.append(json.loads(first)["commitInfo"]["inCommitTimestamp"])
    out = deltalog.read_changes(path, starting_version=0)
    stamps = {r["_commit_version"]: int(r["_commit_timestamp"].timestamp() * 1000) for r in out.to_pylist()}
    assert stamps == {0: ict[0], 1: ict[1]}
    (c1,) = iter_commit_changes(deltalog.Table(path), 1, 1)
    assert c1.timestamp == ict[1]


def test_columns_and_reserved_names(table: Path, tmp_path: Path) -> None:
    out = deltalog.read_changes(table, starting_version=2, columns=["id", "_change_type"])
    assert out.column_names == ["id", "_change_type"]
    assert pc.all(pc.equal(out.column("_change_type"), "insert")).as_py()
    with pytest.raises(InvalidArgumentError, match="unknown column"):
        deltalog.read_changes(table, starting_version=2, columns=["nope"])
    clash = tmp_path / "clash"
    deltalog.write_table(clash, pa.table({"_change_type": ["x"]}), mode="append", properties=CDF)
    with pytest.raises(SchemaError, match="reserves"):
        deltalog.read_changes(clash, starting_version=0)


def test_commits_without_changes_and_missing_commits(table: Path) -> None:
    t = deltalog.Table(table)
    txn = t.transaction(Write(mode="Append"))
    txn.add_file(Add(path="x.parquet", partitionValues={"k": "p0"}, size=1, modificationTime=1, dataChange=False))
    v = txn.commit().version
    assert [c.files for c in iter_commit_changes(t, v, v)] == [()]
    assert deltalog.read_changes(table, starting_version=v).num_rows == 0
    os.remove(table / "_delta_log" / f"{1:020d}.json")
    with pytest.raises(VersionNotFoundError, match=r"commit 1 .* missing"):
        list(iter_commit_changes(t, 0, 2))
