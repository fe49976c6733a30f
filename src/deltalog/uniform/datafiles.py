"""Delta ``add`` actions as Iceberg data files: location, record count, size, typed partition values and
per-column bounds and counts from the Delta statistics.

Bounds are only ever *widened*, never narrowed, so that an Iceberg reader pruning on them never skips a
live row: Delta keeps timestamps truncated down to the millisecond, so an upper bound becomes the last
microsecond of that millisecond; strings are cut to a prefix, so a maximum is kept only when it cannot
be a cut one (shorter than the prefix length, or ending in the ``U+10FFFF`` tie-breaker); float bounds
that are NaN are left out.

Example:
    >>> df = data_file(row, ctx)                                                 # doctest: +SKIP
    >>> df.file_path, df.record_count                                            # doctest: +SKIP
    ('/data/t/part-0.parquet', 3)
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import unquote

from pyiceberg.conversions import to_bytes
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
)

from deltalog.errors import UnsupportedFeatureError
from deltalog.protocol import schema as ds
from deltalog.protocol.partitions import parse_date_text, parse_partition_value, parse_timestamp_text
from deltalog.protocol.stats import FileStats
from deltalog.storage import LogStore
from deltalog.uniform.schema import ConvertedSchema

__all__ = ["FileContext", "data_file", "file_location"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DATE = dt.date(1970, 1, 1)
_MAX_CHAR = "\U0010ffff"


@dataclass
class FileContext:
    """What converting one table version's adds needs: the converted schema, the partition spec, the Delta
    partition columns (logical name -> (physical key in ``partitionValues``, Delta type)), the store, the
    string prefix length of the statistics and the table (for errors)."""

    converted: ConvertedSchema
    spec: PartitionSpec
    partitions: list[tuple[str, str, ds.DataType]]
    store: LogStore
    string_prefix: int
    table: str
    version: int


def file_location(store: LogStore, path: str) -> str:
    """The absolute location of a data file from its log path (URL-encoded relative path or absolute URI).

    Example:
        >>> from deltalog.storage import store_for
        >>> file_location(store_for("/data/t"), "d=a%20b/part-0.parquet")
        '/data/t/d=a b/part-0.parquet'
    """
    if path.startswith("file:"):
        rest = path[5:]
        return unquote(rest[2:] if rest.startswith("//") else rest)
    if path.startswith("/"):
        return unquote(path)
    if "://" in path:
        return path
    return store.full_path(unquote(path))


def _partition_record(values: Mapping[str, str | None], ctx: FileContext, path: str) -> Record:
    out = []
    for name, key, dtype in ctx.partitions:
        raw = values.get(key, values.get(name))
        value = parse_partition_value(raw, dtype)
        out.append(_internal(value))
    return Record(*out)


def _internal(value: Any) -> Any:
    """pyiceberg's internal form of a partition value: days for dates, microseconds for timestamps."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return (value - _EPOCH_DATE).days
    return value


