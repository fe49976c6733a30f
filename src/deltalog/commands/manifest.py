"""``GENERATE symlink_format_manifest``: manifest files for engines that read a Delta table as plain
parquet through a list of its files (Presto, Athena, Redshift Spectrum, Hive).

The manifests describe one snapshot (the latest by default) and live under
``<table>/_symlink_format_manifest/``: one ``manifest`` file for an unpartitioned table, one per
partition directory (``<col>=<value>/.../manifest``, Hive-escaped as the data directories are) for a
partitioned one. Each holds the absolute paths (``file:/...`` or the store's URI) of the partition's
live data files, one per line. Manifests of partitions that no longer have files are deleted, so the
directory always describes exactly that snapshot. Each manifest is replaced atomically (temporary file,
then rename), so a reader sees an old or a new manifest, never a partial one; a reader may still see
partitions of different generations while the command runs, as with delta-spark.

Tables whose files carry deletion vectors, or that use column mapping, are refused: the engines
reading manifests would return deleted rows, or miss renamed columns.

Example:
    >>> import deltalog
    >>> res = generate_symlink_manifest(deltalog.Table("/data/events"))         # doctest: +SKIP
    >>> res.version, res.manifests                                             # doctest: +SKIP
    (12, ['_symlink_format_manifest/day=2024-05-01/manifest', ...])
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.protocol.partitions import partition_path

if TYPE_CHECKING:
    from deltalog.txn.handle import TableHandle

__all__ = ["MANIFEST_DIR", "ManifestResult", "generate_symlink_manifest"]

#: Where the manifests live, relative to the table root.
MANIFEST_DIR = "_symlink_format_manifest"


@dataclass(frozen=True)
class ManifestResult:
    """What :func:`generate_symlink_manifest` wrote: the snapshot ``version``, the manifest files
    written and the stale ones deleted (paths relative to the table root).

    Example:
        >>> ManifestResult(3, ["_symlink_format_manifest/manifest"]).manifests
        ['_symlink_format_manifest/manifest']
    """

    version: int
    manifests: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def _absolute(table: TableHandle, path: str) -> str:
    """The data file's absolute path as manifest readers expect it (Hadoop's ``Path.toString``)."""
    if "://" in path or path.startswith("file:"):
        return path  # already absolute (a shallow clone's files)
    full = table.store.full_path(unquote(path))
    return full if "://" in full else "file:" + os.path.abspath(full)


def generate_symlink_manifest(table: TableHandle, *, version: int | None = None) -> ManifestResult:
    """Write ``_symlink_format_manifest`` for the latest snapshot (or ``version``) of ``table``.

    Example:
        >>> import deltalog, tempfile, pyarrow as pa
        >>> path = tempfile.mkdtemp()
        >>> _ = deltalog.write_table(path, pa.table({"id": [1, 2], "day": ["a", "b"]}), partition_by=["day"])
        >>> generate_symlink_manifest(deltalog.Table(path)).manifests
        ['_symlink_format_manifest/day=a/manifest', '_symlink_format_manifest/day=b/manifest']
    """
    snap = table.snapshot(version)
    if snap.column_mapping_mode != "none":
        raise UnsupportedFeatureError(
            "[DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED] symlink manifests cannot describe a table with "
            f"column mapping ({snap.column_mapping_mode!r}): engines reading them would miss renamed columns",
            feature="columnMapping", table=snap.table, version=snap.version,
        )
    files = snap.add_files()
    dvs = files.column("deletionVector") if "deletionVector" in files.column_names else None
    if dvs is not None and dvs.null_count < files.num_rows:
        raise UnsupportedFeatureError(
            "[DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED] symlink manifests cannot describe files with "
            "deletion vectors (engines reading them would return deleted rows): run OPTIMIZE to purge them "
            "first",
            feature="deletionVectors", table=snap.table, version=snap.version,
        )
    parts = list(snap.partition_columns)
    groups: dict[str, list[str]] = {}
    for row in files.select(["path", "partitionValues"]).to_pylist():
        values = dict(row["partitionValues"] or [])
        try:
            directory = partition_path(parts, values) if parts else ""
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(
                f"file {row['path']} has no value for a partition column: {exc.message}",
                table=snap.table, version=snap.version,
            ) from None
        groups.setdefault(directory, []).append(_absolute(table, row["path"]))
    if not parts and not groups:
        groups[""] = []  # an empty unpartitioned table: an empty manifest, so readers see no rows
    store = table.store
    written = []
    for directory in sorted(groups):
        target = f"{MANIFEST_DIR}/{directory}manifest"
        store.write(target, "".join(p + "\n" for p in sorted(groups[directory])).encode("utf-8"), overwrite=True)
        written.append(target)
    keep = set(written)
    stale = [f.path for f in store.list_dir(MANIFEST_DIR, recursive=True) if f.path not in keep]
    for path in stale:
        store.delete(path)
    _remove_empty_dirs(store.full_path(MANIFEST_DIR))
    return ManifestResult(snap.version, written, stale)


def _remove_empty_dirs(root: str) -> None:
    """Drop the partition directories whose manifest was deleted (local tables; object stores have none)."""
    if "://" in root or not os.path.isdir(root):
        return
    for current, _dirs, _files in os.walk(root, topdown=False):
        if current != root:
            with contextlib.suppress(OSError):  # only succeeds when empty
                os.rmdir(current)
