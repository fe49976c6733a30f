"""Independent readers for interop checks: delta-rs (``deltalake``) and DuckDB's ``delta`` extension
(delta-kernel-rs, loaded from the ``duckdb-extension-delta`` wheel). Each returns the table's rows as
sorted tuples of the given columns, or skips the test when the reader is not installed."""

from __future__ import annotations

import glob
import os
from typing import Any

import pytest


def sort_key(row: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    """Orders rows holding nulls (nulls first in each column)."""
    return tuple((v is not None, v) for v in row)


def duckdb_rows(path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """Rows of the Delta table at ``path`` as DuckDB's delta extension reads them."""
    duckdb = pytest.importorskip("duckdb")
    ext_pkg = pytest.importorskip("duckdb_extension_delta")
    found = glob.glob(os.path.join(os.path.dirname(ext_pkg.__file__), "**", "*.duckdb_extension"), recursive=True)
    if not found:
        pytest.skip("duckdb-extension-delta ships no extension file")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    try:
        con.execute(f"LOAD '{found[0]}'")
        select = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
        rows = con.execute(f"SELECT {select} FROM delta_scan(?)", [path]).fetchall()
    finally:
        con.close()
    return sorted((tuple(r) for r in rows), key=sort_key)


def delta_rs_rows(path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """Rows of the Delta table at ``path`` as delta-rs reads them."""
    deltalake = pytest.importorskip("deltalake")
    table = deltalake.DeltaTable(path).to_pyarrow_table(columns=columns)
    return sorted(zip(*[table.column(c).to_pylist() for c in columns]), key=sort_key)


def delta_rs_query_rows(path: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """Rows of the Delta table at ``path`` as delta-rs' query engine reads them: unlike
    :func:`delta_rs_rows` (``to_pyarrow_table``) it applies deletion vectors."""
    deltalake = pytest.importorskip("deltalake")
    import pyarrow as pa

    select = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    result = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path)).execute(f"select {select} from t")
    rows = [row for batch in result for row in zip(*[c.to_pylist() for c in pa.record_batch(batch).columns])]
    return sorted(rows, key=sort_key)
