from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from logbuilder import add, commit_info, metadata, new_table, protocol, remove, write_commit

import deltalog
from deltalog.errors import (
    CorruptLogError,
    InvalidTableError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.log.files import ADD_SCHEMA, REMOVE_SCHEMA
from deltalog.log.segment import build_segment
from deltalog.protocol.actions import Add
from deltalog.storage import InMemoryLogStore, LocalLogStore


@pytest.fixture
def store() -> InMemoryLogStore:
    return InMemoryLogStore()


def table(store: InMemoryLogStore) -> deltalog.Table:
    return deltalog.Table("memory://t", store=store)


def paths(snap: deltalog.Snapshot) -> list[str]:
    return sorted(snap.add_files().column("path").to_pylist())


def test_replay_adds_removes_and_readds(store: InMemoryLogStore) -> None:
    new_table(store, ["part"])
    write_commit(store, 1, add("part=a/1.parquet", "a"), add("part=b/2.parquet", "b"))
    write_commit(store, 2, remove("part=a/1.parquet"), add("part=a/3.parquet", "a"))
    write_commit(store, 3, add("part=a/1.parquet", "a"))
    t = table(store)
    snap = t.snapshot()
    assert snap.version == 3
    assert paths(snap) == ["part=a/1.parquet", "part=a/3.parquet", "part=b/2.parquet"]
    assert paths(t.snapshot(2)) == ["part=a/3.parquet", "part=b/2.parquet"]
    assert t.snapshot(2).tombstones().column("path").to_pylist() == ["part=a/1.parquet"]
    assert snap.partition_columns == ("part",)
    files = snap.add_files()
    assert files.schema == ADD_SCHEMA
    pv = {r["path"]: dict(r["partitionValues"]) for r in files.to_pylist()}
    assert pv["part=b/2.parquet"] == {"part": "b"}


def test_deletion_vector_updates_are_keyed_by_path_and_dv(store: InMemoryLogStore) -> None:
    new_table(store)
    dv1 = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@fTyL", "sizeInBytes": 20,
           "cardinality": 1}
    write_commit(store, 1, add("f.parquet"))
    write_commit(store, 2, remove("f.parquet"), add("f.parquet", deletionVector=dv1))
    snap = table(store).snapshot()
    rows = snap.add_files().to_pylist()
    assert len(rows) == 1 and rows[0]["deletionVector"]["cardinality"] == 1


def test_txn_domain_metadata_and_latest_metadata_win(store: InMemoryLogStore) -> None:
    new_table(store)
    write_commit(store, 1, {"txn": {"appId": "etl", "version": 3}},
                 {"domainMetadata": {"domain": "d1", "configuration": "a", "removed": False}})
    write_commit(store, 2, {"txn": {"appId": "etl", "version": 4}}, metadata(["part"]),
                 {"domainMetadata": {"domain": "d1", "configuration": "a", "removed": True}},
                 {"domainMetadata": {"domain": "d2", "configuration": "b", "removed": False}})
    snap = table(store).snapshot()
    assert snap.txn_version("etl") == 4
    assert snap.txn_version("other") is None
    assert snap.partition_columns == ("part",)
    assert snap.domains == {"d2": "b"}
    assert table(store).snapshot(1).domain_metadata("d1") == "a"


