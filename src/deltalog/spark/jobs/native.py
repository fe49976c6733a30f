"""Unpartitioned writes with Spark's own parquet writer (no public API).

Moving every row through ``mapInArrow`` (JVM rows → Arrow → a Python worker → pyarrow) costs more
than Spark's whole parquet write; for an unpartitioned table nothing needs Python per row when the
kernel has nothing to check per row. Then the data files are written by ``df.write.parquet`` into a
staging directory inside the table, and the driver

* reads each file's footer (``numRecords``, ``nullCount``, min/max -- a column chunk whose max is NaN
  holds NaN, as parquet-mr orders NaN last, so it gets no bounds),
* renames the files into the table root (same file system: a metadata operation), drops empty ones,
* and hands them to the same commit as the ``mapInArrow`` path.

Appends and overwrites (``deltalog.spark.writes.save``) and the rewrites of DML commands
(:func:`~deltalog.spark.jobs.staged.write_rows`, a one-job MERGE with :func:`observed_rows` and
:func:`write_observed_rows`) use it.

:func:`native_write_ok` decides: unpartitioned, no CHECK constraints, invariants, NOT NULL fields,
generated/identity/default columns or column mapping, the DataFrame's columns are exactly the table's
(names and types, in any order; nullability aside), no explicit ``targetFileSize`` (Spark writes one
file per task) and, when there are ``timestamp`` columns, ``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS``
(the INT96 default cannot hold every timestamp; :func:`deltalog.spark.configure` sets it), no ``variant`` columns,
and on Spark 3.5 no ``void`` ones (its parquet writer refuses them). Anything else takes the ``mapInArrow`` path.

Example:
    >>> native_write_ok(spark, df, plan, explicit_target=False)          # doctest: +SKIP
    True
"""

from __future__ import annotations

import json
import math
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pyarrow.parquet as pq

from deltalog.data.write_files import WrittenFile, stored_columns
from deltalog.data.write_stats import stats_json
from deltalog.protocol.schema import StructType, bare_json
from deltalog.spark.common.compat import PARQUET_VOID, observation_values
from deltalog.spark.common.jvm_calls import observe
from deltalog.spark.jobs.tasks import delete_written
from deltalog.storage import LocalLogStore
from deltalog.txn.constraints import CHAR_VARCHAR_KEY

__all__ = [
    "ObservedRows", "native_columns_ok", "native_rows_ok", "native_table_ok", "native_write_ok", "observed_rows",
    "stored_rows", "write_native", "write_observed_rows",
]

_STAGING = "_deltalog_staging_"
_TS_CONF = "spark.sql.parquet.outputTimestampType"
_FIELD_KEYS = ("delta.invariants", "delta.generationExpression", "CURRENT_DEFAULT", CHAR_VARCHAR_KEY)


