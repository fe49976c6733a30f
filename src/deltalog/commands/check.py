"""``check`` (fsck): verify a table's log, checkpoints, checksums and data files; optionally repair.

:func:`check_table` runs these checks and returns a :class:`CheckReport` of :class:`Problem` findings,
each an ``error`` (the table is damaged or a reader will fail) or a ``warning`` (harmless for correct
readers, worth knowing):

* **log** -- commit versions are contiguous from the earliest to the latest commit (``log-gap``); a
  log that no longer starts at version 0 has a complete checkpoint to start from
  (``log-unreconstructable``); multi-part checkpoints have all their parts (``checkpoint-incomplete``,
  a warning: readers skip them);
* **checkpoint** -- ``_last_checkpoint`` parses (``last-checkpoint-corrupt``), names a complete
  checkpoint (``last-checkpoint-dangling``) that is the newest one (``last-checkpoint-stale``, a
  warning), and its ``parts``, ``size`` (actions), ``sizeInBytes``, ``numOfAddFiles`` and ``checksum``
  agree with that checkpoint (``last-checkpoint-mismatch``); the latest snapshot loads
  (``snapshot-unreadable``);
* **crc** -- the ``.crc`` file of the latest version (with ``deep``: of every version) agrees with the
  replayed state (``crc-mismatch``; ``crc-malformed`` is a warning, and so is ``crc-histogram-mismatch``: its
  optional file-size or deleted-record-counts histogram disagrees with the files, so readers do not use it);
* **files** -- every live data file exists (``file-missing``, repairable) with the size the log
  records (``file-size-mismatch``), and so does every deletion-vector file (``dv-missing``). Files
  outside the table root on another file system cannot be checked and are counted as unchecked.

:func:`repair_table` removes the log entries of missing data files in one commit through the
transaction API (an ``FSCK`` commit, as delta-spark's ``FSCK REPAIR TABLE`` makes).

Example:
    >>> import deltalog
    >>> report = check_table(deltalog.Table("/data/events"))               # doctest: +SKIP
    >>> report.ok, [p.code for p in report.problems]                       # doctest: +SKIP
    (False, ['file-missing'])
    >>> repair_table(deltalog.Table("/data/events"), report=report).version  # doctest: +SKIP
    13
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from deltalog.errors import (
    CorruptLogError,
    DeltaError,
    InvalidArgumentError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from deltalog.log.checkpoint_writer import json_checksum
from deltalog.log.crc import histogram_problems, read_crc, verify_crc
from deltalog.log.paths import LAST_CHECKPOINT, LOG_DIR, LogFile
from deltalog.log.segment import complete_checkpoints, list_log, read_last_checkpoint
from deltalog.protocol.deletion_vectors import DeletionVectorDescriptor, local_path
from deltalog.snapshot_load import LogSnapshots, SnapshotSource
from deltalog.txn.operations import Fsck

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot
    from deltalog.txn.commit import CommitResult
    from deltalog.txn.handle import TableHandle

__all__ = ["CheckReport", "Problem", "Progress", "RepairResult", "check_table", "repair_table"]

#: ``progress(phase, done, total)``: called as work advances (``total`` is ``None`` when unknown).
Progress = Callable[[str, int, "int | None"], None]


_PROGRESS_EVERY = 2000


@dataclass(frozen=True)
class Problem:
    """One finding: ``severity`` is ``error`` or ``warning``; ``code`` is stable (see module docstring).

    Example:
        >>> Problem("error", "file-missing", "data file does not exist", file="a.parquet").repairable
        True
    """

    severity: str
    code: str
    message: str
    file: str | None = None
    version: int | None = None

    @property
    def repairable(self) -> bool:
        """:func:`repair_table` fixes it (a missing data file's log entry is removed)."""
        return self.code == "file-missing"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (with ``repairable``)."""
        return {**asdict(self), "repairable": self.repairable}


@dataclass
class CheckReport:
    """What :func:`check_table` found. ``ok`` is true when there is no ``error``.

    Example:
        >>> r = CheckReport(table="t", version=3)
        >>> r.add("warning", "crc-malformed", "unreadable checksum file")
        >>> r.ok, r.num_errors, r.num_warnings
        (True, 0, 1)
    """

    table: str
    version: int | None
    problems: list[Problem] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    num_commits: int = 0
    num_checkpoints: int = 0
    num_crc_verified: int = 0
    num_files: int = 0
    num_files_checked: int = 0
    num_files_unchecked: int = 0
    missing_files: list[str] = field(default_factory=list)
    snapshot: Snapshot | None = field(default=None, repr=False, compare=False)

    def add(
        self, severity: str, code: str, message: str, *, file: str | None = None, version: int | None = None
    ) -> None:
        """Record a finding."""
        self.problems.append(Problem(severity, code, message, file=file, version=version))

    @property
    def errors(self) -> list[Problem]:
        """The findings of severity ``error``."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def num_errors(self) -> int:
        """How many errors were found."""
        return len(self.errors)

    @property
    def num_warnings(self) -> int:
        """How many warnings were found."""
        return sum(1 for p in self.problems if p.severity == "warning")

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed)."""
        return not self.errors

    @property
    def repairable(self) -> bool:
        """Some error can be repaired by :func:`repair_table`."""
        return any(p.repairable for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "table": self.table,
            "version": self.version,
            "ok": self.ok,
            "num_errors": self.num_errors,
            "num_warnings": self.num_warnings,
            "checks": dict(self.checks),
            "num_commits": self.num_commits,
            "num_checkpoints": self.num_checkpoints,
            "num_crc_verified": self.num_crc_verified,
            "num_files": self.num_files,
            "num_files_checked": self.num_files_checked,
            "num_files_unchecked": self.num_files_unchecked,
            "missing_files": list(self.missing_files),
            "problems": [p.to_dict() for p in self.problems],
        }


def check_table(table: TableHandle, *, deep: bool = False, progress: Progress | None = None) -> CheckReport:
    """Check ``table`` (see the module docstring); never raises for a damaged table, it reports.

    ``deep`` also verifies every version's ``.crc`` file (one replay per version with a checksum).

    Example:
        >>> import deltalog
        >>> check_table(deltalog.Table("/data/events"), deep=True).ok           # doctest: +SKIP
        True
    """
    report = CheckReport(table=table.location, version=None)
    step = progress or _no_progress
    step("log", 0, None)
    files = list_log(table.store, 0)
    _check_log(report, files)
    report.checks["log"] = _status(report, "log")
    # Load without verifying the checksum: a disagreement is reported below, not raised.
    reader = LogSnapshots(table.location, table.store, verify_checksums=False)
    try:
        snapshot = reader.snapshot()
    except (UnsupportedFeatureError, TableNotFoundError):
        raise  # not a damaged table: one this build cannot read, or none at all
    except DeltaError as exc:
        report.add("error", "snapshot-unreadable", f"the latest snapshot cannot be loaded: {exc}", file=exc.file)
        report.checks.update(checkpoint="skipped", crc="skipped", files="skipped")
        return report
    report.snapshot = snapshot
    report.version = snapshot.version
    report.num_files = snapshot.num_files()
    step("log", 1, 1)
    _check_last_checkpoint(report, reader, files, snapshot)
    report.checks["checkpoint"] = _status(report, "checkpoint")
    _check_crc(report, reader, files, snapshot, deep=deep, progress=step)
    report.checks["crc"] = _status(report, "crc")
    _check_files(report, snapshot, progress=step)
    report.checks["files"] = _status(report, "files")
    return report


def _no_progress(phase: str, done: int, total: int | None) -> None:
    return None


_GROUPS = {
    "log": ("log-", "checkpoint-incomplete"),
    "checkpoint": ("last-checkpoint-", "snapshot-"),
    "crc": ("crc-",),
    "files": ("file-", "dv-"),
}


def _status(report: CheckReport, group: str) -> str:
    found = [p for p in report.problems if p.code.startswith(_GROUPS[group])]
    if any(p.severity == "error" for p in found):
        return "errors"
    return "warnings" if found else "ok"


# ------------------------------------------------------------------------------------------------ log


def _check_log(report: CheckReport, files: list[LogFile]) -> None:
    commits = sorted({f.version for f in files if f.kind == "commit"})
    checkpoints = complete_checkpoints(files)
    report.num_commits = len(commits)
    report.num_checkpoints = len(checkpoints)
    groups: dict[tuple[int, int, str | None], set[int]] = defaultdict(set)
    first: dict[tuple[int, int, str | None], LogFile] = {}
    for f in files:
        if f.kind == "checkpoint":
            key = (f.version, f.num_parts or 1, f.uuid)
            groups[key].add(f.part or 1)
            first.setdefault(key, f)
    for key in sorted(groups, key=lambda k: (k[0], k[1])):
        version, num_parts, _uuid = key
        if len(groups[key]) < num_parts:
            report.add(
                "warning", "checkpoint-incomplete",
                f"checkpoint of version {version} has {len(groups[key])} of its {num_parts} parts; readers "
                "ignore it", file=first[key].path, version=version,
            )
    if not commits:
        return
    gaps = [v for v in range(commits[0], commits[-1] + 1) if v not in set(commits)]
    if gaps:
        shown = ", ".join(map(str, gaps[:10])) + (" ..." if len(gaps) > 10 else "")
        report.add(
            "error", "log-gap",
            f"commit files are missing for {len(gaps)} version(s) between {commits[0]} and {commits[-1]}: {shown}",
            file=f"{LOG_DIR}/{gaps[0]:020d}.json", version=gaps[0],
        )
    if commits[0] > 0 and not any(v >= commits[0] - 1 for v in checkpoints):
        report.add(
            "error", "log-unreconstructable",
            f"the log starts at version {commits[0]} and no complete checkpoint at or after version "
            f"{commits[0] - 1} remains, so no version can be reconstructed",
            version=commits[0],
        )


# ----------------------------------------------------------------------------------------- checkpoint


def _check_last_checkpoint(
    report: CheckReport, reader: SnapshotSource, files: list[LogFile], snapshot: Snapshot
) -> None:
    store = reader.store
    checkpoints = complete_checkpoints(files)
    path = f"{LOG_DIR}/{LAST_CHECKPOINT}"
    try:
        raw = store.read(path)
    except FileNotFoundError:
        if checkpoints:
            report.add(
                "warning", "last-checkpoint-missing",
                f"there are checkpoints (newest: version {max(checkpoints)}) but no _last_checkpoint; readers "
                "have to list the whole log", file=path,
            )
        return
    hint = read_last_checkpoint(store, reader.location)
    try:
        obj = json.loads(raw)
    except ValueError:
        obj = None
    if hint is None or not isinstance(obj, dict):
        report.add("error", "last-checkpoint-corrupt", "_last_checkpoint is not a valid checkpoint hint", file=path)
        return
    parts = checkpoints.get(hint.version)
    if parts is None:
        report.add(
            "error", "last-checkpoint-dangling",
            f"_last_checkpoint names version {hint.version}, but there is no complete checkpoint of that version",
            file=path, version=hint.version,
        )
        return
    newest = max(checkpoints)
    if newest > hint.version:
        report.add(
            "warning", "last-checkpoint-stale",
            f"_last_checkpoint names version {hint.version}, but the newest checkpoint is version {newest}",
            file=path, version=hint.version,
        )
    mismatches: list[str] = []
    if hint.parts is not None and hint.parts != len(parts) and parts[0].uuid is None:
        mismatches.append(f"parts {hint.parts} (checkpoint has {len(parts)})")
    if hint.checksum is not None and json_checksum(obj) != hint.checksum:
        mismatches.append("checksum does not match the file's content")
    # V2 checkpoint content (sidecars) counts the sidecars' actions and bytes too: not comparable here.
    if parts[0].uuid is None and all(p.fmt == "parquet" for p in parts) and not snapshot.has_feature("v2Checkpoint"):
        sizes = sum(p.size for p in parts)
        if hint.size_in_bytes is not None and sizes and hint.size_in_bytes != sizes:
            mismatches.append(f"sizeInBytes {hint.size_in_bytes} (checkpoint files hold {sizes})")
        if hint.size is not None:
            rows = _checkpoint_rows(reader, parts)
            if rows is not None and rows != hint.size:
                mismatches.append(f"size {hint.size} (checkpoint holds {rows} actions)")
    if hint.num_of_add_files is not None:
        adds = _files_at(reader, snapshot, hint.version)
        if adds is not None and adds != hint.num_of_add_files:
            mismatches.append(f"numOfAddFiles {hint.num_of_add_files} (checkpoint holds {adds} live files)")
    if mismatches:
        report.add(
            "error", "last-checkpoint-mismatch",
            "_last_checkpoint disagrees with its checkpoint: " + "; ".join(mismatches),
            file=path, version=hint.version,
        )


def _checkpoint_rows(reader: SnapshotSource, parts: tuple[LogFile, ...]) -> int | None:
    store = reader.store
    total = 0
    try:
        for part in parts:
            full = store.full_path(part.path)
            if "://" in full:
                return None
            total += pq.read_metadata(full).num_rows
    except (OSError, ValueError):
        return None
    return total


def _files_at(reader: SnapshotSource, snapshot: Snapshot, version: int) -> int | None:
    """Live files at the checkpoint's version (the latest snapshot when it *is* that checkpoint)."""
    if snapshot.segment.checkpoint_version == version and snapshot.version == version:
        return snapshot.num_files()
    try:
        return reader.snapshot(version).num_files()
    except DeltaError:
        return None


