"""``DeltaTable``: delta-spark's Python API (camelCase), on deltalog's kernel and Spark engine.

Covered so far: ``forPath``, ``isDeltaTable``, ``toDF``, ``alias``, ``history``, ``detail``,
``vacuum``, ``restoreToVersion``, ``restoreToTimestamp``, ``delete``, ``update``, ``merge``
(:mod:`deltalog.spark.dml`), the ``create`` / ``createIfNotExists`` / ``replace`` / ``createOrReplace``
builders, ``upgradeTableProtocol`` and ``addFeatureSupport`` (:mod:`deltalog.spark.api.builder`). The
result DataFrames use delta-spark's column names and types. Metadata is small: it is built on the
driver from the log and handed to Spark from Arrow. ``optimize`` returns the compaction / Z-order
builder of :mod:`deltalog.spark.layout.optimize`. ``convertToDelta`` (:mod:`deltalog.spark.writes.convert`) and
``clone`` / ``cloneAtVersion`` / ``cloneAtTimestamp`` (:mod:`deltalog.commands.clone`) return the new
table. Not yet: ``forName`` (no catalog).

Example:
    >>> from deltalog.spark import DeltaTable
    >>> dt = DeltaTable.forPath(spark, "/data/events")                       # doctest: +SKIP
    >>> dt.history(1).select("version", "operation").first()                   # doctest: +SKIP
    Row(version=12, operation='WRITE')
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.commands.clustering import clustering_of
from deltalog.errors import DeltaError, InvalidArgumentError, TableNotFoundError
from deltalog.protocol.features import reader_features, writer_features
from deltalog.spark.api.builder import DeltaColumnBuilder, TableBuilder, add_feature_support, upgrade_table_protocol
from deltalog.spark.common.arguments import (
    check_bool,
    check_clone,
    check_condition,
    check_int,
    check_str,
    column_mapping,
    timestamp_invalid,
)
from deltalog.spark.common.core import arrow_frame, load_snapshot, open_table
from deltalog.spark.reads.scan import read_snapshot

if TYPE_CHECKING:
    from deltalog.spark.dml import MergeBuilder
    from deltalog.spark.layout.optimize import DeltaOptimizeBuilder

__all__ = ["DeltaTable", "DeltaTableBuilder"]

DataFrame = Any  # pyspark.sql.DataFrame (classic or Connect)

_STRING_MAP = pa.map_(pa.string(), pa.string())
_TS = pa.timestamp("us", tz="UTC")
_JOB = pa.struct(
    [(n, pa.string()) for n in ("jobId", "jobName", "jobRunId", "runId", "jobOwnerId", "triggerType")]
)
_NOTEBOOK = pa.struct([("notebookId", pa.string())])
_HISTORY_SCHEMA = pa.schema(
    [
        ("version", pa.int64()),
        ("timestamp", _TS),
        ("userId", pa.string()),
        ("userName", pa.string()),
        ("operation", pa.string()),
        ("operationParameters", _STRING_MAP),
        ("job", _JOB),
        ("notebook", _NOTEBOOK),
        ("clusterId", pa.string()),
        ("readVersion", pa.int64()),
        ("isolationLevel", pa.string()),
        ("isBlindAppend", pa.bool_()),
        ("operationMetrics", _STRING_MAP),
        ("userMetadata", pa.string()),
        ("engineInfo", pa.string()),
    ]
)
_RESTORE_SCHEMA = pa.schema(
    [
        ("table_size_after_restore", pa.int64()),
        ("num_of_files_after_restore", pa.int64()),
        ("num_removed_files", pa.int64()),
        ("num_restored_files", pa.int64()),
        ("removed_files_size", pa.int64()),
        ("restored_files_size", pa.int64()),
    ]
)


def _text_map(value: Any) -> list[tuple[str, str | None]] | None:
    """A commitInfo map as string pairs, as delta-spark shows them: a JSON literal of the log (``true``,
    ``604800000``) as its text, ``null`` as a null value (e.g. a table's missing description)."""
    if not isinstance(value, Mapping):
        return None
    return [(str(k), v if isinstance(v, str) or v is None else json.dumps(v, separators=(",", ":")))
            for k, v in value.items()]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def _millis(value: Any) -> dt.datetime | None:
    ms = _int_or_none(value)
    if ms is None:
        return None
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)


