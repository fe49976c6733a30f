"""Idempotent MERGE per micro-batch: delta-spark's ``txnAppId`` / ``txnVersion`` session settings.

A ``foreachBatch`` function that MERGEs each micro-batch into a table must not apply a batch twice
when Spark replays it after a failure. As in delta-spark, set the session settings
``spark.databricks.delta.write.txnAppId`` and ``spark.databricks.delta.write.txnVersion`` (the batch
id) before the MERGE: its commit then carries ``txn(appId, version)``, and a MERGE whose table already
has that version (or a newer one) for the app id does nothing. With
``spark.databricks.delta.write.txnVersion.autoReset.enabled=true`` the version is cleared after each
MERGE. :func:`idempotent_batch` sets and restores both settings around a block.

MERGE, UPDATE, DELETE and ``DataFrame`` writes read these settings (a write's ``txnAppId`` /
``txnVersion`` options win; the Delta streaming sink sets its own). Two commands on the *same* table in
one block share the version: the second is skipped -- use one app id per target.

Example:
    >>> def upsert(batch, batch_id):
    ...     with idempotent_batch(batch.sparkSession, app_id="orders-upsert", batch_id=batch_id):
    ...         (DeltaTable.forPath(batch.sparkSession, "/data/orders").alias("t")
    ...          .merge(batch.alias("s"), "t.id = s.id")
    ...          .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    >>> stream.writeStream.foreachBatch(upsert).option("checkpointLocation", "/chk/o").start()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.spark.common.core import parse_bool, parse_int

__all__ = [
    "AUTO_RESET_CONF", "TXN_APP_ID_CONF", "TXN_VERSION_CONF", "claim_session_txn", "idempotent_batch", "session_txn",
]

TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
AUTO_RESET_CONF = "spark.databricks.delta.write.txnVersion.autoReset.enabled"


def _get(spark: Any, key: str) -> str | None:
    value = spark.conf.get(key, None)
    return None if value is None or str(value) == "" else str(value)


def session_txn(spark: Any) -> tuple[str, int] | None:
    """The ``(app id, version)`` the session settings ask the next MERGE to commit with, or ``None``;
    clears the version when auto-reset is on.

    Example:
        >>> spark.conf.set(TXN_APP_ID_CONF, "etl"); spark.conf.set(TXN_VERSION_CONF, "7")  # doctest: +SKIP
        >>> session_txn(spark)                                                             # doctest: +SKIP
        ('etl', 7)
    """
    app_id, version = _get(spark, TXN_APP_ID_CONF), _get(spark, TXN_VERSION_CONF)
    if app_id is None and version is None:
        return None
    if app_id is None or version is None:
        raise InvalidArgumentError(
            f"idempotent MERGE needs both {TXN_APP_ID_CONF} and {TXN_VERSION_CONF} set (only "
            f"{TXN_APP_ID_CONF if app_id is not None else TXN_VERSION_CONF} is)"
        )
    number = parse_int(version, TXN_VERSION_CONF)
    if number < 0:
        raise InvalidArgumentError(f"{TXN_VERSION_CONF} must not be negative, got {number}")
    if parse_bool(_get(spark, AUTO_RESET_CONF) or "false", AUTO_RESET_CONF):
        spark.conf.unset(TXN_VERSION_CONF)
    return app_id, number


@contextmanager
def idempotent_batch(spark: Any, *, app_id: str, batch_id: int) -> Iterator[None]:
    """Within the block, a MERGE commits with ``txn(app_id, batch_id)`` and is skipped when its table
    already has that batch; the session's previous settings are restored afterwards.

    Example:
        >>> with idempotent_batch(spark, app_id="orders-upsert", batch_id=3):          # doctest: +SKIP
        ...     DeltaTable.forPath(spark, "/data/orders").merge(src, "t.id = s.id")...execute()
    """
    if not isinstance(app_id, str) or not app_id:
        raise InvalidArgumentError(f"app_id must be a non-empty string, got {app_id!r}")
    version = parse_int(batch_id, "batch_id")
    saved = {key: _get(spark, key) for key in (TXN_APP_ID_CONF, TXN_VERSION_CONF, AUTO_RESET_CONF)}
    spark.conf.set(TXN_APP_ID_CONF, app_id)
    spark.conf.set(TXN_VERSION_CONF, str(version))
    spark.conf.set(AUTO_RESET_CONF, "false")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def claim_session_txn(spark: Any, txn: Any) -> bool:
    """Attach the session's ``(app id, version)`` (if set) to ``txn``; ``False`` when the table already
    has that version for the app id, so the command must do nothing.

    Example:
        >>> if not claim_session_txn(spark, txn): return "skipped"                   # doctest: +SKIP
    """
    app = session_txn(spark)
    if app is None:
        return True
    have = txn.txn_version(app[0])
    if have is not None and have >= app[1]:
        return False
    txn.set_app_transaction(*app)
    return True
