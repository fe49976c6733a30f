"""delta-spark's Python API: ``DeltaTable`` (:mod:`.table`) and ``DeltaTableBuilder`` /
``DeltaColumnBuilder`` with the protocol methods (:mod:`.builder`). Users import these names from
:mod:`deltalog.spark` or :mod:`deltalog.spark.tables`.

May import: the kernel and every floor below: :mod:`deltalog.spark.common`, ``columns``, ``reads``,
``jobs``, ``layout``, ``writes``, ``dml``, ``catalog``; never :mod:`deltalog.spark.sql`.
"""
