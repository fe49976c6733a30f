"""Transactions: optimistic commits with conflict checks, operations as data, writer rules.

Example:
    >>> from deltalog.txn import Write, start_transaction
    >>> import deltalog
    >>> start_transaction(deltalog.Table("memory://txn-pkg-doc"), Write()).read_version
    -1
"""

from __future__ import annotations

from deltalog.txn.commit import CommitFailedError, CommitResult, RetryPolicy, remove_action
from deltalog.txn.conflicts import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    MetadataChangedException,
    ProtocolChangedException,
)
from deltalog.txn.constraints import ConstraintViolationError, UnsupportedExpressionError, check_constraints
from deltalog.txn.operations import (
    AddConstraint,
    CreateTable,
    Delete,
    DropConstraint,
    Merge,
    Operation,
    Optimize,
    Restore,
    SetTableProperties,
    UnsetTableProperties,
    Update,
    UpgradeProtocol,
    VacuumEnd,
    VacuumStart,
    Write,
)
from deltalog.txn.transaction import Transaction, start_transaction
from deltalog.txn.writer_features import SUPPORTED_WRITER_FEATURES, AppendOnlyError

__all__ = [
    "SUPPORTED_WRITER_FEATURES",
    "AddConstraint",
    "AppendOnlyError",
    "CommitFailedError",
    "CommitResult",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentModificationException",
    "ConcurrentTransactionException",
    "ConstraintViolationError",
    "CreateTable",
    "Delete",
    "DropConstraint",
    "Merge",
    "MetadataChangedException",
    "Operation",
    "Optimize",
    "ProtocolChangedException",
    "Restore",
    "RetryPolicy",
    "SetTableProperties",
    "Transaction",
    "UnsetTableProperties",
    "UnsupportedExpressionError",
    "Update",
    "UpgradeProtocol",
    "VacuumEnd",
    "VacuumStart",
    "Write",
    "check_constraints",
    "remove_action",
    "start_transaction",
]
