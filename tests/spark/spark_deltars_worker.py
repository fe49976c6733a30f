"""delta-rs calls for the Spark tests, run in a spawned process (see tests/interop/deltars_worker.py:
``deltalake`` must be imported before pyarrow.parquet, or the process aborts at exit)."""

from __future__ import annotations

import deltalake  # must come first
import pyarrow as pa


def read_table(path: str) -> pa.Table:
    """The table as delta-rs reads it."""
    return deltalake.DeltaTable(path).to_pyarrow_table()


def version(path: str) -> int:
    """The latest version delta-rs sees."""
    return int(deltalake.DeltaTable(path).version())


def read_with_query_engine(path: str) -> pa.Table:
    """The table as delta-rs' query engine reads it: unlike ``to_pyarrow_table`` it applies deletion
    vectors (inline and in files)."""
    table = deltalake.DeltaTable(path)
    result = deltalake.QueryBuilder().register("t", table).execute("select * from t")
    return pa.Table.from_batches([pa.record_batch(batch) for batch in result])