# ------------------------------------------------------------------------------------------------ crc


def _check_crc(
    report: CheckReport, reader: SnapshotSource, files: list[LogFile], snapshot: Snapshot, *, deep: bool,
    progress: Progress,
) -> None:
    with_crc = sorted(f.version for f in files if f.kind == "crc")
    versions = [v for v in with_crc if (v <= snapshot.version if deep else v == snapshot.version)]
    for i, v in enumerate(versions):
        progress("crc", i, len(versions))
        crc = read_crc(reader.store, v, table=reader.location)
        if crc is None:
            report.add("warning", "crc-malformed", "checksum file is not valid; readers ignore it",
                       file=f"{LOG_DIR}/{v:020d}.crc", version=v)
            continue
        try:
            snap = snapshot if v == snapshot.version else reader.snapshot(v)
            verify_crc(snap, checksum=crc)
            for problem in histogram_problems(snap, crc):
                report.add("warning", "crc-histogram-mismatch", problem, file=crc.path, version=v)
        except CorruptLogError as exc:
            report.add("error", "crc-mismatch", exc.message, file=exc.file, version=v)
        except DeltaError as exc:
            report.add("warning", "crc-unverifiable", f"version {v} cannot be loaded to verify its checksum: {exc}",
                       file=f"{LOG_DIR}/{v:020d}.crc", version=v)
            continue
        report.num_crc_verified += 1
    progress("crc", len(versions), len(versions))


