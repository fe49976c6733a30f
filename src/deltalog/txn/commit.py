"""Commit building blocks: retry policy, commit result, ``remove`` actions and ``commitInfo`` metrics.

Example:
    >>> RetryPolicy(max_attempts=3).max_attempts
    3
    >>> CommitResult(version=4, operation="WRITE", attempts=2).retries
    1
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltalog.errors import DeltaError, InvalidArgumentError
from deltalog.log.paths import commit_path
from deltalog.protocol.actions import Add, Remove
from deltalog.storage import LogStore
from deltalog.txn.operations import Operation

__all__ = [
    "ABSENT",
    "LANDED",
    "TAKEN",
    "UNKNOWN",
    "CommitFailedError",
    "CommitResult",
    "RetryPolicy",
    "dv_key",
    "operation_metrics",
    "previous_commit_timing",
    "publish_commit",
    "remove_action",
]


class CommitFailedError(DeltaError):
    """Every attempt lost the race for a version (without a logical conflict); nothing was committed.

    Example:
        >>> str(CommitFailedError("gave up after 3 attempts", table="t"))
        'gave up after 3 attempts [table t]'
    """


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries: the first ``immediate`` ones at once, then with exponential backoff and jitter.

    A lost race means another writer committed, so the loser catches up with it and tries again; like
    delta-spark and delta-rs it does so at once (waiting only lets more commits in, each of which it must
    then read and check). Only after ``immediate`` retries in a row were lost does it back off: the delay
    before retry ``n`` (1-based) is then ``min(max_delay, base_delay * 2**(n - immediate - 1))`` scaled by
    a random factor in ``[0.5, 1.0)``, spreading out writers that keep colliding.

    Example:
        >>> policy = RetryPolicy(base_delay=0.1, max_delay=1.0, immediate=1)
        >>> policy.delay(1, random.Random(0)), 0.1 <= policy.delay(3, random.Random(0)) < 0.2
        (0.0, True)
    """

    max_attempts: int = 20
    base_delay: float = 0.05
    max_delay: float = 2.0
    immediate: int = 3

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise InvalidArgumentError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise InvalidArgumentError("retry delays must not be negative")
        if self.immediate < 0:
            raise InvalidArgumentError(f"immediate retries must be >= 0, got {self.immediate}")

    def delay(self, retry: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry``.

        Example:
            >>> RetryPolicy(base_delay=0.0).delay(5, random.Random(0))
            0.0
        """
        if retry <= self.immediate:
            return 0.0
        cap = min(self.max_delay, self.base_delay * (2 ** max(0, retry - self.immediate - 1)))
        return float(cap * (0.5 + 0.5 * rng.random()))


@dataclass(frozen=True)
class CommitResult:
    """Outcome of :meth:`Transaction.commit`.

    ``version`` is the committed version (the read version when ``skipped``: an idempotent write whose
    ``txn`` version was already committed). ``operation_metrics`` is what went into ``commitInfo``;
    ``attempts`` counts put-if-absent attempts and ``winning_versions`` the concurrent commits that were
    checked for conflicts.

    Example:
        >>> CommitResult(version=3, operation="DELETE", skipped=True).skipped
        True
    """

    version: int
    operation: str
    skipped: bool = False
    attempts: int = 1
    winning_versions: tuple[int, ...] = ()
    operation_metrics: Mapping[str, str] = field(default_factory=dict)
    timestamp: int | None = None
    in_commit_timestamp: int | None = None
    txn_id: str | None = None
    duration_ms: int = 0
    #: Post-commit steps (``"write checksum"``, ``"checkpoint"``, ``"log cleanup"``) that failed after
    #: the commit landed, each with its error; the commit itself stands (see ``deltalog check``).
    post_commit_errors: tuple[str, ...] = ()

    @property
    def retries(self) -> int:
        """Attempts after the first.

        Example:
            >>> CommitResult(version=1, operation="WRITE", attempts=3).retries
            2
        """
        return max(0, self.attempts - 1)


def remove_action(add: Mapping[str, Any], *, deletion_timestamp: int, data_change: bool = True) -> Remove:
    """A ``remove`` for a live file, given its ``add`` row (from ``Snapshot.add_files().to_pylist()``).

    Example:
        >>> remove_action({"path": "a.parquet", "partitionValues": [("p", "1")], "size": 3},
        ...               deletion_timestamp=5).partitionValues
        {'p': '1'}
    """
    dv = add.get("deletionVector")
    return Remove(
        path=add["path"],
        dataChange=data_change,
        deletionTimestamp=deletion_timestamp,
        extendedFileMetadata=True,
        partitionValues=_as_map(add.get("partitionValues")) or {},
        size=add.get("size"),
        stats=add.get("stats"),
        tags=_as_map(add.get("tags")),
        deletionVector={k: v for k, v in dv.items() if v is not None} if dv else None,
        baseRowId=add.get("baseRowId"),
        defaultRowCommitVersion=add.get("defaultRowCommitVersion"),
    )


def _as_map(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    return dict(value)


def dv_key(action: Add | Remove) -> tuple[str, str | None]:
    """The logical-file key ``(path, deletion vector unique id)`` of an ``add`` or ``remove``.

    Example:
        >>> dv_key(Remove("a.parquet", True))
        ('a.parquet', None)
    """
    dv = action.deletionVector
    if not dv:
        return action.path, None
    offset = dv.get("offset")
    uid = f"{dv.get('storageType')}{dv.get('pathOrInlineDv')}"
    return action.path, uid if offset is None else f"{uid}@{offset}"


def operation_metrics(
    operation: Operation, adds: Sequence[Add], removes: Sequence[Remove], extra: Mapping[str, Any] | None
) -> dict[str, str]:
    """``commitInfo.operationMetrics``: the counts ``operation`` reports, as strings, plus ``extra``.

    Example:
        >>> from deltalog.txn.operations import Write
        >>> operation_metrics(Write(), [Add("a", {}, 10, 0, True, stats='{"numRecords":4}')], [], None)
        {'numFiles': '1', 'numOutputRows': '4', 'numOutputBytes': '10'}
    """
    rows = 0
    rows_known = True
    for a in adds:
        try:
            n = json.loads(a.stats).get("numRecords") if a.stats else None
        except (ValueError, AttributeError):
            n = None
        if isinstance(n, int):
            rows += n
        else:
            rows_known = False
    added_bytes = sum(a.size for a in adds)
    removed_bytes = sum(r.size or 0 for r in removes)
    computed: dict[str, int] = {
        "numFiles": len(adds),
        "numAddedFiles": len(adds),
        "numTargetFilesAdded": len(adds),
        "numRemovedFiles": len(removes),
        "numTargetFilesRemoved": len(removes),
        "numOutputBytes": added_bytes,
        "numAddedBytes": added_bytes,
        "numTargetBytesAdded": added_bytes,
        "numRemovedBytes": removed_bytes,
        "numTargetBytesRemoved": removed_bytes,
    }
    if rows_known:
        computed["numOutputRows"] = rows
    out = {k: str(computed[k]) for k in operation.metric_names() if k in computed}
    for k, v in (extra or {}).items():
        out[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def previous_commit_timing(store: LogStore, version: int) -> tuple[int | None, int | None]:
    """(``inCommitTimestamp``, file modification time) of commit ``version``; ``(None, None)`` if absent.

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> s = InMemoryLogStore(clock=lambda: 7)
        >>> s.write("_delta_log/00000000000000000000.json", b'{"commitInfo":{"inCommitTimestamp":5}}',
        ...         overwrite=False)
        >>> previous_commit_timing(s, 0)
        (5, 7)
    """
    if version < 0:
        return None, None
    path = commit_path(version)
    try:
        mtime = store.stat(path).modification_time
        first = store.read(path).split(b"\n", 1)[0]
    except FileNotFoundError:
        return None, None
    ict = None
    try:
        obj = json.loads(first)
        info = obj.get("commitInfo") if isinstance(obj, dict) else None
        if isinstance(info, dict) and isinstance(info.get("inCommitTimestamp"), int):
            ict = info["inCommitTimestamp"]
    except ValueError:
        pass
    return ict, mtime


# ------------------------------------------------------------------------------------------ publishing

#: The commit file holds exactly what this transaction wrote: the version is ours.
LANDED = "landed"
#: Another writer's commit holds the version: check conflicts and try the next one.
TAKEN = "taken"
#: No file holds the version: nothing was committed.
ABSENT = "absent"
#: The put failed and reading the file back failed too: nobody can tell yet.
UNKNOWN = "unknown"


def publish_commit(
    store: LogStore, version: int, payload: bytes
) -> tuple[str, BaseException | None]:
    """Put-if-absent ``payload`` as commit ``version`` and say what happened: ``(outcome, error)``.

    A put that returns is :data:`LANDED`; ``FileExistsError`` is :data:`TAKEN` unless the file holds
    exactly ``payload`` (a client retry of our own create after a lost response). Any other exception
    from the put (an I/O error, a timeout or reset connection on an object store, an interrupt that
    arrived after the file was published) leaves the outcome open, so the file is read back and
    compared byte for byte with ``payload`` (which holds this transaction's unique ``txnId``): ours is
    :data:`LANDED`, another writer's :data:`TAKEN`, no file :data:`ABSENT`, and a read that fails too
    :data:`UNKNOWN`. The put's exception is returned beside the outcome for the caller to report or
    re-raise. An interrupt *during* the read-back propagates: the outcome is then unknown to the caller.

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> store = InMemoryLogStore()
        >>> publish_commit(store, 0, b'{"commitInfo":{"txnId":"a"}}\\n')
        ('landed', None)
        >>> publish_commit(store, 0, b'{"commitInfo":{"txnId":"b"}}\\n')[0]
        'taken'
    """
    path = commit_path(version)
    try:
        store.write(path, payload, overwrite=False)
    except FileExistsError as exc:
        # Usually another writer's commit. But an object store's client may have retried our own create
        # after its first response was lost, and the retry found our file: read it to tell them apart.
        try:
            found = store.read(path)
        except Exception:
            return UNKNOWN, exc  # cannot tell whose it is: keep everything, say so
        return (LANDED if found == payload else TAKEN), (None if found != payload else exc)
    except BaseException as exc:
        try:
            found = store.read(path)
        except FileNotFoundError:
            return ABSENT, exc
        except Exception:
            return UNKNOWN, exc
        return (LANDED if found == payload else TAKEN), exc
    return LANDED, None
