"""DROP FEATURE in the kernel (``Table.drop_feature``): traces removed first (deletion vectors purged,
v2 checkpoints followed by a classic one, type-widened files rewritten), then one ``DROP FEATURE``
commit; reader-writer features protected by ``checkpointProtection`` or, with ``truncate_history``, by
truncating the log once the retention period has passed. After each drop an independent reader (DuckDB,
and delta-rs where it reads the table) sees the same rows; refusals commit nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.commands.drop_feature import protocol_without
from deltalog.errors import FeatureDropError
from deltalog.log.cleanup import cleanup_expired_logs
from deltalog.log.segment import complete_checkpoints, list_log
from deltalog.protocol.actions import Protocol
from deltalog.protocol.features import reader_features, writer_features
from readers import delta_rs_rows, duckdb_rows

HOUR = 3_600_000


def _features(table: deltalog.Table) -> set[str]:
    p = table.snapshot().protocol
    return set(reader_features(p)) | set(writer_features(p))


def _ids(table: deltalog.Table, version: int | None = None) -> list[int]:
    return sorted(table.snapshot(version=version).to_arrow(columns=["id"]).column("id").to_pylist())


def _dv_table(path: str) -> deltalog.Table:
    deltalog.write_table(path, pa.table({"id": list(range(10))}), properties={"delta.enableDeletionVectors": "true"})
    deltalog.write_table(path, pa.table({"id": list(range(10, 20))}), mode="append")
    table = deltalog.Table(path)
    assert table.delete([("id", "<", 3)]).used_deletion_vectors
    assert table.delete([("id", ">", 17)]).used_deletion_vectors
    return table


def test_drop_deletion_vectors_with_checkpoint_protection(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = _dv_table(path)
    before = table.latest_version()
    want = list(range(3, 18))
    result = table.drop_feature("deletionvectors")  # names match ignoring case, as in delta-spark
    assert result.feature == "deletionVectors" and len(result.prepared_versions) == 2
    snap = table.snapshot()
    assert snap.version == result.version
    assert "deletionVectors" not in _features(table) and "checkpointProtection" in _features(table)
    assert snap.protocol == Protocol(1, 7, None, ("checkpointProtection",))
    assert snap.properties["delta.requireCheckpointProtectionBeforeVersion"] == str(result.version)
    assert "delta.enableDeletionVectors" not in snap.properties
    assert snap.add_files().column("deletionVector").drop_null().length() == 0
    assert result.version in complete_checkpoints(list_log(table.store, 0))
    assert [h["operation"] for h in table.history(limit=3)] == ["DROP FEATURE", "REORG", "SET TBLPROPERTIES"]
    assert table.history(limit=1)[0]["operationParameters"] == {"featureName": "deletionVectors",
                                                                 "truncateHistory": False}
    assert _ids(table) == want and _ids(table, before) == want  # time travel before the drop still reads
    assert [r[0] for r in duckdb_rows(path, ["id"])] == want
    assert [r[0] for r in delta_rs_rows(path, ["id"])] == want
    deltalog.write_table(path, pa.table({"id": [99]}), mode="append")  # the table stays writable
    assert _ids(table)[-1] == 99


def test_checkpoint_protection_keeps_history_whole(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = _dv_table(path)
    table.checkpoint()
    first = table.latest_version()
    drop = table.drop_feature("deletionVectors").version
    assert drop is not None and drop > first
    for i in range(3):
        deltalog.write_table(path, pa.table({"id": [100 + i]}), mode="append")
    now = table.history(limit=1)[0]["timestamp"]
    # a cutoff between the checkpoints would delete part of the protected history: nothing goes
    stamps = {h["version"]: h["timestamp"] for h in table.history()}
    assert cleanup_expired_logs(table, retention=now - stamps[first], clock=lambda: now, truncate_to_day=False) == []
    assert min(f.version for f in list_log(table.store, 0)) == 0
    # a cutoff past the drop removes it all in one go
    deleted = cleanup_expired_logs(table, retention=now - stamps[drop], clock=lambda: now, truncate_to_day=False)
    assert deleted and min(f.version for f in list_log(table.store, 0)) == drop


def test_truncate_history_waits_for_the_retention_period(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = _dv_table(path)
    with pytest.raises(FeatureDropError, match=r"DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD.*removed in versions"):
        table.drop_feature("deletionVectors", truncate_history=True)
    prepared = table.latest_version()
    assert "deletionVectors" in _features(table)  # traces gone, feature still there
    assert table.snapshot().add_files().column("deletionVector").drop_null().length() == 0
    with pytest.raises(FeatureDropError, match=r"DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD.*younger"):
        table.drop_feature("deletionVectors", truncate_history=True)  # the last day still has them
    assert table.latest_version() == prepared
    later = table.history(limit=1)[0]["timestamp"] + 25 * HOUR
    result = table.drop_feature("deletionVectors", truncate_history=True, clock=lambda: later)
    assert result.truncated_before == prepared and result.version == prepared + 1
    assert table.snapshot().protocol == Protocol(1, 1)  # no feature left
    assert min(f.version for f in list_log(table.store, 0)) == prepared
    assert table.history(limit=1)[0]["operationParameters"]["truncateHistory"] is True
    assert _ids(table) == list(range(3, 18)) == [r[0] for r in duckdb_rows(path, ["id"])]


def test_drop_v2_checkpoint(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1, 2]}), properties={"delta.checkpointPolicy": "v2"})
    deltalog.write_table(path, pa.table({"id": [3]}), mode="append")
    table = deltalog.Table(path)
    table.checkpoint()
    assert any(f.is_v2_checkpoint for f in list_log(table.store, 0))
    result = table.drop_feature("v2Checkpoint")
    assert "v2Checkpoint" not in _features(table)
    assert table.snapshot().properties["delta.checkpointPolicy"] == "classic"
    latest = max(complete_checkpoints(list_log(table.store, 0)))
    assert latest == result.version
    assert not any(f.is_v2_checkpoint for f in list_log(table.store, 0) if f.version == latest)
    last = json.loads((tmp_path / "t" / "_delta_log" / "_last_checkpoint").read_text())
    assert last["version"] == latest and "v2Checkpoint" not in json.dumps(last)
    assert _ids(table) == [1, 2, 3] == [r[0] for r in duckdb_rows(path, ["id"])]
    assert [r[0] for r in delta_rs_rows(path, ["id"])] == [1, 2, 3]  # delta-rs refused the v2 table


def test_drop_type_widening_rewrites_old_files(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": pa.array([1, 2], pa.int32()), "s": ["a", "b"]}),
                         properties={"delta.enableTypeWidening": "true"})
    table = deltalog.Table(path)
    table.set_column_type("id", "bigint")
    deltalog.write_table(path, pa.table({"id": pa.array([2**40], pa.int64()), "s": ["c"]}), mode="append")
    result = table.drop_feature("typeWidening")
    snap = table.snapshot()
    assert "typeWidening" not in _features(table) and "delta.typeChanges" not in str(snap.metadata.schemaString)
    assert "delta.enableTypeWidening" not in snap.properties
    types = {pq.read_schema(tmp_path / "t" / r["path"]).field("id").type for r in snap.add_files().to_pylist()}
    assert types == {pa.int64()}
    ops = [h["operation"] for h in table.history(limit=len(result.prepared_versions) + 1)]
    assert ops == ["DROP FEATURE", "SET TBLPROPERTIES", "REORG", "SET TBLPROPERTIES"]
    assert table.history(limit=3)[-1]["operationMetrics"]["numAddedFiles"] == "1"  # only the old file
    want = [(1, "a"), (2, "b"), (2**40, "c")]
    assert duckdb_rows(path, ["id", "s"]) == want
    assert delta_rs_rows(path, ["id", "s"]) == want  # delta-rs refused the typeWidening table


def test_writer_features_drop_in_one_commit(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1]}), properties={"delta.enableInCommitTimestamps": "true"})
    table = deltalog.Table(path)
    table.add_constraint("positive", "id > 0")
    with pytest.raises(FeatureDropError, match="HISTORY_TRUNCATION_NOT_ALLOWED"):
        table.drop_feature("inCommitTimestamp", truncate_history=True)
    version = table.latest_version()
    result = table.drop_feature("inCommitTimestamp")
    assert result.version == version + 1 and not result.prepared_versions
    snap = table.snapshot()
    assert not any(k.startswith("delta.inCommitTimestamp") or k == "delta.enableInCommitTimestamps"
                   for k in snap.properties)
    assert "inCommitTimestamp" not in _features(table) and "checkpointProtection" not in _features(table)
    with pytest.raises(FeatureDropError, match=r"DELTA_CANNOT_DROP_CHECK_CONSTRAINT_FEATURE.*positive"):
        table.drop_feature("checkConstraints")
    assert table.latest_version() == result.version
    table.drop_constraint("positive")
    table.drop_feature("checkConstraints")
    assert table.snapshot().protocol == Protocol(1, 1)
    deltalog.write_table(path, pa.table({"id": [-1]}), mode="append")  # no constraint, no feature
    assert _ids(table) == [-1, 1]


def test_refusals_commit_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1]}), properties={
        "delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true",
        "delta.columnMapping.mode": "name"})
    table = deltalog.Table(path)
    version = table.latest_version()
    cases = [
        ("noSuchFeature", "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE.*not a table feature"),
        ("changeDataFeed", "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"),
        ("rowTracking", "DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE"),
        ("columnMapping", "NONREMOVABLE.*logical column names"),
        ("", "a feature name is needed"),
    ]
    for name, message in cases:
        with pytest.raises(FeatureDropError, match=message):
            table.drop_feature(name)
    plan = table.drop_feature("deletionVectors", dry_run=True)
    assert plan.version is None and plan.steps[0] == "remove property delta.enableDeletionVectors=true"
    assert table.latest_version() == version
    legacy = str(tmp_path / "legacy")
    deltalog.write_table(legacy, pa.table({"id": [1]}), properties={"delta.appendOnly": "true"})
    with pytest.raises(FeatureDropError, match=r"NONREMOVABLE_FEATURE.*appendOnly"):
        deltalog.Table(legacy).drop_feature("appendOnly")
    deltalog.Table(legacy).add_constraint("c", "id > 0")
    assert deltalog.Table(legacy).snapshot().protocol == Protocol(1, 3)
    deltalog.Table(legacy).drop_constraint("c")
    with pytest.raises(FeatureDropError, match="implied by the legacy protocol"):
        deltalog.Table(legacy).drop_feature("checkConstraints")


def test_drop_checkpoint_protection_after_truncation(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = _dv_table(path)
    drop = table.drop_feature("deletionVectors").version
    with pytest.raises(FeatureDropError, match="CHECKPOINT_PROTECTION_WAIT_FOR_RETENTION_PERIOD"):
        table.drop_feature("checkpointProtection")
    with pytest.raises(FeatureDropError, match="must be checkpointed and older"):
        table.drop_feature("checkpointProtection", truncate_history=True)
    later = table.history(limit=1)[0]["timestamp"] + 25 * HOUR
    result = table.drop_feature("checkpointProtection", truncate_history=True, clock=lambda: later)
    assert result.truncated_before == drop and min(f.version for f in list_log(table.store, 0)) == drop
    assert table.snapshot().protocol == Protocol(1, 1)
    assert "delta.requireCheckpointProtectionBeforeVersion" not in table.snapshot().properties
    assert _ids(table) == list(range(3, 18))


@pytest.mark.parametrize(("protocol", "feature", "want"), [
    (Protocol(3, 7, ("deletionVectors", "v2Checkpoint"), ("deletionVectors", "v2Checkpoint")), "v2Checkpoint",
     Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))),
    (Protocol(2, 7, None, ("columnMapping", "inCommitTimestamp")), "inCommitTimestamp",
     Protocol(2, 7, None, ("columnMapping",))),
    (Protocol(1, 7, None, ("appendOnly", "checkConstraints", "invariants")), "checkConstraints", Protocol(1, 2)),
])
def test_protocol_without(protocol: Protocol, feature: str, want: Protocol) -> None:
    assert protocol_without(protocol, feature) == want
