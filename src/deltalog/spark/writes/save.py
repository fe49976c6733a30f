"""Writing a Spark DataFrame to a Delta table: executors write the data files, the driver commits.

The plan is the kernel's (:mod:`deltalog.arrow.write`): schema enforcement and evolution (``mergeSchema``,
``overwriteSchema``; as in delta-spark, columns the DataFrame leaves out are written as nulls and a column
named in another case takes the table's spelling), partitioning, ``replaceWhere``, idempotent ``txnAppId``
/ ``txnVersion``, protocol checks -- all decided on the driver before any job runs, so a schema mismatch
fails without writing anything. (A ``replaceWhere`` condition other than AND-ed comparisons on partition
columns -- data columns, ``OR``, functions -- is run by :mod:`deltalog.spark.writes.replace_where`, which also
rewrites the files it partly matches.) Then one Spark job, of one of two kinds:

* unpartitioned writes the kernel has no row checks for (no CHECK constraints, invariants or NOT NULL
  fields, columns exactly the table's) go through Spark's own parquet writer into a staging directory;
  the driver reads the footers for the statistics and moves the files into the table
  (:mod:`deltalog.spark.jobs.native`) -- moving rows through Python costs more than the whole write;
* otherwise ``df.mapInArrow`` runs the write job of :mod:`deltalog.spark.jobs.tasks` in every task: Arrow batches are
  gathered into large chunks, conformed to the table schema, checked against NOT NULL columns,
  invariants and CHECK constraints (and the ``replaceWhere`` predicate), and written with pyarrow's
  ``ParquetWriter`` by the kernel's :class:`~deltalog.data.write_files.DataFileWriter` (large row
  groups, statistics from the footer, partition columns not stored in the files);
* partitioned writes sort each Spark partition by the partition columns first
  (``sortWithinPartitions``), so each task writes one file per partition value (Hive-style
  directories) and closes it as soon as the next value starts;
* each task yields one small row per file (path, size, partition values, stats); the driver collects
  only those rows and commits them through a kernel transaction (``WRITE`` with the right mode,
  ``isBlindAppend`` for plain appends).

A failed job commits nothing: files written by its failed tasks are deleted by the tasks, files of
tasks that had finished are left unreferenced (as with delta-spark; ``VACUUM`` removes them); a failed
Spark-writer job leaves nothing (its staging directory is removed). Files of a job whose commit fails
are deleted by the driver.

Example:
    >>> from deltalog.spark import write
    >>> write(spark.range(10), "/tmp/t", mode="overwrite").version          # doctest: +SKIP
    0
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.arrow.write import (
    OP_MODES,
    TableExistsError,
    WritePlan,
    WriteResult,
    commit_plan,
    plan_write,
    preflight,
)
from deltalog.data.write_files import DEFAULT_TARGET_FILE_SIZE, WrittenFile
from deltalog.data.write_schema import SchemaRemedies
from deltalog.errors import DeltaError, InvalidArgumentError, SchemaError, TableNotFoundError
from deltalog.protocol.column_mapping import mapping_mode
from deltalog.protocol.schema import parse_schema, physical_name
from deltalog.spark.columns.defaults import with_column_defaults, with_missing_columns
from deltalog.spark.columns.generated import with_generated
from deltalog.spark.columns.identity import (
    BOUND,
    GUARD_MESSAGE,
    identity_for,
    observe_files,
    planned_partitions,
    with_identity,
)
from deltalog.spark.common.conf import (
    REPLACE_WHERE_DATA_COLUMNS_CONF,
    default_properties,
    replace_where_check,
    replace_where_data_columns,
    with_defaults,
    write_defaults,
)
from deltalog.spark.common.core import open_table, option_map, parse_bool, parse_int, session_of
from deltalog.spark.jobs.native import native_write_ok, write_native
from deltalog.spark.jobs.tasks import TaskSpec, delete_written, run_job, task_error
from deltalog.spark.layout.auto_optimize import after_write, optimize_write_enabled, rebalanced
from deltalog.spark.writes.idempotent import session_txn
from deltalog.spark.writes.replace_where import ReplaceWhere, overwrite_where, parse_replace_where
from deltalog.storage import LocalLogStore, LogStore
from deltalog.storage.locations import StoreRef
from deltalog.txn.identity import with_high_water_marks
from deltalog.txn.operations import CreateTableAsSelect, StreamingUpdate, Write
from deltalog.txn.transaction import CommitResult, Transaction
from deltalog.txn.writer_features import check_never_writable

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

__all__ = ["SAVE_MODES", "SPARK_REMEDIES", "WRITE_OPTIONS", "write"]

#: A schema mismatch's advice in the writer's terms (the options below; SQL reaches the same setting
#: through the session).
SPARK_REMEDIES = SchemaRemedies(
    merge='.option("mergeSchema", "true") (or the session setting spark.databricks.delta.schema.autoMerge.'
          'enabled=true)',
    overwrite='.mode("overwrite") and .option("overwriteSchema", "true")',
)

#: Spark save modes (case-insensitive) and the kernel mode each one means.
SAVE_MODES = {
    "append": "append",
    "overwrite": "overwrite",
    "error": "error",
    "errorifexists": "error",
    "default": "error",
    "ignore": "ignore",
}
#: Options the Delta writer accepts (case-insensitive); ``delta.*`` keys are table properties.
WRITE_OPTIONS = (
    "mergeSchema",
    "overwriteSchema",
    "replaceWhere",
    "txnAppId",
    "txnVersion",
    "userMetadata",
    "dataChange",
    "partitionOverwriteMode",
    "targetFileSize",
    "maxRecordsPerFile",
    "optimizeWrite",
    "path",
)
def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# ------------------------------------------------------------------------------------------ options


@dataclass(frozen=True)
class _Options:
    mode: str
    schema_mode: str | None
    where: ReplaceWhere | None
    txn: tuple[str, int] | None
    user_metadata: str | None
    data_change: bool
    properties: dict[str, str]
    target_file_size: int
    explicit_target: bool = False
    max_records: int | None = None
    dynamic: bool = False
    optimize_write: Any = None


def _parse_options(mode: Any, options: Mapping[str, Any], table: str) -> _Options:
    mode_key = "error" if mode is None else str(mode).strip().lower()
    if mode_key not in SAVE_MODES:
        raise InvalidArgumentError(
            f"[INVALID_SAVE_MODE] unknown save mode {mode!r}; valid modes are {sorted(SAVE_MODES)}", table=table
        )
    kmode = SAVE_MODES[mode_key]
    opts = option_map(options, WRITE_OPTIONS, what="Delta write")
    overwrite_schema = parse_bool(opts.get("overwriteSchema", False), "overwriteSchema")
    merge_schema = parse_bool(opts.get("mergeSchema", False), "mergeSchema")
    where = opts.get("replaceWhere")
    replace_where: ReplaceWhere | None = None
    if where is not None:
        if kmode != "overwrite":
            raise InvalidArgumentError(
                f"replaceWhere selects the data an overwrite replaces; it needs mode 'overwrite', not {mode!r}",
                table=table,
            )
        if overwrite_schema:
            raise InvalidArgumentError(
                "overwriteSchema cannot be combined with replaceWhere: the schema of a part of a table cannot be "
                "replaced",
                table=table,
            )
        replace_where = parse_replace_where(where, table)
    schema_mode = None
    if overwrite_schema and kmode == "overwrite":
        schema_mode = "overwrite"
    elif merge_schema:
        schema_mode = "merge"
    app_id, app_version = opts.get("txnAppId"), opts.get("txnVersion")
    if (app_id is None) != (app_version is None):
        raise InvalidArgumentError("txnAppId and txnVersion must be given together", table=table)
    txn = None if app_id is None else (str(app_id), parse_int(app_version, "txnVersion"))
    pom = str(opts.get("partitionOverwriteMode", "static")).strip().lower()
    if pom not in ("static", "dynamic"):
        raise InvalidArgumentError(
            f"[DELTA_INVALID_PARTITION_OVERWRITE_MODE] partitionOverwriteMode must be 'static' or 'dynamic', "
            f"got {opts.get('partitionOverwriteMode')!r}",
            table=table,
        )
    dynamic = pom == "dynamic" and kmode == "overwrite"
    if dynamic and where is not None:
        raise InvalidArgumentError(
            "[DELTA_REPLACE_WHERE_WITH_DYNAMIC_PARTITION_OVERWRITE] replaceWhere and "
            "partitionOverwriteMode=dynamic cannot be used together: choose one way to say what is replaced",
            table=table,
        )
    if dynamic and overwrite_schema:
        raise InvalidArgumentError(
            "[DELTA_OVERWRITE_SCHEMA_WITH_DYNAMIC_PARTITION_OVERWRITE] overwriteSchema cannot be used with "
            "partitionOverwriteMode=dynamic",
            table=table,
        )
    max_records = parse_int(opts["maxRecordsPerFile"], "maxRecordsPerFile") if "maxRecordsPerFile" in opts else None
    properties = {k: str(v) for k, v in opts.items() if k.startswith("delta.")}
    target = parse_int(opts.get("targetFileSize", DEFAULT_TARGET_FILE_SIZE), "targetFileSize")
    if target <= 0:
        raise InvalidArgumentError(f"targetFileSize must be positive, got {target}", table=table)
    return _Options(
        mode=kmode,
        schema_mode=schema_mode,
        where=replace_where,
        txn=txn,
        user_metadata=None if opts.get("userMetadata") is None else str(opts["userMetadata"]),
        data_change=parse_bool(opts.get("dataChange", True), "dataChange"),
        properties=properties,
        target_file_size=target,
        explicit_target="targetFileSize" in opts,
        max_records=max_records if max_records is not None and max_records > 0 else None,
        dynamic=dynamic,
        optimize_write=opts.get("optimizeWrite"),
    )


# ------------------------------------------------------------------------------------------- driver


def _as_nullable(node: Any) -> Any:
    """A Spark schema JSON with every field, element and value nullable (a new table's columns are)."""
    if isinstance(node, dict):
        out = {k: _as_nullable(v) for k, v in node.items()}
        for key in ("nullable", "containsNull", "valueContainsNull"):
            if key in out:
                out[key] = True
        return out
    if isinstance(node, list):
        return [_as_nullable(v) for v in node]
    return node


def _arrow_schema(df: Any, table: str) -> pa.Schema:
    try:
        delta_schema = parse_schema(json.dumps(_as_nullable(df.schema.jsonValue())))
    except DeltaError as exc:
        raise SchemaError(
            f"the DataFrame's schema cannot be stored in a Delta table: {exc.message}", table=table
        ) from None
    return delta_schema.to_arrow_schema()


def _dynamic_overwrite(txn: Transaction, plan: WritePlan, files: list[WrittenFile], opts: _Options) -> CommitResult:
    """``partitionOverwriteMode=dynamic``: replace exactly the partitions the new files fall in. Each
    written partition is recorded as a read predicate (a concurrent write into one of them conflicts,
    one into any other partition does not); a partition with a null value is recorded as a read of the
    whole table, since a predicate cannot name it."""
    parts = list(plan.metadata.partitionColumns)
    mode = mapping_mode(plan.metadata.configuration)  # partitionValues are keyed by physical names
    keys = [physical_name(plan.schema.field(c), mode) for c in parts]
    if plan.metadata_changed:
        txn.update_metadata(plan.metadata)
    written = {tuple(f.partition_values.get(k) for k in keys) for f in files}
    if plan.snapshot is not None and written:
        for key in sorted(written, key=lambda k: [(v is None, v or "") for v in k]):
            if any(v is None for v in key):
                txn.read_whole_table()
            else:
                txn.read_predicate([(c, "=", v) for c, v in zip(parts, key)])
        live = plan.snapshot.add_files()
        rows = live.column("partitionValues").to_pylist()
        hit = [tuple(dict(r or ()).get(k) for k in keys) in written for r in rows]
        doomed = live.filter(pa.array(hit, pa.bool_()))
        txn.read_files(str(x) for x in doomed.column("path").to_pylist())
        txn.remove_files(doomed, data_change=opts.data_change)
    for f in files:
        txn.add_file(f.to_add(data_change=opts.data_change))
    if opts.txn is not None:
        txn.set_app_transaction(*opts.txn)
    return txn.commit()


def _commit_files(
    txn: Transaction, plan: WritePlan, files: list[WrittenFile], opts: _Options
) -> CommitResult:
    if opts.dynamic and plan.metadata.partitionColumns:
        return _dynamic_overwrite(txn, plan, files, opts)
    if opts.data_change:
        return commit_plan(txn, plan, files, opts.mode, opts.txn)
    # dataChange=false (rearranging files without changing rows): same actions, flagged accordingly.
    if plan.metadata_changed:
        txn.update_metadata(plan.metadata)
    if opts.mode == "overwrite" and plan.snapshot is not None:
        conditions = [(c.column, c.op, c.value) for c in plan.predicate.conditions] if plan.predicate else []
        txn.remove_files(txn.scan_files(conditions), data_change=False)
    for f in files:
        txn.add_file(f.to_add(data_change=False))
    if opts.txn is not None:
        txn.set_app_transaction(*opts.txn)
    return txn.commit()


def _write_data(
    df: Any, spark: Any, store: LogStore, plan: WritePlan, opts: _Options, loc: str, *, check: bool = True
) -> list[WrittenFile]:
    """Write ``df`` as new data files of the table (nothing is committed): Spark's parquet writer when it
    can (local tables), else the ``mapInArrow`` job -- whose tasks write through the table's store (object
    stores included) and refuse rows outside the plan's predicate if ``check``."""
    explicit = opts.explicit_target or opts.max_records is not None
    if isinstance(store, LocalLogStore) and native_write_ok(spark, df, plan, explicit_target=explicit):
        try:
            return write_native(df, store, plan.schema)
        except Exception as exc:
            raise task_error(exc, loc) from None
    predicate = plan.predicate if check else None
    spec = TaskSpec(StoreRef.of(store), loc, plan.schema, plan.metadata, predicate, opts.target_file_size,
                     opts.max_records)
    return run_job(df, spec)


def _rebase_identity(frame: Any, base_df: Any, identity: Any) -> Any:
    """``frame`` rebuilt with the identity values bounded by :data:`~deltalog.spark.columns.identity.BOUND`
    (``frame`` is ``base_df`` with the identity columns, possibly re-projected by the caller)."""
    rebuilt = with_identity(base_df, identity, partitions=BOUND)
    if list(frame.columns) == list(rebuilt.columns):
        return rebuilt
    return rebuilt.select(*["`" + c.replace("`", "``") + "`" for c in frame.columns])


def _result(result: CommitResult, files: list[WrittenFile]) -> WriteResult:
    return WriteResult(
        version=result.version,
        num_files=len(files),
        num_rows=sum(f.num_records for f in files),
        num_bytes=sum(f.size for f in files),
        num_removed_files=int(result.operation_metrics.get("numRemovedFiles", "0")),
        files=tuple(f.path for f in files),
        commit=result,
        operation_metrics=dict(result.operation_metrics),
    )


def _fast_path(where: ReplaceWhere | None, parts: Sequence[str], spark: Any, loc: str) -> bool:
    """Whether ``replaceWhere`` takes the kernel's partition overwrite; refuses any other condition when
    delta-spark's ``replaceWhere.dataColumns.enabled`` is off."""
    if where is None or where.on_partitions(parts):
        return where is not None
    if not replace_where_data_columns(spark):
        raise InvalidArgumentError(
            f"replaceWhere {where.text!r} must be AND-ed comparisons of partition columns ({list(parts)}) with "
            f"literals while {REPLACE_WHERE_DATA_COLUMNS_CONF} is false",
            table=loc,
        )
    return False


def write(
    df: Any,
    path: str,
    *,
    mode: str | None = "errorifexists",
    partitionBy: str | Sequence[str] | None = None,
    clusterBy: str | Sequence[str] | None = None,
    _statement: Mapping[str, Any] | None = None,
    _stream: Mapping[str, Any] | None = None,
    **options: Any,
) -> WriteResult:
    """Write ``df`` to the Delta table at ``path`` (created if missing) and commit one version.

    (``_statement`` is for deltalog's SQL front end: the ``kind`` of a create-as-select statement, its
    ``description``, its table ``properties`` (any keys) and whether the table is ``managed``; they name
    the commit as delta-spark does. ``_stream`` is for the Delta streaming sink: the micro-batch's
    ``query_id`` and ``epoch_id``, committed as a ``STREAMING UPDATE``.)

    ``mode``: ``errorifexists`` (default; also ``error``/``default``), ``append``, ``overwrite`` or
    ``ignore``. Options (case-insensitive, values may be strings as with ``.option()``):
    ``mergeSchema``, ``overwriteSchema``, ``replaceWhere`` (with mode ``overwrite``: replace only the
    rows where a condition holds -- a SQL condition on any columns, a Spark ``Column`` or a
    ``(column, op, value)`` list; every row of ``df`` must satisfy it, else
    ``[DELTA_REPLACE_WHERE_MISMATCH]``; see :mod:`deltalog.spark.writes.replace_where`), ``txnAppId`` +
    ``txnVersion`` (idempotent writes), ``userMetadata``, ``dataChange``, ``targetFileSize`` (bytes),
    ``partitionOverwriteMode`` (``dynamic`` with mode ``overwrite`` replaces only the partitions ``df``
    writes into; an unpartitioned table is overwritten whole), ``maxRecordsPerFile`` (rows per file at
    most), ``optimizeWrite`` (shuffle the rows by the partition columns first, for fewer and larger files;
    also the table property ``delta.autoOptimize.optimizeWrite``) and ``delta.*`` table properties. With
    ``delta.autoOptimize.autoCompact`` (or ``spark.databricks.delta.autoCompact.enabled``) the partitions
    written are compacted after the commit when they hold enough small files
    (:mod:`deltalog.spark.layout.auto_optimize`). delta-spark's session settings apply where the options
    are not given (:mod:`deltalog.spark.common.conf`): ``spark.sql.sources.partitionOverwriteMode``,
    ``spark.databricks.delta.schema.autoMerge.enabled``, ``...commitInfo.userMetadata``,
    ``...properties.defaults.*`` (new tables), ``...write.txnAppId`` / ``txnVersion`` and
    ``...replaceWhere.dataColumns.enabled`` / ``...replaceWhere.constraintCheck.enabled``.
    ``clusterBy`` makes a table the write creates liquid-clustered (:mod:`deltalog.commands.clustering`);
    on an existing table it must name the table's clustering columns.

    Example:
        >>> res = write(df, "/data/events", mode="append", partitionBy=["day"],
        ...             txnAppId="nightly", txnVersion=42)               # doctest: +SKIP
        >>> res.version, res.num_files                                   # doctest: +SKIP
        (7, 12)
        >>> write(fixed, "/data/events", mode="overwrite",
        ...       replaceWhere="day = '2024-05-01' AND status = 'late'").operation_metrics["numDeletedRows"]
        ... # doctest: +SKIP
        '12'
    """
    from deltalog.spark.reads.skipping import latest_frame

    df = latest_frame(df)  # a Delta read as its table is now; the write then keeps that one plan
    table = open_table(path, options=options)
    loc = table.location
    spark = session_of(df)
    opts = _parse_options(mode, with_defaults(options, write_defaults(spark)), loc)  # delta-spark's session settings
    parts = [partitionBy] if isinstance(partitionBy, str) else (list(partitionBy) if partitionBy else None)
    if _statement is not None:  # CREATE [OR REPLACE] ... AS SELECT: its PARTITIONED BY (or none) is the partitioning
        parts = parts or []
    try:
        snapshot: Snapshot | None = table.snapshot()
    except TableNotFoundError:
        snapshot = None
    if snapshot is not None and opts.mode == "error":
        raise TableExistsError(
            f"[DELTA_PATH_EXISTS] Cannot write to already existent path {loc} without setting mode "
            "'overwrite' or 'append' (or 'ignore' to skip)",
            table=loc,
        )
    if snapshot is not None and opts.mode == "ignore":
        return WriteResult(version=snapshot.version, skipped=True, skip_reason="table exists")
    if snapshot is not None:
        check_never_writable(snapshot.protocol, table=loc, version=snapshot.version)  # e.g. catalogManaged
    properties = {**opts.properties, **dict((_statement or {}).get("properties") or {})}
    if snapshot is None:  # spark.databricks.delta.properties.defaults.* apply to the tables a write creates
        properties = {**default_properties(spark), **properties}
    txn_id = opts.txn if opts.txn is not None else session_txn(spark)
    where = opts.where
    fast = _fast_path(where, list(snapshot.partition_columns) if snapshot is not None else (parts or []), spark, loc)
    if snapshot is not None and opts.schema_mode != "overwrite":  # the defaulted columns the data leaves out
        df = with_column_defaults(df, snapshot.schema)
    base_df = df
    identity = identity_for(df, snapshot.schema, table=loc) \
        if snapshot is not None and opts.schema_mode != "overwrite" else None
    bound = planned_partitions(df) if identity is not None else 0
    if identity is not None:  # the identity columns the DataFrame leaves out are generated by the tasks
        df = with_identity(df, identity, partitions=bound)
    if snapshot is not None and opts.schema_mode != "overwrite":  # computed / checked generated columns
        df = with_generated(df, snapshot.schema, table=loc)
        df = with_missing_columns(df, snapshot.schema)  # the rest it leaves out: nulls, as delta-spark writes them
    plan = plan_write(
        table,
        snapshot,
        _arrow_schema(df, loc),
        mode=opts.mode,
        partition_by=parts,
        schema_mode=opts.schema_mode,
        predicate=list(where.simple) if fast and where is not None and where.simple is not None else None,
        properties=properties or None,
        name=None,
        description=(_statement or {}).get("description"),
        clock=_now_ms,
        replace=_statement is not None and "REPLACE" in str(_statement.get("kind", "")),
        cluster_by=[clusterBy] if isinstance(clusterBy, str) else (list(clusterBy) if clusterBy else None),
        remedies=SPARK_REMEDIES,
    )
    op: Write = Write(
        mode=OP_MODES[opts.mode],
        partition_by=tuple(plan.metadata.partitionColumns),
        predicate=[where.text] if where is not None else None,
    )
    if _statement is not None:  # CREATE [OR REPLACE] TABLE ... AS SELECT
        op = CreateTableAsSelect(
            mode=op.mode, partition_by=op.partition_by, kind=str(_statement["kind"]),
            description=_statement.get("description"), properties=dict(properties or {}),
            managed=bool(_statement.get("managed")),
            cluster_by=tuple([clusterBy] if isinstance(clusterBy, str) else (clusterBy or ())),
        )
    elif _stream is not None:  # a micro-batch of writeStream.format("delta")
        op = StreamingUpdate(mode=op.mode, partition_by=op.partition_by, query_id=str(_stream["query_id"]),
                             epoch_id=int(_stream["epoch_id"]))
    txn = Transaction(table.store, snapshot, op, table=loc, user_metadata=opts.user_metadata)
    if txn_id is not None:
        have = txn.txn_version(txn_id[0])
        if have is not None and have >= txn_id[1]:
            return WriteResult(
                version=snapshot.version if snapshot is not None else -1,
                skipped=True,
                skip_reason=f"txn {txn_id[0]!r} already at version {have}",
            )
        opts = replace(opts, txn=txn_id)
    preflight(txn, plan, opts.mode, loc)
    store = table.store
    check = where is None or replace_where_check(spark)  # delta-spark's replaceWhere.constraintCheck.enabled

    def write_files(frame: Any, *, check: bool = True) -> list[WrittenFile]:
        if identity is None:
            return _write_data(frame, spark, store, plan, opts, loc, check=check)
        used = bound
        try:
            files = _write_data(frame, spark, store, plan, opts, loc, check=check)
        except Exception as exc:
            if GUARD_MESSAGE not in str(exc) or bound >= BOUND:
                raise
            used = BOUND  # Spark ran more partitions than it planned: again, with a bound no plan reaches
            files = _write_data(_rebase_identity(frame, base_df, identity), spark, store, plan, opts, loc,
                                check=check)
        observe_files(identity, files, partitions=used)
        if identity.high_water_marks():
            plan.metadata = with_high_water_marks(plan.metadata, identity.high_water_marks())
            plan.metadata_changed = True
        return files

    configuration = dict(plan.metadata.configuration)
    if optimize_write_enabled(spark, opts.optimize_write, configuration):  # fewer, larger files
        df = rebalanced(df, list(plan.metadata.partitionColumns))
    if where is not None and not fast:
        result, files = overwrite_where(
            spark, df, table, txn, plan, where, write_files,
            data_change=opts.data_change, app_txn=opts.txn, check=check,
        )
    else:
        files = write_files(df, check=check)

        def discard() -> None:
            delete_written(store, files)

        with txn.discard_unless_committed(discard):
            result = _commit_files(txn, plan, files, opts)
    if files and not result.skipped:
        after_write(spark, loc, configuration, files)  # auto compaction and maintenance, when the table asks
    return _result(result, files)
