"""deltalog's errors under the names delta-spark's ``delta.exceptions`` module gives them.

Code written against delta-spark catches ``ConcurrentAppendException`` and friends; importing them
from here lets it catch the errors deltalog's transactions raise, unchanged. ``ConcurrentWriteException``
has no narrower counterpart in deltalog and is an alias of the common base class.

Example:
    >>> from deltalog.spark.exceptions import ConcurrentAppendException, DeltaConcurrentModificationException
    >>> issubclass(ConcurrentAppendException, DeltaConcurrentModificationException)
    True
"""

from __future__ import annotations

from deltalog.errors import (
    DeltaError,
    InvalidArgumentError,
    SchemaError,
    TableNotFoundError,
    VersionNotFoundError,
)
from deltalog.txn.conflicts import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    MetadataChangedException,
    ProtocolChangedException,
)
from deltalog.txn.constraints import ConstraintViolationError

#: delta-spark's base class of every write conflict.
DeltaConcurrentModificationException = ConcurrentModificationException
#: delta-spark raises this for some write/write conflicts; deltalog reports those as its subclasses.
ConcurrentWriteException = ConcurrentModificationException

__all__ = [
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentModificationException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "ConstraintViolationError",
    "DeltaConcurrentModificationException",
    "DeltaError",
    "InvalidArgumentError",
    "MetadataChangedException",
    "ProtocolChangedException",
    "SchemaError",
    "TableNotFoundError",
    "VersionNotFoundError",
]
