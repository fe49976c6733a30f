from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from logbuilder import add, commit_info, metadata, new_table, protocol, remove, write_commit

import deltalog
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.log.checkpoint_writer import (
    build_checkpoint,
    canonical_json,
    json_checksum,
    part_of,
    spark_hash,
    write_checkpoint,
    write_last_checkpoint,
)
from deltalog.log.cleanup import parse_interval_ms
from deltalog.log.segment import read_last_checkpoint
from deltalog.log.stats_parsed import parse_stats
from deltalog.storage import InMemoryLogStore, LocalLogStore, LogStore

CORPUS = Path("/work/shared/conformance")
DAY = 24 * 3600 * 1000
NOW = 1_700_000_000_000


def clock() -> int:
    return NOW


def table(store: LogStore) -> deltalog.Table:
    return deltalog.Table("memory://t", store=store)


def drop_commits(store: InMemoryLogStore, upto: int) -> None:
    for v in range(upto + 1):
        store.delete(f"_delta_log/{v:020d}.json")


def state(snap: deltalog.Snapshot) -> dict[str, Any]:
    files = snap.add_files().sort_by("path").to_pylist()
    tombs = snap.tombstones().sort_by("path").to_pylist()
    for t in tombs:  # checkpoints keep no stats/tags on tombstones
        t["stats"] = t["tags"] = None
    return {
        "files": files,
        "tombstones": tombs,
        "txns": dict(snap.app_transactions),
        "domains": dict(snap.domains),
        "metadata": snap.metadata,
        "protocol": snap.protocol,
    }


def busy_table(store: InMemoryLogStore, **conf: str) -> None:
    write_commit(store, 0, commit_info("CREATE TABLE"), protocol(), metadata(["part"], **conf))
    write_commit(
        store,
        1,
        add("part=a/1.parquet", "a", stats='{"numRecords":3,"minValues":{"id":1},"maxValues":{"id":9}}'),
        add("part=b/2.parquet", "b", tags={"k": "v"}, baseRowId=0, defaultRowCommitVersion=1),
        add("part=a/3.parquet", "a", clusteringProvider="liquid"),
        {"txn": {"appId": "etl", "version": 7, "lastUpdated": 5}},
    )
    write_commit(
        store,
        2,
        remove(
            "part=a/1.parquet",
            deletionTimestamp=NOW - DAY,
            partitionValues={"part": "a"},
            size=10,
            extendedFileMetadata=True,
        ),
        remove("old.parquet", deletionTimestamp=NOW - 30 * DAY),
        {"txn": {"appId": "etl", "version": 8}},
        {"txn": {"appId": "other", "version": 1}},
    )


def test_round_trip_single_file() -> None:
    store = InMemoryLogStore(clock=clock)
    busy_table(store)
    before = table(store).snapshot()
    result = write_checkpoint(before, clock=clock)
    assert result.paths == ("_delta_log/00000000000000000002.checkpoint.parquet",)
    assert (result.num_add_files, result.num_remove_files, result.parts, result.written) == (2, 1, None, True)
    assert result.num_actions == 2 + 2 + 1 + 2  # protocol, metaData, adds, tombstone, txns
    drop_commits(store, 2)
    after = table(store).snapshot()
    assert after.segment.checkpoint_version == 2 and after.version == 2
    expected = state(before)
    expected["tombstones"] = [t for t in expected["tombstones"] if t["path"] != "old.parquet"]
    assert state(after) == expected


def test_parquet_layout_matches_the_checkpoint_schema() -> None:
    store = InMemoryLogStore(clock=clock)
    busy_table(store)
    write_checkpoint(table(store).snapshot(), clock=clock)
    pf = pq.ParquetFile(pa.BufferReader(store.read("_delta_log/00000000000000000002.checkpoint.parquet")))
    schema = pf.schema_arrow
    assert schema.names == ["txn", "add", "remove", "metaData", "protocol"]  # no domains in use
    assert all(f.nullable for f in schema)
    add_type = schema.field("add").type
    assert [add_type.field(i).name for i in range(add_type.num_fields)] == [
        "path",
        "partitionValues",
        "size",
        "modificationTime",
        "dataChange",
        "stats",
        "tags",
        "deletionVector",
        "baseRowId",
        "defaultRowCommitVersion",
        "clusteringProvider",
    ]
    remove_type = schema.field("remove").type
    names = [remove_type.field(i).name for i in range(remove_type.num_fields)]
    assert "stats" not in names and "tags" not in names and "deletionTimestamp" in names
    assert pa.types.is_map(add_type.field("partitionValues").type)
    proto_type = schema.field("protocol").type
    assert proto_type.field("minReaderVersion").type == pa.int32()
    rows = pf.read().to_pylist()
    assert [next(k for k, v in r.items() if v is not None) for r in rows[:2]] == ["protocol", "metaData"]
    md = rows[1]["metaData"]
    assert md["format"] == {"provider": "parquet", "options": []}
    assert md["partitionColumns"] == ["part"] and md["configuration"] == []
    assert rows[0]["protocol"]["readerFeatures"] is None
    added = {r["add"]["path"]: r["add"] for r in rows if r["add"]}
    assert added["part=b/2.parquet"]["tags"] == [("k", "v")]
    assert added["part=b/2.parquet"]["defaultRowCommitVersion"] == 1
    assert added["part=a/3.parquet"]["clusteringProvider"] == "liquid"


