"""Change data files: what DML commands write under ``_change_data/`` on tables with the change data feed on.

Such a file holds the table's columns (by their physical names under column mapping, partition columns in
Hive-style directories below ``_change_data/`` and not in the file, as for data files) plus
``_change_type`` (``delete``, ``update_preimage``, ``update_postimage`` or ``insert``), and is committed as a
``cdc`` action with ``dataChange=false``. Once a commit has change data files, change data feed readers
take its changes from them alone, so a command that writes any records every row it changed. The Spark
engine writes them with a Spark job (:mod:`deltalog.spark.jobs.change_files`); the kernel's DELETE, UPDATE and
MERGE with :func:`write_change_files`, and its overwrite by a data-column predicate streams the inserted rows
through :func:`change_file_writer`.

Example:
    >>> import pyarrow as pa
    >>> from deltalog.protocol.schema import StructType
    >>> rows = pa.table({"id": [1, 2]})
    >>> change_rows(rows, "delete", StructType.from_arrow_schema(rows.schema)).column(CHANGE_TYPE).to_pylist()
    ['delete', 'delete']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa

from deltalog.data.write_files import DEFAULT_TARGET_FILE_SIZE, DataFileWriter, WrittenFile
from deltalog.protocol.actions import AddCDCFile
from deltalog.protocol.schema import (
    COLUMN_MAPPING_ID_KEY,
    COLUMN_MAPPING_PHYSICAL_NAME_KEY,
    PrimitiveType,
    StructField,
    StructType,
)
from deltalog.storage import LogStore

__all__ = [
    "CHANGE_DATA_DIR", "CHANGE_TYPE", "cdc_actions", "change_file_writer", "change_rows", "change_schema",
    "write_change_files",
]

#: Directory (under the table root) of change data files.
CHANGE_DATA_DIR = "_change_data"
#: The column saying what happened to a row.
CHANGE_TYPE = "_change_type"

_MAPPING_KEYS = (COLUMN_MAPPING_ID_KEY, COLUMN_MAPPING_PHYSICAL_NAME_KEY)


def change_schema(schema: StructType) -> StructType:
    """The schema of change data files: the table's columns, nullable and without constraints, defaults or
    generation expressions but with their column mapping (change data files name columns as data files
    do), then ``_change_type``.

    Example:
        >>> from deltalog.protocol.schema import parse_schema
        >>> s = parse_schema('{"type":"struct","fields":[{"name":"x","type":"long","nullable":false,'
        ...                  '"metadata":{"delta.generationExpression":"1"}}]}')
        >>> [(f.name, f.nullable, dict(f.metadata)) for f in change_schema(s).fields]
        [('x', True, {}), ('_change_type', True, {})]
    """
    fields = tuple(
        replace(f, nullable=True, metadata={k: v for k, v in f.metadata.items() if k in _MAPPING_KEYS})
        for f in schema.fields
    )
    return StructType((*fields, StructField(CHANGE_TYPE, PrimitiveType("string"), True, {})))


def change_rows(rows: pa.Table, kind: str, schema: StructType) -> pa.Table:
    """``rows`` (which hold at least ``schema``'s columns, by name) as change rows of kind ``kind``.

    Example:
        >>> change_rows(pa.table({"x": [1], "extra": [2]}), "insert",
        ...             StructType.from_arrow_schema(pa.schema([("x", pa.int64())]))).column_names
        ['x', '_change_type']
    """
    out = rows.select([f.name for f in schema.fields])
    return out.append_column(CHANGE_TYPE, pa.repeat(pa.scalar(kind, pa.string()), out.num_rows))


def write_change_files(
    store: LogStore,
    schema: StructType,
    partition_columns: Sequence[str],
    changes: Sequence[pa.Table],
    *,
    column_mapping: str = "none",
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
) -> tuple[list[WrittenFile], list[AddCDCFile]]:
    """Write ``changes`` (from :func:`change_rows`) as change data files of a table with ``schema`` under
    ``_change_data/``; returns the files and their ``cdc`` actions (nothing is committed; on an error the
    files begun are deleted).

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> s = StructType.from_arrow_schema(pa.schema([("x", pa.int64())]))
        >>> files, actions = write_change_files(InMemoryLogStore(), s, [], [change_rows(pa.table({"x": [1]}),
        ...                                     "delete", s)])
        >>> actions[0].path.startswith("_change_data/part-"), actions[0].dataChange
        (True, False)
    """
    writer = change_file_writer(store, schema, partition_columns, column_mapping=column_mapping,
                                target_file_size=target_file_size)
    try:
        for part in changes:
            if part.num_rows:
                writer.write(part)
        files = writer.close()
    except BaseException:
        writer.abort()
        raise
    return files, cdc_actions(files)


def change_file_writer(
    store: LogStore,
    schema: StructType,
    partition_columns: Sequence[str],
    *,
    column_mapping: str = "none",
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
) -> DataFileWriter:
    """A writer of change data files (rows from :func:`change_rows`) for a table with ``schema``, for changes
    that stream (its ``abort`` deletes what it wrote, even after ``close``).

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> s = StructType.from_arrow_schema(pa.schema([("x", pa.int64())]))
        >>> w = change_file_writer(InMemoryLogStore(), s, [])
        >>> w.write(change_rows(pa.table({"x": [1]}), "insert", s))
        >>> [a.path.startswith("_change_data/") for a in cdc_actions(w.close())]
        [True]
    """
    return DataFileWriter(store, change_schema(schema), partition_columns, column_mapping=column_mapping,
                          target_file_size=target_file_size, directory=CHANGE_DATA_DIR)


def cdc_actions(files: Sequence[WrittenFile]) -> list[AddCDCFile]:
    """The ``cdc`` actions committing change data ``files`` (``dataChange=false``, as the protocol asks).

    Example:
        >>> cdc_actions([])
        []
    """
    return [AddCDCFile(path=f.path, partitionValues=dict(f.partition_values), size=f.size, dataChange=False)
            for f in files]
