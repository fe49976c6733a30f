"""Transactions: commit loop, conflict checks, commitInfo, writer rules (all on in-memory stores)."""

from __future__ import annotations

import itertools
import json
import random
import uuid
from typing import Any

import pytest

from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.actions import Add, Format, Metadata, Protocol, Remove
from deltalog.storage import InMemoryLogStore
from deltalog.table import Table
from deltalog.txn.conflicts import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    MetadataChangedException,
    ProtocolChangedException,
)
from deltalog.txn.operations import (
    CreateTable,
    Delete,
    Optimize,
    SetTableProperties,
    Update,
    Write,
)
from deltalog.txn.transaction import CommitFailedError, RetryPolicy, Transaction, start_transaction
from deltalog.txn.writer_features import AppendOnlyError, upgrade_protocol

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)


def new_table(partition: tuple[str, ...] = ("part",), conf: dict[str, str] | None = None, **txn_opts: Any) -> Table:
    name = f"memory://txn-{uuid.uuid4().hex}"
    table = Table(name, store=InMemoryLogStore(name))
    txn = start_transaction(table, CreateTable(partition_by=partition), **txn_opts)
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()),
            format=Format(),
            schemaString=SCHEMA,
            partitionColumns=partition,
            configuration=conf or {},
            createdTime=0,
        )
    )
    assert txn.commit().version == 0
    return table


def add(path: str, part: str | None = "a", *, stats: str | None = None, data_change: bool = True) -> Add:
    return Add(
        path=path,
        partitionValues={} if part is None else {"part": part},
        size=100,
        modificationTime=0,
        dataChange=data_change,
        stats=stats,
    )


def stats(lo: int, hi: int, n: int = 10) -> str:
    return json.dumps({"numRecords": n, "minValues": {"id": lo}, "maxValues": {"id": hi}, "nullCount": {"id": 0}})


def commit_adds(table: Table, *adds: Add, op: Any = None) -> int:
    txn = start_transaction(table, op or Write(mode="Append"))
    txn.add_actions(adds)
    return txn.commit().version


def log_lines(table: Table, version: int) -> list[dict[str, Any]]:
    raw = table.store.read(f"_delta_log/{version:020d}.json").decode()
    return [json.loads(line) for line in raw.splitlines() if line]


def commit_info(table: Table, version: int) -> dict[str, Any]:
    first = log_lines(table, version)[0]
    assert "commitInfo" in first
    info: dict[str, Any] = first["commitInfo"]
    return info


# ------------------------------------------------------------------------------------- commit loop


def test_versions_are_contiguous_and_commit_info_first() -> None:
    t = new_table()
    versions = [commit_adds(t, add(f"f{i}.parquet")) for i in range(3)]
    assert versions == [1, 2, 3]
    assert t.latest_version() == 3
    assert t.snapshot().num_files() == 3
    for v in range(4):
        assert "commitInfo" in log_lines(t, v)[0]


