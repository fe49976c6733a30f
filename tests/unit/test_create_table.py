"""``deltalog.create_table``: an empty table from a schema (delta-rs's ``DeltaTable.create``), with the
schema's column metadata kept, and the modes error / ignore / overwrite."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.arrow.write import TableExistsError
from deltalog.protocol.schema import parse_schema
from deltalog.txn.generated import generated_metadata
from deltalog.txn.identity import identity_metadata


def _commit(path: Path, version: int) -> list[dict[str, object]]:
    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_create_from_an_arrow_schema(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("day", pa.date32()), ("v", pa.string())])
    table = deltalog.create_table(path, schema, partition_by=["day"], name="events", description="all events",
                                  properties={"delta.enableDeletionVectors": "true", "team": "ingest"})
    snap = table.snapshot()
    assert snap.version == 0 and snap.num_files() == 0 and snap.partition_columns == ("day",)
    assert [(f.name, f.nullable) for f in snap.schema.fields] == [("id", False), ("day", True), ("v", True)]
    assert (snap.metadata.name, snap.metadata.description) == ("events", "all events")
    assert snap.properties["team"] == "ingest" and snap.has_feature("deletionVectors")
    info = table.history()[0]
    assert info["operation"] == "CREATE TABLE" and info["operationParameters"]["partitionBy"] == '["day"]'
    deltalog.write_table(path, pa.table({"id": [1], "day": pa.array([0], pa.date32()), "v": ["a"]}), mode="append")
    from readers import duckdb_rows  # DuckDB's delta extension reads deletion-vector tables

    assert duckdb_rows(str(path), ["id", "v"]) == [(1, "a")]


def test_a_struct_type_keeps_comments_generated_and_identity_columns(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = parse_schema(json.dumps({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": identity_metadata(start=100)},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {"comment": "event time"}},
        {"name": "day", "type": "date", "nullable": True, "metadata": generated_metadata("CAST(ts AS DATE)")},
    ]}))
    table = deltalog.create_table(path, schema, partition_by=["day"])
    fields = table.snapshot().schema.fields
    assert fields[1].metadata["comment"] == "event time" and "delta.generationExpression" in fields[2].metadata
    assert table.snapshot().protocol.minWriterVersion >= 6  # generated and identity columns
    deltalog.write_table(path, pa.table({"ts": pa.array([86_400_000_000], pa.timestamp("us", tz="UTC"))}),
                         mode="append")
    assert table.snapshot().to_arrow().to_pylist()[0]["id"] == 100
    assert str(table.snapshot().to_arrow().column("day")[0]) == "1970-01-02"


def test_modes(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalog.write_table(path, pa.table({"id": [1, 2]}), partition_by=None, properties={"keep": "no"})
    table_id = deltalog.Table(path).snapshot().metadata.id
    with pytest.raises(TableExistsError, match=r"DELTA_TABLE_ALREADY_EXISTS.*version 0"):
        deltalog.create_table(path, pa.schema([("x", pa.string())]))
    assert deltalog.create_table(path, pa.schema([("x", pa.string())]), mode="ignore").latest_version() == 0
    table = deltalog.create_table(path, pa.schema([("x", pa.string()), ("p", pa.int32())]), mode="overwrite",
                                  partition_by=["p"])
    snap = table.snapshot()
    assert snap.version == 1 and snap.num_files() == 0 and snap.schema.field_names == ["x", "p"]
    assert snap.partition_columns == ("p",) and "keep" not in snap.properties and snap.metadata.id == table_id
    assert table.history()[0]["operation"] == "CREATE OR REPLACE TABLE"
    assert table.snapshot(version=0).to_arrow().num_rows == 2  # time travel still sees the old rows
    assert [a for a in _commit(path, 1) if "remove" in a]  # the old file removed, not deleted


def test_bad_input_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "t"
    with pytest.raises(deltalog.InvalidArgumentError, match="unknown mode 'append'"):
        deltalog.create_table(path, pa.schema([("x", pa.int64())]), mode="append")
    with pytest.raises(deltalog.InvalidArgumentError, match=r"pyarrow\.Schema or a deltalog StructType"):
        deltalog.create_table(path, {"x": "long"})  # type: ignore[arg-type]
    with pytest.raises(deltalog.InvalidArgumentError, match="at least one column"):
        deltalog.create_table(path, pa.schema([]))
    with pytest.raises(deltalog.InvalidArgumentError, match=r"delta\.nope"):
        deltalog.create_table(path, pa.schema([("x", pa.int64())]), properties={"delta.nope": "1"})
    with pytest.raises(deltalog.DeltaError, match="'q'"):
        deltalog.create_table(path, pa.schema([("x", pa.int64())]), partition_by=["q"])
    assert not (path / "_delta_log").exists() or not list((path / "_delta_log").glob("*.json"))
