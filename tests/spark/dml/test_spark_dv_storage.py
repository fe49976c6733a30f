"""Where Spark DML puts deletion vectors: inline in the log when the serialized bitmap is small
(``INLINE_DV_MAX_BYTES``), in ``deletion_vector_<uuid>.bin`` files otherwise. Every state is compared
with rows computed independently (Python filters over the written data, bitmaps decoded with pyroaring
straight from the parquet row order) and read back by the kernel, the Spark read path and delta-rs."""

from __future__ import annotations

import concurrent.futures as cf
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import spark_deltars_worker
from pyroaring import BitMap64
from sparkutil import arrow_rows, frame, rows, version

import deltalog
from deltalog.data.deletion_vectors import INLINE_DV_MAX_BYTES, serialize_bitmap
from deltalog.protocol.deletion_vectors import z85_decode
from deltalog.spark.dml import delete, merge, update

pytestmark = pytest.mark.spark

Row = dict[str, Any]
N = 1000  # rows per data file: enough for a scattered delete to outgrow the inline limit


def data(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([f"s{i % 5}" for i in ids], pa.string()),
    })


def make(tmp_path: Path, *, cdf: bool = False) -> str:
    """Two data files, ids [0, N) and [N, 2N)."""
    path = str(tmp_path / "t")
    props = {"delta.enableDeletionVectors": "true"}
    if cdf:
        props["delta.enableChangeDataFeed"] = "true"
    deltalog.write_table(path, data(0, N), mode="append", properties=props)
    deltalog.write_table(path, data(N, N), mode="append")
    assert deltalog.Table(path).snapshot().num_files() == 2
    return path


def live(path: str) -> dict[int, Row]:
    """Live files by the first id they hold."""
    out = {}
    for f in deltalog.Table(path).snapshot().add_files().to_pylist():
        first = pq.read_table(Path(path) / f["path"], columns=["id"]).column("id")[0].as_py()
        out[first] = f
    return out


def dv_of(f: Row) -> Row | None:
    dv = f["deletionVector"]
    return None if dv is None else {k: v for k, v in dv.items() if v is not None}


def bin_files(path: str) -> list[str]:
    return sorted(p.name for p in Path(path).glob("deletion_vector_*.bin"))


def deleted_positions(path: str, f: Row, gone: Callable[[int], bool]) -> list[int]:
    """Row positions of ``f`` whose id ``gone`` says is deleted, from the parquet file itself."""
    ids = pq.read_table(Path(path) / f["path"], columns=["id"]).column("id").to_pylist()
    return [i for i, x in enumerate(ids) if gone(x)]


def decode_independently(path: str, dv: Row) -> list[int]:
    """The rows of a DV decoded without our reader: Z85 / file framing by hand, then pyroaring."""
    if dv["storageType"] == "i":
        assert "offset" not in dv
        raw = z85_decode(dv["pathOrInlineDv"])[: dv["sizeInBytes"]]
    else:
        [name] = [n for n in bin_files(path) if _uuid_of(dv) in n]
        blob = (Path(path) / name).read_bytes()
        size = int.from_bytes(blob[dv["offset"]: dv["offset"] + 4], "big")
        assert size == dv["sizeInBytes"]
        raw = blob[dv["offset"] + 4: dv["offset"] + 4 + size]
    assert int.from_bytes(raw[:4], "little") == 1681511377
    return list(BitMap64.deserialize(raw[4:]))


def _uuid_of(dv: Row) -> str:
    return str(uuid.UUID(bytes=z85_decode(dv["pathOrInlineDv"][-20:])))


def check(spark: Any, rs: cf.ProcessPoolExecutor, path: str, expected: list[Row]) -> None:
    want = sorted(expected, key=lambda r: r["id"])
    assert arrow_rows(deltalog.Table(path).snapshot().to_arrow()) == want
    assert rows(spark.read.format("delta").load(path)) == want
    theirs = rs.submit(spark_deltars_worker.read_with_query_engine, path).result(timeout=120)
    assert arrow_rows(theirs.select(["id", "s"])) == want


def log_dvs(path: str, v: int) -> list[Row]:
    """The deletion vectors of the ``add`` actions of commit ``v``, as written in the JSON."""
    lines = (Path(path) / "_delta_log" / f"{v:020d}.json").read_text().splitlines()
    return [a["add"]["deletionVector"] for a in map(json.loads, lines) if "add" in a and "deletionVector" in a["add"]]


