"""SET / UNSET TBLPROPERTIES: validation, canonical keys, protocol upgrades and refusals."""

from __future__ import annotations

from typing import Any

import pytest
from logbuilder import commit_info, metadata, protocol, write_commit

import deltalog
from deltalog.commands.properties import set_properties, unset_properties, validate_properties
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.actions import Protocol
from deltalog.storage import InMemoryLogStore


def new_table(name: str, *, proto: dict[str, Any] | None = None, conf: dict[str, str] | None = None) -> deltalog.Table:
    store = InMemoryLogStore(f"memory://{name}")
    md = metadata()
    md["metaData"]["configuration"] = dict(conf or {})
    write_commit(store, 0, commit_info("CREATE TABLE"), proto or protocol(), md)
    return deltalog.Table(f"memory://{name}", store=store)


def test_set_and_unset_commit_metadata_updates() -> None:
    table = new_table("props-basic")
    res = set_properties(table, {"owner": "etl", "delta.logRetentionDuration": "interval 60 days"}, clock=lambda: 77)
    assert res.version == 1 and res.operation == "SET TBLPROPERTIES" and res.timestamp == 77
    snap = table.snapshot()
    assert snap.properties == {"owner": "etl", "delta.logRetentionDuration": "interval 60 days"}
    entry = table.history(limit=1)[0]
    assert entry["operationParameters"] == {
        "properties": '{"owner":"etl","delta.logRetentionDuration":"interval 60 days"}'
    }
    res = unset_properties(table, ["owner"])
    assert res.operation == "UNSET TBLPROPERTIES"
    assert table.snapshot().properties == {"delta.logRetentionDuration": "interval 60 days"}
    assert table.history(limit=1)[0]["operationParameters"] == {"properties": '["owner"]', "ifExists": False}
    assert table.snapshot().metadata.id == snap.metadata.id  # same table, new configuration


def test_comment_is_the_description() -> None:
    """As in delta-spark, the ``comment`` property is the table's description, not configuration."""
    table = new_table("props-comment")
    set_properties(table, {"comment": "one row per click", "owner": "etl"})
    snap = table.snapshot()
    assert snap.metadata.description == "one row per click" and snap.properties == {"owner": "etl"}
    unset_properties(table, ["comment"])
    assert table.snapshot().metadata.description is None
    with pytest.raises(InvalidArgumentError, match=r"no comment.*if_exists=True"):
        unset_properties(table, ["comment"])
    unset_properties(table, ["comment"], if_exists=True)
    assert table.snapshot().properties == {"owner": "etl"}


def test_keys_are_canonical_and_booleans_lower_case() -> None:
    table = new_table("props-canonical")
    set_properties(table, {"DELTA.CHECKPOINTINTERVAL": " 5 ", "delta.enableexpiredlogcleanup": "FALSE"})
    assert table.snapshot().properties == {"delta.checkpointInterval": "5", "delta.enableExpiredLogCleanup": "false"}
    unset_properties(table, ["delta.CheckpointInterval"])
    assert table.snapshot().properties == {"delta.enableExpiredLogCleanup": "false"}


def test_existing_case_variants_are_replaced() -> None:
    table = new_table("props-variants", conf={"delta.appendonly": "false"})
    set_properties(table, {"delta.appendOnly": "false"})
    assert table.snapshot().properties == {"delta.appendOnly": "false"}


def test_python_values_are_accepted() -> None:
    assert validate_properties({"delta.appendOnly": True, "delta.checkpointInterval": 20}) == {
        "delta.appendOnly": "true",
        "delta.checkpointInterval": "20",
    }


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("delta.appendOnly", "yes", "'true' or 'false'"),
        ("delta.logRetentionDuration", "forever", "interval"),
        ("delta.deletedFileRetentionDuration", "interval 1 month", "months"),
        ("delta.checkpointInterval", "0", "at least 1"),
        ("delta.checkpointInterval", "ten", "integer"),
        ("delta.dataSkippingNumIndexedCols", "-2", "at least -1"),
        ("delta.isolationLevel", "SnapshotIsolation", "Serializable"),
        ("delta.columnMapping.mode", "physical", "'none', 'name' or 'id'"),
        ("delta.checkpointPolicy", "v3", "classic"),
        ("delta.minWriterVersion", "8", "at most 7"),
        ("delta.feature.appendOnly", "disabled", "supported"),
    ],
)
def test_invalid_values_name_key_and_value(key: str, value: str, why: str) -> None:
    table = new_table(f"props-invalid-{key}-{value}")
    with pytest.raises(InvalidArgumentError) as info:
        set_properties(table, {key: value})
    message = str(info.value)
    assert key in message and repr(value) in message and why in message
    assert table.latest_version() == 0


def test_unknown_delta_keys_are_refused_other_keys_are_free() -> None:
    table = new_table("props-unknown")
    with pytest.raises(InvalidArgumentError, match=r"unknown table property 'delta\.appendOnlyy'"):
        set_properties(table, {"delta.appendOnlyy": "true"})
    set_properties(table, {"deltaish.thing": "x", "my.delta.key": "anything at all"})
    assert table.snapshot().properties == {"deltaish.thing": "x", "my.delta.key": "anything at all"}


def test_features_are_added_to_the_protocol() -> None:
    table = new_table("props-features")
    set_properties(table, {"delta.enableChangeDataFeed": "true"})
    assert table.snapshot().protocol == Protocol(1, 4)
    set_properties(table, {"delta.enableDeletionVectors": "true"})
    proto = table.snapshot().protocol
    assert (proto.minReaderVersion, proto.minWriterVersion) == (3, 7)
    assert proto.readerFeatures == ("deletionVectors",)
    assert proto.writerFeatures is not None and {"changeDataFeed", "deletionVectors"} <= set(proto.writerFeatures)


