"""Delta log actions as frozen dataclasses whose attribute names are the protocol's JSON keys.

Parsing validates required keys and their JSON types and reports the file and line of anything wrong.
Fields this version does not know are kept in ``extra`` and written back out, so a rewrite of an action
never drops information a newer writer put there. Unknown *action types* are ignored, as the protocol asks.

Example:
    >>> a = parse_action('{"txn": {"appId": "etl", "version": 7, "lastUpdated": 1}}')
    >>> a
    Txn(appId='etl', version=7, lastUpdated=1, extra={})
    >>> action_to_json(a)
    '{"txn":{"appId":"etl","version":7,"lastUpdated":1}}'
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from deltalog.errors import CorruptLogError

__all__ = [
    "Action",
    "Add",
    "AddCDCFile",
    "CheckpointMetadata",
    "CommitInfo",
    "DomainMetadata",
    "Format",
    "Metadata",
    "Protocol",
    "Remove",
    "Sidecar",
    "Txn",
    "action_to_dict",
    "action_to_json",
    "parse_action",
    "parse_action_dict",
]


class _Where:
    """Location of the JSON being parsed, threaded through validation for error messages."""

    __slots__ = ("file", "line", "table", "version")

    def __init__(
        self, table: str | None, version: int | None, file: str | None, line: int | None
    ) -> None:
        self.table, self.version, self.file, self.line = table, version, file, line

    def error(self, message: str) -> CorruptLogError:
        return CorruptLogError(
            message, table=self.table, version=self.version, file=self.file, line=self.line
        )


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "bool": (bool,),
    "dict": (dict,),
    "list": (list,),
}


@dataclass(frozen=True)
class _ActionBase:
    """Shared parse/serialise machinery. ``_spec`` lists (json key, kind, required) per field."""

    KEY: ClassVar[str] = ""
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = ()

    @classmethod
    def _from_json(cls: type[_A], obj: Any, where: _Where) -> _A:
        if not isinstance(obj, dict):
            raise where.error(f"'{cls.KEY}' action must be a JSON object, got {type(obj).__name__}")
        kwargs: dict[str, Any] = {}
        for name, kind, required in cls._spec:
            value = obj.get(name)
            if value is None:
                if required:
                    raise where.error(f"'{cls.KEY}' action is missing required field '{name}'")
                kwargs[name] = None
                continue
            kwargs[name] = _check(cls.KEY, name, kind, value, where)
        known = {name for name, _, _ in cls._spec}
        kwargs["extra"] = {k: v for k, v in obj.items() if k not in known}
        return cls._build(kwargs, where)

    @classmethod
    def _build(cls: type[_A], kwargs: dict[str, Any], where: _Where) -> _A:
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The action's JSON object (without the action-type wrapper); ``None`` fields are omitted."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None:
                continue
            if hasattr(value, "to_dict"):
                value = value.to_dict()
            out[f.name] = value
        out.update(getattr(self, "extra", {}))
        return out


_A = TypeVar("_A", bound=_ActionBase)


def _check(action: str, name: str, kind: str, value: Any, where: _Where) -> Any:
    if kind == "any":
        return value
    if kind == "int" and isinstance(value, bool):
        raise where.error(f"'{action}.{name}' must be an integer, got a boolean")
    if kind == "map":
        if not isinstance(value, dict) or not all(
            isinstance(v, str) or v is None for v in value.values()
        ):
            raise where.error(f"'{action}.{name}' must be an object of strings")
        return dict(value)
    if kind == "strlist":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise where.error(f"'{action}.{name}' must be a list of strings")
        return tuple(value)
    if not isinstance(value, _JSON_TYPES[kind]):
        raise where.error(
            f"'{action}.{name}' must be of JSON type {kind}, got {type(value).__name__} ({value!r:.60})"
        )
    return value


@dataclass(frozen=True)
class Format(_ActionBase):
    """``metaData.format``: the data file format (always ``parquet`` in practice)."""

    provider: str = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "format"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("provider", "str", True),
        ("options", "map", False),
    )

    def to_dict(self) -> dict[str, Any]:
        """JSON form; ``options`` always present (Spark writes ``{}``)."""
        out = super().to_dict()
        out.setdefault("options", {})
        return out

    @classmethod
    def _build(cls, kwargs: dict[str, Any], where: _Where) -> Format:
        if kwargs.get("options") is None:
            kwargs["options"] = {}
        return cls(**kwargs)


@dataclass(frozen=True)
class Metadata(_ActionBase):
    """``metaData``: table id, schema, partition columns and configuration (table properties)."""

    id: str
    format: Format
    schemaString: str | None
    partitionColumns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    createdTime: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "metaData"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("id", "str", True),
        ("name", "str", False),
        ("description", "str", False),
        ("format", "dict", True),
        ("schemaString", "str", False),  # checked when the schema is used
        ("partitionColumns", "strlist", True),
        ("configuration", "map", False),
        ("createdTime", "int", False),
    )

    @classmethod
    def _build(cls, kwargs: dict[str, Any], where: _Where) -> Metadata:
        kwargs["format"] = Format._from_json(kwargs["format"], where)
        conf = kwargs.get("configuration") or {}
        kwargs["configuration"] = {k: v for k, v in conf.items() if v is not None}
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """JSON form with ``partitionColumns`` as a list and ``configuration`` always present."""
        out = super().to_dict()
        out["partitionColumns"] = list(self.partitionColumns)
        out["configuration"] = dict(self.configuration)
        return out


@dataclass(frozen=True)
class Protocol(_ActionBase):
    """``protocol``: reader/writer versions and, from (3, 7), the explicit table features."""

    minReaderVersion: int
    minWriterVersion: int
    readerFeatures: tuple[str, ...] | None = None
    writerFeatures: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "protocol"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("minReaderVersion", "int", True),
        ("minWriterVersion", "int", True),
        ("readerFeatures", "strlist", False),
        ("writerFeatures", "strlist", False),
    )

    def to_dict(self) -> dict[str, Any]:
        """JSON form with feature lists as JSON arrays."""
        out = super().to_dict()
        for key in ("readerFeatures", "writerFeatures"):
            if key in out:
                out[key] = list(out[key])
        return out


@dataclass(frozen=True)
class Add(_ActionBase):
    """``add``: a data file (plus optional deletion vector) that is part of the table."""

    path: str
    partitionValues: Mapping[str, str | None]
    size: int
    modificationTime: int
    dataChange: bool
    stats: str | None = None
    tags: Mapping[str, str | None] | None = None
    deletionVector: Mapping[str, Any] | None = None
    baseRowId: int | None = None
    defaultRowCommitVersion: int | None = None
    clusteringProvider: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "add"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("path", "str", True),
        ("partitionValues", "map", True),
        ("size", "int", True),
        ("modificationTime", "int", True),
        ("dataChange", "bool", True),
        ("stats", "str", False),
        ("tags", "map", False),
        ("deletionVector", "dict", False),
        ("baseRowId", "int", False),
        ("defaultRowCommitVersion", "int", False),
        ("clusteringProvider", "str", False),
    )


@dataclass(frozen=True)
class Remove(_ActionBase):
    """``remove``: a tombstone; the file is no longer part of the table from this version on."""

    path: str
    dataChange: bool
    deletionTimestamp: int | None = None
    extendedFileMetadata: bool | None = None
    partitionValues: Mapping[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: Mapping[str, str | None] | None = None
    deletionVector: Mapping[str, Any] | None = None
    baseRowId: int | None = None
    defaultRowCommitVersion: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "remove"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("path", "str", True),
        ("deletionTimestamp", "int", False),
        ("dataChange", "bool", True),
        ("extendedFileMetadata", "bool", False),
        ("partitionValues", "map", False),
        ("size", "int", False),
        ("stats", "str", False),
        ("tags", "map", False),
        ("deletionVector", "dict", False),
        ("baseRowId", "int", False),
        ("defaultRowCommitVersion", "int", False),
    )


@dataclass(frozen=True)
class AddCDCFile(_ActionBase):
    """``cdc``: a change-data file written alongside a commit (read by change data feed)."""

    path: str
    partitionValues: Mapping[str, str | None]
    size: int
    dataChange: bool
    tags: Mapping[str, str | None] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "cdc"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("path", "str", True),
        ("partitionValues", "map", True),
        ("size", "int", True),
        ("dataChange", "bool", True),
        ("tags", "map", False),
    )


@dataclass(frozen=True)
class Txn(_ActionBase):
    """``txn``: the latest version an application committed, for idempotent writes."""

    appId: str
    version: int
    lastUpdated: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "txn"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("appId", "str", True),
        ("version", "int", True),
        ("lastUpdated", "int", False),
    )


@dataclass(frozen=True)
class CommitInfo(_ActionBase):
    """``commitInfo``: provenance. Free-form by the protocol; the common keys are typed here."""

    timestamp: int | None = None
    inCommitTimestamp: int | None = None
    operation: str | None = None
    operationParameters: Mapping[str, Any] | None = None
    readVersion: int | None = None
    isolationLevel: str | None = None
    isBlindAppend: bool | None = None
    operationMetrics: Mapping[str, Any] | None = None
    engineInfo: str | None = None
    txnId: str | None = None
    userMetadata: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "commitInfo"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("timestamp", "any", False),
        ("inCommitTimestamp", "int", False),
        ("operation", "any", False),
        ("operationParameters", "any", False),
        ("readVersion", "any", False),
        ("isolationLevel", "any", False),
        ("isBlindAppend", "any", False),
        ("operationMetrics", "any", False),
        ("engineInfo", "any", False),
        ("txnId", "any", False),
        ("userMetadata", "any", False),
    )


@dataclass(frozen=True)
class DomainMetadata(_ActionBase):
    """``domainMetadata``: named configuration owned by a feature or system (``removed`` drops it)."""

    domain: str
    configuration: str
    removed: bool
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "domainMetadata"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("domain", "str", True),
        ("configuration", "str", True),
        ("removed", "bool", True),
    )


@dataclass(frozen=True)
class CheckpointMetadata(_ActionBase):
    """``checkpointMetadata``: present in a V2 checkpoint; names the version it captures."""

    version: int
    tags: Mapping[str, str | None] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "checkpointMetadata"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("version", "int", True),
        ("tags", "map", False),
    )


@dataclass(frozen=True)
class Sidecar(_ActionBase):
    """``sidecar``: a V2 checkpoint's pointer to a parquet file of file actions in ``_delta_log/_sidecars``."""

    path: str
    sizeInBytes: int
    modificationTime: int
    tags: Mapping[str, str | None] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    KEY: ClassVar[str] = "sidecar"
    _spec: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("path", "str", True),
        ("sizeInBytes", "int", True),
        ("modificationTime", "int", True),
        ("tags", "map", False),
    )


