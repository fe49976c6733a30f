"""``SET TBLPROPERTIES`` / ``UNSET TBLPROPERTIES``: change a table's properties in one metadata commit.

Keys starting with ``delta.`` are table configuration the protocol and engines act on, so they are
checked the way the reference implementation checks them:

* known keys are matched case-insensitively and stored under their canonical spelling
  (``delta.appendonly`` becomes ``delta.appendOnly``); booleans are stored as ``true``/``false``;
* values are validated (booleans, intervals such as ``interval 7 days``, positive integers, isolation
  levels, ...), and an invalid one raises :class:`~deltalog.errors.InvalidArgumentError` naming the key
  and the value;
* unknown ``delta.*`` keys are refused (they are most likely typos that would silently do nothing);
* ``delta.feature.<name>=supported`` adds the table feature to the protocol and
  ``delta.minReaderVersion`` / ``delta.minWriterVersion`` raise the protocol versions; none of these
  is stored in the configuration. Enabling a property that needs a feature (``delta.appendOnly``,
  ``delta.enableChangeDataFeed``, ``delta.enableDeletionVectors``, ...) upgrades the protocol too;
* ``comment`` sets (and unsets) the table's description, as in delta-spark; it is not configuration;
* CHECK constraints (``delta.constraints.*``) and properties deltalog maintains itself (in-commit
  timestamp enablement, column mapping ids) cannot be set or unset here (constraints are added with
  :meth:`deltalog.Table.add_constraint`, which checks the existing rows).

Any other key is free-form. :func:`plan_properties` applies the same rules for
:func:`deltalog.write_table`'s ``properties``.

Example:
    >>> import deltalog
    >>> t = deltalog.Table("/data/events")                                          # doctest: +SKIP
    >>> set_properties(t, {"delta.logRetentionDuration": "interval 60 days", "owner": "etl"})  # doctest: +SKIP
    >>> unset_properties(t, ["owner"]).operation                                     # doctest: +SKIP
    'UNSET TBLPROPERTIES'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from deltalog.commands.row_tracking_backfill import backfill_row_ids, files_without_row_ids
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.log.cleanup import parse_interval_ms
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.features import reader_features, writer_features
from deltalog.txn.operations import SetTableProperties, UnsetTableProperties
from deltalog.txn.scope import OperationScope
from deltalog.txn.transaction import CommitResult
from deltalog.txn.writer_features import is_true, upgrade_protocol

if TYPE_CHECKING:
    from deltalog.txn.handle import TableHandle

__all__ = [
    "COMMENT",
    "KNOWN_PROPERTIES",
    "PropertyChange",
    "plan_properties",
    "set_properties",
    "unset_properties",
    "validate_properties",
]

#: The property that sets the table's description (``metadata.description``), as Spark's table catalogs
#: name a table's comment.
COMMENT = "comment"

_BOOLEAN = "boolean"
_INTERVAL = "interval"
_POSITIVE_INT = "positive integer"
_INDEXED_COLS = "integer >= -1"
_STRING = "string"
_ISOLATION = "isolation level"
_MAPPING_MODE = "column mapping mode"
_CHECKPOINT_POLICY = "checkpoint policy"
_PROTOCOL_VERSION = "protocol version"
_FORMATS = "list of universal formats"

#: Known ``delta.*`` table properties and the kind of value each takes.
KNOWN_PROPERTIES: dict[str, str] = {
    "delta.appendOnly": _BOOLEAN,
    "delta.enableChangeDataFeed": _BOOLEAN,
    "delta.enableDeletionVectors": _BOOLEAN,
    "delta.enableInCommitTimestamps": _BOOLEAN,
    "delta.enableTypeWidening": _BOOLEAN,
    "delta.enableRowTracking": _BOOLEAN,
    "delta.enableIcebergCompatV1": _BOOLEAN,
    "delta.enableIcebergCompatV2": _BOOLEAN,
    "delta.universalFormat.enabledFormats": _FORMATS,
    "delta.enableExpiredLogCleanup": _BOOLEAN,
    "delta.checkpoint.writeStatsAsJson": _BOOLEAN,
    "delta.checkpoint.writeStatsAsStruct": _BOOLEAN,
    "delta.compatibility.symlinkFormatManifest.enabled": _BOOLEAN,
    "delta.randomizeFilePrefixes": _BOOLEAN,
    "delta.autoOptimize.optimizeWrite": _BOOLEAN,
    "delta.autoOptimize.autoCompact": _BOOLEAN,
    "delta.logRetentionDuration": _INTERVAL,
    "delta.deletedFileRetentionDuration": _INTERVAL,
    "delta.checkpointRetentionDuration": _INTERVAL,
    "delta.dropFeatureTruncateHistory.retentionDuration": _INTERVAL,
    "delta.setTransactionRetentionDuration": _INTERVAL,
    "delta.checkpointInterval": _POSITIVE_INT,
    "delta.randomPrefixLength": _POSITIVE_INT,
    "delta.targetFileSize": _POSITIVE_INT,
    "delta.dataSkippingNumIndexedCols": _INDEXED_COLS,
    "delta.dataSkippingStatsColumns": _STRING,
    "delta.isolationLevel": _ISOLATION,
    "delta.columnMapping.mode": _MAPPING_MODE,
    "delta.checkpointPolicy": _CHECKPOINT_POLICY,
    "delta.minReaderVersion": _PROTOCOL_VERSION,
    "delta.minWriterVersion": _PROTOCOL_VERSION,
}
_CANONICAL = {k.lower(): k for k in KNOWN_PROPERTIES}

#: Properties deltalog maintains itself; users may neither set nor unset them.
_MANAGED = {
    "delta.inCommitTimestampEnablementVersion": "it is recorded automatically when in-commit timestamps are enabled",
    "delta.inCommitTimestampEnablementTimestamp": "it is recorded automatically when in-commit timestamps are enabled",
    "delta.columnMapping.maxColumnId": "it is maintained together with the column mapping of the schema",
    "delta.rowTracking.materializedRowIdColumnName": "it is maintained by row tracking",
    "delta.requireCheckpointProtectionBeforeVersion": "it is recorded by DROP FEATURE",
    "delta.rowTracking.materializedRowCommitVersionColumnName": "it is maintained by row tracking",
}
_MANAGED_CANONICAL = {k.lower(): k for k in _MANAGED}
_ICT = "delta.enableInCommitTimestamps"
_ICT_INFO = ("delta.inCommitTimestampEnablementVersion", "delta.inCommitTimestampEnablementTimestamp")
_VERSION_LIMITS = {"delta.minReaderVersion": 3, "delta.minWriterVersion": 7}
_CONSTRAINTS = "delta.constraints."


def _bad(key: str, value: str, why: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"table property {key}={value!r} is invalid: {why}")


def _canonical_key(key: Any) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidArgumentError(f"a table property key must be a non-empty string, got {key!r}")
    lower = key.lower()
    if not lower.startswith("delta."):
        return key
    if lower in _CANONICAL:
        return _CANONICAL[lower]
    if lower in _MANAGED_CANONICAL:
        return _MANAGED_CANONICAL[lower]
    if lower.startswith("delta.feature."):
        return "delta.feature." + key[len("delta.feature.") :]
    if lower.startswith(_CONSTRAINTS):  # constraint names are case-insensitive, stored in lower case
        return _CONSTRAINTS + key[len(_CONSTRAINTS) :].lower()
    raise InvalidArgumentError(
        f"unknown table property {key!r}: keys starting with 'delta.' are reserved for Delta table "
        "configuration and this one is not a known property (check the spelling); use a key without "
        "the 'delta.' prefix for your own settings"
    )


def _as_text(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str):
        raise InvalidArgumentError(f"table property {key} must have a string value, got {value!r}")
    return value


def _int(key: str, value: str, minimum: int) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise _bad(key, value, "must be an integer") from None
    if n < minimum:
        raise _bad(key, value, f"must be at least {minimum}")
    return n


def _validate_value(key: str, value: str) -> str:
    """The value to store for a known ``delta.*`` key; raises naming the key and value if invalid."""
    kind = KNOWN_PROPERTIES[key]
    text = value.strip()
    if kind == _BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise _bad(key, value, "must be 'true' or 'false'")
        return text.lower()
    if kind == _INTERVAL:
        try:
            parse_interval_ms(text)
        except InvalidArgumentError as exc:
            raise _bad(key, value, f"{exc.message}; use e.g. 'interval 7 days'") from None
        return value
    if kind == _POSITIVE_INT:
        return str(_int(key, value, 1))
    if kind == _INDEXED_COLS:
        return str(_int(key, value, -1))
    if kind == _ISOLATION:
        levels = ("Serializable", "WriteSerializable")
        if text not in levels:
            raise _bad(key, value, f"must be one of {list(levels)}")
        return text
    if kind == _MAPPING_MODE:
        if text.lower() not in ("none", "name", "id"):
            raise _bad(key, value, "must be 'none', 'name' or 'id'")
        return text.lower()
    if kind == _CHECKPOINT_POLICY:
        if text.lower() not in ("classic", "v2"):
            raise _bad(key, value, "must be 'classic' or 'v2'")
        return text.lower()
    if kind == _FORMATS:  # UniForm: its rules are deltalog.protocol.iceberg_compat's
        formats = [f.strip().lower() for f in text.split(",") if f.strip()]
        if any(f not in ("iceberg", "hudi") for f in formats):
            raise _bad(key, value, "must be a comma-separated list of 'iceberg' and 'hudi'")
        return ",".join(formats)
    if kind == _PROTOCOL_VERSION:
        n = _int(key, value, 1)
        if n > _VERSION_LIMITS[key]:
            raise _bad(key, value, f"must be at most {_VERSION_LIMITS[key]}")
        return str(n)
    return value


def validate_properties(
    properties: Mapping[str, Any], *, allow_constraints: bool = False, table: str | None = None
) -> dict[str, str]:
    """Canonical keys and validated values for :func:`set_properties` (no table state is consulted).

    ``delta.constraints.<name>`` keys are refused unless ``allow_constraints`` (a table being
    created, whose rows the writer checks); their names are stored in lower case, as Delta does.
    Errors name ``table`` when given.

    Example:
        >>> validate_properties({"delta.APPENDONLY": "TRUE", "owner": "etl"})
        {'delta.appendOnly': 'true', 'owner': 'etl'}
        >>> validate_properties({"delta.constraints.Pos": "x > 0"}, allow_constraints=True)
        {'delta.constraints.pos': 'x > 0'}
        >>> validate_properties({"delta.checkpointInterval": "0"})
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: table property delta.checkpointInterval='0' is invalid: \
must be at least 1
    """
    try:
        return _validate(properties, allow_constraints)
    except InvalidArgumentError as exc:
        if table is None or exc.table is not None:
            raise
        raise InvalidArgumentError(exc.message, table=table) from None


def _validate(properties: Mapping[str, Any], allow_constraints: bool) -> dict[str, str]:
    if not isinstance(properties, Mapping):
        raise InvalidArgumentError(f"properties must be a mapping of key to value, got {type(properties).__name__}")
    out: dict[str, str] = {}
    for raw_key, raw_value in properties.items():
        key = _canonical_key(raw_key)
        value = _as_text(key, raw_value)
        if key in _MANAGED:
            raise InvalidArgumentError(f"table property {key} cannot be set: {_MANAGED[key]}")
        if key.startswith(_CONSTRAINTS):
            if not allow_constraints:
                raise InvalidArgumentError(
                    f"table property {key} cannot be set directly: CHECK constraints are added with the "
                    "ADD CONSTRAINT operation (Table.add_constraint), which also checks the existing rows"
                )
            if not key[len(_CONSTRAINTS) :].strip():
                raise _bad(key, value, "names no constraint (use delta.constraints.<name>)")
            if not value.strip():
                raise _bad(key, value, "a CHECK constraint needs a non-empty SQL expression")
        if key.startswith("delta.feature."):
            if not key[len("delta.feature.") :]:
                raise _bad(key, value, "names no feature")
            if value.strip().lower() not in ("supported", "enabled"):
                raise _bad(key, value, "must be 'supported' (table features can only be added)")
            value = "supported"
        elif key in KNOWN_PROPERTIES:
            value = _validate_value(key, value)
        out[key] = value
    return out


def _check_against_table(props: Mapping[str, str], configuration: Mapping[str, str] | None, table: str) -> None:
    """``configuration`` is the table's (``None``: the table is being created)."""
    mode = (configuration or {}).get("delta.columnMapping.mode", "none").lower()
    new_mode = props.get("delta.columnMapping.mode")
    # New tables take any mode; an existing table may go from 'none' to 'name' (its columns keep their
    # names as physical names), as in delta-spark. Other changes would make data files unreadable.
    allowed = configuration is None or (mode == "none" and new_mode == "name")
    if new_mode is not None and new_mode != mode and not allowed:
        raise UnsupportedFeatureError(
            f"[DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE] changing delta.columnMapping.mode from {mode!r} to "
            f"{new_mode!r} is not supported: only 'none' -> 'name' can be applied to an existing table",
            feature="columnMapping",
            table=table,
        )


