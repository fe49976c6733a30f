"""Tiny helpers for tests that hand-craft Delta logs (in memory or on disk)."""

from __future__ import annotations

import json
from typing import Any

from deltalog.storage import LogStore

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "part", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def protocol(reader: int = 1, writer: int = 2, **features: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    body.update(features)
    return {"protocol": body}


def metadata(partition_columns: list[str] | None = None, schema: dict[str, Any] | None = None,
             **conf: str) -> dict[str, Any]:
    return {
        "metaData": {
            "id": "00000000-0000-0000-0000-000000000000",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema or SCHEMA),
            "partitionColumns": partition_columns or [],
            "configuration": conf,
            "createdTime": 0,
        }
    }


def add(path: str, part: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "path": path,
        "partitionValues": {} if part is None else {"part": part},
        "size": 10,
        "modificationTime": 1,
        "dataChange": True,
    }
    body.update(extra)
    return {"add": body}


def remove(path: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"path": path, "deletionTimestamp": 5, "dataChange": True}
    body.update(extra)
    return {"remove": body}


def commit_info(op: str = "WRITE", **extra: Any) -> dict[str, Any]:
    return {"commitInfo": {"timestamp": 1, "operation": op, **extra}}


def write_commit(store: LogStore, version: int, *actions: dict[str, Any] | str) -> None:
    lines = [a if isinstance(a, str) else json.dumps(a) for a in actions]
    store.write(f"_delta_log/{version:020d}.json", ("\n".join(lines) + "\n").encode(), overwrite=False)


def new_table(store: LogStore, partition_columns: list[str] | None = None) -> None:
    write_commit(store, 0, commit_info("CREATE TABLE"), protocol(), metadata(partition_columns))