def test_commits_read_together_split_as_read_one_by_one(store: InMemoryLogStore) -> None:
    """read_commits_each (a writer catching up with several winners) parses the add/remove lines of all
    files at once and gives each file exactly what read_commit gives it."""
    from deltalog.log.reader import read_commit, read_commits_each
    from deltalog.log.segment import list_log

    new_table(store, ["part"])
    write_commit(store, 1, commit_info(), add("part=a/1.parquet", "a"), {"txn": {"appId": "etl", "version": 3}})
    write_commit(store, 2, commit_info("DELETE"), remove("part=a/1.parquet"), add("part=b/2.parquet", "b"),
                 {"domainMetadata": {"domain": "d1", "configuration": "a", "removed": False}})
    write_commit(store, 3, commit_info("SET TBLPROPERTIES"), metadata(["part"]))
    write_commit(store, 4, '{ "add" : {"path":"part=c/3.parquet","partitionValues":{"part":"c"},"size":1,'
                 '"modificationTime":1,"dataChange":true}}', add("part=c/4.parquet", "c"))
    files = [f for f in list_log(store, 1) if f.kind == "commit"]
    each = read_commits_each(store, files, table="t")
    assert [fa.version for fa in each] == [1, 2, 3, 4]
    for f, fa in zip(files, each, strict=True):
        one = read_commit(store, f, table="t")
        assert fa.adds.equals(one.adds) and fa.removes.equals(one.removes)
        assert fa.others == one.others and fa.commit_infos == one.commit_infos
        for got, want in ((fa.add_order, one.add_order), (fa.remove_order, one.remove_order)):
            if want is not None and len(want):  # same line order within the file
                assert got is not None and list(np.argsort(got)) == list(np.argsort(want))
    assert [len(fa.adds) for fa in each] == [1, 1, 0, 2] and [len(fa.removes) for fa in each] == [0, 1, 0, 0]


def test_commit_with_odd_spacing_and_unknown_actions(store: InMemoryLogStore) -> None:
    new_table(store)
    write_commit(store, 1, '{ "add" : {"path":"x.parquet","partitionValues":{},"size":1,'
                 '"modificationTime":1,"dataChange":true}}', '{"futureAction":{"a":1}}', "")
    assert paths(table(store).snapshot()) == ["x.parquet"]


def test_absolute_and_relative_paths_of_one_file_reconcile(store: InMemoryLogStore) -> None:
    new_table(store)
    write_commit(store, 1, add("/abs/dir/f%20x.parquet"))
    write_commit(store, 2, remove("file:///abs/dir/f%20x.parquet"))
    assert paths(table(store).snapshot()) == []


# ------------------------------------------------------------------------------------------ bad input


def test_truncated_commit_names_file_and_line(store: InMemoryLogStore) -> None:
    new_table(store)
    write_commit(store, 1, add("a.parquet"), '{"add":{"path":"b.parquet","partitionValues":{}')
    with pytest.raises(CorruptLogError) as err:
        table(store).snapshot()
    msg = str(err.value)
    assert "not valid JSON" in msg and "version 1" in msg and "00000000000000000001.json" in msg
    assert "line 2" in msg


def test_wrong_field_type_names_line(store: InMemoryLogStore) -> None:
    new_table(store)
    write_commit(store, 1, add("a.parquet"), add("b.parquet", size="big"))
    with pytest.raises(CorruptLogError, match=r"'add.size' must be of JSON type int.*line 2"):
        table(store).snapshot()


def test_missing_protocol_and_metadata(store: InMemoryLogStore) -> None:
    write_commit(store, 0, protocol(), add("a.parquet"))
    with pytest.raises(InvalidTableError, match="no metaData action"):
        table(store).snapshot()
    other = InMemoryLogStore()
    write_commit(other, 0, metadata())
    with pytest.raises(InvalidTableError, match="no protocol action"):
        table(other).snapshot()


def test_missing_path_and_no_delta_log(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError, match="path does not exist"):
        deltalog.Table(tmp_path / "nope").snapshot()
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "x.parquet").write_bytes(b"")
    with pytest.raises(TableNotFoundError, match="no _delta_log"):
        deltalog.Table(tmp_path / "plain").snapshot()
    (tmp_path / "empty" / "_delta_log").mkdir(parents=True)
    (tmp_path / "empty" / "_delta_log" / "00000000000000000000.crc").write_text("x")
    with pytest.raises(TableNotFoundError, match="no commit or checkpoint"):
        deltalog.Table(tmp_path / "empty").snapshot()