def raise_versions(protocol: Protocol, reader: int | None, writer: int | None, table: str) -> Protocol:
    """``protocol`` with versions raised to ``reader``/``writer``; lowering a version is refused."""
    for name, want, have in (
        ("delta.minReaderVersion", reader, protocol.minReaderVersion),
        ("delta.minWriterVersion", writer, protocol.minWriterVersion),
    ):
        if want is not None and want < have:
            raise InvalidArgumentError(
                f"table property {name}={want} would lower the protocol's version {have}; protocol "
                "versions can only be raised",
                table=table,
            )
    new_reader = max(protocol.minReaderVersion, reader or 0)
    new_writer = max(protocol.minWriterVersion, writer or 0)
    if new_reader >= 3 and new_writer < 7:
        raise InvalidArgumentError(
            f"delta.minReaderVersion={new_reader} needs delta.minWriterVersion=7 (table features); the "
            f"writer version would be {new_writer}",
            table=table,
        )
    if (new_reader, new_writer) == (protocol.minReaderVersion, protocol.minWriterVersion):
        return protocol
    rf = reader_features(protocol)
    wf = writer_features(protocol) | rf
    return Protocol(
        minReaderVersion=new_reader,
        minWriterVersion=new_writer,
        readerFeatures=tuple(sorted(rf)) if new_reader >= 3 else None,
        writerFeatures=tuple(sorted(wf)) if new_writer >= 7 else None,
    )


