"""A MERGE whose pruning leaves one candidate file writes in one job (``deltalog.spark.dml.merge_one_pass``): the
same rows
and the same counts as the two-job MERGE, the multiple-match error with nothing committed or left behind, and
a file without any acted-on row left in place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sparkutil import arrow_rows, data, data_files, frame, version

import deltalog
from deltalog.errors import DeltaError
from deltalog.spark.dml import merge, merge_keys, merge_one_pass, merge_run

pytestmark = pytest.mark.spark

_TIMES = {"executionTimeMs", "scanTimeMs", "rewriteTimeMs", "numTargetBytesAdded"}


class Writer:
    """Which writer the one job is given (``merge_one_pass._native``): Spark's own parquet writer with an
    observation counting (what a local unpartitioned table gets) -- the files found as bits of a long, or
    (``ids``) as sets of their ids, as for more than 63 files -- or the ``mapInArrow`` tasks' tallies (what an
    object store, a partitioned table or Spark Connect gets); ``seen`` holds each answer."""

    def __init__(self, native: bool) -> None:
        self.native = native
        self.seen: list[bool] = []

    def used(self) -> bool:
        return self.seen == [self.native]


@pytest.fixture(params=["bits", "ids", "tasks"], ids=["spark-writer", "spark-writer-id-sets", "arrow-tasks"])
def writer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Writer:
    way = Writer(request.param != "tasks")
    real = merge_one_pass._native
    if request.param == "ids":
        monkeypatch.setattr(merge_one_pass, "_file_bits", lambda file_key, by_id: None)

    def spy(run: Any, rows: Any, written: int) -> bool:
        out = real(run, rows, written) if way.native else False
        way.seen.append(out)
        return out

    monkeypatch.setattr(merge_one_pass, "_native", spy)
    return way


def _one_file(tmp_path: Path, name: str) -> str:
    path = str(tmp_path / name)
    deltalog.write_table(path, data(0, 120), mode="append")
    assert len(deltalog.Table(path).snapshot().add_files()) == 1
    return path


def _source(spark: Any, ids: list[int]) -> Any:
    rows = [{"id": i, "k": 9, "v": -float(i), "s": f"n{i}"} for i in ids]
    return frame(spark, pa.Table.from_pylist(rows)).alias("s")


def _upsert(b: Any) -> Any:
    return b.whenMatchedUpdateAll().whenNotMatchedInsertAll()


def _every_kind(b: Any) -> Any:
    return (b.whenMatchedDelete("s.id % 4 = 0").whenMatchedUpdate(set={"v": "s.v", "s": "'upd'"})
            .whenNotMatchedInsert("s.id <> 301", {"id": "s.id", "s": "upper(s.s)"})
            .whenNotMatchedBySourceUpdate("t.id < 10", {"s": "'gone'"}))


def _updates_only(b: Any) -> Any:
    return b.whenMatchedUpdate(set={"v": "s.v"})


def _by_source_delete(b: Any) -> Any:
    return b.whenMatchedUpdateAll().whenNotMatchedBySourceDelete("t.id >= 100")


def _delete_duplicates(b: Any) -> Any:  # an unconditional DELETE may match a target row several times
    return b.whenMatchedDelete()


CASES: dict[str, tuple[Callable[[Any], Any], list[int]]] = {
    "every-kind": (_every_kind, [3, 4, 8, 50, 119, 300, 301, 302]),
    "updates-only": (_updates_only, [0, 7, 64, 500]),
    "by-source-delete": (_by_source_delete, [1, 2, 3]),
    "delete-duplicates": (_delete_duplicates, [5, 5, 6, 6, 6, 700]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_job_merge_matches_the_two_job_merge(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, writer: Writer
) -> None:
    clauses, ids = CASES[case]
    one, two = _one_file(tmp_path, "one"), _one_file(tmp_path, "two")
    assert _one_and_two_job(spark, monkeypatch, one, two, clauses, ids) == [True]
    assert writer.used()
    assert _state(one) == _state(two)
    assert deltalog.Table(one).history(limit=1)[0]["operationMetrics"]["numTargetFilesRemoved"] == "1"


def _one_and_two_job(spark: Any, monkeypatch: pytest.MonkeyPatch, one: str, two: str,
                     clauses: Callable[[Any], Any], ids: list[int]) -> list[bool]:
    """MERGE ``ids`` into ``one`` as ``execute()`` does and into ``two`` the two-job way; what each
    ``one_pass`` call returned (written or not)."""
    calls: list[bool] = []
    real = merge_one_pass.one_pass

    def spy(*args: Any) -> Any:
        out = real(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(merge_one_pass, "one_pass", spy)
    clauses(merge(spark, one, _source(spark, ids), "t.id = s.id", target_alias="t")).execute()
    monkeypatch.setattr(merge_one_pass, "one_pass_applies", lambda run, candidates: False)
    clauses(merge(spark, two, _source(spark, ids), "t.id = s.id", target_alias="t")).execute()
    return calls


def _state(path: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The table's rows (by id) and its last commit's metrics, times left out."""
    metrics = deltalog.Table(path).history(limit=1)[0]["operationMetrics"]
    return (sorted(arrow_rows(deltalog.Table(path).snapshot().to_arrow()), key=lambda r: r["id"]),
            {k: v for k, v in metrics.items() if k not in _TIMES})


