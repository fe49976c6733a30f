"""Type widening (``typeWidening``) written by the kernel: ``Table.set_column_type`` and appends with
``schema_mode="merge"`` widen columns once ``delta.enableTypeWidening`` is set, recording
``delta.typeChanges``; old files read with the new type (deltalog, DuckDB); narrowing, unsupported
changes, partition columns and tables without the property are refused with nothing committed. The
corpus table Spark widened (``typeWidening-preview``) takes appends, widening, DML and checkpoints too.

Not delta-rs: its reader (1.6) refuses tables with the ``typeWidening`` reader feature."""

from __future__ import annotations

import datetime as dt
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
    # delta-spark's condition for a change ALTER COLUMN cannot make; both types named as the protocol does
    with pytest.raises(InvalidArgumentError, match=r"UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP\] column id cannot "
                       r"change from integer to short:"):
        table.set_column_type("id", "smallint")  # narrowing
    with pytest.raises(InvalidArgumentError, match=r"UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP.* to decimal\(6,1\)"):
        table.set_column_type("d", "decimal(6,1)")  # a smaller scale
    with pytest.raises(InvalidArgumentError, match="partition column"):
        table.set_column_type("k", "bigint")
    with pytest.raises(InvalidArgumentError, match="unknown column type"):
        table.set_column_type("id", "bigbigint")
    assert table.latest_version() == version


def _rows(path: str, columns: list[str], version: int | None = None) -> list[tuple[object, ...]]:
    got = deltalog.Table(path).snapshot(version=version).to_arrow(columns=columns)
    return sorted(zip(*[got.column(c).to_pylist() for c in columns]), key=repr)


def test_widen_date_to_timestamp_ntz(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    days = pa.table({"id": pa.array([1, 2], pa.int64()), "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 5)])})
    deltalog.write_table(path, days, properties={"delta.enableTypeWidening": "true"})
    table = deltalog.Table(path)
    table.set_column_type("d", "timestamp_ntz")
    snap = table.snapshot()
    assert str(snap.schema.field("d").type) == "PrimitiveType(name='timestamp_ntz')"
    assert "timestampNtz" in reader_features(snap.protocol)
    assert snap.schema.field("d").metadata["delta.typeChanges"] == [{"fromType": "date", "toType": "timestamp_ntz"}]
    later = pa.table({"id": pa.array([3], pa.int64()), "d": pa.array([dt.datetime(2024, 1, 3, 12, 30)])})
    deltalog.write_table(path, later, mode="append")
    midnight = [(1, dt.datetime(2024, 1, 1)), (2, dt.datetime(2024, 1, 5))]
    want = sorted([*midnight, (3, dt.datetime(2024, 1, 3, 12, 30))], key=repr)
    assert _rows(path, ["id", "d"]) == want == sorted(duckdb_rows(path, ["id", "d"]), key=repr)
    # the first file's statistics keep date strings; they read as midnight and still skip it
    first = table.snapshot().add_files().to_pylist()
    assert any('"2024-01-01"' in (f["stats"] or "") for f in first)
    noon = table.snapshot().to_arrow(filter=[("d", ">", dt.datetime(2024, 1, 5, 0, 0, 1))])
    assert noon.num_rows == 0
    assert table.snapshot().to_arrow(filter=[("d", "=", dt.datetime(2024, 1, 5))]).num_rows == 1
    table.update_rows([("id", "=", 1)], {"d": dt.datetime(2024, 2, 1, 8)})
    table.delete([("d", "=", dt.datetime(2024, 1, 5))])
    table.checkpoint()
    want = sorted([(1, dt.datetime(2024, 2, 1, 8)), (3, dt.datetime(2024, 1, 3, 12, 30))], key=repr)
    assert _rows(path, ["id", "d"]) == want == sorted(duckdb_rows(path, ["id", "d"]), key=repr)
    assert _rows(path, ["id", "d"], version=0) == sorted([(1, dt.date(2024, 1, 1)), (2, dt.date(2024, 1, 5))],
                                                         key=repr)
    # schema evolution widens too: timestamps appended to a date column
    other = str(tmp_path / "u")
    deltalog.write_table(other, days, properties={"delta.enableTypeWidening": "true"})
    deltalog.write_table(other, later, mode="append", schema_mode="merge")
    assert str(deltalog.Table(other).snapshot().schema.field("d").type) == "PrimitiveType(name='timestamp_ntz')"
    assert _rows(other, ["id", "d"]) == sorted([*midnight, (3, dt.datetime(2024, 1, 3, 12, 30))], key=repr)
    with pytest.raises(InvalidArgumentError, match="UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"):
        deltalog.Table(other).set_column_type("d", "date")  # narrowing back


def test_write_to_spark_widened_preview_table(tmp_path: Path) -> None:
    """The corpus tables Delta 3.3 widened carry ``typeWidening-preview``: deltalog appends, widens,
    deletes, updates and checkpoints them, keeping the preview feature; DuckDB reads the same rows."""
    source = CORPUS / "kernel-rs-data" / "type-widening"
    if not source.is_dir():
        pytest.skip("the conformance corpus is not beside this checkout")
    path = str(tmp_path / "t")
    shutil.copytree(source, path)
    table = deltalog.Table(path)
    assert "typeWidening-preview" in reader_features(table.snapshot().protocol)
    cols = ["byte_long", "short_decimal", "date_timestamp_ntz"]
    before = _rows(path, cols)
    assert before == sorted(duckdb_rows(path, cols), key=repr)
    deltalog.write_table(path, table.snapshot().to_arrow(), mode="append")
    assert _rows(path, cols) == sorted(before * 2, key=repr)
    table.set_column_type("short_decimal", "decimal(8,2)")
    snap = table.snapshot()
    assert set(reader_features(snap.protocol)) == {"timestampNtz", "typeWidening-preview"}
    assert snap.schema.field("short_decimal").metadata["delta.typeChanges"][-1] == {
        "fromType": "decimal(6,1)", "toType": "decimal(8,2)"}
    table.update_rows([("date_timestamp_ntz", "<", dt.datetime(2024, 9, 9, 1))], {"byte_long": 5})  # old stats
    table.delete([("byte_long", ">", 5)])
    table.checkpoint()
    kept = [(5, r[1], r[2]) for r in before if r[2] == dt.datetime(2024, 9, 9)] * 2
    assert len(kept) == 2
    assert _rows(path, cols) == kept == sorted(duckdb_rows(path, cols), key=repr)
    assert deltalog.Table(path).snapshot(version=2).to_arrow().num_rows == len(before)