def test_small_deletes_are_inline_large_ones_in_files_and_later_deletes_union(
    spark: Any, rs: cf.ProcessPoolExecutor, tmp_path: Path
) -> None:
    path = make(tmp_path, cdf=True)
    gone: set[int] = set()

    def expect() -> list[Row]:
        return [r for r in data(0, 2 * N).to_pylist() if r["id"] not in gone]

    # 1. ten scattered rows per file: 52-byte bitmaps, inline, no DV file
    res = delete(spark, path, "id % 100 = 7")
    gone |= {i for i in range(2 * N) if i % 100 == 7}
    assert res.metric("numDeletedRows") == 20 and res.metric("numDeletionVectorsAdded") == 2
    assert bin_files(path) == []
    written = log_dvs(path, version(path))
    assert [d["storageType"] for d in written] == ["i", "i"] and all("offset" not in d for d in written)
    for f in live(path).values():
        dv = dv_of(f)
        assert dv is not None and dv["storageType"] == "i"
        positions = deleted_positions(path, f, lambda x: x in gone)
        assert decode_independently(path, dv) == positions and dv["cardinality"] == 10
        assert dv["sizeInBytes"] == len(serialize_bitmap(positions)) <= INLINE_DV_MAX_BYTES
    check(spark, rs, path, expect())

    # 2. half of the second file: a file DV (union with its inline one); the first file keeps its DV
    before = dv_of(live(path)[0])
    res = delete(spark, path, f"id >= {N} AND id % 2 = 0")
    gone |= {i for i in range(N, 2 * N) if i % 2 == 0}
    assert res.metric("numDeletedRows") == 500 and res.metric("numDeletionVectorsUpdated") == 1
    files = live(path)
    assert dv_of(files[0]) == before
    big = dv_of(files[N])
    assert big is not None and big["storageType"] == "u" and big["sizeInBytes"] > INLINE_DV_MAX_BYTES
    assert bin_files(path) == [f"deletion_vector_{_uuid_of(big)}.bin"]
    assert decode_independently(path, big) == deleted_positions(path, files[N], lambda x: x in gone)
    assert big["cardinality"] == 510
    check(spark, rs, path, expect())

    # 3. a second small delete on the inline file: the union stays inline
    res = delete(spark, path, "id < 20")
    gone |= set(range(20))
    assert res.metric("numDeletedRows") == 19  # row 7 was gone already
    small = dv_of(live(path)[0])
    assert small is not None and small["storageType"] == "i" and small["cardinality"] == 29
    assert decode_independently(path, small) == deleted_positions(path, live(path)[0], lambda x: x in gone)
    assert len(bin_files(path)) == 1
    check(spark, rs, path, expect())

    # 4. the inline DV outgrows the limit: it moves to a file
    res = delete(spark, path, f"id < {N} AND id % 3 = 0")
    gone |= {i for i in range(N) if i % 3 == 0}
    moved = dv_of(live(path)[0])
    assert moved is not None and moved["storageType"] == "u"
    assert decode_independently(path, moved) == deleted_positions(path, live(path)[0], lambda x: x in gone)
    assert len(bin_files(path)) == 2 and len(live(path)) == 2  # one live entry per data file
    check(spark, rs, path, expect())

    # the change feed sees each delete, from inline and file DVs alike
    changes = deltalog.read_changes(path, starting_version=2).to_pylist()
    by_version: dict[int, set[int]] = {}
    for r in changes:
        assert r["_change_type"] == "delete"
        by_version.setdefault(r["_commit_version"], set()).add(r["id"])
    assert by_version == {
        2: {i for i in range(2 * N) if i % 100 == 7},
        3: {i for i in range(N, 2 * N) if i % 2 == 0},
        4: set(range(20)) - {7},
        5: {i for i in range(N) if i % 3 == 0} - set(range(20)) - {i for i in range(N) if i % 100 == 7},
    }
    via_spark = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2).load(path)
    assert sorted((r["_commit_version"], r["id"]) for r in via_spark.collect()) == sorted(
        (r["_commit_version"], r["id"]) for r in changes
    )
    # time travel: the table before any delete, and with only the inline DVs
    assert deltalog.Table(path).snapshot(version=1).to_arrow().num_rows == 2 * N
    at_2 = spark.read.format("delta").option("versionAsOf", 2).load(path)
    assert at_2.count() == 2 * N - 20


