"""The kernel's change data feed reader: the row changes of a version range as one ``pyarrow.Table``.

The plan comes from :mod:`deltalog.feed.changes` (``cdc`` files where a commit has them, whole ``add`` /
``remove`` files and deletion-vector updates otherwise); each planned file is read with the kernel's
reader (column mapping, partition values from the log, columns missing from older files as nulls) and
only its changed rows are kept. The result has the table's columns (schema of the end version), then
``_change_type`` (string), ``_commit_version`` (int64) and ``_commit_timestamp`` (UTC microseconds),
ordered by commit version. No Spark is involved.

Example:
    >>> import deltalog
    >>> changes = deltalog.read_changes("/data/events", starting_version=3, ending_version=5)  # doctest: +SKIP
    >>> changes.column("_change_type").to_pylist()[:2]                                          # doctest: +SKIP
    ['update_preimage', 'update_postimage']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from deltalog.data.filters import matching_rows, normalize_filter
from deltalog.data.read import kept_rows, read_file
from deltalog.errors import InvalidArgumentError, SchemaError
from deltalog.feed.changes import (
    CDF_COLUMNS,
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    ChangeFile,
    iter_commit_changes,
    resolve_range,
)
from deltalog.log.timestamps import TimestampLike
from deltalog.protocol.schema import PrimitiveType, StructField, StructType
from deltalog.snapshot import Snapshot

if TYPE_CHECKING:
    from deltalog.txn.handle import TableHandle

__all__ = ["CDF_ARROW_FIELDS", "change_schema", "changes_by_type", "table_changes"]

#: Arrow fields of the three columns the change data feed adds.
CDF_ARROW_FIELDS = (
    pa.field(CHANGE_TYPE, pa.string()),
    pa.field(COMMIT_VERSION, pa.int64()),
    pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", tz="UTC")),
)


class ChangeFileView(Snapshot):
    """The end snapshot seen with ``_change_type`` as one more data column (how change data files
    store it), so the kernel's file reader reads it like any other column."""

    def __init__(self, base: Snapshot) -> None:
        super().__init__(base.store, base.segment, base.state, table=base.table)
        extra = StructField(CHANGE_TYPE, PrimitiveType("string"), True, {})
        self.__dict__["schema"] = StructType((*base.schema.fields, extra))


def change_schema(snapshot: Snapshot) -> pa.Schema:
    """The Arrow schema of a change feed read at ``snapshot``: its columns, then the three CDF columns.

    A table with a column of one of those names cannot have a change data feed (delta-spark refuses to
    enable it); it is refused here too.

    Example:
        >>> change_schema(snap).names[-3:]                                      # doctest: +SKIP
        ['_change_type', '_commit_version', '_commit_timestamp']
    """
    clash = [n for n in snapshot.schema.field_names if n.lower() in {c.lower() for c in CDF_COLUMNS}]
    if clash:
        raise SchemaError(
            f"column(s) {clash} use names the change data feed reserves ({', '.join(CDF_COLUMNS)}); rename them "
            "to read the change data feed",
            table=snapshot.table, version=snapshot.version,
        )
    return pa.schema([*snapshot.schema.to_arrow_schema(), *CDF_ARROW_FIELDS])


def _mask(view: Snapshot, f: ChangeFile, n: int) -> Any:
    keep = np.ones(n, dtype=bool)
    if f.deletion_vector:
        keep &= kept_rows(view, {"path": f.path, "deletionVector": f.deletion_vector}, n)
    if f.selection_vector:
        keep &= ~kept_rows(view, {"path": f.path, "deletionVector": f.selection_vector}, n)
    return keep


