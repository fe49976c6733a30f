"""deltalog's SQL front end and catalog tables for Spark (see :mod:`deltalog.spark.sql.frontend`).

Example:
    >>> from deltalog.spark.sql import install
    >>> install()                                                                 # doctest: +SKIP
"""

from __future__ import annotations

from deltalog.spark.sql.frontend import install, run_sql, uninstall

__all__ = ["install", "run_sql", "uninstall"]