Action = (
    Add | Remove | Metadata | Protocol | Txn | CommitInfo | AddCDCFile | DomainMetadata
    | CheckpointMetadata | Sidecar
)

ACTION_TYPES: dict[str, type[_ActionBase]] = {
    cls.KEY: cls
    for cls in (
        Add, Remove, Metadata, Protocol, Txn, CommitInfo, AddCDCFile, DomainMetadata,
        CheckpointMetadata, Sidecar,
    )
}


def parse_action_dict(
    obj: Any,
    *,
    table: str | None = None,
    version: int | None = None,
    file: str | None = None,
    line: int | None = None,
) -> Action | None:
    """Parse one decoded log line (``{"<type>": {...}}``); ``None`` for action types we do not know.

    Example:
        >>> parse_action_dict({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
        Protocol(minReaderVersion=1, minWriterVersion=2, readerFeatures=None, writerFeatures=None, extra={})
    """
    where = _Where(table, version, file, line)
    if not isinstance(obj, dict):
        raise where.error(f"a log line must be a JSON object, got {type(obj).__name__}")
    found: Action | None = None
    for key, body in obj.items():
        cls = ACTION_TYPES.get(key)
        if cls is None:
            continue  # unknown action types are ignored by readers
        if found is not None:
            raise where.error(f"a log line holds more than one action ({found.KEY!r} and {key!r})")
        if body is None:
            continue
        found = cls._from_json(body, where)  # type: ignore[assignment]
    return found


