"""delta-rs calls run in a separate (spawned) process by the interop tests.

``deltalake`` is imported before anything imports ``pyarrow.parquet``: in the other order, a process
that called ``DeltaTable.to_pyarrow_table()`` aborts at exit ("terminate called without an active
exception"), which would turn a green pytest run into exit code 134.
"""

from __future__ import annotations

import deltalake  # must come first, see the module docstring
import pyarrow as pa


def read_table(path: str) -> pa.Table:
    """The table as delta-rs reads it (its own Rust reader)."""
    return deltalake.DeltaTable(path).to_pyarrow_table()


def version(path: str) -> int:
    """The latest version delta-rs sees."""
    return int(deltalake.DeltaTable(path).version())


def write(path: str, data: pa.Table, mode: str, partition_by: list[str] | None) -> None:
    """``write_deltalake`` with the given mode and partitioning."""
    deltalake.write_deltalake(path, data, mode=mode, partition_by=partition_by)  # type: ignore[arg-type]
