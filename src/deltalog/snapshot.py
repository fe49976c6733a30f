"""An immutable view of a table at one version.

Example:
    >>> import deltalog
    >>> snap = deltalog.Table("/data/events").snapshot()          # doctest: +SKIP
    >>> snap.version, snap.partition_columns                        # doctest: +SKIP
    (12, ('day',))
    >>> snap.add_files().num_rows                                   # doctest: +SKIP
    48
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import pyarrow as pa

from deltalog.data.filters import FilterLike
from deltalog.data.read import read_snapshot
from deltalog.log.replay import TableState
from deltalog.log.segment import LogSegment
from deltalog.protocol.actions import CommitInfo, Metadata, Protocol
from deltalog.protocol.features import check_readable, is_feature_active

if TYPE_CHECKING:
    from deltalog.protocol.schema import StructType
    from deltalog.storage import LogStore



class Snapshot:
    """The state of a Delta table at :attr:`version`: protocol, metadata, schema and live files.

    Immutable: a newer commit does not change it. Get one from :meth:`deltalog.Table.snapshot` (the latest
    version, or an older one for time travel).

    Example:
        >>> import deltalog, pyarrow as pa
        >>> _ = deltalog.write_table("memory://snapshot-doc", pa.table({"id": [1, 2], "day": ["a", "b"]}),
        ...                          partition_by=["day"], properties={"delta.appendOnly": "true"})
        >>> snap = deltalog.Table("memory://snapshot-doc").snapshot()
        >>> snap.version, snap.num_files(), snap.partition_columns
        (0, 2, ('day',))
        >>> snap.properties["delta.appendOnly"], snap.column_mapping_mode
        ('true', 'none')
        >>> (snap.protocol.minReaderVersion, snap.protocol.minWriterVersion), snap.has_feature("appendOnly")
        ((1, 2), True)
        >>> snap.commit_info.operation, snap.to_arrow(columns=["id"]).num_rows
        ('WRITE', 2)
    """

    def __init__(self, store: LogStore, segment: LogSegment, state: TableState, *, table: str) -> None:
        self._store = store
        self._segment = segment
        self._state = state
        self.table = table
        check_readable(state.protocol, table=table, version=state.version)

    def __repr__(self) -> str:
        return f"Snapshot(table={self.table!r}, version={self.version}, files={self._state.files.num_rows})"

    def with_metadata(self, metadata: Metadata) -> Snapshot:
        """This snapshot's files and protocol under another ``metaData`` (a schema a pending commit evolves):
        what a statement that changes the schema reads and writes its rows with. Not a table version.

        Example:
            >>> evolved = snap.with_metadata(new_metadata)                  # doctest: +SKIP
            >>> evolved.version == snap.version                             # doctest: +SKIP
            True
        """
        return Snapshot(self._store, self._segment, dataclasses.replace(self._state, metadata=metadata),
                        table=self.table)

    @property
    def version(self) -> int:
        """The table version this snapshot shows.

        Example:
            >>> snap.version                                                # doctest: +SKIP
            3
        """
        return self._state.version

    @property
    def store(self) -> LogStore:
        """The storage the table lives in.

        Example:
            >>> snap.store.root                                             # doctest: +SKIP
            '/data/events'
        """
        return self._store

    @property
    def state(self) -> TableState:
        """The reconciled log state (actions as objects, files as Arrow) — for checkpoints and checksums.

        Example:
            >>> snap.state.files.num_rows == snap.num_files()               # doctest: +SKIP
            True
        """
        return self._state

    @property
    def segment(self) -> LogSegment:
        """The log files this snapshot was reconstructed from.

        Example:
            >>> snap.segment.version                                        # doctest: +SKIP
            3
        """
        return self._segment

    @property
    def protocol(self) -> Protocol:
        """The table's ``protocol`` action.

        Example:
            >>> snap.protocol.minReaderVersion                              # doctest: +SKIP
            1
        """
        return self._state.protocol

    @property
    def metadata(self) -> Metadata:
        """The table's ``metaData`` action.

        Example:
            >>> snap.metadata.partitionColumns                              # doctest: +SKIP
            ['day']
        """
        return self._state.metadata

    @cached_property
    def schema(self) -> StructType:
        """The logical schema, parsed from ``metaData.schemaString``.

        Example:
            >>> snap.schema.field_names                              # doctest: +SKIP
            ['id', 'day']
        """
        from deltalog.errors import InvalidTableError, SchemaError
        from deltalog.protocol.schema import parse_schema

        if self.metadata.schemaString is None:
            raise InvalidTableError(
                "metaData has no schemaString, so the table's rows cannot be read",
                table=self.table, version=self.version,
            )
        try:
            schema = parse_schema(self.metadata.schemaString)
        except SchemaError as exc:
            raise SchemaError(
                f"metaData.schemaString is invalid: {exc.message}", table=self.table, version=self.version
            ) from None
        _check_partition_columns(schema, self.metadata.partitionColumns, table=self.table, version=self.version)
        return schema

    @property
    def partition_columns(self) -> tuple[str, ...]:
        """Logical names of the partition columns, in partition order.

        Example:
            >>> snap.partition_columns                                      # doctest: +SKIP
            ('day',)
        """
        return tuple(self.metadata.partitionColumns)

    @property
    def properties(self) -> Mapping[str, str]:
        """Table properties (``metaData.configuration``), e.g. ``delta.appendOnly``.

        Example:
            >>> snap.properties.get("delta.appendOnly")                     # doctest: +SKIP
            'true'
        """
        return self.metadata.configuration

    @property
    def column_mapping_mode(self) -> str:
        """``none``, ``name`` or ``id`` (``delta.columnMapping.mode``).

        Example:
            >>> snap.column_mapping_mode                                    # doctest: +SKIP
            'none'
        """
        return self.properties.get("delta.columnMapping.mode", "none")

    @property
    def commit_info(self) -> CommitInfo | None:
        """The ``commitInfo`` of the commit that produced this version, if it is in the segment.

        Example:
            >>> snap.commit_info.operation                                  # doctest: +SKIP
            'WRITE'
        """
        return self._state.commit_info

    def add_files(self) -> pa.Table:
        """One row per live data file: path, partitionValues, size, modificationTime, stats, deletionVector...

        Example:
            >>> snap.add_files().column_names[:3]                    # doctest: +SKIP
            ['path', 'partitionValues', 'size']
        """
        return self._state.files

    def tombstones(self) -> pa.Table:
        """``remove`` actions still in the reconciled state (files a vacuum may delete later).

        Example:
            >>> snap.tombstones().num_rows                                  # doctest: +SKIP
            0
        """
        return self._state.tombstones

    def num_files(self) -> int:
        """Number of live data files.

        Example:
            >>> snap.num_files()                                            # doctest: +SKIP
            2
        """
        n: int = self._state.files.num_rows
        return n

    def txn_version(self, app_id: str) -> int | None:
        """The latest version committed by ``app_id`` through ``txn`` actions, or ``None``.

        Example:
            >>> snap.txn_version("nightly-etl")                      # doctest: +SKIP
            41
        """
        txn = self._state.txns.get(app_id)
        return None if txn is None else txn.version

    @property
    def app_transactions(self) -> Mapping[str, int]:
        """Every application id with its latest ``txn`` version.

        Example:
            >>> snap.app_transactions                                       # doctest: +SKIP
            {'nightly-etl': 41}
        """
        return {k: v.version for k, v in self._state.txns.items()}

    def domain_metadata(self, domain: str) -> str | None:
        """The configuration string of a (not removed) metadata domain, or ``None``.

        Example:
            >>> snap.domain_metadata("delta.clustering")                    # doctest: +SKIP
            '{"clusteringColumns":[["id"]]}'
        """
        d = self._state.domains.get(domain)
        return None if d is None else d.configuration

    @property
    def domains(self) -> Mapping[str, str]:
        """All live metadata domains with their configuration.

        Example:
            >>> list(snap.domains)                                          # doctest: +SKIP
            ['delta.clustering']
        """
        return {k: v.configuration for k, v in self._state.domains.items()}

    def has_feature(self, feature: str) -> bool:
        """True when the protocol lists (or implies) the table feature.

        Example:
            >>> snap.has_feature("deletionVectors")                         # doctest: +SKIP
            False
        """
        return is_feature_active(self.protocol, feature)

    def to_arrow(
        self, columns: Sequence[str] | None = None, filter: FilterLike | None = None, *, limit: int | None = None
    ) -> pa.Table:
        """Read the table's rows into one ``pyarrow.Table`` (for small tables and tests).

        ``filter`` is a SQL condition (``"day = '2024-01-01' AND id > 5"``; the subset of
        :mod:`deltalog.data.sql_expr`) or a list of ``(column, op, value)`` conditions joined by AND (ops
        ``= == != < <= > >= in not in``): either prunes partitions and skips files by min/max statistics
        (a SQL condition by its top-level ``AND`` terms that compare a column with literals) and then
        filters the rows; a ``pyarrow.compute.Expression`` is applied to rows only. Variant columns read as
        ``struct<value: binary, metadata: binary>`` (decode with :mod:`deltalog.protocol.variant`) and
        cannot be filtered on. ``limit`` returns at most that many rows, reading files only until it has
        them (which rows is not defined, as in SQL without ORDER BY).

        Example:
            >>> snap.to_arrow(columns=["id"], filter="day = '2024-01-01' AND id % 2 = 0")  # doctest: +SKIP
            pyarrow.Table
            id: int64
            >>> snap.to_arrow(limit=10).num_rows                                        # doctest: +SKIP
            10
        """
        return read_snapshot(self, columns=columns, filter=filter, limit=limit)


def _check_partition_columns(
    schema: StructType, partition_columns: Sequence[str], *, table: str, version: int
) -> None:
    """``metaData.partitionColumns`` must name distinct top-level columns of primitive type."""
    from deltalog.errors import InvalidTableError
    from deltalog.protocol.schema import DecimalType, PrimitiveType, type_string

    names = set(schema.field_names)
    for column in partition_columns:
        if column not in names:
            raise InvalidTableError(
                f"metaData.partitionColumns names column {column!r}, which is not in the table schema "
                f"(columns: {schema.field_names})",
                table=table, version=version,
            )
        dtype = schema.field(column).type
        if not isinstance(dtype, (PrimitiveType, DecimalType)) or type_string(dtype) == "variant":
            raise InvalidTableError(
                f"partition column {column!r} has type {type_string(dtype)}, which cannot be a partition column",
                table=table, version=version,
            )
    if len(set(partition_columns)) != len(partition_columns):
        raise InvalidTableError(
            f"metaData.partitionColumns lists a column more than once: {list(partition_columns)}",
            table=table, version=version,
        )
