"""Version checksum files (``_delta_log/<version>.crc``): write, read and verify.

A checksum file records facts about the table state at one version (live file count and bytes, the
metadata and protocol, transactions, domains, and the protocol's histograms of file sizes and of deleted
rows per file, :mod:`deltalog.log.histograms`). Writers emit it after a commit; readers may recompute
the state and compare, which detects non-compliant edits of the log. Writing never fails a commit and
a missing or malformed checksum file is never an error: it is simply not used.

The histograms are kept incrementally: the checksum of version ``v`` starts from the histograms of the
``.crc`` of ``v - 1`` (when it has them) plus and minus the files commit ``v`` adds and removes, and keeps
that file's bin boundaries; when there is no such file, or the result does not add up to the snapshot's
file count and size (a commit that re-adds a live file, a remove without a size), they are computed from the
snapshot's files. Readers take ``fileSizeHistogram`` (the protocol's name) or ``histogramOpt`` (the name
older delta-spark versions write); a histogram that is not well-formed is left out, the rest of the file is
still used. A histogram's disagreement with the table is reported by :func:`histogram_problems` (``deltalog
check`` warns of it), not by :func:`verify_crc`: the histograms are optional and never make a table
unreadable.

Example:
    >>> from deltalog.storage import InMemoryLogStore
    >>> read_crc(InMemoryLogStore(), 0) is None
    True
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import CorruptLogError, DeltaError
from deltalog.log.histograms import FILE_SIZE_BIN_BOUNDARIES, DeletedRecordCountsHistogram, FileSizeHistogram
from deltalog.log.paths import LOG_DIR, crc_name
from deltalog.protocol.actions import DomainMetadata, Metadata, Protocol, Txn, parse_action_dict
from deltalog.protocol.features import reader_features, writer_features
from deltalog.storage import LogStore

if TYPE_CHECKING:
    from deltalog.log.reader import FileActions
    from deltalog.snapshot import Snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VersionChecksum:
    """The parsed content of a ``.crc`` file (attribute names are snake_case of the JSON keys)."""

    version: int
    table_size_bytes: int
    num_files: int
    num_metadata: int = 1
    num_protocol: int = 1
    metadata: Metadata | None = None
    protocol: Protocol | None = None
    txn_id: str | None = None
    in_commit_timestamp: int | None = None
    set_transactions: tuple[Txn, ...] | None = None
    domain_metadata: tuple[DomainMetadata, ...] | None = None
    num_deleted_records: int | None = None
    num_deletion_vectors: int | None = None
    #: ``fileSizeHistogram`` (read from ``histogramOpt`` too).
    file_size_histogram: FileSizeHistogram | None = field(default=None, repr=False)
    #: ``deletedRecordCountsHistogramOpt``.
    deleted_record_counts_histogram: DeletedRecordCountsHistogram | None = field(default=None, repr=False)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def path(self) -> str:
        """Store path of the file, e.g. ``_delta_log/00000000000000000003.crc``."""
        return crc_path(self.version)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to the file (optional fields only when known).

        Example:
            >>> VersionChecksum(version=0, table_size_bytes=10, num_files=1).to_dict()
            {'tableSizeBytes': 10, 'numFiles': 1, 'numMetadata': 1, 'numProtocol': 1}
        """
        out: dict[str, Any] = {}
        if self.txn_id is not None:
            out["txnId"] = self.txn_id
        out.update(
            tableSizeBytes=self.table_size_bytes,
            numFiles=self.num_files,
            numMetadata=self.num_metadata,
            numProtocol=self.num_protocol,
        )
        if self.in_commit_timestamp is not None:
            out["inCommitTimestampOpt"] = self.in_commit_timestamp
        if self.set_transactions is not None:
            out["setTransactions"] = [t.to_dict() for t in self.set_transactions]
        if self.domain_metadata is not None:
            out["domainMetadata"] = [d.to_dict() for d in self.domain_metadata]
        if self.metadata is not None:
            out["metadata"] = self.metadata.to_dict()
        if self.protocol is not None:
            out["protocol"] = self.protocol.to_dict()
        if self.num_deleted_records is not None:
            out["numDeletedRecordsOpt"] = self.num_deleted_records
        if self.num_deletion_vectors is not None:
            out["numDeletionVectorsOpt"] = self.num_deletion_vectors
        if self.file_size_histogram is not None:
            out["fileSizeHistogram"] = self.file_size_histogram.to_dict()
        if self.deleted_record_counts_histogram is not None:
            out["deletedRecordCountsHistogramOpt"] = self.deleted_record_counts_histogram.to_dict()
        return out


def crc_path(version: int) -> str:
    """Store path of the checksum file of ``version``.

    Example:
        >>> crc_path(7)
        '_delta_log/00000000000000000007.crc'
    """
    return f"{LOG_DIR}/{crc_name(version)}"