def test_explicit_features_and_versions_change_only_the_protocol() -> None:
    table = new_table("props-explicit")
    set_properties(table, {"delta.minWriterVersion": "4"})
    assert table.snapshot().protocol == Protocol(1, 4)
    assert table.snapshot().properties == {}
    set_properties(table, {"delta.feature.domainMetadata": "Supported"})
    proto = table.snapshot().protocol
    assert proto.minWriterVersion == 7 and proto.writerFeatures is not None
    assert {"domainMetadata", "changeDataFeed", "appendOnly"} <= set(proto.writerFeatures)
    assert table.snapshot().properties == {}
    set_properties(table, {"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"})
    assert table.snapshot().protocol.readerFeatures == ()
    with pytest.raises(InvalidArgumentError, match="only be raised"):
        set_properties(table, {"delta.minWriterVersion": "5"})
    with pytest.raises(UnsupportedFeatureError, match="noSuchFeature"):
        set_properties(table, {"delta.feature.noSuchFeature": "supported"})


def test_reader_version_three_needs_writer_seven() -> None:
    table = new_table("props-r3")
    with pytest.raises(InvalidArgumentError, match="minWriterVersion=7"):
        set_properties(table, {"delta.minReaderVersion": "3"})


def test_features_deltalog_cannot_write_are_refused() -> None:
    table = new_table("props-unwritable")
    with pytest.raises(UnsupportedFeatureError, match="icebergCompatV3"):
        set_properties(table, {"delta.feature.icebergCompatV3": "supported"})
    assert table.latest_version() == 0
    set_properties(table, {"delta.checkpointPolicy": "classic"})
    set_properties(table, {"delta.checkpointPolicy": "v2"})  # V2 checkpoints are written: the feature is added
    assert "v2Checkpoint" in (table.snapshot().protocol.writerFeatures or ())


def test_managed_and_constraint_keys_are_refused() -> None:
    table = new_table("props-managed", conf={"delta.constraints.pos": "id > 0"}, proto=protocol(1, 3))
    with pytest.raises(InvalidArgumentError, match="ADD CONSTRAINT"):
        set_properties(table, {"delta.constraints.x": "id > 1"})
    with pytest.raises(InvalidArgumentError, match="DROP CONSTRAINT"):
        unset_properties(table, ["delta.constraints.pos"])
    with pytest.raises(InvalidArgumentError, match="recorded automatically"):
        set_properties(table, {"delta.inCommitTimestampEnablementVersion": "3"})
    with pytest.raises(InvalidArgumentError, match="only be added"):
        unset_properties(table, ["delta.feature.appendOnly"])


def test_column_mapping_mode_changes() -> None:
    table = new_table("props-cm")
    set_properties(table, {"delta.columnMapping.mode": "None"})  # same mode: fine
    assert table.snapshot().properties == {"delta.columnMapping.mode": "none"}
    with pytest.raises(UnsupportedFeatureError, match=r"MODE_CHANGE.*'none' to 'id'"):
        set_properties(table, {"delta.columnMapping.mode": "id"})
    set_properties(table, {"delta.columnMapping.mode": "name"})  # 'none' -> 'name' is the one allowed change
    assert table.snapshot().properties["delta.columnMapping.mode"] == "name"
    with pytest.raises(UnsupportedFeatureError, match=r"MODE_CHANGE.*'name' to 'none'"):
        set_properties(table, {"delta.columnMapping.mode": "none"})


def test_unset_missing_keys() -> None:
    table = new_table("props-missing", conf={"delta.futureThing": "1"})
    with pytest.raises(InvalidArgumentError, match=r"not set.*UNSET TBLPROPERTIES IF EXISTS, or if_exists=True"):
        unset_properties(table, ["owner"])
    with pytest.raises(InvalidArgumentError, match="unknown table property"):
        unset_properties(table, ["delta.typo"])
    unset_properties(table, ["owner", "delta.typo", "delta.futureThing"], if_exists=True)
    assert table.snapshot().properties == {}
    entry = table.history(limit=1)[0]
    assert entry["operationParameters"] == {
        "properties": '["owner","delta.typo","delta.futureThing"]',
        "ifExists": True,
    }


def test_in_commit_timestamps_enable_and_disable() -> None:
    table = new_table("props-ict")
    set_properties(table, {"delta.enableInCommitTimestamps": "true"}, clock=lambda: 1_000)
    props = table.snapshot().properties
    assert props["delta.inCommitTimestampEnablementVersion"] == "1"
    assert "delta.inCommitTimestampEnablementTimestamp" in props
    set_properties(table, {"delta.enableInCommitTimestamps": "false"})
    assert table.snapshot().properties == {"delta.enableInCommitTimestamps": "false"}


def test_empty_requests_are_refused() -> None:
    table = new_table("props-empty")
    with pytest.raises(InvalidArgumentError, match="at least one"):
        set_properties(table, {})
    with pytest.raises(InvalidArgumentError, match="at least one"):
        unset_properties(table, [])
    with pytest.raises(InvalidArgumentError, match="non-empty string"):
        set_properties(table, {"": "x"})
    with pytest.raises(InvalidArgumentError, match="string value"):
        set_properties(table, {"owner": None})  # type: ignore[dict-item]
