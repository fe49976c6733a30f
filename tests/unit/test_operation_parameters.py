"""``operationParameters`` as delta-spark renders them (DeltaOperations.scala): the names and order of each
operation's parameters, the text ``DESCRIBE HISTORY`` shows (:meth:`Operation.parameters`) and the JSON the
log holds (:meth:`Operation.commit_parameters`: booleans and numbers as JSON literals, as delta-spark's
``jsonEncodedValues`` write them)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.arrow.create import create_table
from deltalog.arrow.write import write_table
from deltalog.commands.vacuum import vacuum
from deltalog.txn.operations import (
    AddColumns,
    ChangeColumn,
    Clone,
    Convert,
    CreateTable,
    CreateTableAsSelect,
    DropTableFeature,
    Operation,
    Optimize,
    Reorg,
    ReplaceColumns,
    Restore,
    UnsetTableProperties,
    VacuumStart,
    Write,
)

DAY = 24 * 3600 * 1000
T0 = 1_700_000_000_000


@pytest.mark.parametrize(("op", "shown", "logged"), [
    (Optimize(), {"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": "false"},
     {"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": False}),
    (Optimize(predicate=["('p = a)"], z_order_by=("x",), cluster_by=("k",), auto=True),  # clustered: no Z-order
     {"predicate": '["(\'p = a)"]', "zOrderBy": "[]", "clusterBy": '["k"]', "auto": "true"},
     {"predicate": '["(\'p = a)"]', "zOrderBy": "[]", "clusterBy": '["k"]', "auto": True}),
    (Reorg(apply_purge=True), {"predicate": "[]", "applyPurge": "true"}, {"predicate": "[]", "applyPurge": True}),
    (VacuumStart(specified_retention_millis=0),
     {"retentionCheckEnabled": "true", "defaultRetentionMillis": "604800000", "specifiedRetentionMillis": "0"},
     {"retentionCheckEnabled": True, "defaultRetentionMillis": 604800000, "specifiedRetentionMillis": 0}),
    (Restore(version=3), {"version": "3", "timestamp": None}, {"version": 3, "timestamp": None}),
    (Restore(timestamp="2024-01-01 00:00:00"), {"version": None, "timestamp": "2024-01-01 00:00:00"},
     {"version": None, "timestamp": "2024-01-01 00:00:00"}),
    (Clone(source="delta.`/s`", source_version=4), {"source": "delta.`/s`", "sourceVersion": "4"},
     {"source": "delta.`/s`", "sourceVersion": 4}),
    (Convert(num_files=2, partition_by=("d",), collect_stats=False),
     {"numFiles": "2", "partitionedBy": '["d"]', "collectStats": "false", "sourceFormat": "parquet"},
     {"numFiles": 2, "partitionedBy": '["d"]', "collectStats": False, "sourceFormat": "parquet"}),
    (UnsetTableProperties(keys=("a",), if_exists=False), {"properties": '["a"]', "ifExists": "false"},
     {"properties": '["a"]', "ifExists": False}),
    (DropTableFeature(feature_name="v2Checkpoint", truncate_history=True),
     {"featureName": "v2Checkpoint", "truncateHistory": "true"},
     {"featureName": "v2Checkpoint", "truncateHistory": True}),
    (CreateTable(cluster_by=("k",)),
     {"isManaged": "false", "description": None, "partitionBy": "[]", "clusterBy": '["k"]', "properties": "{}"},
     {"isManaged": "false", "description": None, "partitionBy": "[]", "clusterBy": '["k"]', "properties": "{}"}),
    (CreateTableAsSelect(mode="ErrorIfExists", partition_by=("d",)),
     {"isManaged": "false", "description": None, "partitionBy": '["d"]', "clusterBy": "[]", "properties": "{}"},
     {"isManaged": "false", "description": None, "partitionBy": '["d"]', "clusterBy": "[]", "properties": "{}"}),
    (Write(mode="Overwrite", predicate="p = 'a'"), {"mode": "Overwrite", "partitionBy": "[]", "predicate": "p = 'a'"},
     {"mode": "Overwrite", "partitionBy": "[]", "predicate": "p = 'a'"}),
    (Write(mode="Overwrite", predicate=["p = 'a'", "q > 1"]),
     {"mode": "Overwrite", "partitionBy": "[]", "predicate": "p = 'a' AND q > 1"},
     {"mode": "Overwrite", "partitionBy": "[]", "predicate": "p = 'a' AND q > 1"}),
])
def test_parameters_are_rendered_as_delta_spark_renders_them(
        op: Operation, shown: dict[str, str | None], logged: dict[str, object]) -> None:
    assert op.parameters() == shown
    assert list(op.parameters()) == list(shown)  # delta-spark's order
    assert op.commit_parameters() == logged
    assert {k: type(v) for k, v in op.commit_parameters().items()} == {k: type(v) for k, v in logged.items()}


def test_columns_name_a_nested_type_as_spark_type_name() -> None:
    struct = {"name": "s", "type": {"type": "struct", "fields": [{"name": "a", "type": "integer", "nullable": True,
                                                                   "metadata": {}}]}, "nullable": True, "metadata": {}}
    array = {"name": "xs", "type": {"type": "array", "elementType": "long", "containsNull": True}, "nullable": False,
             "metadata": {"comment": "c"}}
    assert AddColumns(columns=(struct,), positions=("FIRST",)).parameters() == {
        "columns": '[{"column":{"name":"s","type":"struct","nullable":true,"metadata":{}},"position":"FIRST"}]'}
    assert ReplaceColumns(columns=(array,)).parameters() == {
        "columns": '[{"name":"xs","type":"array","nullable":false,"metadata":{"comment":"c"}}]'}
    assert ChangeColumn(column={**struct, "name": "s"}, position="AFTER id").parameters() == {
        "column": '{"name":"s","type":"struct","nullable":true,"metadata":{}}', "position": "AFTER id"}


def _logged(path: Path, version: int) -> dict[str, object]:
    for line in (path / "_delta_log" / f"{version:020d}.json").read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            return dict(action["commitInfo"]["operationParameters"])
    raise AssertionError(f"no commitInfo in commit {version}")


def test_the_log_holds_json_literals_and_a_null_description(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("k", pa.string())])
    create_table(tmp_path, schema, cluster_by=["k"])
    assert _logged(tmp_path, 0) == {"isManaged": "false", "description": None, "partitionBy": "[]",
                                    "clusterBy": '["k"]', "properties": "{}"}
    raw = (tmp_path / "_delta_log" / f"{0:020d}.json").read_text()
    assert '"description":null' in raw.replace(" ", "")  # JSON null, not the text "null"
    write_table(tmp_path, pa.table({"id": [1], "k": ["a"]}, schema=schema), mode="append")
    deltalog.Table(str(tmp_path)).restore(version=0)
    assert _logged(tmp_path, 2) == {"version": 0, "timestamp": None}


def test_lite_vacuum_reads_a_zero_retention_logged_as_a_number(tmp_path: Path) -> None:
    path = str(tmp_path)
    write_table(path, pa.table({"id": [1]}), clock=lambda: T0)
    write_table(path, pa.table({"id": [2]}), mode="overwrite", clock=lambda: T0 + 1)
    write_table(path, pa.table({"id": [3]}), mode="append", clock=lambda: T0 + DAY)
    table = deltalog.Table(path)
    table.checkpoint()
    for v in (0, 1):  # log cleanup removed the oldest commits
        (tmp_path / "_delta_log" / f"{v:020d}.json").unlink()
    done = vacuum(table, retention_hours=0, enforce_retention_duration=False, dry_run=False,
                  clock=lambda: T0 + DAY + 1)
    assert _logged(tmp_path, done.start_version)["specifiedRetentionMillis"] == 0
    # that vacuum's cutoff is its start (retention 0), after the oldest commit kept: LITE can run
    lite = vacuum(table, lite=True, retention_hours=0, enforce_retention_duration=False, clock=lambda: T0 + DAY + 2)
    assert lite.files_deleted == []
