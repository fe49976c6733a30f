"""deltalog's Spark engine: Delta tables read and written by Spark jobs, with the log kept by the kernel.

Spark does the data work -- a parquet scan for reads, ``mapInArrow`` tasks writing parquet for writes --
and deltalog's kernel does everything transactional: snapshots, time travel, file pruning, deletion
vectors, schema enforcement and the commit. This package is the only place deltalog imports pyspark;
``import deltalog`` works without it.

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
from deltalog.spark._errors import spark_errors, spark_errors_class
from deltalog.spark.builder import DeltaTableBuilder
from deltalog.spark.idempotent import idempotent_batch
from deltalog.spark.read import read as _read
from deltalog.spark.session import configure, configure_spark_with_delta_pip, local_session, register, unregister
from deltalog.spark.table import DeltaTable
from deltalog.spark.tables import DeltaColumnBuilder, DeltaMergeBuilder, DeltaOptimizeBuilder
from deltalog.spark.write import write as _write

# The Spark API raises deltalog's errors as PySpark exceptions too (AnalysisException, ...), so that
# ported ``except`` clauses keep working: see deltalog.spark._errors.
for _cls in (DeltaTable, DeltaTableBuilder, DeltaColumnBuilder, DeltaMergeBuilder, DeltaOptimizeBuilder):
    spark_errors_class(_cls)
read = spark_errors(_read)
write = spark_errors(_write)

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
