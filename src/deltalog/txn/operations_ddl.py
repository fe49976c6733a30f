"""Operations that change the table's definition -- properties, constraints, protocol, columns,
clustering, features -- as data (see :mod:`deltalog.txn.operations`, which re-exports them).

Example:
    >>> ClusterBy(old=("a",), new=()).name
    'CLUSTER BY'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from deltalog.txn.operation_base import Operation, json_param

__all__ = [
    "AddColumns",
    "AddConstraint",
    "ChangeColumn",
    "ClusterBy",
    "DropColumns",
    "DropConstraint",
    "DropTableFeature",
    "RenameColumn",
    "SetTableProperties",
    "UnsetTableProperties",
    "UpgradeProtocol",
]


@dataclass(frozen=True)
class SetTableProperties(Operation):
    """``SET TBLPROPERTIES``.

    Example:
        >>> SetTableProperties(properties={"delta.appendOnly": "true"}).parameters()
        {'properties': '{"delta.appendOnly":"true"}'}
    """

    properties: Mapping[str, str] = field(default_factory=dict)
    NAME: ClassVar[str] = "SET TBLPROPERTIES"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The properties set, as JSON text."""
        return {"properties": json_param(dict(self.properties))}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class UnsetTableProperties(Operation):
    """``UNSET TBLPROPERTIES``.

    Example:
        >>> UnsetTableProperties(keys=("a",)).parameters()
        {'properties': '["a"]', 'ifExists': 'true'}
    """

    keys: tuple[str, ...] = ()
    if_exists: bool = True
    NAME: ClassVar[str] = "UNSET TBLPROPERTIES"
    CHANGES_DATA: ClassVar[bool] = False
    LITERAL_PARAMETERS: ClassVar[frozenset[str]] = frozenset({"ifExists"})

    def parameters(self) -> dict[str, str | None]:
        """The keys removed and whether missing keys were tolerated."""
        return {"properties": json_param(list(self.keys)), "ifExists": "true" if self.if_exists else "false"}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class AddConstraint(Operation):
    """``ADD CONSTRAINT``: a CHECK constraint stored as ``delta.constraints.<name>``.

    Example:
        >>> AddConstraint(constraint="pos", expr="x > 0").parameters()
        {'name': 'pos', 'expr': 'x > 0'}
    """

    constraint: str = ""
    expr: str = ""
    NAME: ClassVar[str] = "ADD CONSTRAINT"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """Constraint name and expression."""
        return {"name": self.constraint, "expr": self.expr}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class DropConstraint(Operation):
    """``DROP CONSTRAINT``: ``expr`` is the dropped constraint's expression (``None`` when it did not
    exist, e.g. with ``IF EXISTS``), recorded as delta-spark does.

    Example:
        >>> DropConstraint(constraint="pos", expr="x > 0").parameters()
        {'name': 'pos', 'expr': 'x > 0', 'existed': 'true'}
        >>> DropConstraint(constraint="pos").parameters()
        {'name': 'pos', 'existed': 'false'}
    """

    constraint: str = ""
    expr: str | None = None
    NAME: ClassVar[str] = "DROP CONSTRAINT"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The constraint name, its expression and whether it existed."""
        if self.expr is None:
            return {"name": self.constraint, "existed": "false"}
        return {"name": self.constraint, "expr": self.expr, "existed": "true"}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class UpgradeProtocol(Operation):
    """``UPGRADE PROTOCOL``: an explicit protocol change.

    Example:
        >>> UpgradeProtocol(new_protocol={"minReaderVersion": 1, "minWriterVersion": 7}).parameters()
        {'newProtocol': '{"minReaderVersion":1,"minWriterVersion":7}'}
    """

    new_protocol: Mapping[str, Any] = field(default_factory=dict)
    NAME: ClassVar[str] = "UPGRADE PROTOCOL"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The new protocol as JSON text."""
        return {"newProtocol": json_param(dict(self.new_protocol))}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


def logged_field(field: Mapping[str, Any]) -> dict[str, Any]:
    """A field's JSON object as delta-spark logs a column (``structFieldToMap``): a nested type by its name
    alone (``struct``, ``array``, ``map``), as Spark's ``DataType.typeName`` gives it.

    Example:
        >>> logged_field({"name": "s", "type": {"type": "struct", "fields": []}, "nullable": True, "metadata": {}})
        {'name': 's', 'type': 'struct', 'nullable': True, 'metadata': {}}
    """
    kind = field.get("type")
    return {**field, "type": kind.get("type") if isinstance(kind, Mapping) else kind}


