"""The streaming planner (deltalog.feed.tail) without Spark: positions, admission control, skipped and
refused commits, starting points, data loss, and reading the planned files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.data.read import read_file_rows
from deltalog.errors import DeltaError, InvalidArgumentError, SchemaError, VersionNotFoundError
from deltalog.feed.tail import (
    AdmissionLimit,
    LogTail,
    StreamPosition,
    TailOptions,
    file_reader_snapshot,
    schema_change,
)
from deltalog.protocol.actions import Metadata


def _append(loc: str, ids: list[int], **kw: object) -> int:
    return deltalog.write_table(loc, pa.table({"id": pa.array(ids, pa.int64())}), mode="append", **kw).version


def _ids(tail: LogTail, start: StreamPosition, end: StreamPosition) -> list[int]:
    snap = file_reader_snapshot(tail.table.store, tail.protocol, tail.metadata, version=0, table=tail.where)
    out: list[int] = []
    for f in tail.files_between(start, end):
        out += read_file_rows(snap, f.add).column("id").to_pylist()
    return sorted(out)


def _batches(tail: LogTail, start: StreamPosition, limit: AdmissionLimit | None) -> tuple[list[int], StreamPosition]:
    sizes = []
    pos = start
    while True:
        end = tail.latest_position(pos, limit)
        if end == pos:
            return sizes, pos
        sizes.append(len(tail.files_between(pos, end)))
        pos = end


@pytest.fixture
def table(tmp_path: Path) -> str:
    loc = str(tmp_path / "t")
    for i in range(3):
        _append(loc, [i * 10 + j for j in range(3)])  # versions 0, 1, 2 with one file each
    return loc


def test_default_start_reads_the_snapshot_then_new_commits(table: str) -> None:
    tail = LogTail(deltalog.Table(table))
    start = tail.start_position()
    assert start == StreamPosition(2, -1, True)
    end = tail.latest_position(start, None)
    assert end == StreamPosition(3, -1, False)
    assert _ids(tail, start, end) == [0, 1, 2, 10, 11, 12, 20, 21, 22]
    assert tail.latest_position(end, None) == end  # nothing new: the same position
    _append(table, [30])
    later = tail.latest_position(end, None)
    assert later == StreamPosition(4, -1, False)
    assert _ids(tail, end, later) == [30]


def test_snapshot_files_are_ordered_and_indexed(table: str) -> None:
    tail = LogTail(deltalog.Table(table))
    files = tail.files_between(StreamPosition(2, -1, True), StreamPosition(3))
    assert [f.index for f in files] == [0, 1, 2]
    assert all(f.is_snapshot and f.version == 2 for f in files)
    times = [(f.add["modificationTime"], f.add["path"]) for f in files]
    assert times == sorted(times)


@pytest.mark.parametrize(("max_files", "expected"), [(1, [1] * 5), (2, [2, 2, 1]), (1000, [5])])
def test_max_files_caps_each_batch(table: str, max_files: int, expected: list[int]) -> None:
    for i in range(2):
        _append(table, [100 + i])
    tail = LogTail(deltalog.Table(table))
    sizes, end = _batches(tail, tail.start_position(), AdmissionLimit(max_files=max_files))
    assert sizes == expected
    assert end == StreamPosition(5)


def test_max_bytes_is_a_soft_limit(table: str) -> None:
    tail = LogTail(deltalog.Table(table))
    one = tail.files_between(StreamPosition(2, -1, True), StreamPosition(3))[0].size
    sizes, _ = _batches(tail, tail.start_position(), AdmissionLimit(max_files=None, max_bytes=1))
    assert sizes == [1, 1, 1]  # the file crossing the limit is taken; never an empty batch
    sizes, _ = _batches(tail, tail.start_position(), AdmissionLimit(max_files=None, max_bytes=one + 1))
    assert sizes == [2, 1]
    sizes, _ = _batches(tail, tail.start_position(), AdmissionLimit(max_files=1, max_bytes=10 * one))
    assert sizes == [1, 1, 1]  # both limits: whichever is reached first


def test_a_batch_can_stop_inside_a_commit(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    deltalog.write_table(loc, pa.table({"id": [1, 2, 3], "p": ["a", "b", "c"]}), partition_by=["p"])
    tail = LogTail(deltalog.Table(loc))
    start = tail.start_position(starting_version=0)
    first = tail.latest_position(start, AdmissionLimit(max_files=2))
    assert first == StreamPosition(0, 1, False)
    rest = tail.latest_position(first, AdmissionLimit(max_files=2))
    assert rest == StreamPosition(1)
    assert _ids(tail, start, first) + _ids(tail, first, rest) == sorted(_ids(tail, start, rest))
    assert len(_ids(tail, start, rest)) == 3


def test_exclude_regex_leaves_matching_files_out_and_keeps_positions(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    deltalog.write_table(loc, pa.table({"id": [1, 2, 3], "p": ["a", "b", "c"]}), partition_by=["p"])  # 3 files
    deltalog.write_table(loc, pa.table({"id": [4, 5], "p": ["b", "d"]}), partition_by=["p"], mode="append")
    tail = LogTail(deltalog.Table(loc), options=TailOptions(exclude_regex="p=b/"))
    start = tail.start_position(starting_version=0)
    files = tail.files_between(start, tail.latest_position(start, None))
    assert sorted(f.add["path"].split("/")[0] for f in files) == ["p=a", "p=c", "p=d"]
    # batches of one file step over the left-out files; positions are the files' indexes in the commit
    sizes, end = _batches(tail, start, AdmissionLimit(max_files=1))
    assert sizes == [1, 1, 1] and end == StreamPosition(2)
    everything = LogTail(deltalog.Table(loc))
    indexes = {f.add["path"]: (f.version, f.index) for f in everything.files_between(start, StreamPosition(2))}
    assert {f.add["path"]: (f.version, f.index) for f in files}.items() <= indexes.items()
    assert _ids(tail, start, end) == [1, 3, 5]
    # the snapshot unit of a stream without a starting version too
    snap = LogTail(deltalog.Table(loc), options=TailOptions(exclude_regex=r"^p=[ab]/"))
    first = snap.start_position()
    assert _ids(snap, first, snap.latest_position(first, None)) == [3, 5]
    with pytest.raises(InvalidArgumentError, match=r"DELTA_REGEX_OPT_SYNTAX_ERROR.*excludeRegex '\['"):
        TailOptions(exclude_regex="[")


def test_data_change_false_commits_are_skipped(table: str, compact_copy: Callable[[str], int]) -> None:
    tail = LogTail(deltalog.Table(table))
    pos = tail.latest_position(tail.start_position(), None)
    version = compact_copy(table)
    after = tail.latest_position(pos, AdmissionLimit(max_files=1))
    assert after == StreamPosition(version + 1)  # passed over without using the budget
    assert tail.files_between(pos, after) == []
    _append(table, [99])
    end = tail.latest_position(after, None)
    assert _ids(tail, after, end) == [99]


def test_delete_commit_fails_the_stream_naming_the_version(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    deltalog.write_table(loc, pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"])
    deleted = deltalog.Table(loc).delete([("p", "=", "a")]).version
    deltalog.write_table(loc, pa.table({"id": [3], "p": ["c"]}), mode="append")
    tail = LogTail(deltalog.Table(loc))
    with pytest.raises(DeltaError, match=rf"DELTA_SOURCE_IGNORE_DELETE.*version {deleted}"):
        tail.latest_position(StreamPosition(0), None)
    for opts in (TailOptions(ignore_deletes=True), TailOptions(skip_change_commits=True),
                 TailOptions(ignore_changes=True)):
        tail = LogTail(deltalog.Table(loc), options=opts)
        end = tail.latest_position(StreamPosition(0), None)
        assert _ids(tail, StreamPosition(0), end) == [1, 2, 3]


def test_update_commit_needs_skip_change_commits_or_ignore_changes(table: str) -> None:
    changed = deltalog.Table(table).delete([("id", "=", 11)]).version  # rewrites the file: remove + add
    _append(table, [40])
    for opts in (TailOptions(), TailOptions(ignore_deletes=True)):
        tail = LogTail(deltalog.Table(table), options=opts)
        with pytest.raises(DeltaError, match=rf"DELTA_SOURCE_TABLE_IGNORE_CHANGES.*version {changed}"):
            tail.latest_position(StreamPosition(1), None)
    tail = LogTail(deltalog.Table(table), options=TailOptions(skip_change_commits=True))
    end = tail.latest_position(StreamPosition(1), None)
    assert _ids(tail, StreamPosition(1), end) == [10, 11, 12, 20, 21, 22, 40]
    tail = LogTail(deltalog.Table(table), options=TailOptions(ignore_changes=True))
    end = tail.latest_position(StreamPosition(1), None)
    assert _ids(tail, StreamPosition(1), end) == [10, 10, 11, 12, 12, 20, 21, 22, 40]  # rewritten rows again


def test_starting_version_and_latest(table: str) -> None:
    tail = LogTail(deltalog.Table(table))
    start = tail.start_position(starting_version=1)
    assert start == StreamPosition(1)
    assert _ids(tail, start, tail.latest_position(start, None)) == [10, 11, 12, 20, 21, 22]
    latest = tail.start_position(starting_version="latest")
    assert tail.latest_position(latest, None) == latest
    _append(table, [7])
    assert _ids(tail, latest, tail.latest_position(latest, None)) == [7]
    with pytest.raises(VersionNotFoundError, match="startingVersion 9"):
        tail.start_position(starting_version=9)
    with pytest.raises(InvalidArgumentError, match="not both"):
        tail.start_position(starting_version=1, starting_timestamp="2024-01-01")
    with pytest.raises(InvalidArgumentError, match="startingVersion"):
        tail.start_position(starting_version="soon")


def test_starting_timestamp_picks_the_first_commit_at_or_after_it(table: str) -> None:
    log = os.path.join(table, "_delta_log")
    for v, seconds in enumerate((1_000, 2_000, 3_000)):
        os.utime(os.path.join(log, f"{v:020d}.json"), (seconds, seconds))
    tail = LogTail(deltalog.Table(table))
    assert tail.start_position(starting_timestamp=1_500_000) == StreamPosition(1)
    assert tail.start_position(starting_timestamp=2_000_000) == StreamPosition(1)
    assert tail.start_position(starting_timestamp="1970-01-01T00:00:00Z") == StreamPosition(0)
    assert tail.start_position(starting_timestamp=9_000_000) == StreamPosition(3)  # after the last: next commit


def test_end_version_caps_available_now(table: str) -> None:
    tail = LogTail(deltalog.Table(table))
    start = tail.start_position(starting_version=0)
    assert tail.latest_position(start, None, end_version=1) == StreamPosition(2)
    assert tail.latest_position(StreamPosition(2), None, end_version=1) == StreamPosition(2)


def test_offsets_round_trip_and_belong_to_one_table(table: str) -> None:
    tail = LogTail(deltalog.Table(table))
    pos = StreamPosition(2, 1, True)
    offset = pos.to_offset(tail.table_id)
    assert StreamPosition.from_offset(offset, table_id=tail.table_id) == pos
    with pytest.raises(DeltaError, match="DIFFERENT_DELTA_TABLE"):
        StreamPosition.from_offset(offset, table_id="another-id")
    with pytest.raises(InvalidArgumentError, match="format 2"):
        StreamPosition.from_offset({**offset, "sourceVersion": 2})
    assert StreamPosition(2, 5, True) < StreamPosition(3, -1, False) < StreamPosition(3, 0, False)


def test_schema_change_mid_stream_is_an_error(table: str) -> None:
    tail = LogTail(deltalog.Table(table))
    pos = tail.latest_position(tail.start_position(), None)
    evolved = deltalog.write_table(table, pa.table({"id": pa.array([5], pa.int64()), "extra": ["x"]}),
                                   mode="append", schema_mode="merge").version
    with pytest.raises(SchemaError, match=rf"version {evolved}.*column extra"):
        tail.latest_position(pos, None)
    # A stream started after the change reads the older commits with the newer schema.
    fresh = LogTail(deltalog.Table(table))
    start = fresh.start_position(starting_version=0)
    assert len(fresh.files_between(start, fresh.latest_position(start, None))) == 4


def test_older_versions_a_rename_left_behind_name_the_way_out(tmp_path: Path) -> None:
    """A stream started from before a column-mapping rename reads with the newer schema: the error says to
    start after the rename, not to restart (which meets the same versions again)."""
    loc = str(tmp_path / "t")
    deltalog.write_table(loc, pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}),
                         properties={"delta.columnMapping.mode": "name"})
    renamed = deltalog.Table(loc).rename_column("v", "w").version
    tail = LogTail(deltalog.Table(loc))
    start = tail.start_position(starting_version=0)
    with pytest.raises(SchemaError, match=rf"DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE.*schema of version {renamed}, "
                       r"and version 0.*column v.*startingVersion"):
        tail.latest_position(start, None)
    after = tail.start_position(starting_version=renamed)
    assert tail.files_between(after, tail.latest_position(after, None)) == []


def test_schema_change_reasons() -> None:
    def md(fields: str, parts: tuple[str, ...] = ()) -> Metadata:
        return Metadata(id="t", format={"provider": "parquet"}, partitionColumns=parts,
                        schemaString='{"type":"struct","fields":[' + fields + "]}")

    a = '{"name":"a","type":"long","nullable":true,"metadata":{}}'
    a_int = '{"name":"a","type":"integer","nullable":true,"metadata":{}}'
    a_strict = '{"name":"a","type":"long","nullable":false,"metadata":{}}'
    b = '{"name":"b","type":"string","nullable":true,"metadata":{}}'
    assert schema_change(md(a), md(f"{a},{b}")) is None
    assert "changed type" in (schema_change(md(a_int), md(a)) or "")
    assert "nullable" in (schema_change(md(a), md(a_strict)) or "")
    assert "partition columns" in (schema_change(md(a, ("a",)), md(a)) or "")


def test_cleaned_up_log_is_data_loss(table: str) -> None:
    t = deltalog.Table(table)
    t.checkpoint()
    os.remove(os.path.join(table, "_delta_log", f"{0:020d}.json"))
    tail = LogTail(deltalog.Table(table))
    with pytest.raises(DeltaError, match=r"DELTA_STREAMING_DATA_LOSS.*version 0"):
        tail.latest_position(StreamPosition(0), None)
    lenient = LogTail(deltalog.Table(table), options=TailOptions(fail_on_data_loss=False))
    end = lenient.latest_position(StreamPosition(0), None)
    assert _ids(lenient, StreamPosition(0), end) == [10, 11, 12, 20, 21, 22]


def test_partitioned_files_read_with_log_partition_values(tmp_path: Path) -> None:
    loc = str(tmp_path / "t")
    deltalog.write_table(loc, pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"])
    tail = LogTail(deltalog.Table(loc))
    start = tail.start_position()
    snap = file_reader_snapshot(tail.table.store, tail.protocol, tail.metadata, version=0, table=tail.where)
    rows = [read_file_rows(snap, f.add).to_pylist() for f in tail.files_between(start, tail.latest_position(start))]
    assert sorted(r for rs in rows for r in (tuple(x.values()) for x in rs)) == [(1, "a"), (2, "b")]


def test_admission_limit_validation() -> None:
    with pytest.raises(InvalidArgumentError, match="max_files"):
        AdmissionLimit(max_files=0)
    with pytest.raises(InvalidArgumentError, match="max_bytes"):
        AdmissionLimit(max_bytes=-1)


def test_change_feed_units(tmp_path: Path, compact_copy: Callable[[str], int]) -> None:
    loc = str(tmp_path / "t")
    props = {"delta.enableChangeDataFeed": "true"}
    deltalog.write_table(loc, pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"], properties=props)
    deleted = deltalog.Table(loc).delete([("p", "=", "a")]).version
    compact_copy(loc)  # no data change: no change rows
    tail = LogTail(deltalog.Table(loc), change_feed=True)
    start = tail.start_position(starting_version=0)
    end = tail.latest_position(start, None)
    planned = [(f.version, f.add["kind"], f.add["changeType"]) for f in tail.files_between(start, end)]
    assert planned == [(0, "add", "insert"), (0, "add", "insert"), (deleted, "remove", "delete")]
    stamps = {f.version: f.add["commitTimestamp"] for f in tail.files_between(start, end)}
    assert stamps[0] <= stamps[deleted]
    # The default start: the snapshot's rows as inserts of its version, then the changes after it.
    snap_start = tail.start_position()
    files = tail.files_between(snap_start, tail.latest_position(snap_start, None))
    assert [(f.is_snapshot, f.add["changeType"]) for f in files] == [(True, "insert")]
    # A table without the change data feed cannot be streamed as one.
    plain = str(tmp_path / "plain")
    _append(plain, [1])
    with pytest.raises(DeltaError, match="DELTA_MISSING_CHANGE_DATA"):
        no_cdf = LogTail(deltalog.Table(plain), change_feed=True)
        no_cdf.latest_position(no_cdf.start_position(), None)