def _by_name(fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {str(f.get("name")): bare_json(f.get("type")) for f in fields}


def _walk(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def _needs_row_checks(schema_json: Any) -> bool:
    for node in _walk(schema_json):
        if not isinstance(node, dict) or "name" not in node or "type" not in node:
            continue
        if node.get("nullable", True) is False:
            return True
        meta = node.get("metadata") or {}
        if any(k in meta for k in _FIELD_KEYS) or any(str(k).startswith("delta.identity.") for k in meta):
            return True
    return False


def native_write_ok(spark: Any, df: Any, plan: Any, *, explicit_target: bool) -> bool:
    """True when ``df`` can be written with Spark's parquet writer (see the module docstring); ``plan`` is
    the kernel's write plan (``deltalog.arrow.write.WritePlan``).

    Example:
        >>> native_write_ok(spark, spark.range(3), plan, explicit_target=False)   # doctest: +SKIP
        True
    """
    if explicit_target or plan.predicate is not None:
        return False
    return native_rows_ok(spark, df, plan.metadata, plan.schema)


def native_rows_ok(spark: Any, df: Any, metadata: Any, schema: StructType) -> bool:
    """True when ``df``'s rows can be written as data files of a table with ``metadata`` (its ``schema``,
    which may be evolving) by Spark's parquet writer: :func:`native_write_ok` without a write plan, for the
    rewrites of DML commands; a table with its own ``delta.targetFileSize`` keeps the ``mapInArrow`` tasks,
    which split files at that size. :func:`native_table_ok` and :func:`native_columns_ok`.

    Example:
        >>> native_rows_ok(spark, spark.range(3), snapshot.metadata, snapshot.schema)   # doctest: +SKIP
        True
    """
    return native_table_ok(spark, metadata, schema) and native_columns_ok(df, schema)


def native_columns_ok(df: Any, schema: StructType, *, written: int | None = None) -> bool:
    """What :func:`native_rows_ok` asks of the rows: ``df`` has the columns of ``schema`` (in any order) with
    the same types, nullability aside. ``written``: only ``df``'s first that many columns are written (the
    others are dropped before the write).

    Example:
        >>> native_columns_ok(spark.range(3).selectExpr("id", "id AS x"), schema, written=1)  # doctest: +SKIP
        True
    """
    try:
        data_json = df.schema.jsonValue()
    except Exception:
        return False
    data_fields = (data_json.get("fields") or [])[:written]
    table_fields = json.loads(schema.to_json()).get("fields") or []
    return len(data_fields) == len(table_fields) and _by_name(data_fields) == _by_name(table_fields)


def native_table_ok(spark: Any, metadata: Any, schema: StructType) -> bool:
    """What :func:`native_rows_ok` asks of the table alone (no DataFrame analysed): unpartitioned, no
    ``delta.targetFileSize``, no constraints, column mapping or per-row checks, no variant (nor void, where
    Spark's parquet writer lacks it), timestamps written as ``TIMESTAMP_MICROS``.

    Example:
        >>> native_table_ok(spark, snapshot.metadata, snapshot.schema)                  # doctest: +SKIP
        True
    """
    md = metadata
    conf = md.configuration
    if md.partitionColumns or "delta.targetFileSize" in conf:
        return False
    if any(k.startswith("delta.constraints.") for k in conf):
        return False
    if conf.get("delta.columnMapping.mode", "none").lower() != "none":
        return False
    table_json = json.loads(schema.to_json())
    if _needs_row_checks(table_json):
        return False
    kinds = {
        v for n in _walk(table_json) if isinstance(n, dict)
        for k, v in n.items() if k in ("type", "elementType", "keyType", "valueType") and isinstance(v, str)
    }
    if any(k.startswith("variant") for k in kinds) or (not PARQUET_VOID and "void" in kinds):
        return False
    if "timestamp" in kinds:
        try:
            wanted = str(spark.conf.get(_TS_CONF, "INT96")).upper()
        except Exception:
            return False
        if wanted != "TIMESTAMP_MICROS":
            return False
    return True


def _nan_columns(md: pq.FileMetaData) -> set[tuple[str, ...]]:
    """Float column chunks whose bound is NaN (parquet-mr sorts NaN last, so max is NaN iff one is there)."""
    out: set[tuple[str, ...]] = set()
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        for c in range(rg.num_columns):
            col = rg.column(c)
            st = col.statistics
            if st is None or not st.has_min_max:
                continue
            for bound in (st.min, st.max):
                if isinstance(bound, float) and math.isnan(bound):
                    out.add(tuple(col.path_in_schema.split(".")))
    return out


def _data_files(staging: str) -> list[str]:
    out: list[str] = []
    for root, dirs, names in os.walk(staging):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        out.extend(os.path.join(root, n) for n in names if n.endswith(".parquet") and not n.startswith(("_", ".")))
    return sorted(out)


def stored_rows(df: Any, schema: StructType) -> Any:
    """``df`` (the table's columns, in any order) as the files hold them: the stored columns of ``schema`` in
    its order and spelling (void columns, only nulls, are left out, as delta-spark writes them).

    Example:
        >>> stored_rows(df.select("v", "id"), schema).columns                # doctest: +SKIP
        ['id', 'v']
    """
    quoted = ["`" + f.name.replace("`", "``") + "`" for f in stored_columns(schema).fields]
    return df.selectExpr(*[f"{q} AS {q}" for q in quoted])  # Spark SQL: one Py4J call per column fewer


def write_native(df: Any, store: LocalLogStore, schema: StructType, *, stored: bool = False) -> list[WrittenFile]:
    """Write ``df`` (the table's columns; ``stored``: already :func:`stored_rows`) into new data files of an
    unpartitioned table with Spark's parquet writer; returns the files (nothing is committed). Failed jobs
    leave nothing behind.

    Example:
        >>> [f.num_records for f in write_native(df, store, schema)]         # doctest: +SKIP
        [500, 500]
    """
    staging_rel = f"{_STAGING}{uuid.uuid4().hex}"
    staging = store.full_path(staging_rel)
    schema = stored_columns(schema)
    ordered = df if stored else stored_rows(df, schema)
    files: list[WrittenFile] = []
    try:
        ordered.write.mode("error").parquet(staging)  # "error": Spark Connect knows no "errorifexists"
        for path in _data_files(staging):
            md = pq.read_metadata(path)
            if md.num_rows == 0:
                continue  # Spark writes one empty file for an empty DataFrame; a Delta table needs none
            name = os.path.basename(path)
            if os.path.exists(store.full_path(name)):
                name = f"{uuid.uuid4().hex[:8]}-{name}"
            os.rename(path, store.full_path(name))
            info = store.stat(name)
            files.append(
                WrittenFile(
                    path=quote(name, safe="/=-_.~"),
                    rel_path=name,
                    partition_values={},
                    size=info.size,
                    num_records=md.num_rows,
                    stats=stats_json(md, schema, nan_columns=_nan_columns(md)),
                    modification_time=info.modification_time,
                )
            )
    except BaseException:
        delete_written(store, files)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return files


@dataclass(frozen=True)
class ObservedRows:
    """Rows to write, chosen from a frame whose every row a Spark observation counts in the same job
    (:func:`observed_rows`): the observation and the rows, already :func:`stored_rows`."""

    observation: Any
    rows: Any


def observed_rows(
    df: Any, metrics: list[Any], rows: Callable[[Any], Any], schema: StructType
) -> ObservedRows:
    """``rows(df)`` (the rows to write, chosen from ``df``; they go out as the stored columns of ``schema``, see
    :func:`stored_rows`, so ``df`` may carry more) with ``metrics`` -- aggregate columns over every row of ``df`` --
    observed: planned only, no job runs (:func:`write_observed_rows` writes them).

    Example:
        >>> planned = observed_rows(frame, [F.count(F.when(F.col("hit"), 1)).alias("hits")],
        ...                         lambda f: f.filter("keep").select("id", "v"), schema)     # doctest: +SKIP
    """
    from pyspark.sql import Observation

    observation = Observation(f"deltalog_{uuid.uuid4().hex}")
    chosen = rows(observe(df, observation, *metrics))
    return ObservedRows(observation, stored_rows(chosen, schema))


def write_observed_rows(
    planned: ObservedRows, store: LocalLogStore, schema: StructType
) -> tuple[list[WrittenFile], dict[str, Any]]:
    """:func:`write_native` of the planned rows, with their metrics counted by the same job. Returns the files
    (nothing is committed) and the metrics' values by name.

    Example:
        >>> files, seen = write_observed_rows(planned, store, schema)                 # doctest: +SKIP
        >>> seen["hits"]                                                              # doctest: +SKIP
        12
    """
    files = write_native(planned.rows, store, schema, stored=True)
    try:
        return files, observation_values(planned.observation)
    except BaseException:
        delete_written(store, files)
        raise
