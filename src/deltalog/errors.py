"""One exception hierarchy for everything deltalog raises.

Every error carries, where known, the table it concerns, the log version, the file and the line, and
its message names them, so a failing pipeline says *where* the log is wrong and not only *that* it is.

Example:
    >>> err = CorruptLogError("not valid JSON", table="/data/t", version=3,
    ...                       file="_delta_log/00000000000000000003.json", line=2)
    >>> print(err)
    not valid JSON [table /data/t, version 3, file _delta_log/00000000000000000003.json, line 2]
"""

from __future__ import annotations

from typing import Any


class DeltaError(Exception):
    """Base class of every deltalog error; ``str(err)`` names table, version, file and line when known."""

    def __init__(
        self,
        message: str,
        *,
        table: str | None = None,
        version: int | None = None,
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        self.message = message
        self.table = table
        self.version = version
        self.file = file
        self.line = line
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.table is not None:
            where.append(f"table {self.table}")
        if self.version is not None:
            where.append(f"version {self.version}")
        if self.file is not None:
            where.append(f"file {self.file}")
        if self.line is not None:
            where.append(f"line {self.line}")
        return f"{self.message} [{', '.join(where)}]" if where else self.message

    def __reduce__(self) -> tuple[object, ...]:  # keep pickling (multiprocessing) working with kwargs
        return (_rebuild, (type(self), self.message, self.table, self.version, self.file, self.line))


def _rebuild(
    cls: type[DeltaError], message: str, table: str | None, version: int | None, file: str | None,
    line: int | None,
) -> DeltaError:
    return cls(message, table=table, version=version, file=file, line=line)


class TableNotFoundError(DeltaError):
    """The path does not exist, or holds no ``_delta_log`` with any commit."""


class InvalidTableError(DeltaError):
    """The log exists but does not describe a valid table (gaps, missing protocol or metadata, ...)."""


class CorruptLogError(InvalidTableError):
    """A log file (commit, checkpoint, ``_last_checkpoint``, sidecar) cannot be parsed or is incomplete."""


class UnsupportedFeatureError(DeltaError):
    """The table needs a protocol version or table feature that this build of deltalog does not support."""

    def __init__(self, message: str, *, feature: str, **where: object) -> None:
        self.feature = feature
        super().__init__(message, **where)  # type: ignore[arg-type]

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_feature, (self.message, self.feature, self.table, self.version, self.file))


def _rebuild_feature(
    message: str, feature: str, table: str | None, version: int | None, file: str | None
) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(message, feature=feature, table=table, version=version, file=file)


class VersionNotFoundError(DeltaError):
    """Time travel asked for a version (or timestamp) the log can no longer or not yet reconstruct."""


class TimestampAfterLatestError(VersionNotFoundError):
    """Time travel asked for a timestamp after the table's latest commit."""


class TimestampBeforeEarliestError(VersionNotFoundError):
    """Time travel asked for a timestamp before the earliest commit the log still has."""


class DeletionVectorError(DeltaError):
    """A deletion vector cannot be located, decoded, or fails its checksum."""


class SchemaError(DeltaError):
    """A schema string is malformed, or data does not match the table's schema."""


