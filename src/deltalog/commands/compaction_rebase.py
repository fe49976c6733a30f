"""Row-level concurrency with compaction: a DELETE / UPDATE / MERGE that loses to an ``OPTIMIZE`` (or any
commit whose every file action has ``dataChange=false``) commits anyway.

A compaction moves rows to new files without changing any. Delta's reference rules still abort a DML
statement that removed (or gave a deletion vector to) a file the compaction removed, and one that merely
read such a file. With row tracking (``delta.enableRowTracking=true``) every row keeps its id when it
moves, so :func:`rebase_onto_compaction` re-expresses the loser on the compacted files instead:

* for each file ``P`` the loser changed and the compaction removed (both starting from the same deletion
  vector), the rows of ``P`` the loser took out -- the rows its new deletion vector adds, or every live row
  when it removed ``P`` outright (copy-on-write: its new files hold the survivors, ids included) -- are
  named by their row ids (``P``'s materialized row-id column, else ``baseRowId`` + row index);
* those ids are found in the compacted files (the same way), and the loser's ``remove`` / ``add`` of ``P``
  become a ``remove`` of each compacted file holding some of them and its ``add`` with a deletion vector
  marking them (the file keeps its row ids). The rows the loser wrote (new images, inserts) stay as
  they are.

Files the loser only read and the compaction rewrote are dropped from the winner, with or without row
tracking: no row of theirs changed. When the loser changed a compacted file and the table does not track
rows, the conflict stays and its message says that enabling row tracking lets such pairs commit. Any
surprise (a row id found twice or not at all, a file read from another deletion vector, absolute paths)
leaves the winner to the ordinary checks: the loser aborts, nothing is lost. Runs first in
:func:`deltalog.commands.dv_rebase.rebase_deletion_vectors`; off with ``deltalog.rowLevelConcurrency=false``.

Example:
    >>> winner = rebase_onto_compaction(txn, winner)                                # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np

from deltalog.commands.dv_actions import enabled, readd_with_dv, same_dv
from deltalog.data.read import deleted_rows

if TYPE_CHECKING:
    from deltalog.txn.conflicts import WinningCommit
    from deltalog.txn.transaction import Transaction

__all__ = ["is_compaction", "rebase_onto_compaction"]

log = logging.getLogger(__name__)

_HINT = ("the concurrent commit compacted it; with row tracking (delta.enableRowTracking=true) deltalog "
         "re-expresses this change on the compacted files and both commit")


def is_compaction(winner: WinningCommit) -> bool:
    """Whether a winning commit only moved rows: it removed files, and every file action it wrote has
    ``dataChange=false``.

    Example:
        >>> from deltalog.txn.conflicts import WinningCommit
        >>> is_compaction(WinningCommit(3, "OPTIMIZE", removed=({"path": "a", "dataChange": False},)))
        True
    """
    return bool(winner.removed) and all(r.get("dataChange") is False for r in winner.removed) and all(
        a.get("dataChange") is False for a in winner.added)


def _tracks_rows(txn: Transaction) -> str | None:
    """The materialized row-id column of a table whose rows keep their ids, else ``None``."""
    from deltalog.txn.row_tracking import tracked_fields

    snap = txn.snapshot
    if snap is None or snap.properties.get("delta.enableRowTracking", "false").strip().lower() != "true":
        return None
    fields = tracked_fields(snap.protocol, snap.metadata)
    return fields[0].name if fields is not None else None


def _row_ids(txn: Transaction, add: Mapping[str, Any], column: str) -> np.ndarray | None:
    """Every physical row's id in one file (materialized value, else ``baseRowId`` + index); ``None`` when
    the file cannot tell (no base id, or a path outside the table)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path = str(add["path"])
    if "://" in path or path.startswith("/") or add.get("baseRowId") is None:
        return None
    pf = pq.ParquetFile(txn.store.open_input(unquote(path), size=add.get("size")))
    computed = np.arange(pf.metadata.num_rows, dtype=np.int64) + int(add["baseRowId"])
    if column not in pf.schema_arrow.names:
        return computed
    stored = pf.read(columns=[column]).column(column).combine_chunks().cast("int64")
    return np.asarray(pc.coalesce(stored, pa.array(computed)).to_numpy(zero_copy_only=False), dtype=np.int64)


