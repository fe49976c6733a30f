"""``write_table``: write Arrow (or pandas) data to a Delta table through a transaction.

The data is conformed to the table's schema (:mod:`deltalog.data.write_schema`), checked against
NOT NULL columns, column invariants and CHECK constraints (:mod:`deltalog.txn.constraints`), written as
parquet files (:mod:`deltalog.data.write_files`) and committed with ``add`` (and, for overwrites,
``remove``) actions by :class:`deltalog.txn.transaction.Transaction`. If anything fails before the
commit, the data files written so far are deleted (best effort); a crash in between leaves only
unreferenced files, which vacuum removes later.

Modes: ``"append"``; ``"overwrite"`` (all live files, or with ``predicate`` -- ``(column, op, value)``
conditions or a SQL condition, like Spark's ``replaceWhere`` -- only the matching ones: whole partitions
when the predicate names partition columns only, else the matching rows, their files' other rows written
again (:mod:`deltalog.arrow.replace_rows`); rows outside
the predicate are refused); ``"error"`` (the table must not exist); ``"ignore"`` (do nothing if it
exists).

``properties`` follow the rules of ``SET TBLPROPERTIES`` (:func:`deltalog.commands.properties.plan_properties`):
``delta.*`` keys are validated and stored under their canonical spelling, unknown ``delta.*`` keys are
refused, ``delta.feature.*`` / ``delta.minReaderVersion`` / ``delta.minWriterVersion`` upgrade the
protocol, other keys are free-form. CHECK constraints (``delta.constraints.<name>``) may be given when
the write creates the table (its rows are checked like any others); an existing table gets new ones
with :meth:`deltalog.Table.add_constraint`, which checks the rows already there.

Example:
    >>> import pyarrow as pa
    >>> res = write_table("/tmp/doc-table", pa.table({"id": [1, 2]}), mode="overwrite")  # doctest: +SKIP
    >>> res.version, res.num_files                                                      # doctest: +SKIP
    (0, 1)
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow.replace_rows import (
    InsertChanges,
    RowPredicate,
    checked_batches,
    commit_replacing_rows,
    insert_changes,
    row_predicate,
)
from deltalog.commands.clustering import CLUSTERING_DOMAIN, clustering_domain, clustering_of
from deltalog.commands.properties import PropertyChange, plan_properties
from deltalog.data.filters import sql_filter
from deltalog.data.write_files import DEFAULT_TARGET_FILE_SIZE, DataFileWriter, WrittenFile
from deltalog.data.write_schema import SchemaRemedies, resolve_schema
from deltalog.errors import DeltaError, InvalidArgumentError, SchemaError, TableNotFoundError
from deltalog.protocol.actions import Format, Metadata, Protocol
from deltalog.protocol.column_mapping import mapping_mode, with_column_mapping
from deltalog.protocol.conform import to_logical
from deltalog.protocol.iceberg_compat import compat_version
from deltalog.protocol.schema import ArrayType, MapType, StructType, geo_spec, parse_schema, type_string
from deltalog.storage import LogStore
from deltalog.table import Table
from deltalog.txn.constraints import check_expressions, check_table_constraints
from deltalog.txn.defaults import default_columns, fill_defaults
from deltalog.txn.generated import fill_generated, generated_columns
from deltalog.txn.identity import IdentityGenerator, with_high_water_marks
from deltalog.txn.operations import Write
from deltalog.txn.predicates import ReadPredicate, columns_of
from deltalog.txn.transaction import CommitResult, RetryPolicy, Transaction
from deltalog.txn.writer_features import (
    check_append_only,
    check_never_writable,
    check_writable,
    is_true,
    upgrade_protocol,
)

__all__ = ["MODES", "TableExistsError", "WriteResult", "write_table"]

#: Accepted values of ``mode``.
MODES = ("append", "overwrite", "error", "ignore")
_SCHEMA_MODES = (None, "merge", "overwrite")
OP_MODES = {"append": "Append", "overwrite": "Overwrite", "error": "ErrorIfExists", "ignore": "Ignore"}


class TableExistsError(DeltaError):
    """``mode="error"`` and the table already exists.

    Example:
        >>> str(TableExistsError("table already exists (version 3)", table="/data/t"))
        'table already exists (version 3) [table /data/t]'
    """


@dataclass(frozen=True)
class WriteResult:
    """What :func:`write_table` did. ``skipped`` is true for ``mode="ignore"`` on an existing table
    and for idempotent writes whose ``txn`` version was already committed (``skip_reason`` says which).

    Example:
        >>> WriteResult(version=0, skipped=True, skip_reason="table exists").skipped
        True
    """

    version: int
    skipped: bool = False
    skip_reason: str | None = None
    num_files: int = 0
    num_rows: int = 0
    num_bytes: int = 0
    num_removed_files: int = 0
    files: tuple[str, ...] = ()
    commit: CommitResult | None = None
    operation_metrics: Mapping[str, str] = field(default_factory=dict)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# ------------------------------------------------------------------------------------------- input


def _batches(data: Any) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """Schema and batches of a pyarrow Table, RecordBatch(Reader), iterable of batches or pandas frame."""
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    module = type(data).__module__
    if module.startswith("pandas"):
        table = pa.Table.from_pandas(data, preserve_index=False)
        return table.schema, iter(table.to_batches())
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, iter(reader)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        it = iter(data)
        first = next(it, None)
        if first is None:
            raise InvalidArgumentError("the iterable of record batches is empty: there is no schema to write")
        if not isinstance(first, pa.RecordBatch):
            raise InvalidArgumentError(f"data iterables must yield pyarrow.RecordBatch, got {type(first).__name__}")

        def chain() -> Iterator[pa.RecordBatch]:
            yield first
            yield from it

        return first.schema, chain()
    raise InvalidArgumentError(
        "data must be a pyarrow Table, RecordBatch, RecordBatchReader, an iterable of RecordBatches or a "
        f"pandas DataFrame, got {type(data).__name__}"
    )


# ---------------------------------------------------------------------------------------- planning


def check_partition_columns(schema: StructType, partition_by: Sequence[str], table: str) -> None:
    names = schema.field_names
    for c in partition_by:
        if c not in names:
            raise InvalidArgumentError(f"partition column {c!r} is not in the data (columns: {names})", table=table)
        ftype = schema.field(c).type
        if isinstance(ftype, (StructType, ArrayType, MapType)):
            raise InvalidArgumentError(f"partition column {c!r} must have a primitive type", table=table)
        if geo_spec(ftype) is not None:
            raise InvalidArgumentError(f"partition column {c!r} has the geospatial type {type_string(ftype)}, which "
                                       "has no partition value form; partition by another column", table=table)
    if len(set(partition_by)) != len(partition_by):
        raise InvalidArgumentError(f"partition columns repeat: {list(partition_by)}", table=table)
    if partition_by and len(partition_by) == len(names):
        raise InvalidArgumentError("a table cannot be partitioned by all of its columns", table=table)


def _new_metadata(
    schema: StructType,
    partition_by: Sequence[str],
    configuration: Mapping[str, str],
    name: str | None,
    description: str | None,
    created: int,
) -> Metadata:
    return Metadata(
        id=str(uuid.uuid4()),
        format=Format(),
        schemaString=schema.to_json(),
        partitionColumns=tuple(partition_by),
        configuration=dict(configuration),
        name=name,
        description=description,
        createdTime=created,
    )


def _predicate_mask(data: pa.Table, predicate: ReadPredicate) -> pa.ChunkedArray[Any] | pa.Array[Any]:
    mask: Any = None
    for cond in predicate.conditions:
        col = data.column(cond.column)
        value = cond.value
        if cond.op in ("in", "not in"):
            hit: Any = pc.is_in(col, value_set=pa.array(list(value), col.type))
            if cond.op == "not in":
                hit = pc.invert(hit)
        else:
            fn = {
                "=": pc.equal,
                "!=": pc.not_equal,
                "<": pc.less,
                "<=": pc.less_equal,
                ">": pc.greater,
                ">=": pc.greater_equal,
            }[cond.op]
            hit = fn(col, pa.scalar(value, col.type))
        hit = pc.fill_null(hit, False)
        mask = hit if mask is None else pc.and_(mask, hit)
    assert mask is not None
    result: pa.ChunkedArray[Any] | pa.Array[Any] = mask
    return result


@dataclass
class WritePlan:
    snapshot: Any
    metadata: Metadata
    schema: StructType
    metadata_changed: bool
    predicate: ReadPredicate | None
    #: A protocol to stage (explicit ``delta.feature.*`` / protocol versions among the properties);
    #: ``None``: the transaction's automatic upgrade for the metadata suffices.
    protocol: Protocol | None = None
    #: The ``delta.clustering`` domain to write (a new clustered table), or ``None``.
    clustering: str | None = None


_CONSTRAINTS = "delta.constraints."


def _property_change(properties: Mapping[str, str] | None, snapshot: Any, loc: str) -> PropertyChange | None:
    """The ``properties`` validated and applied as ``SET TBLPROPERTIES`` does; a CHECK constraint is
    accepted only when the table is created (or when the table already has it, unchanged)."""
    if properties is None:
        return None
    old = dict(snapshot.metadata.configuration) if snapshot is not None else None
    change = plan_properties(properties, configuration=old, table=loc, allow_constraints=True)
    if old is not None:
        have = {k.lower(): v for k, v in old.items() if k.lower().startswith(_CONSTRAINTS)}
        for key, sql in change.properties.items():
            if not key.startswith(_CONSTRAINTS) or have.get(key) == sql:
                continue
            name = key[len(_CONSTRAINTS) :]
            why = (
                f"the table's CHECK constraint {name} is ({have[key]}); change it with "
                f"Table.drop_constraint({name!r}) and then Table.add_constraint({name!r}, {sql!r})"
                if key in have
                else f"add it with Table.add_constraint({name!r}, {sql!r}) (ADD CONSTRAINT)"
            )
            raise InvalidArgumentError(
                f"table property {key} cannot be set by a write to an existing table: the rows already in it "
                f"would not be checked against the constraint; {why}, which checks every existing row",
                table=loc,
            )
    return change


def _check_new_constraints(change: PropertyChange | None, schema: StructType, loc: str) -> None:
    """Refuse CHECK constraints that cannot be evaluated on the table's columns, even without rows."""
    if change is None:
        return
    new = {f"CHECK constraint {k[len(_CONSTRAINTS) :]}": v for k, v in change.properties.items()
           if k.startswith(_CONSTRAINTS)}
    if new:
        check_expressions(schema.to_arrow_schema().empty_table(), new, table_name=loc)


