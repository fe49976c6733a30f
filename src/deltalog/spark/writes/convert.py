"""``DeltaTable.convertToDelta``: delta-spark's arguments mapped onto the kernel's ``convert_to_delta``.

The conversion itself is :mod:`deltalog.commands.convert` (one ``CONVERT`` commit of the parquet files
in place, stats from the footers, read on the driver: 2,000 local footers take ~0.05 s here, so a Spark
job -- seconds to schedule -- would not pay off). This module parses
what delta-spark accepts: the identifier ``parquet.`<path>``` (a ``delta.`<path>``` identifier, or a
path that already holds a Delta table, returns that table unchanged, as delta-spark does) and the
partition schema as a DDL string (``"day date, hour int"``) or a ``StructType``.

Differences from delta-spark, all stricter: files not named ``*.parquet`` are refused (delta-spark
fails later, reading them as parquet), and a partition schema must name the directory keys exactly, in
order.

Example:
    >>> convert_identifier("parquet.`/data/raw`")
    ('parquet', '/data/raw')
    >>> partition_schema_of("day DATE, `hour` int")
    {'day': 'date', 'hour': 'integer'}
"""

from __future__ import annotations

import re
from typing import Any

from deltalog.errors import InvalidArgumentError, TableNotFoundError

__all__ = ["convert", "convert_identifier", "partition_schema_of"]

_IDENTIFIER = re.compile(r"\s*(parquet|delta)\s*\.\s*`((?:[^`]|``)+)`\s*", re.IGNORECASE)
_DDL_FIELD = re.compile(r"\s*(`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)\s*:?\s+([A-Za-z_]+(?:\s*\(\s*\d+\s*\))?)\s*")
_DDL_TYPES = {
    "int": "integer", "integer": "integer", "bigint": "long", "long": "long", "smallint": "short",
    "short": "short", "tinyint": "byte", "byte": "byte", "string": "string", "varchar": "string",
    "char": "string", "double": "double", "float": "float", "real": "float", "boolean": "boolean",
    "bool": "boolean", "date": "date", "timestamp": "timestamp", "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
}  # fmt: skip
_PARTITION_TYPES = frozenset(_DDL_TYPES.values())


def convert_identifier(identifier: Any) -> tuple[str, str]:
    """``(format, path)`` of ``parquet.`<path>``` / ``delta.`<path>``` (backticks in the path doubled).

    Example:
        >>> convert_identifier("PARQUET.`/a``b`")
        ('parquet', '/a`b')
    """
    m = _IDENTIFIER.fullmatch(identifier) if isinstance(identifier, str) else None
    if m is None:
        raise InvalidArgumentError(
            f"[DELTA_CONVERT_NON_PARQUET_TABLE] convertToDelta needs an identifier of the form parquet.`<path>`, "
            f"got {identifier!r}"
        )
    return m.group(1).lower(), m.group(2).replace("``", "`")


def partition_schema_of(schema: Any) -> dict[str, str]:
    """The partition columns and Delta types of a DDL string or ``StructType`` (in order).

    Example:
        >>> partition_schema_of("a string, b bigint")
        {'a': 'string', 'b': 'long'}
    """
    out: dict[str, str] = {}
    if isinstance(schema, str):
        text = schema.strip()
        pos = 0
        while pos < len(text):
            m = _DDL_FIELD.match(text, pos)
            end = m.end() if m is not None else -1
            if m is None or (end < len(text) and text[end] != ","):
                raise InvalidArgumentError(
                    f"cannot parse the partition schema {schema!r} at {text[pos:pos + 20]!r}: expected "
                    "'<column> <type>' pairs separated by commas, e.g. 'day date, hour int'"
                )
            name = m.group(1)
            if name.startswith("`"):
                name = name[1:-1].replace("``", "`")
            base = re.sub(r"\s*\(.*", "", m.group(2)).lower()
            if base not in _DDL_TYPES:
                raise InvalidArgumentError(
                    f"partition column {name!r} has type {m.group(2)!r}, which convertToDelta does not support for "
                    f"partition columns (supported: {sorted(_DDL_TYPES)})"
                )
            out[name] = _DDL_TYPES[base]
            pos = end + 1
    elif type(schema).__name__ == "StructType" and hasattr(schema, "fields"):
        for f in schema.fields:
            name = f.dataType.typeName()
            if name not in _PARTITION_TYPES:
                raise InvalidArgumentError(
                    f"partition column {f.name!r} has type {f.dataType.simpleString()!r}, which convertToDelta does "
                    "not support for partition columns"
                )
            out[f.name] = name
    else:
        raise InvalidArgumentError(
            f"partitionSchema must be a DDL string or a StructType, got {type(schema).__name__}"
        )
    if not out and isinstance(schema, str):
        raise InvalidArgumentError("the partition schema is empty; pass None for an unpartitioned directory")
    return out


def convert(identifier: Any, partitionSchema: Any = None, collectStats: bool = True) -> str:
    """Convert the directory named by ``identifier`` (unless it already is a Delta table); returns its path.

    Example:
        >>> convert("parquet.`/data/raw`", "day date")                           # doctest: +SKIP
        '/data/raw'
    """
    from deltalog.commands.convert import convert_to_delta
    from deltalog.spark.common.core import load_snapshot, open_table

    fmt, path = convert_identifier(identifier)
    table = open_table(path)
    try:
        table.latest_version()
        exists = True
    except TableNotFoundError:
        exists = False
    if fmt == "delta" or exists:
        load_snapshot(path)  # a Delta table is returned as it is; delta.`<path>` must be one
    else:
        schema = {} if partitionSchema is None else partition_schema_of(partitionSchema)
        if not isinstance(collectStats, bool):
            raise InvalidArgumentError(f"collectStats must be a bool, got {collectStats!r}", table=path)
        convert_to_delta(path, partition_schema=schema, collect_stats=collectStats, allow_other_files=False)
    return path
