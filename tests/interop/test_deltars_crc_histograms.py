"""delta-rs (``deltalake``) and DuckDB's delta extension (delta-kernel-rs, which reads ``.crc`` files) open and
read tables whose ``.crc`` files carry the protocol's histograms (``fileSizeHistogram``,
``deletedRecordCountsHistogramOpt``), as deltalog writes them after every commit."""

from __future__ import annotations

import json
from pathlib import Path

import deltars_worker
import pyarrow as pa

import deltalog
from pools import spawn_pool
from readers import duckdb_rows


def test_deltars_reads_tables_with_histograms_in_their_crc(tmp_path: Path) -> None:
    plain, dvs = tmp_path / "plain", tmp_path / "dvs"
    for i in range(3):
        deltalog.write_table(plain, pa.table({"id": [i, i + 10], "p": ["a", "b"]}), mode="append", partition_by=["p"])
    deltalog.write_table(dvs, pa.table({"id": list(range(20))}), properties={"delta.enableDeletionVectors": "true"})
    deltalog.Table(dvs).delete("id < 5")
    assert "fileSizeHistogram" in json.loads((plain / "_delta_log" / f"{2:020d}.crc").read_text())
    assert "deletedRecordCountsHistogramOpt" in json.loads((dvs / "_delta_log" / f"{1:020d}.crc").read_text())
    with spawn_pool() as pool:
        rows = pool.submit(deltars_worker.read_table, str(plain)).result(timeout=120)
        assert sorted(rows.column("id").to_pylist()) == [0, 1, 2, 10, 11, 12]
        assert pool.submit(deltars_worker.version, str(plain)).result(timeout=120) == 2
        assert pool.submit(deltars_worker.version, str(dvs)).result(timeout=120) == 1
    assert duckdb_rows(str(plain), ["id"]) == [(0,), (1,), (2,), (10,), (11,), (12,)]
    assert duckdb_rows(str(dvs), ["id"]) == [(i,) for i in range(5, 20)]