class RecordingStore(InMemoryLogStore):
    """Records every write of a log file; a hook can run a competing commit first."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.writes: list[tuple[str, bool]] = []
        self.before_commit: Any = None

    def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
        if path.startswith("_delta_log/") and path.endswith(".json"):
            self.writes.append((path, overwrite))
            hook, self.before_commit = self.before_commit, None
            if hook is not None:
                hook(path)
        super().write(path, data, overwrite=overwrite)


def recording_table() -> tuple[Table, RecordingStore]:
    name = f"memory://rec-{uuid.uuid4().hex}"
    store = RecordingStore(name)
    table = Table(name, store=store)
    txn = start_transaction(table, CreateTable(partition_by=("part",)))
    txn.update_metadata(Metadata(id="x", format=Format(), schemaString=SCHEMA, partitionColumns=("part",)))
    txn.commit()
    return table, store


def test_commit_only_by_put_if_absent_and_retries_after_losing_race() -> None:
    t, store = recording_table()
    sleeps: list[float] = []
    loser = start_transaction(t, Write(mode="Append"), sleep=sleeps.append, rng=random.Random(1))
    loser.add_file(add("mine.parquet"))
    commit_adds(t, add("theirs.parquet"))  # a competing writer wins version 1
    result = loser.commit()
    assert (result.version, result.attempts, result.winning_versions) == (2, 2, (1,))
    assert result.retries == 1 and sleeps == []  # the first retries follow at once (RetryPolicy.immediate)
    assert all(overwrite is False for _, overwrite in store.writes)
    assert {r["path"] for r in t.snapshot().add_files().to_pylist()} == {"mine.parquet", "theirs.parquet"}
    assert commit_info(t, 2)["readVersion"] == 0


def test_retries_are_bounded_with_exponential_backoff() -> None:
    t, store = recording_table()
    sleeps: list[float] = []

    def always_lose(path: str) -> None:
        version = int(path.rsplit("/", 1)[1].split(".")[0])
        other = start_transaction(t, Write(mode="Append"))
        other.add_file(add(f"other-{version}.parquet"))
        assert other.commit().version == version
        store.before_commit = always_lose  # re-armed for our next attempt

    snap = t.snapshot()
    txn = Transaction(
        store,
        snap,
        Write(mode="Append"),
        table=t.location,
        retry=RetryPolicy(max_attempts=4, base_delay=0.1, immediate=0),
        sleep=sleeps.append,
        rng=random.Random(7),
    )
    txn.add_file(add("mine.parquet"))
    store.before_commit = always_lose
    with pytest.raises(CommitFailedError, match="after 4 attempts"):
        txn.commit()
    store.before_commit = None
    assert txn.discardable  # every attempt provably lost: the caller may delete its files
    assert len(sleeps) == 3
    for i, delay in enumerate(sleeps):
        cap = 0.1 * 2**i
        assert cap * 0.5 <= delay < cap
    assert "mine.parquet" not in {r["path"] for r in t.snapshot().add_files().to_pylist()}


def test_first_retries_are_immediate_then_back_off() -> None:
    policy = RetryPolicy(max_attempts=10, base_delay=0.1, max_delay=0.3, immediate=2)
    rng = random.Random(3)
    delays = [policy.delay(n, rng) for n in range(1, 7)]
    assert delays[:2] == [0.0, 0.0]
    for delay, cap in zip(delays[2:], (0.1, 0.2, 0.3, 0.3), strict=True):
        assert cap * 0.5 <= delay < cap
    with pytest.raises(InvalidArgumentError, match="immediate retries"):
        RetryPolicy(immediate=-1)


def test_commit_info_content() -> None:
    ticks = itertools.count(1_700_000_000_000)
    t = new_table(clock=lambda: next(ticks))
    info0 = commit_info(t, 0)
    assert info0["operation"] == "CREATE TABLE" and "readVersion" not in info0
    assert info0["operationParameters"]["partitionBy"] == '["part"]'
    txn = start_transaction(t, Write(mode="Append"), user_metadata="note")
    txn.add_file(add("a.parquet", stats=stats(1, 5, n=7)))
    txn.commit()
    info = commit_info(t, 1)
    assert info["operation"] == "WRITE"
    assert info["operationParameters"] == {"mode": "Append", "partitionBy": "[]"}
    assert info["readVersion"] == 0
    assert info["isolationLevel"] == "WriteSerializable"
    assert info["isBlindAppend"] is True
    assert info["operationMetrics"] == {"numFiles": "1", "numOutputRows": "7", "numOutputBytes": "100"}
    assert info["engineInfo"].startswith("deltalog/")
    assert uuid.UUID(info["txnId"]).version == 4
    assert info["userMetadata"] == "note"
    assert isinstance(info["timestamp"], int) and "inCommitTimestamp" not in info

    txn = start_transaction(t, Write(mode="Overwrite"))
    txn.remove_files(txn.scan_files())
    txn.add_file(add("b.parquet"))
    res = txn.commit(metrics={"numOutputRows": 3})
    info = commit_info(t, 2)
    assert info["isBlindAppend"] is False
    assert info["operationMetrics"]["numRemovedFiles"] == "1"
    assert res.operation_metrics["numOutputRows"] == "3"
    assert all(isinstance(v, str) for v in info["operationMetrics"].values())
    # metadata-only commits and compaction change no data: snapshot isolation
    txn = start_transaction(t, Optimize())
    txn.remove_files(txn.scan_files(), data_change=False)
    txn.add_file(add("c.parquet", data_change=False))
    txn.commit()
    assert commit_info(t, 3)["isolationLevel"] == "SnapshotIsolation"


# ---------------------------------------------------------------------------------- conflict checks


def test_concurrent_table_creation_conflicts() -> None:
    name = f"memory://create-{uuid.uuid4().hex}"
    table = Table(name, store=InMemoryLogStore(name))
    txns = [start_transaction(table, CreateTable()) for _ in range(2)]
    for txn in txns:
        txn.update_metadata(Metadata(id="x", format=Format(), schemaString=SCHEMA))
    txns[0].commit()
    with pytest.raises(ProtocolChangedException, match="created concurrently") as err:
        txns[1].commit()
    assert err.value.version == 0 and err.value.operation == "CREATE TABLE"


def test_protocol_and_metadata_changes_conflict() -> None:
    t = new_table()
    loser = start_transaction(t, Write(mode="Append"))
    loser.add_file(add("x.parquet"))
    winner = start_transaction(t, SetTableProperties(properties={"delta.appendOnly": "true"}))
    md = t.snapshot().metadata
    winner.update_metadata(
        Metadata(
            id=md.id,
            format=md.format,
            schemaString=md.schemaString,
            partitionColumns=md.partitionColumns,
            configuration={"delta.appendOnly": "true"},
        )
    )
    winner.update_protocol(Protocol(1, 3))
    winner.commit()
    with pytest.raises(ProtocolChangedException, match=r"version 1 \(SET TBLPROPERTIES\)"):
        loser.commit()

    loser = start_transaction(t, Write(mode="Append"))
    loser.add_file(add("y.parquet"))
    winner = start_transaction(t, SetTableProperties(properties={"k": "v"}))
    md = t.snapshot().metadata
    winner.update_metadata(
        Metadata(
            id=md.id,
            format=md.format,
            schemaString=md.schemaString,
            partitionColumns=md.partitionColumns,
            configuration={**md.configuration, "k": "v"},
        )
    )
    winner.commit()
    with pytest.raises(MetadataChangedException) as err:
        loser.commit()
    assert "version 2 (SET TBLPROPERTIES)" in str(err.value) and "retry" in str(err.value)
    assert isinstance(err.value, ConcurrentModificationException)


def _reader(t: Table, level: str | None = None, op: Any = None) -> Transaction:
    txn = start_transaction(t, op or Delete(predicate="part = 'a'"), isolation_level=level)
    files = txn.scan_files([("part", "=", "a")])
    txn.remove_files(files)
    return txn


@pytest.mark.parametrize(
    ("level", "winner_part", "winner_blind", "conflict"),
    [
        ("WriteSerializable", "a", True, False),  # blind appends never conflict under WriteSerializable
        ("Serializable", "a", True, True),
        ("WriteSerializable", "a", False, True),
        ("Serializable", "b", False, False),  # outside what we read
        ("WriteSerializable", "b", False, False),
    ],
)
def test_concurrent_append_by_isolation_level(level: str, winner_part: str, winner_blind: bool, conflict: bool) -> None:
    t = new_table()
    commit_adds(t, add("a1.parquet", "a"), add("b1.parquet", "b"))
    loser = _reader(t, level)
    if winner_blind:
        commit_adds(t, add("new.parquet", winner_part))
    else:  # an UPDATE elsewhere that also adds to winner_part
        w = start_transaction(t, Update(predicate="part = 'b'"))
        w.remove_files(w.scan_files([("part", "=", "b")]))
        w.add_file(add("new.parquet", winner_part))
        w.commit()
    if conflict:
        with pytest.raises(ConcurrentAppendException) as err:
            loser.commit()
        msg = str(err.value)
        assert "version 2" in msg and "new.parquet" in msg and "retry the operation" in msg
    else:
        assert loser.commit().version == 3


def test_whole_table_read_and_blind_appends() -> None:
    t = new_table()
    loser = start_transaction(t, Write(mode="Overwrite"), isolation_level="Serializable")
    loser.read_whole_table()
    loser.add_file(add("x.parquet"))
    commit_adds(t, add("y.parquet", "z"))
    with pytest.raises(ConcurrentAppendException, match="the whole table"):
        loser.commit()
    # our own blind append never conflicts with appends, even under Serializable
    mine = start_transaction(t, Write(mode="Append"), isolation_level="Serializable")
    mine.add_file(add("m.parquet"))
    commit_adds(t, add("n.parquet"))
    assert mine.commit().version == 3


def test_data_change_false_winner_does_not_cause_concurrent_append() -> None:
    t = new_table()
    commit_adds(t, add("a1.parquet", "a"), add("b1.parquet", "b"))
    loser = start_transaction(t, Update(), isolation_level="Serializable")
    loser.read_predicate([("part", "=", "a")])
    loser.add_file(add("u.parquet", "a"))
    w = start_transaction(t, Optimize())
    w.remove_files(w.scan_files([("part", "=", "b")]), data_change=False)
    w.add_file(add("b-compacted.parquet", "b", data_change=False))
    w.add_file(add("a-compacted.parquet", "a", data_change=False))
    w.commit()
    assert loser.commit().version == 3


def test_compaction_removing_a_file_we_read_still_conflicts() -> None:
    t = new_table()
    commit_adds(t, add("a1.parquet", "a"), add("a2.parquet", "a"))
    loser = _reader(t)
    w = start_transaction(t, Optimize())
    w.remove_files(w.scan_files([("part", "=", "a")]), data_change=False)
    w.add_file(add("a-compacted.parquet", "a", data_change=False))
    w.commit()
    with pytest.raises(ConcurrentDeleteReadException, match=r"read file a1.parquet.*version 2 \(OPTIMIZE\)"):
        loser.commit()


def test_our_compaction_ignores_concurrent_appends() -> None:
    t = new_table()
    commit_adds(t, add("a1.parquet", "a"))
    mine = start_transaction(t, Optimize(), isolation_level="Serializable")
    mine.remove_files(mine.scan_files([("part", "=", "a")]), data_change=False)
    mine.add_file(add("a-c.parquet", "a", data_change=False))
    w = start_transaction(t, Update())
    w.read_predicate([("part", "=", "a")])
    w.add_file(add("a2.parquet", "a"))
    w.commit()
    assert mine.commit().version == 3


def test_concurrent_delete_read_both_sides() -> None:
    t = new_table()
    commit_adds(t, add("a1.parquet", "a"), add("b1.parquet", "b"))
    loser = _reader(t)
    w = start_transaction(t, Delete(predicate="part = 'b'"))
    w.remove_files(w.scan_files([("part", "=", "b")]))
    w.commit()
    assert loser.commit().version == 3  # the winner deleted a file we did not read

    commit_adds(t, add("a2.parquet", "a"))
    loser = start_transaction(t, Update(predicate="part = 'a'"))
    loser.scan_files([("part", "=", "a")])
    loser.add_file(add("a3.parquet", "a"))
    w = start_transaction(t, Delete(predicate="part = 'a'"))
    w.remove_files(w.scan_files([("part", "=", "a")]))
    w.commit()
    with pytest.raises(ConcurrentDeleteReadException) as err:
        loser.commit()
    assert "a2.parquet" in str(err.value) and "(DELETE)" in str(err.value)


def test_concurrent_delete_delete_both_sides() -> None:
    t = new_table()
    commit_adds(t, add("a1.parquet", "a"), add("b1.parquet", "b"))
    row = {r["path"]: r for r in t.snapshot().add_files().to_pylist()}
    loser = start_transaction(t, Delete())
    loser.remove_files([row["a1.parquet"]])
    w = start_transaction(t, Delete())
    w.remove_files([row["b1.parquet"]])
    w.commit()
    assert loser.commit().version == 3

    commit_adds(t, add("c1.parquet", "c"))
    row = {r["path"]: r for r in t.snapshot().add_files().to_pylist()}
    loser = start_transaction(t, Delete())
    loser.remove_files([row["c1.parquet"]])
    w = start_transaction(t, Delete())
    w.remove_files([row["c1.parquet"]])
    w.commit()
    with pytest.raises(ConcurrentDeleteDeleteException, match=r"c1\.parquet.*already removed"):
        loser.commit()


def test_concurrent_app_transaction_both_sides() -> None:
    t = new_table()
    loser = start_transaction(t, Write(mode="Append"))
    assert loser.txn_version("etl") is None
    loser.set_app_transaction("etl", 1)
    loser.add_file(add("x.parquet"))
    w = start_transaction(t, Write(mode="Append"))
    w.set_app_transaction("other", 1)
    w.add_file(add("y.parquet"))
    w.commit()
    assert loser.commit().version == 2

    loser = start_transaction(t, Write(mode="Append"))
    loser.set_app_transaction("etl", 2)
    loser.add_file(add("z.parquet"))
    w = start_transaction(t, Write(mode="Append"))
    w.set_app_transaction("etl", 5)
    w.add_file(add("w.parquet"))
    w.commit()
    with pytest.raises(ConcurrentTransactionException, match="'etl'"):
        loser.commit()


def test_stats_rule_for_data_column_predicates() -> None:
    t = new_table(partition=())
    commit_adds(t, add("base.parquet", None, stats=stats(0, 10)))

    def race(winner_stats: str | None) -> Transaction:
        loser = start_transaction(t, Update(predicate="id > 100"), isolation_level="Serializable")
        loser.scan_files([("id", ">", 100)])
        loser.add_file(add(f"u-{uuid.uuid4().hex}.parquet", None))
        commit_adds(t, add(f"w-{uuid.uuid4().hex}.parquet", None, stats=winner_stats))
        return loser

    assert race(stats(1, 50)).commit().version > 0  # disjoint range: no row of it can match
    with pytest.raises(ConcurrentAppendException, match=r"id > 100"):
        race(stats(90, 150)).commit()  # overlapping range
    with pytest.raises(ConcurrentAppendException):
        race(None).commit()  # no stats: must conflict


def test_partition_and_data_predicate_together() -> None:
    t = new_table()
    loser = start_transaction(t, Update(), isolation_level="Serializable")
    loser.read_predicate([("part", "=", "a"), ("id", "<", 5)])
    loser.add_file(add("u.parquet", "a"))
    commit_adds(t, add("w1.parquet", "a", stats=stats(10, 20)), add("w2.parquet", "b", stats=stats(0, 1)))
    assert loser.commit().version == 2


# -------------------------------------------------------------------------------------- isolation


def test_isolation_level_from_table_property() -> None:
    t = new_table(conf={"delta.isolationLevel": "Serializable"})
    assert start_transaction(t, Write()).isolation_level == "Serializable"
    assert start_transaction(t, Write(), isolation_level="WriteSerializable").isolation_level == ("WriteSerializable")
    with pytest.raises(InvalidArgumentError, match="isolation level"):
        start_transaction(t, Write(), isolation_level="ReadCommitted")


# ----------------------------------------------------------------------------------- writer rules


def test_in_commit_timestamps_are_monotonic() -> None:
    clock_value = [5_000]
    t = new_table(conf={"delta.enableInCommitTimestamps": "true"}, clock=lambda: clock_value[0])
    proto = t.snapshot().protocol
    assert proto.minWriterVersion == 7 and "inCommitTimestamp" in (proto.writerFeatures or ())
    assert commit_info(t, 0)["inCommitTimestamp"] == 5_000
    clock_value[0] = 1_000  # the clock went backwards
    for expected in (5_001, 5_002):
        txn = start_transaction(t, Write(), clock=lambda: clock_value[0])
        txn.add_file(add(f"{expected}.parquet"))
        res = txn.commit()
        assert res.in_commit_timestamp == expected == commit_info(t, res.version)["inCommitTimestamp"]
    clock_value[0] = 9_000
    txn = start_transaction(t, Write(), clock=lambda: clock_value[0])
    txn.add_file(add("late.parquet"))
    assert txn.commit().in_commit_timestamp == 9_000


def test_enabling_in_commit_timestamps_on_existing_table() -> None:
    t = new_table()
    commit_adds(t, add("a.parquet"))
    md = t.snapshot().metadata
    conf = {"delta.enableInCommitTimestamps": "true"}
    txn = start_transaction(t, SetTableProperties(properties=conf), clock=lambda: 1)
    txn.update_metadata(
        Metadata(
            id=md.id,
            format=md.format,
            schemaString=md.schemaString,
            partitionColumns=md.partitionColumns,
            configuration=conf,
        )
    )
    res = txn.commit()
    snap = t.snapshot()
    prev_mtime = t.store.stat("_delta_log/00000000000000000001.json").modification_time
    assert res.in_commit_timestamp == prev_mtime + 1  # after the previous commit's file time
    assert snap.properties["delta.inCommitTimestampEnablementVersion"] == "2"
    assert snap.properties["delta.inCommitTimestampEnablementTimestamp"] == str(res.in_commit_timestamp)
    assert snap.protocol.minWriterVersion == 7
    assert set(snap.protocol.writerFeatures or ()) == {"appendOnly", "invariants", "inCommitTimestamp"}


def test_append_only_refuses_data_removes() -> None:
    t = new_table(conf={"delta.appendOnly": "true"})
    assert (t.snapshot().protocol.minReaderVersion, t.snapshot().protocol.minWriterVersion) == (1, 2)
    commit_adds(t, add("a.parquet"), add("b.parquet"))
    txn = start_transaction(t, Delete())
    txn.remove_files(txn.scan_files())
    with pytest.raises(AppendOnlyError, match=r"delta.appendOnly=true.*a.parquet"):
        txn.commit()
    assert t.latest_version() == 1
    txn = start_transaction(t, Optimize())
    txn.remove_files(txn.scan_files(), data_change=False)
    txn.add_file(add("ab.parquet", data_change=False))
    assert txn.commit().version == 2


def test_duplicate_actions_refused() -> None:
    t = new_table()
    txn = start_transaction(t, Write())
    txn.add_actions([add("a.parquet"), add("a.parquet")])
    with pytest.raises(InvalidArgumentError, match=r"duplicate add action for file a\.parquet"):
        txn.commit()
    txn = start_transaction(t, Delete())
    txn.add_actions([Remove("a.parquet", True), Remove("a.parquet", True)])
    with pytest.raises(InvalidArgumentError, match="duplicate remove"):
        txn.commit()
    dv1 = {"storageType": "u", "pathOrInlineDv": "ab", "sizeInBytes": 1, "cardinality": 1}
    dv2 = {**dv1, "pathOrInlineDv": "cd"}
    txn = start_transaction(t, Delete())
    txn.add_actions([Remove("a.parquet", True, deletionVector=dv1), Remove("a.parquet", True, deletionVector=dv2)])
    assert txn.commit().version == 1  # the same file with different deletion vectors is fine
    txn = start_transaction(t, SetTableProperties())
    md = t.snapshot().metadata
    txn.update_metadata(md)
    txn.update_metadata(md)
    with pytest.raises(InvalidArgumentError, match="at most one metaData"):
        txn.commit()
    assert t.latest_version() == 1


def test_unsupported_writer_feature_refused() -> None:
    t = new_table()
    txn = start_transaction(t, Write())
    txn.update_protocol(Protocol(3, 7, (), ("appendOnly", "invariants", "icebergCompatV3")))
    with pytest.raises(UnsupportedFeatureError, match=r"icebergCompatV3.*Iceberg"):
        txn.commit()
    txn = start_transaction(t, Write())
    txn.update_protocol(Protocol(1, 1))
    with pytest.raises(InvalidArgumentError, match="features can only be added"):
        txn.commit()
    md = t.snapshot().metadata
    txn = start_transaction(t, SetTableProperties())
    txn.update_metadata(
        Metadata(id=md.id, format=md.format, schemaString=md.schemaString, partitionColumns=md.partitionColumns,
                 configuration={"delta.feature.icebergCompatV3": "supported"})
    )
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV3"):
        txn.commit()
    # writer version 4 implies generatedColumns; unused, it is fine
    txn = start_transaction(t, Write())
    txn.update_protocol(Protocol(1, 4))
    txn.add_file(add("x.parquet"))
    assert txn.commit().version == 1


def test_idempotent_txn_is_skipped() -> None:
    t = new_table()
    txn = start_transaction(t, Write())
    txn.set_app_transaction("job", 5)
    txn.add_file(add("a.parquet"))
    assert txn.commit().version == 1
    again = start_transaction(t, Write())
    again.set_app_transaction("job", 5)
    again.add_file(add("b.parquet"))
    res = again.commit()
    assert res.skipped and res.version == 1 and t.latest_version() == 1
    nxt = start_transaction(t, Write())
    nxt.set_app_transaction("job", 6)
    nxt.add_file(add("c.parquet"))
    assert nxt.commit().version == 2
    assert t.snapshot().txn_version("job") == 6


def test_change_data_feed_row_rewrites_refused() -> None:
    t = new_table(conf={"delta.enableChangeDataFeed": "true"})
    assert t.snapshot().protocol.minWriterVersion == 4
    commit_adds(t, add("a.parquet"))
    txn = start_transaction(t, Update())
    txn.remove_files(txn.scan_files())
    txn.add_file(add("a2.parquet"))
    with pytest.raises(UnsupportedFeatureError, match="change data"):
        txn.commit()


def _md(**conf: str) -> Metadata:
    return Metadata(id="t", format=Format(), schemaString=SCHEMA, configuration=conf)


@pytest.mark.parametrize(
    ("conf", "expected"),
    [
        ({}, (1, 2, None, None)),
        ({"delta.appendOnly": "true"}, (1, 2, None, None)),
        ({"delta.constraints.c": "id > 0"}, (1, 3, None, None)),
        ({"delta.enableChangeDataFeed": "true"}, (1, 4, None, None)),
        ({"delta.columnMapping.mode": "name"}, (2, 5, None, None)),
        ({"delta.enableDeletionVectors": "true"}, (3, 7, ("deletionVectors",), ("deletionVectors",))),
        ({"delta.enableInCommitTimestamps": "true"}, (1, 7, None, ("inCommitTimestamp",))),
    ],
)
def test_protocol_upgrades_for_new_tables(conf: dict[str, str], expected: tuple[Any, ...]) -> None:
    p = upgrade_protocol(None, _md(**conf))
    assert (p.minReaderVersion, p.minWriterVersion, p.readerFeatures, p.writerFeatures) == expected


def test_protocol_upgrade_of_existing_table_keeps_legacy_features() -> None:
    p = upgrade_protocol(Protocol(2, 5), _md(**{"delta.enableDeletionVectors": "true"}))
    assert (p.minReaderVersion, p.minWriterVersion) == (3, 7)
    assert set(p.readerFeatures or ()) == {"columnMapping", "deletionVectors"}
    assert {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "columnMapping",
        "deletionVectors",
    } == set(p.writerFeatures or ())
    same = Protocol(1, 3)
    assert upgrade_protocol(same, _md(**{"delta.appendOnly": "true"})) is same


def test_metadata_changes_are_not_downgraded_to_snapshot_isolation() -> None:
    from dataclasses import replace

    t = new_table()
    # like delta-spark: a commit with a metaData action keeps the table's isolation level, and under
    # WriteSerializable a metadata change that read the table conflicts with concurrent blind appends
    loser = start_transaction(t, SetTableProperties(properties={"k": "v"}))
    loser.read_whole_table()
    loser.update_metadata(replace(t.snapshot().metadata, configuration={"k": "v"}))
    commit_adds(t, add("x.parquet"))
    with pytest.raises(ConcurrentAppendException, match="the whole table"):
        loser.commit()
    # a metadata change that read nothing still commits on top of appends
    mine = start_transaction(t, SetTableProperties(properties={"k": "v"}))
    mine.update_metadata(replace(t.snapshot().metadata, configuration={"k": "v"}))
    commit_adds(t, add("y.parquet"))
    assert mine.commit().version == 3
    assert commit_info(t, 3)["isolationLevel"] == "WriteSerializable"


@pytest.mark.parametrize(("exact", "conflict"), [(True, False), (False, True)])
def test_read_candidates_records_the_predicate_or_the_whole_table(exact: bool, conflict: bool) -> None:
    from deltalog.data.filters import Condition

    t = new_table()
    commit_adds(t, add("a1.parquet", "a"), add("b1.parquet", "b"))
    loser = start_transaction(t, Update(predicate="part = 'a'"))
    files = loser.read_candidates([Condition("part", "=", "a")], exact=exact)
    assert files.column("path").to_pylist() == ["a1.parquet"]
    loser.remove_files(files)
    w = start_transaction(t, Update(predicate="part = 'b'"))  # not a blind append: rewrites partition b
    w.remove_files(w.scan_files([("part", "=", "b")]))
    w.add_file(add("b2.parquet", "b"))
    w.commit()
    if conflict:  # exact=False: the whole table was read, so b2.parquet conflicts
        with pytest.raises(ConcurrentAppendException):
            loser.commit()
    else:
        assert loser.commit().version == 3
    with pytest.raises(InvalidArgumentError, match="no table"):
        start_transaction(Table(t.store.root + "-missing", store=InMemoryLogStore()), Update()).read_candidates([])