@dataclass(frozen=True)
class PropertyChange:
    """Validated properties applied to a table configuration (see :func:`plan_properties`).

    ``properties`` are the canonical key/values asked for, ``configuration`` the table's configuration
    with them applied, ``features`` the table features and ``versions`` the protocol versions
    (``delta.feature.*``, ``delta.minReaderVersion`` / ``delta.minWriterVersion``) they ask for --
    which live in the protocol, not in the configuration.

    Example:
        >>> change = plan_properties({"delta.feature.domainMetadata": "supported", "k": "v"},
        ...                          configuration={}, table="t")
        >>> change.configuration, change.features
        ({'k': 'v'}, ('domainMetadata',))
    """

    properties: dict[str, str]
    configuration: dict[str, str]
    features: tuple[str, ...] = ()
    versions: dict[str, int] = field(default_factory=dict)

    @property
    def changes_protocol(self) -> bool:
        """True when explicit features or protocol versions were asked for.

        Example:
            >>> plan_properties({"delta.minWriterVersion": "4"}, configuration={}, table="t").changes_protocol
            True
        """
        return bool(self.features or self.versions)

    def protocol(self, current: Protocol | None, metadata: Metadata, *, table: str) -> Protocol:
        """The protocol for ``metadata`` (whose configuration is :attr:`configuration`): ``current``
        (``None`` for a new table) upgraded for the features the metadata uses and those asked for,
        with the versions asked for; lowering a version is refused.

        Example:
            >>> from deltalog.protocol.actions import Format
            >>> change = plan_properties({"delta.appendOnly": "true"}, configuration={}, table="t")
            >>> md = Metadata(id="t", format=Format(), schemaString=None, configuration=change.configuration)
            >>> change.protocol(None, md, table="t")
            Protocol(minReaderVersion=1, minWriterVersion=2, readerFeatures=None, writerFeatures=None, extra={})
        """
        try:
            protocol = upgrade_protocol(current, metadata, extra_features=self.features)
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(exc.message, feature=exc.feature, table=table) from None
        return raise_versions(
            protocol, self.versions.get("delta.minReaderVersion"), self.versions.get("delta.minWriterVersion"), table
        )


