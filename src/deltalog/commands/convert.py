"""``convert``: turn a directory of parquet files into a Delta table, in place, with one commit.

Nothing is rewritten: the log gets one ``add`` per parquet file. Steps:

1. list the files below the root, skipping hidden paths (a segment starting with ``_`` or ``.``:
   ``_SUCCESS``, ``_delta_log``, ``.crc`` side files) and files not named ``*.parquet``;
2. infer the partition columns from hive-style directories (``day=2024-01-01/hour=3/part-0.parquet``):
   every file must sit under the same ``key=value`` directory keys in the same order. Each column's
   type is inferred from its values like Spark does (``integer``, ``long``, ``double``, ``date``, else
   ``string``; ``__HIVE_DEFAULT_PARTITION__`` is null) unless ``partition_types`` names it. With
   ``partition_schema`` (delta-spark's ``partitionSchema``) the directory keys must be exactly its
   columns, in its order, and its types are used;
3. read every footer (several at a time on remote stores): the table schema is the files' schemas
   merged (conflicting types are refused) followed by the partition columns; ``add.stats`` comes from
   the footer (:func:`deltalog.data.write_stats.stats_json`; no min/max for floating-point columns, as
   a footer cannot tell whether a column holds NaN); ``collect_stats=False`` leaves it out;
4. commit protocol, metadata and the adds as version 0 through the transaction API, as a ``CONVERT``
   commit with delta-spark's parameters (``numFiles``, ``partitionedBy``, ``collectStats``,
   ``sourceFormat``). Any error before the commit leaves the directory as it was.

Example:
    >>> res = convert_to_delta("/data/parquet_events")                   # doctest: +SKIP
    >>> res.version, res.partition_columns, res.num_files                # doctest: +SKIP
    (0, ('day',), 42)
"""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.data.write_schema import data_schema
from deltalog.data.write_stats import float_leaves, stats_json
from deltalog.errors import DeltaError, InvalidArgumentError, SchemaError, TableNotFoundError, UnsupportedFeatureError
from deltalog.log.segment import build_segment
from deltalog.protocol.actions import Add, Format, Metadata
from deltalog.protocol.iceberg_compat import compat_version
from deltalog.protocol.partitions import (
    HIVE_DEFAULT_PARTITION,
    parse_partition_value,
    serialize_partition_value,
    unescape_path_name,
)
from deltalog.protocol.schema import DataType, PrimitiveType, StructField, StructType
from deltalog.storage import FileInfo, LogStore, store_for
from deltalog.txn.operations import Convert

if TYPE_CHECKING:
    from deltalog.txn.commit import CommitResult

__all__ = ["ConvertResult", "PartitionLayoutError", "convert_to_delta", "infer_partition_type", "partition_layout"]

#: ``progress(phase, done, total)`` as in :mod:`deltalog.commands.check`.
Progress = Callable[[str, int, "int | None"], None]

_INT32 = (-(2**31), 2**31 - 1)
_DECIMAL_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_PARTITION_TYPES = ("string", "integer", "long", "short", "byte", "double", "float", "boolean", "date", "timestamp",
                    "timestamp_ntz")  # fmt: skip


class PartitionLayoutError(InvalidArgumentError):
    """The directory layout is not hive-style partitioning the same way for every file.

    Example:
        >>> str(PartitionLayoutError("mixed partition keys", table="/d"))
        'mixed partition keys [table /d]'
    """


