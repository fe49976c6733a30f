"""MERGE reads and rewrites only the target files its source's keys can match (``deltalog.spark.dml.merge_keys``):
by the keys' range against the files' statistics, by the set of values of a partition key, by the exact keys of a
tiny source; with NOT MATCHED BY SOURCE clauses, also the files their conditions may act on. A property test over
random table layouts, sources and clauses checks that the rows and counts are those of the same MERGE without the
pruning (and the multiple-match error where that one raises it).

``DELTALOG_PROPERTY_EXAMPLES`` sets the number of random examples (default 6)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sparkutil import frame

import deltalog
from deltalog.errors import DeltaError
from deltalog.spark.dml import merge, merge_keys, merge_run

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("DELTALOG_PROPERTY_EXAMPLES", "6"))
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("v", pa.int64())])


def _table(path: str, files: list[list[int]], *, partitioned: bool = False) -> str:
    """A target written one file per list of ids (one file per partition and list when ``partitioned``)."""
    for ids in files:
        rows = pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([i % 3 for i in ids], pa.int32()),
                         "v": pa.array([i * 10 for i in ids], pa.int64())}, schema=SCHEMA)
        deltalog.write_table(path, rows, mode="append", partition_by=["p"] if partitioned else None)
    return path


def _source(spark: Any, ids: list[int | None], v: int = 7) -> Any:
    rows = pa.table({"id": pa.array(ids, pa.int64()),
                     "p": pa.array([None if i is None else i % 3 for i in ids], pa.int32()),
                     "v": pa.array([v] * len(ids), pa.int64())}, schema=SCHEMA)
    return frame(spark, rows).alias("s")


def _final(path: str) -> list[tuple[Any, ...]]:
    t = deltalog.Table(path).snapshot().to_arrow()
    return sorted(zip(*(t.column(n).to_pylist() for n in ("id", "p", "v"))), key=repr)


@pytest.fixture
def files_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of target files each MERGE's first scan reads."""
    seen: list[int] = []
    original = merge_run.MergeRun._candidates

    def spy(self: Any, keypass: Any) -> Any:
        files = original(self, keypass)
        seen.append(files.num_rows)
        return files

    monkeypatch.setattr(merge_run.MergeRun, "_candidates", spy)
    return seen


def _run(spark: Any, path: str, source: Any, clauses: Callable[[Any], Any], on: str = "t.id = s.id") -> dict[str, str]:
    b = clauses(merge(spark, path, source, on, target_alias="t"))
    b.execute()
    return dict(b.result.metrics)


def _upsert(b: Any) -> Any:
    return b.whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll()


def test_an_upsert_reads_and_rewrites_only_the_files_its_keys_fall_in(
    spark: Any, tmp_path: Path, files_read: list[int]
) -> None:
    path = _table(str(tmp_path / "t"), [list(range(k * 100, k * 100 + 100)) for k in range(8)])
    metrics = _run(spark, path, _source(spark, [*range(750, 760), 900, 901]), _upsert)
    assert files_read == [1]
    assert metrics["numTargetFilesRemoved"] == "1" and metrics["numSourceRows"] == "12"
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == ("10", "2")
    expected = [(i, i % 3, 7 if 750 <= i < 760 or i >= 900 else i * 10) for i in [*range(800), 900, 901]]
    assert _final(path) == sorted(expected, key=repr)


def test_a_tiny_source_reads_only_the_files_holding_its_keys(
    spark: Any, tmp_path: Path, files_read: list[int]
) -> None:
    path = _table(str(tmp_path / "t"), [list(range(k * 100, k * 100 + 100)) for k in range(8)])
    _run(spark, path, _source(spark, [5, 405, 795]), _upsert)  # the range holds every file, the keys three
    assert files_read == [3]
    assert sorted(r for r in _final(path) if r[2] == 7) == [(5, 2, 7), (405, 0, 7), (795, 0, 7)]