def plan_write(
    table: Table,
    snapshot: Any,
    arrow_schema: pa.Schema,
    *,
    mode: str,
    partition_by: Sequence[str] | None,
    schema_mode: str | None,
    predicate: Sequence[Sequence[Any]] | str | None,
    properties: Mapping[str, str] | None,
    name: str | None,
    description: str | None,
    clock: Callable[[], int],
    replace: bool = False,
    cluster_by: Sequence[str] | None = None,
    remedies: SchemaRemedies | None = None,
    declared: StructType | None = None,
) -> WritePlan:
    """What a write commits: schema, partitioning, properties, protocol. ``replace`` (``REPLACE TABLE`` /
    ``CREATE OR REPLACE``): the table's properties become exactly ``properties``, as when it was created.
    ``remedies``: how the caller's API merges or replaces a schema, for the advice of a mismatch error.
    ``declared``: the new schema as given (field metadata kept: comments, generated and identity columns),
    for a table created or whose schema is replaced, instead of the one ``arrow_schema`` spells."""
    remedies = remedies or SchemaRemedies()
    loc = table.location
    change = _property_change(properties if not replace else dict(properties or {}), None if replace else snapshot,
                              loc)
    if snapshot is None:
        schema = declared if declared is not None else \
            resolve_schema(StructType(), arrow_schema, "overwrite", table=loc)[0]
        parts = list(partition_by or [])
        check_partition_columns(schema, parts, loc)
        _check_new_constraints(change, schema, loc)
        conf = change.configuration if change is not None else {}
        md = with_column_mapping(_new_metadata(schema, parts, conf, name, description, clock()), None, table=loc)
        schema = parse_schema(md.schemaString or "")  # ids and physical names, when column mapping is on
        protocol = change.protocol(None, md, table=loc) if change is not None and change.changes_protocol else None
        clustering = clustering_domain(schema, list(cluster_by), partition_columns=parts, configuration=conf,
                                       table=loc) if cluster_by else None
        return WritePlan(None, md, schema, True, _read_predicate(predicate, md, loc), protocol, clustering)
    old = snapshot.metadata
    table_schema: StructType = snapshot.schema
    widen = is_true(snapshot.metadata.configuration, "delta.enableTypeWidening")  # wider data widens the column
    if declared is not None and schema_mode == "overwrite":
        schema, changed = declared, declared.to_json() != table_schema.to_json()
    else:
        schema, changed = resolve_schema(table_schema, arrow_schema, schema_mode, table=loc, widen=widen,
                                         remedies=remedies)
    parts = list(old.partitionColumns)
    if partition_by is not None and list(partition_by) != parts:
        if schema_mode != "overwrite":
            raise InvalidArgumentError(
                f"the table is partitioned by {parts}, not {list(partition_by)}; to change the partitioning "
                f"write with {remedies.overwrite}",
                table=loc,
            )
        parts = list(partition_by)
        changed = True
    check_partition_columns(schema, parts, loc)
    _check_new_constraints(change, schema, loc)
    conf = change.configuration if change is not None else dict(old.configuration)
    if replace:
        conf = dict(change.configuration) if change is not None else {}
    meta_changed = (
        changed
        or conf != dict(old.configuration)
        or (name is not None and name != old.name)
        or (description is not None and description != old.description)
    )
    md = old
    if meta_changed:
        md = Metadata(
            id=old.id,
            format=old.format,
            schemaString=schema.to_json(),
            partitionColumns=tuple(parts),
            configuration=conf,
            name=name if name is not None else old.name,
            description=description if description is not None else old.description,
            createdTime=old.createdTime,
        )
    if meta_changed:  # new columns (or a new mode) get column ids and physical names
        md = with_column_mapping(md, old, table=loc, replacing=replace)
        schema = parse_schema(md.schemaString or "")
    protocol = None
    if change is not None and change.changes_protocol:
        protocol = change.protocol(snapshot.protocol, md, table=loc)
        protocol = protocol if protocol != snapshot.protocol else None
    clustering = None
    if cluster_by is not None:
        have = clustering_of(snapshot) or []
        if [c.lower() for c in cluster_by] != [c.lower() for c in have]:
            if not replace and schema_mode != "overwrite":
                raise InvalidArgumentError(
                    f"[DELTA_CLUSTERING_COLUMNS_MISMATCH] the table is clustered by {have}, not {list(cluster_by)}; "
                    "change it with ALTER TABLE ... CLUSTER BY (Table.cluster_by)", table=loc)
            clustering = clustering_domain(schema, list(cluster_by), partition_columns=parts,
                                           configuration=md.configuration, table=loc)
    return WritePlan(snapshot, md, schema, meta_changed, _read_predicate(predicate, md, loc), protocol, clustering)


