"""Iceberg compatibility (issue 56, items 1 and 4) in the kernel: enabling UniForm through every kernel way a
table is created or altered, each compat rule refused with delta-spark's error class and nothing committed,
data files written for Iceberg (field ids at every level, partition columns, the compat tag), the delta-spark
conformance table written to, and REORG ... APPLY (UPGRADE UNIFORM ...)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.arrow.create import create_table
from deltalog.arrow.write import write_table
from deltalog.commands.uniform_upgrade import upgrade_uniform
from deltalog.errors import IcebergCompatError
from deltalog.protocol.actions import Add
from deltalog.protocol.schema import parse_schema
from deltalog.txn.operations import Write

CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "delta-golden-extra" / \
    "table-with-icebegCompatV2Enabled"
UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}
FID = b"PARQUET:field_id"


def rows() -> pa.Table:
    return pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "xs": pa.array([[1, 2], [3], []], pa.list_(pa.int32())),
        "m": pa.array([[("a", 1)], [], [("b", 2)]], pa.map_(pa.string(), pa.int64())),
        "day": ["2024-01-01", "2024-01-02", "2024-01-01"],
    })


def snap(path: Path | str) -> deltalog.Snapshot:
    return deltalog.Table(str(path)).snapshot()


def assert_uniform(s: deltalog.Snapshot, version: int = 2) -> None:
    conf = s.metadata.configuration
    assert conf[f"delta.enableIcebergCompatV{version}"] == "true"
    assert conf["delta.universalFormat.enabledFormats"] == "iceberg"
    assert conf["delta.columnMapping.mode"] in ("name", "id")
    assert {"columnMapping", f"icebergCompatV{version}"} <= set(s.protocol.writerFeatures or ())
    assert s.protocol.minWriterVersion == 7 and s.protocol.minReaderVersion >= 2


def assert_compliant_files(root: Path | str, s: deltalog.Snapshot) -> None:
    """Every live file: the tag, numRecords, no deletion vector, a field id on every parquet field (list
    elements and map keys/values included) and the partition columns stored."""
    files = s.add_files().to_pylist()
    assert files
    parts = [str(f.metadata.get("delta.columnMapping.physicalName")) for f in s.schema.fields
             if f.name in s.partition_columns]
    for f in files:
        assert dict(f["tags"] or []).get("ICEBERG_COMPAT_VERSION") == "2", f["path"]
        assert json.loads(f["stats"])["numRecords"] >= 0 and f["deletionVector"] is None
        schema = pq.read_schema(Path(root) / f["path"])
        assert set(parts) <= set(schema.names)

        def walk(field: pa.Field) -> None:
            assert field.metadata and FID in field.metadata, field
            t = field.type
            if pa.types.is_struct(t):
                for i in range(t.num_fields):
                    walk(t.field(i))
            elif pa.types.is_map(t):
                walk(t.key_field)
                walk(t.item_field)
            elif pa.types.is_list(t):
                walk(t.value_field)

        for field in schema:
            walk(field)


def refused(path: Path, call: Any, error_class: str) -> IcebergCompatError:
    before = deltalog.Table(str(path)).latest_version() if (path / "_delta_log").exists() else None
    with pytest.raises(IcebergCompatError, match=error_class.replace(".", r"\.")) as info:
        call()
    after = deltalog.Table(str(path)).latest_version() if (path / "_delta_log").exists() else None
    assert before == after  # nothing committed
    assert str(path) in str(info.value)  # the message names the table
    return info.value


# ----------------------------------------------------------------------------------------- enabling


def test_write_table_creates_a_uniform_table_with_iceberg_ready_files(tmp_path: Path) -> None:
    write_table(tmp_path, rows(), partition_by=["day"], properties=UNIFORM)
    s = snap(tmp_path)
    assert_uniform(s)
    assert s.metadata.configuration["delta.columnMapping.mode"] == "name"  # set on create, as delta-spark
    meta = {f.name: f.metadata for f in s.schema.fields}
    xs, m = meta["xs"], meta["m"]
    assert set(xs["delta.columnMapping.nested.ids"]) == {xs["delta.columnMapping.physicalName"] + ".element"}
    assert set(m["delta.columnMapping.nested.ids"]) == {m["delta.columnMapping.physicalName"] + k
                                                        for k in (".key", ".value")}
    ids = [*xs["delta.columnMapping.nested.ids"].values(), *m["delta.columnMapping.nested.ids"].values()]
    assert len(set(ids)) == 3 and min(ids) > 4  # above the column ids
    assert int(s.metadata.configuration["delta.columnMapping.maxColumnId"]) == max(ids)
    assert_compliant_files(tmp_path, s)
    f = s.add_files().column("path").to_pylist()[0]
    schema = pq.read_schema(tmp_path / f)
    xs_field = schema.field(xs["delta.columnMapping.physicalName"])
    assert int(xs_field.type.value_field.metadata[FID]) == xs["delta.columnMapping.nested.ids"][
        xs["delta.columnMapping.physicalName"] + ".element"]
    assert schema.names[-1] == meta["day"]["delta.columnMapping.physicalName"]  # after the data columns
    assert "INT96" not in str(pq.ParquetFile(tmp_path / f).schema)
    assert s.to_arrow(filter="day = '2024-01-01'").num_rows == 2
    write_table(tmp_path, rows(), mode="append")
    assert_compliant_files(tmp_path, snap(tmp_path))
    assert sorted(snap(tmp_path).to_arrow().column("id").to_pylist()) == [1, 1, 2, 2, 3, 3]


def test_create_table_and_set_properties_enable_it(tmp_path: Path) -> None:
    t = create_table(tmp_path / "a", rows().schema, properties=UNIFORM)
    assert_uniform(t.snapshot())
    t = create_table(tmp_path / "b", rows().schema, properties={"delta.columnMapping.mode": "id"})
    t.set_properties(UNIFORM)  # an empty table: nothing to rewrite
    assert_uniform(t.snapshot())
    write_table(tmp_path / "b", rows(), mode="append")
    assert_compliant_files(tmp_path / "b", t.snapshot())
    # CREATE OR REPLACE counts as a new table, as in delta-spark: column mapping is set
    write_table(tmp_path / "e", rows())
    t = create_table(tmp_path / "e", rows().schema, mode="overwrite", properties=UNIFORM)
    assert_uniform(t.snapshot())
    assert t.snapshot().num_files() == 0 and t.history(limit=1)[0]["operation"] == "CREATE OR REPLACE TABLE"
    # V1 keeps working for tables that use it (no arrays or maps there)
    t = create_table(tmp_path / "c", pa.schema([("id", pa.int64())]),
                     properties={"delta.enableIcebergCompatV1": "true",
                                 "delta.universalFormat.enabledFormats": "iceberg"})
    assert_uniform(t.snapshot(), version=1)


def test_unsetting_compat_removes_iceberg_from_enabled_formats(tmp_path: Path) -> None:
    write_table(tmp_path, rows(), properties=UNIFORM)
    t = deltalog.Table(str(tmp_path))
    t.unset_properties(["delta.enableIcebergCompatV2"])
    conf = t.snapshot().metadata.configuration
    assert "delta.universalFormat.enabledFormats" not in conf and "delta.enableIcebergCompatV2" not in conf
    write_table(tmp_path, rows(), mode="append")  # a plain column-mapping table again


def test_dropping_the_feature_turns_uniform_off(tmp_path: Path) -> None:
    write_table(tmp_path, rows(), properties=UNIFORM)
    t = deltalog.Table(str(tmp_path))
    t.drop_feature("icebergCompatV2")
    s = t.snapshot()
    assert "icebergCompatV2" not in (s.protocol.writerFeatures or ())
    assert not any(k.startswith(("delta.universalFormat", "delta.enableIceberg")) for k in s.metadata.configuration)


# ------------------------------------------------------------------------------------------- rules


def test_uniform_needs_a_compat_version(tmp_path: Path) -> None:
    err = refused(tmp_path, lambda: write_table(tmp_path, rows(), properties={
        "delta.universalFormat.enabledFormats": "iceberg"}), "DELTA_UNIVERSAL_FORMAT_VIOLATION")
    assert "delta.enableIcebergCompatV2" in str(err)
    assert not list(tmp_path.rglob("*.parquet"))


def test_existing_table_without_column_mapping_is_refused(tmp_path: Path) -> None:
    write_table(tmp_path, rows())
    err = refused(tmp_path, lambda: deltalog.Table(str(tmp_path)).set_properties(UNIFORM),
                  "DELTA_ICEBERG_COMPAT_VIOLATION.WRONG_REQUIRED_TABLE_PROPERTY")
    assert "UPGRADE UNIFORM" in str(err) and "'delta.columnMapping.mode'" in str(err)


def test_alter_enables_it_on_a_table_with_data_without_a_rewrite(tmp_path: Path) -> None:
    """As delta-spark 3.3+: the files written before keep no ids (Iceberg readers use the name mapping);
    the files written after are compliant; one SET TBLPROPERTIES may turn column mapping on too."""
    write_table(tmp_path, rows(), partition_by=["day"])
    t = deltalog.Table(str(tmp_path))
    t.set_properties({**UNIFORM, "delta.columnMapping.mode": "name"})
    assert_uniform(t.snapshot())
    assert [h["operation"] for h in t.history(limit=1)] == ["SET TBLPROPERTIES"]
    write_table(tmp_path, rows(), mode="append")
    tags = [dict(x or []).get("ICEBERG_COMPAT_VERSION") for x in t.snapshot().add_files()["tags"].to_pylist()]
    assert sorted(tags, key=str) == ["2", "2", None, None]
    pytest.importorskip("pyiceberg")
    from iceberg_readers import pyiceberg_rows

    assert sorted(pyiceberg_rows(str(tmp_path), ["id", "day"])) == sorted(
        (r["id"], r["day"]) for r in t.snapshot().to_arrow().to_pylist())
    upgrade_uniform(t)  # REORG rewrites the two old files
    assert_compliant_files(tmp_path, t.snapshot())
    assert sorted(pyiceberg_rows(str(tmp_path), ["id", "day"])) == [
        (1, "2024-01-01"), (1, "2024-01-01"), (2, "2024-01-02"), (2, "2024-01-02"), (3, "2024-01-01"),
        (3, "2024-01-01")]


@pytest.mark.parametrize(("properties", "data", "error_class"), [
    ({"delta.enableDeletionVectors": "true"}, None, "DELETION_VECTORS_SHOULD_BE_DISABLED"),
    ({"delta.enableIcebergCompatV1": "true"}, None, "VERSION_MUTUAL_EXCLUSIVE"),
    ({}, pa.table({"id": [1], "nothing": pa.array([None], pa.null())}), "UNSUPPORTED_DATA_TYPE"),
])
def test_rules_refuse_bad_tables(tmp_path: Path, properties: dict[str, str], data: pa.Table | None,
                                 error_class: str) -> None:
    refused(tmp_path, lambda: write_table(tmp_path, data if data is not None else rows(),
                                          properties={**UNIFORM, **properties}),
            f"DELTA_ICEBERG_COMPAT_VIOLATION.{error_class}")
    assert not list(tmp_path.rglob("*.parquet"))  # the files written were deleted


def test_v1_refuses_arrays_and_maps(tmp_path: Path) -> None:
    refused(tmp_path, lambda: write_table(tmp_path, rows(), properties={"delta.enableIcebergCompatV1": "true"}),
            "DELTA_ICEBERG_COMPAT_VIOLATION.UNSUPPORTED_DATA_TYPE")


def test_enabling_deletion_vectors_later_is_refused(tmp_path: Path) -> None:
    write_table(tmp_path, rows(), properties=UNIFORM)
    refused(tmp_path, lambda: deltalog.Table(str(tmp_path)).set_properties({"delta.enableDeletionVectors": "true"}),
            "DELTA_ICEBERG_COMPAT_VIOLATION.DELETION_VECTORS_SHOULD_BE_DISABLED")


def test_live_deletion_vectors_must_be_purged_first(tmp_path: Path) -> None:
    write_table(tmp_path, rows(), properties={"delta.enableDeletionVectors": "true",
                                              "delta.columnMapping.mode": "name"})
    t = deltalog.Table(str(tmp_path))
    t.delete("id = 1")
    t.set_properties({"delta.enableDeletionVectors": "false"})
    err = refused(tmp_path, lambda: t.set_properties(UNIFORM),
                  "DELTA_ICEBERG_COMPAT_VIOLATION.DELETION_VECTORS_NOT_PURGED")
    assert "REORG TABLE APPLY (PURGE)" in str(err)


def test_only_iceberg_widenings(tmp_path: Path) -> None:
    data = pa.table({"n": pa.array([1], pa.int32()), "f": pa.array([1.0], pa.float32())})
    write_table(tmp_path, data, properties={**UNIFORM, "delta.enableTypeWidening": "true"})
    t = deltalog.Table(str(tmp_path))
    t.set_column_type("f", "double")  # Iceberg widens float to double
    refused(tmp_path, lambda: t.set_column_type("n", "double"),
            "DELTA_ICEBERG_COMPAT_VIOLATION.UNSUPPORTED_TYPE_WIDENING")
    t.set_column_type("n", "bigint")


def test_replacing_the_partitioning_is_refused(tmp_path: Path) -> None:
    write_table(tmp_path, rows(), partition_by=["day"], properties=UNIFORM)
    refused(tmp_path, lambda: write_table(tmp_path, rows(), mode="overwrite", partition_by=["id"],
                                          schema_mode="overwrite"),
            "DELTA_ICEBERG_COMPAT_VIOLATION.REPLACE_TABLE_CHANGE_PARTITION_NAMES")


def test_every_add_needs_num_records(tmp_path: Path) -> None:
    write_table(tmp_path, rows(), properties=UNIFORM)
    t = deltalog.Table(str(tmp_path))
    txn = t.transaction(Write())
    txn.add_file(Add("x.parquet", {}, 10, 0, True, stats=None))
    with pytest.raises(IcebergCompatError, match="numRecords"):
        txn.commit()
    assert t.latest_version() == 0


def test_convert_to_delta_does_not_enable_it(tmp_path: Path) -> None:
    from deltalog.commands.convert import convert_to_delta
    from deltalog.errors import UnsupportedFeatureError

    pq.write_table(pa.table({"id": [1]}), tmp_path / "a.parquet")
    with pytest.raises(UnsupportedFeatureError, match="UPGRADE UNIFORM"):
        convert_to_delta(tmp_path, properties=UNIFORM)
    assert not (tmp_path / "_delta_log").exists()
    convert_to_delta(tmp_path)
    upgrade_uniform(deltalog.Table(str(tmp_path)))  # the way to get there
    assert_compliant_files(tmp_path, snap(tmp_path))
    assert snap(tmp_path).to_arrow().column("id").to_pylist() == [1]


# ----------------------------------------------------------------------------- the conformance table


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="../shared/conformance is not there")
def test_conformance_table_is_written_keeping_every_rule(tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(CONFORMANCE, root)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    t = deltalog.Table(str(root))
    before = t.snapshot()
    data = before.to_arrow()
    write_table(root, data.slice(0, 2), mode="append")
    t.delete("IntegerType = 0")
    t.update_rows("IntegerType = 1", {"StringType": "changed"})
    s = t.snapshot()
    assert s.protocol == before.protocol and s.metadata.configuration == before.metadata.configuration
    assert_compliant_files(root, s)
    def key(v: int | None) -> int:
        return -1 if v is None else v

    ints = sorted(s.to_arrow().column("IntegerType").to_pylist(), key=key)
    expected = sorted((v for v in [*data.column("IntegerType").to_pylist(),
                                   *data.slice(0, 2).column("IntegerType").to_pylist()] if v != 0), key=key)
    assert ints == expected
    assert set(s.to_arrow(filter="IntegerType = 1").column("StringType").to_pylist()) == {"changed"}
    deltalog.Table(str(root)).set_properties({"delta.universalFormat.enabledFormats": "iceberg"})
    assert_uniform(deltalog.Table(str(root)).snapshot())


# ------------------------------------------------------------------------------------ REORG UPGRADE


def test_upgrade_uniform_rewrites_files_and_purges_deletion_vectors(tmp_path: Path) -> None:
    write_table(tmp_path, rows(), partition_by=["day"], properties={"delta.enableDeletionVectors": "true"})
    t = deltalog.Table(str(tmp_path))
    t.delete("id = 1")
    assert any(t.snapshot().add_files().column("deletionVector").to_pylist())
    result = upgrade_uniform(t)
    assert result.files_rewritten == 2 and len(result.versions) == 3
    s = t.snapshot()
    assert_uniform(s)
    assert s.metadata.configuration["delta.enableDeletionVectors"] == "false"
    assert_compliant_files(tmp_path, s)
    assert sorted(s.to_arrow().column("id").to_pylist()) == [2, 3]
    assert [h["operation"] for h in t.history(limit=3)] == ["SET TBLPROPERTIES", "REORG", "SET TBLPROPERTIES"]
    assert upgrade_uniform(t).versions == []  # already upgraded: nothing to do
    assert parse_schema(s.metadata.schemaString or "").fields[1].metadata["delta.columnMapping.nested.ids"]
