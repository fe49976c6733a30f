"""delta-spark's session settings that deltalog honours, so ported jobs keep their behaviour.

A writer option or an explicit argument always wins over the session setting, as in delta-spark:

* ``spark.sql.sources.partitionOverwriteMode=dynamic`` -- an ``overwrite`` with ``partitionBy``
  replaces only the partitions written (the ``partitionOverwriteMode`` writer option);
* ``spark.databricks.delta.schema.autoMerge.enabled=true`` -- writes merge new columns into the schema
  (``mergeSchema``) and MERGE evolves the schema (``withSchemaEvolution()``);
* ``spark.databricks.delta.commitInfo.userMetadata`` -- ``userMetadata`` of every commit;
* ``spark.databricks.delta.properties.defaults.<key>`` -- ``delta.<key>`` for tables created;
* ``spark.databricks.delta.retentionDurationCheck.enabled=false`` -- VACUUM accepts a retention below
  ``delta.deletedFileRetentionDuration``;
* ``spark.databricks.delta.write.txnAppId`` / ``txnVersion`` -- idempotent writes and DML
  (:mod:`deltalog.spark.writes.idempotent`);
* ``spark.databricks.delta.replaceWhere.dataColumns.enabled=false`` -- ``replaceWhere`` takes AND-ed
  comparisons on partition columns only (:mod:`deltalog.spark.writes.replace_where`);
* ``spark.databricks.delta.replaceWhere.constraintCheck.enabled=false`` -- the rows an overwrite with
  ``replaceWhere`` writes are not checked against its condition;
* ``spark.sql.sources.default=delta`` -- reads, writes, streams, ``saveAsTable`` / ``writeTo`` / ``toTable``
  and ``CREATE TABLE`` without a format or ``USING`` are Delta (:func:`default_source`), as Spark makes them
  the default source.

Example:
    >>> spark.conf.set(AUTO_MERGE_CONF, "true")                                     # doctest: +SKIP
    >>> write_defaults(spark)                                                       # doctest: +SKIP
    {'mergeSchema': 'true'}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deltalog.spark.common.compat import session_conf
from deltalog.spark.common.core import parse_bool, session_setting

__all__ = [
    "AUTO_MERGE_CONF",
    "DEFAULT_SOURCE_CONF",
    "PARTITION_OVERWRITE_MODE_CONF",
    "PROPERTY_DEFAULTS_PREFIX",
    "REPLACE_WHERE_CHECK_CONF",
    "REPLACE_WHERE_DATA_COLUMNS_CONF",
    "RETENTION_CHECK_CONF",
    "USER_METADATA_CONF",
    "auto_merge",
    "default_properties",
    "default_source",
    "replace_where_check",
    "replace_where_data_columns",
    "retention_check",
    "with_defaults",
    "write_defaults",
]

PARTITION_OVERWRITE_MODE_CONF = "spark.sql.sources.partitionOverwriteMode"
AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
PROPERTY_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."
RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
REPLACE_WHERE_DATA_COLUMNS_CONF = "spark.databricks.delta.replaceWhere.dataColumns.enabled"
REPLACE_WHERE_CHECK_CONF = "spark.databricks.delta.replaceWhere.constraintCheck.enabled"
DEFAULT_SOURCE_CONF = "spark.sql.sources.default"
_HIVE_BY_DEFAULT_CONF = "spark.sql.legacy.createHiveTableByDefault"


def auto_merge(spark: Any) -> bool:
    """``spark.databricks.delta.schema.autoMerge.enabled`` (default false).

    Example:
        >>> auto_merge(spark)                                                       # doctest: +SKIP
        False
    """
    return parse_bool(session_setting(spark, AUTO_MERGE_CONF) or "false", AUTO_MERGE_CONF)


def default_source(spark: Any, given: Any = None, *, create_table: bool = False) -> Any:
    """The format a read or write uses: ``given`` when there is one, else the session's
    ``spark.sql.sources.default`` (Spark's ``parquet`` when unset), as Spark picks it. With ``create_table``
    (``CREATE TABLE`` without ``USING``): ``None`` when ``spark.sql.legacy.createHiveTableByDefault`` makes
    such tables Hive tables.

    Example:
        >>> spark.conf.set("spark.sql.sources.default", "delta")                     # doctest: +SKIP
        >>> default_source(spark), default_source(spark, "csv")                       # doctest: +SKIP
        ('delta', 'csv')
    """
    if given is not None or spark is None:
        return given
    if create_table and (session_setting(spark, _HIVE_BY_DEFAULT_CONF) or "false").strip().lower() == "true":
        return None
    return session_setting(spark, DEFAULT_SOURCE_CONF) or "parquet"


def retention_check(spark: Any) -> bool:
    """``spark.databricks.delta.retentionDurationCheck.enabled`` (default true).

    Example:
        >>> retention_check(spark)                                                  # doctest: +SKIP
        True
    """
    return parse_bool(session_setting(spark, RETENTION_CHECK_CONF) or "true", RETENTION_CHECK_CONF)


def replace_where_data_columns(spark: Any) -> bool:
    """``spark.databricks.delta.replaceWhere.dataColumns.enabled`` (default true).

    Example:
        >>> replace_where_data_columns(spark)                                       # doctest: +SKIP
        True
    """
    value = session_setting(spark, REPLACE_WHERE_DATA_COLUMNS_CONF)
    return parse_bool(value or "true", REPLACE_WHERE_DATA_COLUMNS_CONF)


def replace_where_check(spark: Any) -> bool:
    """``spark.databricks.delta.replaceWhere.constraintCheck.enabled`` (default true).

    Example:
        >>> replace_where_check(spark)                                              # doctest: +SKIP
        True
    """
    return parse_bool(session_setting(spark, REPLACE_WHERE_CHECK_CONF) or "true", REPLACE_WHERE_CHECK_CONF)


def default_properties(spark: Any) -> dict[str, str]:
    """``delta.<key>`` for every ``spark.databricks.delta.properties.defaults.<key>`` setting.

    Example:
        >>> spark.conf.set(PROPERTY_DEFAULTS_PREFIX + "enableChangeDataFeed", "true")  # doctest: +SKIP
        >>> default_properties(spark)                                               # doctest: +SKIP
        {'delta.enableChangeDataFeed': 'true'}
    """
    try:
        settings = session_conf(spark)
    except Exception:
        return {}
    return {
        "delta." + key[len(PROPERTY_DEFAULTS_PREFIX):]: str(value)
        for key, value in settings.items()
        if key.startswith(PROPERTY_DEFAULTS_PREFIX) and len(key) > len(PROPERTY_DEFAULTS_PREFIX)
    }


def write_defaults(spark: Any) -> dict[str, str]:
    """The writer options the session settings imply (``partitionOverwriteMode``, ``mergeSchema``,
    ``userMetadata``).

    Example:
        >>> write_defaults(spark)                                                   # doctest: +SKIP
        {}
    """
    out: dict[str, str] = {}
    mode = session_setting(spark, PARTITION_OVERWRITE_MODE_CONF)
    if mode is not None:
        out["partitionOverwriteMode"] = mode
    if auto_merge(spark):
        out["mergeSchema"] = "true"
    metadata = session_setting(spark, USER_METADATA_CONF)
    if metadata is not None:
        out["userMetadata"] = metadata
    return out


def with_defaults(options: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` plus each default whose name (case-insensitively) the options do not give.

    Example:
        >>> with_defaults({"MergeSchema": "false"}, {"mergeSchema": "true", "userMetadata": "x"})
        {'MergeSchema': 'false', 'userMetadata': 'x'}
    """
    given = {str(k).lower() for k, v in options.items() if v is not None}
    return {**options, **{k: v for k, v in defaults.items() if k.lower() not in given}}