def test_last_checkpoint_content_and_checksum() -> None:
    store = InMemoryLogStore(clock=clock)
    busy_table(store)
    result = write_checkpoint(table(store).snapshot(), clock=clock)
    hint = json.loads(store.read("_delta_log/_last_checkpoint"))
    size = store.stat(result.paths[0]).size
    assert hint == {"version": 2, "size": 7, "sizeInBytes": size, "numOfAddFiles": 2, "checksum": hint["checksum"]}
    assert hint["checksum"] == json_checksum(hint)
    assert read_last_checkpoint(store, "t") is not None
    assert result.last_checkpoint == hint


def test_json_checksum_follows_the_spec_example() -> None:
    sample = {
        "k0": "'v 0'",
        "checksum": "adsaskfljadfkjadfkj",
        "k1": {"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]},
    }
    assert canonical_json(sample) == (
        '"k0"="%27v%200%27","k1"+"k2"=2,"k1"+"k3"+0="v3","k1"+"k3"+1+0=1,"k1"+"k3"+1+1=2,'
        '"k1"+"k3"+2+"k4"="v4","k1"+"k3"+2+"k5"+0="v5","k1"+"k3"+2+"k5"+1="v6","k1"+"k3"+2+"k5"+2="v7"'
    )
    assert json_checksum(sample) == "6a92d155a59bf2eecbd4b4ec7fd1f875"
    assert canonical_json({"a": True, "b": None, "c": "é/"}) == '"a"=true,"b"=null,"c"="%C3%A9%2F"'


@pytest.mark.skipif(not CORPUS.is_dir(), reason="conformance corpus not available")
def test_json_checksum_matches_real_last_checkpoint_files() -> None:
    files = [p for p in CORPUS.rglob("_last_checkpoint") if b'"checksum"' in p.read_bytes()]
    assert files
    for p in files:
        obj = json.loads(p.read_text())
        assert json_checksum(obj) == obj["checksum"], p


def test_idempotent_and_never_regresses_the_hint() -> None:
    store = InMemoryLogStore(clock=clock)
    busy_table(store)
    first = write_checkpoint(table(store).snapshot(), clock=clock)
    data = store.read(first.paths[0])
    again = write_checkpoint(table(store).snapshot(), clock=clock)
    assert not again.written and again.paths == first.paths and again.size_in_bytes == first.size_in_bytes
    assert store.read(first.paths[0]) == data
    older = write_checkpoint(table(store).snapshot(1), clock=clock)
    assert older.written and older.last_checkpoint is None
    assert json.loads(store.read("_delta_log/_last_checkpoint"))["version"] == 2
    assert write_last_checkpoint(store, {"version": 1, "size": 1}) is False


def test_expired_tombstones_are_dropped() -> None:
    store = InMemoryLogStore(clock=clock)
    busy_table(store, **{"delta.deletedFileRetentionDuration": "interval 2 hours"})
    snap = table(store).snapshot()
    t = build_checkpoint(snap, clock=clock)
    assert t.column("remove").null_count == t.num_rows
    assert write_checkpoint(snap, clock=lambda: NOW - DAY + 1).num_remove_files == 1
    store2 = InMemoryLogStore(clock=clock)
    busy_table(store2)
    write_commit(store2, 3, remove("part=a/3.parquet"))  # no deletionTimestamp: expired at once
    res = write_checkpoint(table(store2).snapshot(), clock=lambda: NOW + 8 * DAY)
    assert res.num_remove_files == 0


def test_multi_part_round_trip_and_hash_partitioning() -> None:
    store = InMemoryLogStore(clock=clock)
    new_table(store, ["part"])
    write_commit(store, 1, *[add(f"part={i % 3}/f-{i:04d}.parquet", str(i % 3)) for i in range(200)])
    write_commit(store, 2, *[remove(f"part=0/f-{i:04d}.parquet", deletionTimestamp=NOW) for i in range(0, 30, 3)])
    before = table(store).snapshot()
    result = write_checkpoint(before, parts=3, clock=clock)
    assert result.parts == 3 and len(result.paths) == 3
    assert [p.rsplit("/", 1)[1] for p in result.paths] == [
        f"00000000000000000002.checkpoint.{i:010d}.0000000003.parquet" for i in (1, 2, 3)
    ]
    hint = json.loads(store.read("_delta_log/_last_checkpoint"))
    assert hint["parts"] == 3 and hint["numOfAddFiles"] == 190 and hint["size"] == 2 + 190 + 10
    assert hint["sizeInBytes"] == sum(store.stat(p).size for p in result.paths)
    for i, path in enumerate(result.paths):
        t = pq.read_table(pa.BufferReader(store.read(path)))
        for col in ("add", "remove"):
            rows = t.column(col).combine_chunks()
            rows = rows.filter(rows.is_valid())
            assert (part_of(rows.field("path"), None, 3) == i).all()
        if i == 42 % 3:
            assert t.column("protocol").null_count == t.num_rows - 1
    drop_commits(store, 2)
    after = table(store).snapshot()
    assert len(after.segment.checkpoint) == 3
    assert state(after) == state(before)


def test_multi_part_chosen_automatically_above_part_size() -> None:
    store = InMemoryLogStore(clock=clock)
    new_table(store)
    write_commit(store, 1, *[add(f"f-{i}.parquet") for i in range(25)])
    result = write_checkpoint(table(store).snapshot(), part_size=10, clock=clock)
    assert result.parts == 3


@pytest.mark.skipif(not CORPUS.is_dir(), reason="conformance corpus not available")
def test_spark_hash_matches_spark_written_multi_part_checkpoints() -> None:
    for name in (
        "kernel-rs-golden/multi-part-checkpoint/delta",
        "delta-kernel-defaults/kernel-pagination-multi-part-checkpoints",
    ):
        parts = sorted((CORPUS / name / "_delta_log").glob("*.checkpoint.0*.parquet"))
        assert parts
        for i, part in enumerate(parts):
            adds = pq.read_table(part, columns=["add"]).column("add").combine_chunks()
            adds = adds.filter(adds.is_valid())
            assert (part_of(adds.field("path"), None, len(parts)) == i).all(), part


def test_spark_hash_basics() -> None:
    h = spark_hash(pa.array(["", "a", "abcd", "abcde", None, "ü"]))
    assert h.dtype == np.int32 and h[4] == 42
    assert len(set(h.tolist())) == 6
    assert (spark_hash(pa.array(["abcde"]), h[:1]) != spark_hash(pa.array(["abcde"]))).all()


def test_write_stats_as_json_false_drops_stats() -> None:
    store = InMemoryLogStore(clock=clock)
    busy_table(store, **{"delta.checkpoint.writeStatsAsJson": "false"})
    t = build_checkpoint(table(store).snapshot(), clock=clock)
    add_type = t.schema.field("add").type
    assert add_type.get_field_index("stats") == -1


def test_domains_and_protocol_features() -> None:
    store = InMemoryLogStore(clock=clock)
    feats = {"readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors", "domainMetadata"]}
    write_commit(store, 0, protocol(3, 7, **feats), metadata())
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 4,
        "sizeInBytes": 40,
        "cardinality": 6,
    }
    write_commit(
        store,
        1,
        add("a.parquet", deletionVector=dv),
        {"domainMetadata": {"domain": "d1", "configuration": "{}", "removed": False}},
        {"domainMetadata": {"domain": "d2", "configuration": "x", "removed": False}},
    )
    write_commit(store, 2, {"domainMetadata": {"domain": "d2", "configuration": "x", "removed": True}})
    before = table(store).snapshot()
    t = build_checkpoint(before, clock=clock)
    assert "domainMetadata" in t.column_names
    rows = t.to_pylist()
    assert rows[0]["protocol"]["writerFeatures"] == ["deletionVectors", "domainMetadata"]
    assert [r["domainMetadata"]["domain"] for r in rows if r["domainMetadata"]] == ["d1"]
    write_checkpoint(before, parts=2, clock=clock)
    drop_commits(store, 2)
    after = table(store).snapshot()
    assert state(after) == state(before)
    assert after.add_files().column("deletionVector").to_pylist()[0]["cardinality"] == 6


