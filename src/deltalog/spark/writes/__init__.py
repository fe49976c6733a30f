"""Writing DataFrames to Delta tables: ``write`` (:mod:`.save`: append, overwrite, schema evolution,
generated / default / identity columns; Spark's own parquet writer where the table allows it, through
:mod:`deltalog.spark.jobs.native`), ``replaceWhere`` (:mod:`.replace_where`), idempotent writes
(:mod:`.idempotent`) and ``CONVERT TO DELTA`` (:mod:`.convert`).

May import: the kernel and the floors below: :mod:`deltalog.spark.common`, :mod:`~deltalog.spark.columns`,
:mod:`~deltalog.spark.reads`, :mod:`~deltalog.spark.jobs`, :mod:`~deltalog.spark.layout`.
"""