def test_gap_in_versions(store: InMemoryLogStore) -> None:
    new_table(store)
    write_commit(store, 1, add("a.parquet"))
    write_commit(store, 3, add("b.parquet"))
    with pytest.raises(InvalidTableError, match=r"not contiguous.*\[2\]"):
        table(store).snapshot()


def test_unsupported_reader_feature_is_named(store: InMemoryLogStore) -> None:
    write_commit(store, 0, protocol(3, 7, readerFeatures=["madeUpFeature"], writerFeatures=[]), metadata())
    with pytest.raises(UnsupportedFeatureError, match="madeUpFeature") as err:
        table(store).snapshot()
    assert err.value.feature == "madeUpFeature"


# ------------------------------------------------------------------------------------ checkpoints


_SM = pa.map_(pa.string(), pa.string())
_CHECKPOINT_TYPES = {
    "add": pa.struct(list(ADD_SCHEMA)),
    "remove": pa.struct(list(REMOVE_SCHEMA)),
    "metaData": pa.struct([
        ("id", pa.string()), ("format", pa.struct([("provider", pa.string()), ("options", _SM)])),
        ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())),
        ("configuration", _SM), ("createdTime", pa.int64()),
    ]),
    "protocol": pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32())]),
}


def _write_checkpoint(store: LocalLogStore, version: int, rows: list[dict[str, Any]],
                      name: str | None = None) -> None:
    """A parquet checkpoint with one column per action type (what the protocol's schema holds)."""
    data: dict[str, list[Any]] = {c: [] for c in _CHECKPOINT_TYPES}
    for r in rows:
        (key, body), = r.items()
        body = dict(body)
        for m in ("partitionValues", "configuration"):
            if m in body:
                body[m] = list(body[m].items())
        if "format" in body:
            body["format"] = {"provider": "parquet", "options": []}
        for c in data:
            data[c].append(body if c == key else None)
    t = pa.table({c: pa.array(v, _CHECKPOINT_TYPES[c]) for c, v in data.items()})
    pq.write_table(t, store.full_path(f"_delta_log/{name or f'{version:020d}.checkpoint.parquet'}"))


