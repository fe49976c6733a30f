"""Type widening (``typeWidening``) written by the kernel: ``Table.set_column_type`` and appends with
``schema_mode="merge"`` widen columns once ``delta.enableTypeWidening`` is set, recording
``delta.typeChanges``; old files read with the new type (deltalog, DuckDB); narrowing, unsupported
changes, partition columns and tables without the property are refused with nothing committed. The
corpus table Spark widened takes appends too.

Not delta-rs: its reader (1.6) refuses tables with the ``typeWidening`` reader feature."""

from __future__ import annotations

import decimal
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import InvalidArgumentError, SchemaError
from deltalog.protocol.features import reader_features
from readers import duckdb_rows

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"


_INT32, _FLOAT32 = pa.int32(), pa.float32()


def _data(ids: list[int], id_type: pa.DataType = _INT32, x_type: pa.DataType = _FLOAT32) -> pa.Table:
    return pa.table({"k": ["a"] * len(ids), "id": pa.array(ids, id_type), "x": pa.array([i + 0.5 for i in ids], x_type),
                     "d": pa.array([decimal.Decimal(i) for i in ids], pa.decimal128(5, 2))})


def test_widen_by_command_and_by_append(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, _data([1, 2]), partition_by=["k"], properties={"delta.enableTypeWidening": "true"})
    table = deltalog.Table(path)
    assert "typeWidening" in reader_features(table.snapshot().protocol)
    table.set_column_type("id", "bigint")
    table.set_column_type("d", "decimal(10, 4)")
    wide = pa.table({"k": ["a"], "id": pa.array([2**40], pa.int64()), "x": pa.array([2**40 + 0.5], pa.float64()),
                     "d": pa.array([decimal.Decimal("3.5")], pa.decimal128(10, 4))})
    deltalog.write_table(path, wide, mode="append", schema_mode="merge")
    schema = table.snapshot().schema
    assert [(f.name, str(f.type)) for f in schema.fields][1:3] == [("id", "PrimitiveType(name='long')"),
                                                                  ("x", "PrimitiveType(name='double')")]
    assert schema.field("x").metadata["delta.typeChanges"] == [{"fromType": "float", "toType": "double"}]
    assert schema.field("d").metadata["delta.typeChanges"] == [{"fromType": "decimal(5,2)",
                                                                "toType": "decimal(10,4)"}]
    assert [h["operation"] for h in table.history(limit=3)] == ["WRITE", "CHANGE COLUMN", "CHANGE COLUMN"]
    want = [(1, 1.5, decimal.Decimal("1.0000")), (2, 2.5, decimal.Decimal("2.0000")),
            (2**40, 2**40 + 0.5, decimal.Decimal("3.5000"))]
    got = table.snapshot().to_arrow(columns=["id", "x", "d"])
    assert sorted(zip(*[got.column(c).to_pylist() for c in ("id", "x", "d")])) == want
    assert duckdb_rows(path, ["id", "x", "d"]) == want
    assert table.snapshot().to_arrow(filter=[("id", ">", 2**39)]).num_rows == 1  # old stats still skip


def test_refused_changes(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, _data([1]), partition_by=["k"])
    table = deltalog.Table(path)
    with pytest.raises(InvalidArgumentError, match="enableTypeWidening"):
        table.set_column_type("id", "bigint")
    with pytest.raises(SchemaError, match=r"delta\.enableTypeWidening=true"):
        deltalog.write_table(path, _data([2], pa.int64()), mode="append", schema_mode="merge")
    table.set_properties({"delta.enableTypeWidening": "true"})
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="UNSUPPORTED_TYPE_CHANGE"):
        table.set_column_type("id", "smallint")  # narrowing
    with pytest.raises(InvalidArgumentError, match="UNSUPPORTED_TYPE_CHANGE"):
        table.set_column_type("d", "decimal(6,1)")  # a smaller scale
    with pytest.raises(InvalidArgumentError, match="partition column"):
        table.set_column_type("k", "bigint")
    with pytest.raises(InvalidArgumentError, match="unknown column type"):
        table.set_column_type("id", "bigbigint")
    assert table.latest_version() == version


def test_append_to_spark_widened_table(tmp_path: Path) -> None:
    source = CORPUS / "kernel-rs-data" / "type-widening"
    if not source.is_dir():
        pytest.skip("the conformance corpus is not beside this checkout")
    path = str(tmp_path / "t")
    shutil.copytree(source, path)
    table = deltalog.Table(path)
    if "typeWidening-preview" in reader_features(table.snapshot().protocol):
        with pytest.raises(deltalog.errors.UnsupportedFeatureError, match="typeWidening-preview"):
            deltalog.write_table(path, table.snapshot().to_arrow().slice(0, 1), mode="append")
        return
    before = table.snapshot().to_arrow()
    deltalog.write_table(path, before, mode="append")
    assert deltalog.Table(path).snapshot().to_arrow().num_rows == 2 * before.num_rows