def read_change_file(
    view: Snapshot, f: ChangeFile, version: int, timestamp_ms: int, names: list[str], schema: pa.Schema
) -> pa.Table:
    add = {"path": f.path, "partitionValues": dict(f.partition_values)}
    cols = [*names, CHANGE_TYPE] if f.kind == "cdc" else names
    arrow_logical = view.schema.to_arrow_schema()
    data = read_file(view, add, cols, pa.schema([arrow_logical.field(c) for c in cols]), apply_dv=False)
    if f.deletion_vector or f.selection_vector:
        data = data.filter(pa.array(_mask(view, f, data.num_rows)))
    n = data.num_rows
    if f.kind != "cdc":
        data = data.append_column(CDF_ARROW_FIELDS[0], pa.repeat(pa.scalar(f.change_type, pa.string()), n))
    data = data.append_column(CDF_ARROW_FIELDS[1], pa.array(np.full(n, version, dtype=np.int64)))
    stamp = pa.array(np.full(n, timestamp_ms * 1000, dtype=np.int64)).cast(pa.timestamp("us", tz="UTC"))
    data = data.append_column(CDF_ARROW_FIELDS[2], stamp)
    return data.select(schema.names).cast(schema)


def table_changes(
    t: TableHandle,
    *,
    starting_version: int | str | None = None,
    ending_version: int | str | None = None,
    starting_timestamp: TimestampLike | None = None,
    ending_timestamp: TimestampLike | None = None,
    columns: Sequence[str] | None = None,
    filter: Any = None,
) -> pa.Table:
    """The change data feed of table ``t`` (a :class:`~deltalog.Table`; :func:`deltalog.read_changes` also
    takes a path) for the versions ``starting_version..ending_version`` (inclusive; or by timestamps, see
    :func:`deltalog.feed.changes.resolve_range`; no end means the latest version).

    ``columns`` selects columns (table columns and/or the CDF columns); ``filter`` keeps the rows a condition
    matches (SQL such as ``"_change_type = 'delete' AND id < 10"``, or ``(column, op, value)`` conditions, as
    :meth:`deltalog.Snapshot.to_arrow` takes them, over the table's and the CDF columns; delta-rs's
    ``load_cdf(predicate=...)``). Errors name the rule: no start,
    a start after the latest version, an end before the start, a version without change data
    (:class:`~deltalog.feed.changes.ChangeDataNotRecordedError`).

    Example:
        >>> table_changes(deltalog.Table("/data/events"), starting_version=0).group_by("_change_type").aggregate(
        ...     [("_change_type", "count")]).to_pylist()                            # doctest: +SKIP
        [{'_change_type': 'insert', '_change_type_count': 120}, ...]
    """
    start, end = resolve_range(
        t, starting_version=starting_version, ending_version=ending_version,
        starting_timestamp=starting_timestamp, ending_timestamp=ending_timestamp,
    )
    end_snap = t.snapshot(end)
    schema = change_schema(end_snap)
    if columns is not None:
        unknown = [c for c in columns if c not in schema.names]
        if unknown or isinstance(columns, str):
            raise InvalidArgumentError(
                f"unknown column(s) {unknown or [columns]}; the change data feed has {schema.names}", table=t.location
            )
    keep = normalize_filter(filter, StructType.from_arrow_schema(schema), table=t.location) \
        if filter is not None else None
    view = ChangeFileView(end_snap)
    names = end_snap.schema.field_names
    pieces: list[pa.Table] = []
    start_snap = end_snap if start == end else None
    plan = list(iter_commit_changes(t, start, end, start_snapshot=start_snap))  # every check before any read
    for commit in plan:
        for f in commit.files:
            piece = read_change_file(view, f, commit.version, commit.timestamp, names, schema)
            if keep is not None and piece.num_rows:
                piece = piece.filter(pa.array(matching_rows(piece, *keep)))
            pieces.append(piece)
    result = pa.concat_tables(pieces) if pieces else schema.empty_table()
    return result if columns is None else result.select(list(columns))


def changes_by_type(changes: pa.Table) -> Mapping[str, int]:
    """Row counts per ``_change_type`` of a change feed table (a convenience for checks and logs).

    Example:
        >>> changes_by_type(deltalog.read_changes("/data/events", starting_version=0))        # doctest: +SKIP
        {'insert': 120, 'delete': 3}
    """
    out: dict[str, int] = {}
    for value in changes.column(CHANGE_TYPE).to_pylist():
        out[value] = out.get(value, 0) + 1
    return out