@dataclass(frozen=True)
class ConvertResult:
    """What :func:`convert_to_delta` committed; ``skipped_files`` counts files that are not parquet
    (hidden files are ignored, not counted).

    Example:
        >>> ConvertResult(version=0, num_files=2, num_rows=10, num_bytes=100, partition_columns=("d",),
        ...               schema_string="{}", skipped_files=1).num_files
        2
    """

    version: int
    num_files: int
    num_rows: int
    num_bytes: int
    partition_columns: tuple[str, ...]
    schema_string: str
    skipped_files: int = 0
    partition_types: Mapping[str, str] = field(default_factory=dict)
    commit: CommitResult | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the schema as an object)."""
        import json

        return {
            "version": self.version,
            "num_files": self.num_files,
            "num_rows": self.num_rows,
            "num_bytes": self.num_bytes,
            "partition_columns": list(self.partition_columns),
            "partition_types": dict(self.partition_types),
            "skipped_files": self.skipped_files,
            "schema": json.loads(self.schema_string),
        }


def _is_hidden(path: str) -> bool:
    return any(part[:1] in ("_", ".") for part in path.split("/"))


def partition_layout(
    paths: Sequence[str], *, table: str | None = None
) -> tuple[tuple[str, ...], list[dict[str, str | None]]]:
    """The partition columns shared by every path and each path's raw (unescaped) values.

    Example:
        >>> partition_layout(["d=1/a.parquet", "d=__HIVE_DEFAULT_PARTITION__/b.parquet"])
        (('d',), [{'d': '1'}, {'d': None}])
        >>> partition_layout(["a.parquet", "b.parquet"])
        ((), [{}, {}])
    """
    columns: tuple[str, ...] | None = None
    values: list[dict[str, str | None]] = []
    for path in paths:
        dirs = path.split("/")[:-1]
        keys: list[str] = []
        row: dict[str, str | None] = {}
        for d in dirs:
            key, sep, raw = d.partition("=")
            if not sep or not key:
                raise PartitionLayoutError(
                    f"directory {d!r} of {path} is not a hive-style partition directory (key=value)", table=table
                )
            name = unescape_path_name(key)
            keys.append(name)
            row[name] = None if raw == HIVE_DEFAULT_PARTITION else unescape_path_name(raw)
        if columns is None:
            columns = tuple(keys)
        elif tuple(keys) != columns:
            raise PartitionLayoutError(
                f"files are partitioned differently: {path} has partition keys {keys}, other files "
                f"{list(columns)}",
                table=table,
            )
        if len(set(keys)) != len(keys):
            raise PartitionLayoutError(f"partition key repeats in {path}", table=table)
        values.append(row)
    return columns or (), values


def infer_partition_type(values: Sequence[str | None]) -> str:
    """The Delta type Spark would infer for a partition column's directory values.

    Example:
        >>> infer_partition_type(["1", "2"]), infer_partition_type(["1", "9999999999"])
        ('integer', 'long')
        >>> infer_partition_type(["1.5", None]), infer_partition_type(["2024-01-31"]), infer_partition_type(["a"])
        ('double', 'date', 'string')
    """
    present = [v for v in values if v is not None]
    if not present:
        return "string"
    if all(v.lstrip("-").isdigit() and v.isascii() for v in present):
        return "integer" if all(_INT32[0] <= int(v) <= _INT32[1] for v in present) else "long"
    if all(_DECIMAL_TEXT.fullmatch(v) for v in present):
        return "double"
    if all(len(v) == 10 for v in present) and _all_parse(dt.date.fromisoformat, present):
        return "date"
    return "string"


def _all_parse(parse: Callable[[str], object], values: Sequence[str]) -> bool:
    try:
        for v in values:
            parse(v)
    except ValueError:
        return False
    return True


def _footer(store: LogStore, info: FileInfo, table: str) -> pq.FileMetaData:
    full = store.full_path(info.path)
    try:
        if "://" not in full:
            return pq.read_metadata(full)
        return pq.read_metadata(io.BytesIO(store.read(info.path)))
    except (OSError, pa.ArrowInvalid) as exc:
        raise InvalidArgumentError(f"{info.path} is not a readable parquet file: {exc}", table=table) from None


def _int96_columns(md: pq.FileMetaData) -> set[str]:
    schema = md.schema
    return {schema.column(i).path for i in range(len(schema)) if schema.column(i).physical_type == "INT96"}


def _file_schema(md: pq.FileMetaData) -> pa.Schema:
    """The file's Arrow schema; INT96 timestamps (Spark's legacy encoding of TIMESTAMP) are UTC instants."""
    schema = md.schema.to_arrow_schema()
    int96 = _int96_columns(md)
    if not int96:
        return schema
    fields = [f.with_type(pa.timestamp("us", tz="UTC")) if f.name in int96 else f for f in schema]
    return pa.schema(fields)


def _merge_schemas(schemas: list[tuple[str, pa.Schema]], table: str) -> pa.Schema:
    merged = schemas[0][1]
    for path, schema in schemas[1:]:
        if schema.equals(merged):
            continue
        try:
            merged = pa.unify_schemas([merged, schema])
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaError(f"{path} has a schema that conflicts with the other files: {exc}", table=table) from None
    return merged


def convert_to_delta(
    location: str | os.PathLike[str],
    *,
    partition_types: Mapping[str, str] | None = None,
    partition_schema: Mapping[str, str] | None = None,
    collect_stats: bool = True,
    allow_other_files: bool = True,
    properties: Mapping[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
    store: LogStore | None = None,
    clock: Callable[[], int] | None = None,
    progress: Progress | None = None,
) -> ConvertResult:
    """Convert the parquet files under ``location`` into a Delta table (see the module docstring).

    ``partition_types`` overrides inferred partition column types (``{"day": "string"}``);
    ``partition_schema`` instead states the partition columns and their types exactly (an ordered
    mapping; ``{}`` for "not partitioned"), and a directory layout that differs is refused naming the
    file. Files not named ``*.parquet`` are skipped and counted, or refused with
    ``allow_other_files=False``. A location that already holds a Delta table is refused.

    Example:
        >>> convert_to_delta("/data/raw", partition_types={"hour": "string"}).partition_types  # doctest: +SKIP
        {'day': 'date', 'hour': 'string'}
    """
    from deltalog.txn.transaction import Transaction

    loc = os.fspath(location)
    if compat_version(properties):  # it would set column mapping, whose physical names the files do not use
        raise UnsupportedFeatureError(
            "CONVERT TO DELTA cannot enable Iceberg compatibility (its column mapping would not match the "
            "files' column names): convert first, then run REORG TABLE ... APPLY (UPGRADE UNIFORM "
            "(ICEBERG_COMPAT_VERSION = 2))", feature="icebergCompatV2", table=loc)
    store = store if store is not None else store_for(loc)
    step = progress or (lambda phase, done, total: None)
    full = store.full_path("")
    if "://" not in full and not os.path.isdir(full):
        raise TableNotFoundError("no such directory", table=loc)
    try:
        version = build_segment(store, table=loc).version
    except TableNotFoundError:
        pass
    else:
        raise InvalidArgumentError(f"already a Delta table (version {version}); nothing to convert", table=loc)
    step("listing", 0, None)
    listed = [f for f in store.list_dir("", recursive=True) if not _is_hidden(f.path)]
    infos = [f for f in listed if f.path.lower().endswith(".parquet")]
    step("listing", len(listed), len(listed))
    others = [f.path for f in listed if not f.path.lower().endswith(".parquet")]
    if others and not allow_other_files:
        raise InvalidArgumentError(
            f"{len(others)} file(s) are not parquet files ({', '.join(sorted(others)[:3])}); only a directory "
            "of parquet files can be converted",
            table=loc,
        )
    if not infos:
        raise InvalidArgumentError("no parquet files found to convert", table=loc)
    columns, raw_values = partition_layout([f.path for f in infos], table=loc)
    if partition_schema is not None:
        if partition_types:
            raise InvalidArgumentError("pass partition_schema or partition_types, not both", table=loc)
        _check_layout(columns, tuple(partition_schema), infos[0].path, loc)
        partition_types = partition_schema
    overrides = dict(partition_types or {})
    unknown = sorted(set(overrides) - set(columns))
    if unknown:
        raise InvalidArgumentError(f"partition_types names {unknown}, which are not partition columns {list(columns)}",
                                   table=loc)
    types: dict[str, str] = {}
    for c in columns:
        t = overrides.get(c) or infer_partition_type([row[c] for row in raw_values])
        if t not in _PARTITION_TYPES:
            raise InvalidArgumentError(f"unsupported partition column type {t!r} for {c!r}", table=loc)
        types[c] = t
    footers: list[pq.FileMetaData] = []
    schemas: list[tuple[str, pa.Schema]] = []
    # Local footers read at ~40k/s in one thread (threads only add overhead); remote reads wait on I/O.
    workers = 1 if "://" not in full else min(8, len(infos))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for i, md in enumerate(pool.map(lambda info: _footer(store, info, loc), infos)):
            if i % 200 == 0:
                step("footers", i, len(infos))
            footers.append(md)
            schemas.append((infos[i].path, _file_schema(md)))
    step("footers", len(infos), len(infos))
    merged = _merge_schemas(schemas, loc)
    clash = [c for c in columns if c in merged.names]
    if clash:
        raise SchemaError(f"partition column(s) {clash} are also stored inside the data files", table=loc)
    data = data_schema(merged, table=loc)
    part_fields = tuple(StructField(c, PrimitiveType(types[c]), True, {}) for c in columns)
    schema = StructType((*data.fields, *part_fields))
    now = clock() if clock is not None else time.time_ns() // 1_000_000
    adds: list[Add] = []
    rows = 0
    for info, md, (_, file_schema), raw in zip(infos, footers, schemas, raw_values):
        stored = data_schema(file_schema, table=loc)
        values = {c: _normalise(raw[c], part_fields[i].type, c, info.path, loc) for i, c in enumerate(columns)}
        adds.append(
            Add(
                path=quote(info.path, safe="/=-_.~"),
                partitionValues=values,
                size=info.size,
                modificationTime=info.modification_time,
                dataChange=True,
                stats=stats_json(md, stored, nan_columns=float_leaves(stored)) if collect_stats else None,
            )
        )
        rows += md.num_rows
    props = {str(k): str(v) for k, v in (properties or {}).items()}
    op = Convert(num_files=len(adds), partition_by=columns, collect_stats=collect_stats)
    options: dict[str, Any] = {} if clock is None else {"clock": clock}
    try:
        build_segment(store, table=loc)
    except TableNotFoundError:
        pass
    else:
        raise InvalidArgumentError("a Delta table appeared at this location while converting", table=loc)
    txn = Transaction(store, None, op, table=loc, **options)
    txn.update_metadata(
        Metadata(
            id=str(uuid.uuid4()),
            format=Format(),
            schemaString=schema.to_json(),
            partitionColumns=columns,
            configuration=props,
            name=name,
            description=description,
            createdTime=now,
        )
    )
    txn.add_actions(adds)
    step("commit", 0, 1)
    num_bytes = sum(f.size for f in infos)
    result = txn.commit(metrics={"numFiles": len(adds), "numOutputRows": rows, "numOutputBytes": num_bytes})
    step("commit", 1, 1)
    return ConvertResult(
        version=result.version,
        num_files=len(adds),
        num_rows=rows,
        num_bytes=num_bytes,
        partition_columns=columns,
        schema_string=schema.to_json(),
        skipped_files=len(listed) - len(infos),
        partition_types=types,
        commit=result,
    )


def _check_layout(found: tuple[str, ...], expected: tuple[str, ...], example: str, table: str) -> None:
    """The directories' partition keys must be exactly the stated partition columns, in order."""
    if found == expected:
        return
    if not expected:
        what = (f"the files are partitioned by {list(found)} (e.g. {example}), but no partition schema was given; "
                "state the partition columns and their types")
    elif not found:
        what = f"the partition schema names {list(expected)}, but the files are not in partition directories"
    else:
        what = (f"the partition schema names {list(expected)}, but the directories are partitioned by "
                f"{list(found)} (e.g. {example})")
    raise PartitionLayoutError(what, table=table)


def _normalise(raw: str | None, dtype: DataType, column: str, path: str, table: str) -> str | None:
    """The canonical serialized form of a directory value (``01`` of an integer column is ``1``)."""
    if raw is None:
        return None
    try:
        return serialize_partition_value(parse_partition_value(raw, dtype), dtype)
    except DeltaError as exc:
        raise InvalidArgumentError(
            f"partition value {raw!r} of {column!r} in {path} is not a valid {getattr(dtype, 'name', dtype)}: "
            f"{exc.message}",
            table=table,
        ) from None
