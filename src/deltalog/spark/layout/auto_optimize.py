"""delta-spark's optimized writes and auto compaction, for the writes deltalog runs on Spark.

* **Optimized writes** (writer option ``optimizeWrite``, else the table property
  ``delta.autoOptimize.optimizeWrite``, else the session setting ``spark.databricks.delta.optimizeWrite.enabled``;
  off by default): the rows are shuffled by the table's partition columns before the write job, with Spark's
  ``rebalance`` hint, so adaptive query execution sizes the tasks and each partition value is written by few
  tasks -- fewer, larger files than one file per partition value per input task.
* **Auto compaction** (table property ``delta.autoOptimize.autoCompact``, else the session setting
  ``spark.databricks.delta.autoCompact.enabled``; off by default): after a DataFrame write, a MERGE, an UPDATE
  or a copy-on-write DELETE commits, the partitions it wrote into are compacted in a separate ``OPTIMIZE``
  commit (``auto: true``) when they hold at least ``spark.databricks.delta.autoCompact.minNumFiles`` (50)
  files smaller than ``spark.databricks.delta.autoCompact.minFileSize`` (half of
  ``...autoCompact.maxFileSize``, 128 MiB), into files of up to ``...maxFileSize``. A compaction that fails (a
  concurrent writer won) is logged and skipped: the write it follows has committed.

Example:
    >>> df.write.format("delta").option("optimizeWrite", "true").mode("append").save("/data/events")
    ... # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.errors import DeltaError, InvalidArgumentError
from deltalog.spark.common.compat import rebalance
from deltalog.spark.common.core import parse_bool, parse_int, parse_size, session_setting

__all__ = [
    "AUTO_COMPACT_PROPERTY",
    "OPTIMIZE_WRITE_PROPERTY",
    "after_write",
    "auto_compact",
    "auto_compact_enabled",
    "compact_after",
    "optimize_write_enabled",
    "rebalanced",
    "written_partitions",
]

_LOG = logging.getLogger(__name__)

OPTIMIZE_WRITE_PROPERTY = "delta.autoOptimize.optimizeWrite"
AUTO_COMPACT_PROPERTY = "delta.autoOptimize.autoCompact"
_OPTIMIZE_WRITE_CONF = "spark.databricks.delta.optimizeWrite.enabled"
_AUTO_COMPACT_CONF = "spark.databricks.delta.autoCompact.enabled"
_MIN_FILES_CONF = "spark.databricks.delta.autoCompact.minNumFiles"
_MAX_SIZE_CONF = "spark.databricks.delta.autoCompact.maxFileSize"
_MIN_SIZE_CONF = "spark.databricks.delta.autoCompact.minFileSize"
_MIN_FILES = 50
_MAX_SIZE = 128 * 1024 * 1024


def _flag(value: Any, name: str) -> bool | None:
    """A true/false setting; ``None`` when not set. delta-spark's ``auto`` / ``legacy`` values of the auto
    compaction property mean on."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in ("auto", "legacy"):
        return True
    return parse_bool(text, name)


def optimize_write_enabled(spark: Any, option: Any, configuration: Mapping[str, str]) -> bool:
    """Whether a write shuffles its rows first: the writer option, else the table property, else the session.

    Example:
        >>> optimize_write_enabled(spark, "true", {})                                  # doctest: +SKIP
        True
    """
    for value, name in ((option, "optimizeWrite"),
                        (configuration.get(OPTIMIZE_WRITE_PROPERTY), OPTIMIZE_WRITE_PROPERTY),
                        (session_setting(spark, _OPTIMIZE_WRITE_CONF), _OPTIMIZE_WRITE_CONF)):
        flag = _flag(value, name)
        if flag is not None:
            return flag
    return False


def rebalanced(df: Any, partition_columns: Sequence[str]) -> Any:
    """``df`` with Spark's ``rebalance`` hint on the partition columns (round-robin when there are none).

    Example:
        >>> rebalanced(df, ["day"])                                                    # doctest: +SKIP
        DataFrame[id: bigint, day: date]
    """
    present = {c.lower() for c in df.columns}
    columns = [c for c in partition_columns if c.lower() in present]
    return rebalance(df, columns)


