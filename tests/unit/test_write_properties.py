"""write_table(properties=..., retry=...): the same property rules as SET TBLPROPERTIES, CHECK
constraints only at creation, and a configurable commit retry policy."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.arrow.write import write_table
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.actions import Protocol
from deltalog.storage import InMemoryLogStore, LocalLogStore
from deltalog.txn.commit import CommitFailedError, RetryPolicy
from deltalog.txn.constraints import ConstraintViolationError, UnsupportedExpressionError


def data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def snap(path: Path) -> deltalog.Snapshot:
    return deltalog.Table(str(path)).snapshot()


def ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


# ------------------------------------------------------------------------------ property validation

BAD = [
    ({"delta.randomUnknown": "1"}, r"unknown table property 'delta\.randomUnknown'"),
    ({"delta.enableDeletionVectors": "yes"}, r"delta\.enableDeletionVectors='yes' is invalid"),
    ({"delta.deletedFileRetentionDuration": "banana"}, r"delta\.deletedFileRetentionDuration='banana' is invalid"),
    ({"delta.checkpointInterval": "0"}, "at least 1"),
    ({"delta.inCommitTimestampEnablementVersion": "3"}, "recorded automatically"),
]


@pytest.mark.parametrize(("props", "match"), BAD)
def test_invalid_properties_refused_at_creation(tmp_path: Path, props: dict[str, str], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match) as info:
        write_table(tmp_path, ids(1), properties=props)
    assert str(tmp_path) in str(info.value)  # names the table
    assert data_files(tmp_path) == set() and not (tmp_path / "_delta_log").exists()


@pytest.mark.parametrize(("props", "match"), BAD)
def test_invalid_properties_refused_on_writes_to_existing_table(
    tmp_path: Path, props: dict[str, str], match: str
) -> None:
    write_table(tmp_path, ids(1))
    before = data_files(tmp_path)
    for mode in ("append", "overwrite"):
        with pytest.raises(InvalidArgumentError, match=match) as info:
            write_table(tmp_path, ids(2), mode=mode, properties=props)
        assert str(tmp_path) in str(info.value)
    assert deltalog.Table(str(tmp_path)).latest_version() == 0 and data_files(tmp_path) == before
    assert snap(tmp_path).properties == {}


def test_keys_are_canonical_and_user_properties_kept(tmp_path: Path) -> None:
    write_table(tmp_path, ids(1), properties={"delta.APPENDONLY": "TRUE", "owner": "etl", "Team.Name": "Data"})
    assert dict(snap(tmp_path).properties) == {"delta.appendOnly": "true", "owner": "etl", "Team.Name": "Data"}
    assert snap(tmp_path).protocol == Protocol(1, 2)
    write_table(tmp_path, ids(2), mode="append", properties={"delta.logretentionduration": "interval 60 days"})
    assert snap(tmp_path).properties["delta.logRetentionDuration"] == "interval 60 days"
    assert "delta.logretentionduration" not in snap(tmp_path).properties


def test_features_upgrade_the_protocol_on_append(tmp_path: Path) -> None:
    write_table(tmp_path, ids(1))
    write_table(tmp_path, ids(2), mode="append", properties={"delta.enableDeletionVectors": "TRUE"})
    s = snap(tmp_path)
    assert s.properties["delta.enableDeletionVectors"] == "true"
    assert (s.protocol.minReaderVersion, s.protocol.minWriterVersion) == (3, 7)
    assert s.protocol.readerFeatures == ("deletionVectors",)
    assert deltalog.Table(str(tmp_path)).delete([("id", "=", 1)]).used_deletion_vectors


def test_explicit_features_and_versions_go_to_the_protocol(tmp_path: Path) -> None:
    write_table(tmp_path, ids(1), properties={"delta.minWriterVersion": "4", "owner": "etl"})
    s = snap(tmp_path)
    assert s.protocol == Protocol(1, 4) and dict(s.properties) == {"owner": "etl"}
    write_table(tmp_path, ids(2), mode="append", properties={"delta.feature.domainMetadata": "supported"})
    s = snap(tmp_path)
    assert s.protocol.minWriterVersion == 7 and "domainMetadata" in (s.protocol.writerFeatures or ())
    assert dict(s.properties) == {"owner": "etl"} and s.num_files() == 2
    with pytest.raises(InvalidArgumentError, match="only be raised"):
        write_table(tmp_path, ids(3), mode="append", properties={"delta.minWriterVersion": "5"})
    with pytest.raises(UnsupportedFeatureError, match="noSuchFeature"):
        write_table(tmp_path, ids(3), mode="append", properties={"delta.feature.noSuchFeature": "supported"})
    assert snap(tmp_path).version == 1 and len(data_files(tmp_path)) == 2


def test_unwritable_features_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV3"):
        write_table(tmp_path, ids(1), properties={"delta.feature.icebergCompatV3": "supported"})
    assert data_files(tmp_path) == set() and not (tmp_path / "_delta_log").exists()


def test_disabling_in_commit_timestamps_drops_the_enablement_record(tmp_path: Path) -> None:
    write_table(tmp_path, ids(1))
    write_table(tmp_path, ids(2), mode="append", properties={"delta.enableInCommitTimestamps": "true"})
    assert snap(tmp_path).properties["delta.inCommitTimestampEnablementVersion"] == "1"
    write_table(tmp_path, ids(3), mode="append", properties={"delta.enableInCommitTimestamps": "false"})
    assert dict(snap(tmp_path).properties) == {"delta.enableInCommitTimestamps": "false"}


def test_unknown_keys_already_in_the_table_do_not_block_writes(tmp_path: Path) -> None:
    # written by another engine: only the properties passed to the write are validated
    store = InMemoryLogStore(f"memory://{uuid.uuid4().hex}")
    loc = store.root
    write_table(loc, ids(1), store=store)
    raw = store.read("_delta_log/00000000000000000000.json").decode().splitlines()
    lines = [json.loads(x) for x in raw]
    for line in lines:
        if "metaData" in line:
            line["metaData"]["configuration"] = {"delta.someFutureThing": "x"}
    text = "\n".join(json.dumps(x) for x in lines) + "\n"
    store.write("_delta_log/00000000000000000000.json", text.encode(), overwrite=True)
    res = write_table(loc, ids(2), mode="append", store=store, properties={"owner": "etl"})
    props = deltalog.Table(loc, store=store).snapshot(res.version).properties
    assert dict(props) == {"delta.someFutureThing": "x", "owner": "etl"}


# ------------------------------------------------------------------------------------ CHECK constraints


def test_new_constraint_on_existing_table_is_refused(tmp_path: Path) -> None:
    write_table(tmp_path, ids(0))
    before = data_files(tmp_path)
    for rows in (ids(5), ids(0)):
        with pytest.raises(InvalidArgumentError, match=r"Table\.add_constraint") as info:
            write_table(tmp_path, rows, mode="append", properties={"delta.constraints.pos": "id > 0"})
        assert "delta.constraints.pos" in str(info.value) and str(tmp_path) in str(info.value)
    assert deltalog.Table(str(tmp_path)).latest_version() == 0 and data_files(tmp_path) == before
    assert "delta.constraints.pos" not in snap(tmp_path).properties


def test_changing_a_constraint_by_a_write_is_refused_repeating_it_is_fine(tmp_path: Path) -> None:
    write_table(tmp_path, ids(1), properties={"delta.constraints.pos": "id > 0"})
    with pytest.raises(InvalidArgumentError, match=r"Table\.add_constraint"):
        write_table(tmp_path, ids(2), mode="append", properties={"delta.constraints.pos": "id > 1"})
    res = write_table(tmp_path, ids(2), mode="append", properties={"delta.constraints.POS": "id > 0"})
    assert res.version == 1 and dict(snap(tmp_path).properties) == {"delta.constraints.pos": "id > 0"}


def test_constraint_at_creation_checks_the_rows_written(tmp_path: Path) -> None:
    with pytest.raises(ConstraintViolationError, match=r"CHECK constraint pos \(id > 0\)"):
        write_table(tmp_path, ids(3, 0), properties={"delta.constraints.pos": "id > 0"})
    assert data_files(tmp_path) == set() and not (tmp_path / "_delta_log").exists()
    write_table(tmp_path, ids(3), properties={"delta.constraints.Pos": "id > 0"})
    s = snap(tmp_path)
    assert dict(s.properties) == {"delta.constraints.pos": "id > 0"}  # names are lower case, as in Delta
    assert (s.protocol.minReaderVersion, s.protocol.minWriterVersion) == (1, 3)


@pytest.mark.parametrize("sql", ["id RLIKE '1'", "nope > 0", "id + 1", "id = 'abc'"])
def test_constraint_at_creation_is_validated_even_without_rows(tmp_path: Path, sql: str) -> None:
    empty = pa.table({"id": pa.array([], pa.int64())})
    with pytest.raises(UnsupportedExpressionError, match="CHECK constraint c"):
        write_table(tmp_path, empty, properties={"delta.constraints.c": sql})
    assert not (tmp_path / "_delta_log").exists()


def test_empty_constraint_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="names no constraint"):
        write_table(tmp_path, ids(1), properties={"delta.constraints.": "id > 0"})
    with pytest.raises(InvalidArgumentError, match="empty"):
        write_table(tmp_path, ids(1), properties={"delta.constraints.c": " "})


# ------------------------------------------------------------------------------------------- retries


class RacingStore(LocalLogStore):
    """Before each of our next ``races`` commit attempts, another writer commits an append at that version."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.races = 0
        self.lost: list[str] = []

    def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
        if self.races and path.startswith("_delta_log/") and path.endswith(".json") and not overwrite:
            self.races -= 1
            self.lost.append(path)
            saved, self.races = self.races, 0  # the competing commit must not race itself
            try:
                write_table(self.root, ids(100 + len(self.lost)), mode="append", store=self)
            finally:
                self.races = saved
        super().write(path, data, overwrite=overwrite)