def checksum_for(
    snapshot: Snapshot, *, previous: VersionChecksum | None = None, commit: FileActions | None = None,
    histograms: bool = True,
) -> VersionChecksum:
    """Compute the checksum record of a snapshot's state (no I/O).

    The histograms are moved forward from ``previous`` (the checksum of ``snapshot.version - 1``) by
    ``commit`` (the actions of commit ``snapshot.version``) when both are given and the result agrees with
    the snapshot's file count and size; otherwise they are computed from the snapshot's files, over
    ``previous``'s bin boundaries when it has a histogram, else over Delta's default ones. ``histograms=False``
    leaves them out (what :func:`verify_crc` compares needs none of them).

    Example:
        >>> checksum_for(snap).num_files == snap.num_files()       # doctest: +SKIP
        True
    """
    files = snapshot.add_files()
    size = int(pc.sum(files.column("size")).as_py() or 0) if files.num_rows else 0
    info = snapshot.commit_info
    ict = None
    if snapshot.properties.get("delta.enableInCommitTimestamps", "false").lower() == "true" and info:
        ict = info.inCommitTimestamp
    txn_id = info.txnId if info is not None and isinstance(info.txnId, str) else None
    deleted = dv_count = None
    with_dvs = snapshot.has_feature("deletionVectors")
    if with_dvs:
        dv = files.column("deletionVector")
        dv_count = files.num_rows - dv.null_count
        card = pc.sum(pc.struct_field(dv, "cardinality")).as_py() if dv_count else 0
        deleted = int(card or 0)
    sizes, dvs = _histograms(snapshot, files, size, with_dvs, previous, commit) if histograms else (None, None)
    state = snapshot.state  # the reconciled Txn/DomainMetadata actions (lastUpdated etc.)
    return VersionChecksum(
        version=snapshot.version,
        table_size_bytes=size,
        num_files=files.num_rows,
        metadata=snapshot.metadata,
        protocol=snapshot.protocol,
        txn_id=txn_id,
        in_commit_timestamp=ict,
        set_transactions=tuple(state.txns[k] for k in sorted(state.txns)),
        domain_metadata=tuple(state.domains[k] for k in sorted(state.domains)),
        num_deleted_records=deleted,
        num_deletion_vectors=dv_count,
        file_size_histogram=sizes,
        deleted_record_counts_histogram=dvs,
    )


def _cardinalities(files: pa.Table) -> Any:
    return pc.struct_field(files.column("deletionVector"), "cardinality")


def _histograms(
    snapshot: Snapshot, files: pa.Table, size: int, with_dvs: bool,
    previous: VersionChecksum | None, commit: FileActions | None,
) -> tuple[FileSizeHistogram, DeletedRecordCountsHistogram | None]:
    """The checksum's histograms: incremental when possible (see :func:`checksum_for`), else computed."""
    base = previous if previous is not None and previous.version == snapshot.version - 1 else None
    if base is not None and base.file_size_histogram is not None and commit is not None \
            and commit.version == snapshot.version:
        adds, removes = commit.adds, commit.removes
        try:
            if removes.num_rows and removes.column("size").null_count:
                raise ValueError("a remove without a size")
            sizes = base.file_size_histogram.plus(adds.column("size")).minus(removes.column("size"))
            dvs = None
            if with_dvs and base.deleted_record_counts_histogram is not None:
                dvs = base.deleted_record_counts_histogram.plus(_cardinalities(adds)).minus(_cardinalities(removes))
            if sizes.num_files == files.num_rows and sizes.num_bytes == size and (
                    dvs is None or dvs.num_files == files.num_rows):
                if with_dvs and dvs is None:
                    dvs = DeletedRecordCountsHistogram.of(_cardinalities(files))
                return sizes, dvs
        except ValueError:
            pass
        log.debug("table %s: the histograms of version %d are computed from its files, not from the .crc of "
                  "version %d", snapshot.table, snapshot.version, base.version)
    bounds = (base.file_size_histogram.sorted_bin_boundaries if base is not None and base.file_size_histogram
              else FILE_SIZE_BIN_BOUNDARIES)
    sizes = FileSizeHistogram.of(files.column("size"), bounds)
    return sizes, DeletedRecordCountsHistogram.of(_cardinalities(files)) if with_dvs else None