def test_checkpoint_then_commits_and_stale_or_corrupt_last_checkpoint(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    new_table(store)
    write_commit(store, 1, add("a.parquet"))
    write_commit(store, 2, add("b.parquet"))
    _write_checkpoint(store, 2, [protocol(), metadata(), add("a.parquet"), add("b.parquet")])
    write_commit(store, 3, remove("a.parquet"), add("c.parquet"))
    t = deltalog.Table(tmp_path)
    assert build_segment(store, table="t").checkpoint_version == 2
    assert paths(t.snapshot()) == ["b.parquet", "c.parquet"]
    # a corrupt hint is ignored, a stale one too
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text("{not json")
    assert paths(t.snapshot()) == ["b.parquet", "c.parquet"]
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": 1, "size": 3}))
    assert build_segment(store, table="t").checkpoint_version == 2
    # a hint pointing at a checkpoint that does not exist falls back to listing
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": 3, "size": 3}))
    assert paths(t.snapshot()) == ["b.parquet", "c.parquet"]


def test_incomplete_multipart_checkpoint_is_not_used(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    new_table(store)
    write_commit(store, 1, add("a.parquet"))
    _write_checkpoint(store, 1, [protocol(), metadata(), add("a.parquet")],
                      name="00000000000000000001.checkpoint.0000000001.0000000002.parquet")
    seg = build_segment(store, table="t")
    assert seg.checkpoint_version is None and len(seg.commits) == 2
    assert paths(deltalog.Table(tmp_path).snapshot()) == ["a.parquet"]


def test_unreadable_checkpoint_falls_back_to_commits(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    new_table(store)
    write_commit(store, 1, add("a.parquet"))
    (tmp_path / "_delta_log" / "00000000000000000001.checkpoint.parquet").write_bytes(b"garbage")
    assert paths(deltalog.Table(tmp_path).snapshot()) == ["a.parquet"]


def test_unreadable_checkpoint_without_commits_is_a_clear_error(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / "00000000000000000005.checkpoint.parquet").write_bytes(b"garbage")
    write_commit(store, 6, add("a.parquet"))
    with pytest.raises(CorruptLogError, match="not readable parquet") as err:
        deltalog.Table(tmp_path).snapshot()
    assert "00000000000000000005.checkpoint.parquet" in str(err.value)


def test_cleaned_up_versions(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    new_table(store)
    write_commit(store, 1, add("a.parquet"))
    write_commit(store, 2, add("b.parquet"))
    _write_checkpoint(store, 2, [protocol(), metadata(), add("a.parquet"), add("b.parquet")])
    (tmp_path / "_delta_log" / "00000000000000000000.json").unlink()
    (tmp_path / "_delta_log" / "00000000000000000001.json").unlink()
    t = deltalog.Table(tmp_path)
    assert paths(t.snapshot(2)) == ["a.parquet", "b.parquet"]
    with pytest.raises(VersionNotFoundError, match="cannot reconstruct version 1"):
        t.snapshot(1)


# ------------------------------------------------------------------------------------- time travel


def test_time_travel_by_version_and_timestamp(tmp_path: Path) -> None:
    import os

    store = LocalLogStore(str(tmp_path))
    new_table(store)
    write_commit(store, 1, add("a.parquet"))
    write_commit(store, 2, add("b.parquet"))
    base = dt.datetime(2024, 5, 1, tzinfo=dt.UTC).timestamp()
    for v in range(3):
        os.utime(tmp_path / "_delta_log" / f"{v:020d}.json", (base + 60 * v, base + 60 * v))
    t = deltalog.Table(tmp_path)
    assert t.snapshot(timestamp="2024-05-01T00:01:30Z").version == 1
    assert t.snapshot(timestamp=dt.datetime(2024, 5, 1, 0, 2)).version == 2
    assert t.snapshot(timestamp=int((base + 60) * 1000)).version == 1
    with pytest.raises(VersionNotFoundError, match="before the earliest available commit"):
        t.snapshot(timestamp="2024-04-30T00:00:00Z")
    with pytest.raises(VersionNotFoundError, match="after the latest commit"):
        t.snapshot(timestamp="2024-05-02T00:00:00Z")
    with pytest.raises(VersionNotFoundError, match="latest version is 2"):
        t.snapshot(7)
    with pytest.raises(deltalog.InvalidArgumentError):
        t.snapshot(1, timestamp="2024-05-01")
    with pytest.raises(deltalog.InvalidArgumentError, match="not a timestamp"):
        t.snapshot(timestamp="yesterday")


def test_in_commit_timestamps_are_used_when_enabled(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    write_commit(store, 0, commit_info(inCommitTimestamp=1000), protocol(3, 7, readerFeatures=[],
                 writerFeatures=["inCommitTimestamp"]),
                 metadata(**{"delta.enableInCommitTimestamps": "true",
                             "delta.inCommitTimestampEnablementVersion": "0"}))
    write_commit(store, 1, commit_info(inCommitTimestamp=5000), add("a.parquet"))
    t = deltalog.Table(tmp_path)
    assert t.version_at(4999) == 0
    assert t.version_at(5000) == 1


def test_history_newest_first(store: InMemoryLogStore) -> None:
    new_table(store)
    write_commit(store, 1, commit_info("DELETE", userMetadata="hi"), remove("a.parquet"))
    h = table(store).history()
    assert [(e["version"], e["operation"]) for e in h] == [(1, "DELETE"), (0, "CREATE TABLE")]
    assert h[0]["userMetadata"] == "hi"
    assert len(table(store).history(limit=1)) == 1


def test_update_reads_only_new_commits_and_matches_a_full_load(store: InMemoryLogStore) -> None:
    new_table(store, ["part"])
    write_commit(store, 1, add("part=a/1.parquet", "a"), {"txn": {"appId": "x", "version": 1}})
    t = table(store)
    base = t.snapshot()
    assert t.update(base) is base  # nothing new
    write_commit(store, 2, remove("part=a/1.parquet"), add("part=b/2.parquet", "b"),
                 {"domainMetadata": {"domain": "d", "configuration": "c", "removed": False}})
    write_commit(store, 3, {"txn": {"appId": "x", "version": 2}}, metadata(["part"], **{"k": "v"}),
                 add("part=a/1.parquet", "a"))
    updated, full = t.update(base), t.snapshot()
    assert updated.version == full.version == 3
    assert paths(updated) == paths(full) == ["part=a/1.parquet", "part=b/2.parquet"]
    assert updated.tombstones().column("path").to_pylist() == full.tombstones().column("path").to_pylist()
    assert updated.app_transactions == full.app_transactions == {"x": 2}
    assert updated.domains == full.domains == {"d": "c"}
    assert updated.properties == {"k": "v"}
    assert updated.commit_info is not None or full.commit_info is None


def test_table_object_follows_new_commits_and_recreated_tables(tmp_path: Path) -> None:
    import shutil

    store = LocalLogStore(str(tmp_path))
    new_table(store)
    write_commit(store, 1, add("a.parquet"))
    write_commit(store, 2, add("b.parquet"))
    t = deltalog.Table(tmp_path)
    assert t.snapshot().version == 2
    write_commit(store, 3, remove("a.parquet"))
    assert paths(t.snapshot()) == ["b.parquet"]  # only version 3 is read on top of the cached state
    shutil.rmtree(tmp_path / "_delta_log")
    new_table(store)
    write_commit(store, 1, add("c.parquet"))
    snap = t.snapshot()  # the cached version 3 no longer exists: a full load, not a stale answer
    assert snap.version == 1 and paths(snap) == ["c.parquet"]
    shutil.rmtree(tmp_path / "_delta_log")  # written again up to the same version: version 1 is another file
    new_table(store)
    write_commit(store, 1, add("d-longer-name.parquet"))
    snap = t.snapshot()
    assert snap.version == 1 and paths(snap) == ["d-longer-name.parquet"]
    shutil.rmtree(tmp_path / "_delta_log")  # the same size: told apart by its modification time
    new_table(store)
    write_commit(store, 1, add("e-longer-name.parquet"))
    name = tmp_path / "_delta_log" / f"{1:020d}.json"
    os.utime(name, ns=(name.stat().st_atime_ns, name.stat().st_mtime_ns + 5_000_000))
    snap = t.snapshot()
    assert snap.version == 1 and paths(snap) == ["e-longer-name.parquet"]


class _CountingStore(InMemoryLogStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def read(self, path: str) -> bytes:
        self.reads.append(path)
        return super().read(path)


def test_a_committing_table_keeps_its_own_commit_and_reads_nothing_again() -> None:
    from deltalog.txn.operations import Write

    store = _CountingStore()
    new_table(store)
    t = table(store)
    t.snapshot()
    txn = t.transaction(Write(mode="Append"))
    txn.add_actions([Add(path="x.parquet", partitionValues={}, size=1, modificationTime=1, dataChange=True)])
    assert txn.commit().version == 1
    store.reads.clear()
    snap = t.snapshot()
    assert snap.version == 1 and paths(snap) == ["x.parquet"]
    assert store.reads == []  # the writer's snapshot was kept: no commit file is read again
    write_commit(store, 2, add("y.parquet"))  # another writer
    assert paths(t.snapshot()) == ["x.parquet", "y.parquet"]
    assert store.reads == ["_delta_log/00000000000000000002.json"]