def test_v2_checkpoint_tables_get_checkpoint_metadata_and_no_multi_part() -> None:
    store = InMemoryLogStore(clock=clock)
    feats = {"readerFeatures": ["v2Checkpoint"], "writerFeatures": ["v2Checkpoint"]}
    write_commit(store, 0, protocol(3, 7, **feats), metadata(), add("a.parquet"))
    snap = table(store).snapshot()
    with pytest.raises(UnsupportedFeatureError, match="multi-part"):
        write_checkpoint(snap, parts=2, clock=clock)
    result = write_checkpoint(snap, part_size=1, clock=clock)  # a V2 checkpoint: UUID-named, one sidecar
    assert result.parts is None and ".checkpoint." in result.paths[0] and len(result.paths) == 2
    rows = pq.read_table(pa.BufferReader(store.read(result.paths[0]))).to_pylist()
    assert [r["checkpointMetadata"] for r in rows if r["checkpointMetadata"]] == [{"version": 0, "tags": None}]
    assert [r["sidecar"]["path"] for r in rows if r["sidecar"]] == [result.paths[1].rsplit("/", 1)[-1]]
    drop_commits(store, 0)
    assert table(store).snapshot().num_files() == 1


def test_invalid_arguments() -> None:
    store = InMemoryLogStore(clock=clock)
    new_table(store)
    snap = table(store).snapshot()
    with pytest.raises(InvalidArgumentError):
        write_checkpoint(snap, parts=0)
    with pytest.raises(InvalidArgumentError):
        write_checkpoint(snap, part_size=0)


