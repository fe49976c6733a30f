"""Operations as data: one frozen object per kind of commit.

An operation knows its ``commitInfo.operation`` name, renders its ``operationParameters`` the way the
reference implementation does (every value a JSON *string*, e.g. ``"partitionBy": "[\\"day\\"]"``),
and declares how it touches the table:

* ``is_blind_append`` -- it only adds new files and does not depend on what the table holds;
* ``changes_data`` -- it changes the table's rows (``False`` for OPTIMIZE, VACUUM, property changes);
* ``rewrites_rows`` -- it may replace existing rows by rewritten copies (UPDATE, MERGE, DELETE).

The transaction combines the declaration with what was actually staged (a declared blind append that
also removes files is not blind) and fills ``operationMetrics`` from the staged actions.

Example:
    >>> op = Write(mode="Append", partition_by=("day",))
    >>> op.name, op.parameters()
    ('WRITE', {'mode': 'Append', 'partitionBy': '["day"]'})
    >>> op.is_blind_append, Optimize().changes_data
    (True, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from deltalog.errors import InvalidArgumentError
from deltalog.txn.operation_base import Operation, json_param, predicate_list
from deltalog.txn.operations_ddl import (
    AddColumns,
    AddConstraint,
    ChangeColumn,
    ClusterBy,
    DropColumns,
    DropConstraint,
    DropTableFeature,
    RenameColumn,
    ReplaceColumns,
    SetTableProperties,
    UnsetTableProperties,
    UpgradeProtocol,
)

__all__ = [
    "AddColumns",
    "AddConstraint",
    "ChangeColumn",
    "Clone",
    "ClusterBy",
    "ComputeStats",
    "Convert",
    "CreateTable",
    "CreateTableAsSelect",
    "Delete",
    "DropColumns",
    "DropConstraint",
    "DropTableFeature",
    "Fsck",
    "Merge",
    "Operation",
    "Optimize",
    "RenameColumn",
    "Reorg",
    "ReplaceColumns",
    "Restore",
    "RowTrackingBackfill",
    "SetTableProperties",
    "StreamingUpdate",
    "UnsetTableProperties",
    "Update",
    "UpgradeProtocol",
    "VacuumEnd",
    "VacuumStart",
    "Write",
]


_WRITE_MODES = ("Append", "Overwrite", "ErrorIfExists", "Ignore")


@dataclass(frozen=True)
class Write(Operation):
    """``WRITE``: append, overwrite (optionally only where ``predicate`` holds), or create-by-write. The
    predicate is recorded as delta-spark records ``replaceWhere``: the condition's text as given (several
    conditions joined with ``AND``), not a JSON list.

    Example:
        >>> Write(mode="Overwrite", predicate="day = '2024-01-01'").parameters()
        {'mode': 'Overwrite', 'partitionBy': '[]', 'predicate': "day = '2024-01-01'"}
    """

    mode: str = "Append"
    partition_by: tuple[str, ...] = ()
    predicate: str | Sequence[str] | None = None
    NAME: ClassVar[str] = "WRITE"

    def __post_init__(self) -> None:
        if self.mode not in _WRITE_MODES:
            raise InvalidArgumentError(f"write mode {self.mode!r} is not one of {list(_WRITE_MODES)}")

    @property
    def is_blind_append(self) -> bool:
        """A plain append (or a write creating the table) reads nothing."""
        return self.mode in ("Append", "ErrorIfExists", "Ignore") and self.predicate is None

    @property
    def rewrites_rows(self) -> bool:
        """An overwrite removes whole files; it never rewrites rows."""
        return False

    def parameters(self) -> dict[str, str | None]:
        """Mode, partition columns and, for a selective overwrite, the predicate's text."""
        out: dict[str, str | None] = {"mode": self.mode, "partitionBy": json_param(list(self.partition_by))}
        if self.predicate is not None:
            out["predicate"] = " AND ".join(predicate_list(self.predicate))
        return out

    def metric_names(self) -> tuple[str, ...]:
        """Files, rows and bytes written (plus removed files for an overwrite)."""
        if self.mode == "Overwrite":
            return ("numFiles", "numOutputRows", "numOutputBytes", "numRemovedFiles", "numRemovedBytes")
        return ("numFiles", "numOutputRows", "numOutputBytes")