def auto_compact_enabled(spark: Any, configuration: Mapping[str, str]) -> bool:
    """Whether a write is followed by compaction: the table property, else the session setting.

    Example:
        >>> auto_compact_enabled(spark, {"delta.autoOptimize.autoCompact": "true"})       # doctest: +SKIP
        True
    """
    for value, name in ((configuration.get(AUTO_COMPACT_PROPERTY), AUTO_COMPACT_PROPERTY),
                        (session_setting(spark, _AUTO_COMPACT_CONF), _AUTO_COMPACT_CONF)):
        flag = _flag(value, name)
        if flag is not None:
            return flag
    return False


def _size(spark: Any, key: str, default: int) -> int:
    text = session_setting(spark, key)
    if text is None:
        return default
    size = parse_size(text)
    if size is None or size <= 0:
        raise InvalidArgumentError(f"{key} must be a positive size such as 128m, got {text!r}")
    return size


def auto_compact(spark: Any, location: str, partitions: Sequence[Mapping[str, Any]]) -> Any:
    """Compact the small files of ``partitions`` (partition-value maps, as in the log) after a write, when
    there are enough of them; the ``OPTIMIZE`` result, else ``None``.

    Example:
        >>> auto_compact(spark, "/data/events", [{"day": "2024-05-01"}])              # doctest: +SKIP
    """
    from deltalog.spark.common.core import load_snapshot
    from deltalog.spark.layout.optimize import optimize

    min_files = parse_int(session_setting(spark, _MIN_FILES_CONF) or _MIN_FILES, _MIN_FILES_CONF)
    max_size = _size(spark, _MAX_SIZE_CONF, _MAX_SIZE)
    min_size = _size(spark, _MIN_SIZE_CONF, max_size // 2)
    wanted = {_key(p) for p in partitions}
    small = sum(1 for row in load_snapshot(location).add_files().select(["partitionValues", "size"]).to_pylist()
                if _key(dict(row["partitionValues"] or {})) in wanted and int(row["size"] or 0) < min_size)
    if small < max(min_files, 2):
        return None
    try:
        return optimize(spark, location, max_file_size=max_size, min_file_size=min_size,
                        partitions=[dict(p) for p in partitions], auto=True)
    except DeltaError as exc:  # the write committed; a lost race only means the files stay small for now
        _LOG.warning("auto compaction of %s skipped: %s", location, exc)
        return None


def _key(values: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((str(k), v) for k, v in values.items()))


def compact_after(spark: Any, txn: Any, result: Any, files: Sequence[Any]) -> None:
    """Auto compaction after a MERGE, UPDATE or DELETE committed ``files`` (``WrittenFile`` objects), when the
    table (or the session) asks for it.

    Example:
        >>> compact_after(spark, txn, staged.commit(txn, metrics), staged.data)      # doctest: +SKIP
    """
    metadata = txn.metadata
    if not files or result.skipped or metadata is None:
        return
    after_write(spark, txn.table, dict(metadata.configuration), files)


def after_write(spark: Any, location: str, configuration: Mapping[str, str], files: Sequence[Any]) -> None:
    """What a table asks for after a Spark write committed ``files``: auto compaction
    (``delta.autoOptimize.autoCompact``), then deltalog's maintenance (``deltalog.maintenance.afterCommit``,
    :mod:`deltalog.spark.layout.maintain`); neither fails the write.

    Example:
        >>> after_write(spark, "/data/events", snapshot.metadata.configuration, files)   # doctest: +SKIP
    """
    if not files:
        return
    partitions = written_partitions(files)
    if auto_compact_enabled(spark, configuration):
        auto_compact(spark, location, partitions)
    from deltalog.spark.layout.maintain import maintain_after_write

    maintain_after_write(spark, location, configuration, partitions)


def written_partitions(files: Sequence[Any]) -> list[Mapping[str, Any]]:
    """The distinct partition-value maps of written files (``WrittenFile`` objects), in the order written.

    Example:
        >>> written_partitions(files)                                                  # doctest: +SKIP
        [{'day': '2024-05-01'}]
    """
    return list({_key(f.partition_values): f.partition_values for f in files}.values())