def test_local_store_round_trip(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    new_table(store, ["part"])
    write_commit(store, 1, add("part=x/1.parquet", "x"), add("part=y/2.parquet", "y"))
    t = deltalog.Table(tmp_path)
    result = write_checkpoint(t.snapshot(), clock=clock)
    assert (tmp_path / result.paths[0]).is_file()
    assert not list((tmp_path / "_delta_log").glob(".*.tmp"))
    (tmp_path / "_delta_log" / f"{0:020d}.json").unlink()
    (tmp_path / "_delta_log" / f"{1:020d}.json").unlink()
    assert sorted(deltalog.Table(tmp_path).snapshot().add_files().column("path").to_pylist()) == [
        "part=x/1.parquet",
        "part=y/2.parquet",
    ]


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("interval 1 week", 7),
        ("interval 7 days", 7),
        ("30 days", 30),
        ("interval 168 hours", 7),
        ("INTERVAL '2' WEEKS", 14),
        ("1 day", 1),
        ("interval 1 day 24 hours", 2),
    ],
)
def test_parse_interval(text: str, days: int) -> None:
    assert parse_interval_ms(text) == days * DAY


def test_parse_interval_units_and_errors() -> None:
    assert parse_interval_ms("interval 90 minutes 30 seconds") == (90 * 60 + 30) * 1000
    assert parse_interval_ms("500 milliseconds") == 500
    assert parse_interval_ms("2000 microseconds") == 2
    for bad in ("", "interval", "7", "seven days", "1 month", "interval 1 fortnight", "-1 days", "1 day x"):
        with pytest.raises(InvalidArgumentError):
            parse_interval_ms(bad)


# ---------------------------------------------------------------------------- typed stats (schema module)


