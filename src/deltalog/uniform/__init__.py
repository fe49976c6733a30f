"""UniForm: Iceberg metadata beside the Delta log, so that Iceberg readers (pyiceberg, DuckDB, Trino, ...)
open a Delta table from its path alone.

This package owns ``<table>/metadata/``: Iceberg format-version 2 table metadata (``vN.metadata.json``),
manifest lists and manifests (Avro, written with pyiceberg) and ``version-hint.text``, converted from the
Delta log and kept up to date after every commit of a table whose ``delta.universalFormat.enabledFormats``
holds ``iceberg`` (:func:`deltalog.log.post_commit.run_post_commit` calls :func:`sync_after_commit`).
It reads the log through :mod:`deltalog.protocol`, :mod:`deltalog.storage`, :mod:`deltalog.log` and
:class:`deltalog.snapshot.Snapshot`, and writes only through the table's store; it never imports the
transaction machinery (``deltalog.txn``) nor pyspark. pyiceberg is an optional dependency
(``pip install 'deltalog[iceberg]'``), imported only when a table uses UniForm.

Example:
    >>> import deltalog, deltalog.uniform
    >>> result = deltalog.uniform.sync("/data/events")                            # doctest: +SKIP
    >>> result.converted_version, result.metadata_location                        # doctest: +SKIP
    (12, '/data/events/metadata/v13.metadata.json')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from deltalog.log.reader import FileActions
    from deltalog.storage import LogStore
    from deltalog.uniform.convert import SyncResult

__all__ = ["IcebergState", "enabled", "iceberg_state", "rebuild", "sync", "sync_after_commit"]

ENABLED_FORMATS = "delta.universalFormat.enabledFormats"


def enabled(properties: Mapping[str, str]) -> bool:
    """Whether the table properties ask for Iceberg metadata (``delta.universalFormat.enabledFormats``
    lists ``iceberg``).

    Example:
        >>> enabled({"delta.universalFormat.enabledFormats": "iceberg"}), enabled({})
        (True, False)
    """
    raw = properties.get(ENABLED_FORMATS) or ""
    return "iceberg" in {p.strip().lower() for p in raw.split(",")}


def _require_pyiceberg(table: str) -> None:
    try:
        import pyiceberg  # noqa: F401
    except ImportError:
        raise UnsupportedFeatureError(
            "the table has UniForm (Iceberg) enabled, and writing its Iceberg metadata needs pyiceberg: "
            "pip install 'deltalog[iceberg]' (then `deltalog uniform sync` brings the metadata up to date)",
            table=table, feature="pyiceberg",
        ) from None


def sync_after_commit(snapshot: Any, commit: FileActions | None = None,
                      clock: Callable[[], int] | None = None) -> SyncResult | None:
    """The post-commit step: bring the Iceberg metadata up to ``snapshot.version`` when UniForm is enabled
    (None otherwise); ``commit`` are the actions of that version when the writer has them.

    Example:
        >>> sync_after_commit(deltalog.Table("/data/t").snapshot()).mode          # doctest: +SKIP
        'incremental'
    """
    if not enabled(snapshot.properties):
        return None
    _require_pyiceberg(snapshot.table)
    from deltalog.uniform.convert import sync_snapshot

    return sync_snapshot(snapshot, commit=commit, clock=clock)


def _snapshot_of(table: Any) -> Any:
    if isinstance(table, str):
        from deltalog.snapshot_load import LogSnapshots
        from deltalog.storage import store_for

        table = LogSnapshots(table, store_for(table))
    return table.snapshot() if hasattr(table, "snapshot") else table


def sync(table: Any, *, rebuild: bool = False, clock: Callable[[], int] | None = None) -> SyncResult:
    """Bring the Iceberg metadata of ``table`` (a path, a :class:`deltalog.Table` or a snapshot) up to its
    latest version: incrementally from the commits since the converted version, or rebuilt from the
    snapshot when those are gone. ``rebuild=True`` writes it anew, dropping the Iceberg history. Works
    whether or not UniForm is enabled (an explicit sync is a request).

    Example:
        >>> import deltalog.uniform
        >>> deltalog.uniform.sync("/data/events").mode                             # doctest: +SKIP
        'up-to-date'
        >>> deltalog.uniform.sync("/data/events", rebuild=True).mode               # doctest: +SKIP
        'rebuilt'
    """
    snapshot = _snapshot_of(table)
    _require_pyiceberg(snapshot.table)
    from deltalog.uniform.convert import sync_snapshot

    return sync_snapshot(snapshot, rebuild=rebuild, clock=clock)


def rebuild(table: Any, *, clock: Callable[[], int] | None = None) -> SyncResult:
    """:func:`sync` with ``rebuild=True``.

    Example:
        >>> deltalog.uniform.rebuild("/data/events").mode                          # doctest: +SKIP
        'rebuilt'
    """
    return sync(table, rebuild=True, clock=clock)


@dataclass(frozen=True)
class IcebergState:
    """The Iceberg side of a table: the newest metadata file and the Delta version it was converted from.

    Example:
        >>> IcebergState("/t/metadata/v2.metadata.json", 2, 5, 1_700_000_000_000).converted_version
        5
    """

    metadata_location: str
    iceberg_version: int
    converted_version: int | None
    converted_timestamp: int | None


def iceberg_state(store: LogStore) -> IcebergState | None:
    """The Iceberg metadata beside the log of ``store``'s table, or None when there is none (or pyiceberg is
    not installed: the file is then read as plain JSON).

    Example:
        >>> iceberg_state(deltalog.Table("/data/events").snapshot().store)        # doctest: +SKIP
        IcebergState(metadata_location='/data/events/metadata/v13.metadata.json', iceberg_version=13, ...)
    """
    import json
    import re

    try:
        text = store.read("metadata/version-hint.text").decode("utf-8").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    m = re.fullmatch(r"v?(\d+)(?:\.metadata\.json)?", text)
    if m is None:
        return None
    n = int(m.group(1))
    while store.exists(f"metadata/v{n + 1}.metadata.json"):
        n += 1
    path = f"metadata/v{n}.metadata.json"
    try:
        props = json.loads(store.read(path)).get("properties") or {}
    except (FileNotFoundError, ValueError):
        return None

    def number(key: str) -> int | None:
        try:
            return int(props[key])
        except (KeyError, TypeError, ValueError):
            return None

    return IcebergState(store.full_path(path), n, number("delta-version"), number("delta-timestamp"))