@dataclass(frozen=True)
class CreateTable(Operation):
    """``CREATE TABLE`` (or ``CREATE OR REPLACE TABLE`` with ``replace=True``) without data; ``cluster_by``
    are the clustering columns of a clustered table.

    Example:
        >>> CreateTable(partition_by=("d",), properties={"delta.appendOnly": "true"}).parameters()
        {'isManaged': 'false', 'description': None, 'partitionBy': '["d"]', 'clusterBy': '[]', \
'properties': '{"delta.appendOnly":"true"}'}
    """

    partition_by: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    description: str | None = None
    replace: bool = False
    managed: bool = False
    cluster_by: tuple[str, ...] = ()
    BLIND_APPEND: ClassVar[bool] = True

    @property
    def name(self) -> str:
        """``CREATE TABLE`` or ``CREATE OR REPLACE TABLE``."""
        return "CREATE OR REPLACE TABLE" if self.replace else "CREATE TABLE"

    def parameters(self) -> dict[str, str | None]:
        """Managed flag (a catalog table whose files the catalog owns), description, partition columns,
        clustering columns and properties."""
        return {
            "isManaged": "true" if self.managed else "false",
            "description": self.description,
            "partitionBy": json_param(list(self.partition_by)),
            "clusterBy": json_param(list(self.cluster_by)),
            "properties": json_param(dict(self.properties)),
        }

    def metric_names(self) -> tuple[str, ...]:
        """Files and bytes added (a create-as-select writes data)."""
        return ("numFiles", "numOutputRows", "numOutputBytes")


@dataclass(frozen=True)
class Clone(Operation):
    """``CLONE`` of ``source`` at ``source_version``: delta-spark records the source and its version only
    (whether the clone is shallow is not a parameter).

    Example:
        >>> Clone(source="delta.`/src`", source_version=3).parameters()
        {'source': 'delta.`/src`', 'sourceVersion': '3'}
    """

    source: str = ""
    source_version: int = 0
    NAME: ClassVar[str] = "CLONE"
    LITERAL_PARAMETERS: ClassVar[frozenset[str]] = frozenset({"sourceVersion"})
    WRITES_DATA_FILES: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """Source table and its version."""
        return {"source": self.source, "sourceVersion": str(self.source_version)}

    def metric_names(self) -> tuple[str, ...]:
        """Metrics are supplied by the clone command."""
        return ()


@dataclass(frozen=True)
class Convert(Operation):
    """``CONVERT`` of a parquet directory into a Delta table in place.

    Example:
        >>> Convert(num_files=3, partition_by=("d",)).parameters()
        {'numFiles': '3', 'partitionedBy': '["d"]', 'collectStats': 'true', 'sourceFormat': 'parquet'}
    """

    num_files: int = 0
    partition_by: tuple[str, ...] = ()
    collect_stats: bool = True
    source_format: str = "parquet"
    NAME: ClassVar[str] = "CONVERT"
    LITERAL_PARAMETERS: ClassVar[frozenset[str]] = frozenset({"numFiles", "collectStats"})
    BLIND_APPEND: ClassVar[bool] = True
    WRITES_DATA_FILES: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """File count, partition columns, whether stats were collected, and the source format."""
        return {
            "numFiles": str(self.num_files),
            "partitionedBy": json_param(list(self.partition_by)),
            "collectStats": "true" if self.collect_stats else "false",
            "sourceFormat": self.source_format,
        }

    def metric_names(self) -> tuple[str, ...]:
        """Files, rows and bytes taken into the table."""
        return ("numFiles", "numOutputRows", "numOutputBytes")


@dataclass(frozen=True)
class Delete(Operation):
    """``DELETE`` of the rows where ``predicate`` holds (``None``: every row).

    Example:
        >>> Delete(predicate="id < 10").parameters()
        {'predicate': '["id < 10"]'}
    """

    predicate: str | Sequence[str] | None = None
    NAME: ClassVar[str] = "DELETE"
    REWRITES_ROWS: ClassVar[bool] = True

    def parameters(self) -> dict[str, str | None]:
        """The delete condition as a JSON list of SQL strings."""
        return {"predicate": json_param(predicate_list(self.predicate))}

    def metric_names(self) -> tuple[str, ...]:
        """Files added and removed, rows deleted and copied."""
        return (
            "numAddedFiles",
            "numRemovedFiles",
            "numAddedBytes",
            "numRemovedBytes",
            "numDeletedRows",
            "numCopiedRows",
        )


