"""The ``deltalog`` command: inspect Delta tables from a shell.

Example:
    $ deltalog info /data/events
    $ deltalog history /data/events --limit 5
    $ deltalog files /data/events --version 3
    $ deltalog head /data/events -n 10
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from deltalog.errors import DeltaError
from deltalog.table import Table


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="deltalog", description="Inspect Delta Lake tables without a JVM.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("info", "version, protocol, schema, partitioning and properties"),
        ("history", "commit history, newest first"),
        ("files", "live data files"),
        ("head", "first rows of the table"),
    ):
        sp = sub.add_parser(name, help=help_text)
        sp.add_argument("path", help="table location (directory holding _delta_log)")
        if name != "history":
            sp.add_argument("--version", type=int, default=None, help="time travel to this version")
            sp.add_argument("--timestamp", default=None, help="time travel to this timestamp (ISO 8601)")
        if name == "history":
            sp.add_argument("--limit", type=int, default=None)
        if name == "head":
            sp.add_argument("-n", type=int, default=10, help="number of rows (default 10)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code (1 with a clear message on Delta errors).

    Example:
        >>> main(["info", "/no/such/table"])                          # doctest: +SKIP
        deltalog: no Delta table: the path does not exist [table /no/such/table]
        1
    """
    args = _parser().parse_args(argv)
    table = Table(args.path)
    try:
        if args.command == "history":
            for entry in table.history(limit=args.limit):
                print(json.dumps(entry, default=str, sort_keys=True))
            return 0
        snap = table.snapshot(args.version, timestamp=args.timestamp)
        if args.command == "info":
            info = {
                "version": snap.version,
                "protocol": snap.protocol.to_dict(),
                "partition_columns": list(snap.partition_columns),
                "properties": dict(snap.properties),
                "num_files": snap.num_files(),
                "schema": json.loads(snap.schema.to_json()),
            }
            print(json.dumps(info, indent=2))
        elif args.command == "files":
            for row in snap.add_files().select(["path", "size", "partitionValues"]).to_pylist():
                print(json.dumps(row, default=str))
        else:
            print(snap.to_arrow().slice(0, args.n).to_pandas().to_string()
                  if _has_pandas() else snap.to_arrow().slice(0, args.n))
        return 0
    except DeltaError as exc:
        print(f"deltalog: {exc}", file=sys.stderr)
        return 1


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
