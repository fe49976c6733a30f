"""Copy-on-write: removing the rows a condition matches from the files that hold them.

Shared by ``DELETE`` without deletion vectors (:mod:`deltalog.spark.dml.delete`) and by overwrites with
a ``replaceWhere`` condition (:mod:`deltalog.spark.writes.replace_where`):

* :func:`touched_files` -- one job counts the matching rows per candidate file; a file with no match is
  left alone, a file whose every live row matches goes whole, the others are *partially* matched;
* :func:`write_survivors` -- the rows of the partially matched files that the condition does not
  match (false or null) are written as new data files by the Spark writer, staged for the commit.

The caller removes every touched file and adds the staged files in its own transaction.

Example:
    >>> touched = touched_files(spark, table, snap, candidates, cond)              # doctest: +SKIP
    >>> write_survivors(spark, table, snap, touched.partial, cond, staged)         # doctest: +SKIP
    >>> touched.matched, touched.files.num_rows, touched.partial.num_rows          # doctest: +SKIP
    (42, 3, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.spark.jobs.staged import Staged, check_can_write, count_matches, spark_error, write_rows
from deltalog.spark.reads.target import file_uris, live_rows, target_scan

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.table import Table

__all__ = ["Touched", "matches_per_file", "touched_files", "write_survivors"]

Column = Any  # pyspark.sql.Column


@dataclass(frozen=True)
class Touched:
    """The candidate files holding rows a condition matches (``files``), those of them also holding rows
    it does not match (``partial``, an ``add_files()`` table too), and how many live rows match.

    Example:
        >>> empty = pa.table({"path": pa.array([], pa.string())})
        >>> Touched(empty, empty, 0).matched
        0
    """

    files: pa.Table
    partial: pa.Table
    matched: int


def touched_files(spark: Any, table: Table, snapshot: Snapshot, candidates: pa.Table, condition: Column) -> Touched:
    """Count, in one Spark job, the live rows of each file of ``candidates`` where ``condition`` (never
    null: see :func:`~deltalog.spark.reads.target.condition_column`) holds.

    Example:
        >>> touched_files(spark, table, snap, snap.add_files(), F.lit(True)).partial.num_rows  # doctest: +SKIP
        0
    """
    if candidates.num_rows == 0:
        return Touched(candidates, candidates, 0)
    counts = matches_per_file(spark, snapshot, candidates, condition, table.location)
    uris = file_uris(snapshot, candidates)
    files = candidates.filter(pa.array([u in counts for u in uris], pa.bool_()))
    rows = candidates.to_pylist()
    partial = [
        u in counts and live_rows(snapshot, [r]) > counts[u] for u, r in zip(uris, rows)
    ]
    return Touched(files, candidates.filter(pa.array(partial, pa.bool_())), sum(counts.values()))


def matches_per_file(spark: Any, snapshot: Snapshot, candidates: pa.Table, condition: Column, table: str
                     ) -> dict[str, int]:
    """Live rows of each file of ``candidates`` where ``condition`` holds (one job; files without a match are
    absent), keyed as :func:`~deltalog.spark.reads.target.file_uris`. Files without deletion vectors whose
    sizes tell them apart are counted by Spark's ``_metadata.file_size`` over the read scan (a number per
    file, no per-row path or row index); otherwise by the target scan's file key.

    Example:
        >>> matches_per_file(spark, snap, snap.add_files(), F.col("id") < 10, "/data/t")  # doctest: +SKIP
        {'file:/data/t/part-0.parquet': 10}
    """
    from pyspark.sql import functions as F

    from deltalog.spark.reads.files import uses_native_io
    from deltalog.spark.reads.scan import scan_rows

    sizes = [int(s) for s in candidates.column("size").to_pylist()]
    has_dv = "deletionVector" in candidates.column_names and \
        candidates.column("deletionVector").null_count < candidates.num_rows
    if not has_dv and len(set(sizes)) == len(sizes) and uses_native_io(spark, snapshot):
        by_size = dict(zip(sizes, file_uris(snapshot, candidates), strict=True))
        try:  # the read scan keeps Spark's _metadata column unless it had to join partition values
            frame = (scan_rows(spark, snapshot, candidates).filter(condition)
                     .groupBy(F.col("_metadata.file_size").alias("size")).agg(F.count(F.lit(1)).alias("n")))
        except Exception:
            frame = None
        if frame is not None:
            try:
                rows = frame.collect()
            except Exception as exc:
                raise spark_error(exc, table) from None
            if all(int(r["size"]) in by_size for r in rows):  # Spark took the sizes from the log (or agrees)
                return {by_size[int(r["size"])]: int(r["n"]) for r in rows}
    return count_matches(target_scan(spark, snapshot, candidates, drop_deleted=True), condition, table)


def write_survivors(
    spark: Any, table: Table, snapshot: Snapshot, partial: pa.Table, condition: Column, staged: Staged
) -> int:
    """Write the rows of ``partial`` (files) that ``condition`` does not match as new data files, added
    to ``staged.data``; returns how many rows were copied (nothing is committed).

    Example:
        >>> write_survivors(spark, table, snap, touched.partial, cond, staged)          # doctest: +SKIP
        17
    """
    if partial.num_rows == 0:
        return 0
    from deltalog.spark.reads.row_ids import tracked_fields
    from deltalog.spark.reads.scan import scan_rows

    check_can_write(snapshot)
    if tracked_fields(snapshot) is None:  # nothing travels with the rows: the read scan, no per-row keys
        survivors = scan_rows(spark, snapshot, partial).filter(~condition)
    else:
        survivors = target_scan(spark, snapshot, partial, drop_deleted=True, row_ids=True).filter(~condition)
    files = write_rows(survivors, table, snapshot.schema, snapshot.metadata)
    staged.data.extend(files)
    staged.keeps_row_ids = staged.keeps_row_ids or tracked_fields(snapshot) is not None
    return sum(f.num_records for f in files)