@dataclass(frozen=True)
class Fsck(Operation):
    """``FSCK REPAIR TABLE``: removes the log entries of data files missing from storage (no rows are
    rewritten; the removed entries' rows are gone with their files).

    Example:
        >>> Fsck(num_removed_files=2).parameters()
        {'numRemovedFiles': '2'}
    """

    num_removed_files: int = 0
    NAME: ClassVar[str] = "FSCK"
    WRITES_DATA_FILES: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """How many entries the repair removes."""
        return {"numRemovedFiles": str(self.num_removed_files)}

    def metric_names(self) -> tuple[str, ...]:
        """Files removed and the rows they held."""
        return ("numRemovedFiles", "numDeletedRows")


@dataclass(frozen=True)
class Update(Operation):
    """``UPDATE`` of the rows where ``predicate`` holds.

    Example:
        >>> Update(predicate="id = 1").parameters()
        {'predicate': '["id = 1"]'}
    """

    predicate: str | Sequence[str] | None = None
    NAME: ClassVar[str] = "UPDATE"
    REWRITES_ROWS: ClassVar[bool] = True

    def parameters(self) -> dict[str, str | None]:
        """The update condition as a JSON list of SQL strings."""
        return {"predicate": json_param(predicate_list(self.predicate))}

    def metric_names(self) -> tuple[str, ...]:
        """Files added and removed, rows updated and copied."""
        return (
            "numAddedFiles",
            "numRemovedFiles",
            "numAddedBytes",
            "numRemovedBytes",
            "numUpdatedRows",
            "numCopiedRows",
        )


@dataclass(frozen=True)
class Merge(Operation):
    """``MERGE``: the join condition and the clause predicates.

    Example:
        >>> Merge(predicate="t.id = s.id", matched_predicates=({"actionType": "update"},)).parameters()
        {'predicate': '["t.id = s.id"]', 'matchedPredicates': '[{"actionType":"update"}]', \
'notMatchedPredicates': '[]', 'notMatchedBySourcePredicates': '[]'}
    """

    predicate: str | Sequence[str] | None = None
    matched_predicates: tuple[Mapping[str, str], ...] = ()
    not_matched_predicates: tuple[Mapping[str, str], ...] = ()
    not_matched_by_source_predicates: tuple[Mapping[str, str], ...] = ()
    NAME: ClassVar[str] = "MERGE"
    REWRITES_ROWS: ClassVar[bool] = True

    def parameters(self) -> dict[str, str | None]:
        """Join condition and per-clause predicates, each JSON text."""
        return {
            "predicate": json_param(predicate_list(self.predicate)),
            "matchedPredicates": json_param([dict(p) for p in self.matched_predicates]),
            "notMatchedPredicates": json_param([dict(p) for p in self.not_matched_predicates]),
            "notMatchedBySourcePredicates": json_param([dict(p) for p in self.not_matched_by_source_predicates]),
        }

    def metric_names(self) -> tuple[str, ...]:
        """Files added and removed, rows inserted, updated, deleted and copied."""
        return (
            "numTargetFilesAdded",
            "numTargetFilesRemoved",
            "numTargetBytesAdded",
            "numTargetBytesRemoved",
            "numOutputRows",
        )


@dataclass(frozen=True)
class Optimize(Operation):
    """``OPTIMIZE``: compaction (``dataChange=false``), optionally limited by ``predicate``.

    Example:
        >>> Optimize(predicate=["day = '2024-01-01'"]).changes_data
        False
        >>> Optimize(z_order_by=("a",), cluster_by=("k",), auto=True).parameters()
        {'predicate': '[]', 'zOrderBy': '[]', 'clusterBy': '["k"]', 'auto': 'true'}
    """

    predicate: str | Sequence[str] | None = None
    z_order_by: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] | None = None
    auto: bool = False
    NAME: ClassVar[str] = "OPTIMIZE"
    CHANGES_DATA: ClassVar[bool] = False
    LITERAL_PARAMETERS: ClassVar[frozenset[str]] = frozenset({"auto"})

    def parameters(self) -> dict[str, str | None]:
        """Predicates, Z-order columns and clustering columns as JSON lists (the Z-order list empty on a
        clustered table, as in delta-spark), and whether this is auto compaction after a write."""
        return {"predicate": json_param(predicate_list(self.predicate)),
                "zOrderBy": json_param(list(self.z_order_by) if self.cluster_by is None else []),
                "clusterBy": json_param(list(self.cluster_by or ())),
                "auto": "true" if self.auto else "false"}

    def metric_names(self) -> tuple[str, ...]:
        """Files and bytes added and removed."""
        return ("numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes")


