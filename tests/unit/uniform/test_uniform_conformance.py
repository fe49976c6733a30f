"""The table delta-spark wrote with icebergCompatV2 in column-mapping ``id`` mode (53 columns of many types,
``../shared/conformance``): once ``delta.universalFormat.enabledFormats = iceberg`` is set, and after a deltalog
append, both Iceberg readers return its rows."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import deltalog
from iceberg_readers import duckdb_rows, pyiceberg_rows
from readers import sort_key

pytest.importorskip("pyiceberg")

SOURCE = Path(__file__).resolve().parents[3].parent / "shared" / "conformance" / "delta-golden-extra" / \
    "table-with-icebegCompatV2Enabled"
#: pyiceberg 0.12 reads a null list of structs / map of structs as empty (DuckDB reads them as null)
PYICEBERG_EMPTY_FOR_NULL = {"array_of_structs", "map_of_rows"}


def _expected(path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    t = deltalog.Table(path).snapshot().to_arrow()
    return sorted(zip(*[t.column(c).to_pylist() for c in columns]), key=sort_key)


def test_delta_spark_compat_table_read_by_iceberg_readers(tmp_path: Path) -> None:
    if not SOURCE.exists():
        pytest.skip(f"conformance corpus not found at {SOURCE}")
    path = str(tmp_path / "t")
    shutil.copytree(SOURCE, path)
    table = deltalog.Table(path)
    table.set_properties({"delta.universalFormat.enabledFormats": "iceberg"})
    snap = table.snapshot()
    columns = [f.name for f in snap.schema.fields]
    assert len(columns) > 20  # 53 column ids with the nested ones
    deltalog.write_table(path, snap.to_arrow().slice(0, 2), mode="append")
    expected = _expected(path, columns)
    assert duckdb_rows(path, columns) == expected
    plain = [c for c in columns if c not in PYICEBERG_EMPTY_FOR_NULL]
    assert pyiceberg_rows(path, plain) == _expected(path, plain)
