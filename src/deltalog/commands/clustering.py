"""Liquid clustering (writer feature ``clustering``, with ``domainMetadata``): a table's clustering columns
live in the ``delta.clustering`` metadata domain as ``{"clusteringColumns": [[physical, path], ...]}``;
``OPTIMIZE`` clusters the table's files by them (Z-order in deltalog's Spark engine) and marks the files it
writes with ``clusteringProvider = "liquid"``. Appends need nothing special.

Rules, as delta-spark has them: at most :data:`MAX_COLUMNS` columns, each an existing column (nested
fields by dotted path) of a type with min/max statistics, among the columns statistics are collected
for; a clustered table is not partitioned; clustering columns cannot be dropped. ``CLUSTER BY NONE``
keeps the domain with an empty list. Two transactions that both write the domain conflict
(:func:`deltalog.txn.conflicts.check_domains`), and OPTIMIZE re-writes it so that a concurrent
``CLUSTER BY`` change makes it retry instead of clustering by stale columns.

Example:
    >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
    >>> schema = StructType((StructField("id", PrimitiveType("long")), StructField("day", PrimitiveType("date"))))
    >>> clustering_domain(schema, ["day"], partition_columns=[], configuration={})
    '{"clusteringColumns":[["day"]]}'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalog.commands.optimize_plan import orderable, stats_columns
from deltalog.errors import CorruptLogError, InvalidArgumentError
from deltalog.protocol.schema import StructField, StructType, physical_name

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.commit import CommitResult
    from deltalog.txn.handle import TableHandle

__all__ = ["CLUSTERING_DOMAIN", "MAX_COLUMNS", "PROVIDER", "cluster_by", "clustering_columns", "clustering_domain",
           "clustering_of"]

CLUSTERING_DOMAIN = "delta.clustering"
#: delta-spark's limit on the number of clustering columns.
MAX_COLUMNS = 4
#: ``add.clusteringProvider`` of files written clustered.
PROVIDER = "liquid"


def _resolve(schema: StructType, column: str, table: str | None) -> list[StructField]:
    chain: list[StructField] = []
    struct: Any = schema
    for part in column.split("."):
        if not isinstance(struct, StructType):
            raise InvalidArgumentError(f"[DELTA_CLUSTER_BY_INVALID_COLUMN] clustering column {column!r}: "
                                       f"{chain[-1].name} is not a struct", table=table)
        found = next((f for f in struct.fields if f.name.lower() == part.lower()), None)
        if found is None:
            raise InvalidArgumentError(
                f"[DELTA_COLUMN_NOT_FOUND] clustering column {column!r} is not in the table "
                f"(columns: {schema.field_names})", table=table)
        chain.append(found)
        struct = found.type
    return chain


def clustering_domain(
    schema: StructType, columns: Sequence[str], *, partition_columns: Sequence[str],
    configuration: Mapping[str, str], table: str | None = None,
) -> str:
    """The ``delta.clustering`` domain configuration for ``columns`` (logical names, dotted for nested
    fields), after checking them against delta-spark's rules; an empty list is ``CLUSTER BY NONE``.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
        >>> schema = StructType((StructField("m", PrimitiveType("string")),))
        >>> clustering_domain(schema, ["m"], partition_columns=["m"], configuration={})
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: [DELTA_CLUSTER_BY_WITH_PARTITIONED_BY] a table cannot be both \
clustered and partitioned (partition columns ['m'])
    """
    if isinstance(columns, str) or not all(isinstance(c, str) and c for c in columns):
        raise InvalidArgumentError(f"clustering columns must be a list of column names, got {columns!r}", table=table)
    if columns and partition_columns:
        raise InvalidArgumentError(
            f"[DELTA_CLUSTER_BY_WITH_PARTITIONED_BY] a table cannot be both clustered and partitioned "
            f"(partition columns {list(partition_columns)})", table=table)
    if len(columns) > MAX_COLUMNS:
        raise InvalidArgumentError(
            f"[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS] at most {MAX_COLUMNS} clustering columns, got {len(columns)}: "
            f"{list(columns)}", table=table)
    if len({c.lower() for c in columns}) != len(columns):
        raise InvalidArgumentError(f"clustering columns repeat: {list(columns)}", table=table)
    mode = configuration.get("delta.columnMapping.mode", "none").lower()
    with_stats = {c.lower() for c in stats_columns(schema, partition_columns, configuration)}
    paths = []
    for column in columns:
        chain = _resolve(schema, column, table)
        logical = ".".join(f.name for f in chain)
        if not orderable(chain[-1].type):
            raise InvalidArgumentError(
                f"[DELTA_CLUSTERING_COLUMN_MISSING_STATS] clustering column {logical!r} has type "
                f"{chain[-1].type}, which has no min/max statistics", table=table)
        if chain[0].name.lower() not in with_stats:
            raise InvalidArgumentError(
                f"[DELTA_CLUSTERING_COLUMN_MISSING_STATS] clustering column {logical!r} is not among the columns "
                "statistics are collected for (delta.dataSkippingNumIndexedCols / delta.dataSkippingStatsColumns)",
                table=table)
        paths.append([physical_name(f, mode) for f in chain])
    return json.dumps({"clusteringColumns": paths}, separators=(",", ":"))


def clustering_columns(schema: StructType, configuration: Mapping[str, str], domain: str | None, *,
                       table: str | None = None) -> list[str] | None:
    """The table's clustering columns (logical dotted names) from its ``delta.clustering`` domain, ``[]``
    after ``CLUSTER BY NONE``, ``None`` when the table was never clustered.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType, StructField, StructType
        >>> schema = StructType((StructField("id", PrimitiveType("long")),))
        >>> clustering_columns(schema, {}, '{"clusteringColumns":[["id"]]}')
        ['id']
    """
    if domain is None:
        return None
    try:
        paths = json.loads(domain)["clusteringColumns"]
    except (ValueError, KeyError, TypeError):
        raise CorruptLogError(f"the {CLUSTERING_DOMAIN} domain is not valid: {domain[:200]}", table=table) \
            from None
    mode = configuration.get("delta.columnMapping.mode", "none").lower()
    out = []
    for path in paths:
        struct: Any = schema
        names = []
        for part in path:
            found = next((f for f in (struct.fields if isinstance(struct, StructType) else ())
                          if physical_name(f, mode) == part), None)
            if found is None:
                raise CorruptLogError(f"clustering column {'.'.join(path)} of the {CLUSTERING_DOMAIN} domain is "
                                        "not in the schema", table=table)
            names.append(found.name)
            struct = found.type
        out.append(".".join(names))
    return out


def clustering_of(snapshot: Snapshot) -> list[str] | None:
    """The clustering columns of ``snapshot``'s table (``None``: not clustered; ``[]``: ``CLUSTER BY NONE``).

    Example:
        >>> clustering_of(deltalog.Table("/data/events").snapshot())                    # doctest: +SKIP
        ['day', 'user_id']
    """
    return clustering_columns(snapshot.schema, snapshot.properties, snapshot.domain_metadata(CLUSTERING_DOMAIN),
                              table=snapshot.table)


def cluster_by(table: TableHandle, columns: Sequence[str] | None, *, clock: Callable[[], int] | None = None
               ) -> CommitResult:
    """Change the table's clustering columns in one ``CLUSTER BY`` commit (``ALTER TABLE ... CLUSTER BY``);
    ``None`` or ``[]`` is ``CLUSTER BY NONE``. A partitioned table cannot be clustered; files already
    written are not rewritten (the next OPTIMIZE clusters them).

    Example:
        >>> cluster_by(deltalog.Table("/data/events"), ["day"]).operation               # doctest: +SKIP
        'CLUSTER BY'
    """
    from deltalog.txn.operations import ClusterBy
    from deltalog.txn.transaction import start_transaction

    snapshot = table.snapshot()
    new = list(columns or [])
    config = clustering_domain(snapshot.schema, new, partition_columns=snapshot.partition_columns,
                               configuration=snapshot.properties, table=table.location)
    old = clustering_of(snapshot)
    if old is None and snapshot.partition_columns:
        raise InvalidArgumentError(
            f"[DELTA_ALTER_TABLE_CLUSTER_BY_ON_PARTITIONED_TABLE_NOT_ALLOWED] the table is partitioned by "
            f"{list(snapshot.partition_columns)}; a partitioned table cannot be clustered", table=table.location)
    options: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        options["clock"] = clock
    txn = start_transaction(table, ClusterBy(old=tuple(old or ()), new=tuple(
        ".".join(f.name for f in _resolve(snapshot.schema, c, table.location)) for c in new)), **options)
    txn.set_domain_metadata(CLUSTERING_DOMAIN, config)
    return txn.commit()
