"""Independent Iceberg readers for the UniForm tests: pyiceberg (``StaticTable.from_metadata``) and DuckDB's
``iceberg`` extension (loaded with its ``avro`` extension from the PyPI wheels). Each returns the rows of the
table at a path as sorted tuples of the given columns; ``snapshot_id`` reads an older Iceberg snapshot."""

from __future__ import annotations

import glob
import os
from typing import Any

import pytest

from readers import sort_key


def extension_path(module_name: str) -> str:
    """The extension file a ``duckdb-extension-*`` wheel ships (skips the test without it)."""
    module = pytest.importorskip(module_name)
    found = glob.glob(os.path.join(os.path.dirname(module.__file__), "**", "*.duckdb_extension"), recursive=True)
    if not found:
        pytest.skip(f"{module_name} ships no extension file")
    return found[0]


def _norm(value: Any) -> Any:
    if hasattr(value, "tzinfo") and value.tzinfo is not None:
        import datetime as dt

        return value.astimezone(dt.UTC)
    return value


def _rows(table: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    cols = [table.column(c).to_pylist() for c in columns]
    return sorted((tuple(_norm(v) for v in r) for r in zip(*cols)), key=sort_key)


def pyiceberg_table(path: str, properties: dict[str, str] | None = None) -> Any:
    """The Iceberg table at ``path`` as pyiceberg opens it from the path alone (``version-hint.text``)."""
    static = pytest.importorskip("pyiceberg.table").StaticTable
    return static.from_metadata(path, properties=properties or {})


def pyiceberg_rows(path: str, columns: list[str], *, snapshot_id: int | None = None, row_filter: str | None = None,
                   properties: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    """Rows as pyiceberg reads them (``row_filter``: pyiceberg's filter syntax, pruned with the bounds)."""
    table = pyiceberg_table(path, properties)
    kwargs: dict[str, Any] = {"selected_fields": tuple(columns)}
    if snapshot_id is not None:
        kwargs["snapshot_id"] = snapshot_id
    if row_filter is not None:
        kwargs["row_filter"] = row_filter
    return _rows(table.scan(**kwargs).to_arrow(), columns)


def duckdb_connection(setup: list[str] | None = None) -> Any:
    duckdb = pytest.importorskip("duckdb")
    avro, iceberg = extension_path("duckdb_extension_avro"), extension_path("duckdb_extension_iceberg")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{avro}'")
    con.execute(f"LOAD '{iceberg}'")
    for statement in setup or []:
        con.execute(statement)
    return con


def duckdb_rows(path: str, columns: list[str], *, snapshot_id: int | None = None, where: str | None = None,
                setup: list[str] | None = None) -> list[tuple[Any, ...]]:
    """Rows as DuckDB's iceberg extension reads them (``where``: a SQL condition)."""
    con = duckdb_connection(setup)
    try:
        select = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
        args = "?" if snapshot_id is None else f"?, snapshot_from_id => {int(snapshot_id)}"
        sql = f"SELECT {select} FROM iceberg_scan({args})" + (f" WHERE {where}" if where else "")
        return _rows(con.execute(sql, [path]).to_arrow_table(), columns)
    finally:
        con.close()


def store_file_io_class() -> Any:
    """A pyiceberg ``FileIO`` (for ``py-io-impl``) that reads object-store locations through deltalog's stores,
    for stores pyiceberg has no file system of its own for (Azure's ``az://``): planning, manifests and parquet
    are still pyiceberg's. The properties carry the storage options (``deltalog.option.<KEY>``)."""
    from pyiceberg.io import FileIO, InputFile, OutputFile

    from deltalog.storage import store_for
    from deltalog.uniform.io import StoreFileIO

    class ObjectStoreIO(FileIO):
        def _io(self, location: str) -> tuple[StoreFileIO, str]:
            scheme, rest = location.split("://", 1)
            container = rest.split("/", 1)[0]
            opts = {k[len("deltalog.option."):]: v for k, v in self.properties.items()
                    if k.startswith("deltalog.option.")}
            fio = StoreFileIO(store_for(f"{scheme}://{container}", options=opts))
            return fio, location

        def new_input(self, location: str) -> InputFile:
            fio, loc = self._io(location)
            return fio.new_input(loc)

        def new_output(self, location: str) -> OutputFile:
            fio, loc = self._io(location)
            return fio.new_output(loc)

        def delete(self, location: str | InputFile | OutputFile) -> None:
            raise NotImplementedError("a reader deletes nothing")

    return ObjectStoreIO