@dataclass(frozen=True)
class AddColumns(Operation):
    """``ADD COLUMNS``: ``columns`` are the new fields' JSON objects (``{"name":..., "type":...}``).

    Example:
        >>> AddColumns(columns=({"name": "z", "type": "integer", "nullable": True, "metadata": {}},)).parameters()
        {'columns': '[{"column":{"name":"z","type":"integer","nullable":true,"metadata":{}}}]'}
    """

    columns: tuple[Mapping[str, Any], ...] = ()
    #: each column's place when one was given (``"FIRST"``, ``"AFTER id"``), else ``None`` (appended)
    positions: tuple[str | None, ...] = ()
    NAME: ClassVar[str] = "ADD COLUMNS"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The added columns (and their positions, when given), as delta-spark records them."""
        places = list(self.positions) + [None] * (len(self.columns) - len(self.positions))
        return {"columns": json_param([{"column": logged_field(c), **({"position": p} if p else {})}
                                       for c, p in zip(self.columns, places)])}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class ReplaceColumns(Operation):
    """``REPLACE COLUMNS``: ``columns`` are the new schema's top-level fields as JSON objects.

    Example:
        >>> ReplaceColumns(columns=({"name": "z", "type": "integer", "nullable": True, "metadata": {}},)).parameters()
        {'columns': '[{"name":"z","type":"integer","nullable":true,"metadata":{}}]'}
    """

    columns: tuple[Mapping[str, Any], ...] = ()
    NAME: ClassVar[str] = "REPLACE COLUMNS"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The new columns as a JSON list, as delta-spark records them."""
        return {"columns": json_param([logged_field(c) for c in self.columns])}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class DropTableFeature(Operation):
    """``DROP FEATURE``: the commit that removes ``feature_name`` from the protocol. With
    ``protect_checkpoints`` the commit also adds ``checkpointProtection`` and records its own version in
    ``delta.requireCheckpointProtectionBeforeVersion`` (filled in when the commit is rendered, so a retry
    at a later version records that version).

    Example:
        >>> DropTableFeature(feature_name="deletionVectors").parameters()
        {'featureName': 'deletionVectors', 'truncateHistory': 'false'}
    """

    feature_name: str = ""
    truncate_history: bool = False
    protect_checkpoints: bool = False
    NAME: ClassVar[str] = "DROP FEATURE"
    CHANGES_DATA: ClassVar[bool] = False
    LITERAL_PARAMETERS: ClassVar[frozenset[str]] = frozenset({"truncateHistory"})

    def parameters(self) -> dict[str, str | None]:
        """The feature and whether history was truncated, as delta-spark records them."""
        return {"featureName": self.feature_name, "truncateHistory": str(self.truncate_history).lower()}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class ClusterBy(Operation):
    """``CLUSTER BY``: the clustering columns before and after (``[]``: ``CLUSTER BY NONE``).

    Example:
        >>> ClusterBy(old=("a",), new=("b",)).parameters()
        {'oldClusteringColumns': 'a', 'newClusteringColumns': 'b'}
    """

    old: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    NAME: ClassVar[str] = "CLUSTER BY"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """Comma-separated old and new columns, as delta-spark records them."""
        return {"oldClusteringColumns": ",".join(self.old), "newClusteringColumns": ",".join(self.new)}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class RenameColumn(Operation):
    """``RENAME COLUMN`` (column mapping): ``old_path`` renamed to ``new_path``.

    Example:
        >>> RenameColumn(old_path="a", new_path="b").parameters()
        {'oldColumnPath': 'a', 'newColumnPath': 'b'}
    """

    old_path: str = ""
    new_path: str = ""
    NAME: ClassVar[str] = "RENAME COLUMN"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The old and the new path, as delta-spark records them."""
        return {"oldColumnPath": self.old_path, "newColumnPath": self.new_path}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class DropColumns(Operation):
    """``DROP COLUMNS`` (column mapping): the dropped column paths.

    Example:
        >>> DropColumns(columns=("a", "b.c")).parameters()
        {'columns': '["a","b.c"]'}
    """

    columns: tuple[str, ...] = ()
    NAME: ClassVar[str] = "DROP COLUMNS"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The dropped paths as a JSON list."""
        return {"columns": json_param(list(self.columns))}

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()


@dataclass(frozen=True)
class ChangeColumn(Operation):
    """``CHANGE COLUMN``: a column's comment or nullability changed (its new JSON object in ``column``), or it
    moved (``position``).

    Example:
        >>> ChangeColumn(column={"name": "z", "type": "integer", "nullable": False, "metadata": {}}).name
        'CHANGE COLUMN'
    """

    column: Mapping[str, Any] = field(default_factory=dict)
    #: where the column moved (``FIRST`` / ``AFTER x``), when it did
    position: str | None = None
    NAME: ClassVar[str] = "CHANGE COLUMN"
    CHANGES_DATA: ClassVar[bool] = False

    def parameters(self) -> dict[str, str | None]:
        """The column as it is now, and where it moved."""
        out: dict[str, str | None] = {"column": json_param(logged_field(self.column))}
        if self.position is not None:
            out["position"] = self.position
        return out

    def metric_names(self) -> tuple[str, ...]:
        """No metrics."""
        return ()