def plan_properties(
    properties: Mapping[str, Any],
    *,
    configuration: Mapping[str, str] | None,
    table: str,
    allow_constraints: bool = False,
) -> PropertyChange:
    """Validate ``properties`` (:func:`validate_properties`) and apply them to ``configuration`` (the
    table's; ``None`` for a table being created), with the rules of :func:`set_properties`: known keys
    canonical (replacing case variants), features and protocol versions split off, disabling in-commit
    timestamps drops their enablement record, column mapping mode and v2 checkpoints refused. Errors
    name ``table``.

    Example:
        >>> plan_properties({"delta.APPENDONLY": "TRUE"}, configuration={"delta.appendonly": "false"},
        ...                 table="t").configuration
        {'delta.appendOnly': 'true'}
        >>> plan_properties({"delta.randomUnknown": "1"}, configuration=None, table="/data/t")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: unknown table property 'delta.randomUnknown': keys starting \
with 'delta.' are reserved for Delta table configuration and this one is not a known property (check the \
spelling); use a key without the 'delta.' prefix for your own settings [table /data/t]
    """
    props = validate_properties(properties, allow_constraints=allow_constraints, table=table)
    _check_against_table(props, configuration, table)
    conf = dict(configuration or {})
    features: list[str] = []
    versions: dict[str, int] = {}
    for key, value in props.items():
        if key.startswith("delta.feature."):
            features.append(key[len("delta.feature.") :])
        elif key in _VERSION_LIMITS:
            versions[key] = int(value)
        else:
            _drop_case_variants(conf, key)
            conf[key] = value
    if _ICT in props and not is_true(conf, _ICT):
        for k in _ICT_INFO:  # disabling in-commit timestamps: the enablement record no longer applies
            conf.pop(k, None)
    return PropertyChange(props, conf, tuple(features), versions)