class InvalidArgumentError(DeltaError, ValueError):
    """A caller passed an option the operation cannot accept (unknown mode, bad filter, ...)."""


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong type (a condition that is neither a SQL string nor a ``Column``, a ``set``
    that is not a dict, ...): also a ``TypeError``, as delta-spark's Python API raises for these.

    Example:
        >>> issubclass(InvalidArgumentTypeError, TypeError), issubclass(InvalidArgumentTypeError, ValueError)
        (True, True)
    """


class SqlSyntaxError(InvalidArgumentError):
    """A Delta SQL statement (``VACUUM``, ``DESCRIBE HISTORY``, ...) that does not parse; at the Spark API it
    is also PySpark's ``ParseException``, as delta-spark's parser raises.

    Example:
        >>> str(SqlSyntaxError("[PARSE_SYNTAX_ERROR] a table name is missing in: DESCRIBE HISTORY"))
        '[PARSE_SYNTAX_ERROR] a table name is missing in: DESCRIBE HISTORY'
    """



class MultipleSourceRowMatchError(InvalidArgumentError):
    """A MERGE whose target row matched more than one source row with an update (or a conditional delete):
    it cannot tell which source row to apply (``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``);
    nothing is committed. At the Spark API it is also PySpark's ``UnsupportedOperationException``, as
    delta-spark raises.

    Example:
        >>> issubclass(MultipleSourceRowMatchError, InvalidArgumentError)
        True
    """


class FeatureDropError(InvalidArgumentError):
    """A table feature cannot be dropped (yet): the message starts with delta-spark's error class
    (``DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD``, ``DELTA_FEATURE_DROP_NONREMOVABLE_FEATURE``, ...)
    and says what was already committed and what to do next.

    Example:
        >>> issubclass(FeatureDropError, ValueError)
        True
    """


class IcebergCompatError(UnsupportedFeatureError):
    """A change or commit breaks a rule of Iceberg compatibility or UniForm
    (:mod:`deltalog.protocol.iceberg_compat`): the message starts with delta-spark's error class
    (``DELTA_ICEBERG_COMPAT_VIOLATION.<sub-class>``, ``DELTA_UNIVERSAL_FORMAT_VIOLATION``) and says what to do;
    nothing was committed.

    Example:
        >>> IcebergCompatError("[DELTA_UNIVERSAL_FORMAT_VIOLATION] ...", feature="icebergCompatV2").feature
        'icebergCompatV2'
    """

    def __reduce__(self) -> tuple[object, ...]:  # pickled (a Spark task's error) as itself
        return (_rebuild_iceberg, (self.message, self.feature, self.table, self.version, self.file))


def _rebuild_iceberg(
    message: str, feature: str, table: str | None, version: int | None, file: str | None
) -> IcebergCompatError:
    return IcebergCompatError(message, feature=feature, table=table, version=version, file=file)

# --------------------------------------------------------------------------------- conflicts


class ConcurrentModificationException(DeltaError):
    """A concurrent commit won the race and logically conflicts with this transaction.

    ``version`` is the winning commit's version, ``operation`` its ``commitInfo.operation``.

    Example:
        >>> err = ConcurrentAppendException("files were added", table="t", version=5, operation="WRITE")
        >>> isinstance(err, DeltaError), err.version, err.operation
        (True, 5, 'WRITE')
    """

    def __init__(self, message: str, *, operation: str | None = None, **where: Any) -> None:
        self.operation = operation
        super().__init__(message, **where)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_conflict, (type(self), self.message, self.operation, self.table, self.version))


def _rebuild_conflict(
    cls: type[ConcurrentModificationException],
    message: str,
    operation: str | None,
    table: str | None,
    version: int | None,
) -> ConcurrentModificationException:
    return cls(message, operation=operation, table=table, version=version)


class ProtocolChangedException(ConcurrentModificationException):
    """The winner changed the protocol (or created the table).

    Example:
        >>> issubclass(ProtocolChangedException, ConcurrentModificationException)
        True
    """


class MetadataChangedException(ConcurrentModificationException):
    """The winner changed the table metadata (or a metadata domain this transaction writes).

    Example:
        >>> issubclass(MetadataChangedException, ConcurrentModificationException)
        True
    """


class ConcurrentTransactionException(ConcurrentModificationException):
    """The winner committed a ``txn`` for an application id this transaction depends on.

    Example:
        >>> issubclass(ConcurrentTransactionException, ConcurrentModificationException)
        True
    """


class ConcurrentAppendException(ConcurrentModificationException):
    """The winner added files in the part of the table this transaction read.

    Example:
        >>> issubclass(ConcurrentAppendException, ConcurrentModificationException)
        True
    """


class ConcurrentDeleteReadException(ConcurrentModificationException):
    """The winner removed a file this transaction read.

    Example:
        >>> issubclass(ConcurrentDeleteReadException, ConcurrentModificationException)
        True
    """


class ConcurrentDeleteDeleteException(ConcurrentModificationException):
    """The winner removed a file this transaction removes too.

    Example:
        >>> issubclass(ConcurrentDeleteDeleteException, ConcurrentModificationException)
        True
    """


# ----------------------------------------------------------------------------------------- storage


class StorageError(DeltaError, OSError):
    """Storage failed or refused an operation: a full disk, a missing permission, an I/O error, an object
    store that kept failing. It is also an :class:`OSError` (``errno`` set when the OS gave one), so
    ``except OSError`` written before these classes existed keeps catching it.

    The message names the cause in words, the file (relative to the table root), the operation that
    was running and whether that operation committed a version before the failure: ``committed_version``
    is that version, or ``None`` when nothing was committed (``table_version`` is then the version the
    table stays at, when known). The store's original exception is chained as ``__cause__``.

    Example:
        >>> err = StorageFullError("the disk is full while writing part-0.parquet", table="/data/t",
        ...                        file="part-0.parquet", errno=28)
        >>> err = err.in_context(operation="WRITE", table_version=3)
        >>> isinstance(err, OSError), err.errno
        (True, 28)
        >>> print(err)
        WRITE failed: the disk is full while writing part-0.parquet; nothing was committed, the table \
