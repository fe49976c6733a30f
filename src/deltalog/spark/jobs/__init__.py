"""The Spark jobs that write data files: ``mapInArrow`` tasks writing parquet and returning add actions
(:mod:`.tasks`), Spark's own parquet writer where the table needs no per-row work in Python
(:mod:`.native`: local unpartitioned tables without row checks), the staged rewrite jobs DML, OPTIMIZE and
replaceWhere share (:mod:`.staged`: deletion-vector jobs, rewrites, timers, results), which files a
condition touches and their survivors (:mod:`.rewrite`), and change data files (:mod:`.change_files`).

May import: the kernel and the floors below: :mod:`deltalog.spark.common`, :mod:`~deltalog.spark.columns`,
:mod:`~deltalog.spark.reads`.
"""
