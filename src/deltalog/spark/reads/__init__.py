"""Reading Delta tables with Spark: the scan (:mod:`.scan`: ``read``, ``read_snapshot``, ``scan_rows``),
per-file parquet scans (:mod:`.files`), the file index built from the log (:mod:`.log_index`), file
skipping and the frames it tracks (:mod:`.skipping`, :mod:`.column_sql`, :mod:`.rebind`,
:mod:`.frame_views`), deletion vectors on read (:mod:`.dv_scan`), Hive-style layouts (:mod:`.hive`), row
tracking's ``_metadata`` fields (:mod:`.row_metadata`, :mod:`.row_ids`), the target scan DML and OPTIMIZE
start from (:mod:`.target`), change data feed reads (:mod:`.changes`) and answers from the log without a scan
(:mod:`.log_answers`: ``count()``).

May import: the kernel, :mod:`deltalog.spark.common` and :mod:`deltalog.spark.columns`.
"""