def test_a_partition_key_reads_only_the_partitions_of_the_source(
    spark: Any, tmp_path: Path, files_read: list[int]
) -> None:
    path = _table(str(tmp_path / "t"), [list(range(0, 300))], partitioned=True)  # three files, p = 0, 1, 2
    _run(spark, path, _source(spark, [3, 6, 600]), _upsert, on="t.p = s.p AND t.id = s.id")  # all p = 0
    assert files_read == [1]
    assert sorted(r for r in _final(path) if r[2] == 7) == [(3, 0, 7), (6, 0, 7), (600, 0, 7)]


def test_a_source_without_a_key_reads_no_target_file(spark: Any, tmp_path: Path, files_read: list[int]) -> None:
    path = _table(str(tmp_path / "t"), [list(range(0, 50)), list(range(50, 100))])
    metrics = _run(spark, path, _source(spark, [None, None]), _upsert)
    assert files_read == [0]
    assert (metrics["numTargetRowsInserted"], metrics["numTargetFilesRemoved"]) == ("2", "0")
    assert len(_final(path)) == 102


def test_not_matched_by_source_reads_the_files_its_condition_may_act_on(
    spark: Any, tmp_path: Path, files_read: list[int]
) -> None:
    path = _table(str(tmp_path / "t"), [list(range(k * 100, k * 100 + 100)) for k in range(8)])
    metrics = _run(spark, path, _source(spark, list(range(150, 160))),
                   lambda b: b.whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedBySourceDelete("t.id >= 700"))
    assert files_read == [2]  # 100-199 (the keys) and 700-799 (the clause)
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"]) == ("10", "100")
    _run(spark, path, _source(spark, [1]), lambda b: b.whenNotMatchedBySourceUpdate(set={"v": "0"}))
    assert files_read[1:] == [7]  # unconditional: every file


# ------------------------------------------------------------------------------------------ property

CLAUSES: dict[str, Callable[[Any], Any]] = {
    "upsert": _upsert,
    "delete-insert": lambda b: b.whenMatchedDelete("s.v > 5").whenNotMatchedInsert(values={"id": "s.id", "v": "s.v"}),
    "update-by-source-delete": lambda b: b.whenMatchedUpdate(set={"v": "t.v + s.v"})
                                          .whenNotMatchedBySourceDelete("t.id < 40"),
    "by-source-update": lambda b: b.whenNotMatchedBySourceUpdate("t.p = 1", set={"v": "-1"}).whenMatchedDelete(),
    "insert-only": lambda b: b.whenNotMatchedInsertAll(),
}
ON = ["t.id = s.id", "t.p = s.p AND t.id = s.id", "s.id = t.id AND t.v >= 0"]

layouts = st.lists(
    st.lists(st.integers(0, 120), min_size=1, max_size=12, unique=True).map(sorted), min_size=1, max_size=5
)
sources = st.lists(st.one_of(st.none(), st.integers(-5, 140)), max_size=10)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(layout=layouts, partitioned=st.booleans(), keys=sources, clauses=st.sampled_from(sorted(CLAUSES)),
       on=st.sampled_from(ON))
def test_pruned_merge_equals_the_unpruned_one(
    spark: Any, monkeypatch: pytest.MonkeyPatch, layout: list[list[int]], partitioned: bool,
    keys: list[int | None], clauses: str, on: str,
) -> None:
    work = tempfile.mkdtemp(prefix="merge-pruning-")
    try:
        outcomes = []
        for prune in (True, False):
            path = _table(f"{work}/{prune}", layout, partitioned=partitioned)
            with monkeypatch.context() as m:
                if not prune:
                    m.setattr(merge_keys, "key_pairs", lambda *a, **k: [])
                try:
                    metrics = _run(spark, path, _source(spark, keys), CLAUSES[clauses], on)
                except DeltaError as exc:
                    outcomes.append((type(exc).__name__, None, _final(path)))
                    continue
            counts = {k: v for k, v in metrics.items() if k.startswith(("numTargetRows", "numSource"))}
            outcomes.append(("ok", counts, _final(path)))
        assert outcomes[0] == outcomes[1]
    finally:
        shutil.rmtree(work, ignore_errors=True)