def _read_predicate(predicate: Sequence[Sequence[Any]] | str | None, md: Metadata, loc: str) -> ReadPredicate | None:
    if predicate is None:
        return None
    if isinstance(predicate, str):  # a SQL condition: its terms must say all of it
        conditions, rest = sql_filter(predicate, parse_schema(md.schemaString or ""), table=loc)
        if rest is not None:
            raise InvalidArgumentError(
                f"overwrite predicate {predicate!r} must be comparisons of partition columns with literals "
                "(=, !=, <, <=, >, >=, IN, BETWEEN) joined by AND",
                table=loc,
            )
        predicate = [(c.column, c.op, c.value) for c in conditions]
    cols = columns_of(md.schemaString, partition_columns=md.partitionColumns)
    pred = ReadPredicate.of(list(predicate), cols)
    for c in pred.conditions:
        if c.column not in md.partitionColumns:
            raise InvalidArgumentError(
                f"overwrite predicate column {c.column!r} is not a partition column "
                f"(partition columns: {list(md.partitionColumns)})",
                table=loc,
            )
    return pred


def sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, decimal.Decimal)):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex().upper()}'"
    if isinstance(value, (dt.date, dt.datetime)):
        return f"'{value.isoformat(sep=' ') if isinstance(value, dt.datetime) else value.isoformat()}'"
    text = str(value).replace("'", "''")
    return f"'{text}'"


