"""The writer rules a transaction's staged actions must pass before its commit is written: at most one
``metaData`` / ``protocol`` action and one action per (file, deletion vector) and per application id,
partition values matching the partition columns, append-only and change-data-feed rules, the protocol
upgraded for what the metadata needs (and never downgraded), row tracking's rules and Iceberg
compatibility's (:mod:`deltalog.txn.iceberg_compat`). Also the check
that skips a commit whose application transaction is already recorded.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> from deltalog.protocol.actions import Format, Metadata
    >>> from deltalog.txn.operations import CreateTable
    >>> from deltalog.txn.transaction import Transaction
    >>> txn = Transaction(InMemoryLogStore("memory://v"), None, CreateTable(), table="memory://v")
    >>> txn.update_metadata(Metadata(id="1", format=Format(), schemaString='{"type":"struct","fields":[]}'))
    >>> protocol, metadata = validate(txn)
    >>> (protocol.minReaderVersion, protocol.minWriterVersion), metadata.id
    ((1, 2), '1')
"""

from __future__ import annotations

from typing import Any

from deltalog.errors import InvalidArgumentError, TableNotFoundError, UnsupportedFeatureError
from deltalog.protocol.actions import AddCDCFile, DomainMetadata, Metadata, Protocol, Txn
from deltalog.protocol.features import writer_features
from deltalog.txn.commit import dv_key
from deltalog.txn.iceberg_compat import check_commit as check_iceberg_compat
from deltalog.txn.row_tracking import check_no_moved_rows
from deltalog.txn.staged import StagedTransaction
from deltalog.txn.writer_features import (
    check_append_only,
    check_change_data_feed,
    check_no_downgrade,
    check_writable,
    is_true,
    upgrade_protocol,
)

__all__ = ["already_committed", "validate"]


def already_committed(txn: StagedTransaction) -> bool:
    """Whether an application transaction (``txn`` action) staged by ``txn`` is already recorded at the
    same or a later version in the snapshot it read: the commit is then skipped (idempotent writes).

    Example:
        >>> already_committed(txn)                                       # doctest: +SKIP
        False
    """
    if txn.snapshot is None:
        return False
    for a in txn._others:
        if isinstance(a, Txn):
            have = txn.snapshot.txn_version(a.appId)
            if have is not None and have >= a.version:
                return True
    return False


def validate(txn: StagedTransaction) -> tuple[Protocol | None, Metadata]:
    """Check ``txn``'s staged actions against the writer rules; returns the protocol action to write
    (``None`` when the protocol stays) and the metadata the commit leaves.

    Example:
        >>> protocol, metadata = validate(txn)                           # doctest: +SKIP
        >>> metadata.partitionColumns                                   # doctest: +SKIP
        ('day',)
    """
    _check_action_counts(txn)
    metadata = txn.metadata
    if metadata is None:
        raise TableNotFoundError(
            "the table does not exist and this transaction stages no metaData to create it",
            table=txn.table,
        )
    _check_partition_values(txn, metadata)
    check_append_only(metadata, ((r.path, r.dataChange) for r in txn._removes), table=txn.table)
    # Re-adding a removed path (a deletion-vector update) rewrites no rows: change data feed
    # readers derive its deleted rows from the two deletion vectors, as delta-spark's DELETE relies on.
    dv_updates = {r.path for r in txn._removes if r.dataChange}
    check_change_data_feed(
        metadata,
        rewrites_rows=txn.operation.rewrites_rows,
        data_adds=sum(1 for a in txn._adds if a.dataChange and a.path not in dv_updates),
        data_removes=sum(1 for r in txn._removes if r.dataChange),
        cdc_files=sum(1 for o in txn._others if isinstance(o, AddCDCFile)),
        table=txn.table,
    )
    protocol = _resolve_protocol(txn, metadata)
    final = protocol or txn.protocol
    if final is not None:  # Iceberg compatibility's rules (a table without a compat version passes at once)
        check_iceberg_compat(final, metadata, txn.snapshot, txn._adds, removed=(r.path for r in txn._removes),
                             table=txn.table)
    if "rowTracking" in writer_features(protocol or txn.protocol or Protocol(1, 1)):
        if not txn.keeps_row_ids:
            check_no_moved_rows(txn.operation, txn._adds, txn._removes, table=txn.table)
        was = txn.snapshot is not None and is_true(txn.snapshot.properties, "delta.enableRowTracking")
        if not was and is_true(metadata.configuration, "delta.enableRowTracking") and \
                txn.snapshot is not None and txn.snapshot.add_files().column("baseRowId").null_count:
            raise UnsupportedFeatureError(
                "enabling row tracking on a table whose files have no row ids needs a backfill of their ids "
                "first (Table.set_properties / ALTER TABLE ... SET TBLPROPERTIES run it); nothing was committed",
                feature="rowTracking", table=txn.table)
    return protocol, metadata


def _check_action_counts(txn: StagedTransaction) -> None:
    where: dict[str, Any] = {"table": txn.table}
    if len(txn._metadata) > 1:
        raise InvalidArgumentError("a commit may hold at most one metaData action", **where)
    if len(txn._protocol) > 1:
        raise InvalidArgumentError("a commit may hold at most one protocol action", **where)
    for kind, actions in (("add", txn._adds), ("remove", txn._removes)):
        seen: set[tuple[str, str | None]] = set()
        for a in actions:
            key = dv_key(a)
            if key in seen:
                raise InvalidArgumentError(
                    f"duplicate {kind} action for file {a.path}"
                    + (f" with deletion vector {key[1]}" if key[1] else "")
                    + "; each (path, deletion vector) may appear once per commit",
                    **where,
                )
            seen.add(key)
    apps = [a.appId for a in txn._others if isinstance(a, Txn)]
    if len(apps) != len(set(apps)):
        raise InvalidArgumentError("a commit may hold at most one txn action per application id", **where)


def _resolve_protocol(txn: StagedTransaction, metadata: Metadata) -> Protocol | None:
    """The protocol action to write (staged and/or upgraded for ``metadata``), or None."""
    if txn._protocol and txn.snapshot is not None:
        dropping = getattr(txn.operation, "feature_name", None) if txn.operation.name == "DROP FEATURE" else None
        check_no_downgrade(txn.snapshot.protocol, txn._protocol[-1], table=txn.table, dropping=dropping)
    staged = [o for o in txn._others if isinstance(o, DomainMetadata)]
    domains = ["domainMetadata"] if staged else []
    if any(o.domain == "delta.clustering" and not o.removed for o in staged):  # liquid clustering
        domains.append("clustering")
    base = txn.protocol
    needed = upgrade_protocol(base, metadata, extra_features=domains, table=txn.table)
    new_protocol: Protocol | None = needed if (base is None or needed != base) else None
    if txn._protocol and new_protocol is None:
        new_protocol = txn._protocol[-1]
    final = new_protocol or base
    assert final is not None
    check_writable(final, metadata, adds_data=bool(txn._adds) and txn.operation.writes_data_files,
                   table=txn.table)
    return new_protocol


def _check_partition_values(txn: StagedTransaction, metadata: Metadata) -> None:
    if metadata.configuration.get("delta.columnMapping.mode", "none") != "none":
        return
    expected = set(metadata.partitionColumns)
    for a in txn._adds:
        if set(a.partitionValues) != expected:
            raise InvalidArgumentError(
                f"add action for {a.path} has partition values for {sorted(a.partitionValues)}, but "
                f"the table is partitioned by {sorted(expected)}",
                table=txn.table,
            )
