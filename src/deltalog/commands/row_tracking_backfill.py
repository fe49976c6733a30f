"""Enabling row tracking on a table that already has files: the backfill delta-spark runs first.

``delta.enableRowTracking=true`` promises readers that every live file has row ids (``baseRowId``,
``defaultRowCommitVersion``), so on a table with files it is set in three steps, each its own commit:

1. ``UPGRADE PROTOCOL`` adding the ``rowTracking`` writer feature (and ``domainMetadata``, which it needs)
   when the table does not support it yet. From then on every writer gives the files it adds row ids.
2. ``ROW TRACKING BACKFILL`` commits re-add the live files that have none (``dataChange=false``; no data
   file is rewritten, deletion vectors and tags kept), at most :data:`FILES_PER_COMMIT` per commit: each
   file gets fresh ids above the table's high-water mark, as an appended file would, and the commit's
   version as its ``defaultRowCommitVersion``. A file without a ``numRecords`` statistic gets its
   statistics from its footer. Each commit records its files as read, so a file a concurrent commit removed
   is not brought back: that batch is planned again on the new snapshot.
3. The ``SET TBLPROPERTIES`` commit itself (:func:`deltalog.commands.properties.set_properties`). The writer
   rules refuse it while a live file has no row ids.

A backfill interrupted between commits leaves a readable table that supports row tracking with some files
already given ids; running the property change again finishes it.

Example:
    >>> import pyarrow as pa, deltalog
    >>> from deltalog.storage import InMemoryLogStore
    >>> store = InMemoryLogStore("memory://backfill-doc")
    >>> _ = deltalog.write_table("memory://backfill-doc", pa.table({"x": [1, 2]}), store=store)
    >>> [r.operation for r in backfill_row_ids(deltalog.Table("memory://backfill-doc", store=store))]
    ['UPGRADE PROTOCOL', 'ROW TRACKING BACKFILL']
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from deltalog.commands.compute_stats import file_statistics
from deltalog.commands.restore import add_from_row
from deltalog.errors import (
    ConcurrentModificationException,
    MetadataChangedException,
    ProtocolChangedException,
    UnsupportedFeatureError,
)
from deltalog.protocol.features import writer_features
from deltalog.txn.operations import RowTrackingBackfill, UpgradeProtocol
from deltalog.txn.transaction import CommitResult, start_transaction
from deltalog.txn.writer_features import upgrade_protocol

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.handle import TableHandle

__all__ = ["ATTEMPTS", "FILES_PER_COMMIT", "backfill_row_ids", "files_without_row_ids"]

#: The most files one ``ROW TRACKING BACKFILL`` commit re-adds.
FILES_PER_COMMIT = 10_000
#: How many times in a row a batch is planned again after losing to a concurrent commit.
ATTEMPTS = 5


def files_without_row_ids(snapshot: Snapshot) -> int:
    """The number of live files of ``snapshot`` without a ``baseRowId``.

    Example:
        >>> files_without_row_ids(deltalog.Table("/data/t").snapshot())          # doctest: +SKIP
        12
    """
    return int(snapshot.add_files().column("baseRowId").null_count)


def backfill_row_ids(
    table: TableHandle, *, clock: Callable[[], int] | None = None, files_per_commit: int | None = None,
    on_commit: Callable[[int], None] | None = None,
) -> list[CommitResult]:
    """Give every live file of the table row ids (steps 1 and 2 of the module docstring), at most
    ``files_per_commit`` (default :data:`FILES_PER_COMMIT`) files per backfill commit, and return the
    commits made (none when every file has them already); ``on_commit`` is called with each version
    committed (an :class:`~deltalog.txn.scope.OperationScope` records them for errors and interrupts).

    Example:
        >>> [r.operation for r in backfill_row_ids(deltalog.Table("/data/t"))]      # doctest: +SKIP
        ['UPGRADE PROTOCOL', 'ROW TRACKING BACKFILL']
    """
    options: dict[str, Any] = {} if clock is None else {"clock": clock}
    results: list[CommitResult] = []
    snapshot = table.snapshot()
    if "rowTracking" not in writer_features(snapshot.protocol):
        try:
            protocol = upgrade_protocol(snapshot.protocol, snapshot.metadata, extra_features=("rowTracking",))
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(exc.message, feature=exc.feature, table=table.location) from None
        txn = start_transaction(table, UpgradeProtocol(new_protocol=protocol.to_dict()), snapshot=snapshot,
                                **options)
        txn.update_protocol(protocol)
        results.append(txn.commit())
        if on_commit is not None:
            on_commit(results[-1].version)
        snapshot = table.snapshot()
    per_commit = FILES_PER_COMMIT if files_per_commit is None else max(1, int(files_per_commit))
    batch = lost = 0
    while True:
        files = snapshot.add_files()
        missing = files.filter(pc.is_null(files.column("baseRowId"))).slice(0, per_commit).to_pylist()
        if not missing:
            return results
        try:
            results.append(_backfill(table, snapshot, missing, batch, options))
            if on_commit is not None:
                on_commit(results[-1].version)
            batch, lost = batch + 1, 0
        except (ProtocolChangedException, MetadataChangedException):
            raise
        except ConcurrentModificationException:
            if lost == ATTEMPTS:
                raise
            lost += 1  # e.g. an OPTIMIZE removed one of the files: plan the batch again
        snapshot = table.snapshot()


def _backfill(table: TableHandle, snapshot: Snapshot, rows: list[dict[str, Any]], batch: int,
              options: dict[str, Any]) -> CommitResult:
    txn = start_transaction(table, RowTrackingBackfill(batch_id=batch), snapshot=snapshot, **options)
    txn.read_files(str(r["path"]) for r in rows)  # a file removed meanwhile must not come back
    for row in rows:
        add = replace(add_from_row(row), dataChange=False)
        if not _has_num_records(add.stats):  # row ids are counted from each file's number of rows
            add = replace(add, stats=file_statistics(snapshot, row))
        txn.add_file(add)
    return txn.commit()


def _has_num_records(stats: str | None) -> bool:
    try:
        return isinstance(json.loads(stats or "")["numRecords"], int)
    except (ValueError, KeyError, TypeError):
        return False
