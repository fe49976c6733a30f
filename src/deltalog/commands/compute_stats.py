"""``ANALYZE TABLE ... COMPUTE DELTA STATISTICS``: read every live file's statistics again and record them.

Files written without statistics (by an engine that skipped them, by ``CONVERT TO DELTA ... NO STATISTICS``)
or with statistics on fewer columns than the table has now cannot be skipped by a query's filter. This
command takes each live file's statistics from its parquet footer -- the way deltalog's writer takes them
(:func:`deltalog.data.write_stats.stats_json`), for every data column -- and commits each file's ``add``
again with them (``dataChange=false``, operation ``COMPUTE STATS``): no data file is rewritten, and its
deletion vector, tags and row-tracking fields are kept. Float columns are read (that column only) to find
NaN, which a footer's bounds leave out: a column holding NaN gets no bounds.

``numRecords`` counts the rows stored in the file; the bounds of a file with a deletion vector are marked
wide (``tightBounds: false``), since deleted rows still count in them. The commit records every file it
re-adds as read, so a file removed concurrently (by an OPTIMIZE, a DELETE) makes it fail with a
``ConcurrentDeleteReadException`` rather than bring the file back.

Example:
    >>> import pyarrow as pa, deltalog
    >>> from deltalog.storage import InMemoryLogStore
    >>> store = InMemoryLogStore("memory://stats-doc")
    >>> _ = deltalog.write_table("memory://stats-doc", pa.table({"x": [3, 1, 2]}), store=store)
    >>> result = compute_statistics(deltalog.Table("memory://stats-doc", store=store))
    >>> result.operation, result.version
    ('COMPUTE STATS', 1)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.commands.restore import add_from_row
from deltalog.data.read import map_files, open_data_file, resolve_path
from deltalog.data.write_stats import FloatBounds, count_floats, float_leaves, stats_json
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.column_mapping import physical_schema
from deltalog.protocol.schema import StructType
from deltalog.txn.operations import ComputeStats
from deltalog.txn.transaction import CommitResult

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["compute_statistics", "file_statistics"]


def _float_bounds(parquet: pq.ParquetFile, leaves: list[tuple[str, ...]]) -> dict[tuple[str, ...], FloatBounds]:
    """The null counts and bounds of one file's float leaves (physical paths), read from the data: files
    deltalog writes carry no float footer bounds, and other writers' leave NaN out of them. Columns the file
    lacks are left out (the footer says what there is)."""
    found: dict[tuple[str, ...], FloatBounds] = {}
    stored = set(parquet.schema_arrow.names)
    columns = sorted({path[0] for path in leaves if path[0] in stored})
    if columns:
        count_floats(parquet.read(columns=columns), found)
    return found


def file_statistics(snapshot: Snapshot, row: dict[str, Any]) -> str:
    """The ``stats`` JSON of one live file (a row of ``snapshot.add_files()``), read from its footer.

    Example:
        >>> file_statistics(snap, snap.add_files().to_pylist()[0])                   # doctest: +SKIP
        '{"numRecords":3,"minValues":{"x":1},"maxValues":{"x":3},"nullCount":{"x":0},"tightBounds":true}'
    """
    parts = set(snapshot.partition_columns)
    data = StructType(tuple(f for f in snapshot.schema.fields if f.name not in parts))
    stored = physical_schema(data, snapshot.column_mapping_mode)
    path = resolve_path(snapshot, row["path"])
    try:
        parquet = pq.ParquetFile(open_data_file(snapshot, row["path"], path, row.get("size")))
        text = stats_json(parquet.metadata, stored, float_bounds=_float_bounds(parquet, float_leaves(stored)))
    except (OSError, pa.ArrowInvalid) as exc:
        raise InvalidArgumentError(
            f"the statistics of {row['path']} cannot be read: {exc}; nothing was committed",
            table=snapshot.table, version=snapshot.version, file=row["path"],
        ) from None
    if row.get("deletionVector"):  # deleted rows still count in the bounds: they are wide
        stats = json.loads(text)
        stats["tightBounds"] = False
        text = json.dumps(stats, separators=(",", ":"), ensure_ascii=False)
    return text


def compute_statistics(table: TableHandle, *, clock: Callable[[], int] | None = None) -> CommitResult | None:
    """Recompute the statistics of every live file and commit them in one ``COMPUTE STATS`` version (see the
    module docstring); ``None`` when the table has no files (nothing is committed).

    Example:
        >>> import deltalog
        >>> compute_statistics(deltalog.Table("/data/events")).operation             # doctest: +SKIP
        'COMPUTE STATS'
    """
    from deltalog.txn.transaction import start_transaction

    snapshot = table.snapshot()
    rows = snapshot.add_files().to_pylist()
    if not rows:
        return None
    texts = map_files(lambda row: file_statistics(snapshot, row), rows)
    options: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        options["clock"] = clock
    txn = start_transaction(table, ComputeStats(), **options)
    txn.read_files(str(r["path"]) for r in rows)  # a file removed meanwhile must not come back
    txn.keeps_row_ids = True
    for row, text in zip(rows, texts):
        txn.add_file(replace(add_from_row(row), dataChange=False, stats=text))
    return txn.commit()