def test_vacuum_clone_and_optimize_with_inline_and_file_dvs(
    spark: Any, rs: cf.ProcessPoolExecutor, tmp_path: Path
) -> None:
    from deltalog.spark import DeltaTable

    path = make(tmp_path)
    delete(spark, path, "id IN (5, 6, 1005)")  # inline in both files
    delete(spark, path, f"id >= {N} AND id % 4 = 1")  # the second file's DV moves to a file ...
    [old_bin] = bin_files(path)
    delete(spark, path, f"id >= {N} AND id % 4 = 3")  # ... and then to another one
    files = live(path)
    inline, stored = dv_of(files[0]), dv_of(files[N])
    assert inline is not None and inline["storageType"] == "i"
    assert stored is not None and stored["storageType"] == "u"
    [new_bin] = [n for n in bin_files(path) if n != old_bin]
    expected = [r for r in data(0, 2 * N).to_pylist() if r["id"] not in (5, 6) and not (r["id"] >= N and r["id"] % 2)]

    # VACUUM deletes the DV file no version needs any more, keeps the live one, and looks for no file
    # behind the inline DV
    res = deltalog.Table(path).vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert [f for f in res.files_deleted if "deletion_vector" in f] == [old_bin]
    assert bin_files(path) == [new_bin]
    check(spark, rs, path, expected)

    # CLONE: shallow makes the file DV absolute and keeps the inline one as it is; deep copies the file
    for shallow in (True, False):
        target = str(tmp_path / f"clone_{'shallow' if shallow else 'deep'}")
        deltalog.Table(path).clone(target, shallow=shallow)
        dvs = sorted(
            (dv_of(f) or {} for f in deltalog.Table(target).snapshot().add_files().to_pylist()),
            key=lambda d: str(d.get("storageType")),
        )
        assert [d["storageType"] for d in dvs] == ["i", "p" if shallow else "u"]
        assert dvs[0] == inline
        assert len(bin_files(target)) == (0 if shallow else 1)
        assert arrow_rows(deltalog.Table(target).snapshot().to_arrow()) == expected
        assert rows(spark.read.format("delta").load(target)) == expected

    # OPTIMIZE purges the rows of both kinds of DV
    m = DeltaTable.forPath(spark, path).optimize().executeCompaction().first().metrics
    assert m.deletionVectorStats.numDeletionVectorsRemoved == 2
    assert m.deletionVectorStats.numDeletionVectorRowsRemoved == 2 * N - len(expected)
    assert all(dv_of(f) is None for f in deltalog.Table(path).snapshot().add_files().to_pylist())
    check(spark, rs, path, expected)


def test_update_and_merge_touching_few_rows_write_inline_dvs(
    spark: Any, rs: cf.ProcessPoolExecutor, tmp_path: Path
) -> None:
    path = make(tmp_path)
    originals = {f["path"] for f in live(path).values()}

    def original_dvs() -> list[Row | None]:
        files = deltalog.Table(path).snapshot().add_files().to_pylist()
        return [dv_of(f) for f in files if f["path"] in originals]

    res = update(spark, path, f"id IN (1, 2, {N + 1})", {"s": "'x'"})
    assert res.metric("numUpdatedRows") == 3 and res.metric("numDeletionVectorsAdded") == 2
    assert [(d or {}).get("storageType") for d in original_dvs()] == ["i", "i"]
    assert bin_files(path) == []
    want = {r["id"]: r for r in data(0, 2 * N).to_pylist()}
    for i in (1, 2, N + 1):
        want[i] = {**want[i], "s": "x"}
    check(spark, rs, path, list(want.values()))

    source = frame(spark, pa.table({"id": pa.array([3, N + 3], pa.int64()), "s": ["m", "m"]}))
    merge(spark, path, source.alias("s"), "t.id = s.id", target_alias="t").whenMatchedDelete().execute()
    for i in (3, N + 3):
        del want[i]
    dvs = original_dvs()
    assert [(d or {}).get("storageType") for d in dvs] == ["i", "i"]
    assert sorted(int((d or {}).get("cardinality") or 0) for d in dvs) == [2, 3]  # unions with the UPDATE's DVs
    assert bin_files(path) == []
    check(spark, rs, path, list(want.values()))