# ---------------------------------------------------------------------------------------------- files


def _check_files(report: CheckReport, snapshot: Snapshot, *, progress: Progress) -> None:
    from deltalog.commands.vacuum import store_relative_path

    store = snapshot.store
    root = store.root
    columns = snapshot.add_files().select(["path", "size", "deletionVector"])
    total = columns.num_rows
    progress("files", 0, total)
    paths = columns.column("path").to_pylist()
    sizes = columns.column("size").to_pylist()
    dv_col = columns.column("deletionVector")
    dvs = dv_col.to_pylist() if dv_col.null_count < total else None
    seen_dvs: set[str] = set()
    for i, (log_path, size) in enumerate(zip(paths, sizes)):
        if i % _PROGRESS_EVERY == 0 and i:
            progress("files", i, total)
        checked, actual = _size_of(store, root, log_path, store_relative_path(log_path, root))
        if not checked:
            report.num_files_unchecked += 1
        else:
            report.num_files_checked += 1
            if actual is None:
                report.missing_files.append(log_path)
                report.add("error", "file-missing", "data file does not exist", file=log_path, version=snapshot.version)
            elif size is not None and actual != size:
                report.add(
                    "error", "file-size-mismatch",
                    f"data file has {actual} bytes, the log records {size}", file=log_path, version=snapshot.version,
                )
        dv = dvs[i] if dvs is not None else None
        if dv:
            _check_dv(report, snapshot, log_path, dv, seen_dvs)
    progress("files", total, total)