def write_crc(
    snapshot: Snapshot, *, store: LogStore | None = None, quiet: bool = True, commit: FileActions | None = None
) -> str | None:
    """Write ``<version>.crc`` for ``snapshot`` if absent; returns its path, or ``None`` when it already
    existed or could not be written. With ``quiet`` (the default) it never raises: failures are logged
    (a commit must not fail here); ``quiet=False`` raises them for a caller that reports them. Given the
    ``commit`` that made the version (a writer's own), the histograms are kept from the previous version's
    ``.crc`` (see :func:`checksum_for`).

    Example:
        >>> write_crc(deltalog.Table("/data/t").snapshot())          # doctest: +SKIP
        '_delta_log/00000000000000000012.crc'
    """
    target = store if store is not None else snapshot.store
    path = crc_path(snapshot.version)
    try:
        previous = None
        if commit is not None and commit.version == snapshot.version and snapshot.version > 0:
            previous = read_crc(snapshot.store, snapshot.version - 1, table=snapshot.table)
        checksum = checksum_for(snapshot, previous=previous, commit=commit)
        data = json.dumps(checksum.to_dict(), separators=(",", ":"), ensure_ascii=False)
        target.write(path, data.encode("utf-8"), overwrite=False)
    except FileExistsError:
        return None
    except Exception as exc:
        if not quiet:
            raise
        log.warning("could not write %s of %s: %s", path, snapshot.table, exc, exc_info=True)
        return None
    return path


def read_crc(store: LogStore, version: int, *, table: str | None = None) -> VersionChecksum | None:
    """The checksum file of ``version``, or ``None`` when it is missing or malformed (logged).

    Example:
        >>> from deltalog.storage import InMemoryLogStore
        >>> s = InMemoryLogStore()
        >>> s.write(crc_path(0), b'{"tableSizeBytes":5,"numFiles":1,"numMetadata":1,"numProtocol":1}',
        ...         overwrite=False)
        >>> read_crc(s, 0).num_files
        1
    """
    path = crc_path(version)
    try:
        raw = store.read(path)
    except FileNotFoundError:
        return None
    try:
        return parse_crc(raw, version, table=table)
    except (ValueError, TypeError, KeyError, DeltaError) as exc:
        log.info("ignoring malformed %s of %s: %s", path, table or store.root, exc)
        return None


def _int(obj: Mapping[str, Any], key: str, *, required: bool = False) -> int | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise KeyError(f"missing required field {key!r}")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{key!r} must be an integer, got {value!r:.40}")
    return value


def parse_crc(data: bytes | str, version: int, *, table: str | None = None) -> VersionChecksum:
    """Parse checksum file content; raises ``ValueError``/``KeyError``/``TypeError`` or
    :class:`~deltalog.errors.CorruptLogError` when it is malformed.

    Example:
        >>> parse_crc('{"tableSizeBytes":0,"numFiles":0,"numMetadata":1,"numProtocol":1}', 0).num_files
        0
    """
    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise TypeError("a checksum file must hold one JSON object")
    where: dict[str, Any] = {"table": table, "version": version, "file": crc_path(version)}

    def action(key: str, body: Any) -> Any:
        return parse_action_dict({key: body}, **where) if body is not None else None

    txns = obj.get("setTransactions")
    domains = obj.get("domainMetadata")
    metadata = action("metaData", obj.get("metadata"))
    protocol = action("protocol", obj.get("protocol"))
    ict = _int(obj, "inCommitTimestampOpt")
    txn_id = obj.get("txnId")
    sizes = _optional(FileSizeHistogram.from_dict, obj.get("fileSizeHistogram", obj.get("histogramOpt")), where)
    dvs = _optional(DeletedRecordCountsHistogram.from_dict, obj.get("deletedRecordCountsHistogramOpt"), where)
    return VersionChecksum(
        version=version,
        table_size_bytes=_int(obj, "tableSizeBytes", required=True) or 0,
        num_files=_int(obj, "numFiles", required=True) or 0,
        num_metadata=_int(obj, "numMetadata", required=True) or 0,
        num_protocol=_int(obj, "numProtocol", required=True) or 0,
        metadata=metadata,
        protocol=protocol,
        txn_id=txn_id if isinstance(txn_id, str) else None,
        in_commit_timestamp=ict,
        set_transactions=None if txns is None else tuple(action("txn", t) for t in txns),
        domain_metadata=None if domains is None else tuple(action("domainMetadata", d) for d in domains),
        num_deleted_records=_int(obj, "numDeletedRecordsOpt"),
        num_deletion_vectors=_int(obj, "numDeletionVectorsOpt"),
        file_size_histogram=sizes,
        deleted_record_counts_histogram=dvs,
        raw=obj,
    )


def _optional(parse: Any, body: Any, where: Mapping[str, Any]) -> Any:
    """An optional part of a checksum file, or ``None`` when it is absent or not well-formed (logged)."""
    if body is None:
        return None
    try:
        return parse(body)
    except (TypeError, ValueError) as exc:
        log.info("ignoring a malformed histogram of %s of %s: %s", where["file"], where["table"], exc)
        return None


