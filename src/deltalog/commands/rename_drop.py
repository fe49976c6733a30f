"""``RENAME COLUMN`` and ``DROP COLUMNS``: schema changes that column mapping makes possible without
rewriting data (data files keep the columns' physical names; only the schema changes).

Both need ``delta.columnMapping.mode`` ``name`` or ``id`` (switch a table with
``Table.set_properties({"delta.columnMapping.mode": "name"})``). A column is named by its path
(``a`` or ``a.b`` for a field of a struct column, any case). Refused, with nothing committed: a name that
does not exist, a new name already taken, dropping a partition column or every column, and columns that a
CHECK constraint or a generated column's expression uses (change those first). Renaming a partition
column renames it in ``partitionColumns`` too.

Example:
    >>> import deltalog
    >>> t = deltalog.Table("/data/events")                                             # doctest: +SKIP
    >>> rename_column(t, "ts", "event_time").operation                                 # doctest: +SKIP
    'RENAME COLUMN'
    >>> drop_columns(t, ["debug_info"]).operation                                      # doctest: +SKIP
    'DROP COLUMNS'
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.commands.clustering import clustering_of
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.schema import StructField, StructType
from deltalog.txn.constraints import table_constraints
from deltalog.txn.generated import generated_columns
from deltalog.txn.operations import DropColumns, RenameColumn

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.commit import CommitResult
    from deltalog.txn.handle import TableHandle

__all__ = ["column_users", "commit_schema", "drop_columns", "rename_column", "require_column_mapping"]


def require_column_mapping(snapshot: Snapshot, what: str) -> None:
    """Refuse ``what`` (a schema change that renames or drops columns) unless column mapping is on.

    Example:
        >>> require_column_mapping(deltalog.Table("/data/t").snapshot(), "DROP COLUMN")   # doctest: +SKIP
    """
    if snapshot.column_mapping_mode.lower() not in ("name", "id"):
        raise UnsupportedFeatureError(
            f"[DELTA_UNSUPPORTED_{what.replace(' ', '_')}] {what} needs column mapping: data files name columns by "
            "their names, so they would no longer match; enable it first with "
            "Table.set_properties({'delta.columnMapping.mode': 'name'}) (ALTER TABLE ... SET TBLPROPERTIES)",
            feature="columnMapping", table=snapshot.table, version=snapshot.version)


def _split(path: str, table: str) -> list[str]:
    if not isinstance(path, str) or not path.strip():
        raise InvalidArgumentError(f"a column path must be a non-empty string, got {path!r}", table=table)
    parts = [p.strip().strip("`") for p in path.split(".")]
    if any(not p for p in parts):
        raise InvalidArgumentError(f"{path!r} is not a column path (a or a.b)", table=table)
    return parts


def _find(struct: StructType, parts: list[str], table: str, shown: str) -> list[StructField]:
    """The fields along ``parts`` (each a struct field of the previous one's struct type)."""
    out: list[StructField] = []
    current: Any = struct
    for part in parts:
        if not isinstance(current, StructType):
            raise InvalidArgumentError(f"[DELTA_COLUMN_NOT_FOUND] {shown}: {out[-1].name} is not a struct",
                                       table=table)
        found = [f for f in current.fields if f.name.lower() == part.lower()]
        if not found:
            raise InvalidArgumentError(
                f"[DELTA_COLUMN_NOT_FOUND] column {shown} does not exist; the table has {struct.field_names}",
                table=table)
        out.append(found[0])
        current = found[0].type
    return out


def _replace(struct: StructType, chain: list[StructField], new: StructField | None) -> StructType:
    """``struct`` with the last field of ``chain`` replaced by ``new`` (removed when ``None``)."""
    head, rest = chain[0], chain[1:]
    fields: list[StructField] = []
    for f in struct.fields:
        if f is not head:
            fields.append(f)
        elif not rest:
            if new is not None:
                fields.append(new)
        else:
            assert isinstance(f.type, StructType)
            fields.append(dataclasses.replace(f, type=_replace(f.type, rest, new)))
    return StructType(tuple(fields))


def column_users(snapshot: Snapshot, chain: list[StructField]) -> list[str]:
    """CHECK constraints, invariants and generated columns whose expression mentions the column (the first
    field of ``chain``, a column's path from the top).

    Example:
        >>> column_users(snapshot, [snapshot.schema.field("ts")])                       # doctest: +SKIP
        ['generated column day (CAST(ts AS DATE))']
    """
    names = {f.name.lower() for f in chain[:1]}
    out = []
    exprs = dict(table_constraints(snapshot.metadata))
    exprs.update({f"generated column {k}": v for k, v in generated_columns(snapshot.schema).items()})
    for label, sql in exprs.items():
        words = set()
        for quoted, bare in re.findall(r"`([^`]+)`|([A-Za-z_][A-Za-z0-9_]*)", sql):
            words.add((quoted or bare).lower())
        if names & words:
            out.append(f"{label} ({sql})")
    return out


def commit_schema(table: TableHandle, snapshot: Snapshot, op: Any, schema: StructType, partitions: Sequence[str],
                  clock: Callable[[], int] | None) -> CommitResult:
    """Commit ``schema`` and ``partitions`` as the table's new metadata under operation ``op``.

    Example:
        >>> commit_schema(t, t.snapshot(), DropColumns(columns=("a",)), schema, [], None).operation  # doctest: +SKIP
        'DROP COLUMNS'
    """
    from deltalog.txn.transaction import start_transaction

    options: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        options["clock"] = clock
    txn = start_transaction(table, op, **options)
    txn.update_metadata(dataclasses.replace(snapshot.metadata, schemaString=schema.to_json(),
                                            partitionColumns=tuple(partitions)))
    return txn.commit()


def rename_column(
    table: TableHandle, column: str, new_name: str, *, clock: Callable[[], int] | None = None
) -> CommitResult:
    """Rename ``column`` (``a`` or ``a.b``) to ``new_name`` in one ``RENAME COLUMN`` commit (see the module
    docstring).

    Example:
        >>> rename_column(t, "address.zip", "postcode").version                           # doctest: +SKIP
        7
    """
    loc = table.location
    snapshot = table.snapshot()
    require_column_mapping(snapshot, "RENAME COLUMN")
    parts = _split(column, loc)
    if not isinstance(new_name, str) or not new_name.strip() or "." in new_name:
        raise InvalidArgumentError(f"the new column name must be a plain name, got {new_name!r}", table=loc)
    new_name = new_name.strip().strip("`")
    chain = _find(snapshot.schema, parts, loc, column)
    siblings = chain[-2].type.fields if len(chain) > 1 else snapshot.schema.fields  # type: ignore[union-attr]
    if any(f.name.lower() == new_name.lower() and f is not chain[-1] for f in siblings):
        raise InvalidArgumentError(f"[DELTA_DUPLICATE_COLUMNS_FOUND] a column named {new_name!r} already exists "
                                   f"next to {column}", table=loc)
    users = column_users(snapshot, chain)
    if users:
        raise InvalidArgumentError(
            f"[DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE] cannot rename {column}: it is used by {'; '.join(users)}; "
            "drop or change those first", table=loc)
    schema = _replace(snapshot.schema, chain, dataclasses.replace(chain[-1], name=new_name))
    old = chain[-1].name
    partitions = [new_name if len(chain) == 1 and p == old else p for p in snapshot.partition_columns]
    op = RenameColumn(old_path=".".join(f.name for f in chain), new_path=".".join([*(f.name for f in chain[:-1]),
                                                                                  new_name]))
    return commit_schema(table, snapshot, op, schema, partitions, clock)


def drop_columns(
    table: TableHandle, columns: Sequence[str], *, if_exists: bool = False, clock: Callable[[], int] | None = None
) -> CommitResult | None:
    """Drop ``columns`` (paths) in one ``DROP COLUMNS`` commit (see the module docstring); with ``if_exists``
    missing ones are skipped (``None`` when nothing is left to drop).

    Example:
        >>> drop_columns(t, ["debug", "address.line2"]).operation                          # doctest: +SKIP
        'DROP COLUMNS'
    """
    loc = table.location
    if isinstance(columns, str) or not columns:
        raise InvalidArgumentError(f"DROP COLUMNS takes a non-empty list of column paths, got {columns!r}", table=loc)
    snapshot = table.snapshot()
    require_column_mapping(snapshot, "DROP COLUMN")
    schema = snapshot.schema
    dropped: list[str] = []
    for column in columns:
        try:
            chain = _find(schema, _split(column, loc), loc, column)
        except InvalidArgumentError:
            if if_exists:
                continue
            raise
        if len(chain) == 1 and chain[0].name in snapshot.partition_columns:
            raise InvalidArgumentError(
                f"[DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN] {column} is a partition column and cannot be dropped",
                table=loc)
        path = ".".join(f.name for f in chain).lower()
        clustered = [c for c in clustering_of(snapshot) or [] if (c.lower() + ".").startswith(path + ".")]
        if clustered:
            raise InvalidArgumentError(
                f"[DELTA_UNSUPPORTED_DROP_CLUSTERING_COLUMN] cannot drop {column}: the table is clustered by "
                f"{clustered}; change the clustering first (ALTER TABLE ... CLUSTER BY)", table=loc)
        users = column_users(snapshot, chain)
        if users:
            raise InvalidArgumentError(
                f"[DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE] cannot drop {column}: it is used by {'; '.join(users)}; "
                "drop or change those first", table=loc)
        parent = chain[-2].type if len(chain) > 1 else schema
        if isinstance(parent, StructType) and len(parent.fields) == 1:
            raise InvalidArgumentError(
                f"[DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA] cannot drop {column}: it is the only "
                f"{'field of its struct' if len(chain) > 1 else 'column of the table'}", table=loc)
        schema = _replace(schema, chain, None)
        dropped.append(".".join(f.name for f in chain))
    if not dropped:
        return None
    return commit_schema(table, snapshot, DropColumns(columns=tuple(dropped)), schema, snapshot.partition_columns,
                         clock)
