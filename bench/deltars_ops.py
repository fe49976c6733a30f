"""delta-rs's side of the Spark DML / OPTIMIZE benchmarks, run in a child process (``deltalake`` must be
imported before ``pyarrow.parquet``, and its threads should not share the JVM's process).

    python bench/deltars_ops.py merge TABLE SOURCE.parquet    # upsert on id, all columns
    python bench/deltars_ops.py compact TABLE
    python bench/deltars_ops.py zorder TABLE x y

Prints one JSON object: ``{"seconds": <wall time of the operation>, "metrics": {...}}`` (loading the
table and, for ``merge``, reading the source file are not timed).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import deltalake


def main(argv: list[str]) -> int:
    op, table = argv[0], argv[1]
    dt = deltalake.DeltaTable(table)
    metrics: Any
    if op == "merge":
        import pyarrow.parquet as pq

        source = pq.read_table(argv[2])
        t0 = time.perf_counter()
        metrics = (dt.merge(source=source, predicate="t.id = s.id", source_alias="s", target_alias="t")
                   .when_matched_update_all().when_not_matched_insert_all().execute())
    elif op == "compact":
        t0 = time.perf_counter()
        metrics = dt.optimize.compact()
    elif op == "zorder":
        t0 = time.perf_counter()
        metrics = dt.optimize.z_order(argv[2:])
    else:
        raise SystemExit(f"unknown operation {op!r}")
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "metrics": metrics}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
