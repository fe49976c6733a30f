"""deltalog's SQL front end for Spark (see :mod:`deltalog.spark.sql.frontend`): Delta statements read with
sqlglot and run by deltalog (table references and time travel in :mod:`.refs`, ``CREATE`` / ``ALTER`` /
``DESCRIBE`` / ``DROP`` in :mod:`.ddl` and :mod:`.alter`, ``INSERT`` / ``DELETE`` / ``UPDATE`` / ``MERGE`` in
:mod:`.dml`, table commands in :mod:`.commands` and :mod:`.table_ops`, views in :mod:`.views`), and the routing
of Spark's catalog calls to Delta tables (:mod:`.routing`, :mod:`.tables`).

May import: every floor below it (the kernel, :mod:`deltalog.spark.common` up to :mod:`deltalog.spark.api`); only
the session set-up (:mod:`deltalog.spark.session`) and the package faces sit above it.

Example:
    >>> from deltalog.spark.sql import install
    >>> install()                                                                 # doctest: +SKIP
"""

from __future__ import annotations

from deltalog.spark.sql.frontend import install, run_sql, uninstall

__all__ = ["install", "run_sql", "uninstall"]