def _drop_case_variants(conf: dict[str, str], key: str) -> None:
    if key.lower().startswith("delta."):
        for existing in [k for k in conf if k.lower() == key.lower()]:
            del conf[existing]
    else:
        conf.pop(key, None)


def _options(clock: Callable[[], int] | None, snapshot: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"snapshot": snapshot}
    if clock is not None:
        out["clock"] = clock
    return out


def set_properties(
    table: TableHandle, properties: Mapping[str, str], *, clock: Callable[[], int] | None = None
) -> CommitResult:
    """Set table properties in one ``SET TBLPROPERTIES`` commit (see the module docstring for the rules).

    Example:
        >>> import deltalog
        >>> set_properties(deltalog.Table("/data/events"),
        ...                {"delta.appendOnly": "true"}).operation   # doctest: +SKIP
        'SET TBLPROPERTIES'
    """
    props = validate_properties(properties, table=table.location)
    if not props:
        raise InvalidArgumentError("set_properties needs at least one property", table=table.location)
    snapshot = table.snapshot()
    loc = table.location
    settings = {k: v for k, v in props.items() if k != COMMENT}
    change = plan_properties(settings, configuration=snapshot.metadata.configuration, table=loc)
    metadata = replace(snapshot.metadata, configuration=change.configuration)
    if COMMENT in props:  # as in delta-spark: the table's description, not a configuration key
        metadata = replace(metadata, description=props[COMMENT])
    protocol = change.protocol(snapshot.protocol, metadata, table=loc)
    if is_true(change.configuration, "delta.enableRowTracking") and \
            not is_true(snapshot.metadata.configuration, "delta.enableRowTracking") and \
            files_without_row_ids(snapshot):
        # the existing files get row ids first, in commits of their own; then the property is planned again
        with OperationScope("SET TBLPROPERTIES", table_version=snapshot.version, table=loc) as scope:
            backfill_row_ids(table, clock=clock, on_commit=scope.committed)
            return set_properties(table, properties, clock=clock)

    from deltalog.txn.transaction import start_transaction

    txn = start_transaction(table, SetTableProperties(properties=props), **_options(clock, snapshot))
    if protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    txn.update_metadata(metadata)
    return txn.commit()