def _builder(spark: Any, mode: str) -> DeltaTableBuilder:
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is None:
            raise InvalidArgumentError(f"DeltaTable.{mode}() needs a SparkSession: none is active")
    return DeltaTableBuilder(spark, mode)


class DeltaTableBuilder(TableBuilder):
    """delta-spark's ``DeltaTableBuilder``: a table definition (the methods of
    :class:`~deltalog.spark.api.builder.TableBuilder`) whose :meth:`execute` returns the table as a
    ``DeltaTable``. Made by ``DeltaTable.create(spark)``, ``createIfNotExists``, ``replace`` and
    ``createOrReplace``.

    Example:
        >>> (DeltaTable.createIfNotExists(spark).location("/data/t")
        ...  .addColumns(df.schema).execute())                                          # doctest: +SKIP
        DeltaTable('/data/t')
    """

    def execute(self) -> DeltaTable:
        """Create / replace the table in one commit and return it as a ``DeltaTable``.

        Example:
            >>> DeltaTable.create(spark).location("/t").addColumn("id", "long").execute()  # doctest: +SKIP
            DeltaTable('/t')
        """
        return DeltaTable(self._spark, self.commit_definition())


class DeltaTable:
    """A Delta table at a path, with delta-spark's method names.

    Example:
        >>> DeltaTable.forPath(spark, "/data/events").toDF().count()          # doctest: +SKIP
        1000
    """

    def __init__(self, spark: Any, path: str, *, alias: str | None = None) -> None:
        self._spark = spark
        self._table = open_table(path)
        self._alias = alias
        self._catalog_name: str | None = None  # spark_catalog.db.t for tables found through the catalog

    def __repr__(self) -> str:
        return f"DeltaTable({self._table.location!r})"

    @property
    def path(self) -> str:
        """The table's location.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").path                # doctest: +SKIP
            '/data/events'
        """
        return self._table.location

    # ------------------------------------------------------------------------------------- opening

    @classmethod
    def forPath(cls, sparkSession: Any, path: str, hadoopConf: Mapping[str, str] | None = None) -> DeltaTable:
        """The Delta table at ``path``; raises :class:`~deltalog.errors.TableNotFoundError` (with
        delta-spark's ``[DELTA_MISSING_DELTA_TABLE]`` wording) when there is none. ``hadoopConf``
        (``fs.s3a.access.key``, ``fs.azure.account.key.<account>...``) configures the table's object
        store; local paths accept and ignore it, as Hadoop's local file system does.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events")                      # doctest: +SKIP
            DeltaTable('/data/events')
        """
        if hadoopConf is not None and not isinstance(hadoopConf, Mapping):
            raise InvalidArgumentError(f"hadoopConf must be a dict of str to str, got {type(hadoopConf).__name__}")
        if hadoopConf:
            from deltalog.spark.common.storage import remember_hadoop_conf

            remember_hadoop_conf(os.fspath(path), hadoopConf)
        load_snapshot(path)  # fails early, like delta-spark, when the path holds no Delta table
        return cls(sparkSession, path)

    @classmethod
    def isDeltaTable(cls, sparkSession: Any, identifier: str) -> bool:
        """True when ``identifier`` (a path) holds a Delta table with at least one commit.

        Example:
            >>> DeltaTable.isDeltaTable(spark, "/data/events")                 # doctest: +SKIP
            True
        """
        if not isinstance(identifier, (str, os.PathLike)):
            return False
        try:
            load_snapshot(identifier)
        except (TableNotFoundError, InvalidArgumentError):
            return False
        return True

    @classmethod
    def convertToDelta(
        cls, sparkSession: Any, identifier: str, partitionSchema: Any = None, collectStats: bool = True
    ) -> DeltaTable:
        """Turn the parquet directory of ``identifier`` (``"parquet.`/path`"``) into a Delta table in place,
        with one ``CONVERT`` commit (stats from the parquet footers unless ``collectStats=False``);
        ``partitionSchema`` (a DDL string such as ``"day date"`` or a ``StructType``) names the
        partition directories' columns and types. A path that already holds a Delta table is returned
        as it is. Non-parquet files or directories that do not match the partition schema are refused
        and nothing is committed.

        Example:
            >>> DeltaTable.convertToDelta(spark, "parquet.`/data/raw`", "day date").toDF().count()
            ... # doctest: +SKIP
            1000
        """
        from deltalog.spark.writes.convert import convert

        return cls(sparkSession, convert(identifier, partitionSchema, collectStats))

    @classmethod
    def forName(cls, sparkSession: Any, tableOrViewName: str) -> DeltaTable:
        """The Delta table of a catalog name (``events``, ``db.events``) or ``delta.`/path```; raises
        :class:`~deltalog.errors.TableNotFoundError` (``[DELTA_MISSING_DELTA_TABLE]``) when there is no such
        table and ``[DELTA_TABLE_ONLY_OPERATION]`` when it is not a Delta table.

        Example:
            >>> DeltaTable.forName(spark, "events")                             # doctest: +SKIP
            DeltaTable('/spark-warehouse/events')
        """
        check_str(tableOrViewName, "tableOrViewName")
        name = tableOrViewName.strip()
        if name.lower().startswith("delta.`") and name.endswith("`") and len(name) > len("delta.``"):
            return cls.forPath(sparkSession, name[len("delta.`"):-1].replace("``", "`"))
        from deltalog.spark.catalog.entries import require_delta

        try:
            entry = require_delta(sparkSession, name)
        except TableNotFoundError:
            hint = f"; {name!r} looks like a path: use DeltaTable.forPath(spark, path) or forName(spark, " \
                   f"\"delta.`{name}`\")" if "/" in name or "\\" in name else ""
            raise TableNotFoundError(
                f"[DELTA_MISSING_DELTA_TABLE] {name} is not a Delta table: no such table in the catalog{hint}",
                table=name,
            ) from None
        table = cls.forPath(sparkSession, entry.location)
        table._catalog_name = entry.name.full()
        return table

    # ----------------------------------------------------------------------------- create / replace

    @classmethod
    def columnBuilder(cls, sparkSession: Any, colName: str) -> DeltaColumnBuilder:
        """A builder of one column (a ``StructField``) for :meth:`create` and friends, as delta-spark's.

        Example:
            >>> f = DeltaTable.columnBuilder(spark, "id").dataType("long").nullable(False).build()  # doctest: +SKIP
        """
        return DeltaColumnBuilder(sparkSession, colName)

    @classmethod
    def create(cls, sparkSession: Any = None) -> DeltaTableBuilder:
        """A builder that creates a table and fails if it exists (SQL ``CREATE TABLE``); see
        :class:`~deltalog.spark.api.builder.DeltaTableBuilder`.

        Example:
            >>> DeltaTable.create(spark).location("/t").addColumn("id", "long").execute()  # doctest: +SKIP
            DeltaTable('/t')
        """
        return _builder(sparkSession, "create")

    @classmethod
    def createIfNotExists(cls, sparkSession: Any = None) -> DeltaTableBuilder:
        """A builder that creates a table unless one exists (SQL ``CREATE TABLE IF NOT EXISTS``).

        Example:
            >>> DeltaTable.createIfNotExists(spark).location("/t").addColumns(df.schema).execute()
            ... # doctest: +SKIP
        """
        return _builder(sparkSession, "createIfNotExists")

    @classmethod
    def replace(cls, sparkSession: Any = None) -> DeltaTableBuilder:
        """A builder that replaces an existing table and fails if there is none (SQL ``REPLACE TABLE``).

        Example:
            >>> DeltaTable.replace(spark).location("/t").addColumn("id", "long").execute()  # doctest: +SKIP
        """
        return _builder(sparkSession, "replace")

    @classmethod
    def createOrReplace(cls, sparkSession: Any = None) -> DeltaTableBuilder:
        """A builder that replaces the table, or creates it (SQL ``CREATE OR REPLACE TABLE``).

        Example:
            >>> DeltaTable.createOrReplace(spark).location("/t").addColumn("id", "long").execute()
            ... # doctest: +SKIP
        """
        return _builder(sparkSession, "createOrReplace")

    # ---------------------------------------------------------------------------------------- data

    def toDF(self) -> DataFrame:
        """The table's latest rows as a DataFrame (aliased when :meth:`alias` was used).

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").toDF().columns       # doctest: +SKIP
            ['id', 'day']
        """
        df = read_snapshot(self._spark, load_snapshot(self._table.location), latest=True)
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> DeltaTable:
        """The same table whose :meth:`toDF` carries the alias ``aliasName``.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").alias("t").toDF().select("t.id")  # doctest: +SKIP
        """
        return DeltaTable(self._spark, self._table.location, alias=aliasName)

    # ------------------------------------------------------------------------------------ metadata

    def history(self, limit: int | None = None) -> DataFrame:
        """Commit provenance, newest first, with delta-spark's columns (``version``, ``timestamp``,
        ``operation``, ``operationParameters``, ``readVersion``, ``isBlindAppend``,
        ``operationMetrics``, ``userMetadata``, ``engineInfo``, ...).

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").history(1).first().operation  # doctest: +SKIP
            'WRITE'
        """
        entries = self._table.history(limit=limit)
        rows = []
        for e in entries:
            rows.append(
                {
                    "version": e["version"],
                    "timestamp": _millis(e.get("timestamp")),
                    "userId": _text(e.get("userId")),
                    "userName": _text(e.get("userName")),
                    "operation": _text(e.get("operation")),
                    "operationParameters": _text_map(e.get("operationParameters")),
                    "job": e.get("job") if isinstance(e.get("job"), Mapping) else None,
                    "notebook": e.get("notebook") if isinstance(e.get("notebook"), Mapping) else None,
                    "clusterId": _text(e.get("clusterId")),
                    "readVersion": _int_or_none(e.get("readVersion")),
                    "isolationLevel": _text(e.get("isolationLevel")),
                    "isBlindAppend": e.get("isBlindAppend") if isinstance(e.get("isBlindAppend"), bool) else None,
                    "operationMetrics": _text_map(e.get("operationMetrics")),
                    "userMetadata": _text(e.get("userMetadata")),
                    "engineInfo": _text(e.get("engineInfo")),
                }
            )
        for r in rows:
            for key, struct in (("job", _JOB), ("notebook", _NOTEBOOK)):
                if r[key] is not None:
                    r[key] = {struct.field(i).name: _text(r[key].get(struct.field(i).name))
                              for i in range(struct.num_fields)}
        return arrow_frame(self._spark, pa.Table.from_pylist(rows, schema=_HISTORY_SCHEMA))

    def generate(self, mode: str) -> None:
        """Generate manifest files: ``mode`` ``"symlink_format_manifest"`` (the only mode, as in
        delta-spark) writes ``_symlink_format_manifest/`` for Presto / Athena / Hive; see
        :mod:`deltalog.commands.manifest`.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").generate("symlink_format_manifest")  # doctest: +SKIP
        """
        from deltalog.commands.manifest import generate_symlink_manifest

        if not isinstance(mode, str) or mode.strip().lower() != "symlink_format_manifest":
            raise InvalidArgumentError(
                f"[DELTA_MODE_NOT_SUPPORTED] Specified mode '{mode}' is not supported. Supported modes are: "
                "symlink_format_manifest",
                table=self._table.location,
            )
        generate_symlink_manifest(self._table)

    def detail(self) -> DataFrame:
        """One row describing the table: format, id, location, createdAt, lastModified,
        partitionColumns, numFiles, sizeInBytes, properties, protocol versions and tableFeatures, as delta-spark's;
        then deltalog's numRecords, numDeletedRecords, numFilesWithDeletionVectors, numSmallFiles and
        commitsSinceCheckpoint, from the log alone (see :data:`deltalog.spark.catalog.detail.DETAIL_SCHEMA`).

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").detail().first().numFiles  # doctest: +SKIP
            48
        """
        from deltalog.spark.catalog.detail import detail_frame, location_uri

        snap = load_snapshot(self._table.location)
        md = snap.metadata
        files = snap.add_files()
        last = self._table.history(limit=1)
        features = sorted(reader_features(snap.protocol) | writer_features(snap.protocol))
        try:  # logical names (column mapping)
            clustering_cols: list[str] = clustering_of(snap) or []
        except DeltaError:
            clustering_cols = []
        size = files.column("size").to_pylist() if files.num_rows else []
        row = {
            "format": "delta",
            "id": md.id,
            "name": self._catalog_name or md.name,
            "description": md.description,
            "location": location_uri(self._table.location),
            "createdAt": _millis(md.createdTime),
            "lastModified": _millis(last[0].get("timestamp")) if last else None,
            "partitionColumns": list(md.partitionColumns),
            "clusteringColumns": clustering_cols,
            "numFiles": files.num_rows,
            "sizeInBytes": int(sum(s or 0 for s in size)),
            "properties": list(md.configuration.items()),
            "minReaderVersion": snap.protocol.minReaderVersion,
            "minWriterVersion": snap.protocol.minWriterVersion,
            "tableFeatures": features,
            **_health_columns(snap),
            **_iceberg_columns(snap),
        }
        return detail_frame(self._spark, row)

    # ------------------------------------------------------------------------------------ commands

    def vacuum(
        self, retentionHours: float | None = None, *, dryRun: bool = False, enforceRetentionDuration: bool = True
    ) -> DataFrame:
        """Delete files no retained version needs (older than ``retentionHours``, default
        ``delta.deletedFileRetentionDuration``, one week). Returns an empty DataFrame (no columns), as
        delta-spark's ``vacuum`` does; with ``dryRun`` (a deltalog addition) nothing is deleted and the
        DataFrame lists the files that would be, in a ``path`` column.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").vacuum(200, dryRun=True).count()  # doctest: +SKIP
            3
            >>> DeltaTable.forPath(spark, "/data/events").vacuum(200).columns  # doctest: +SKIP
            []
        """
        from deltalog.commands.vacuum import vacuum
        from deltalog.spark.common.conf import retention_check

        if retentionHours is not None:  # as delta-spark: float()'s own ValueError / TypeError for what is no number
            retentionHours = float(retentionHours)
        result = vacuum(
            self._table,
            retention_hours=retentionHours,
            dry_run=dryRun,
            # delta-spark's spark.databricks.delta.retentionDurationCheck.enabled=false lifts the check too
            enforce_retention_duration=enforceRetentionDuration and retention_check(self._spark),
        )
        if not dryRun:
            from pyspark.sql.types import StructType

            return self._spark.createDataFrame([], StructType([]))  # delta-spark returns emptyDataFrame
        root = self._table.store.full_path("")
        paths = [os.path.join(root, p) for p in result.files_deleted]
        return arrow_frame(self._spark, pa.table({"path": pa.array(paths, pa.string())}))

    def maintain(self, dryRun: bool = False, actions: Sequence[str] | None = None) -> DataFrame:
        """What the table's health asks for, done (a deltalog addition; see :mod:`deltalog.maintenance`): compact
        partitions full of small files and purge heavy deletion vectors with Spark's OPTIMIZE / REORG, checkpoint,
        clean up expired log files, VACUUM -- each step its own commit; thresholds from the table's
        ``deltalog.maintenance.*`` properties. ``dryRun`` only plans; ``actions`` limits the steps. One row per
        step: ``action``, ``reason``, ``numFiles``, ``numBytes``, ``status``, ``version``, ``filesDone``,
        ``bytesDone``, ``error``.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").maintain(dryRun=True).select("action").collect()
            ... # doctest: +SKIP
            [Row(action='compact'), Row(action='vacuum')]
        """
        from deltalog.spark.layout.maintain import maintain_frame

        if not isinstance(dryRun, bool):
            raise InvalidArgumentError(f"dryRun needs to be a bool but got '{type(dryRun)}'.",
                                       table=self._table.location)
        return maintain_frame(self._spark, self._table, dry_run=dryRun, actions=actions)

    def restoreToVersion(self, version: int) -> DataFrame:
        """Restore the table to ``version`` in one commit; returns delta-spark's one-row metrics
        DataFrame (``table_size_after_restore``, ``num_of_files_after_restore``, ``num_removed_files``,
        ``num_restored_files``, ``removed_files_size``, ``restored_files_size``).

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").restoreToVersion(3).first().num_restored_files
            ... # doctest: +SKIP
            4
        """
        check_int(version, "version")
        return self._restore(version=version)

    def restoreToTimestamp(self, timestamp: Any) -> DataFrame:
        """Restore the table to the version current at ``timestamp`` (a string ``yyyy-MM-dd[ HH:mm:ss]``, without
        a zone in the session time zone, as delta-spark reads it; deltalog also takes a ``datetime`` / ``date``);
        returns the same metrics DataFrame as :meth:`restoreToVersion`. Anything else is refused with
        delta-spark's ``ValueError``, a string that is no timestamp with its ``DELTA_TIMESTAMP_INVALID``.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").restoreToTimestamp("2024-05-01")  # doctest: +SKIP
        """
        if not isinstance(timestamp, dt.date):
            check_str(timestamp, "timestamp")
        return self._restore(timestamp=self._instant(timestamp, "restoreToTimestamp"))

    def _instant(self, timestamp: Any, option: str) -> Any:
        """``timestamp`` as the instant delta-spark reads (see :mod:`deltalog.spark.common.instants`)."""
        from deltalog.spark.common.instants import session_instant

        try:
            return session_instant(self._spark, timestamp, option=option)
        except InvalidArgumentError:  # the text does not read as a timestamp
            raise timestamp_invalid(timestamp, table=self._table.location) from None

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        """Raise the protocol to ``(readerVersion, writerVersion)`` in one ``UPGRADE PROTOCOL`` commit
        (nothing is committed when the table already has it); versions cannot be lowered.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").upgradeTableProtocol(1, 3)   # doctest: +SKIP
        """
        for name, value in (("readerVersion", readerVersion), ("writerVersion", writerVersion)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"The {name} needs to be an integer but got '{type(value)}'.")
        upgrade_table_protocol(self._table, readerVersion, writerVersion)

    def addFeatureSupport(self, featureName: str) -> None:
        """Add the table feature ``featureName`` to the protocol (``delta.feature.<name> = supported``);
        features deltalog cannot write are refused.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").addFeatureSupport("deletionVectors")  # doctest: +SKIP
        """
        check_str(featureName, "featureName")
        add_feature_support(self._table, featureName)

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        """Drop the table feature ``featureName`` from the protocol (``ALTER TABLE ... DROP FEATURE``):
        its traces are removed first (deletion vectors purged, ...), then the protocol is rewritten; older
        versions are protected by ``checkpointProtection``, or with ``truncateHistory=True`` the log is
        truncated once the traces are older than ``delta.dropFeatureTruncateHistory.retentionDuration``
        (see :mod:`deltalog.commands.drop_feature`).

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").dropFeatureSupport("deletionVectors")  # doctest: +SKIP
        """
        check_str(featureName, "featureName")
        if truncateHistory is not None:
            check_bool(truncateHistory, "truncateHistory")
        self._table.drop_feature(featureName, truncate_history=bool(truncateHistory))

    # ----------------------------------------------------------------------------------------- DML

    def delete(self, condition: Any = None) -> None:
        """Delete the rows where ``condition`` (SQL string or ``Column``; ``None``: every row) holds, in
        one ``DELETE`` commit -- deletion vectors when the table enables them, else copy-on-write. Like
        delta-spark it returns nothing; the metrics are in :meth:`history`.

        Example:
            >>> DeltaTable.forPath(spark, "/data/events").delete("day < '2024-01-01'")  # doctest: +SKIP
        """
        from deltalog.spark.dml import delete

        check_condition(condition)
        delete(self._spark, self.path, self._unaliased(condition))

    def update(self, condition: Any = None, set: Mapping[str, Any] | None = None) -> None:
        """Set columns of the rows where ``condition`` holds (``None``: every row) in one ``UPDATE``
        commit; ``set`` maps column names to SQL expression strings or ``Column`` objects.

        Example:
            >>> DeltaTable.forPath(spark, "/data/t").update("id = 1", {"v": "v + 1"})  # doctest: +SKIP
        """
        from deltalog.spark.dml import update

        # delta-spark checks ``set`` first, then the condition; an empty ``set`` reaches its UPDATE
        mapping = column_mapping(set, "'set'", allow_empty=True)
        check_condition(condition)
        column_mapping(mapping, "'set'")
        values = {k: self._unaliased(v) for k, v in mapping.items()}
        update(self._spark, self.path, self._unaliased(condition), values)

    def _unaliased(self, expression: Any) -> Any:
        """A SQL string naming columns by the :meth:`alias` (``t.id``) as the table's scan names them (``id``),
        as delta-spark resolves them against the aliased table; other values as they are."""
        if not self._alias or not isinstance(expression, str):
            return expression
        from deltalog.spark.catalog.dialect import unqualified_sql

        return unqualified_sql(expression, {self._alias.lower()})

    def merge(self, source: DataFrame, condition: Any) -> MergeBuilder:
        """A merge builder of ``source`` into this table on ``condition`` (SQL string or ``Column``); the
        alias given with :meth:`alias` names the target in the condition and the clauses.

        Example:
            >>> (DeltaTable.forPath(spark, "/data/t").alias("t")
            ...     .merge(updates.alias("s"), "t.id = s.id")
            ...     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())   # doctest: +SKIP
            DataFrame[num_affected_rows: bigint, num_updated_rows: bigint, ...]
        """
        from deltalog.spark.dml import merge

        return merge(self._spark, self.path, source, condition, target_alias=self._alias)  # it checks its arguments

    def optimize(self) -> DeltaOptimizeBuilder:
        """A builder that compacts small files (``executeCompaction``) or Z-orders the table
        (``executeZOrderBy``), optionally in the partitions ``where`` selects; see
        :mod:`deltalog.spark.layout.optimize`.

        Example:
            >>> DeltaTable.forPath(spark, "/data/t").optimize().executeZOrderBy("x", "y")  # doctest: +SKIP
            DataFrame[path: string, metrics: struct<numFilesAdded:bigint,...>]
        """
        from deltalog.spark.layout.optimize import DeltaOptimizeBuilder

        return DeltaOptimizeBuilder(self._spark, self.path)

    # -------------------------------------------------------------------------------------- clone

    def clone(
        self, target: str, isShallow: bool = False, replace: bool = False, properties: Mapping[str, str] | None = None
    ) -> DeltaTable:
        """Clone the table's latest version to ``target``, a path or (as in delta-spark) a catalog table name,
        which is then registered (managed): shallow (a log pointing at this table's files) or deep (the files
        copied); ``replace`` allows an existing table there; ``properties`` override table properties. See
        :mod:`deltalog.commands.clone`.

        Example:
            >>> DeltaTable.forPath(spark, "/data/t").clone("/data/t_dev", isShallow=True)  # doctest: +SKIP
            DeltaTable('/data/t_dev')
            >>> DeltaTable.forPath(spark, "/data/t").clone("dev.t", isShallow=True)        # doctest: +SKIP
        """
        check_clone(target, isShallow, replace, properties)
        return self._clone(target, isShallow, replace, properties)

    def cloneAtVersion(
        self,
        version: int,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """Like :meth:`clone`, of the table as of ``version``.

        Example:
            >>> DeltaTable.forPath(spark, "/data/t").cloneAtVersion(3, "/backup/t")  # doctest: +SKIP
            DeltaTable('/backup/t')
        """
        check_clone(target, isShallow, replace, properties, version=version)
        return self._clone(target, isShallow, replace, properties, version=version)

    def cloneAtTimestamp(
        self,
        timestamp: str,
        target: str,
        isShallow: bool = False,
        replace: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """Like :meth:`clone`, of the table as of ``timestamp`` (``yyyy-MM-dd[ HH:mm:ss]``).

        Example:
            >>> DeltaTable.forPath(spark, "/data/t").cloneAtTimestamp("2024-05-01", "/backup/t")  # doctest: +SKIP
            DeltaTable('/backup/t')
        """
        check_clone(target, isShallow, replace, properties, timestamp=timestamp)
        at = self._instant(timestamp, "cloneAtTimestamp")
        return self._clone(target, isShallow, replace, properties, timestamp=at)

    def _clone(self, target: Any, shallow: Any, replace: Any, properties: Any, **at: Any) -> DeltaTable:
        from deltalog.commands.clone import clone_table

        # the arguments were checked (check_clone) by the public methods
        if _names_a_table(target):  # as delta-spark: a table name registers the clone in the catalog
            from deltalog.spark.catalog.clone import clone_to_catalog
            from deltalog.spark.catalog.entries import TableRef

            clone_to_catalog(self._spark, target, TableRef(self._table.location), shallow=shallow, replace=replace,
                             properties=dict(properties or {}), at=at)
            return DeltaTable.forName(self._spark, target)
        clone_table(self._table, open_table(target), shallow=shallow, replace=replace, properties=properties, **at)
        return DeltaTable(self._spark, target)

    def _restore(self, **target: Any) -> DataFrame:
        from deltalog.commands.restore import restore

        result = restore(self._table, **target)
        row = {
            "table_size_after_restore": result.table_size_after_restore,
            "num_of_files_after_restore": result.num_files_after_restore,
            "num_removed_files": result.num_removed_files,
            "num_restored_files": result.num_restored_files,
            "removed_files_size": result.removed_files_size,
            "restored_files_size": result.restored_files_size,
        }
        return arrow_frame(self._spark, pa.Table.from_pylist([row], schema=_RESTORE_SCHEMA))


def _names_a_table(target: str) -> bool:
    """Whether a clone target is a catalog table name (``db.t``) rather than a path (``/data/t``, ``s3://...``,
    ``./t``: anything with a slash or a scheme).

    Example:
        >>> _names_a_table("dev.events"), _names_a_table("/data/events"), _names_a_table("s3://b/t")
        (True, False, False)
    """
    return not any(c in target for c in "/\\:")


def _iceberg_columns(snap: Any) -> dict[str, Any]:
    """UniForm's Iceberg state for ``detail()`` (:func:`deltalog.uniform.iceberg_state`), nulls without one."""
    from deltalog.uniform import iceberg_state

    state = iceberg_state(snap.store)
    if state is None:
        return {}
    return {"icebergMetadataLocation": state.metadata_location,
            "icebergConvertedDeltaVersion": state.converted_version}


def _health_columns(snap: Any) -> dict[str, Any]:
    """``DESCRIBE DETAIL``'s deltalog columns, from the table's health (its log alone)."""
    from deltalog.health import table_health

    h = table_health(snap, history_depth=0)
    return {
        "numRecords": h.num_rows if not h.files_without_stats else None,
        "numDeletedRecords": h.num_deleted_rows,
        "numFilesWithDeletionVectors": h.dv_files,
        "numSmallFiles": h.num_small_files,
        "commitsSinceCheckpoint": h.commits_since_checkpoint,
    }
