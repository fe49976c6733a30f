"""Tables that look after themselves: ``maintain`` plans from a table's health what to do and does it.

Owns: the maintenance policy a table's properties set (:mod:`~deltalog.maintenance.policy`), the plan read off
the table's health -- compact the partitions full of small files, purge the deletion vectors that delete a
large share of their file, checkpoint a long log, clean up expired log files, VACUUM what the retention
allows (:mod:`~deltalog.maintenance.plan`) -- and the run that carries it out step by step, each step its own
commit, beside concurrent writers (:mod:`~deltalog.maintenance.run`). ``Table.maintain``, ``deltalog maintain``
and the Spark engine's ``DeltaTable.maintain`` call it; after a commit, a writer runs its cheap steps when
the table asks for it (``deltalog.maintenance.afterCommit``).

May import: the commands it runs (:mod:`deltalog.commands`), the health check (:mod:`deltalog.health`), the
log, the transaction layer and everything below them. Not the :class:`~deltalog.Table` facade, the Arrow
front end, Spark or the CLI (which call it).

Example:
    >>> import deltalog, pyarrow as pa
    >>> for i in range(5):
    ...     _ = deltalog.write_table("memory://maintain-doc", pa.table({"id": [i]}), mode="append")
    >>> plan = plan_maintenance(deltalog.Table("memory://maintain-doc"))
    >>> [(s.action, s.num_files) for s in plan.steps]
    [('compact', 5)]
    >>> [o.status for o in maintain(deltalog.Table("memory://maintain-doc")).outcomes]
    ['done']
"""

from deltalog.maintenance.plan import ACTIONS, MaintenancePlan, MaintenanceStep, plan_maintenance
from deltalog.maintenance.policy import PREFIX, MaintenancePolicy
from deltalog.maintenance.run import (
    KernelRewriter,
    MaintenanceError,
    MaintenanceResult,
    Rewriter,
    Rewritten,
    StepOutcome,
    maintain,
    policy_of,
)

__all__ = [
    "ACTIONS",
    "PREFIX",
    "KernelRewriter",
    "MaintenanceError",
    "MaintenancePlan",
    "MaintenancePolicy",
    "MaintenanceResult",
    "MaintenanceStep",
    "Rewriter",
    "Rewritten",
    "StepOutcome",
    "maintain",
    "plan_maintenance",
    "policy_of",
]