def _lookup(stats: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = stats
    for part in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _timestamp_micros(text: str, *, utc: bool, upper: bool) -> int:
    value = parse_timestamp_text(text, utc=utc)
    micros = int(_internal(value))
    frac = text.split(".", 1)[1] if "." in text else ""
    digits = len("".join(c for c in frac if c.isdigit()))
    if upper and digits <= 3:  # Delta keeps milliseconds, truncated down: the true maximum may be 999 µs later
        micros += 999
    return micros


def _bound(itype: PrimitiveType, value: Any, *, upper: bool, prefix: int) -> bytes | None:
    """The Iceberg single-value encoding of a Delta statistics value, or None where no safe bound exists."""
    if value is None or isinstance(value, (dict, list)):
        return None
    try:
        if isinstance(itype, (IntegerType, LongType)):
            if isinstance(value, bool) or not isinstance(value, int):
                return None
            return to_bytes(itype, value)
        if isinstance(itype, (FloatType, DoubleType)):
            if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
                return None
            f = float(value)
            if math.isnan(f):
                return None
            if f == 0.0:  # -0.0 and 0.0 compare equal; widen to the side that keeps both
                f = 0.0 if upper else -0.0
            return to_bytes(itype, f)
        if isinstance(itype, DecimalType):
            if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
                return None
            d = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
            q = d.quantize(Decimal(1).scaleb(-itype.scale))
            if q != d:
                return None
            return to_bytes(itype, q)
        if isinstance(itype, DateType):
            if not isinstance(value, str):
                return None
            return to_bytes(itype, (parse_date_text(value) - _EPOCH_DATE).days)
        if isinstance(itype, (TimestampType, TimestamptzType)):
            if not isinstance(value, str):
                return None
            return to_bytes(itype, _timestamp_micros(value, utc=isinstance(itype, TimestamptzType), upper=upper))
        if isinstance(itype, StringType):
            if not isinstance(value, str):
                return None
            if upper and len(value) >= prefix and not value.endswith(_MAX_CHAR):
                return None  # possibly cut to the prefix: not an upper bound
            return value.encode("utf-8", "surrogatepass")
        if isinstance(itype, BooleanType):
            return to_bytes(itype, value) if isinstance(value, bool) else None
    except (ValueError, InvalidOperation, OverflowError, TypeError):
        return None
    return None


def _stats_maps(
    stats: FileStats | None, ctx: FileContext, records: int
) -> tuple[dict[int, int], dict[int, int], dict[int, bytes], dict[int, bytes]]:
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    if stats is None:
        return values, nulls, lower, upper
    conv = ctx.converted
    for fid, itype in conv.leaves.items():
        path = conv.physical_paths[fid]
        values[fid] = records
        n = _lookup(stats.null_count, path)
        if isinstance(n, int) and not isinstance(n, bool):
            nulls[fid] = n
        lo = _bound(itype, _lookup(stats.min_values, path), upper=False, prefix=ctx.string_prefix)
        hi = _bound(itype, _lookup(stats.max_values, path), upper=True, prefix=ctx.string_prefix)
        if lo is not None and hi is not None:
            lower[fid], upper[fid] = lo, hi
    return values, nulls, lower, upper


def _record_count(ctx: FileContext, stats: FileStats | None, location: str, log_path: str) -> int:
    if stats is not None and stats.num_records is not None:
        return stats.num_records
    import pyarrow.parquet as pq

    root = ctx.store.full_path("").rstrip("/") + "/"
    if location.startswith(root):
        with ctx.store.open_input(location[len(root):]) as f:
            return int(pq.ParquetFile(f).metadata.num_rows)
    if "://" not in location:
        return int(pq.ParquetFile(location).metadata.num_rows)
    raise UnsupportedFeatureError(
        f"data file {log_path} has no numRecords statistics and lies outside the table: Iceberg needs its row "
        "count (run `deltalog compute-stats` or rewrite the file)", table=ctx.table, version=ctx.version,
        feature="icebergCompatV2",
    )


def data_file(row: Mapping[str, Any], ctx: FileContext) -> DataFile:
    """The Iceberg data file of one ``add`` row (as :func:`deltalog.log.files.normalize_files` gives them);
    refuses a file with a deletion vector, which Iceberg format version 2 cannot express without
    position-delete files.

    Example:
        >>> data_file(snap.add_files().to_pylist()[0], ctx).record_count              # doctest: +SKIP
        3
    """
    log_path = row["path"]
    if row.get("deletionVector"):
        raise UnsupportedFeatureError(
            f"data file {log_path} has a deletion vector, which Iceberg tables cannot express: UniForm needs "
            "a table without deletion vectors (set 'delta.enableDeletionVectors' = 'false' and run "
            "REORG TABLE ... APPLY (PURGE))", table=ctx.table, version=ctx.version, feature="icebergCompatV2",
        )
    location = file_location(ctx.store, log_path)
    stats = FileStats.from_json(row.get("stats"), table=ctx.table, version=ctx.version, file=log_path)
    records = _record_count(ctx, stats, location, log_path)
    pv = row.get("partitionValues") or {}
    values_map = dict(pv) if not isinstance(pv, Mapping) else pv
    values, nulls, lower, upper = _stats_maps(stats, ctx, records)
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=_partition_record(values_map, ctx, log_path),
        record_count=records,
        file_size_in_bytes=int(row.get("size") or 0),
        column_sizes=None,
        value_counts=values or None,
        null_value_counts=nulls or None,
        nan_value_counts=None,
        lower_bounds=lower or None,
        upper_bounds=upper or None,
        split_offsets=None,
        equality_ids=None,
        sort_order_id=None,
        key_metadata=None,
        spec_id=ctx.spec.spec_id,
    )
