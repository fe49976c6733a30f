"""deltalog's Spark engine: Delta tables read and written by Spark jobs, with the log kept by the kernel.

Spark does the data work -- a parquet scan for reads, ``mapInArrow`` tasks writing parquet for writes --
and deltalog's kernel does everything transactional: snapshots, time travel, file pruning, deletion
vectors, schema enforcement and the commit. This package is the only place deltalog imports pyspark;
``import deltalog`` works without it.

Its packages are floors, each importing only from its own and the ones below (lowest first): ``common``
(what every part shares), ``columns`` (generated, default and identity columns), ``reads`` (scans, file
skipping, deletion vectors on read, change data feed), ``jobs`` (the Spark jobs that write data files),
``layout`` (OPTIMIZE, Z-order, auto compaction), ``writes`` (the DataFrame write, replaceWhere, idempotent
writes, CONVERT), ``dml`` and ``streaming``, ``catalog`` (catalog tables), ``api`` (``DeltaTable`` and its
builders), ``sql`` (the SQL front end); then :mod:`.session` (``configure`` / ``register``), :mod:`.run`
and the public faces :mod:`.tables` and :mod:`.exceptions` (delta-spark's module names).

Example:
    >>> from pyspark.sql import SparkSession
    >>> from deltalog.spark import DeltaTable, configure, read, write
    >>> spark = configure(SparkSession.builder.master("local[2]")).getOrCreate()       # doctest: +SKIP
    >>> write(spark.range(5), "/tmp/t", mode="overwrite")                              # doctest: +SKIP
    >>> spark.read.format("delta").load("/tmp/t").count()                              # doctest: +SKIP
    5
    >>> DeltaTable.forPath(spark, "/tmp/t").history().count()                          # doctest: +SKIP
    1
"""

from __future__ import annotations

from deltalog.spark import exceptions
from deltalog.spark.api.builder import TableBuilder
from deltalog.spark.api.table import DeltaTable, DeltaTableBuilder
from deltalog.spark.common.errors import spark_errors, spark_errors_class
from deltalog.spark.reads.scan import read as _read
from deltalog.spark.session import configure, configure_spark_with_delta_pip, local_session, register, unregister
from deltalog.spark.tables import DeltaColumnBuilder, DeltaMergeBuilder, DeltaOptimizeBuilder
from deltalog.spark.writes.idempotent import idempotent_batch
from deltalog.spark.writes.save import write as _write

# The Spark API raises deltalog's errors as PySpark exceptions too (AnalysisException, ...), so that
# ported ``except`` clauses keep working: see deltalog.spark.common.errors.
# (TableBuilder holds the methods DeltaTableBuilder inherits.)
for _cls in (DeltaTable, DeltaTableBuilder, TableBuilder, DeltaColumnBuilder, DeltaMergeBuilder, DeltaOptimizeBuilder):
    spark_errors_class(_cls)
read = spark_errors(_read)
write = spark_errors(_write)


def _register_running_session() -> None:
    """A session built before ``import deltalog.spark`` (a program that set up Spark first, or a notebook's
    ``spark``) gets the whole of Delta -- ``format("delta")``, Delta's SQL, its workers' interpreter -- as if
    :func:`register` had been called on it; a session built later needs :func:`configure` on its builder (or
    ``register``). Nothing happens where no session runs (a Spark worker, a program that builds one later)."""
    import sys

    if sys.modules.get("pyspark.sql.session") is None:  # no session can run yet (or no pyspark at all)
        return
    from pyspark.sql import SparkSession

    try:
        running = SparkSession.getActiveSession()
    except Exception:  # a Connect client without its packages, a stopped context: nothing to register
        return
    if running is not None:
        register(running)


_register_running_session()

__all__ = [
    "DeltaColumnBuilder",
    "DeltaMergeBuilder",
    "DeltaOptimizeBuilder",
    "DeltaTable",
    "DeltaTableBuilder",
    "configure",
    "configure_spark_with_delta_pip",
    "exceptions",
    "idempotent_batch",
    "local_session",
    "read",
    "register",
    "unregister",
    "write",
]