def parse_action(
    line_text: str | bytes,
    *,
    table: str | None = None,
    version: int | None = None,
    file: str | None = None,
    line: int | None = None,
) -> Action | None:
    """Parse one JSON line of a commit file; malformed JSON raises :class:`CorruptLogError` with its place.

    Example:
        >>> parse_action('{"commitInfo": {"operation": "WRITE"}}').operation
        'WRITE'
    """
    try:
        obj = json.loads(line_text)
    except (ValueError, UnicodeDecodeError) as exc:
        snippet = line_text[:80] if isinstance(line_text, str) else line_text[:80].decode("utf-8", "replace")
        raise CorruptLogError(
            f"log line is not valid JSON ({exc}); it starts with {snippet!r}",
            table=table, version=version, file=file, line=line,
        ) from None
    return parse_action_dict(obj, table=table, version=version, file=file, line=line)


def action_to_dict(action: Action) -> dict[str, Any]:
    """The wrapped JSON object of an action, e.g. ``{"add": {...}}``.

    Example:
        >>> action_to_dict(Txn(appId="a", version=1))
        {'txn': {'appId': 'a', 'version': 1}}
    """
    return {action.KEY: action.to_dict()}


def action_to_json(action: Action) -> str:
    """One compact JSON line for a commit file (no trailing newline).

    Example:
        >>> action_to_json(Protocol(minReaderVersion=1, minWriterVersion=2))
        '{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}'
    """
    return json.dumps(action_to_dict(action), separators=(",", ":"), ensure_ascii=False)