def _predicate_sql(predicate: Sequence[Sequence[Any]]) -> list[str]:
    out = []
    for column, op, value in predicate:
        if str(op).lower() in ("in", "not in"):
            text = "(" + ", ".join(sql_literal(v) for v in value) + ")"
        else:
            text = sql_literal(value)
        out.append(f"{column} {op} {text}")
    return out


# ------------------------------------------------------------------------------------------- write


def write_table(
    location: str | os.PathLike[str],
    data: Any,
    *,
    mode: str = "error",
    partition_by: Sequence[str] | None = None,
    schema_mode: str | None = None,
    predicate: Sequence[Sequence[Any]] | str | None = None,
    txn: tuple[str, int] | None = None,
    properties: Mapping[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    user_metadata: str | None = None,
    store: LogStore | None = None,
    storage_options: Mapping[str, Any] | None = None,
    clock: Callable[[], int] = _now_ms,
    retry: RetryPolicy | None = None,
    cluster_by: Sequence[str] | None = None,
) -> WriteResult:
    """Write ``data`` (pyarrow Table/RecordBatchReader/batches, pandas DataFrame) to the Delta table
    at ``location``; see the module docstring for modes and ``properties``.

    ``cluster_by`` makes the table a liquid-clustered one when the write creates it (see
    :mod:`deltalog.commands.clustering`); on an existing table it must name its clustering columns.

    ``location`` may be an object-store URI (``s3://``, ``az://``, ``abfss://``, ``gs://``, ...);
    ``storage_options`` configure it as in :class:`~deltalog.table.Table`.

    ``txn=(app_id, version)`` makes the write idempotent: when the table already holds that version
    (or a newer one) for ``app_id`` nothing is written and the result says ``skipped``.

    ``retry`` bounds the commit loop (:class:`~deltalog.txn.commit.RetryPolicy`; default 20 attempts
    with exponential backoff): each time another writer took the version first and no logical conflict
    was found, the commit is retried at the next version. ``RetryPolicy(max_attempts=1)`` fails at
    once with :class:`~deltalog.txn.commit.CommitFailedError` (or the conflict exception) instead;
    the data files written are deleted either way.

    Example:
        >>> import pyarrow as pa
        >>> from deltalog.storage import InMemoryLogStore
        >>> store = InMemoryLogStore("memory://write-doc")
        >>> res = write_table("memory://write-doc", pa.table({"d": ["a"], "x": [1]}), mode="append",
        ...                   partition_by=["d"], properties={"delta.appendOnly": "TRUE", "owner": "etl"},
        ...                   retry=RetryPolicy(max_attempts=3), store=store)
        >>> res.version, dict(Table("memory://write-doc", store=store).snapshot().properties)
        (0, {'delta.appendOnly': 'true', 'owner': 'etl'})
    """
    where = os.fspath(location)
    if mode not in MODES:
        raise InvalidArgumentError(f"unknown write mode {mode!r}; valid modes are {list(MODES)}", table=where)
    if schema_mode not in _SCHEMA_MODES:
        raise InvalidArgumentError(
            f"unknown schema_mode {schema_mode!r}; valid: {list(_SCHEMA_MODES)}", table=where
        )
    if schema_mode == "overwrite" and mode != "overwrite":
        raise InvalidArgumentError('schema_mode="overwrite" needs mode="overwrite"', table=where)
    if predicate is not None and mode != "overwrite":
        raise InvalidArgumentError(
            'predicate= selects the files an overwrite replaces; it needs mode="overwrite"', table=where
        )
    if txn is not None and (len(txn) != 2 or not isinstance(txn[0], str) or not isinstance(txn[1], int)):
        raise InvalidArgumentError(f"txn must be (app_id, version), got {txn!r}", table=where)
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise InvalidArgumentError(f"retry must be a RetryPolicy, got {type(retry).__name__}", table=where)
    table = Table(location, store=store, storage_options=storage_options)
    try:
        snapshot = table.snapshot()
    except TableNotFoundError:
        snapshot = None
    if snapshot is not None and mode == "error":
        raise TableExistsError(
            f'table already exists (version {snapshot.version}); use mode="append" or "overwrite", or "ignore" to skip',
            table=table.location,
        )
    if snapshot is not None and mode == "ignore":
        return WriteResult(version=snapshot.version, skipped=True, skip_reason="table exists")
    if snapshot is not None:  # e.g. catalogManaged: refused before the schemas are compared
        check_never_writable(snapshot.protocol, table=table.location, version=snapshot.version)
    arrow_schema, batches = _batches(data)
    identity = IdentityGenerator.for_schema(snapshot.schema, arrow_schema.names, table=table.location) \
        if snapshot is not None and schema_mode != "overwrite" else None
    if identity:  # the identity columns the data leaves out are generated (see deltalog.txn.identity)
        arrow_schema, batches = _with_identity(arrow_schema, batches, identity)
    if snapshot is not None and schema_mode != "overwrite" and default_columns(snapshot.schema):
        arrow_schema, batches = _with_filled(arrow_schema, batches, fill_defaults, snapshot.schema, table.location)
    if snapshot is not None and schema_mode != "overwrite" and generated_columns(snapshot.schema):
        arrow_schema, batches = _with_filled(arrow_schema, batches, fill_generated, snapshot.schema, table.location)
    # a predicate on data columns replaces rows, not whole partitions (see deltalog.arrow.replace_rows)
    rows_replaced = row_predicate(predicate, snapshot, table.location) if mode == "overwrite" else None
    if rows_replaced is not None:
        batches = checked_batches(batches, rows_replaced, table.location)
    plan = plan_write(
        table,
        snapshot,
        arrow_schema,
        mode=mode,
        partition_by=partition_by,
        schema_mode=schema_mode,
        predicate=predicate if rows_replaced is None else None,
        properties=properties,
        name=name,
        description=description,
        clock=clock,
        cluster_by=cluster_by,
    )
    op = Write(
        mode=OP_MODES[mode],
        partition_by=tuple(plan.metadata.partitionColumns),
        predicate=[predicate] if isinstance(predicate, str) else
        _predicate_sql(predicate) if predicate is not None else None,
    )
    transaction = Transaction(
        table.store, snapshot, op, table=table.location, clock=clock, user_metadata=user_metadata, retry=retry,
        owner=table,  # it learns the committed snapshot and runs the maintenance the table asks for
    )
    if txn is not None:
        have = transaction.txn_version(txn[0])
        if have is not None and have >= txn[1]:
            return WriteResult(
                version=snapshot.version if snapshot is not None else -1,
                skipped=True,
                skip_reason=f"txn {txn[0]!r} already at version {have}",
            )
    preflight(transaction, plan, mode, table.location)
    writer = DataFileWriter(
        table.store, plan.schema, plan.metadata.partitionColumns, target_file_size=target_file_size, clock=clock,
        column_mapping=mapping_mode(plan.metadata.configuration),
        iceberg_compat=compat_version(plan.metadata.configuration),
    )
    inserted = insert_changes(table, snapshot, plan.schema, rows_replaced)  # the change data feed's inserts

    def discard() -> None:
        writer.abort()
        if inserted is not None:
            inserted.writer.abort()

    # The files are deleted on failure only while no commit can reference them (see Transaction.discardable).
    with transaction.discard_unless_committed(discard):
        rows = write_batches(writer, batches, plan, table.location, also=inserted.write if inserted else None)
        files = writer.close()
        if identity and identity.high_water_marks():
            plan.metadata = with_high_water_marks(plan.metadata, identity.high_water_marks())
            plan.metadata_changed = True
        if rows_replaced is not None:
            result = _commit_rows(table, transaction, plan, files, rows_replaced, txn, inserted)
        else:
            result = commit_plan(transaction, plan, files, mode, txn)
    return WriteResult(
        version=result.version,
        num_files=len(files),
        num_rows=rows,
        num_bytes=sum(f.size for f in files),
        num_removed_files=int(result.operation_metrics.get("numRemovedFiles", "0")),
        files=tuple(f.path for f in files),
        commit=result,
        operation_metrics=dict(result.operation_metrics),
    )


def _with_identity(
    schema: pa.Schema, batches: Iterator[pa.RecordBatch], identity: IdentityGenerator
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    full = schema
    for col in identity.generated:
        full = full.append(pa.field(col.name, pa.int64()))

    def filled() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from identity.fill(pa.Table.from_batches([batch], schema=schema)).to_batches()

    return full, filled()


def _with_filled(
    schema: pa.Schema, batches: Iterator[pa.RecordBatch], fill: Callable[..., pa.Table], table_schema: StructType,
    loc: str,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """Columns computed batch by batch by ``fill``: column defaults (:mod:`deltalog.txn.defaults`) or
    generated columns (:mod:`deltalog.txn.generated`, computed or checked)."""
    full = fill(schema.empty_table(), table_schema, table=loc).schema

    def filled() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from fill(pa.Table.from_batches([batch], schema=schema), table_schema, table=loc).to_batches()

    return full, filled()


def preflight(txn: Transaction, plan: WritePlan, mode: str, loc: str) -> None:
    """Stage the plan's protocol, and refuse early (before any data file is written) what the commit
    would refuse."""
    base = plan.snapshot.protocol if plan.snapshot is not None else None
    if plan.protocol is not None:
        txn.update_protocol(plan.protocol)
        base = plan.protocol
    check_writable(upgrade_protocol(base, plan.metadata, table=loc), plan.metadata, adds_data=True, table=loc)
    if mode == "overwrite" and plan.snapshot is not None and plan.snapshot.num_files():
        first = plan.snapshot.add_files().column("path")[0].as_py()
        check_append_only(plan.metadata, [(first, True)], table=loc)


def write_batches(writer: DataFileWriter, batches: Iterator[pa.RecordBatch], plan: WritePlan, loc: str, *,
                  also: Callable[[pa.Table], None] | None = None) -> int:
    """Write ``batches`` (checked and converted to the plan's schema) with ``writer``, handing each converted
    chunk to ``also`` too when given; returns the rows written.

    Example:
        >>> write_batches(writer, iter(data.to_batches()), plan, "/data/t")  # doctest: +SKIP
        3
    """
    rows = 0
    target = plan.schema
    for batch in batches:
        if batch.num_rows == 0:
            continue
        chunk = pa.Table.from_batches([batch])
        try:
            logical = to_logical(chunk, target, "none")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaError(f"data cannot be converted to the table schema: {exc}", table=loc) from None
        check_table_constraints(logical, plan.metadata, table_name=loc)
        if plan.predicate is not None:
            mask = _predicate_mask(logical, plan.predicate)
            outside = len(mask) - (pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)
            if outside:
                raise InvalidArgumentError(
                    f"[DELTA_REPLACE_WHERE_MISMATCH] {outside} row(s) of the data do not match the overwrite "
                    f"predicate {plan.predicate.describe()}; an overwrite with a predicate may only write rows "
                    "it replaces -- filter the data or widen the predicate",
                    table=loc,
                )
        writer.write(logical)
        if also is not None:
            also(logical)
        rows += logical.num_rows
    return rows


def _commit_rows(
    table: Table, txn: Transaction, plan: WritePlan, files: list[WrittenFile], predicate: RowPredicate,
    app: tuple[str, int] | None, inserted: InsertChanges | None,
) -> CommitResult:
    """The commit of an overwrite whose predicate names data columns (:mod:`deltalog.arrow.replace_rows`)."""
    if plan.metadata_changed:
        txn.update_metadata(plan.metadata)
    if app is not None:
        txn.set_app_transaction(app[0], app[1])
    return commit_replacing_rows(table, plan.snapshot, txn, files, predicate, inserted)


def commit_plan(
    txn: Transaction, plan: WritePlan, files: list[WrittenFile], mode: str, app: tuple[str, int] | None
) -> CommitResult:
    if plan.metadata_changed:
        txn.update_metadata(plan.metadata)
    if plan.clustering is not None:
        txn.set_domain_metadata(CLUSTERING_DOMAIN, plan.clustering)
    if mode == "overwrite" and plan.snapshot is not None:
        conditions = [(c.column, c.op, c.value) for c in plan.predicate.conditions] if plan.predicate else []
        txn.remove_files(txn.scan_files(conditions))
    for f in files:
        txn.add_file(f.to_add())
    if app is not None:
        txn.set_app_transaction(app[0], app[1])
    return txn.commit()
