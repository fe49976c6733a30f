"""Turning a store's low-level failures into named deltalog errors.

A :class:`~deltalog.storage.log_store.LogStore` keeps the contract's own exceptions as they are
(:class:`FileNotFoundError`, :class:`FileExistsError`, :class:`IsADirectoryError`,
:class:`NotADirectoryError`): callers rely on them. Every *other* failure -- a full disk, a missing
permission, an I/O error -- leaves the store as a :class:`~deltalog.errors.StorageError` subclass that
says in words what went wrong and names the file relative to the table root (never a temporary file's
name, never a credential). Operations add what was running and whether a version was committed
(:meth:`~deltalog.errors.StorageError.in_context`).

Example:
    >>> import errno
    >>> err = storage_error(OSError(errno.ENOSPC, "No space left on device"), table="/data/t",
    ...                     path="_delta_log/00000000000000000004.json", doing="writing")
    >>> type(err).__name__, err.errno
    ('StorageFullError', 28)
    >>> err.message
    'the disk is full (No space left on device) while writing _delta_log/00000000000000000004.json'
"""

from __future__ import annotations

import errno as errno_mod

from deltalog.errors import (
    StorageError,
    StorageFullError,
    StorageIOError,
    StoragePermissionError,
)

__all__ = ["CONTRACT_ERRORS", "cause_in_words", "storage_error"]

#: Exceptions that are part of the store contract and reach callers unchanged.
CONTRACT_ERRORS: tuple[type[OSError], ...] = (
    FileNotFoundError,
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
)

_FULL = {errno_mod.ENOSPC, errno_mod.EDQUOT, errno_mod.EFBIG}
_PERMISSION = {errno_mod.EACCES, errno_mod.EPERM, errno_mod.EROFS}


def _directory_of(path: str) -> str:
    parent = path.rpartition("/")[0]
    return parent if parent else "the table directory"


def cause_in_words(code: int | None, path: str, doing: str) -> str:
    """What an ``errno`` means for a user, about ``path`` (relative to the table root).

    Example:
        >>> cause_in_words(13, "_delta_log/00000000000000000001.json", "writing")
        'no write permission on _delta_log'
        >>> cause_in_words(30, "part-0.parquet", "writing")
        'the file system is read-only'
    """
    if code == errno_mod.ENOSPC:
        return "the disk is full"
    if code == errno_mod.EDQUOT:
        return "the disk quota is exhausted"
    if code == errno_mod.EFBIG:
        return "the file would exceed the file-size limit"
    if code == errno_mod.EROFS:
        return "the file system is read-only"
    if code in (errno_mod.EACCES, errno_mod.EPERM):
        kind = "read" if doing in ("reading", "listing") else "write"
        return f"no {kind} permission on {_directory_of(path)}"
    if code == errno_mod.EIO:
        return "an I/O error (the disk or the network file system failed)"
    return "the storage failed"


def storage_error(exc: OSError, *, table: str | None, path: str, doing: str) -> OSError:
    """The named error for ``exc``, raised while ``doing`` (``"writing"``, ``"reading"``, ``"deleting"``,
    ``"listing"``) ``path``; contract errors and errors that are already named come back unchanged.

    The caller raises the result ``from exc``.

    Example:
        >>> e = storage_error(PermissionError(13, "Permission denied"), table="/t", path="a/b.parquet",
        ...                   doing="deleting")
        >>> type(e).__name__, e.message
        ('StoragePermissionError', 'no write permission on a (Permission denied) while deleting a/b.parquet')
        >>> storage_error(FileNotFoundError(2, "gone"), table="/t", path="x", doing="reading").__class__.__name__
        'FileNotFoundError'
    """
    if isinstance(exc, (StorageError, *CONTRACT_ERRORS)):
        return exc
    code = exc.errno
    cls: type[StorageError]
    if code in _FULL:
        cls = StorageFullError
    elif code in _PERMISSION or isinstance(exc, PermissionError):
        cls = StoragePermissionError
    else:
        cls = StorageIOError
    words = cause_in_words(code, path, doing)
    detail = exc.strerror or str(exc) or type(exc).__name__
    if "Detail:" in detail:  # pyarrow: "Error writing bytes to file. Detail: [errno 28] No space left ..."
        detail = detail.rsplit("]", 1)[-1].strip() or detail
    message = f"{words} ({detail}) while {doing} {path}"
    return cls(message, errno=code, table=table, file=path)
