"""Table features and the protocol gate: which tables this build of deltalog may read (and write).

Variants are read shredded or not: ``variantType`` / ``variantType-preview`` and ``variantShredding`` /
``variantShredding-preview`` are supported for reading (:mod:`deltalog.protocol.shredding` puts shredded
columns back together); ``geospatial`` tables (``geometry`` / ``geography`` columns, see
:mod:`deltalog.protocol.geospatial`) are read with their columns as WKB. Tables needing ``catalogManaged`` are
refused, naming the feature.

Example:
    >>> check_readable(Protocol(minReaderVersion=1, minWriterVersion=2), table="t")
    >>> shredded = ("variantShredding-preview", "variantType")
    >>> check_readable(Protocol(3, 7, shredded, shredded), table="t")
    >>> check_readable(Protocol(3, 7, ("geospatial",), ("geospatial",)), table="t")
    >>> check_readable(Protocol(3, 7, ("catalogManaged",), ("catalogManaged",)), table="t")
    Traceback (most recent call last):
    ...
    deltalog.errors.UnsupportedFeatureError: table needs reader feature 'catalogManaged' (its catalog ratifies \
commits; deltalog reads and commits through storage only), which deltalog does not support yet (supported: \
columnMapping, deletionVectors, geospatial, timestampNtz, typeWidening, typeWidening-preview, v2Checkpoint, \
vacuumProtocolCheck, variantShredding, variantShredding-preview, variantType, variantType-preview) [table t]
"""

from __future__ import annotations

from deltalog.errors import UnsupportedFeatureError
from deltalog.protocol.actions import Protocol

#: Reader features whose semantics the kernel implements when reading.
SUPPORTED_READER_FEATURES: frozenset[str] = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "geospatial",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantShredding",
        "variantShredding-preview",
        "variantType",
        "variantType-preview",
    }
)

#: Why some unsupported reader features are refused (added to the error message).
_UNSUPPORTED_WHY: dict[str, str] = {
    "catalogManaged": "its catalog ratifies commits; deltalog reads and commits through storage only",
}

#: Features implied by legacy (pre-table-features) reader versions.
LEGACY_READER_FEATURES: dict[int, frozenset[str]] = {
    1: frozenset(),
    2: frozenset({"columnMapping"}),
}

#: Features implied by legacy writer versions 2..6.
LEGACY_WRITER_FEATURES: dict[int, frozenset[str]] = {
    1: frozenset(),
    2: frozenset({"appendOnly", "invariants"}),
    3: frozenset({"appendOnly", "invariants", "checkConstraints"}),
    4: frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}),
    5: frozenset(
        {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
         "columnMapping"}
    ),
    6: frozenset(
        {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
         "columnMapping", "identityColumns"}
    ),
}


def reader_features(protocol: Protocol) -> frozenset[str]:
    """The reader features a protocol requires (explicit at version 3, implied below it).

    Example:
        >>> sorted(reader_features(Protocol(minReaderVersion=2, minWriterVersion=5)))
        ['columnMapping']
    """
    if protocol.minReaderVersion >= 3:
        return frozenset(protocol.readerFeatures or ())
    return LEGACY_READER_FEATURES.get(protocol.minReaderVersion, frozenset())


def writer_features(protocol: Protocol) -> frozenset[str]:
    """The writer features a protocol requires (explicit at version 7, implied below it).

    Example:
        >>> sorted(writer_features(Protocol(minReaderVersion=1, minWriterVersion=2)))
        ['appendOnly', 'invariants']
    """
    if protocol.minWriterVersion >= 7:
        return frozenset(protocol.writerFeatures or ())
    return LEGACY_WRITER_FEATURES.get(protocol.minWriterVersion, frozenset())


def is_feature_active(protocol: Protocol, feature: str) -> bool:
    """True when ``feature`` is listed (or implied) on the reader or writer side.

    Example:
        >>> is_feature_active(Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)), "deletionVectors")
        True
    """
    return feature in reader_features(protocol) or feature in writer_features(protocol)


def check_readable(protocol: Protocol, *, table: str | None = None, version: int | None = None) -> None:
    """Raise :class:`UnsupportedFeatureError` naming the first reader feature we cannot honour.

    Example:
        >>> check_readable(Protocol(minReaderVersion=99, minWriterVersion=7), table="t")
        Traceback (most recent call last):
        ...
        deltalog.errors.UnsupportedFeatureError: table needs reader version 99; deltalog reads \
versions 1 to 3 [table t]
    """
    if protocol.minReaderVersion > 3 or protocol.minReaderVersion < 1:
        raise UnsupportedFeatureError(
            f"table needs reader version {protocol.minReaderVersion}; deltalog reads versions 1 to 3",
            feature=f"minReaderVersion={protocol.minReaderVersion}", table=table, version=version,
        )
    for feature in sorted(reader_features(protocol)):
        if feature not in SUPPORTED_READER_FEATURES:
            why = f" ({_UNSUPPORTED_WHY[feature]})" if feature in _UNSUPPORTED_WHY else ""
            raise UnsupportedFeatureError(
                f"table needs reader feature '{feature}'{why}, which deltalog does not support yet "
                f"(supported: {', '.join(sorted(SUPPORTED_READER_FEATURES))})",
                feature=feature, table=table, version=version,
            )
