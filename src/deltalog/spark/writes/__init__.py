"""Writing DataFrames to Delta tables: ``write`` (:mod:`.save`: append, overwrite, schema evolution,
generated / default / identity columns), ``replaceWhere`` (:mod:`.replace_where`), Spark's own parquet
writer where the table allows it (:mod:`.native`), idempotent writes (:mod:`.idempotent`) and
``CONVERT TO DELTA`` (:mod:`.convert`).

May import: the kernel and the floors below: :mod:`deltalog.spark.common`, :mod:`~deltalog.spark.columns`,
:mod:`~deltalog.spark.reads`, :mod:`~deltalog.spark.jobs`, :mod:`~deltalog.spark.layout`.
"""
