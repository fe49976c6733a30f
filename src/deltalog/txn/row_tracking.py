"""Row tracking (writer feature ``rowTracking``): every file added to a table that supports it gets fresh
row ids -- ``baseRowId`` above the table's high-water mark, which the ``delta.rowTracking`` domain
records as ``{"rowIdHighWaterMark": n}`` -- and ``defaultRowCommitVersion``, the version of the commit
that adds it. Both are assigned when the commit file is rendered, so a commit that lost the race to a
concurrent writer is rebased above the winner's mark and numbered with its new version instead of
conflicting (:func:`deltalog.txn.conflicts.check_domains` leaves this domain alone). A file re-added
with a deletion vector keeps the ids it had.

Rows that move to new files keep their ids through the protocol's *materialized* columns (named by
``delta.rowTracking.materializedRowIdColumnName`` / ``...RowCommitVersionColumnName``, stored in the data
files next to the table's columns): Spark's DELETE, UPDATE, MERGE and OPTIMIZE write each moved row's id
(its materialized value, else the old file's ``baseRowId`` plus its row index) and, for rows whose
values did not change, its commit version; updated rows get a null commit version (they change in the new
commit). :func:`materialized_fields` gives the columns; a writer that fills them sets
``Transaction.keeps_row_ids``; the kernel's copy-on-write DELETE and DROP FEATURE's rewrites do the same
(overwrites replace whole files: nothing moves; a Spark ``replaceWhere`` copies rows the way DELETE does).
Commits that would move rows without their ids -- on tables in column mapping ``id`` mode, or without the
materialized names -- are refused, naming the feature; appends, inserts, deletes through deletion vectors,
overwrites and metadata changes commit. New tables that enable row tracking get the materialized column
names delta-spark uses.

Example:
    >>> high_water_mark(None)
    -1
    >>> domain_configuration(41)
    '{"rowIdHighWaterMark":41}'
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.actions import Add, Metadata, Protocol, Remove
from deltalog.protocol.schema import PrimitiveType, StructField, StructType

__all__ = ["DOMAIN", "assign_row_ids", "check_no_moved_rows", "domain_configuration", "high_water_mark",
           "materialized_fields", "tracked_fields", "tracked_schema", "with_materialized_names"]

DOMAIN = "delta.rowTracking"
ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
COMMIT_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"
#: Operations whose new files may hold rows copied from the files they remove.
_MOVING = {"DELETE", "UPDATE", "MERGE", "OPTIMIZE", "REORG"}


def high_water_mark(configuration: str | None) -> int:
    """The ``rowIdHighWaterMark`` of a ``delta.rowTracking`` domain configuration (``-1``: no row yet).

    Example:
        >>> high_water_mark('{"rowIdHighWaterMark": 9}')
        9
    """
    if not configuration:
        return -1
    try:
        return int(json.loads(configuration)["rowIdHighWaterMark"])
    except (ValueError, KeyError, TypeError):
        raise InvalidArgumentError(f"the {DOMAIN} domain is not valid: {configuration[:200]}") from None


def domain_configuration(mark: int) -> str:
    """The ``delta.rowTracking`` domain configuration for high-water mark ``mark``.

    Example:
        >>> domain_configuration(-1)
        '{"rowIdHighWaterMark":-1}'
    """
    return json.dumps({"rowIdHighWaterMark": mark}, separators=(",", ":"))


def _num_records(add: Add, table: str | None) -> int:
    try:
        return int(json.loads(add.stats or "")["numRecords"])
    except (ValueError, KeyError, TypeError):
        raise InvalidArgumentError(
            f"file {add.path} has no numRecords statistic: row tracking needs every added file's row count",
            table=table) from None


def assign_row_ids(adds: Sequence[Add], previous: Mapping[str, Mapping[str, Any]], mark: int, version: int,
                   *, table: str | None = None) -> tuple[list[Add], int]:
    """``adds`` with ``baseRowId`` / ``defaultRowCommitVersion`` filled in and the new high-water mark.

    ``previous`` maps the paths this commit removes to their live ``add`` (a re-added file keeps its ids).

    Example:
        >>> a = Add(path="p", partitionValues={}, size=1, modificationTime=0, dataChange=True,
        ...         stats='{"numRecords": 3}')
        >>> out, mark = assign_row_ids([a], {}, 9, 4)
        >>> (out[0].baseRowId, out[0].defaultRowCommitVersion, mark)
        (10, 4, 12)
    """
    out = []
    for add in adds:
        old = previous.get(add.path)
        base, commit = add.baseRowId, add.defaultRowCommitVersion
        if base is None and old is not None and old.get("baseRowId") is not None:
            base, commit = int(old["baseRowId"]), old.get("defaultRowCommitVersion", commit)
        if base is None:
            base = mark + 1
            mark += _num_records(add, table)
        out.append(replace(add, baseRowId=base, defaultRowCommitVersion=version if commit is None else int(commit)))
    return out, mark


def check_no_moved_rows(operation: Any, adds: Sequence[Add], removes: Sequence[Remove], *,
                        table: str | None = None) -> None:
    """Refuse a commit that may move rows to new files (see the module docstring).

    Example:
        >>> from deltalog.txn.operations import Write
        >>> check_no_moved_rows(Write(mode="Append"), [], [])
    """
    name = getattr(operation, "name", "")
    if name not in _MOVING or not any(r.dataChange is not False or name == "OPTIMIZE" for r in removes):
        return
    removed = {r.path for r in removes}
    if any(a.path not in removed for a in adds):
        raise UnsupportedFeatureError(
            f"{name} would copy rows of this row-tracking table into new files without keeping their row ids: "
            "deltalog keeps them (materialized row-id columns) only on tables that name the materialized columns "
            "and do not use column mapping 'id' mode; deletes with deletion vectors "
            "(delta.enableDeletionVectors=true), appends and overwrites work everywhere -- nothing was "
            "committed", feature="rowTracking", table=table)


def materialized_fields(configuration: Mapping[str, str], mode: str) -> tuple[StructField, StructField] | None:
    """The materialized row-id and row-commit-version columns (``long``, nullable; physical name = name in
    ``name`` mode) of a row-tracking table, or ``None`` when the table has no names for them or uses column
    mapping ``id`` mode (whose files need field ids these columns do not have).

    Example:
        >>> conf = {ROW_ID_COLUMN: "_rid", COMMIT_VERSION_COLUMN: "_rcv"}
        >>> [f.name for f in materialized_fields(conf, "none")]
        ['_rid', '_rcv']
    """
    id_name, version_name = configuration.get(ROW_ID_COLUMN), configuration.get(COMMIT_VERSION_COLUMN)
    if not id_name or not version_name or mode == "id":
        return None
    a, b = (StructField(n, PrimitiveType("long"), True,
                        {"delta.columnMapping.physicalName": n} if mode == "name" else {})
            for n in (id_name, version_name))
    return a, b


def tracked_fields(protocol: Protocol, metadata: Metadata) -> tuple[StructField, StructField] | None:
    """The materialized columns rows moved on this table must carry (``None``: the table does not track
    rows, or its moves cannot keep ids -- see :func:`materialized_fields`).

    Example:
        >>> from deltalog.protocol.actions import Format
        >>> tracked_fields(Protocol(1, 2), Metadata(id="t", format=Format(), schemaString=None)) is None
        True
    """
    from deltalog.protocol.column_mapping import mapping_mode
    from deltalog.protocol.features import writer_features

    if "rowTracking" not in writer_features(protocol):
        return None
    return materialized_fields(metadata.configuration, mapping_mode(metadata.configuration))


def tracked_schema(schema: StructType, tracked: tuple[StructField, StructField] | None) -> StructType:
    """The columns of rows copied to new files: ``schema`` followed by the materialized row-tracking columns
    ``tracked`` (:func:`tracked_fields`), or ``schema`` itself when the table keeps none.

    Example:
        >>> tracked_schema(StructType(()), None).field_names
        []
    """
    return StructType((*schema.fields, *tracked)) if tracked else schema


def with_materialized_names(configuration: Mapping[str, str]) -> dict[str, str]:
    """``configuration`` with the materialized row-id / row-commit-version column names delta-spark uses,
    when row tracking is enabled and they are not set yet.

    Example:
        >>> sorted(with_materialized_names({"delta.enableRowTracking": "true"}))[1]
        'delta.rowTracking.materializedRowCommitVersionColumnName'
    """
    conf = dict(configuration)
    if str(conf.get("delta.enableRowTracking", "")).lower() == "true":
        conf.setdefault(ROW_ID_COLUMN, f"_row-id-col-{uuid.uuid4()}")
        conf.setdefault(COMMIT_VERSION_COLUMN, f"_row-commit-version-col-{uuid.uuid4()}")
    return conf