def unset_properties(
    table: TableHandle, keys: Iterable[str], *, if_exists: bool = False, clock: Callable[[], int] | None = None
) -> CommitResult:
    """Remove table properties in one ``UNSET TBLPROPERTIES`` commit.

    A key the table does not have is an error unless ``if_exists``. Table features stay in the
    protocol (unsetting ``delta.appendOnly`` turns the behaviour off, not the feature).

    Example:
        >>> import deltalog
        >>> unset_properties(deltalog.Table("/data/events"), ["owner"], if_exists=True).version  # doctest: +SKIP
        14
    """
    names = [keys] if isinstance(keys, str) else list(keys)
    if not names:
        raise InvalidArgumentError("unset_properties needs at least one key", table=table.location)
    snapshot = table.snapshot()
    loc = table.location
    conf = dict(snapshot.metadata.configuration)
    canonical: list[str] = []
    description = snapshot.metadata.description
    for raw in names:
        if raw == COMMENT and COMMENT not in conf:  # the description (see set_properties)
            if description is None and not if_exists:
                raise InvalidArgumentError(
                    "[DELTA_UNSET_NON_EXISTENT_PROPERTY] the table has no comment; nothing to unset (UNSET "
                    "TBLPROPERTIES IF EXISTS, or "
                    "if_exists=True, ignores missing keys)", table=loc)
            description = None
            canonical.append(raw)
            continue
        try:
            key = _canonical_key(raw)
        except InvalidArgumentError:
            if isinstance(raw, str) and raw in conf:
                del conf[raw]  # an unknown delta.* key another engine wrote: it may be removed
                canonical.append(raw)
                continue
            if if_exists and isinstance(raw, str) and raw.strip():
                canonical.append(raw)  # recorded as requested, like every other key
                continue
            raise
        if key in _MANAGED:
            raise InvalidArgumentError(f"table property {key} cannot be unset: {_MANAGED[key]}", table=loc)
        if key.startswith("delta.feature.") or key in _VERSION_LIMITS:
            raise InvalidArgumentError(
                f"{key} cannot be unset: table features and protocol versions can only be added or raised",
                table=loc,
            )
        if key.startswith("delta.constraints."):
            raise InvalidArgumentError(
                f"table property {key} cannot be unset directly: drop the CHECK constraint with the DROP "
                "CONSTRAINT operation",
                table=loc,
            )
        if key == "delta.columnMapping.mode" and conf.get(key, "none").lower() != "none":
            raise UnsupportedFeatureError(
                "delta.columnMapping.mode cannot be unset while column mapping is in use: the data files "
                "are read through the mapping",
                feature="columnMapping",
                table=loc,
            )
        present = [k for k in conf if k == key or (key.startswith("delta.") and k.lower() == key.lower())]
        if not present and not if_exists:
            raise InvalidArgumentError(
                f"[DELTA_UNSET_NON_EXISTENT_PROPERTY] table property {key!r} is not set on the table; nothing to "
                "unset (UNSET TBLPROPERTIES IF EXISTS, or if_exists=True, ignores missing keys)",
                table=loc,
            )
        for k in present:
            del conf[k]
        canonical.append(key)
    if not is_true(conf, _ICT):
        for k in _ICT_INFO:
            conf.pop(k, None)
    metadata = replace(snapshot.metadata, configuration=conf, description=description)

    from deltalog.txn.transaction import start_transaction

    op = UnsetTableProperties(keys=tuple(canonical), if_exists=if_exists)
    txn = start_transaction(table, op, **_options(clock, snapshot))
    txn.update_metadata(metadata)
    return txn.commit()
