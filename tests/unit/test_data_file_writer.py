"""The kernel's parquet file writer: file rolling by row count (``max_records_per_file``)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.data.write_files import DataFileWriter
from deltalog.protocol.schema import parse_schema
from deltalog.storage import InMemoryLogStore

SCHEMA = parse_schema(
    '{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}},'
    '{"name":"p","type":"string","nullable":true,"metadata":{}}]}'
)


def _rows(store: InMemoryLogStore, rel: str) -> int:
    return int(pq.read_table(pa.BufferReader(store.read(rel))).num_rows)


@pytest.mark.parametrize("limit", [1, 7, 10, 25])
def test_max_records_per_file_splits_batches_and_partitions(limit: int) -> None:
    store = InMemoryLogStore()
    writer = DataFileWriter(store, SCHEMA, ["p"], max_records_per_file=limit)
    for start in (0, 13):  # two batches, so a file fills across them
        n = 13
        writer.write(pa.table({"x": range(start, start + n), "p": ["a" if i % 3 else "b" for i in range(n)]}))
    files = writer.close()
    assert sum(f.num_records for f in files) == 26
    assert all(0 < f.num_records <= limit for f in files)
    assert all(_rows(store, f.rel_path) == f.num_records for f in files)
    per_partition = {v: sum(f.num_records for f in files if f.partition_values["p"] == v) for v in ("a", "b")}
    assert per_partition == {"a": 16, "b": 10}
    # Only the last file of a partition may be short of the limit.
    for v, total in per_partition.items():
        sizes = sorted((f.num_records for f in files if f.partition_values["p"] == v), reverse=True)
        assert sizes.count(limit) >= total // limit


def test_no_limit_and_non_positive_limit_mean_one_file() -> None:
    for limit in (None, 0, -1):
        store = InMemoryLogStore()
        writer = DataFileWriter(store, SCHEMA, [], max_records_per_file=limit)
        writer.write(pa.table({"x": range(100), "p": ["a"] * 100}))
        assert [f.num_records for f in writer.close()] == [100]