def _live_adds(txn: Transaction, paths: list[str]) -> dict[str, dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if txn.snapshot is None:
        return {}
    files = txn.snapshot.add_files()
    rows = files.filter(pc.is_in(files.column("path"), value_set=pa.array(paths, pa.string()))).to_pylist()
    return {str(row["path"]): row for row in rows}


def _taken_out(txn: Transaction, path: str, start: Mapping[str, Any] | None, ids: np.ndarray) -> np.ndarray:
    """Row ids of the rows of ``path`` the loser took out: newly deleted by its deletion vector, or every
    live row when it removed the file outright."""

    before = deleted_rows(txn.store, start)
    re_added = next((a for a in txn._adds if a.path == path), None)
    if re_added is not None:
        rows = np.setdiff1d(deleted_rows(txn.store, re_added.deletionVector), before, assume_unique=True)
    else:
        rows = np.setdiff1d(np.arange(ids.size, dtype=np.uint64), before, assume_unique=True)
    return ids[rows.astype(np.int64)]


def rebase_onto_compaction(txn: Transaction, winner: WinningCommit) -> WinningCommit:
    """Re-express this transaction on the files a compaction wrote (see the module docstring); returns
    ``winner`` without the file actions resolved.

    Example:
        >>> rebase_onto_compaction(txn, winner).removed                            # doctest: +SKIP
        ()
    """

    if not is_compaction(winner) or (txn.snapshot is not None and not enabled(txn.snapshot.properties,
                                                                              table=txn.table)):
        return winner
    mine = {r.path: r for r in txn._removes}
    read_only = {r["path"] for r in winner.removed if r["path"] not in mine}
    winner = replace(winner, removed=tuple(r for r in winner.removed if r["path"] not in read_only))
    changed = [r for r in winner.removed if r["path"] in mine]
    if not changed:
        return winner
    column = _tracks_rows(txn)
    if column is None:
        for r in changed:
            txn.row_overlaps.setdefault(r["path"], _HINT)
        return winner
    live = _live_adds(txn, [r["path"] for r in changed])
    wanted: list[np.ndarray] = []
    for r in changed:
        old = live.get(r["path"])
        if old is None or not same_dv(r.get("deletionVector"), mine[r["path"]].deletionVector):
            return winner  # not the file version this transaction read: the checks decide
        ids = _row_ids(txn, old, column)
        if ids is None:
            return winner
        wanted.append(_taken_out(txn, r["path"], mine[r["path"]].deletionVector, ids))
    targets = np.unique(np.concatenate(wanted)) if wanted else np.empty(0, np.int64)
    hits: list[tuple[Mapping[str, Any], np.ndarray]] = []
    found = 0
    for add in winner.added:
        ids = _row_ids(txn, add, column)
        if ids is None:
            return winner
        positions = np.nonzero(np.isin(ids, targets, assume_unique=False))[0]
        if positions.size:
            hits.append((add, positions))
            found += positions.size
    if found != targets.size:
        return winner  # some moved row is not (or more than once) in the compacted files: abort
    _restate(txn, winner, {r["path"] for r in changed}, hits)
    return replace(winner, removed=tuple(r for r in winner.removed if r["path"] not in mine))


def _restate(txn: Transaction, winner: WinningCommit, paths: set[str],
             hits: list[tuple[Mapping[str, Any], np.ndarray]]) -> None:
    from deltalog.data.deletion_vectors import INLINE_DV_MAX_BYTES, write_deletion_vectors
    from deltalog.txn.commit import remove_action

    bitmaps = [
        np.union1d(deleted_rows(txn.store, add.get("deletionVector")), positions.astype(np.uint64)).astype(np.uint64)
        for add, positions in hits
    ]
    descriptors = write_deletion_vectors(txn.store, bitmaps, inline_max_bytes=INLINE_DV_MAX_BYTES)
    txn.resolver_files.extend({rel for d in descriptors if (rel := d.relative_path()) is not None})
    now = txn._clock()
    txn._removes = [r for r in txn._removes if r.path not in paths]
    txn._adds = [a for a in txn._adds if a.path not in paths]
    for (add, _), dv in zip(hits, descriptors, strict=True):
        txn._removes.append(remove_action(add, deletion_timestamp=now))
        txn._adds.append(readd_with_dv(add, dv.to_dict()))
    txn.read_files(add["path"] for add, _ in hits)
    txn.reconciled[winner.version] = txn.reconciled.get(winner.version, 0) + len(paths)
    log.info("re-expressed changes to %d compacted file(s) on %d file(s) of version %d of %s", len(paths),
             len(hits), winner.version, txn.table)
