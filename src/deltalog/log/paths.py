"""Names of the files in ``_delta_log``, parsed once into typed values.

Example:
    >>> parse_log_name("00000000000000000010.checkpoint.0000000001.0000000002.parquet")
    LogFile(name='00000000000000000010.checkpoint.0000000001.0000000002.parquet', kind='checkpoint', \
version=10, part=1, num_parts=2, end_version=None, uuid=None, fmt='parquet', size=0, modification_time=0)
    >>> commit_name(3)
    '00000000000000000003.json'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
SIDECAR_DIR = "_sidecars"

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTI = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_UUID = re.compile(r"^(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)$")
_COMPACTED = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CRC = re.compile(r"^(\d{20})\.crc$")


@dataclass(frozen=True)
class LogFile:
    """One file of ``_delta_log``; ``kind`` is commit, checkpoint, compacted or crc."""

    name: str
    kind: str
    version: int
    part: int | None = None
    num_parts: int | None = None
    end_version: int | None = None
    uuid: str | None = None
    fmt: str = "json"
    size: int = 0
    modification_time: int = 0

    @property
    def path(self) -> str:
        """Path relative to the table root, e.g. ``_delta_log/00000000000000000000.json``."""
        return f"{LOG_DIR}/{self.name}"

    @property
    def is_v2_checkpoint(self) -> bool:
        """True for UUID-named (V2) checkpoints, whose sidecars must be followed."""
        return self.kind == "checkpoint" and self.uuid is not None


def parse_log_name(name: str, size: int = 0, modification_time: int = 0) -> LogFile | None:
    """Classify a file name found in ``_delta_log``; ``None`` for anything that is not a log file.

    Example:
        >>> parse_log_name("00000000000000000001.json").kind
        'commit'
        >>> parse_log_name("_last_checkpoint") is None
        True
    """
    if m := _COMMIT.match(name):
        return LogFile(name, "commit", int(m[1]), size=size, modification_time=modification_time)
    if m := _CLASSIC.match(name):
        return LogFile(name, "checkpoint", int(m[1]), 1, 1, fmt="parquet", size=size,
                       modification_time=modification_time)
    if m := _MULTI.match(name):
        return LogFile(name, "checkpoint", int(m[1]), int(m[2]), int(m[3]), fmt="parquet", size=size,
                       modification_time=modification_time)
    if m := _UUID.match(name):
        return LogFile(name, "checkpoint", int(m[1]), 1, 1, uuid=m[2], fmt=m[3], size=size,
                       modification_time=modification_time)
    if m := _COMPACTED.match(name):
        return LogFile(name, "compacted", int(m[1]), end_version=int(m[2]), size=size,
                       modification_time=modification_time)
    if m := _CRC.match(name):
        return LogFile(name, "crc", int(m[1]), size=size, modification_time=modification_time)
    return None


def version_prefix(version: int) -> str:
    """The 20-digit zero-padded form used by every versioned log file name.

    Example:
        >>> version_prefix(42)
        '00000000000000000042'
    """
    return f"{version:020d}"


def commit_name(version: int) -> str:
    """File name of the commit for ``version``.

    Example:
        >>> commit_name(0)
        '00000000000000000000.json'
    """
    return f"{version_prefix(version)}.json"


def commit_path(version: int) -> str:
    """Path of a commit relative to the table root.

    Example:
        >>> commit_path(5)
        '_delta_log/00000000000000000005.json'
    """
    return f"{LOG_DIR}/{commit_name(version)}"


def classic_checkpoint_name(version: int) -> str:
    """File name of a single-file classic checkpoint.

    Example:
        >>> classic_checkpoint_name(10)
        '00000000000000000010.checkpoint.parquet'
    """
    return f"{version_prefix(version)}.checkpoint.parquet"


def multipart_checkpoint_name(version: int, part: int, num_parts: int) -> str:
    """File name of part ``part`` (1-based) of ``num_parts`` of a multi-part checkpoint.

    Example:
        >>> multipart_checkpoint_name(10, 1, 2)
        '00000000000000000010.checkpoint.0000000001.0000000002.parquet'
    """
    return f"{version_prefix(version)}.checkpoint.{part:010d}.{num_parts:010d}.parquet"


def crc_name(version: int) -> str:
    """File name of the version checksum file.

    Example:
        >>> crc_name(3)
        '00000000000000000003.crc'
    """
    return f"{version_prefix(version)}.crc"
