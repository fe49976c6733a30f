"""delta-spark's ``delta.tables`` names, for ported code: change ``from delta.tables import ...`` to
``from deltalog.spark.tables import ...`` (and ``from delta import configure_spark_with_delta_pip`` to
``from deltalog.spark import configure_spark_with_delta_pip``).

Every public name of delta-spark 4.4's ``delta.tables`` is here, so ``from deltalog.spark.tables import *``
binds what ``from delta.tables import *`` binds: the builders and ``IdentityGenerator``, and the names
delta-spark's module imports for its own use (``SparkSession``, ``DataFrame``, ``Column``, ``functions``,
``StructType``, ``Optional``, ...), which star imports pick up too. The PySpark names are resolved on
first use, so importing this module does not import pyspark.

Example:
    >>> from deltalog.spark.tables import DeltaTable
    >>> DeltaTable.forPath(spark, "/data/events").toDF().count()                     # doctest: +SKIP
    1000
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import (  # noqa: UP035 -- delta-spark's module exports these very names
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    List,
    NoReturn,
    Optional,
    Tuple,
    Union,
    cast,
    overload,
)

from deltalog.spark.api.builder import DeltaColumnBuilder, IdentityGenerator
from deltalog.spark.api.table import DeltaTable, DeltaTableBuilder
from deltalog.spark.dml.merge import MergeBuilder as DeltaMergeBuilder
from deltalog.spark.layout.optimize import DeltaOptimizeBuilder

#: Names delta-spark's ``delta.tables`` takes from PySpark: name -> (module, attribute).
_PYSPARK = {
    "Column": ("pyspark.sql", "Column"),
    "DataFrame": ("pyspark.sql", "DataFrame"),
    "SparkSession": ("pyspark.sql", "SparkSession"),
    "functions": ("pyspark.sql", "functions"),
    "DataType": ("pyspark.sql.types", "DataType"),
    "StructField": ("pyspark.sql.types", "StructField"),
    "StructType": ("pyspark.sql.types", "StructType"),
    "since": ("pyspark", "since"),
    "is_remote": ("pyspark.sql.utils", "is_remote"),
}
#: delta-spark's type aliases (``delta._typing``), built from ``Column`` on first use.
_ALIASES = ("ExpressionOrColumn", "OptionalExpressionOrColumn", "ColumnMapping", "OptionalColumnMapping")


def __getattr__(name: str) -> Any:
    """The PySpark names and delta-spark's type aliases, imported on first use."""
    import importlib

    if name in _PYSPARK:
        module, attr = _PYSPARK[name]
        value = getattr(importlib.import_module(module), attr)
    elif name in _ALIASES:
        expr: Any = Union[str, __getattr__("Column")]  # noqa: UP007 -- delta._typing's spelling
        optional: Any = Optional
        mapping: Any = Dict  # noqa: UP006
        value = {
            "ExpressionOrColumn": expr,
            "OptionalExpressionOrColumn": optional[expr],
            "ColumnMapping": mapping[str, expr],
            "OptionalColumnMapping": optional[mapping[str, expr]],
        }[name]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    # deltalog's classes under delta-spark's names
    "DeltaColumnBuilder", "DeltaMergeBuilder", "DeltaOptimizeBuilder", "DeltaTable", "DeltaTableBuilder",
    "IdentityGenerator",
    # what delta-spark's module imports, which ``from delta.tables import *`` binds as well
    "Any", "Dict", "Iterable", "List", "NoReturn", "Optional", "TYPE_CHECKING", "Tuple", "Union", "cast",
    "dataclass", "overload", *_PYSPARK, *_ALIASES,
]