@dataclass(frozen=True)
class Restore(Operation):
    """``RESTORE`` to a version or a timestamp.

    Example:
        >>> Restore(version=3).parameters()
        {'version': '3', 'timestamp': None}
    """

    version: int | None = None
    timestamp: str | None = None
    NAME: ClassVar[str] = "RESTORE"
    LITERAL_PARAMETERS: ClassVar[frozenset[str]] = frozenset({"version"})

    def __post_init__(self) -> None:
        if (self.version is None) == (self.timestamp is None):
            raise InvalidArgumentError("RESTORE needs exactly one of version= or timestamp=")

    def parameters(self) -> dict[str, str | None]:
        """The target version (as a string) or timestamp."""
        return {"version": None if self.version is None else str(self.version), "timestamp": self.timestamp}

    def metric_names(self) -> tuple[str, ...]:
        """Files restored and removed."""
        return ("numRestoredFiles", "numRemovedFiles", "restoredFilesSize", "removedFilesSize")


@dataclass(frozen=True)
class VacuumStart(Operation):
    """``VACUUM START``: recorded before files are deleted.

    Example:
        >>> VacuumStart(specified_retention_millis=0).parameters()
        {'retentionCheckEnabled': 'true', 'defaultRetentionMillis': '604800000', \
'specifiedRetentionMillis': '0'}
    """

    retention_check_enabled: bool = True
    specified_retention_millis: int | None = None
    default_retention_millis: int = 7 * 24 * 3600 * 1000
    NAME: ClassVar[str] = "VACUUM START"
    CHANGES_DATA: ClassVar[bool] = False
    LITERAL_PARAMETERS: ClassVar[frozenset[str]] = frozenset(
        {"retentionCheckEnabled", "defaultRetentionMillis", "specifiedRetentionMillis"})

    def parameters(self) -> dict[str, str | None]:
        """Whether the retention check ran, the table's retention and the one given (when given)."""
        out: dict[str, str | None] = {"retentionCheckEnabled": "true" if self.retention_check_enabled else "false",
                                      "defaultRetentionMillis": str(self.default_retention_millis)}
        if self.specified_retention_millis is not None:
            out["specifiedRetentionMillis"] = str(self.specified_retention_millis)
        return out

    def metric_names(self) -> tuple[str, ...]:
        """Metrics are supplied by the vacuum command."""
        return ()


@dataclass(frozen=True)
class VacuumEnd(Operation):
    """``VACUUM END``: recorded after files were deleted.

    Example:
        >>> VacuumEnd().parameters()
        {'status': 'COMPLETED'}
    """

    status: str = "COMPLETED"
    NAME: ClassVar[str] = "VACUUM END"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The vacuum's final status."""
        return {"status": self.status}

    def metric_names(self) -> tuple[str, ...]:
        """Metrics are supplied by the vacuum command."""
        return ()


@dataclass(frozen=True)
class Reorg(Operation):
    """``REORG``: files rewritten without changing the rows they hold (``dataChange=false``), e.g. to
    purge deletion vectors (``apply_purge``) before dropping the feature.

    Example:
        >>> Reorg(apply_purge=True).parameters()
        {'predicate': '[]', 'applyPurge': 'true'}
    """

    predicate: str | Sequence[str] | None = None
    apply_purge: bool = False
    NAME: ClassVar[str] = "REORG"
    CHANGES_DATA: ClassVar[bool] = False
    LITERAL_PARAMETERS: ClassVar[frozenset[str]] = frozenset({"applyPurge"})

    def parameters(self) -> dict[str, str | None]:
        """Predicate (JSON list) and whether deletion vectors were purged."""
        return {"predicate": json_param(predicate_list(self.predicate)), "applyPurge": str(self.apply_purge).lower()}

    def metric_names(self) -> tuple[str, ...]:
        """Files and bytes added and removed."""
        return ("numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes")


