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


# ---------------------------------------------------------------------------- tables on object stores


def read_remote(uri: str, options: dict[str, str]) -> tuple[int, list[dict[str, object]]]:
    """Version and rows of a table on an object store, as delta-rs reads them."""
    dt = deltalake.DeltaTable(uri, storage_options=options)
    return int(dt.version()), dt.to_pyarrow_table().to_pylist()


def append_remote(uri: str, options: dict[str, str], data: pa.Table) -> int:
    """One ``write_deltalake`` append to a table on an object store; returns the new version."""
    deltalake.write_deltalake(uri, data, mode="append", storage_options=options)
    return int(deltalake.DeltaTable(uri, storage_options=options).version())


def checkpoint_remote(uri: str, options: dict[str, str]) -> int:
    """delta-rs writes a checkpoint of the latest version; returns that version."""
    dt = deltalake.DeltaTable(uri, storage_options=options)
    dt.create_checkpoint()
    return int(dt.version())