def test_stats_parsed_and_partition_values_parsed() -> None:
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "d", "type": "date", "nullable": True, "metadata": {}},
            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
            {"name": "amount", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
            {"name": "f", "type": "double", "nullable": True, "metadata": {}},
            {"name": "flag", "type": "boolean", "nullable": True, "metadata": {}},
            {
                "name": "s",
                "type": {
                    "type": "struct",
                    "fields": [{"name": "x", "type": "integer", "nullable": True, "metadata": {}}],
                },
                "nullable": True,
                "metadata": {},
            },
            {"name": "part", "type": "integer", "nullable": True, "metadata": {}},
        ],
    }
    store = InMemoryLogStore(clock=clock)
    write_commit(store, 0, protocol(), metadata(["part"], schema, **{"delta.checkpoint.writeStatsAsStruct": "true"}))
    good = {
        "numRecords": 3,
        "minValues": {
            "id": 1,
            "d": "2024-01-02",
            "ts": "2024-01-02T03:04:05.123Z",
            "amount": 1.25,
            "f": 0.5,
            "s": {"x": 4},
        },
        "maxValues": {"id": 9, "d": "2024-02-01"},
        "nullCount": {"id": 0, "flag": 1, "s": {"x": 0}},
        "tightBounds": True,
    }
    odd = {"numRecords": 1, "minValues": {"f": "NaN", "amount": 1.234}}
    write_commit(
        store,
        1,
        add("part=1/a", "1", stats=json.dumps(good)),
        add("part=2/b", "2", stats=json.dumps(odd)),
        add("part=__HIVE_DEFAULT_PARTITION__/c", ""),
    )
    snap = table(store).snapshot()
    t = build_checkpoint(snap, clock=clock)
    add_type = t.schema.field("add").type
    parsed_type = add_type.field("stats_parsed").type
    assert parsed_type.field("numRecords").type == pa.int64()
    mins = parsed_type.field("minValues").type
    assert mins.field("d").type == pa.date32() and pa.types.is_timestamp(mins.field("ts").type)
    assert pa.types.is_decimal(mins.field("amount").type) and mins.get_field_index("flag") == -1
    assert mins.get_field_index("part") == -1
    assert parsed_type.field("nullCount").type.field("flag").type == pa.int64()
    assert add_type.field("partitionValues_parsed").type.field("part").type == pa.int32()
    rows = {r["add"]["path"]: r["add"] for r in t.to_pylist() if r["add"]}
    a = rows["part=1/a"]
    assert a["partitionValues_parsed"] == {"part": 1}
    assert a["stats_parsed"]["numRecords"] == 3 and a["stats_parsed"]["tightBounds"] is True
    assert str(a["stats_parsed"]["minValues"]["d"]) == "2024-01-02"
    assert a["stats_parsed"]["minValues"]["s"] == {"x": 4}
    assert a["stats_parsed"]["nullCount"]["flag"] == 1
    b = rows["part=2/b"]["stats_parsed"]
    assert b["numRecords"] == 1 and np.isnan(b["minValues"]["f"]) and b["minValues"]["amount"] is None
    assert rows["part=__HIVE_DEFAULT_PARTITION__/c"]["stats_parsed"] is None
    assert rows["part=__HIVE_DEFAULT_PARTITION__/c"]["partitionValues_parsed"] == {"part": None}
    write_checkpoint(snap, clock=clock)
    drop_commits(store, 1)
    assert state(table(store).snapshot())["files"] == state(snap)["files"]


def test_parse_stats_vectorized_and_fallback_paths() -> None:
    target = pa.struct(
        [
            ("numRecords", pa.int64()),
            ("minValues", pa.struct([("d", pa.date32()), ("f", pa.float64()), ("a", pa.decimal128(5, 2))])),
            ("tightBounds", pa.bool_()),
        ]
    )
    raw = pa.array(
        [
            '{"numRecords": 1, "minValues": {"d": "2024-03-01", "f": 1.5, "a": 1.25}}',
            '{\n  "numRecords": 2,\n  "tightBounds": false\n}',  # pretty-printed
            "",
            None,
            '{"numRecords": 3, "minValues": {"unknown": [1, 2]}, "extra": {"x": 1}}',
        ]
    )
    rows = parse_stats(raw, target).to_pylist()
    assert rows[0] == {
        "numRecords": 1,
        "minValues": {
            "d": dt.date(2024, 3, 1),
            "f": 1.5,
            "a": Decimal("1.25"),
        },
        "tightBounds": None,
    }
    assert rows[1]["numRecords"] == 2 and rows[1]["tightBounds"] is False
    assert rows[2] == {"numRecords": None, "minValues": None, "tightBounds": None}
    assert rows[3] is None and rows[4]["numRecords"] == 3
    odd = parse_stats(
        pa.array(['{"numRecords": 4, "minValues": {"f": "NaN", "a": 1.234, "d": "bad"}}', "{oops"]), target
    )
    first, second = odd.to_pylist()
    assert first["numRecords"] == 4 and np.isnan(first["minValues"]["f"])
    assert first["minValues"]["a"] is None and first["minValues"]["d"] is None and second is None
    chunked = pa.chunked_array([raw.slice(0, 2), raw.slice(2)])
    assert parse_stats(chunked, target).to_pylist()[:2] == rows[:2]
