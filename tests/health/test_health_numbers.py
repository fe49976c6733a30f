"""``Table.health()`` on tables with known defects: every number checked exactly against the defect built
(many small files in one partition, ~30% of the rows deleted by deletion vectors, a long log without a
checkpoint, tombstones past the retention), and no data file is read to get them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import deltalog
from deltalog.health import TableHealth, table_health
from deltalog.health.files import num_records, tombstone_facts
from deltalog.log.crc import crc_path
from deltalog.log.histograms import FILE_SIZE_BIN_BOUNDARIES, FileSizeHistogram
from deltalog.log.stats_parsed import parse_stats
from deltalog.storage import InMemoryLogStore, store_for
from recording_store import CountingStore

T0 = 1_700_000_000_000
HOUR = 3_600_000
DAY = 24 * HOUR
SMALL = 2_000  # bytes: the one-row files are below it, the 3,000-row file above


def _rows(ids: range, part: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "part": [part] * len(ids)})


@pytest.fixture(scope="module")
def defects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """v0: 3,000 rows in partition ``big``; v1-v12: one row each in partition ``small``; v13: two rows in
    partition ``gone``; v14: DELETE of ``gone`` (tombstones, 8 days before the check); v15: DELETE of ids
    < 900 with a deletion vector (30% of ``big``); v16: one more row in ``late``, deleted at v17 (a tombstone
    within the retention). No checkpoint (interval 1000)."""
    path = tmp_path_factory.mktemp("health") / "defects"
    props = {"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "1000"}
    deltalog.write_table(path, _rows(range(3000), "big"), partition_by=["part"], properties=props,
                         clock=lambda: T0)
    for i in range(12):
        deltalog.write_table(path, _rows(range(10_000 + i, 10_001 + i), "small"), mode="append",
                             clock=lambda i=i: T0 + (i + 1) * HOUR)
    deltalog.write_table(path, _rows(range(20_000, 20_002), "gone"), mode="append", clock=lambda: T0 + 13 * HOUR)
    table = deltalog.Table(path)
    gone = [f for f in table.snapshot().add_files().to_pylist() if dict(f["partitionValues"])["part"] == "gone"]
    table.delete("part = 'gone'", clock=lambda: T0 + 14 * HOUR)
    table.delete("id < 900", clock=lambda: T0 + 15 * HOUR)
    deltalog.write_table(path, _rows(range(30_000, 30_001), "late"), mode="append", clock=lambda: T0 + 16 * HOUR)
    late = [f for f in table.snapshot().add_files().to_pylist() if dict(f["partitionValues"])["part"] == "late"]
    table.delete("part = 'late'", clock=lambda: T0 + 7 * DAY)
    files = deltalog.Table(path).snapshot().add_files().to_pylist()
    return {"path": path, "files": files, "gone": gone, "late": late,
            "now": T0 + 14 * HOUR + 8 * DAY}  # gone's tombstones 8 days old, late's 1 day + 14 h


def _health(d: dict[str, Any], **kw: Any) -> TableHealth:
    return deltalog.Table(d["path"]).health(small_file_threshold=SMALL, clock=lambda: d["now"], **kw)


def _by_part(files: list[dict[str, Any]], part: str) -> list[dict[str, Any]]:
    return [f for f in files if dict(f["partitionValues"])["part"] == part]


def test_files_rows_and_deleted_rows(defects: dict[str, Any]) -> None:
    h = _health(defects)
    files = defects["files"]
    big = _by_part(files, "big")
    assert h.version == 17 and h.table == str(defects["path"])
    assert h.num_files == 13 and len(big) == 1
    assert h.num_bytes == sum(f["size"] for f in files)
    assert (h.num_physical_rows, h.num_rows, h.num_deleted_rows) == (3012, 2112, 900)
    assert h.deleted_row_share == pytest.approx(900 / 3012)
    assert h.read_amplification == pytest.approx(3012 / 2112)
    assert (h.dv_files, h.dv_bytes, h.dv_physical_rows) == (1, big[0]["size"], 3000)
    assert h.deleted_bytes_estimate == round(big[0]["size"] * 900 / 3000)
    assert h.deleted_record_counts_histogram.deleted_record_counts == (12, 0, 0, 1, 0, 0, 0, 0, 0, 0)
    assert (h.files_without_stats, h.bytes_without_stats) == (0, 0)
    assert h.reader_features == ("deletionVectors",) and h.min_reader_version == 3
    assert h.timestamp == T0 + 7 * DAY and h.measured_at == defects["now"]


def test_small_files_partitions_and_histograms(defects: dict[str, Any]) -> None:
    h = _health(defects)
    files = defects["files"]
    small = [f for f in files if f["size"] < SMALL]
    assert len(small) == 12 and {dict(f["partitionValues"])["part"] for f in small} == {"small"}
    assert (h.small_file_threshold, h.num_small_files) == (SMALL, 12)
    assert h.small_file_bytes == sum(f["size"] for f in small)
    assert h.small_file_share == pytest.approx(12 / 13)
    assert h.file_size_histogram == FileSizeHistogram.of([f["size"] for f in files])
    assert h.file_size_histogram_source == "crc"  # the writer's .crc of version 17 holds it
    assert [p.values for p in h.partitions] == [{"part": "big"}, {"part": "small"}]
    big, smalls = h.partitions
    assert (big.num_files, big.num_rows, big.num_deleted_rows, big.num_small_files, big.num_dv_files) == (1, 2100, 900,
                                                                                                         0, 1)
    assert (smalls.num_files, smalls.num_rows, smalls.num_small_files, smalls.small_file_share) == (12, 12, 12, 1.0)
    assert smalls.num_bytes == sum(f["size"] for f in small)
    assert sum(c for _, c, _ in smalls.size_bins) == 12 and sum(b for _, _, b in smalls.size_bins) == smalls.num_bytes
    assert {start for start, _, _ in smalls.size_bins} <= set(FILE_SIZE_BIN_BOUNDARIES)
    assert h.partition_skew == pytest.approx(max(big.num_bytes, smalls.num_bytes) / ((big.num_bytes + smalls.num_bytes)
                                                                                     / 2))
    # the default threshold: a quarter of delta.targetFileSize, else 32 MiB
    assert deltalog.Table(defects["path"]).health().small_file_threshold == 32 << 20


def test_tombstones_and_what_vacuum_would_reclaim(defects: dict[str, Any]) -> None:
    h = _health(defects)
    gone, late = defects["gone"], defects["late"]
    # big's remove (its deletion vector changed) is shadowed by its live add: not a tombstone of a file
    assert h.num_tombstones == len(gone) + len(late) == 2
    assert h.tombstone_bytes == sum(f["size"] for f in gone + late)
    assert (h.expired_tombstones, h.reclaimable_bytes) == (1, gone[0]["size"])
    assert h.deleted_file_retention_ms == 7 * DAY and h.tombstones_without_size == 0
    later = _health({**defects, "now": T0 + 15 * DAY})
    assert (later.expired_tombstones, later.reclaimable_bytes) == (2, h.tombstone_bytes)
    assert h.breaches(max_reclaimable_bytes=gone[0]["size"] - 1)[0].metric == "reclaimable_bytes"


def test_the_log_without_checkpoint(defects: dict[str, Any]) -> None:
    h = _health(defects)
    log_dir = Path(defects["path"]) / "_delta_log"
    assert h.checkpoint_version is None and h.commits_since_checkpoint == 18 and h.checkpoint_interval == 1000
    assert h.log_files == len(list(log_dir.iterdir()))
    assert h.log_bytes == sum(p.stat().st_size for p in log_dir.iterdir())
    assert h.last_optimize is None and h.last_vacuum is None and h.history_complete
    assert h.history_commits_scanned == 18
    assert [b.metric for b in h.breaches(max_commits_since_checkpoint=10, max_small_file_share=0.9,
                                         max_deleted_share=0.25)] == [
        "small_file_share", "deleted_row_share", "commits_since_checkpoint"]
    assert h.breaches(max_commits_since_checkpoint=18, max_small_file_share=0.95, max_deleted_share=0.3) == []
    old = _health(defects, version=12)  # time travel: the state and the log up to version 12
    assert (old.version, old.num_files, old.commits_since_checkpoint, old.num_deleted_rows) == (12, 13, 13, 0)
    assert old.history_commits_scanned == 13


def test_no_data_file_is_read(defects: dict[str, Any]) -> None:
    store = CountingStore(store_for(str(defects["path"])))
    h = table_health(deltalog.Table(defects["path"], store=store).snapshot(), small_file_threshold=SMALL)  # type: ignore[arg-type]
    assert h.num_files == 13
    assert store.read_paths and all(p.startswith("_delta_log/") for p in store.read_paths)


def test_checkpoint_optimize_zorder_and_vacuum(tmp_path: Path) -> None:
    path = tmp_path / "z"
    for i in range(3):
        deltalog.write_table(path, _rows(range(i * 10, i * 10 + 10), "p"), mode="append", clock=lambda: T0)
    table = deltalog.Table(path)
    optimized = table.compact(zorder_by=["id"], clock=lambda: T0 + HOUR).version
    deltalog.write_table(path, _rows(range(100, 101), "p"), mode="append", clock=lambda: T0 + 2 * HOUR)
    table.checkpoint()
    vacuumed = table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False,
                            clock=lambda: T0 + 3 * HOUR)
    h = table.health(clock=lambda: T0 + 4 * HOUR)
    files = table.snapshot().add_files().to_pylist()
    assert h.last_optimize is not None and h.last_optimize.version == optimized
    assert h.last_zorder == h.last_optimize and h.zorder_columns == ("id",)
    written = set(table.snapshot(optimized).add_files().column("path").to_pylist())
    zordered = [f for f in files if f["path"] in written]  # the file appended after is not Z-ordered
    assert h.zordered_files == len(zordered) == len(files) - 1
    assert h.zordered_bytes == sum(f["size"] for f in zordered)
    assert h.zordered_share == pytest.approx(h.zordered_bytes / h.num_bytes)
    assert h.last_vacuum is not None and h.last_vacuum.version == vacuumed.end_version
    assert h.last_vacuum.operation == "VACUUM END"
    assert h.checkpoint_version == 4 and h.commits_since_checkpoint == h.version - 4
    assert h.checkpoint_timestamp is not None
    assert h.clustering_columns is None and h.clustered_share is None
    shallow = table.health(history_depth=1, clock=lambda: T0)
    assert shallow.history_commits_scanned == 1 and not shallow.history_complete and shallow.last_optimize is None


def test_liquid_clustering_coverage(tmp_path: Path) -> None:
    path = tmp_path / "c"
    deltalog.write_table(path, pa.table({"id": [3, 1, 2], "v": ["a", "b", "c"]}), cluster_by=["id"])
    h = deltalog.Table(path).health()
    files = deltalog.Table(path).snapshot().add_files().to_pylist()
    clustered = [f for f in files if f["clusteringProvider"] is not None]
    assert h.clustering_columns == ("id",) and h.zorder_columns is None
    assert h.clustered_files == len(clustered) and h.clustered_bytes == sum(f["size"] for f in clustered)
    assert h.clustered_share == pytest.approx(h.clustered_bytes / h.num_bytes)
    assert "clustering" in h.writer_features


def _raw_table(adds: list[dict[str, Any]]) -> deltalog.Table:
    store = InMemoryLogStore("memory://health-raw")
    schema = {"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": True, "metadata": {}}]}
    lines = [
        {"commitInfo": {"timestamp": T0, "operation": "WRITE"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "raw", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {}}},
        *({"add": {"partitionValues": {}, "modificationTime": T0, "dataChange": True, **a}} for a in adds),
    ]
    store.write("_delta_log/00000000000000000000.json", "\n".join(json.dumps(x) for x in lines).encode(),
                overwrite=False)
    return deltalog.Table("memory://health-raw", store=store)


def test_files_without_statistics_and_every_shape_of_row_count() -> None:
    adds = [
        {"path": "a.parquet", "size": 10, "stats": '{"numRecords":7,"minValues":{"x":1}}'},
        {"path": "b.parquet", "size": 20, "stats": '{"minValues":{"numRecords":99},"numRecords":5}'},
        {"path": "c.parquet", "size": 30, "stats": '{ "numRecords" : 3 }'},
        {"path": "d.parquet", "size": 40},
        {"path": "e.parquet", "size": 50, "stats": '{"minValues":{"x":1}}'},
        {"path": "f.parquet", "size": 60, "stats": '{"numRecords":12345678901}'},
    ]
    h = _raw_table(adds).health(small_file_threshold=25)
    assert (h.num_files, h.num_rows, h.num_physical_rows) == (6, 7 + 5 + 3 + 12345678901, 7 + 5 + 3 + 12345678901)
    assert (h.files_without_stats, h.bytes_without_stats) == (2, 90)
    assert (h.num_small_files, h.small_file_bytes) == (2, 30)
    assert h.partitions == () and h.partition_skew is None
    assert h.file_size_histogram_source == "log"  # no .crc: computed
    assert h.deleted_row_share == 0.0 and h.read_amplification == 1.0


def test_a_tombstone_is_shadowed_by_a_live_file_under_another_deletion_vector() -> None:
    dv = pa.struct([("storageType", pa.string()), ("cardinality", pa.int64())])
    tombs = pa.table({"path": ["a", "b", "c"], "size": [1, 2, 4], "deletionTimestamp": [5, 5, 5],
                      "deletionVector": pa.array([None, {"storageType": "u", "cardinality": 3}, None], dv)})
    live = pa.array(["a", "b", "x"])
    # a: removed without a vector, live again with one; b: removed with one, live again without (a RESTORE)
    got = tombstone_facts(tombs, live, cutoff_ms=10, live_dvs=np.array([True, False, False]))
    assert (got.count, got.num_bytes) == (1, 4)
    no_tomb_dvs = tombs.drop_columns(["deletionVector"])
    assert tombstone_facts(no_tomb_dvs, live, 10, live_dvs=np.array([True, False, False])).count == 2  # b, c
    assert tombstone_facts(no_tomb_dvs, live, 10, live_dvs=np.array([False, False, False])).count == 3


def test_zorder_tags_say_which_files_are_zordered() -> None:
    """Files delta-spark / Databricks tagged ``ZCUBE_ZORDER_BY``: the columns of most files, and those files."""
    tag = {"ZCUBE_ID": "c1", "ZCUBE_ZORDER_BY": '["salary"]'}
    adds = [{"path": "a.parquet", "size": 10, "tags": tag}, {"path": "b.parquet", "size": 20, "tags": tag},
            {"path": "c.parquet", "size": 40, "tags": {"ZCUBE_ZORDER_BY": '["id"]'}},
            {"path": "d.parquet", "size": 30}]
    h = _raw_table(adds).health()
    assert h.zorder_columns == ("salary",) and (h.zordered_files, h.zordered_bytes) == (2, 30)
    assert h.zordered_share == 0.3 and h.last_zorder is None


def test_the_row_count_parser_agrees_with_the_stats_parser() -> None:
    """The digits read straight from the buffer and the JSON parse of the rest give what the stats parser
    (data skipping's) gives for each string alone."""
    texts = ['{"numRecords":0}', '{"numRecords":42,"x":1}', '{"numRecords":1e3}', '{"numRecords":-1}',
             '{"numRecords":"7"}', '{"numRecords":123456789012345678901}', "not json", None,
             '{"numRecords":9}', '{"numRecords":', '{"numRecords":12}', '{"numRecords":8 }', '{"numRecords":3.0}']
    target = pa.struct([pa.field("numRecords", pa.int64())])
    alone = [None if t is None else parse_stats(pa.array([t]), target).to_pylist()[0] for t in texts]
    expected = [None if a is None else a["numRecords"] for a in alone]
    assert expected[:3] == [0, 42, 1000] and expected[6:8] == [None, None]
    assert num_records(pa.chunked_array([pa.array(texts[:5]), pa.array(texts[5:])])) == expected


def test_the_usual_stats_never_reach_the_json_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    import deltalog.log.stats_parsed

    def refuse(*args: Any) -> Any:
        raise AssertionError("the JSON reader was asked")

    monkeypatch.setattr(deltalog.log.stats_parsed, "parse_stats", refuse)
    counts = [0, 7, 10, 99, 12345678, 99999999, 5, 1000]
    texts = [f'{{"numRecords":{n},"minValues":{{"id":1}},"maxValues":{{"id":2}},"nullCount":{{"id":0}}}}'
             for n in counts]
    assert num_records(pa.array([*texts, None, '{"numRecords":3}', *texts])) == [*counts, None, 3, *counts]


def test_a_crc_whose_histogram_does_not_add_up_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalog.write_table(path, _rows(range(5), "p"))
    crc = path / crc_path(0)
    body = json.loads(crc.read_text())
    body["fileSizeHistogram"]["fileCounts"][0] += 1
    crc.write_text(json.dumps(body))
    h = deltalog.Table(path, verify_checksums=False).health()
    assert h.file_size_histogram_source == "log" and h.file_size_histogram.num_files == 1