def verify_crc(snapshot: Snapshot, *, checksum: VersionChecksum | None = None) -> None:
    """Compare the snapshot's replayed state with its version's checksum file (if there is one).

    Raises :class:`~deltalog.errors.CorruptLogError` naming the ``.crc`` file and every disagreement
    (file count, table size, metadata id, protocol, transactions, domains, deletion-vector counts).
    A missing or malformed checksum file is not an error.

    Example:
        >>> verify_crc(deltalog.Table("/data/t").snapshot())         # doctest: +SKIP
    """
    crc = checksum if checksum is not None else read_crc(snapshot.store, snapshot.version, table=snapshot.table)
    if crc is None:
        return
    ours = checksum_for(snapshot, histograms=False)
    problems: list[str] = []

    def differ(what: str, theirs: object, mine: object) -> None:
        if theirs is not None and theirs != mine:
            problems.append(f"{what}: {theirs!r:.200} in the checksum, {mine!r:.200} replayed")

    differ("numFiles", crc.num_files, ours.num_files)
    differ("tableSizeBytes", crc.table_size_bytes, ours.table_size_bytes)
    differ("numMetadata", crc.num_metadata, 1)
    differ("numProtocol", crc.num_protocol, 1)
    if crc.metadata is not None:
        differ("metadata id", crc.metadata.id, snapshot.metadata.id)
    if crc.protocol is not None:
        differ("protocol", _protocol_key(crc.protocol), _protocol_key(snapshot.protocol))
    if crc.set_transactions is not None and "delta.setTransactionRetentionDuration" not in snapshot.properties:
        differ(
            "setTransactions",
            {t.appId: t.version for t in crc.set_transactions},
            {t.appId: t.version for t in ours.set_transactions or ()},
        )
    if crc.domain_metadata is not None:
        differ(
            "domainMetadata",
            {d.domain: d.configuration for d in crc.domain_metadata if not d.removed},
            {d.domain: d.configuration for d in ours.domain_metadata or ()},
        )
    if ours.num_deletion_vectors is not None:
        differ("numDeletionVectorsOpt", crc.num_deletion_vectors, ours.num_deletion_vectors)
        differ("numDeletedRecordsOpt", crc.num_deleted_records, ours.num_deleted_records)
    if ours.in_commit_timestamp is not None:
        differ("inCommitTimestampOpt", crc.in_commit_timestamp, ours.in_commit_timestamp)
    if problems:
        raise CorruptLogError(
            "version checksum file disagrees with the replayed table state: " + "; ".join(problems),
            table=snapshot.table,
            version=snapshot.version,
            file=crc.path,
        )


def histogram_problems(snapshot: Snapshot, crc: VersionChecksum) -> list[str]:
    """How the checksum's histograms disagree with the snapshot's files (computed over the checksum's own
    bin boundaries); empty when they agree or the checksum has none.

    Example:
        >>> histogram_problems(snap, read_crc(snap.store, snap.version))  # doctest: +SKIP
        []
    """
    problems = []
    files = snapshot.add_files()
    if crc.file_size_histogram is not None:
        mine = FileSizeHistogram.of(files.column("size"), crc.file_size_histogram.sorted_bin_boundaries)
        if mine != crc.file_size_histogram:
            problems.append(_histogram_difference("fileSizeHistogram", crc.file_size_histogram, mine))
    if crc.deleted_record_counts_histogram is not None:
        theirs = crc.deleted_record_counts_histogram.deleted_record_counts
        counts = DeletedRecordCountsHistogram.of(_cardinalities(files)).deleted_record_counts
        if counts != theirs:
            problems.append(f"deletedRecordCountsHistogramOpt: {list(theirs)} in the checksum, {list(counts)} replayed")
    return problems


def _histogram_difference(name: str, theirs: FileSizeHistogram, mine: FileSizeHistogram) -> str:
    bins = [f"bin {b}: {tc} files / {tb} bytes in the checksum, {mc} / {mb} replayed"
            for b, tc, tb, mc, mb in zip(theirs.sorted_bin_boundaries, theirs.file_counts, theirs.total_bytes,
                                         mine.file_counts, mine.total_bytes) if (tc, tb) != (mc, mb)]
    more = f" (and {len(bins) - 3} more bins)" if len(bins) > 3 else ""
    return f"{name}: " + "; ".join(bins[:3]) + more


def _protocol_key(p: Protocol) -> tuple[int, int, tuple[str, ...], tuple[str, ...]]:
    return (
        p.minReaderVersion,
        p.minWriterVersion,
        tuple(sorted(reader_features(p))),
        tuple(sorted(writer_features(p))),
    )


__all__ = ["VersionChecksum", "checksum_for", "crc_path", "histogram_problems", "parse_crc", "read_crc", "verify_crc",
           "write_crc"]
