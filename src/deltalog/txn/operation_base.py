"""The base of every operation (:class:`Operation`) and the helpers that render parameters the way the
reference implementation stores them; the operations themselves are in :mod:`deltalog.txn.operations`
(data changes and maintenance) and :mod:`deltalog.txn.operations_ddl` (table definition).

Example:
    >>> json_param(["a"])
    '["a"]'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Operation"]


def json_param(value: Any) -> str:
    """Compact JSON text, the way parameter values are stored (a list becomes ``'["a"]'``)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def predicate_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


@dataclass(frozen=True)
class Operation:
    """Base class: ``name`` is the ``commitInfo.operation`` string.

    Example:
        >>> from deltalog.txn.operations import Delete
        >>> Delete(predicate="x > 3").name
        'DELETE'
    """

    NAME: ClassVar[str] = ""
    #: the parameters delta-spark writes to the log as JSON literals (booleans, numbers, null) rather than
    #: strings, e.g. ``"auto":false``; :meth:`parameters` shows them as text, the way the history does
    LITERAL_PARAMETERS: ClassVar[frozenset[str]] = frozenset()
    BLIND_APPEND: ClassVar[bool] = False
    CHANGES_DATA: ClassVar[bool] = True
    REWRITES_ROWS: ClassVar[bool] = False
    WRITES_DATA_FILES: ClassVar[bool] = True

    @property
    def name(self) -> str:
        """The ``commitInfo.operation`` string.

        Example:
            >>> from deltalog.txn.operations import Update
            >>> Update().name
            'UPDATE'
        """
        return self.NAME

    @property
    def is_blind_append(self) -> bool:
        """Only adds files and reads nothing (still checked against the staged actions at commit).

        Example:
            >>> from deltalog.txn.operations import Write
            >>> Write(mode="Append").is_blind_append, Write(mode="Overwrite").is_blind_append
            (True, False)
        """
        return self.BLIND_APPEND

    @property
    def changes_data(self) -> bool:
        """Changes the rows of the table (``dataChange=true`` actions).

        Example:
            >>> from deltalog.txn.operations import VacuumEnd
            >>> VacuumEnd().changes_data
            False
        """
        return self.CHANGES_DATA

    @property
    def rewrites_rows(self) -> bool:
        """May replace existing rows by rewritten copies (needs change-data files under CDF).

        Example:
            >>> from deltalog.txn.operations import Merge, Write
            >>> Merge().rewrites_rows, Write().rewrites_rows
            (True, False)
        """
        return self.REWRITES_ROWS

    @property
    def writes_data_files(self) -> bool:
        """Its ``add`` actions are files encoded with the table's schema (``False`` for CLONE and
        CONVERT, which take existing files as they are: column mapping does not stop them).

        Example:
            >>> from deltalog.txn.operations import Clone, Write
            >>> Write().writes_data_files, Clone(source="s").writes_data_files
            (True, False)
        """
        return self.WRITES_DATA_FILES

    def parameters(self) -> dict[str, str | None]:
        """``operationParameters`` as ``DESCRIBE HISTORY`` shows them: every value a string (JSON text for
        lists and maps) or ``None``; :meth:`commit_parameters` is what the log holds.

        Example:
            >>> from deltalog.txn.operations import Optimize
            >>> Optimize(z_order_by=("a",)).parameters()
            {'predicate': '[]', 'zOrderBy': '["a"]', 'clusterBy': '[]', 'auto': 'false'}
        """
        return {}

    def commit_parameters(self) -> dict[str, Any]:
        """``commitInfo.operationParameters`` as delta-spark writes them to the log: the values of
        :attr:`LITERAL_PARAMETERS` as JSON literals (``true``, ``604800000``), every other value a string.

        Example:
            >>> from deltalog.txn.operations import Optimize
            >>> Optimize().commit_parameters()
            {'predicate': '[]', 'zOrderBy': '[]', 'clusterBy': '[]', 'auto': False}
        """
        return {key: json.loads(value) if key in self.LITERAL_PARAMETERS and value is not None else value
                for key, value in self.parameters().items()}

    def metric_names(self) -> tuple[str, ...]:
        """The ``operationMetrics`` keys this operation reports when the transaction computes them.

        Example:
            >>> from deltalog.txn.operations import Write
            >>> Write(mode="Append").metric_names()
            ('numFiles', 'numOutputRows', 'numOutputBytes')
        """
        return ("numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes")


