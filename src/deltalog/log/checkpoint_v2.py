"""Writing V2 (UUID-named) checkpoints with sidecars, for tables with the ``v2Checkpoint`` feature.

A V2 checkpoint of version ``n`` is a top-level file ``n.checkpoint.<uuid>.parquet`` (or ``.json``)
holding the non-file actions -- ``checkpointMetadata``, ``protocol``, ``metaData``, ``txn``,
``domainMetadata`` -- and one ``sidecar`` action per parquet file in ``_delta_log/_sidecars/`` holding
the ``add`` / ``remove`` actions. Sidecars are written first and the top-level file last, each with
put-if-absent, so a reader never sees a top-level file whose sidecars are missing; a crash in between
leaves only unreferenced sidecars, which log cleanup removes. Two writers checkpointing one version make
two checkpoints of the same content (UUIDs never collide), which the protocol allows.

:func:`deltalog.log.checkpoint_writer.write_checkpoint` calls this on ``v2Checkpoint`` tables unless
``delta.checkpointPolicy`` is ``classic`` (then it writes a classic-named file with a
``checkpointMetadata`` action, also a V2-spec checkpoint).

Example:
    >>> v2_checkpoint_name(12, "3a0d65cd-4056-49b8-937b-95f9e3ee90e5", "json")
    '00000000000000000012.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json'
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.errors import InvalidArgumentError
from deltalog.log.files import STRING_MAP
from deltalog.log.paths import LOG_DIR, SIDECAR_DIR, version_prefix
from deltalog.storage import LogStore

if TYPE_CHECKING:
    from typing import TypeAlias

    Arr: TypeAlias = pa.Array[Any]

__all__ = ["SIDECAR_TYPE", "TOP_LEVEL_FORMATS", "V2Written", "v2_checkpoint_name", "write_v2_checkpoint"]

SIDECAR_TYPE = pa.struct([pa.field("path", pa.string()), pa.field("sizeInBytes", pa.int64()),
                          pa.field("modificationTime", pa.int64()), pa.field("tags", STRING_MAP)])
TOP_LEVEL_FORMATS = ("parquet", "json")
_ORDER = ("checkpointMetadata", "protocol", "metaData", "txn", "domainMetadata", "sidecar")


def v2_checkpoint_name(version: int, unique: str, fmt: str) -> str:
    """The file name of a V2 checkpoint (``fmt``: ``parquet`` or ``json``).

    Example:
        >>> v2_checkpoint_name(0, "u", "parquet")
        '00000000000000000000.checkpoint.u.parquet'
    """
    return f"{version_prefix(version)}.checkpoint.{unique}.{fmt}"


@dataclass(frozen=True)
class V2Written:
    """A written V2 checkpoint: its top-level file and sidecars (paths relative to the table root)."""

    path: str
    sidecars: tuple[str, ...]
    num_actions: int
    size_in_bytes: int


def _sidecar_chunks(files: pa.Table, rows: int) -> list[pa.Table]:
    if files.num_rows == 0:
        return []
    return [files.slice(start, rows) for start in range(0, files.num_rows, rows)]


def _top_level_parquet(nonfile: Mapping[str, Arr], sidecars: Sequence[Mapping[str, Any]],
                       to_parquet: Callable[[pa.Table], bytes]) -> bytes:
    k, s = len(next(iter(nonfile.values()))), len(sidecars)
    columns: dict[str, pa.ChunkedArray[Any]] = {}
    for name in _ORDER:
        if name == "sidecar":
            chunks = [pa.nulls(k, SIDECAR_TYPE), pa.array(list(sidecars), SIDECAR_TYPE)]
        elif name in nonfile:
            chunks = [nonfile[name], pa.nulls(s, nonfile[name].type)]
        else:
            continue
        columns[name] = pa.chunked_array([c for c in chunks if len(c)], type=chunks[0].type)
    return to_parquet(pa.table(columns))


def _top_level_json(rows: Sequence[tuple[str, Mapping[str, Any]]], sidecars: Sequence[Mapping[str, Any]]) -> bytes:
    lines = [json.dumps({kind: dict(body)}, separators=(",", ":")) for kind, body in rows]
    lines += [json.dumps({"sidecar": {k: v for k, v in sc.items() if v is not None}}, separators=(",", ":"))
              for sc in sidecars]
    return ("\n".join(lines) + "\n").encode()


def write_v2_checkpoint(
    store: LogStore,
    version: int,
    *,
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    nonfile: Mapping[str, Arr],
    files: pa.Table,
    to_parquet: Callable[[pa.Table], bytes],
    top_level: str = "parquet",
    sidecar_rows: int = 1_000_000,
    table: str | None = None,
) -> V2Written:
    """Write the V2 checkpoint of ``version``: ``files`` (columns ``add`` and ``remove``, one action per
    row) into sidecars of at most ``sidecar_rows`` rows, then the top-level file with the non-file actions
    (``rows`` as dicts for JSON, ``nonfile`` as Arrow columns for parquet) and one ``sidecar`` action per
    sidecar.

    Example:
        >>> write_v2_checkpoint(store, 7, rows=rows, nonfile=arrays, files=files,
        ...                     to_parquet=encode).path                                # doctest: +SKIP
        '_delta_log/00000000000000000007.checkpoint.0b5c....parquet'
    """
    if top_level not in TOP_LEVEL_FORMATS:
        raise InvalidArgumentError(f"a V2 checkpoint's top-level file is parquet or json, got {top_level!r}",
                                   table=table)
    if sidecar_rows < 1:
        raise InvalidArgumentError(f"sidecar_rows must be positive, got {sidecar_rows!r}", table=table)
    sidecars: list[dict[str, Any]] = []
    written: list[str] = []
    size = 0
    for chunk in _sidecar_chunks(files, sidecar_rows):
        name = f"{uuid.uuid4()}.parquet"
        path = f"{LOG_DIR}/{SIDECAR_DIR}/{name}"
        data = to_parquet(chunk)
        store.write(path, data, overwrite=False)  # a fresh UUID: FileExistsError would be a real fault
        info = store.stat(path)
        sidecars.append({"path": name, "sizeInBytes": len(data), "modificationTime": info.modification_time,
                         "tags": None})
        written.append(path)
        size += len(data)
    body = _top_level_json(rows, sidecars) if top_level == "json" else \
        _top_level_parquet(nonfile, sidecars, to_parquet)
    path = f"{LOG_DIR}/{v2_checkpoint_name(version, str(uuid.uuid4()), top_level)}"
    store.write(path, body, overwrite=False)
    return V2Written(path, tuple(written), len(rows) + len(sidecars) + files.num_rows, size + len(body))
