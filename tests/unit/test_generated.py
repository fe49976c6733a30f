"""Generated columns in the kernel's writes: computed when the data leaves them out (partition columns
included), checked when it provides them, refused naming the column when the kernel cannot evaluate the
expression -- nothing written in either failure -- and read back by delta-rs."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import UnsupportedFeatureError
from deltalog.txn.constraints import ConstraintViolationError


def _table(path: Path, expression: str = "CAST(ts AS DATE)") -> str:
    log = path / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "v", "type": "long", "nullable": True, "metadata": {}},
        {"name": "day", "type": "date", "nullable": True, "metadata": {"delta.generationExpression": expression}}]}
    actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 4}},
               {"metaData": {"id": "generated-test", "format": {"provider": "parquet", "options": {}},
                             "schemaString": json.dumps(schema), "partitionColumns": ["day"], "configuration": {},
                             "createdTime": 0}},
               {"commitInfo": {"operation": "CREATE TABLE", "timestamp": 0}}]
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(path)


def _rows(ts: list[dt.datetime], **extra: object) -> pa.Table:
    data: dict[str, object] = {"ts": pa.array(ts, pa.timestamp("us", tz="UTC")), "v": list(range(len(ts)))}
    data.update(extra)
    return pa.table(data)


T1 = dt.datetime(2024, 5, 1, 23, 30, tzinfo=dt.UTC)
T2 = dt.datetime(2024, 5, 2, 0, 15, tzinfo=dt.UTC)


def test_computed_when_left_out(tmp_path: Path) -> None:
    path = _table(tmp_path / "t")
    deltalog.write_table(path, _rows([T1, T2]), mode="append")
    snap = deltalog.Table(path).snapshot()
    assert sorted(dict(v)["day"] for v in snap.add_files().column("partitionValues").to_pylist()) == \
        ["2024-05-01", "2024-05-02"]
    got = sorted(zip(*[snap.to_arrow().column(c).to_pylist() for c in ("v", "day")]))
    assert got == [(0, dt.date(2024, 5, 1)), (1, dt.date(2024, 5, 2))]
    deltalake = pytest.importorskip("deltalake")
    assert deltalake.DeltaTable(path).to_pyarrow_table().num_rows == 2


def test_checked_when_given(tmp_path: Path) -> None:
    path = _table(tmp_path / "t")
    deltalog.write_table(path, _rows([T1], day=pa.array([dt.date(2024, 5, 1)])), mode="append")
    with pytest.raises(ConstraintViolationError, match=r"generated column day \(CAST\(ts AS DATE\)\)"):
        deltalog.write_table(path, _rows([T2], day=pa.array([dt.date(2030, 1, 1)])), mode="append")
    assert deltalog.Table(path).latest_version() == 1
    assert len(list(Path(path).rglob("*.parquet"))) == 1


def test_expression_the_kernel_cannot_evaluate(tmp_path: Path) -> None:
    path = _table(tmp_path / "t", "date_trunc('MONTH', ts)")
    with pytest.raises(UnsupportedFeatureError, match=r"generated column day = date_trunc.*write through Spark"):
        deltalog.write_table(path, _rows([T1]), mode="append")
    assert deltalog.Table(path).latest_version() == 0 and not list(Path(path).rglob("*.parquet"))
