"""Column defaults (``allowColumnDefaults``) in the kernel: set and dropped with ``change_column``, filled
by ``write_table`` for the columns a write leaves out, refused where the kernel cannot compute them or
where delta-spark refuses them -- nothing committed in each refusal -- and read back by DuckDB and
delta-rs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.features import writer_features
from deltalog.protocol.schema import PrimitiveType, StructField
from readers import delta_rs_rows, duckdb_rows


def _table(tmp_path: Path) -> deltalog.Table:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": pa.array([1], pa.int64()), "status": ["old"],
                                         "score": pa.array([0.5], pa.float64())}))
    return deltalog.Table(path)


def test_defaults_fill_left_out_columns(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.change_column("status", default="'new'")
    table.change_column("score", default="CAST(1 AS DOUBLE) / 4")
    snap = table.snapshot()
    assert "allowColumnDefaults" in writer_features(snap.protocol)
    assert snap.schema.field("status").metadata["CURRENT_DEFAULT"] == "'new'"
    deltalog.write_table(table.location, pa.table({"id": pa.array([2, 3], pa.int64())}), mode="append")
    given_null = pa.table({"id": pa.array([4], pa.int64()), "status": pa.array([None], pa.string())})
    deltalog.write_table(table.location, given_null, mode="append")  # an explicit null is a value: kept
    want = [(1, "old", 0.5), (2, "new", 0.25), (3, "new", 0.25), (4, None, 0.25)]
    columns = ["id", "status", "score"]
    got = table.snapshot().to_arrow(columns=columns)
    assert sorted(zip(*[got.column(c).to_pylist() for c in columns])) == want
    assert duckdb_rows(table.location, columns) == want  # both ordered by id first
    assert delta_rs_rows(table.location, columns) == want
    table.change_column("status", drop_default=True)
    assert "CURRENT_DEFAULT" not in table.snapshot().schema.field("status").metadata
    with pytest.raises(deltalog.errors.SchemaError, match=r"status: table string vs data \(missing\)"):
        deltalog.write_table(table.location, pa.table({"id": pa.array([5], pa.int64())}), mode="append")
    assert [h["operation"] for h in table.history(limit=2)] == ["CHANGE COLUMN", "WRITE"]


def test_bad_defaults_are_refused(tmp_path: Path) -> None:
    table = _table(tmp_path)
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match=r"DEFAULT id \+ 1 names column\(s\) \['id'\]"):
        table.change_column("score", default="id + 1")
    with pytest.raises(InvalidArgumentError, match="set and drop"):
        table.change_column("score", default="1", drop_default=True)
    with pytest.raises(InvalidArgumentError, match="WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN"):
        table.add_columns([StructField("extra", PrimitiveType("integer"), True, {"CURRENT_DEFAULT": "0"})])
    assert table.latest_version() == version


def test_kernel_refuses_a_default_it_cannot_compute(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.change_column("status", default="current_user()")  # Spark evaluates it; the kernel cannot
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError, match=r"column status DEFAULT current_user\(\) cannot be computed"):
        deltalog.write_table(table.location, pa.table({"id": pa.array([2], pa.int64()), "score": [1.0]}),
                             mode="append")
    assert table.latest_version() == version
    assert len(list(Path(table.location).glob("*.parquet"))) == 1  # nothing written
    deltalog.write_table(table.location, pa.table({"id": pa.array([2], pa.int64()), "status": ["given"],
                                                   "score": [1.0]}), mode="append")
    assert table.snapshot().to_arrow().num_rows == 2
