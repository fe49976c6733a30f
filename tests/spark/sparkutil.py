"""Small helpers shared by the Spark tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa

import deltalog


def rows(df: Any, key: str = "id") -> list[dict[str, Any]]:
    """A DataFrame's rows as dicts, sorted by ``key`` (nulls first)."""
    return arrow_rows(to_arrow(df), key)


def to_arrow(df: Any) -> pa.Table:
    """``df.toArrow()`` on every supported PySpark (3.5 has no ``toArrow``)."""
    from deltalog.spark.common.compat import to_arrow as collect

    return collect(df)


def frame(spark: Any, table: pa.Table, schema: Any = None) -> Any:
    """``spark.createDataFrame(table[, schema])`` of a ``pyarrow.Table`` on every supported PySpark (3.5 takes
    no Arrow table)."""
    from deltalog.spark.common.compat import frame_from_arrow

    return frame_from_arrow(spark, table, schema)


def arrow_rows(table: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    """An Arrow table's rows as dicts, sorted by ``key`` (nulls first)."""
    return sorted(table.to_pylist(), key=lambda r: (r[key] is not None, r[key]))


def version(path: Path | str) -> int:
    """The latest committed version (-1 when there is no table)."""
    try:
        return deltalog.Table(str(path)).latest_version()
    except deltalog.TableNotFoundError:
        return -1


def data_files(path: Path | str) -> list[str]:
    """Every parquet file under the table directory (committed or not)."""
    out = []
    for root, _, names in os.walk(str(path)):
        out.extend(os.path.join(root, n) for n in names if n.endswith(".parquet") and "_delta_log" not in root)
    return sorted(out)


def data(start: int, n: int) -> pa.Table:
    """Rows ``start .. start + n - 1``: ``id``, ``k = id % 3``, ``v = id / 2`` (null every 7th), ``s``."""
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "k": pa.array([i % 3 for i in ids], pa.int64()),
        "v": pa.array([None if i % 7 == 0 else i * 0.5 for i in ids], pa.float64()),
        "s": pa.array([f"s{i % 5}" for i in ids], pa.string()),
    })
