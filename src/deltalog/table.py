"""``deltalog.Table``: the entry point for a Delta table at a path.

Example:
    >>> import deltalog
    >>> t = deltalog.Table("/data/events")                            # doctest: +SKIP
    >>> t.snapshot().version                                         # doctest: +SKIP
    12
    >>> t.snapshot(version=3).to_arrow().num_rows                    # doctest: +SKIP
    1000
    >>> [h["operation"] for h in t.history(limit=2)]                 # doctest: +SKIP
    ['MERGE', 'WRITE']
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.errors import InvalidArgumentError, TableNotFoundError
from deltalog.log.paths import LogFile
from deltalog.log.segment import build_segment, list_log
from deltalog.log.timestamps import TimestampLike, commit_timestamps, to_millis, version_at_timestamp
from deltalog.snapshot import Snapshot
from deltalog.snapshot_load import advance_snapshot, load_snapshot
from deltalog.storage import LogStore, store_for

if TYPE_CHECKING:
    import pyarrow as pa

    from deltalog.commands.clone import CloneResult
    from deltalog.commands.compact import CompactResult
    from deltalog.commands.delete import DeleteResult
    from deltalog.commands.drop_feature import DropFeatureResult
    from deltalog.commands.merge import TableMerger
    from deltalog.commands.restore import RestoreResult
    from deltalog.commands.update import UpdateResult
    from deltalog.commands.vacuum import VacuumResult
    from deltalog.data.filters import FilterLike
    from deltalog.health.model import TableHealth
    from deltalog.log.checkpoint_writer import CheckpointResult
    from deltalog.maintenance import MaintenancePolicy, MaintenanceResult, MaintenanceStep
    from deltalog.protocol.actions import Add
    from deltalog.protocol.schema import StructField
    from deltalog.txn.operations import Operation
    from deltalog.txn.transaction import CommitResult, Transaction


class Table:
    """A Delta table at ``location``: a local path, a ``file:`` URI, ``memory://name``, or an object-store
    URI (``s3://``, ``s3a://``, ``az://``, ``abfss://``, ``gs://``, ...) configured by ``storage_options``
    (the keys delta-rs and obstore use, e.g. ``AWS_ENDPOINT_URL``, ``AWS_REGION``,
    ``AZURE_STORAGE_ACCOUNT_NAME``) and the environment.

    Opening is cheap: nothing is read until a snapshot or the history is asked for.

    Example:
        >>> Table("s3://bucket/events", storage_options={"AWS_REGION": "eu-west-1"})  # doctest: +SKIP
        Table('s3://bucket/events')
    """

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        store: LogStore | None = None,
        storage_options: Mapping[str, Any] | None = None,
        verify_checksums: bool = True,
    ) -> None:
        self.location = os.fspath(location)
        self.storage_options = dict(storage_options or {})
        self.store = store if store is not None else store_for(self.location, options=self.storage_options)
        #: Check the loaded state against the version's ``.crc`` file when there is one.
        self.verify_checksums = verify_checksums
        self._latest: Snapshot | None = None  # newest snapshot seen; later loads only read what's new

    def __repr__(self) -> str:
        return f"Table({self.location!r})"

    def _check_exists(self) -> None:
        full = self.store.full_path("")
        if "://" not in full and not os.path.isdir(full):
            raise TableNotFoundError("no Delta table: the path does not exist", table=self.location)

    def snapshot(
        self, version: int | None = None, *, timestamp: TimestampLike | None = None
    ) -> Snapshot:
        """The table at ``version`` or as of ``timestamp`` (latest by default).

        A version that was cleaned up, lies in the future, or a timestamp before the first or after
        the last commit raises :class:`deltalog.errors.VersionNotFoundError`.

        Example:
            >>> Table("/data/events").snapshot(timestamp="2024-05-01T00:00:00Z")  # doctest: +SKIP
            Snapshot(table='/data/events', version=7, files=21)
        """
        if version is not None and timestamp is not None:
            raise InvalidArgumentError("pass either version= or timestamp=, not both", table=self.location)
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise InvalidArgumentError(f"version must be an int, got {version!r}", table=self.location)
        self._check_exists()
        if timestamp is not None:
            version = self.version_at(timestamp)
        if version is not None:
            return self._load(version)
        cached = self._latest
        listing = None if cached is None else list_log(self.store, cached.version)  # one listing for both
        if cached is not None and listing is not None and _still_there(cached, listing):
            latest = self._advance(cached, [f for f in listing if f.version > cached.version], None)
        else:
            latest = self._load(None)
        self._latest = latest
        return latest

    def _after_commit(self, version: int, operation: Operation, adds: list[Add]) -> list[str]:
        """After a data-changing commit of this table's: the maintenance its ``deltalog.maintenance.afterCommit``
        property asks for (:mod:`deltalog.maintenance.after_commit`); never raises."""
        snap = self._latest
        if snap is None or snap.version != version:
            return []
        if snap.metadata.configuration.get("deltalog.maintenance.afterCommit", "").strip().lower() != "true":
            return []
        from deltalog.maintenance.after_commit import maintain_after_commit

        return maintain_after_commit(self, [dict(a.partitionValues or {}) for a in adds])  # only when it is on

    def _remember(self, snapshot: Snapshot) -> None:
        """Cache ``snapshot`` as the latest known state (a writer's own commit), if it is newer."""
        if snapshot.table == self.location and (self._latest is None or snapshot.version > self._latest.version):
            self._latest = snapshot

    def _load(self, version: int | None) -> Snapshot:
        return load_snapshot(self.store, self.location, version, verify_checksums=self.verify_checksums)

    def update(self, snapshot: Snapshot, *, version: int | None = None) -> Snapshot:
        """The latest snapshot (or the one at ``version``), reading only the commits made after
        ``snapshot`` (cheap for a reader that follows a table, and for a writer after its own commit).

        Example:
            >>> t = Table("/data/events")                              # doctest: +SKIP
            >>> s = t.snapshot(); t.update(s).version >= s.version      # doctest: +SKIP
            True
        """
        return self._advance(snapshot, list_log(self.store, snapshot.version + 1), version)

    def _advance(self, snapshot: Snapshot, listing: list[LogFile], version: int | None) -> Snapshot:
        """``snapshot`` moved forward by the commits in ``listing`` (the log files after it), up to
        ``version`` (the newest by default)."""
        updated = advance_snapshot(snapshot, listing, version, verify_checksums=self.verify_checksums)
        return updated if updated is not None else self._load(version)  # a gap: rebuild from the log

    def latest_version(self) -> int:
        """The newest committed version.

        Example:
            >>> Table("/data/events").latest_version()               # doctest: +SKIP
            12
        """
        self._check_exists()
        return build_segment(self.store, table=self.location).version

    def version_at(self, timestamp: TimestampLike) -> int:
        """The version that was current at ``timestamp`` (datetime, ISO string or epoch milliseconds).

        Example:
            >>> Table("/data/events").version_at("2024-05-01 00:00:00")  # doctest: +SKIP
            7
        """
        target = to_millis(timestamp)
        self._check_exists()
        commits = [f for f in list_log(self.store, 0) if f.kind == "commit"]
        latest = self._load(None)
        ict_from = _ict_enablement(latest)
        stamps = commit_timestamps(self.store, commits, table=self.location, ict_enabled_from=ict_from)
        return version_at_timestamp(commits, stamps, target, table=self.location)

    def changes(
        self,
        *,
        starting_version: int | None = None,
        ending_version: int | None = None,
        starting_timestamp: TimestampLike | None = None,
        ending_timestamp: TimestampLike | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
    ) -> pa.Table:
        """The change data feed of versions ``starting_version..ending_version`` (or timestamps) as one
        ``pyarrow.Table`` with ``_change_type``, ``_commit_version``, ``_commit_timestamp`` (see
        :func:`deltalog.feed.rows.table_changes`); ``filter`` keeps the rows a SQL condition matches.

        Example:
            >>> Table("/data/events").changes(starting_version=3).num_rows  # doctest: +SKIP
            12
        """
        from deltalog.feed.rows import table_changes

        return table_changes(
            self, starting_version=starting_version, ending_version=ending_version,
            starting_timestamp=starting_timestamp, ending_timestamp=ending_timestamp, columns=columns, filter=filter,
        )

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Commit provenance, newest first: version, timestamp, operation, parameters, metrics...

        Example:
            >>> Table("/data/events").history(limit=1)[0]["operation"]  # doctest: +SKIP
            'WRITE'
        """
        from deltalog.commands.history import table_history

        self._check_exists()
        return table_history(self.store, table=self.location, limit=limit)


    def health(
        self,
        version: int | None = None,
        *,
        small_file_threshold: int | None = None,
        history_depth: int | None = None,
        clock: Callable[[], int] | None = None,
    ) -> TableHealth:
        """The table's health at ``version`` (latest by default) from its log alone, no data file read:
        files, bytes and rows, file-size histograms, small files, partition skew, deletion vectors, files
        without statistics, clustering / Z-order coverage, tombstones and what a VACUUM would reclaim, the
        log since its checkpoint, the last OPTIMIZE / VACUUM (see :mod:`deltalog.health` and
        ``docs/health.md``). Files below ``small_file_threshold`` bytes are small (default: a quarter of
        ``delta.targetFileSize``, else 32 MiB); ``history_depth`` commits at most are scanned for the last
        OPTIMIZE / VACUUM (default 1000); ``clock`` gives "now" for the retention.

        Example:
            >>> import pyarrow as pa, deltalog
            >>> _ = deltalog.write_table("memory://health-table-doc", pa.table({"id": [1, 2, 3]}))
            >>> h = Table("memory://health-table-doc").health()
            >>> h.num_files, h.num_rows, h.deleted_row_share, [b.metric for b in h.breaches(max_small_file_share=0.5)]
            (1, 3, 0.0, ['small_file_share'])
        """
        from deltalog.health.compute import DEFAULT_HISTORY_DEPTH, table_health

        snap = self.snapshot(version)
        return table_health(
            snap, small_file_threshold=small_file_threshold, clock=clock,
            history_depth=DEFAULT_HISTORY_DEPTH if history_depth is None else history_depth,
        )

    def maintain(
        self,
        policy: MaintenancePolicy | None = None,
        *,
        dry_run: bool = False,
        actions: Sequence[str] | None = None,
        clock: Callable[[], int] | None = None,
        progress: Callable[[MaintenanceStep, int], None] | None = None,
    ) -> MaintenanceResult:
        """Plan from the table's health what it needs -- compaction of partitions full of small files, purge of
        heavy deletion vectors, checkpoint, expired-log cleanup, VACUUM -- and do it, each step its own commit
        (see :mod:`deltalog.maintenance`); ``policy`` defaults to the table's ``deltalog.maintenance.*``
        properties, ``dry_run`` only plans, ``actions`` limits the steps.

        Example:
            >>> r = Table("/data/events").maintain(dry_run=True)                         # doctest: +SKIP
            >>> [(s.action, s.num_files, s.num_bytes) for s in r.plan.steps]             # doctest: +SKIP
            [('compact', 40, 5242880), ('vacuum', 3, 1048576)]
        """
        from deltalog.maintenance import ACTIONS, maintain

        self._check_exists()
        return maintain(self, policy, dry_run=dry_run, actions=ACTIONS if actions is None else tuple(actions),
                        clock=clock, progress=progress)

    def transaction(self, operation: Operation, **options: Any) -> Transaction:
        """Begin an optimistic transaction on this table (see :func:`deltalog.txn.start_transaction`).

        Example:
            >>> from deltalog.txn.operations import Write
            >>> txn = Table("memory://txn-doc").transaction(Write(mode="Append"))
            >>> txn.read_version
            -1
        """
        from deltalog.txn.transaction import start_transaction

        return start_transaction(self, operation, **options)

    def checkpoint(self, *, parts: int | None = None, clock: Callable[[], int] | None = None) -> CheckpointResult:
        """Write a classic checkpoint of the latest version (and ``_last_checkpoint``).

        Example:
            >>> Table("/data/events").checkpoint().version              # doctest: +SKIP
            12
        """
        from deltalog.log.checkpoint_writer import write_checkpoint
        from deltalog.txn.scope import OperationScope

        snap = self.snapshot()
        with OperationScope("CHECKPOINT", table_version=snap.version, table=self.location):
            result = write_checkpoint(snap, parts=parts, clock=clock)
        return result

    def cleanup_metadata(
        self,
        *,
        retention: str | int | None = None,
        clock: Callable[[], int] | None = None,
        dry_run: bool = False,
    ) -> list[str]:
        """Delete log files older than ``delta.logRetentionDuration`` that no retained version needs.

        Example:
            >>> Table("/data/events").cleanup_metadata(dry_run=True)    # doctest: +SKIP
            ['_delta_log/00000000000000000000.json']
        """
        from deltalog.log.cleanup import cleanup_expired_logs

        return cleanup_expired_logs(self.snapshot(), retention=retention, clock=clock, dry_run=dry_run)

    def compact(
        self,
        *,
        partition_filter: FilterLike | None = None,
        max_file_size: int | None = None,
        min_file_size: int | None = None,
        zorder_by: Sequence[str] = (),
        clock: Callable[[], int] | None = None,
    ) -> CompactResult:
        """``OPTIMIZE`` with Arrow (delta-rs's ``optimize.compact()`` / ``z_order()``; see
        :mod:`deltalog.commands.compact`): small files and files with deletion vectors packed into files of up
        to ``max_file_size`` bytes -- or, with ``zorder_by``, each partition rewritten in Z order of those
        columns -- in one ``dataChange=false`` commit.

        Example:
            >>> Table("/data/events").compact(partition_filter="day = '2024-05-01'").num_files_removed
            ... # doctest: +SKIP
            12
            >>> Table("/data/events").compact(zorder_by=["user_id", "ts"]).version  # doctest: +SKIP
            13
        """
        from deltalog.commands.compact import compact

        return compact(self, partition_filter=partition_filter, max_file_size=max_file_size,
                       min_file_size=min_file_size, zorder_by=zorder_by, clock=clock)

    def delete(
        self,
        predicate: FilterLike | None = None,
        *,
        use_deletion_vectors: bool | None = None,
        clock: Callable[[], int] | None = None,
    ) -> DeleteResult:
        """Delete the rows matching ``predicate`` (see :mod:`deltalog.commands.delete`): deletion vectors
        when the table enables them, copy-on-write otherwise.

        Example:
            >>> Table("/data/events").delete("day < '2024-01-01'").num_deleted_rows  # doctest: +SKIP
            5000
        """
        from deltalog.commands.delete import delete

        return delete(self, predicate, use_deletion_vectors=use_deletion_vectors, clock=clock)

    def merge(
        self,
        source: Any,
        predicate: str,
        *,
        source_alias: str = "source",
        target_alias: str = "target",
        use_deletion_vectors: bool | None = None,
        clock: Callable[[], int] | None = None,
        merge_schema: bool = False,
    ) -> TableMerger:
        """``MERGE`` the rows of ``source`` (a pyarrow Table, record batch reader or pandas frame) into the
        table on the join condition ``predicate``, with delta-rs's builder (see
        :mod:`deltalog.commands.merge`): add ``when_...`` clauses, then ``execute()``. ``merge_schema``
        adds the source's new columns (and struct fields) to the table in the same commit.

        Example:
            >>> (Table("/data/t").merge(updates, "target.id = source.id")             # doctest: +SKIP
            ...  .when_matched_update({"v": "source.v"}).when_not_matched_insert_all().execute()).version
            7
        """
        from deltalog.commands.merge import TableMerger

        return TableMerger(self, source, predicate, source_alias=source_alias, target_alias=target_alias,
                           use_deletion_vectors=use_deletion_vectors, clock=clock, merge_schema=merge_schema)

    def update_rows(
        self,
        predicate: FilterLike | None,
        set: Mapping[str, Any],
        *,
        use_deletion_vectors: bool | None = None,
        clock: Callable[[], int] | None = None,
    ) -> UpdateResult:
        """``UPDATE``: set columns of the rows matching ``predicate`` (see :mod:`deltalog.commands.update`;
        :meth:`update` refreshes a snapshot): ``predicate`` is a SQL condition, ``(column, op, value)``
        conditions or a pyarrow expression; ``set`` maps column names to literal values, or to SQL
        (:func:`deltalog.sql_expr`) or ``pyarrow.compute`` expressions of the old row.

        Example:
            >>> import deltalog
            >>> Table("/data/t").update_rows("id = 7", {"v": deltalog.sql_expr("v * 2")}).num_updated_rows
            ... # doctest: +SKIP
            1
        """
        from deltalog.commands.update import update

        return update(self, predicate, set, use_deletion_vectors=use_deletion_vectors, clock=clock)

    def vacuum(
        self,
        *,
        retention_hours: float | None = None,
        dry_run: bool = True,
        enforce_retention_duration: bool = True,
        lite: bool = False,
        inventory: Iterable[tuple[str, int, bool, int]] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> VacuumResult:
        """Delete data files no retained version needs (see :mod:`deltalog.commands.vacuum`); lists only by default.
        ``lite=True`` finds them in the log instead of listing the table (``VACUUM LITE``); ``inventory``
        (rows ``(path, length, is_dir, modification_time)``) replaces the listing (``USING INVENTORY``).

        Example:
            >>> Table("/data/events").vacuum(retention_hours=168, dry_run=False).num_deleted_files  # doctest: +SKIP
            3
        """
        from deltalog.commands.vacuum import vacuum

        return vacuum(
            self,
            retention_hours=retention_hours,
            dry_run=dry_run,
            enforce_retention_duration=enforce_retention_duration,
            lite=lite,
            inventory=inventory,
            clock=clock,
        )

    def restore(
        self,
        *,
        version: int | None = None,
        timestamp: TimestampLike | None = None,
        clock: Callable[[], int] | None = None,
    ) -> RestoreResult:
        """Bring the table back to an earlier version's files and metadata in one ``RESTORE`` commit.

        Example:
            >>> Table("/data/events").restore(version=3).restored_version  # doctest: +SKIP
            3
        """
        from deltalog.commands.restore import restore

        return restore(self, version=version, timestamp=timestamp, clock=clock)

    def clone(
        self,
        target: str | os.PathLike[str] | Table,
        *,
        shallow: bool = False,
        version: int | None = None,
        timestamp: TimestampLike | None = None,
        replace: bool = False,
        properties: Mapping[str, str] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> CloneResult:
        """Clone this table (latest, or at ``version`` / ``timestamp``) into ``target``: shallow (a log
        pointing at these files) or deep (files copied); see :mod:`deltalog.commands.clone`.

        Example:
            >>> Table("/data/events").clone("/data/events_dev", shallow=True).source_version  # doctest: +SKIP
            12
        """
        from deltalog.commands.clone import clone_table

        target = target if isinstance(target, Table) else Table(os.fspath(target))
        return clone_table(self, target, shallow=shallow, version=version, timestamp=timestamp, replace=replace,
                           properties=properties, clock=clock)

    def set_properties(self, properties: Mapping[str, str], *, clock: Callable[[], int] | None = None) -> CommitResult:
        """Set table properties (``delta.*`` keys validated) in one ``SET TBLPROPERTIES`` commit.

        Example:
            >>> Table("/data/events").set_properties({"delta.appendOnly": "true"}).version  # doctest: +SKIP
            13
        """
        from deltalog.commands.properties import set_properties

        return set_properties(self, properties, clock=clock)

    def unset_properties(
        self, keys: Iterable[str], *, if_exists: bool = False, clock: Callable[[], int] | None = None
    ) -> CommitResult:
        """Remove table properties in one ``UNSET TBLPROPERTIES`` commit.

        Example:
            >>> Table("/data/events").unset_properties(["owner"], if_exists=True).version  # doctest: +SKIP
            14
        """
        from deltalog.commands.properties import unset_properties

        return unset_properties(self, keys, if_exists=if_exists, clock=clock)

    def add_constraint(
        self, name: str, expression: str, *, clock: Callable[[], int] | None = None
    ) -> CommitResult:
        """Add a CHECK constraint in one ``ADD CONSTRAINT`` commit after checking every existing row
        (see :mod:`deltalog.commands.constraints`).

        Example:
            >>> Table("/data/events").add_constraint("valid_id", "id > 0").operation  # doctest: +SKIP
            'ADD CONSTRAINT'
        """
        from deltalog.commands.constraints import add_constraint

        return add_constraint(self, name, expression, clock=clock)

    def compute_statistics(self, *, clock: Callable[[], int] | None = None) -> CommitResult | None:
        """Read every live file's statistics again from its footer and record them in one ``COMPUTE STATS``
        commit (``ANALYZE TABLE ... COMPUTE DELTA STATISTICS``; see :mod:`deltalog.commands.compute_stats`);
        ``None`` when the table has no files.

        Example:
            >>> Table("/data/converted").compute_statistics().operation              # doctest: +SKIP
            'COMPUTE STATS'
        """
        from deltalog.commands.compute_stats import compute_statistics

        return compute_statistics(self, clock=clock)

    def drop_constraint(
        self, name: str, *, if_exists: bool = False, clock: Callable[[], int] | None = None
    ) -> CommitResult:
        """Remove a CHECK constraint in one ``DROP CONSTRAINT`` commit.

        Example:
            >>> Table("/data/events").drop_constraint("valid_id", if_exists=True).operation  # doctest: +SKIP
            'DROP CONSTRAINT'
        """
        from deltalog.commands.constraints import drop_constraint

        return drop_constraint(self, name, if_exists=if_exists, clock=clock)

    def add_columns(
        self, fields: Sequence[Any], *, after: Mapping[str, str | None] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> CommitResult:
        """Add nullable columns (``StructField`` s) in one ``ADD COLUMNS`` commit: appended, or placed by
        ``after`` (``{"note": "id"}``: right after ``id``; ``{"note": None}``: first). A ``(parent, field)``
        pair adds a field to the struct column ``parent`` (``"address"``, ``"s.inner"``; ``element`` / ``key``
        / ``value`` step into arrays and maps), placed by ``after`` keyed by its dotted path.

        Example:
            >>> from deltalog.protocol.schema import PrimitiveType, StructField
            >>> Table("/data/events").add_columns([StructField("note", PrimitiveType("string"), True, {})])
            ... # doctest: +SKIP
            >>> Table("/data/events").add_columns([("address", StructField("zip", PrimitiveType("string")))])
            ... # doctest: +SKIP
        """
        from deltalog.commands.columns import add_columns

        return add_columns(self, fields, after=after, clock=clock)

    def rename_column(self, column: str, new_name: str, *, clock: Callable[[], int] | None = None) -> CommitResult:
        """Rename a column (``a`` or ``a.b``) in one ``RENAME COLUMN`` commit; needs column mapping (see
        :mod:`deltalog.commands.rename_drop`).

        Example:
            >>> Table("/data/events").rename_column("ts", "event_time").operation         # doctest: +SKIP
            'RENAME COLUMN'
        """
        from deltalog.commands.rename_drop import rename_column

        return rename_column(self, column, new_name, clock=clock)

    def set_column_type(self, column: str, data_type: Any, *, clock: Callable[[], int] | None = None
                        ) -> CommitResult:
        """Widen a column's type (``delta.enableTypeWidening=true``; see
        :func:`deltalog.commands.columns.set_column_type`) in one ``CHANGE COLUMN`` commit.

        Example:
            >>> Table("/data/events").set_column_type("count", "bigint").operation         # doctest: +SKIP
            'CHANGE COLUMN'
        """
        from deltalog.commands.columns import set_column_type

        return set_column_type(self, column, data_type, clock=clock)

    def cluster_by(self, columns: Sequence[str] | None, *, clock: Callable[[], int] | None = None) -> CommitResult:
        """Set the liquid clustering columns (``None`` / ``[]``: ``CLUSTER BY NONE``) in one ``CLUSTER BY``
        commit; OPTIMIZE then clusters the files by them (see :mod:`deltalog.commands.clustering`).

        Example:
            >>> Table("/data/events").cluster_by(["day", "user_id"]).operation             # doctest: +SKIP
            'CLUSTER BY'
        """
        from deltalog.commands.clustering import cluster_by

        return cluster_by(self, columns, clock=clock)

    def drop_feature(
        self, feature: str, *, truncate_history: bool = False, dry_run: bool = False,
        clock: Callable[[], int] | None = None,
    ) -> DropFeatureResult:
        """Drop a table feature from the protocol (``ALTER TABLE ... DROP FEATURE``): its traces are
        removed first (deletion vectors purged, ...), then one ``DROP FEATURE`` commit; see
        :mod:`deltalog.commands.drop_feature` for the rules and ``truncate_history``.

        Example:
            >>> Table("/data/events").drop_feature("deletionVectors").protocol.minReaderVersion  # doctest: +SKIP
            1
        """
        from deltalog.commands.drop_feature import drop_feature

        return drop_feature(self, feature, truncate_history=truncate_history, dry_run=dry_run, clock=clock)

    def drop_column(
        self, column: str, *, if_exists: bool = False, clock: Callable[[], int] | None = None
    ) -> CommitResult | None:
        """Drop one column (``a`` or ``a.b``): :meth:`drop_columns` with one path.

        Example:
            >>> Table("/data/events").drop_column("payload.debug").operation              # doctest: +SKIP
            'DROP COLUMNS'
        """
        return self.drop_columns([column], if_exists=if_exists, clock=clock)

    def drop_columns(
        self, columns: Sequence[str], *, if_exists: bool = False, clock: Callable[[], int] | None = None
    ) -> CommitResult | None:
        """Drop columns (paths) in one ``DROP COLUMNS`` commit; needs column mapping; the data files are not
        rewritten (see :mod:`deltalog.commands.rename_drop`).

        Example:
            >>> Table("/data/events").drop_columns(["debug"]).operation                   # doctest: +SKIP
            'DROP COLUMNS'
        """
        from deltalog.commands.rename_drop import drop_columns

        return drop_columns(self, columns, if_exists=if_exists, clock=clock)

    def replace_columns(
        self, fields: Sequence[StructField], *, clock: Callable[[], int] | None = None
    ) -> CommitResult:
        """Give the table a new list of top-level columns in one ``REPLACE COLUMNS`` commit: kept columns keep
        their type and metadata (comments follow the list), new ones are nullable, left-out ones are dropped
        under column mapping (see :mod:`deltalog.commands.replace_columns`).

        Example:
            >>> Table("/data/events").replace_columns(Table("/data/events").snapshot().schema.fields[::-1])
            ... # doctest: +SKIP
        """
        from deltalog.commands.replace_columns import replace_columns

        return replace_columns(self, fields, clock=clock)

    def change_column(
        self, name: str, *, comment: str | None = None, nullable: bool | None = None, default: str | None = None,
        drop_default: bool = False, clock: Callable[[], int] | None = None,
    ) -> CommitResult:
        """Change a column's comment, nullability or default in one ``CHANGE COLUMN`` commit
        (``nullable=False`` checks that no row holds a null; ``default=`` / ``drop_default=True`` set or
        remove the column's default, see :mod:`deltalog.txn.defaults`).

        Example:
            >>> Table("/data/events").change_column("status", default="'new'").operation    # doctest: +SKIP
            'CHANGE COLUMN'
        """
        from deltalog.commands.columns import change_column

        return change_column(self, name, comment=comment, nullable=nullable, default=default,
                             drop_default=drop_default, clock=clock)

    def move_column(self, name: str | Sequence[str], *, after: str | None, comment: str | None = None,
                    clock: Callable[[], int] | None = None) -> CommitResult:
        """Move column ``name`` (``"s.inner"`` for a struct's field) right after its sibling ``after``, or
        first with ``after=None``, in one ``CHANGE COLUMN`` commit that rewrites no data: SQL ``ALTER TABLE
        ... ALTER COLUMN name FIRST | AFTER x`` (:mod:`deltalog.commands.move_column`).

        Example:
            >>> Table("/data/events").move_column("note", after="id").operation             # doctest: +SKIP
            'CHANGE COLUMN'
        """
        from deltalog.commands.move_column import move_column

        return move_column(self, name, after=after, comment=comment, clock=clock)

    def sync_identity(self, name: str, *, clock: Callable[[], int] | None = None) -> CommitResult:
        """Move identity column ``name``'s high-water mark past the values its rows hold (explicit values
        written to a ``GENERATED BY DEFAULT`` column leave it behind), in one ``CHANGE COLUMN`` commit:
        SQL ``ALTER TABLE ... ALTER COLUMN name SYNC IDENTITY`` (:mod:`deltalog.commands.identity_sync`).

        Example:
            >>> Table("/data/orders").sync_identity("order_id").operation                    # doctest: +SKIP
            'CHANGE COLUMN'
        """
        from deltalog.commands.identity_sync import sync_identity

        return sync_identity(self, name, clock=clock)


def read_changes(
    table: Table | str | os.PathLike[str],
    *,
    starting_version: int | str | None = None,
    ending_version: int | str | None = None,
    starting_timestamp: TimestampLike | None = None,
    ending_timestamp: TimestampLike | None = None,
    columns: Sequence[str] | None = None,
    filter: Any = None,
) -> pa.Table:
    """The change data feed of ``table`` (a :class:`Table` or a path) for the versions
    ``starting_version..ending_version`` (inclusive; or by timestamps; no end means the latest version) as
    one ``pyarrow.Table`` with ``_change_type``, ``_commit_version`` and ``_commit_timestamp``; ``filter``
    keeps the rows a SQL condition matches (delta-rs's ``predicate``); see
    :func:`deltalog.feed.rows.table_changes` for the rules and errors.

    Example:
        >>> read_changes("/data/events", starting_version=0).group_by("_change_type").aggregate(
        ...     [("_change_type", "count")]).to_pylist()                            # doctest: +SKIP
        [{'_change_type': 'insert', '_change_type_count': 120}, ...]
        >>> read_changes("/data/events", starting_version=0, filter="_change_type = 'delete'").num_rows
        ... # doctest: +SKIP
        3
    """
    from deltalog.feed.rows import table_changes

    return table_changes(
        table if isinstance(table, Table) else Table(table), starting_version=starting_version,
        ending_version=ending_version, starting_timestamp=starting_timestamp, ending_timestamp=ending_timestamp,
        columns=columns, filter=filter,
    )


def _ict_enablement(snapshot: Snapshot) -> int | None:
    props = snapshot.properties
    if props.get("delta.enableInCommitTimestamps", "false").lower() != "true":
        return None
    return int(props.get("delta.inCommitTimestampEnablementVersion", "0"))


def _still_there(snapshot: Snapshot, listing: list[LogFile]) -> bool:
    """The cached snapshot's own commit (or checkpoint) is still in ``listing`` (the log from its
    version on), the same file -- its size and modification time, where the snapshot knows them, as listed
    when it was read (as delta-spark tells a log segment apart): the table was not deleted and re-created
    under us, so reading only newer commits is sound."""
    segment = snapshot.segment
    known = {f.name: f for f in (*segment.commits, *segment.checkpoint) if f.version == snapshot.version}
    for f in listing:
        if f.version != snapshot.version:
            return False
        if f.kind in ("commit", "checkpoint"):
            mine = known.get(f.name)
            return mine is None or (mine.size, mine.modification_time) in ((0, 0), (f.size, f.modification_time))
    return False