def test_one_job_merge_refuses_multiple_matches_and_leaves_nothing(spark: Any, tmp_path: Path, writer: Writer) -> None:
    path = _one_file(tmp_path, "t")
    v0, files = version(path), data_files(path)
    b = _upsert(merge(spark, path, _source(spark, [4, 5, 5, 900]), "t.id = s.id", target_alias="t"))
    with pytest.raises(DeltaError, match=r"DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE.*t\.id = s\.id"):
        b.execute()
    assert version(path) == v0
    assert data_files(path) == files  # the rows the job wrote are deleted again
    assert arrow_rows(deltalog.Table(path).snapshot().to_arrow()) == arrow_rows(data(0, 120))
    assert writer.used()


def test_one_job_merge_without_a_match_leaves_the_file_in_place(spark: Any, tmp_path: Path) -> None:
    path = _one_file(tmp_path, "t")
    before = {r["path"] for r in deltalog.Table(path).snapshot().add_files().to_pylist()}
    _upsert(merge(spark, path, _source(spark, [1000, 1001]), "t.id = s.id", target_alias="t")).execute()
    after = deltalog.Table(path).snapshot()
    assert before < {r["path"] for r in after.add_files().to_pylist()}
    metrics = deltalog.Table(path).history(limit=1)[0]["operationMetrics"]
    assert (metrics["numTargetFilesRemoved"], metrics["numTargetRowsInserted"], metrics["numTargetRowsCopied"]) == (
        "0", "2", "0")
    assert len(data_files(path)) == 2  # the job's copy of the file is deleted again


def _four_files(tmp_path: Path, name: str) -> str:
    path = str(tmp_path / name)
    for start, n in ((0, 30), (30, 31), (61, 32), (93, 33)):  # four files of different sizes
        deltalog.write_table(path, data(start, n), mode="append")
    assert len({r["size"] for r in deltalog.Table(path).snapshot().add_files().to_pylist()}) == 4
    return path


MANY: dict[str, tuple[Callable[[Any], Any], list[int]]] = {
    "upsert": (_upsert, [1, 40, 70, 100, 500, 501]),
    "every-kind": (_every_kind, [4, 31, 62, 95, 96, 300, 301]),
    "delete-duplicates": (_delete_duplicates, [5, 5, 35, 35, 35, 64, 100, 700]),
    "a-file-untouched": (_upsert, [1, 2, 40, 70, 500, 501]),  # no row of the last file: the two-job way
}


