"""ADD COLUMNS and CHANGE COLUMN in the kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import PrimitiveType, StructField
from deltalog.txn.constraints import ConstraintViolationError


def make(tmp_path: Path) -> deltalog.Table:
    deltalog.write_table(str(tmp_path), pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", None]}))
    return deltalog.Table(str(tmp_path))


def test_add_columns_reads_old_rows_as_null_and_records_the_operation(tmp_path: Path) -> None:
    t = make(tmp_path)
    result = t.add_columns([StructField("z", PrimitiveType("integer"), True, {"comment": "new"})])
    assert result.operation == "ADD COLUMNS"
    snap = t.snapshot()
    assert snap.schema.field_names == ["id", "s", "z"] and snap.schema.field("z").metadata == {"comment": "new"}
    assert snap.to_arrow().column("z").to_pylist() == [None, None]
    params = t.history(limit=1)[0]["operationParameters"]
    assert json.loads(params["columns"])[0]["column"]["name"] == "z"
    deltalog.write_table(str(tmp_path), pa.table({"id": pa.array([3], pa.int64()), "s": ["c"],
                                                  "z": pa.array([7], pa.int32())}), mode="append")
    assert sorted(t.snapshot().to_arrow().column("z").to_pylist(), key=lambda v: (v is not None, v)) == [None, None, 7]


def test_add_columns_refuses_duplicates_and_not_null(tmp_path: Path) -> None:
    t = make(tmp_path)
    with pytest.raises(InvalidArgumentError, match="DUPLICATE"):
        t.add_columns([StructField("ID", PrimitiveType("long"), True, {})])
    with pytest.raises(InvalidArgumentError, match="NOT_NULL"):
        t.add_columns([StructField("q", PrimitiveType("long"), False, {})])
    assert t.snapshot().version == 0


def test_change_column_comment_and_nullability(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.change_column("ID", comment="the key")
    assert t.snapshot().schema.field("id").metadata["comment"] == "the key"
    t.change_column("id", nullable=False)
    assert not t.snapshot().schema.field("id").nullable
    with pytest.raises(ConstraintViolationError, match="1 row"):
        t.change_column("s", nullable=False)
    t.change_column("id", nullable=True)
    assert t.snapshot().schema.field("id").nullable
    with pytest.raises(InvalidArgumentError, match="COLUMN_NOT_FOUND"):
        t.change_column("nope", comment="x")
    assert [h["operation"] for h in t.history(limit=3)] == ["CHANGE COLUMN"] * 3
