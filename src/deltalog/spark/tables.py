"""delta-spark's ``delta.tables`` names, for ported code: change ``from delta.tables import ...`` to
``from deltalog.spark.tables import ...`` (and ``from delta import configure_spark_with_delta_pip`` to
``from deltalog.spark import configure_spark_with_delta_pip``).

Example:
    >>> from deltalog.spark.tables import DeltaTable
    >>> DeltaTable.forPath(spark, "/data/events").toDF().count()                     # doctest: +SKIP
    1000
"""

from __future__ import annotations

from deltalog.spark.builder import DeltaColumnBuilder, DeltaTableBuilder, IdentityGenerator
from deltalog.spark.dml.merge import MergeBuilder as DeltaMergeBuilder
from deltalog.spark.optimize import DeltaOptimizeBuilder
from deltalog.spark.table import DeltaTable

__all__ = ["DeltaColumnBuilder", "DeltaMergeBuilder", "DeltaOptimizeBuilder", "DeltaTable", "DeltaTableBuilder",
           "IdentityGenerator"]
