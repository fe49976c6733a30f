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


class DeletionVectorError(DeltaError):
    """A deletion vector cannot be located, decoded, or fails its checksum."""


class SchemaError(DeltaError):
    """A schema string is malformed, or data does not match the table's schema."""


class InvalidArgumentError(DeltaError, ValueError):
    """A caller passed an option the operation cannot accept (unknown mode, bad filter, ...)."""


# The conflict exceptions live beside the checks that raise them; they are part of this hierarchy.
from deltalog.txn.conflicts import (  # noqa: E402, I001
    ConcurrentAppendException as ConcurrentAppendException,
    ConcurrentDeleteDeleteException as ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException as ConcurrentDeleteReadException,
    ConcurrentModificationException as ConcurrentModificationException,
    ConcurrentTransactionException as ConcurrentTransactionException,
    MetadataChangedException as MetadataChangedException,
    ProtocolChangedException as ProtocolChangedException,
)
