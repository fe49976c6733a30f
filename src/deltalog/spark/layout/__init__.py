"""How a table's data files are laid out: ``OPTIMIZE`` (:mod:`.optimize`: bin compaction, Z-order,
liquid clustering, purging deletion vectors), bin compaction in Arrow tasks (:mod:`.bins`), Z-order
curves (:mod:`.zorder`), and optimized writes and auto compaction after a commit (:mod:`.auto_optimize`).

May import: the kernel and :mod:`deltalog.spark.common`, :mod:`~deltalog.spark.columns`,
:mod:`~deltalog.spark.reads`, :mod:`~deltalog.spark.jobs`.
"""
