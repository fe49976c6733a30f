"""A table's health, read from its log alone: no data file is opened (``Table.health()``, ``deltalog health``).

Owns: what the log says about how well a table is laid out and kept -- live files, bytes and rows, the
file-size histogram of the table and of each partition, small files, partition skew, deletion vectors and
the reads they cost, files without statistics, clustering and Z-order coverage, tombstones and what a
VACUUM would reclaim, the log since its last checkpoint, the last OPTIMIZE / VACUUM / checkpoint, protocol
and features (:class:`~deltalog.health.model.TableHealth`), and the thresholds a monitor checks them against
(:meth:`~deltalog.health.model.TableHealth.breaches`). The numbers come from the snapshot's columnar file
index (Arrow), a listing of ``_delta_log`` and the ``commitInfo`` of recent commits; the ``.crc`` file of the
version gives the file-size histogram when it is valid.

May import: the layers below it -- :mod:`deltalog.snapshot` / :mod:`deltalog.snapshot_load`, :mod:`deltalog.log`,
:mod:`deltalog.data`, :mod:`deltalog.protocol`, :mod:`deltalog.storage`, :mod:`deltalog.errors`. Not the
transaction layer, the commands, the change feed or the :class:`~deltalog.Table` facade (which calls it), so
commands that act on a table's health (maintenance) can build on it.

Modules: :mod:`~deltalog.health.model` (the typed result and its JSON document), :mod:`~deltalog.health.files`
(the vectorized file facts), :mod:`~deltalog.health.log_facts` (listing, checkpoint, history),
:mod:`~deltalog.health.compute` (:func:`table_health`, which puts them together),
:mod:`~deltalog.health.history_series` (size, files and commit rate over the last versions),
:mod:`~deltalog.health.svg_charts` and :mod:`~deltalog.health.report_html` (:func:`html_report`: the HTML
report, one offline page with inline SVG plots).

Example:
    >>> import deltalog, pyarrow as pa
    >>> _ = deltalog.write_table("memory://health-doc", pa.table({"id": [1, 2, 3]}))
    >>> h = table_health(deltalog.Table("memory://health-doc").snapshot())
    >>> h.num_files, h.num_rows, h.small_file_share, h.commits_since_checkpoint
    (1, 3, 1.0, 1)
"""

from deltalog.health.compute import (
    DEFAULT_HISTORY_DEPTH,
    DEFAULT_TARGET_FILE_SIZE,
    default_small_file_threshold,
    table_health,
    target_file_size,
)
from deltalog.health.history_series import HistoryPoint, HistorySeries, commit_rate, history_points
from deltalog.health.model import Breach, CommitRef, PartitionHealth, TableHealth
from deltalog.health.report_html import html_report, render_html

__all__ = [
    "DEFAULT_HISTORY_DEPTH",
    "DEFAULT_TARGET_FILE_SIZE",
    "Breach",
    "CommitRef",
    "HistoryPoint",
    "HistorySeries",
    "PartitionHealth",
    "TableHealth",
    "commit_rate",
    "default_small_file_threshold",
    "history_points",
    "html_report",
    "render_html",
    "table_health",
    "target_file_size",
]
