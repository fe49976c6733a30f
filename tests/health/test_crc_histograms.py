"""The ``.crc`` histograms (protocol "Version Checksum File"): the file-size histogram over Delta's bins and
the deleted-record-counts histogram, written by every commit, kept incrementally from the previous ``.crc``
and equal to a recomputation; read from other writers' files (``histogramOpt`` too) and checked by
``deltalog check``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltalog
from deltalog.commands.check import check_table
from deltalog.errors import UnsupportedFeatureError
from deltalog.log.crc import checksum_for, crc_path, histogram_problems, parse_crc, read_crc
from deltalog.log.histograms import (
    DELETED_RECORD_BIN_STARTS,
    FILE_SIZE_BIN_BOUNDARIES,
    GIB,
    KIB,
    MIB,
    DeletedRecordCountsHistogram,
    FileSizeHistogram,
)

CORPUS = Path("/work/shared/conformance")
T0 = 1_700_000_000_000


def _crc(path: Path, version: int) -> dict[str, object]:
    body: dict[str, object] = json.loads((path / crc_path(version)).read_text())
    return body


def test_the_bins_are_the_protocols() -> None:
    b = FILE_SIZE_BIN_BOUNDARIES
    assert len(b) == 95 and b[:3] == (0, 8 * KIB, 16 * KIB) and b[-1] == 256 * GIB
    assert {4 * MIB, 8 * MIB, 40 * MIB, 48 * MIB, 120 * MIB, 124 * MIB, 144 * MIB, 160 * MIB, 576 * MIB, 640 * MIB,
            1408 * MIB, 1536 * MIB, 2 * GIB, 2304 * MIB, 4 * GIB, 8 * GIB} <= set(b)
    assert DELETED_RECORD_BIN_STARTS == (0, 1, 10, 100, 10**3, 10**4, 10**5, 10**6, 10**7, 2**31 - 1)
    h = FileSizeHistogram.of([0, 8 * KIB - 1, 8 * KIB, 300 * GIB])
    assert h.counts_by_bin() == [(0, 2, 8 * KIB - 1), (8 * KIB, 1, 8 * KIB), (256 * GIB, 1, 300 * GIB)]
    assert DeletedRecordCountsHistogram.of([0, 1, 9, 10, 2**31 - 2, 2**31 - 1]).deleted_record_counts == (
        1, 2, 1, 0, 0, 0, 0, 0, 1, 1)


def test_every_commit_writes_both_histograms_kept_incrementally(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "t"
    props = {"delta.enableDeletionVectors": "true"}
    with caplog.at_level(logging.DEBUG, logger="deltalog.log.crc"):
        deltalog.write_table(path, pa.table({"id": list(range(100)), "p": ["a"] * 60 + ["b"] * 40}),
                             partition_by=["p"], properties=props)
        for i in range(3):
            deltalog.write_table(path, pa.table({"id": [1000 + i], "p": ["c"]}), mode="append")
        table = deltalog.Table(path)
        table.delete("id < 25")  # a deletion vector: remove + add of the same path
        table.delete("p = 'b'")  # whole files removed
        table.compact()  # files and their deletion vectors rewritten
        deltalog.write_table(path, pa.table({"id": [7], "p": ["z"]}), mode="overwrite")
    assert "computed from its files" not in caplog.text  # every version after the first came from the last
    for v in range(table.snapshot().version + 1):
        snap = deltalog.Table(path).snapshot(v)
        body = _crc(path, v)
        full = checksum_for(snap)
        assert FileSizeHistogram.from_dict(body["fileSizeHistogram"]) == full.file_size_histogram, v
        assert DeletedRecordCountsHistogram.from_dict(body["deletedRecordCountsHistogramOpt"]) == \
            full.deleted_record_counts_histogram, v
        assert full.file_size_histogram is not None and full.file_size_histogram.num_files == snap.num_files()
        assert "histogramOpt" not in body
    after_delete = _crc(path, 4)["deletedRecordCountsHistogramOpt"]
    assert after_delete == {"deletedRecordCounts": [4, 0, 1, 0, 0, 0, 0, 0, 0, 0]}  # 25 rows deleted in one file


def test_no_deletion_vectors_no_deleted_record_histogram(tmp_path: Path) -> None:
    deltalog.write_table(tmp_path / "t", pa.table({"id": [1, 2]}))
    body = _crc(tmp_path / "t", 0)
    assert "deletedRecordCountsHistogramOpt" not in body and "numDeletionVectorsOpt" not in body
    assert body["fileSizeHistogram"]["sortedBinBoundaries"] == list(FILE_SIZE_BIN_BOUNDARIES)  # type: ignore[index]


def test_the_previous_crcs_boundaries_are_kept_and_a_missing_one_is_recomputed(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalog.write_table(path, pa.table({"id": [1, 2]}))
    custom = FileSizeHistogram.of([f["size"] for f in deltalog.Table(path).snapshot().add_files().to_pylist()],
                                  (0, 100, 1000))
    body = _crc(path, 0)
    body["fileSizeHistogram"] = custom.to_dict()
    (path / crc_path(0)).write_text(json.dumps(body))
    deltalog.write_table(path, pa.table({"id": [3]}), mode="append")
    kept = FileSizeHistogram.from_dict(_crc(path, 1)["fileSizeHistogram"])
    snap = deltalog.Table(path).snapshot()
    assert kept == FileSizeHistogram.of([f["size"] for f in snap.add_files().to_pylist()], (0, 100, 1000))
    (path / crc_path(1)).unlink()
    deltalog.write_table(path, pa.table({"id": [4]}), mode="append")
    assert _crc(path, 2)["fileSizeHistogram"] == checksum_for(deltalog.Table(path).snapshot()).file_size_histogram \
        .to_dict()  # type: ignore[union-attr]


def test_a_previous_crc_that_does_not_add_up_is_not_carried_forward(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "t"
    deltalog.write_table(path, pa.table({"id": [1, 2]}))
    body = _crc(path, 0)
    body["fileSizeHistogram"]["fileCounts"][0] += 5  # type: ignore[index]
    (path / crc_path(0)).write_text(json.dumps(body))
    with caplog.at_level(logging.DEBUG, logger="deltalog.log.crc"):
        deltalog.write_table(path, pa.table({"id": [3]}), mode="append")
    assert "computed from its files" in caplog.text
    assert _crc(path, 1)["fileSizeHistogram"] == checksum_for(deltalog.Table(path).snapshot()).file_size_histogram \
        .to_dict()  # type: ignore[union-attr]


def test_readers_take_the_legacy_name_and_skip_a_malformed_histogram() -> None:
    base = {"tableSizeBytes": 10, "numFiles": 1, "numMetadata": 1, "numProtocol": 1}
    legacy = {**base, "histogramOpt": {"sortedBinBoundaries": [0, 8], "fileCounts": [0, 1], "totalBytes": [0, 10]}}
    assert parse_crc(json.dumps(legacy), 3).file_size_histogram == FileSizeHistogram((0, 8), (0, 1), (0, 10))
    both = {**legacy, "fileSizeHistogram": {"sortedBinBoundaries": [0], "fileCounts": [1], "totalBytes": [10]}}
    assert parse_crc(json.dumps(both), 3).file_size_histogram == FileSizeHistogram((0,), (1,), (10,))
    for bad in ({"sortedBinBoundaries": [1, 8], "fileCounts": [0, 1], "totalBytes": [0, 10]},
                {"sortedBinBoundaries": [0, 8], "fileCounts": [1], "totalBytes": [0, 10]},
                {"sortedBinBoundaries": [0, 8, 8], "fileCounts": [0, 1, 0], "totalBytes": [0, 10, 0]},
                {"sortedBinBoundaries": [0], "fileCounts": [-1], "totalBytes": [0]},
                {"sortedBinBoundaries": "0", "fileCounts": [1], "totalBytes": [0]}, [1, 2]):
        crc = parse_crc(json.dumps({**base, "fileSizeHistogram": bad,
                                    "deletedRecordCountsHistogramOpt": {"deletedRecordCounts": [1, 2]}}), 3)
        assert crc.file_size_histogram is None and crc.deleted_record_counts_histogram is None
        assert crc.num_files == 1  # the rest of the file is still used


def test_check_warns_of_a_histogram_that_disagrees(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalog.write_table(path, pa.table({"id": [1, 2]}), properties={"delta.enableDeletionVectors": "true"})
    body = _crc(path, 0)
    body["fileSizeHistogram"]["fileCounts"][1] += 1  # type: ignore[index]
    body["fileSizeHistogram"]["totalBytes"][1] += 9000  # type: ignore[index]
    body["deletedRecordCountsHistogramOpt"]["deletedRecordCounts"][2] += 1  # type: ignore[index]
    (path / crc_path(0)).write_text(json.dumps(body))
    table = deltalog.Table(path)
    snap = table.snapshot()  # the histograms never make the table unreadable
    problems = histogram_problems(snap, read_crc(snap.store, 0))  # type: ignore[arg-type]
    assert len(problems) == 2 and "bin 8192: 1 files / 9000 bytes in the checksum, 0 / 0 replayed" in problems[0]
    report = check_table(table)
    assert report.ok and [p.code for p in report.problems] == ["crc-histogram-mismatch"] * 2
    assert deltalog.Table(path).health().file_size_histogram_source == "log"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="conformance corpus not available")
def test_other_writers_histograms_agree_with_ours() -> None:
    """delta-spark's (``histogramOpt``) and the Rust kernel's (``fileSizeHistogram``) checksum files: their
    histograms are what we compute for the same version."""
    checked = 0
    for crc_file in sorted(CORPUS.rglob("_delta_log/[0-9]*.crc")):
        if b"istogram" not in crc_file.read_bytes():
            continue
        root, version = crc_file.parent.parent, int(crc_file.name.split(".")[0])
        if root.name == "crc-full":  # synthetic: its numbers describe no file of its log
            continue
        try:
            snap = deltalog.Table(root, verify_checksums=False).snapshot(version)
        except (UnsupportedFeatureError, deltalog.TableNotFoundError):
            continue
        crc = read_crc(snap.store, version)
        assert crc is not None and crc.file_size_histogram is not None, crc_file
        assert histogram_problems(snap, crc) == [], crc_file
        checked += 1
    assert checked >= 10


@settings(max_examples=60, deadline=None)
@given(start=st.lists(st.integers(0, 2**42), max_size=30), added=st.lists(st.integers(0, 2**42), max_size=10),
       dropped=st.data())
def test_incremental_equals_recomputed(start: list[int], added: list[int], dropped: st.DataObject) -> None:
    removed = dropped.draw(st.lists(st.sampled_from(start), max_size=len(start), unique_by=lambda x: id(x))
                           if start else st.just([]))
    rest = list(start)
    for r in removed:
        rest.remove(r)
    assert FileSizeHistogram.of(start).plus(added).minus(removed) == FileSizeHistogram.of(rest + added)
    cards = [s % 50_000 for s in start]
    gone = [s % 50_000 for s in removed]
    assert DeletedRecordCountsHistogram.of(cards).minus(gone).plus([1]) == \
        DeletedRecordCountsHistogram.of([c % 50_000 for c in rest] + [1])
