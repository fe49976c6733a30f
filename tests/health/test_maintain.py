"""``maintain``: the plan it makes for a table with known defects (many small files in one partition, 30% of a
file's rows deleted by a deletion vector, a long log without a checkpoint, a tombstone past the retention),
the table after it (rows unchanged, delta-rs and DuckDB agree, health back within the policy), dry runs,
policies from table properties, and concurrent writers during a run."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import DeltaError, InvalidArgumentError
from deltalog.maintenance import MaintenancePolicy, MaintenanceStep, maintain, plan_maintenance
from readers import delta_rs_query_rows, duckdb_rows, sort_key

T0 = 1_700_000_000_000
HOUR = 3_600_000
DAY = 24 * HOUR
NOW = T0 + 14 * HOUR + 8 * DAY  # the tombstones of v14 are 8 days old: past the 7-day retention
PROPS = {"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "1000",
         "delta.targetFileSize": "8000",  # small files: below a quarter of it (2,000 bytes)
         "deltalog.maintenance.checkpointCommits": "10"}


def _rows(ids: range, part: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "part": [part] * len(ids)})


def _build(path: Path, props: dict[str, str] = PROPS) -> dict[str, Any]:
    """v0: 3,000 rows in ``big``; v1-v12: a row each in ``small``; v13: two rows in ``gone``, deleted at v14 (a
    tombstone at T0 + 14 h); v15: DELETE of ids < 900 with a deletion vector (30% of big's file)."""
    deltalog.write_table(path, _rows(range(3000), "big"), partition_by=["part"], properties=props, clock=lambda: T0)
    for i in range(12):
        deltalog.write_table(path, _rows(range(10_000 + i, 10_001 + i), "small"), mode="append",
                             clock=lambda i=i: T0 + (i + 1) * HOUR)
    deltalog.write_table(path, _rows(range(20_000, 20_002), "gone"), mode="append", clock=lambda: T0 + 13 * HOUR)
    table = deltalog.Table(path)
    gone = [f for f in table.snapshot().add_files().to_pylist() if dict(f["partitionValues"])["part"] == "gone"]
    table.delete("part = 'gone'", clock=lambda: T0 + 14 * HOUR)
    table.delete("id < 900", clock=lambda: T0 + 15 * HOUR)
    return {"path": path, "files": table.snapshot().add_files().to_pylist(), "gone": gone}


@pytest.fixture
def defects(tmp_path: Path) -> dict[str, Any]:
    return _build(tmp_path / "defects")


def _part(files: list[dict[str, Any]], part: str) -> list[dict[str, Any]]:
    return [f for f in files if dict(f["partitionValues"])["part"] == part]


def _kernel_rows(path: Path) -> list[tuple[Any, ...]]:
    t = deltalog.Table(path).snapshot().to_arrow(columns=["id", "part"])
    return sorted(zip(t.column("id").to_pylist(), t.column("part").to_pylist(), strict=True), key=sort_key)


def test_plan_for_known_defects(defects: dict[str, Any]) -> None:
    plan = plan_maintenance(deltalog.Table(defects["path"]), clock=lambda: NOW)
    small, big, gone = _part(defects["files"], "small"), _part(defects["files"], "big"), defects["gone"]
    assert plan.version == 15
    assert [s.action for s in plan.steps] == ["compact", "purge", "checkpoint", "vacuum"]
    compact, purge, checkpoint, vacuum = plan.steps
    assert (compact.num_files, compact.num_bytes) == (12, sum(f["size"] for f in small))
    assert compact.partitions == ({"part": "small"},)
    assert (compact.max_file_size, compact.min_file_size) == (8000, 2000)
    assert (purge.num_files, purge.num_bytes, purge.paths) == (1, big[0]["size"], (big[0]["path"],))
    assert "900 deleted rows" in purge.reason
    assert checkpoint.reason == "16 commits and no checkpoint (limit 10)"
    assert (vacuum.num_files, vacuum.num_bytes, vacuum.lite) == (1, gone[0]["size"], True)
    assert vacuum.paths == (gone[0]["path"],)
    assert plan.bytes_rewritten == compact.num_bytes + purge.num_bytes and plan.bytes_deleted == gone[0]["size"]
    assert plan.health.num_small_files == 12 and plan.health.num_deleted_rows == 900
    doc = json.loads(json.dumps(plan.to_dict()))
    assert [s["action"] for s in doc["steps"]] == ["compact", "purge", "checkpoint", "vacuum"]
    assert doc["steps"][0]["partitions"] == [{"part": "small"}]


def test_dry_run_changes_nothing(defects: dict[str, Any]) -> None:
    table = deltalog.Table(defects["path"])
    listing = sorted(p.name for p in Path(defects["path"]).rglob("*"))
    result = table.maintain(dry_run=True, clock=lambda: NOW)
    assert result.dry_run and [o.status for o in result.outcomes] == ["planned"] * 4
    assert result.health_after is None
    assert table.latest_version() == 15 and sorted(p.name for p in Path(defects["path"]).rglob("*")) == listing


def test_maintain_fixes_the_table(defects: dict[str, Any]) -> None:
    path = defects["path"]
    before = _kernel_rows(path)
    steps: list[tuple[str, int]] = []
    result = deltalog.Table(path).maintain(clock=lambda: NOW, progress=lambda s, n: steps.append((s.action, n)))
    outcomes = {o.step.action: o for o in result.outcomes}
    assert [o.status for o in result.outcomes] == ["done"] * 4, result.outcomes
    assert (outcomes["compact"].version, outcomes["purge"].version, outcomes["checkpoint"].version) == (16, 17, 17)
    assert outcomes["vacuum"].version == 19  # VACUUM START, VACUUM END
    assert (outcomes["vacuum"].num_files, outcomes["vacuum"].num_bytes) == (1, defects["gone"][0]["size"])
    assert not Path(path, defects["gone"][0]["path"]).exists()
    assert ("compact", outcomes["compact"].step.num_bytes) in steps  # the bar ends full
    history = deltalog.Table(path).history()
    ops = {h["version"]: (h["operation"], h["operationParameters"]) for h in history}
    assert ops[16][0] == "OPTIMIZE" and ops[17] == ("REORG", {"predicate": "[]", "applyPurge": True})
    # rows unchanged, for every reader
    assert _kernel_rows(path) == before
    assert delta_rs_query_rows(str(path), ["id", "part"]) == before
    assert duckdb_rows(str(path), ["id", "part"]) == before
    after = result.health_after
    assert after is not None
    assert (after.num_deleted_rows, after.dv_files, after.deleted_row_share) == (0, 0, 0.0)
    assert after.checkpoint_version == 17 and after.commits_since_checkpoint == 2
    assert after.num_files == 2
    # a table opened afresh reads the checkpoint, which dropped the expired tombstones the vacuum dealt with
    assert deltalog.Table(path).health(clock=lambda: NOW).expired_tombstones == 0
    assert plan_maintenance(deltalog.Table(path), clock=lambda: NOW).steps == ()  # nothing left to do


def test_policy_from_table_properties(tmp_path: Path) -> None:
    props = {**PROPS, "deltalog.maintenance.deletedRowShare": "0.5", "deltalog.maintenance.minSmallFiles": "20",
             "deltalog.maintenance.vacuum": "false", "deltalog.maintenance.checkpointCommits": "100"}
    d = _build(tmp_path / "t", props)
    plan = plan_maintenance(deltalog.Table(d["path"]), clock=lambda: NOW)
    assert plan.steps == ()  # 30% < 50%, 12 < 20 small files, 16 < 100 commits, vacuum off
    assert (plan.policy.deleted_row_share, plan.policy.min_small_files, plan.policy.vacuum) == (0.5, 20, False)
    assert [s.action for s in plan_maintenance(deltalog.Table(d["path"]), plan.policy.with_(deleted_row_share=0.3),
                                               clock=lambda: NOW).steps] == ["purge"]


@pytest.mark.parametrize(("key", "value", "message"), [
    ("deltalog.maintenance.smallFileShare", "1.5", "is not a share between 0 and 1"),
    ("deltalog.maintenance.minSmallFiles", "many", "is not a positive whole number"),
    ("deltalog.maintenance.vacuum", "sometimes", "is not true or false"),
    ("deltalog.maintenance.afterCommitBudget", "soon", "is not a duration"),
    ("deltalog.maintenance.smallFiles", "3", "unknown table property 'deltalog.maintenance.smallFiles'"),
])
def test_bad_policy_properties_are_named(tmp_path: Path, key: str, value: str, message: str) -> None:
    path = tmp_path / "t"
    deltalog.write_table(path, _rows(range(3), "a"), properties={key: value})
    with pytest.raises(InvalidArgumentError, match=message) as info:
        deltalog.Table(path).maintain(dry_run=True)
    assert str(path) in str(info.value) and key in str(info.value)


def test_policy_values() -> None:
    p = MaintenancePolicy.from_properties({"deltalog.maintenance.afterCommitBudget": "2 minutes",
                                           "deltalog.maintenance.afterCommit": "TRUE"})
    assert (p.after_commit, p.after_commit_budget_ms) == (True, 120_000)
    assert MaintenancePolicy.from_properties({"deltalog.maintenance.afterCommitBudget": "1500ms"}
                                             ).after_commit_budget_ms == 1500
    assert MaintenancePolicy.from_properties({"delta.enableExpiredLogCleanup": "false"}).cleanup_log is False
    with pytest.raises(InvalidArgumentError, match="min_small_files must be a positive whole number"):
        MaintenancePolicy(min_small_files=0)
    with pytest.raises(DeltaError, match="unknown maintenance step 'optimize'"):
        plan_maintenance(deltalog.Table("memory://nothing-here"), actions=["optimize"])


def test_a_concurrent_append_during_compaction_is_kept(defects: dict[str, Any]) -> None:
    path = defects["path"]
    appended: list[int] = []

    def append_once(step: MaintenanceStep, done: int) -> None:
        if step.action == "compact" and not appended:
            appended.append(deltalog.write_table(path, _rows(range(50_000, 50_001), "small"), mode="append").version)

    result = maintain(deltalog.Table(path), actions=["compact"], clock=lambda: NOW, progress=append_once)
    assert appended == [16] and result.outcomes[0].status == "done" and result.outcomes[0].version == 17
    small = _part(deltalog.Table(path).snapshot().add_files().to_pylist(), "small")
    assert len(small) == 2  # the compacted file and the appended one
    assert (50_000, "small") in _kernel_rows(path)


def test_a_concurrent_delete_makes_the_compaction_plan_again(defects: dict[str, Any]) -> None:
    path = defects["path"]
    deleted: list[int] = []

    def delete_once(step: MaintenanceStep, done: int) -> None:
        if step.action == "compact" and not deleted:
            res = deltalog.Table(path).delete("id = 10003", use_deletion_vectors=False)
            deleted.append(res.version)

    before = [r for r in _kernel_rows(path) if r[0] != 10_003]
    result = maintain(deltalog.Table(path), actions=["compact"], clock=lambda: NOW, progress=delete_once)
    assert deleted == [16] and result.outcomes[0].status == "done" and result.outcomes[0].version == 17
    assert _kernel_rows(path) == before
    assert len(_part(deltalog.Table(path).snapshot().add_files().to_pylist(), "small")) == 1


def test_log_cleanup_after_a_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "t"
    props = {"delta.checkpointInterval": "5"}
    deltalog.write_table(path, _rows(range(3), "a"), properties=props, clock=lambda: T0)
    for i in range(6):
        deltalog.write_table(path, _rows(range(10 + i, 11 + i), "a"), mode="append", clock=lambda i=i: T0 + i + 1)
    later = int(time.time() * 1000) + 40 * DAY  # the log files' times are the clock's: past the 30-day retention
    plan = plan_maintenance(deltalog.Table(path), actions=["cleanup-log"], clock=lambda: later)
    (step,) = plan.steps
    assert step.action == "cleanup-log" and step.num_files > 0
    assert all(p.startswith("_delta_log/") for p in step.paths)
    assert step.num_bytes == sum(Path(path, p).stat().st_size for p in step.paths)
    result = maintain(deltalog.Table(path), actions=["cleanup-log"], clock=lambda: later)
    assert result.outcomes[0].num_files == step.num_files
    assert not any(Path(path, p).exists() for p in step.paths)
    assert len(_kernel_rows(path)) == 9


def test_unpartitioned_table_and_an_empty_plan(tmp_path: Path) -> None:
    path = tmp_path / "flat"
    for i in range(5):
        deltalog.write_table(path, pa.table({"id": [i]}), mode="append")
    plan = plan_maintenance(deltalog.Table(path))
    assert [(s.action, s.num_files, s.partitions) for s in plan.steps] == [("compact", 5, ({},))]
    assert maintain(deltalog.Table(path)).outcomes[0].status == "done"
    assert deltalog.Table(path).snapshot().add_files().num_rows == 1
    assert maintain(deltalog.Table(path)).outcomes == ()


def test_a_failed_step_is_reported_and_the_others_run(defects: dict[str, Any], monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    import deltalog.maintenance.run as run
    from deltalog.maintenance import MaintenanceError

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise DeltaError("storage said no", table=str(defects["path"]))

    monkeypatch.setattr(run, "write_checkpoint", broken)
    with pytest.raises(MaintenanceError, match="1 of 4 steps failed \\(checkpoint failed: storage said no\\)") as info:
        maintain(deltalog.Table(defects["path"]), clock=lambda: NOW)
    assert [o.status for o in info.value.result.outcomes] == ["done", "done", "failed", "done"]
    assert "done: compact (version 16), purge (version 17), vacuum (version 19)" in str(info.value)


def test_step_description() -> None:
    assert MaintenanceStep("compact", "why", 3, 3 << 20).describe() == "compact: rewrite 3 files (3.0 MiB); why"
    with pytest.raises(InvalidArgumentError, match="min_deleted_share must be a share between 0 and 1"):
        from deltalog.commands.compact import purge

        purge(deltalog.Table("memory://x"), min_deleted_share=2)


def test_after_commit_compacts_the_partitions_written(tmp_path: Path) -> None:
    path = tmp_path / "t"
    props = {"deltalog.maintenance.afterCommit": "true", "deltalog.maintenance.minSmallFiles": "3"}
    for i in range(2):
        deltalog.write_table(path, _rows(range(i, i + 1), "a"), partition_by=["part"], properties=props, mode="append")
    deltalog.write_table(path, _rows(range(100, 101), "b"), mode="append")
    assert deltalog.Table(path).latest_version() == 2  # two small files in a, one in b: below the thresholds
    third = deltalog.write_table(path, _rows(range(2, 3), "a"), mode="append")
    assert third.version == 3
    table = deltalog.Table(path)
    assert table.latest_version() == 4 and table.history(1)[0]["operation"] == "OPTIMIZE"
    files = table.snapshot().add_files().to_pylist()
    assert sorted(dict(f["partitionValues"])["part"] for f in files) == ["a", "b"]
    assert sorted(_kernel_rows(path)) == [(0, "a"), (1, "a"), (2, "a"), (100, "b")]


def test_after_commit_never_fails_the_commit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "t"
    props = {"deltalog.maintenance.afterCommit": "true", "deltalog.maintenance.minSmallFiles": "bad"}
    assert deltalog.write_table(path, _rows(range(1), "a"), properties=props).version == 0
    assert deltalog.write_table(path, _rows(range(1, 2), "a"), mode="append").version == 1
    assert "maintenance after a commit" in caplog.text and "deltalog.maintenance.minSmallFiles='bad'" in caplog.text
    assert _kernel_rows(path) == [(0, "a"), (1, "a")]


def test_a_run_past_its_deadline_commits_nothing(defects: dict[str, Any]) -> None:
    result = maintain(deltalog.Table(defects["path"]), clock=lambda: NOW, deadline=time.monotonic() - 1)
    assert [o.status for o in result.outcomes] == ["skipped"] * 4
    assert deltalog.Table(defects["path"]).latest_version() == 15


def test_health_history_reaches_behind_the_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for i in range(5):
        deltalog.write_table(path, _rows(range(i, i + 1), "a"), mode="append", partition_by=["part"])
    table = deltalog.Table(path)
    optimized = table.compact().version
    table.checkpoint()
    deltalog.write_table(path, _rows(range(9, 10), "a"), mode="append")
    h = deltalog.Table(path).health()
    assert h.checkpoint_version == optimized == 5
    assert h.last_optimize is not None and h.last_optimize.version == 5
    assert h.history_commits_scanned == 7 and h.history_complete
