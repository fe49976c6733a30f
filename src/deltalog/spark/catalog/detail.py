"""``DESCRIBE DETAIL``'s row (:func:`detail_frame`, shared with :meth:`deltalog.spark.api.table.DeltaTable.detail`),
and ``DESCRIBE DETAIL`` of a catalog table that is not a Delta table (``USING parquet``, ``csv``, a Hive table),
as delta-spark describes one: its provider as ``format``, the catalog's name, comment, location, creation
time, partition columns and properties; the columns only a Delta log knows (``id``, ``lastModified``,
``numFiles``, ``sizeInBytes``, protocol versions, features, clustering) are null. A Delta table is described
from its log (:meth:`deltalog.spark.api.table.DeltaTable.detail`).

Example:
    >>> spark.sql("CREATE TABLE p (id INT) USING parquet")                      # doctest: +SKIP
    >>> spark.sql("DESCRIBE DETAIL p").first().format                           # doctest: +SKIP
    'parquet'
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from deltalog.spark.catalog.entries import CatalogEntry, raw_sql

__all__ = ["DELTA_SPARK_COLUMNS", "DETAIL_SCHEMA", "detail_frame", "location_uri", "non_delta_detail"]

#: delta-spark's ``DESCRIBE DETAIL`` columns, in its order, then deltalog's: ``numRecords`` (live rows: the files'
#: ``numRecords`` less the rows deletion vectors delete; null when a file has no statistics), ``numDeletedRecords``,
#: ``numFilesWithDeletionVectors``, ``numSmallFiles`` (below a quarter of the target file size, as
#: ``Table.health()`` counts them), ``commitsSinceCheckpoint``, and UniForm's ``icebergMetadataLocation`` and
#: ``icebergConvertedDeltaVersion`` (null without Iceberg metadata).
DETAIL_SCHEMA = pa.schema(
    [
        ("format", pa.string()),
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("location", pa.string()),
        ("createdAt", pa.timestamp("us", tz="UTC")),
        ("lastModified", pa.timestamp("us", tz="UTC")),
        ("partitionColumns", pa.list_(pa.string())),
        ("clusteringColumns", pa.list_(pa.string())),
        ("numFiles", pa.int64()),
        ("sizeInBytes", pa.int64()),
        ("properties", pa.map_(pa.string(), pa.string())),
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("tableFeatures", pa.list_(pa.string())),
        # deltalog's, after delta-spark's: from the log alone (deltalog.health), null for a non-Delta table
        ("numRecords", pa.int64()),
        ("numDeletedRecords", pa.int64()),
        ("numFilesWithDeletionVectors", pa.int64()),
        ("numSmallFiles", pa.int64()),
        ("commitsSinceCheckpoint", pa.int64()),
        # UniForm (deltalog.uniform): the newest Iceberg metadata file beside the log, the Delta version it holds
        ("icebergMetadataLocation", pa.string()),
        ("icebergConvertedDeltaVersion", pa.int64()),
    ]
)
#: How many of :data:`DETAIL_SCHEMA`'s columns are delta-spark's (the rest are deltalog's additions).
DELTA_SPARK_COLUMNS = 15

_CREATED_FORMAT = "%a %b %d %H:%M:%S %Y"  # java.util.Date.toString without its zone, as DESCRIBE EXTENDED shows it


def non_delta_detail(spark: Any, entry: CatalogEntry) -> Any:
    """The ``DESCRIBE DETAIL`` row of the non-Delta catalog table ``entry`` (see the module docstring).

    Example:
        >>> non_delta_detail(spark, lookup(spark, "p")).first().partitionColumns  # doctest: +SKIP
        []
    """
    shown = entry.name.sql()
    extended = {str(r[0]).strip(): r[1] for r in raw_sql(spark, f"DESCRIBE TABLE EXTENDED {shown}").collect()}
    partitions = [c.name for c in spark.catalog.listColumns(entry.name.qualified) if c.isPartition]
    properties = [(str(r[0]), str(r[1])) for r in raw_sql(spark, f"SHOW TBLPROPERTIES {shown}").collect()]
    return detail_frame(spark, {
        "format": entry.provider.lower() or None,
        "name": entry.name.full(),
        "description": extended.get("Comment"),
        "location": location_uri(entry.location) if entry.location else None,
        "createdAt": _created(extended.get("Created Time")),
        "partitionColumns": partitions,
        "properties": properties,
    })


def detail_frame(spark: Any, row: Mapping[str, Any]) -> Any:
    """``DESCRIBE DETAIL``'s one-row DataFrame of ``row`` (columns it leaves out are null).

    Example:
        >>> detail_frame(spark, {"format": "parquet", "location": "file:/t"}).first().format  # doctest: +SKIP
        'parquet'
    """
    from deltalog.spark.common.core import arrow_frame

    return arrow_frame(spark, pa.Table.from_pylist([dict(row)], schema=DETAIL_SCHEMA))


def location_uri(location: str) -> str:
    """delta-spark's ``detail().location``: the table's qualified path (``file:/...`` for local tables).

    Example:
        >>> location_uri("s3://b/t")
        's3://b/t'
    """
    return location if "://" in location or location.startswith("file:") else "file:" + os.path.abspath(location)


def _created(text: Any) -> dt.datetime | None:
    """``DESCRIBE EXTENDED``'s ``Created Time`` (``Sat Nov 28 16:34:29 UTC 2026``), or ``None``."""
    parts = text.split() if isinstance(text, str) else []
    if len(parts) != 6 or parts[4] not in ("UTC", "GMT"):  # another zone's name: not worth guessing
        return None
    try:
        return dt.datetime.strptime(" ".join(parts[:4] + parts[5:]), _CREATED_FORMAT).replace(tzinfo=dt.UTC)
    except ValueError:
        return None
