"""Damaged, cleaned-up or unusual logs: every failure is a deltalog error naming table, version and file.

Covers checkpoint row validation, incomplete multi-part checkpoints, missing or empty ``_delta_log``,
malformed partition values and partition columns, time travel below the cleaned-up part of the log,
history timestamps that agree with timestamp time travel, empty commits and the Python floor.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from logbuilder import add, commit_info, metadata, new_table, protocol, write_commit

import deltalog
from deltalog.errors import (
    CorruptLogError,
    InvalidTableError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltalog.log.timestamps import to_millis
from deltalog.protocol.actions import Format, Metadata, Protocol
from deltalog.storage import InMemoryLogStore, LocalLogStore
from deltalog.txn.operations import SetTableProperties
from deltalog.txn.writer_features import upgrade_protocol

ROOT = Path(__file__).resolve().parents[2]


def _row(i: int, k: str) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64()), "k": [k]})


def _drop_commits_before(path: Path, version: int) -> None:
    """Delete the commits before ``version`` (as log cleanup does) and every ``.crc``."""
    for f in (path / "_delta_log").iterdir():
        if f.suffix == ".crc" or (f.suffix == ".json" and f.name[:20].isdigit() and int(f.name[:20]) < version):
            f.unlink()


def _checkpointed(path: Path, *, parts: int | None = None) -> tuple[int, list[Path]]:
    """A partitioned table with live files and a tombstone, checkpointed at its latest version."""
    deltalog.write_table(path, _row(0, "a"), partition_by=["k"])
    deltalog.write_table(path, _row(1, "b"), mode="append")
    deltalog.write_table(path, _row(2, "a"), mode="overwrite", predicate=[("k", "=", "a")])
    res = deltalog.Table(path).checkpoint(parts=parts)
    return res.version, [path / p for p in res.paths]


def _null_first(cp: Path, action: str, field: str) -> int:
    """Rewrite the checkpoint with ``action.field`` null in the first row holding that action."""
    t = pq.read_table(cp)
    rows = t.to_pylist()
    idx = next(i for i, r in enumerate(rows) if r.get(action))
    rows[idx][action][field] = None
    pq.write_table(pa.Table.from_pylist(rows, schema=t.schema), cp)
    return idx


# ------------------------------------------------------------------------------- 1: checkpoint rows


@pytest.mark.parametrize(
    ("action", "field"),
    [
        ("add", "path"),
        ("add", "size"),
        ("add", "modificationTime"),
        ("add", "dataChange"),
        ("add", "partitionValues"),
        ("remove", "path"),
        ("remove", "dataChange"),
    ],
)
def test_checkpoint_rows_missing_a_required_field_are_corrupt(tmp_path: Path, action: str, field: str) -> None:
    version, (cp,) = _checkpointed(tmp_path)
    row = _null_first(cp, action, field)
    # With the commits still there the unreadable checkpoint is skipped and the log replayed instead.
    assert sorted(deltalog.Table(tmp_path).snapshot().to_arrow().column("id").to_pylist()) == [1, 2]
    _drop_commits_before(tmp_path, version)
    with pytest.raises(CorruptLogError, match=rf"{action} action at row {row} .*'{field}'") as err:
        deltalog.Table(tmp_path).snapshot()
    assert err.value.file == f"_delta_log/{cp.name}" and err.value.version == version
    assert err.value.table == str(tmp_path) and f"column {action}.{field}" in str(err.value)


def test_checkpoint_field_of_an_impossible_type_is_corrupt(tmp_path: Path) -> None:
    version, (cp,) = _checkpointed(tmp_path)
    t = pq.read_table(cp)
    add_type = t.schema.field("add").type
    new_add = pa.struct([pa.field(f.name, pa.string() if f.name == "size" else f.type) for f in add_type])
    rows = t.to_pylist()
    for r in rows:
        if r.get("add"):
            r["add"]["size"] = "big"
    pq.write_table(pa.Table.from_pylist(rows, schema=t.schema.set(t.schema.get_field_index("add"),
                                                                   pa.field("add", new_add))), cp)
    _drop_commits_before(tmp_path, version)
    with pytest.raises(CorruptLogError, match="wrong type") as err:
        deltalog.Table(tmp_path).snapshot()
    assert err.value.file == f"_delta_log/{cp.name}"


# ------------------------------------------------------------------------ 2: incomplete checkpoints


def test_incomplete_multipart_checkpoint_is_named_when_nothing_else_can_serve(tmp_path: Path) -> None:
    version, parts = _checkpointed(tmp_path, parts=3)
    assert len(parts) == 3
    _drop_commits_before(tmp_path, version)
    parts[1].unlink()
    with pytest.raises(InvalidTableError, match=r"part 2 of 3 is missing") as err:
        deltalog.Table(tmp_path).snapshot()
    assert parts[1].name in str(err.value) and err.value.file == f"_delta_log/{parts[1].name}"
    assert f"checkpoint at version {version} is incomplete" in str(err.value)
    for p in parts:  # nothing but the remains of the checkpoint: still named
        if p.exists():
            p.unlink()
    (tmp_path / "_delta_log" / f"{version:020d}.json").unlink()
    parts[0].write_bytes(b"x")
    with pytest.raises(TableNotFoundError, match=r"no complete checkpoint.*parts 2, 3 of 3 are missing"):
        deltalog.Table(tmp_path).snapshot()


# --------------------------------------------------------------------------- 3: no table, empty log


def test_history_without_a_table_is_table_not_found(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(TableNotFoundError, match="there is no _delta_log directory"):
        deltalog.Table(tmp_path / "plain").history()
    (tmp_path / "empty" / "_delta_log").mkdir(parents=True)
    for call in (lambda t: t.snapshot(), lambda t: t.history()):
        with pytest.raises(TableNotFoundError, match="_delta_log has no commit files") as err:
            call(deltalog.Table(tmp_path / "empty"))
        assert "there is no _delta_log directory" not in str(err.value)


def test_a_path_inside_a_table_names_the_table(tmp_path: Path) -> None:
    """A partition directory (or the log directory) read as a table names the table holding it and how to
    select its rows."""
    root = tmp_path / "t"
    deltalog.write_table(root, pa.table({"id": [1, 2], "k": ["a", "b"]}), partition_by=["k"])
    with pytest.raises(TableNotFoundError,
                       match=rf"inside the Delta table at {root}: read that table .*where\(\"k = 'a'\"\)"):
        deltalog.Table(root / "k=a").snapshot()
    with pytest.raises(TableNotFoundError,
                       match=rf"Delta table at {root}: read that table and select its rows with a filter \["):
        deltalog.Table(root / "_delta_log").history()


def test_history_of_a_table_whose_commits_were_all_cleaned_up_is_empty(tmp_path: Path) -> None:
    version, _ = _checkpointed(tmp_path)
    _drop_commits_before(tmp_path, version + 1)
    assert deltalog.Table(tmp_path).history() == []


# ----------------------------------------------------------------------- 4: partitions in the log


def _with_bad_partition_value(path: Path) -> None:
    deltalog.write_table(path, pa.table({"k": pa.array([1], pa.int32()), "v": [1]}), partition_by=["k"])
    f = path / "_delta_log" / f"{0:020d}.json"
    f.write_text(f.read_text().replace('"partitionValues":{"k":"1"}', '"partitionValues":{"k":"abc"}'))
    for crc in (path / "_delta_log").glob("*.crc"):
        crc.unlink()


@pytest.mark.parametrize("how", ["read", "filter"])
def test_malformed_partition_value_is_a_corrupt_log(tmp_path: Path, how: str) -> None:
    _with_bad_partition_value(tmp_path)
    table = deltalog.Table(tmp_path)
    data_file = table.snapshot().add_files().column("path")[0].as_py()
    with pytest.raises(CorruptLogError, match=r"partition column 'k': invalid partition value 'abc'") as err:
        if how == "read":
            table.snapshot().to_arrow()
        else:
            table.snapshot().to_arrow(filter=[("k", "=", 1)])
    assert err.value.table == str(tmp_path) and err.value.file == data_file and err.value.version == 0


def test_checkpoint_of_a_malformed_partition_value_says_where(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _with_bad_partition_value(tmp_path)
    table = deltalog.Table(tmp_path)
    table.set_properties({"delta.checkpoint.writeStatsAsStruct": "true"})
    data_file = table.snapshot().add_files().column("path")[0].as_py()
    with caplog.at_level(logging.WARNING, logger="deltalog.log.checkpoint_writer"):
        table.checkpoint()  # the strings are copied as they are; only the typed column is left out
    assert "partition column 'k': invalid partition value 'abc'" in caplog.text
    assert f"file {data_file}" in caplog.text and f"table {tmp_path}" in caplog.text


def test_partition_columns_must_be_in_the_schema() -> None:
    store = InMemoryLogStore()
    write_commit(store, 0, commit_info(), protocol(), metadata(["zz"]))
    snap = deltalog.Table("memory://t", store=store).snapshot()
    with pytest.raises(InvalidTableError, match=r"partitionColumns names column 'zz'") as err:
        snap.to_arrow()
    assert err.value.table == "memory://t" and err.value.version == 0
    nested = {"type": "struct", "fields": [
        {"name": "s", "type": {"type": "struct", "fields": []}, "nullable": True, "metadata": {}}]}
    other = InMemoryLogStore()
    write_commit(other, 0, protocol(), metadata(["s"], schema=nested))
    with pytest.raises(InvalidTableError, match="partition column 's' has type struct"):
        _ = deltalog.Table("memory://t", store=other).snapshot().schema


# ------------------------------------------------------------------ 5: versions that were cleaned up


def test_time_travel_below_the_oldest_checkpoint_is_version_not_found(tmp_path: Path) -> None:
    for i in range(6):
        deltalog.write_table(tmp_path, _row(i, "a"), mode="append")
    deltalog.Table(tmp_path).checkpoint()  # at 5
    deltalog.write_table(tmp_path, _row(6, "a"), mode="append")
    _drop_commits_before(tmp_path, 3)  # commits 3..6 remain
    t = deltalog.Table(tmp_path)
    assert t.snapshot(5).version == 5 and t.snapshot().version == 6
    for v in (1, 4):
        with pytest.raises(VersionNotFoundError, match=rf"version {v}.*earliest version .* reconstructed is 5"):
            t.snapshot(v)


def test_time_travel_on_a_checkpoint_only_table_is_version_not_found(tmp_path: Path) -> None:
    version, _ = _checkpointed(tmp_path)
    _drop_commits_before(tmp_path, version + 1)
    t = deltalog.Table(tmp_path)
    assert t.snapshot().version == version
    with pytest.raises(VersionNotFoundError, match=rf"earliest version that can be reconstructed is {version}"):
        t.snapshot(1)


def test_a_gap_stays_an_invalid_table(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    new_table(store)
    for v in (1, 3, 4):
        write_commit(store, v, add(f"{v}.parquet"))
    t = deltalog.Table(tmp_path)
    assert t.snapshot(1).version == 1
    for v in (None, 3):
        with pytest.raises(InvalidTableError, match=r"not contiguous.*\[2\]") as err:
            t.snapshot(v)
        assert not isinstance(err.value, VersionNotFoundError)
        assert err.value.file == f"_delta_log/{2:020d}.json"


def test_no_checkpoint_and_no_start_is_an_invalid_table(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    write_commit(store, 3, commit_info(), protocol(), metadata())
    write_commit(store, 4, add("a.parquet"))
    for v in (None, 3):
        with pytest.raises(InvalidTableError, match="does not start at version 0") as err:
            deltalog.Table(tmp_path).snapshot(v)
        assert not isinstance(err.value, VersionNotFoundError)


# -------------------------------------------------------------------------------- 6: history times


def _set_mtimes(path: Path, seconds: list[float]) -> None:
    for v, s in enumerate(seconds):
        os.utime(path / "_delta_log" / f"{v:020d}.json", (s, s))


def _assert_history_travels(t: deltalog.Table, limit: int | None = None) -> list[dict[str, Any]]:
    h = t.history(limit=limit)
    for entry in h:
        assert t.snapshot(timestamp=entry["timestamp"]).version == entry["version"], entry
    return h


def test_history_timestamps_are_the_ones_time_travel_uses(tmp_path: Path) -> None:
    for i in range(4):
        deltalog.write_table(tmp_path, _row(i, "a"), mode="append")
    base = 1_700_000_000
    _set_mtimes(tmp_path, [base, base + 3600, base + 1800, base + 7200])  # version 2 older than 1
    t = deltalog.Table(tmp_path)
    h = _assert_history_travels(t)
    assert [(e["version"], e["timestamp"]) for e in h] == [
        (3, (base + 7200) * 1000), (2, (base + 3600) * 1000 + 1), (1, (base + 3600) * 1000), (0, base * 1000)
    ]
    assert h[0]["operation"] == "WRITE" and "operationParameters" in h[0]
    assert _assert_history_travels(t, limit=2) == h[:2]


def test_history_uses_in_commit_timestamps_from_their_enablement(tmp_path: Path) -> None:
    store = LocalLogStore(str(tmp_path))
    new_table(store)
    write_commit(store, 1, commit_info(), add("a.parquet"))
    ict = {"delta.enableInCommitTimestamps": "true", "delta.inCommitTimestampEnablementVersion": "2"}
    write_commit(store, 2, commit_info(inCommitTimestamp=1_800_000_000_000),
                 protocol(1, 7, writerFeatures=["inCommitTimestamp"]), metadata(**ict))
    write_commit(store, 3, commit_info(inCommitTimestamp=1_800_000_005_000), add("b.parquet"))
    base = 1_700_000_000
    _set_mtimes(tmp_path, [base, base + 60, base, base])  # ICT commits' file times say nothing
    t = deltalog.Table(tmp_path)
    h = _assert_history_travels(t)
    assert [e["timestamp"] for e in h] == [1_800_000_005_000, 1_800_000_000_000, (base + 60) * 1000, base * 1000]
    assert [e["timestamp"] for e in _assert_history_travels(t, limit=1)] == [1_800_000_005_000]


# ----------------------------------------------------------------------------------- 7: empty commit


def test_empty_commit_is_read_as_no_actions_and_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = LocalLogStore(str(tmp_path))
    new_table(store)
    write_commit(store, 1, add("a.parquet"))
    (tmp_path / "_delta_log" / f"{2:020d}.json").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="deltalog.log.segment"):
        snap = deltalog.Table(tmp_path).snapshot()
    assert snap.version == 2 and snap.num_files() == 1
    assert f"_delta_log/{2:020d}.json" in caplog.text and "empty (0 bytes)" in caplog.text


# ------------------------------------------------------------------------------------ 8: python floor


def test_python_floor_is_the_one_iso_timestamps_need() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["requires-python"] == ">=3.11"
    assert project["tool"]["ruff"]["target-version"] == "py311"
    assert sys.version_info >= (3, 11)
    assert to_millis("1970-01-01 00:00:11.1") == 11_100  # fromisoformat rejects this before 3.11


# ------------------------------------------------------------------------ 9: writer feature refusals


def test_unknown_feature_refusals_name_the_table(tmp_path: Path) -> None:
    md = Metadata(id="t", format=Format(), schemaString=None, configuration={"delta.feature.fooBar": "supported"})
    with pytest.raises(UnsupportedFeatureError, match=r"\['fooBar'\] are unknown.*\[table t, version 4\]"):
        upgrade_protocol(Protocol(1, 2), md, table="t", version=4)
    deltalog.write_table(tmp_path, _row(0, "a"))
    table = deltalog.Table(tmp_path)
    current = table.snapshot().metadata
    txn = table.transaction(SetTableProperties(properties={"delta.feature.fooBar": "supported"}))
    txn.update_metadata(dataclasses.replace(
        current, configuration={**current.configuration, "delta.feature.fooBar": "supported"}
    ))
    with pytest.raises(UnsupportedFeatureError, match="fooBar") as err:
        txn.commit()
    assert err.value.table == str(tmp_path)
    assert json.loads((tmp_path / "_delta_log" / f"{0:020d}.json").read_text().splitlines()[0])
