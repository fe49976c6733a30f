"""Row-level concurrency for deletion vectors: two DML commits that delete (or update) *different rows*
of the same data file both commit.

Both transactions read file ``P`` with deletion vector ``D0`` and replaced it: the winner with ``Dw``,
this transaction with ``Dl``. Delta's reference rules abort the loser (``ConcurrentDeleteReadException`` /
``ConcurrentDeleteDeleteException``: both removed ``P``). When the rows each deleted anew -- ``Dw - D0``
and ``Dl - D0`` -- are disjoint, neither transaction's result depends on the other's change to ``P``, so
:func:`rebase_deletion_vectors` rebases the loser instead: its ``remove`` of ``P`` now names the winner's
post-image (``Dw``) and its ``add`` carries ``Dw ∪ Dl``, written as a new deletion vector (inline when
small, else a new file, deleted again if the commit does not land). The winner's DV update of ``P`` is then
left out of the conflict checks; everything else the winner did (files it added, files it removed
outright, metadata) is checked as before, so a delete and an update of *one* row, or an update whose new
rows match what the loser read, still conflict. The rows the loser inserted (new images of updated rows,
MERGE inserts) are kept as they are.

A DML statement that loses to a compaction is handled first (:mod:`deltalog.commands.compaction_rebase`:
re-expressed on the compacted files through row ids when the table tracks rows).

Registered by the commands that write deletion vectors (the kernel's DELETE and UPDATE, Spark's DELETE /
UPDATE / MERGE) through ``Transaction.conflict_resolvers``. A DELETE or UPDATE also ignores the winner's
deletion-vector updates of files it read but does not change (see :func:`_without_read_only_updates`).

On by default (it only acts where both commits wrote deletion vectors); the table property
``deltalog.rowLevelConcurrency=false`` turns it off (Delta's reference rules apply: the loser aborts).
Each rebase is recorded in the commit's ``commitInfo.rowLevelConcurrency`` (the winning versions and
the number of files rebased); where rows overlap, the conflict's message names them.

Example:
    >>> txn.conflict_resolvers.append(rebase_deletion_vectors)                    # doctest: +SKIP
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from deltalog.commands.compaction_rebase import rebase_onto_compaction
from deltalog.commands.dv_actions import ROW_LEVEL_CONCURRENCY, describe_rows, enabled, same_dv
from deltalog.data.deletion_vectors import INLINE_DV_MAX_BYTES, write_deletion_vectors
from deltalog.data.read import deleted_rows
from deltalog.protocol.actions import Add, Remove

if TYPE_CHECKING:
    from deltalog.txn.conflicts import WinningCommit
    from deltalog.txn.transaction import Transaction

__all__ = ["ROW_LEVEL_CONCURRENCY", "enabled", "rebase_deletion_vectors"]

log = logging.getLogger(__name__)


def _candidates(txn: Transaction, winner: WinningCommit) -> list[str]:
    """Files both transactions gave a new deletion vector (removed and re-added under the same path)."""
    w_removed = {r["path"] for r in winner.removed}
    w_added = {a["path"] for a in winner.added if a.get("deletionVector")}
    mine_removed = {r.path for r in txn._removes}
    mine_added = {a.path for a in txn._adds if a.deletionVector}
    return sorted(w_removed & w_added & mine_removed & mine_added)


def _without_read_only_updates(txn: Transaction, winner: WinningCommit) -> WinningCommit:
    """For a DELETE or UPDATE: ``winner`` without its deletion-vector updates of files this transaction
    read but does not change. Such a file held no row matching this transaction's condition (else it
    would change it), and rows deleted from it cannot start matching; the winner's moved rows are in the
    files it added, which the checks still see. (Not for MERGE: a target row deleted under an insert-only
    MERGE would turn a match into an insert.)"""
    if txn.operation.name not in ("DELETE", "UPDATE"):
        return winner
    mine = {r.path for r in txn._removes}
    w_removed = {r["path"] for r in winner.removed}
    updated = {a["path"] for a in winner.added if a.get("deletionVector") and a["path"] in w_removed} - mine
    if not updated:
        return winner
    return replace(winner, added=tuple(a for a in winner.added if a["path"] not in updated),
                   removed=tuple(r for r in winner.removed if r["path"] not in updated))


def rebase_deletion_vectors(txn: Transaction, winner: WinningCommit) -> WinningCommit:
    """Rebase this transaction's deletion-vector updates onto ``winner``'s where the newly deleted rows
    are disjoint (see the module docstring); returns ``winner`` without the file actions resolved.

    Example:
        >>> rebase_deletion_vectors(txn, winner).removed                           # doctest: +SKIP
        ()
    """
    if txn.snapshot is not None and not enabled(txn.snapshot.properties, table=txn.table):
        return winner
    winner = rebase_onto_compaction(txn, winner)
    winner = _without_read_only_updates(txn, winner)
    paths = _candidates(txn, winner)
    if not paths:
        return winner
    w_removed = {r["path"]: r for r in winner.removed}
    w_added = {a["path"]: a for a in winner.added}
    rebased: dict[str, tuple[Remove, Add, np.ndarray]] = {}
    for path in paths:
        mine_remove = next(r for r in txn._removes if r.path == path)
        mine_add = next(a for a in txn._adds if a.path == path)
        w_before, w_after = w_removed[path].get("deletionVector"), w_added[path].get("deletionVector")
        if not same_dv(w_before, mine_remove.deletionVector):
            continue  # the two did not start from the same deletion vector: leave it to the checks
        start = deleted_rows(txn.store, w_before)
        theirs = np.setdiff1d(deleted_rows(txn.store, w_after), start, assume_unique=True)
        mine = np.setdiff1d(deleted_rows(txn.store, mine_add.deletionVector), start, assume_unique=True)
        both = np.intersect1d(theirs, mine, assume_unique=True)
        if both.size:  # both deleted (or updated) one row: a real conflict, its message names the rows
            txn.row_overlaps[path] = f"both deleted or updated {describe_rows(both)} of it"
            continue
        union = np.union1d(np.union1d(start, theirs), mine).astype(np.uint64)
        new_remove = replace(mine_remove, deletionVector=dict(w_after) if w_after else None)
        rebased[path] = (new_remove, mine_add, union)
    if not rebased:
        return winner
    descriptors = write_deletion_vectors(txn.store, [u for _, _, u in rebased.values()],
                                         inline_max_bytes=INLINE_DV_MAX_BYTES)
    txn.resolver_files.extend({rel for d in descriptors if (rel := d.relative_path()) is not None})
    for (path, (new_remove, old_add, _)), dv in zip(rebased.items(), descriptors, strict=True):
        txn._removes = [new_remove if r.path == path else r for r in txn._removes]
        txn._adds = [replace(old_add, deletionVector=dv.to_dict()) if a.path == path else a for a in txn._adds]
    txn.reconciled[winner.version] = txn.reconciled.get(winner.version, 0) + len(rebased)
    log.info("rebased deletion vectors of %d file(s) onto version %d of %s", len(rebased), winner.version,
             txn.table)
    return replace(winner, added=tuple(a for a in winner.added if a["path"] not in rebased),
                   removed=tuple(r for r in winner.removed if r["path"] not in rebased))