@dataclass(frozen=True)
class ComputeStats(Operation):
    """``ANALYZE TABLE ... COMPUTE DELTA STATISTICS``: the live files re-added with statistics read again
    from their footers (``dataChange=false``; no file is rewritten).

    Example:
        >>> ComputeStats().name, ComputeStats().parameters()
        ('COMPUTE STATS', {'predicate': '[]'})
    """

    predicate: str | Sequence[str] | None = None
    NAME: ClassVar[str] = "COMPUTE STATS"
    CHANGES_DATA: ClassVar[bool] = False
    WRITES_DATA_FILES: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The files' predicate (a JSON list; empty: every file)."""
        return {"predicate": json_param(predicate_list(self.predicate))}

    def metric_names(self) -> tuple[str, ...]:
        """None: the files and rows stay the same."""
        return ()


@dataclass(frozen=True)
class RowTrackingBackfill(Operation):
    """``ROW TRACKING BACKFILL``: live files without row ids re-added with them (``dataChange=false``; no
    file rewritten), one batch of files per commit, before row tracking is enabled on a table with files.

    Example:
        >>> RowTrackingBackfill(batch_id=2).name, RowTrackingBackfill(batch_id=2).parameters()
        ('ROW TRACKING BACKFILL', {'batchId': '2'})
    """

    batch_id: int = 0
    NAME: ClassVar[str] = "ROW TRACKING BACKFILL"
    CHANGES_DATA: ClassVar[bool] = False
    WRITES_DATA_FILES: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The batch's number (the backfill's commits count from 0)."""
        return {"batchId": str(self.batch_id)}

    def metric_names(self) -> tuple[str, ...]:
        """None: the files and rows stay the same."""
        return ()


@dataclass(frozen=True)
class CreateTableAsSelect(Write):
    """``CREATE TABLE AS SELECT`` (or ``REPLACE TABLE AS SELECT`` / ``CREATE OR REPLACE TABLE AS SELECT``,
    named by ``kind``): a write that creates or replaces the table with a query's rows.

    Example:
        >>> op = CreateTableAsSelect(mode="ErrorIfExists", kind="CREATE TABLE AS SELECT", managed=True)
        >>> op.name, op.parameters()["isManaged"]
        ('CREATE TABLE AS SELECT', 'true')
    """

    kind: str = "CREATE TABLE AS SELECT"
    description: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    managed: bool = False
    cluster_by: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The statement that wrote the table."""
        return self.kind

    def parameters(self) -> dict[str, str | None]:
        """As delta-spark records a create-as-select: managed flag, description, partitioning, clustering,
        properties."""
        return {
            "isManaged": "true" if self.managed else "false",
            "description": self.description,
            "partitionBy": json_param(list(self.partition_by)),
            "clusterBy": json_param(list(self.cluster_by)),
            "properties": json_param(dict(self.properties)),
        }



@dataclass(frozen=True)
class StreamingUpdate(Write):
    """``STREAMING UPDATE``: one micro-batch of a Delta streaming sink (``writeStream.format("delta")``),
    committed with the query's ``txn`` (``appId`` = query id, ``version`` = ``epoch_id``). ``Append``
    output adds the batch's rows (``mode="Append"``); ``Complete`` output (``mode="Overwrite"``) replaces
    the table's rows.

    Example:
        >>> op = StreamingUpdate(mode="Overwrite", query_id="q-1", epoch_id=3)
        >>> op.name, op.parameters()
        ('STREAMING UPDATE', {'outputMode': 'Complete', 'queryId': 'q-1', 'epochId': '3'})
    """

    query_id: str = ""
    epoch_id: int = 0
    NAME: ClassVar[str] = "STREAMING UPDATE"

    def parameters(self) -> dict[str, str | None]:
        """The output mode (Spark's name for it), the query id and the micro-batch (epoch) id."""
        mode = "Complete" if self.mode == "Overwrite" else "Append"
        return {"outputMode": mode, "queryId": self.query_id, "epochId": str(self.epoch_id)}

    def metric_names(self) -> tuple[str, ...]:
        """Files added and removed (``Complete`` output removes the previous rows' files), rows and bytes written."""
        return ("numAddedFiles", "numRemovedFiles", "numOutputRows", "numOutputBytes")