@pytest.mark.parametrize("case", list(MANY))
def test_one_job_merge_of_several_files_matches_the_two_job_merge(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, writer: Writer
) -> None:
    clauses, ids = MANY[case]
    one, two = _four_files(tmp_path, "one"), _four_files(tmp_path, "two")
    calls: list[bool] = []
    real = merge_one_pass.one_pass

    def spy(*args: Any) -> Any:
        out = real(*args)
        calls.append(out is not None)
        return out

    first_jobs: list[bool] = []
    real_first = merge_run.MergeRun._first_job

    def first_job(self: Any, *args: Any) -> Any:
        first_jobs.append(True)
        return real_first(self, *args)

    monkeypatch.setattr(merge_one_pass, "one_pass", spy)
    monkeypatch.setattr(merge_run.MergeRun, "_first_job", first_job)
    clauses(merge(spark, one, _source(spark, ids), "t.id = s.id", target_alias="t")).execute()
    assert calls == [case != "a-file-untouched"]
    assert first_jobs == []  # a file untouched: the two-job way takes the one job's counts, not a job of its own
    assert writer.used()
    monkeypatch.setattr(merge_one_pass, "one_pass_applies", lambda run, candidates: False)
    clauses(merge(spark, two, _source(spark, ids), "t.id = s.id", target_alias="t")).execute()
    assert len(calls) == 1 and first_jobs == [True]

    def state(path: str) -> tuple[list[dict[str, Any]], dict[str, str], list[int]]:
        metrics = deltalog.Table(path).history(limit=1)[0]["operationMetrics"]
        snap = deltalog.Table(path).snapshot()
        now = set(snap.add_files().column("path").to_pylist())
        kept = sorted(r["size"] for r in deltalog.Table(path).snapshot(3).add_files().to_pylist() if r["path"] in now)
        return arrow_rows(snap.to_arrow()), {k: v for k, v in metrics.items() if k not in _TIMES}, kept

    assert state(one) == state(two)
    removed = deltalog.Table(one).history(limit=1)[0]["operationMetrics"]["numTargetFilesRemoved"]
    assert removed == ("3" if case == "a-file-untouched" else "4")


def test_one_job_merge_of_several_files_refuses_multiple_matches(spark: Any, tmp_path: Path, writer: Writer) -> None:
    path = _four_files(tmp_path, "t")
    v0, files = version(path), data_files(path)
    b = _upsert(merge(spark, path, _source(spark, [4, 35, 35, 64, 100, 900]), "t.id = s.id", target_alias="t"))
    with pytest.raises(DeltaError, match=r"DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"):
        b.execute()
    assert version(path) == v0
    assert data_files(path) == files
    assert writer.used()


def test_an_upsert_touching_every_file_runs_the_write_job_and_one_pass_over_the_source(
    spark: Any, tmp_path: Path
) -> None:
    """Issue 55's MERGE fixed cost: the source's keys in one job (no shuffle for a small source), then the
    write (a shuffle of each side and the joined rows written): no job of its own to find the touched files."""
    import os

    path = _four_files(tmp_path, "t")
    src_path = str(tmp_path / "src")
    _source(spark, [1, 40, 70, 100, 500, 501]).write.parquet(src_path)  # a file source: a real source pass
    source = spark.read.parquet(src_path).alias("s")  # its footer is read here, not counted
    group = f"merge-jobs-{os.urandom(4).hex()}"
    sc = spark.sparkContext
    sc.setJobGroup(group, "merge jobs test")
    try:
        _upsert(merge(spark, path, source, "t.id = s.id", target_alias="t")).execute()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    jobs = len(sc.statusTracker().getJobIdsForGroup(group))
    assert jobs <= 4, jobs
    metrics = deltalog.Table(path).history(limit=1)[0]["operationMetrics"]
    assert (metrics["numTargetFilesRemoved"], metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"],
            metrics["numSourceRows"]) == ("4", "4", "2", "6")


def _shared_sizes(tmp_path: Path, name: str) -> str:
    """Four files, three of them of one size (the same layout, ids 64 apart): told apart by size and
    modification time."""
    path = str(tmp_path / name)
    for j in range(4):
        part = data(0, 35)
        deltalog.write_table(path, part.set_column(0, "id", pa.array([j * 64 + i for i in range(35)], pa.int64())),
                             mode="append")
    sizes = deltalog.Table(path).snapshot().add_files().column("size").to_pylist()
    assert len(set(sizes)) < len(sizes), sizes
    return path


