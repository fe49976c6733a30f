"""deltalog's errors under the names delta-spark's ``delta.exceptions`` module gives them.

Code written against delta-spark catches ``ConcurrentAppendException`` and friends; importing them from
here lets it catch the write conflicts deltalog's Spark API raises, unchanged. As in delta-spark they are
``pyspark.errors.PySparkException`` s (``getCondition()`` is delta-spark's condition, e.g.
``DELTA_CONCURRENT_APPEND``, ``getSqlState()`` is ``2D521``), and each is also a subclass of the kernel's
class of the same name in :mod:`deltalog.errors`, so ``except deltalog.ConcurrentAppendException``
keeps catching them. ``ConcurrentWriteException`` and ``DeltaConcurrentModificationException`` are the
common base class of every conflict (deltalog reports each write/write conflict as one of the narrower
classes). Without pyspark installed the names are the kernel's classes.

Example:
    >>> from deltalog.spark.exceptions import ConcurrentAppendException, DeltaConcurrentModificationException
    >>> issubclass(ConcurrentAppendException, DeltaConcurrentModificationException)
    True
"""

from __future__ import annotations

import importlib.util
from typing import Any

import deltalog.errors as errors
from deltalog.errors import (
    DeltaError,
    InvalidArgumentError,
    SchemaError,
    TableNotFoundError,
    VersionNotFoundError,
)
from deltalog.txn.constraints import ConstraintViolationError

#: delta-spark's conflict names -> the kernel class each one is converted from.
_CONFLICTS = {
    "ConcurrentAppendException": errors.ConcurrentAppendException,
    "ConcurrentDeleteDeleteException": errors.ConcurrentDeleteDeleteException,
    "ConcurrentDeleteReadException": errors.ConcurrentDeleteReadException,
    "ConcurrentModificationException": errors.ConcurrentModificationException,
    "ConcurrentTransactionException": errors.ConcurrentTransactionException,
    "ConcurrentWriteException": errors.ConcurrentModificationException,
    "DeltaConcurrentModificationException": errors.ConcurrentModificationException,
    "MetadataChangedException": errors.MetadataChangedException,
    "ProtocolChangedException": errors.ProtocolChangedException,
}


def __getattr__(name: str) -> Any:
    """The conflict classes, made on first use (pyspark is imported only then)."""
    kernel = _CONFLICTS.get(name)
    if kernel is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if importlib.util.find_spec("pyspark") is None:
        return kernel
    from deltalog.spark.common.errors import spark_class

    made = spark_class(kernel)
    globals()[name] = made
    return made


__all__ = [
    "ConcurrentAppendException",  # noqa: F822 -- made by __getattr__
    "ConcurrentDeleteDeleteException",  # noqa: F822 -- made by __getattr__
    "ConcurrentDeleteReadException",  # noqa: F822 -- made by __getattr__
    "ConcurrentModificationException",  # noqa: F822 -- made by __getattr__
    "ConcurrentTransactionException",  # noqa: F822 -- made by __getattr__
    "ConcurrentWriteException",  # noqa: F822 -- made by __getattr__
    "ConstraintViolationError",
    "DeltaConcurrentModificationException",  # noqa: F822 -- made by __getattr__
    "DeltaError",
    "InvalidArgumentError",
    "MetadataChangedException",  # noqa: F822 -- made by __getattr__
    "ProtocolChangedException",  # noqa: F822 -- made by __getattr__
    "SchemaError",
    "TableNotFoundError",
    "VersionNotFoundError",
]