def _size_of(store: Any, root: str, log_path: str, rel: str | None) -> tuple[bool, int | None]:
    """``(checked, size)``: the file's size (``None`` when it does not exist); ``checked`` is false for
    a file on another file system, which cannot be looked at from here."""
    try:
        if rel is not None:
            return True, int(store.stat(rel).size)
        if log_path.startswith(("file:", "/")):
            return True, os.stat(local_path(log_path) if log_path.startswith("file:") else log_path).st_size
    except (FileNotFoundError, NotADirectoryError, InvalidArgumentError):
        return True, None
    return False, None


def _check_dv(report: CheckReport, snapshot: Snapshot, log_path: str, dv: dict[str, Any], seen: set[str]) -> None:
    from deltalog.commands.vacuum import store_relative_path

    try:
        descriptor = DeletionVectorDescriptor.from_dict(
            {k: v for k, v in dv.items() if v is not None},
            where={"table": snapshot.table, "version": snapshot.version, "file": log_path},
        )
    except DeltaError as exc:
        report.add("error", "dv-invalid", exc.message, file=log_path, version=snapshot.version)
        return
    if descriptor.is_inline:
        return
    store = snapshot.store
    if descriptor.storageType == "u":
        rel = descriptor.relative_path()
        target = rel or descriptor.pathOrInlineDv
    else:
        rel = store_relative_path(descriptor.pathOrInlineDv, store.root)
        target = descriptor.pathOrInlineDv
    if target in seen:
        return
    seen.add(target)
    checked, size = _size_of(store, store.root, target, rel)
    if checked and size is None and rel is not None and _suffix_match(store, rel):
        report.add(
            "warning", "dv-prefixed-name",
            f"deletion vector file {target} exists only under a prefixed name (a test-only Spark setting); "
            "readers that do not look for it by suffix cannot read this file",
            file=log_path, version=snapshot.version,
        )
    elif checked and size is None:
        report.add(
            "error", "dv-missing", f"deletion vector file {target} of this data file does not exist",
            file=log_path, version=snapshot.version,
        )