def racing_table(path: Path) -> RacingStore:
    store = RacingStore(path)
    write_table(str(path), ids(1), store=store)
    return store


def test_retry_policy_is_passed_to_the_commit(tmp_path: Path) -> None:
    store = racing_table(tmp_path)
    store.races = 1_000
    with pytest.raises(CommitFailedError, match="after 1 attempts") as info:
        write_table(str(tmp_path), ids(2), mode="append", store=store, retry=RetryPolicy(max_attempts=1))
    assert str(tmp_path) in str(info.value)
    assert len(store.lost) == 1  # one attempt, no retry
    store.races = 0
    s = snap(tmp_path)
    assert sorted(s.to_arrow().column("id").to_pylist()) == [1, 101]  # only the winner's row
    assert data_files(tmp_path) == {r["path"] for r in s.add_files().to_pylist()}  # our file was deleted


def test_retries_are_bounded_by_the_policy(tmp_path: Path) -> None:
    store = racing_table(tmp_path)
    store.races = 1_000
    policy = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.001)
    with pytest.raises(CommitFailedError, match="after 3 attempts"):
        write_table(str(tmp_path), ids(2), mode="append", store=store, retry=policy)
    assert len(store.lost) == 3


def test_default_policy_retries_a_lost_race(tmp_path: Path) -> None:
    store = racing_table(tmp_path)
    store.races = 1
    res = write_table(str(tmp_path), ids(2), mode="append", store=store)
    assert res.commit is not None and res.commit.attempts == 2 and res.version == 2
    assert sorted(snap(tmp_path).to_arrow().column("id").to_pylist()) == [1, 2, 101]


def test_retry_must_be_a_policy(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="RetryPolicy"):
        write_table(tmp_path, ids(1), retry=3)  # type: ignore[arg-type]
    assert not (tmp_path / "_delta_log").exists()