@pytest.mark.parametrize("case", ["upsert", "every-kind"])
def test_one_job_merge_of_files_sharing_a_size_matches_the_two_job_merge(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Files written by one job often share a size: their rows carry a hash of size and modification time
    (no row index is read), and the MERGE still writes in one job, with the two-job MERGE's rows and counts."""
    clauses = {"upsert": _upsert, "every-kind": _every_kind}[case]
    ids = [1, 65, 130, 200, 196, 500, 301]
    one, two = _shared_sizes(tmp_path, "one"), _shared_sizes(tmp_path, "two")
    assert _one_and_two_job(spark, monkeypatch, one, two, clauses, ids) == [True]
    assert _state(one) == _state(two)
    assert deltalog.Table(one).history(limit=1)[0]["operationMetrics"]["numTargetFilesRemoved"] == "4"


def _planned(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[tuple[str, str | None]]]:
    """Spies: each one-job plan made (``ahead:N`` or ``after:N``, planned ahead of the source's keys or after
    them, for N candidate files), and the thread and job group of each pass over the source's keys."""
    import threading

    plans: list[str] = []
    passes: list[tuple[str, str | None]] = []
    plan, keys, ahead = merge_one_pass._plan, merge_keys.source_keys, merge_one_pass.OnePassRun.plan_ahead
    planning_ahead = [False]

    def spy_plan(run: Any, S: Any, candidates: Any) -> Any:
        plans.append(f"{'ahead' if planning_ahead[0] else 'after'}:{candidates.num_rows}")
        return plan(run, S, candidates)

    def spy_ahead(self: Any, S: Any, files: Any) -> None:
        planning_ahead[0] = True
        try:
            ahead(self, S, files)
        finally:
            planning_ahead[0] = False

    def spy_keys(source: Any, *args: Any, **kwargs: Any) -> Any:
        group = source.sparkSession.sparkContext.getLocalProperty("spark.jobGroup.id")
        passes.append((threading.current_thread().name, group))
        return keys(source, *args, **kwargs)

    monkeypatch.setattr(merge_one_pass, "_plan", spy_plan)
    monkeypatch.setattr(merge_keys, "source_keys", spy_keys)
    monkeypatch.setattr(merge_one_pass.OnePassRun, "plan_ahead", spy_ahead)
    return plans, passes


def test_the_key_job_runs_beside_the_planning_in_the_callers_job_group(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source's key job runs on another thread, in the caller's job group (cancelling the group cancels
    it), while the driver plans the one job for the files the ON condition leaves; the keys leave them all,
    so that plan is the one run."""
    import os
    import threading

    plans, passes = _planned(monkeypatch)
    path = _four_files(tmp_path, "t")
    group = f"merge-ahead-{os.urandom(4).hex()}"
    sc = spark.sparkContext
    sc.setJobGroup(group, "merge plan-ahead test")
    try:
        _upsert(merge(spark, path, _source(spark, [1, 40, 70, 100, 500, 501]), "t.id = s.id",
                      target_alias="t")).execute()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert plans == ["ahead:4"]
    assert len(passes) == 1 and passes[0][1] == group
    assert passes[0][0] != threading.current_thread().name
    metrics = deltalog.Table(path).history(limit=1)[0]["operationMetrics"]
    assert (metrics["numTargetFilesRemoved"], metrics["numTargetRowsUpdated"],
            metrics["numTargetRowsInserted"]) == ("4", "4", "2")


def test_a_plan_made_ahead_is_dropped_when_the_keys_prune_files(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys falling in one of the four files: the plan made ahead for all four is not run; the MERGE plans
    for the one file its keys leave and rewrites only that one. The next such MERGE plans nothing ahead, until
    one whose keys prune nothing."""
    plans, _ = _planned(monkeypatch)
    path = _four_files(tmp_path, "t")
    before = {r["path"] for r in deltalog.Table(path).snapshot().add_files().to_pylist()}
    _upsert(merge(spark, path, _source(spark, [95, 100, 110]), "t.id = s.id", target_alias="t")).execute()
    assert plans == ["ahead:4", "after:1"]
    after = deltalog.Table(path).snapshot()
    assert len(before - {r["path"] for r in after.add_files().to_pylist()}) == 1
    rows = {r["id"]: r["v"] for r in after.to_arrow().to_pylist()}
    assert len(rows) == 126 and rows[95] == -95.0 and rows[100] == -100.0 and rows[110] == -110.0 and rows[3] == 1.5
    # the same MERGE again (a streaming upsert of recent keys): its keys pruned last time, nothing planned ahead
    _upsert(merge(spark, path, _source(spark, [96, 111]), "t.id = s.id", target_alias="t")).execute()
    assert plans == ["ahead:4", "after:1", "after:1"]
    # keys in every file: planned for all four once the keys are seen, ahead again the time after
    _upsert(merge(spark, path, _source(spark, [1, 40, 70, 100]), "t.id = s.id", target_alias="t")).execute()
    assert plans[3:] == ["after:4"]
    assert deltalog.Table(path).history(limit=1)[0]["operationMetrics"]["numTargetFilesRemoved"] == "4"
    deltalog.write_table(path, data(200, 20), mode="append")
    assert len(deltalog.Table(path).snapshot().add_files()) == 2
    _upsert(merge(spark, path, _source(spark, [2, 201]), "t.id = s.id", target_alias="t")).execute()
    assert plans[4:] == ["ahead:2"]


def test_a_source_failing_in_the_key_job_fails_the_merge_and_commits_nothing(spark: Any, tmp_path: Path) -> None:
    """A source row that fails while the key job reads it fails the MERGE with that error; no commit, no file
    written, and the key job's thread is gone."""
    import threading

    from pyspark.sql import functions as F

    path = _four_files(tmp_path, "t")
    files = sorted(data_files(path))
    threads = threading.active_count()
    bad = spark.range(0, 20).select(
        F.when(F.col("id") == 13, F.raise_error(F.lit("source row 13 is bad"))).otherwise(F.col("id")).alias("id"),
        F.lit(9).cast("long").alias("k"), F.lit(1.0).alias("v"), F.lit("x").alias("s"))
    with pytest.raises(Exception, match="source row 13 is bad"):
        _upsert(merge(spark, path, bad.alias("s"), "t.id = s.id", target_alias="t")).execute()
    assert deltalog.Table(path).snapshot().version == 3
    assert sorted(data_files(path)) == files
    assert threading.active_count() == threads


def test_a_merge_taking_the_two_job_way_plans_nothing_ahead_the_next_time(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ON condition without a plain key (no key pass prunes) and a source of fewer rows than files: the
    MERGE takes the two-job way, so the write planned ahead went unused, and the next such MERGE on the table
    plans none."""
    plans, passes = _planned(monkeypatch)
    path = _four_files(tmp_path, "t")
    for ids in ([1, 100], [2, 101]):
        _upsert(merge(spark, path, _source(spark, ids), "t.id = s.id + 0", target_alias="t")).execute()
    assert plans == ["ahead:4"] and passes == []
    rows = {r["id"]: r["v"] for r in deltalog.Table(path).snapshot().to_arrow().to_pylist()}
    assert len(rows) == 126 and [rows[i] for i in (1, 2, 100, 101)] == [-1.0, -2.0, -100.0, -101.0]



def _jobs(spark: Any, run: Callable[[], Any]) -> int:
    """How many Spark jobs ``run()`` runs."""
    import os

    group = f"merge-jobs-{os.urandom(4).hex()}"
    sc = spark.sparkContext
    sc.setJobGroup(group, "merge jobs test")
    try:
        run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return len(sc.statusTracker().getJobIdsForGroup(group))


def _steps(spark: Any, path: str, batches: list[list[int]]) -> list[dict[str, str]]:
    """Upsert each batch of ids into ``path``; each MERGE's metrics, times left out."""
    out = []
    for ids in batches:
        _upsert(merge(spark, path, _source(spark, ids), "t.id = s.id", target_alias="t")).execute()
        metrics = deltalog.Table(path).history(limit=1)[0]["operationMetrics"]
        out.append({k: v for k, v in metrics.items() if k not in _TIMES})
    return out


#: upserts whose keys fall in every file (the rewritten files hold rows of every key range: a hash shuffle)
_SPREAD = [[1, 40, 70, 100, 500, 501], [*range(0, 126, 3), 502], [*range(1, 126, 4), 503, 504, 505]]


def test_a_repeated_upsert_whose_keys_spread_skips_the_key_job(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streaming upsert whose keys fall in every file: once a MERGE on the table wrote every file in one job,
    the next runs no pass over the source's keys (one job less) and counts the source rows in its write job;
    rows, files and metrics are those of MERGEs that run the pass every time."""
    plans, passes = _planned(monkeypatch)
    skipping, always = _four_files(tmp_path, "skipping"), _four_files(tmp_path, "always")
    got = _steps(spark, skipping, _SPREAD[:1])
    assert len(passes) == 1 and plans == ["ahead:4"]
    jobs = _jobs(spark, lambda: got.extend(_steps(spark, skipping, _SPREAD[1:2])))
    assert len(passes) == 1 and len(plans) == 2  # no pass: planned for the files the ON condition leaves
    assert jobs <= 3, jobs
    got += _steps(spark, skipping, _SPREAD[2:])
    assert len(passes) == 1
    monkeypatch.setattr(merge_one_pass.OnePassRun, "keys_optional", lambda self: False)
    want = _steps(spark, always, _SPREAD)
    assert len(passes) == 4
    assert got == want
    assert [m["numSourceRows"] for m in want] == ["6", "43", "35"]
    assert arrow_rows(deltalog.Table(skipping).snapshot().to_arrow()) == \
        arrow_rows(deltalog.Table(always).snapshot().to_arrow())


def test_an_upsert_skipping_the_key_job_whose_keys_would_prune_leaves_the_other_files_in_place(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an upsert touching every file, one whose keys fall in a single file runs no pass either: its write
    job finds the other files untouched, the MERGE takes the two-job way (they stay in place, as delta-spark
    leaves them) and the MERGE after it runs the pass again and reads only the file its keys leave."""
    plans, passes = _planned(monkeypatch)
    path = _four_files(tmp_path, "t")
    _steps(spark, path, _SPREAD[:1])
    deltalog.write_table(path, data(200, 20), mode="append")  # ids 200-219 in a file of their own
    before = {r["path"] for r in deltalog.Table(path).snapshot().add_files().to_pylist()}
    assert len(before) >= 2
    [narrow] = _steps(spark, path, [[201, 210, 600]])
    assert len(passes) == 1  # no pass for the narrow batch
    assert (narrow["numTargetFilesRemoved"], narrow["numTargetRowsUpdated"], narrow["numTargetRowsInserted"],
            narrow["numSourceRows"]) == ("1", "2", "1", "3")
    after = {r["path"] for r in deltalog.Table(path).snapshot().add_files().to_pylist()}
    assert len(before - after) == 1
    rows = {r["id"]: r["v"] for r in deltalog.Table(path).snapshot().to_arrow().to_pylist()}
    assert len(rows) == 149 and rows[201] == -201.0 and rows[210] == -210.0 and rows[600] == -600.0
    assert rows[202] == data(200, 20).to_pylist()[2]["v"]
    _steps(spark, path, [[600, 601]])  # the range 600-601 leaves the file holding 200-219 and 600 only
    assert len(passes) == 2 and plans[-1] == "after:1"


def test_an_empty_source_skipping_the_key_job_counts_no_source_row(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark drops the observation counting a source it proves empty: the MERGE counts the rows itself (0),
    changes nothing and commits nothing."""
    _, passes = _planned(monkeypatch)
    path = _four_files(tmp_path, "t")
    _steps(spark, path, _SPREAD[:1])
    v0, files = version(path), sorted(data_files(path))
    schema = pa.schema([("id", pa.int64()), ("k", pa.int64()), ("v", pa.float64()), ("s", pa.string())])
    b = _upsert(merge(spark, path, frame(spark, schema.empty_table()).alias("s"), "t.id = s.id", target_alias="t"))
    b.execute()
    assert len(passes) == 1
    assert b.result is not None and b.result.metrics["numSourceRows"] == "0"
    assert version(path) == v0 and sorted(data_files(path)) == files