def _suffix_match(store: Any, rel: str) -> bool:
    """Exactly one file in ``rel``'s directory has a name ending with ``rel``'s name (see
    :func:`deltalog.data.read._read_dv_bytes`)."""
    directory, _, name = rel.rpartition("/")
    try:
        matches = [f for f in store.list_dir(directory) if f.name.endswith(name) and f.name != name]
    except (OSError, InvalidArgumentError):
        return False
    return len(matches) == 1


# --------------------------------------------------------------------------------------------- repair


@dataclass(frozen=True)
class RepairResult:
    """What :func:`repair_table` committed: the new ``version`` and the log paths whose entries were
    removed (``version`` is ``None`` and nothing was committed when there was nothing to repair or for a
    ``dry_run``).

    Example:
        >>> RepairResult(version=None, removed=[], dry_run=True).num_removed
        0
    """

    version: int | None
    removed: list[str]
    dry_run: bool = False
    commit: CommitResult | None = field(default=None, repr=False)

    @property
    def num_removed(self) -> int:
        """How many log entries were (or, for a dry run, would be) removed."""
        return len(self.removed)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"version": self.version, "removed": list(self.removed), "num_removed": self.num_removed,
                "dry_run": self.dry_run}


def repair_table(
    table: TableHandle,
    *,
    report: CheckReport | None = None,
    dry_run: bool = False,
    clock: Callable[[], int] | None = None,
) -> RepairResult:
    """Remove the log entries of live files whose data file is missing, in one commit.

    Uses ``report`` (from :func:`check_table`) or checks the table first. The commit reads the snapshot
    that was checked, so a concurrent commit that removed one of the same files makes it fail with a
    conflict instead of removing twice. Other problems (gaps, checksum or size mismatches, missing
    deletion vectors) are not repaired.

    Example:
        >>> import deltalog
        >>> repair_table(deltalog.Table("/data/events"), dry_run=True).removed   # doctest: +SKIP
        ['day=2024-01-01/part-0.parquet']
    """
    from deltalog.txn.transaction import start_transaction

    if report is None:
        report = check_table(table)
    snapshot = report.snapshot
    missing = set(report.missing_files)
    if snapshot is None or not missing:
        return RepairResult(version=None, removed=[], dry_run=dry_run)
    files = snapshot.add_files()
    rows = [r for r in files.to_pylist() if r["path"] in missing]
    removed = sorted({r["path"] for r in rows})
    if dry_run:
        return RepairResult(version=None, removed=removed, dry_run=True)
    options: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        options["clock"] = clock
    txn = start_transaction(table, Fsck(num_removed_files=len(removed)), **options)
    txn.read_files(removed)
    txn.remove_files(rows)
    deleted_rows = sum(_num_records(r.get("stats")) for r in rows)
    result = txn.commit(metrics={"numRemovedFiles": len(removed), "numDeletedRows": deleted_rows})
    return RepairResult(version=result.version, removed=removed, commit=result)


def _num_records(stats: str | None) -> int:
    if not stats:
        return 0
    try:
        value = json.loads(stats).get("numRecords", 0)
    except (ValueError, AttributeError):
        return 0
    return int(value) if isinstance(value, int) else 0