is still at version 3 [table /data/t, file part-0.parquet]
    """

    #: Whether the failed request may still have been (or be) carried out by the store: False for refusals
    #: made before anything was sent.
    request_may_apply: bool = True

    def __init__(
        self,
        message: str,
        *,
        errno: int | None = None,
        operation: str | None = None,
        committed_version: int | None = None,
        table_version: int | None = None,
        **where: Any,
    ) -> None:
        self.operation = operation
        self.committed_version = committed_version
        self.table_version = table_version
        super().__init__(message, **where)
        self.errno = errno

    def in_context(
        self,
        *,
        operation: str | None = None,
        committed_version: int | None = None,
        table_version: int | None = None,
    ) -> StorageError:
        """A copy of this error (same class) whose message also says which operation failed and whether
        it committed a version; an error that already has a context is returned unchanged.

        Example:
            >>> e = StorageIOError("an I/O error while reading x", file="x").in_context(operation="DELETE")
            >>> e.message
            'DELETE failed: an I/O error while reading x; nothing was committed'
        """
        if self.operation is not None:
            return self
        message = f"{operation} failed: {self.message}" if operation else self.message
        if committed_version is not None:
            message += f"; version {committed_version} was committed by this operation before the failure"
        elif table_version is not None and table_version >= 0:
            message += f"; nothing was committed, the table is still at version {table_version}"
        else:
            message += "; nothing was committed"
        err = type(self)(
            message,
            errno=self.errno,
            operation=operation or "",
            committed_version=committed_version,
            table_version=table_version,
            table=self.table,
            version=self.version,
            file=self.file,
            line=self.line,
        )
        err.__cause__ = self.__cause__
        return err

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_storage,
            (type(self), self.message, self.errno, self.operation, self.committed_version, self.table_version,
             self.table, self.version, self.file),
        )


def _rebuild_storage(
    cls: type[StorageError], message: str, errno: int | None, operation: str | None, committed: int | None,
    table_version: int | None, table: str | None, version: int | None, file: str | None,
) -> StorageError:
    return cls(message, errno=errno, operation=operation, committed_version=committed, table_version=table_version,
               table=table, version=version, file=file)


class StorageFullError(StorageError):
    """No room left: the disk or quota is full (``ENOSPC``, ``EDQUOT``) or a file-size limit was hit
    (``EFBIG``).

    Example:
        >>> issubclass(StorageFullError, OSError)
        True
    """


class StoragePermissionError(StorageError, PermissionError):
    """Storage refused access: no permission (``EACCES``, ``EPERM``, HTTP 401/403), or a read-only file
    system (``EROFS``). Also a :class:`PermissionError`.

    Example:
        >>> issubclass(StoragePermissionError, PermissionError)
        True
    """


class StorageIOError(StorageError):
    """The storage failed to read or write (``EIO``, or another OS error with no better class).

    Example:
        >>> issubclass(StorageIOError, StorageError)
        True
    """


class StorageUnavailableError(StorageError):
    """The storage service kept failing (throttling, server errors, timeouts, refused connections)
    after the retries ran out.

    Example:
        >>> issubclass(StorageUnavailableError, StorageError)
        True
    """


class StorageNotFoundError(StorageError):
    """The bucket, container or account of a table location does not exist (or is not visible with these
    credentials). A missing *file* is a plain :class:`FileNotFoundError` instead.

    Example:
        >>> issubclass(StorageNotFoundError, StorageError)
        True
    """


class CommitOutcomeUnknownError(StorageError):
    """Writing the commit file failed in a way that leaves its outcome unknown, and reading it back did not
    settle it: the version may or may not have been committed. The data files were kept (they may be
    referenced); ``deltalog check`` and the history show what happened.

    Example:
        >>> issubclass(CommitOutcomeUnknownError, StorageError)
        True
    """


class ConditionalPutUnsupportedError(StorageError):
    """The object store does not honour conditional creates (``If-None-Match``), so a commit could
    silently replace another writer's: deltalog refuses to commit there unless commits are coordinated
    through a DynamoDB lock table (``AWS_S3_LOCKING_PROVIDER=dynamodb``).

    Example:
        >>> issubclass(ConditionalPutUnsupportedError, StorageError)
        True
    """

    request_may_apply = False  # refused before the commit was sent
