"""Spark DML (DELETE, UPDATE, MERGE): every result is compared with the same operation computed
independently (DataFrame / Python operations on a copy of the rows), read back through both the kernel
and the Spark read path, with and without deletion vectors, partitioned and not."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sparkutil import arrow_rows, data, frame, rows, to_arrow, version

import deltalog
from deltalog.errors import DeltaError, InvalidArgumentError, SchemaError
from deltalog.spark.dml import delete, merge, update
from deltalog.spark.jobs.staged import Staged
from deltalog.spark.reads.target import pruning_conditions
from deltalog.txn.conflicts import ConcurrentAppendException
from deltalog.txn.transaction import Transaction
from deltalog.txn.writer_features import AppendOnlyError

pytestmark = pytest.mark.spark

LAYOUTS = [(False, False), (True, False), (False, True), (True, True)]
LAYOUT_IDS = ["plain", "partitioned", "dv", "partitioned-dv"]




def make(tmp_path: Path, *, partitioned: bool, dvs: bool, name: str = "t", props: dict[str, str] | None = None) -> str:
    path = str(tmp_path / name)
    properties = dict(props or {})
    if dvs:
        properties["delta.enableDeletionVectors"] = "true"
    deltalog.write_table(
        path, data(0, 40), mode="append", partition_by=["k"] if partitioned else None, properties=properties or None
    )
    deltalog.write_table(path, data(40, 40), mode="append")
    deltalog.write_table(path, data(80, 40), mode="append")
    return path


def table_rows(path: str) -> list[dict[str, Any]]:
    return arrow_rows(deltalog.Table(path).snapshot().to_arrow())


def check(spark: Any, path: str, expected: list[dict[str, Any]]) -> None:
    """The table read by the kernel and by the Spark read path equals ``expected``."""
    want = sorted(expected, key=lambda r: r["id"])
    assert table_rows(path) == want
    assert rows(spark.read.format("delta").load(path)) == want


def frame_of(spark: Any, table: list[dict[str, Any]] | pa.Table) -> Any:
    arrow = table if isinstance(table, pa.Table) else pa.Table.from_pylist(table)
    return frame(spark, arrow)


def last(path: str) -> dict[str, Any]:
    return deltalog.Table(path).history(limit=1)[0]


def live(path: str) -> list[dict[str, Any]]:
    return list(deltalog.Table(path).snapshot().add_files().to_pylist())


def dv_files(path: str) -> list[dict[str, Any]]:
    return [r for r in live(path) if r["deletionVector"]]


# ------------------------------------------------------------------------------------------- DELETE


@pytest.mark.parametrize(("partitioned", "dvs"), LAYOUTS, ids=LAYOUT_IDS)
def test_delete_matches_the_same_filter_on_a_dataframe(
    spark: Any, tmp_path: Path, partitioned: bool, dvs: bool
) -> None:
    from pyspark.sql import functions as F

    path = make(tmp_path, partitioned=partitioned, dvs=dvs)
    before = deltalog.Table(path).snapshot().to_arrow()
    data_files_before = {r["path"] for r in live(path)}
    for condition in ("id < 10 OR (v > 50 AND s = 's1')", F.col("id").between(60, 64), "k = 2 AND id >= 100"):
        expected = frame_of(spark, table_rows(path))
        cond = F.expr(condition) if isinstance(condition, str) else condition
        want = to_arrow(expected.filter(~F.coalesce(cond, F.lit(False)))).to_pylist()
        deleted = len(table_rows(path)) - len(want)
        res = delete(spark, path, condition)
        check(spark, path, want)
        assert res.metric("numDeletedRows") == deleted > 0
        entry = last(path)
        assert entry["operation"] == "DELETE" and entry["operationMetrics"]["numDeletedRows"] == str(deleted)
        if dvs:
            assert res.metric("numCopiedRows") == 0 and res.metric("numAddedFiles") == 0
        else:
            assert res.metric("numCopiedRows") > 0 and res.metric("numDeletionVectorsAdded") == 0
    if dvs:  # data files untouched, rows marked in deletion vectors
        assert {r["path"] for r in dv_files(path)} <= data_files_before
        assert all(json.loads(r["stats"])["tightBounds"] is False for r in dv_files(path))
    # time travel still sees every row
    assert deltalog.Table(path).snapshot(version=2).to_arrow().num_rows == before.num_rows == 120


def store_dvs_in(storage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """DVs of these small files are inline (the default); ``"file"`` makes the next commands write files."""
    if storage == "file":
        monkeypatch.setattr("deltalog.spark.jobs.staged.INLINE_DV_MAX_BYTES", 0)


def dv_bins(path: str) -> list[str]:
    return sorted(n for n in os.listdir(path) if n.startswith("deletion_vector_") and n.endswith(".bin"))


@pytest.mark.parametrize("storage", ["inline", "file"])
def test_second_delete_unions_with_the_existing_deletion_vector(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    store_dvs_in(storage, monkeypatch)
    kind = "i" if storage == "inline" else "u"
    path = make(tmp_path, partitioned=False, dvs=True)
    first = delete(spark, path, "id < 5")
    assert first.metric("numDeletionVectorsAdded") == 1 and first.metric("numDeletedRows") == 5
    [dv] = dv_files(path)
    assert dv["deletionVector"]["storageType"] == kind and len(dv_bins(path)) == (kind == "u")
    check(spark, path, [r for r in data(0, 120).to_pylist() if r["id"] >= 5])
    second = delete(spark, path, "id < 8 OR id = 30")  # rows 0-4 are already gone
    assert second.metric("numDeletedRows") == 4
    assert second.metric("numDeletionVectorsUpdated") == 1 and second.metric("numDeletionVectorsAdded") == 0
    [dv] = dv_files(path)
    assert dv["deletionVector"]["cardinality"] == 9
    assert dv["deletionVector"]["storageType"] == kind and len(dv_bins(path)) == 2 * (kind == "u")
    assert delete(spark, path, "id < 3").version is None  # only rows deleted already: nothing to commit
    check(spark, path, [r for r in data(0, 120).to_pylist() if not (r["id"] < 8 or r["id"] == 30)])
    # deleting every remaining row of a file removes it (its deletion vector goes with it)
    third = delete(spark, path, "id < 40")
    assert third.metric("numRemovedFiles") == 1 and third.metric("numDeletionVectorsRemoved") == 1
    assert third.metric("numDeletedRows") == 31
    check(spark, path, data(40, 80).to_pylist())


@pytest.mark.parametrize("dvs", [False, True], ids=["cow", "dv"])
def test_partition_only_and_unconditional_deletes_drop_whole_files(spark: Any, tmp_path: Path, dvs: bool) -> None:
    path = make(tmp_path, partitioned=True, dvs=dvs)
    others = {r["path"] for r in live(path) if dict(r["partitionValues"])["k"] != "1"}
    res = delete(spark, path, "k = 1")
    assert res.metric("numRemovedFiles") == 3 and res.metric("numDeletedRows") == 40
    assert res.metric("numAddedFiles") == 0
    assert {r["path"] for r in live(path)} == others
    check(spark, path, [r for r in data(0, 120).to_pylist() if r["k"] != 1])
    nothing = delete(spark, path, "id > 1000")
    assert nothing.version is None and version(path) == 3
    everything = delete(spark, path)
    assert everything.metric("numDeletedRows") == 80 and deltalog.Table(path).snapshot().num_files() == 0
    check(spark, path, [])


def test_read_predicate_is_what_was_scanned(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under Serializable isolation a concurrent append to another partition does not conflict with a
    DELETE; one to the rows it read does (WriteSerializable lets blind appends through)."""
    original = Transaction.commit

    def racing(part: int) -> Callable[..., Any]:
        def commit(self: Transaction, **kwargs: Any) -> Any:
            monkeypatch.setattr(Transaction, "commit", original)
            rows_ = data(1000, 3).to_pylist()
            for r in rows_:
                r["k"] = part
            deltalog.write_table(self.table, pa.Table.from_pylist(rows_, schema=data(0, 1).schema), mode="append")
            return original(self, **kwargs)

        return commit

    path = make(tmp_path, partitioned=True, dvs=False, props={"delta.isolationLevel": "Serializable"})
    monkeypatch.setattr(Transaction, "commit", racing(2))
    res = delete(spark, path, "k = 1 AND id < 50")  # scans only k=1 files
    assert res.version == 4  # the append took version 3
    assert len(table_rows(path)) == 120 + 3 - 17
    monkeypatch.setattr(Transaction, "commit", racing(1))
    with pytest.raises(ConcurrentAppendException):
        delete(spark, path, "k = 1 AND id > 100")
    assert version(path) == 5  # only the concurrent append


def test_pruning_conditions_keep_only_what_spark_and_the_kernel_agree_on(tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=True, dvs=False)
    snap = deltalog.Table(path).snapshot()
    conds, complete = pruning_conditions("K = 1 AND id BETWEEN 3 AND 9 AND s IN ('s1', 's2')", snap)
    assert [(c.column, c.op, c.value) for c in conds] == [
        ("k", "=", 1), ("id", ">=", 3), ("id", "<=", 9), ("s", "in", ("s1", "s2"))
    ]
    assert complete
    conds, complete = pruning_conditions("k = 1 AND (id = 3 OR id = 4) AND v > 2.5 AND id > 2.5", snap)
    # the kernel compares 2.5 with an integer column as a number, so "id > 2.5" may prune too
    assert [(c.column, c.op) for c in conds] == [("k", "="), ("id", ">")] and not complete
    conds, complete = pruning_conditions("t.k = 1 AND id = s.id", snap, qualifiers=["t"], ambiguous=["id"])
    assert [(c.column, c.op) for c in conds] == [("k", "=")] and not complete


# ------------------------------------------------------------------------------------------- UPDATE


@pytest.mark.parametrize(("partitioned", "dvs"), LAYOUTS, ids=LAYOUT_IDS)
def test_update_matches_the_same_projection_on_a_dataframe(
    spark: Any, tmp_path: Path, partitioned: bool, dvs: bool
) -> None:
    from pyspark.sql import functions as F

    path = make(tmp_path, partitioned=partitioned, dvs=dvs)
    steps: list[tuple[Any, dict[str, Any]]] = [
        ("id % 10 = 3", {"v": "coalesce(v, 0) * 2 + 1", "s": F.concat(F.col("s"), F.lit("!"))}),
        (F.col("id") > 100, {"k": "k + 10"}),  # moves rows to another partition
        (None, {"id": "id + 1000"}),
    ]
    for condition, assignments in steps:
        before = frame_of(spark, table_rows(path))
        cond = F.lit(True) if condition is None else (F.expr(condition) if isinstance(condition, str) else condition)
        cond = F.coalesce(cond, F.lit(False))
        new = {k: F.expr(v) if isinstance(v, str) else v for k, v in assignments.items()}
        projected = [
            F.when(cond, new[c]).otherwise(F.col(c)).cast(before.schema[c].dataType).alias(c) if c in new else F.col(c)
            for c in before.columns
        ]
        want = to_arrow(before.select(*projected)).to_pylist()
        n = before.filter(cond).count()
        paths_before = {r["path"] for r in live(path)}
        res = update(spark, path, condition, assignments)
        check(spark, path, want)
        assert res.metric("numUpdatedRows") == n and last(path)["operation"] == "UPDATE"
        added = [r for r in live(path) if r["path"] not in paths_before]
        written = sum(json.loads(r["stats"])["numRecords"] for r in added)
        assert res.metric("numCopiedRows") + n == written and res.metric("numAddedFiles") == len(added)
        if dvs and condition is not None:
            assert res.metric("numCopiedRows") == 0 and dv_files(path)


@pytest.mark.parametrize("dvs", [False, True], ids=["cow", "dv"])
def test_update_errors_name_the_column_and_leave_the_table_unchanged(spark: Any, tmp_path: Path, dvs: bool) -> None:
    path = make(tmp_path, partitioned=False, dvs=dvs)
    before, v0 = table_rows(path), version(path)
    with pytest.raises(InvalidArgumentError, match=r"column 'nope' does not exist.*\['id', 'k', 'v', 's'\]"):
        update(spark, path, "id = 1", {"nope": "1"})
    with pytest.raises(InvalidArgumentError, match="at least one column"):
        update(spark, path, "id = 1", {})
    with pytest.raises(InvalidArgumentError, match=r"Values of dict in .set. must contain only Spark SQL Columns"):
        update(spark, path, "id = 1", {"v": 3.0})
    with pytest.raises(SchemaError, match=r"cannot assign a value of type array<int> to column 'k' of type bigint"):
        update(spark, path, "id = 1", {"k": "array(1, 2)"})
    with pytest.raises(SchemaError, match=r"DELTA_CAST_FAILURE.*value x cannot be stored in column 'k'"):
        update(spark, path, "id = 1", {"k": "'x'"})  # strings are cast (ANSI), as delta-spark does
    with pytest.raises(SchemaError, match=r"DELTA_CAST_FAILURE.*value 1\.0E20 cannot be stored in column 'id'"):
        update(spark, path, "id > 5", {"id": "CASE WHEN id = 70 THEN 1e20 ELSE id END"})  # fails mid-job
    with pytest.raises(Exception, match="UNRESOLVED_COLUMN") as unresolved:
        update(spark, path, "id > 1000 AND nope = 1", {"v": "1"})  # no file to read, still analysed
    assert "__deltalog" not in str(unresolved.value).splitlines()[0]  # the suggestions: the table's columns only
    with pytest.raises(Exception, match="UNRESOLVED_COLUMN") as unresolved:
        delete(spark, path, "nope = 1")
    assert "__deltalog" not in str(unresolved.value).splitlines()[0]
    assert version(path) == v0 and table_rows(path) == before
    # column names are case-insensitive, as in Spark
    update(spark, path, "ID = 1", {"V": "42"})
    assert next(r for r in table_rows(path) if r["id"] == 1)["v"] == 42.0


def test_update_with_deletion_vectors_writes_only_the_updated_rows(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=False, dvs=True)
    files_before = deltalog.Table(path).snapshot().num_files()
    res = update(spark, path, "id IN (1, 2, 41)", {"s": "'x'"})
    assert res.metric("numUpdatedRows") == 3 and res.metric("numAddedFiles") >= 1
    assert res.metric("numDeletionVectorsAdded") == 2 and res.metric("numRemovedFiles") == 0
    assert deltalog.Table(path).snapshot().num_files() == files_before + res.metric("numAddedFiles")
    want = [dict(r, s="x") if r["id"] in (1, 2, 41) else r for r in data(0, 120).to_pylist()]
    check(spark, path, want)


# ------------------------------------------------------------------------------------------- guards


@pytest.mark.parametrize("storage", ["cow", "inline", "file"])
def test_a_failed_commit_deletes_the_files_the_command_wrote(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    store_dvs_in(storage, monkeypatch)
    path = make(tmp_path, partitioned=False, dvs=storage != "cow")
    files_before, v0 = sorted(os.listdir(path)), version(path)
    staged_dv_files: list[str] = []
    cleanup = Staged.cleanup

    def failing(self: Transaction, **kwargs: Any) -> Any:
        raise DeltaError("simulated commit failure")

    def recording_cleanup(self: Staged) -> None:
        staged_dv_files.extend(self.dv_files)
        cleanup(self)

    monkeypatch.setattr(Transaction, "commit", failing)
    monkeypatch.setattr(Staged, "cleanup", recording_cleanup)
    with pytest.raises(DeltaError, match="simulated"):
        update(spark, path, "id % 2 = 0", {"v": "-1"})  # COW: rewritten files; DVs: new rows + DVs
    with pytest.raises(DeltaError, match="simulated"):
        delete(spark, path, "id = 3")
    assert sorted(os.listdir(path)) == files_before and version(path) == v0
    assert bool(staged_dv_files) == (storage == "file")  # inline DVs leave no file to clean up


def test_append_only_tables_refuse_dml_but_take_insert_only_merges(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=False, dvs=False, props={"delta.appendOnly": "true"})
    v0 = version(path)
    src = frame_of(spark, data(200, 2)).alias("s")
    with pytest.raises(AppendOnlyError, match="DELTA_CANNOT_MODIFY_APPEND_ONLY"):
        delete(spark, path, "id = 1")
    with pytest.raises(AppendOnlyError):
        update(spark, path, "id = 1", {"v": "1"})
    with pytest.raises(AppendOnlyError):
        merge(spark, path, src, "t.id = s.id", target_alias="t").whenMatchedDelete().execute()
    assert version(path) == v0
    merge(spark, path, src, "t.id = s.id", target_alias="t").whenNotMatchedInsertAll().execute()
    assert len(table_rows(path)) == 122


# -------------------------------------------------------------------------------------------- MERGE


def merged(
    target: list[dict[str, Any]], source: list[dict[str, Any]], key: str = "id"
) -> Iterator[tuple[str, dict[str, Any] | None, dict[str, Any] | None]]:
    """Full outer join on ``key``, computed in Python: (kind, target row, source row)."""
    by_key = {s[key]: s for s in source}
    seen = set()
    for t in target:
        s = by_key.get(t[key])
        if s is None:
            yield "by_source", t, None
        else:
            seen.add(t[key])
            yield "matched", t, s
    for s in source:
        if s[key] not in seen:
            yield "not_matched", None, s


@pytest.mark.parametrize(("partitioned", "dvs"), LAYOUTS, ids=LAYOUT_IDS)
def test_merge_with_every_clause_matches_a_python_merge(
    spark: Any, tmp_path: Path, partitioned: bool, dvs: bool
) -> None:
    path = make(tmp_path, partitioned=partitioned, dvs=dvs)
    if dvs:
        delete(spark, path, "id = 11")  # the target already has a deletion vector
    target = table_rows(path)
    src_rows = [
        {"id": i, "k": i % 3, "v": float(i), "s": "new" if i % 4 else "gone"} for i in range(30, 130, 3)
    ]
    source = frame_of(spark, src_rows).alias("s")
    res = (
        merge(spark, path, source, "t.id = s.id", target_alias="t")
        .whenMatchedDelete("s.s = 'gone'")
        .whenMatchedUpdate("t.id < 60", {"v": "s.v + 0.25", "s": "'upd'"})
        .whenMatchedUpdateAll()
        .whenNotMatchedInsert("s.id > 125", {"id": "s.id", "k": "s.k", "s": "'ins'"})
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceDelete("t.id < 10")
        .whenNotMatchedBySourceUpdate(set={"s": "concat(t.s, '?')"})
    )
    out = res.execute().first()
    want: list[dict[str, Any]] = []
    counts = {"upd": 0, "del": 0, "ins": 0}
    for kind, t, s in merged(target, src_rows):
        if kind == "matched":
            assert t is not None and s is not None
            if s["s"] == "gone":
                counts["del"] += 1
            elif t["id"] < 60:
                want.append(dict(t, v=s["v"] + 0.25, s="upd"))
                counts["upd"] += 1
            else:
                want.append(dict(s))
                counts["upd"] += 1
        elif kind == "not_matched":
            assert s is not None
            want.append({"id": s["id"], "k": s["k"], "v": None, "s": "ins"} if s["id"] > 125 else dict(s))
            counts["ins"] += 1
        else:
            assert t is not None
            if t["id"] < 10:
                counts["del"] += 1
            else:
                want.append(dict(t, s=t["s"] + "?"))
                counts["upd"] += 1
    check(spark, path, want)
    got = (out.num_updated_rows, out.num_deleted_rows, out.num_inserted_rows)
    assert got == (counts["upd"], counts["del"], counts["ins"])
    assert out.num_affected_rows == sum(counts.values())
    entry = last(path)
    assert entry["operation"] == "MERGE"
    m = entry["operationMetrics"]
    assert m["numTargetRowsInserted"] == str(counts["ins"]) and m["numSourceRows"] == str(len(src_rows))
    assert int(m["numTargetRowsMatchedDeleted"]) + int(m["numTargetRowsNotMatchedBySourceDeleted"]) == counts["del"]
    assert m["numTargetRowsCopied"] == "0"  # every target row is matched or not matched by source here
    first = json.loads(entry["operationParameters"]["matchedPredicates"])[0]  # as Catalyst prints it analysed
    assert re.fullmatch(r"\(s#\d+ = gone\)", first["predicate"]) and first["actionType"] == "delete"


@pytest.mark.parametrize("dvs", [False, True], ids=["cow", "dv"])
def test_merge_upsert_rewrites_only_touched_files_and_counts_copies(spark: Any, tmp_path: Path, dvs: bool) -> None:
    path = make(tmp_path, partitioned=True, dvs=dvs)
    untouched = {r["path"] for r in live(path) if dict(r["partitionValues"])["k"] != "0"}
    src_rows = [{"id": 3, "k": 0, "v": -1.0, "s": "u"}, {"id": 500, "k": 0, "v": 5.0, "s": "i"}]
    res = (
        merge(spark, path, frame_of(spark, src_rows).alias("s"), "t.k = 0 AND t.id = s.id", target_alias="t")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
    )
    res.execute()
    assert res.result is not None
    assert res.result.metric("numTargetRowsUpdated") == 1 and res.result.metric("numTargetRowsInserted") == 1
    if dvs:  # the old row is marked deleted, only the updated and inserted rows are written
        assert res.result.metric("numTargetFilesRemoved") == 0 and res.result.metric("numTargetRowsCopied") == 0
        assert res.result.metric("numTargetDeletionVectorsAdded") == 1 and len(dv_files(path)) == 1
    else:
        assert res.result.metric("numTargetFilesRemoved") == 1  # only the file holding id 3
        assert res.result.metric("numTargetRowsCopied") == 13
    assert untouched <= {r["path"] for r in live(path)}
    want = [dict(r, v=-1.0, s="u") if r["id"] == 3 else r for r in data(0, 120).to_pylist()] + [src_rows[1]]
    check(spark, path, want)


def test_insert_only_merge_only_adds_files(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=False, dvs=False)
    before = {r["path"] for r in live(path)}
    src_rows = [{"id": i, "k": 1, "v": 1.0, "s": "n"} for i in (5, 118, 300, 301)]
    out = (
        merge(spark, path, frame_of(spark, src_rows).alias("s"), "t.id = s.id", target_alias="t")
        .whenNotMatchedInsert("s.id <> 301", {"id": "s.id", "s": "upper(s.s)"})
        .execute().first()
    )
    assert out.num_inserted_rows == 1 and out.num_affected_rows == 1
    assert before <= {r["path"] for r in live(path)}
    m = last(path)["operationMetrics"]
    assert m["numTargetFilesRemoved"] == "0" and m["numTargetRowsInserted"] == "1"
    check(spark, path, [*data(0, 120).to_pylist(), {"id": 300, "k": None, "v": None, "s": "N"}])


def test_merge_rules_and_errors(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=False, dvs=False)
    v0, before = version(path), table_rows(path)
    dup = frame_of(spark, [{"id": 1, "v": 1.0}, {"id": 1, "v": 2.0}]).alias("s")
    b = merge(spark, path, dup, "t.id = s.id", target_alias="t")
    from pyspark.errors import UnsupportedOperationException

    # delta-spark raises (Delta)UnsupportedOperationException here: a ported except clause still catches it
    with pytest.raises(UnsupportedOperationException,
                       match=r"DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE.*t\.id = s\.id") as caught:
        b.whenMatchedUpdate(set={"v": "s.v"}).execute()
    assert isinstance(caught.value, DeltaError)
    assert caught.value.getCondition() == "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"
    with pytest.raises(InvalidArgumentError, match="at least one WHEN clause"):
        b.execute()
    with pytest.raises(InvalidArgumentError, match="only the last MATCHED clause can omit the condition"):
        b.whenMatchedDelete().whenMatchedUpdate(set={"v": "s.v"}).execute()
    with pytest.raises(InvalidArgumentError, match="may only refer to source columns"):
        b.whenNotMatchedInsert(values={"id": "t.id"}).execute()
    with pytest.raises(InvalidArgumentError, match="has no source column"):
        b.whenNotMatchedInsertAll().execute()  # the source lacks k and s
    with pytest.raises(InvalidArgumentError, match="column 'zz' does not exist"):
        b.whenMatchedUpdate(set={"zz": "s.v"}).execute()
    assert version(path) == v0 and table_rows(path) == before
    # a single unconditional delete is unambiguous even with several matches
    b.whenMatchedDelete().execute()
    check(spark, path, [r for r in before if r["id"] != 1])
    # first matching clause wins
    src = frame_of(spark, [{"id": 2, "v": 9.0}]).alias("s")
    (merge(spark, path, src, "t.id = s.id", target_alias="t")
     .whenMatchedUpdate("s.v > 5", {"s": "'first'"}).whenMatchedUpdate("s.v > 1", {"s": "'second'"}).execute())
    assert next(r for r in table_rows(path) if r["id"] == 2)["s"] == "first"


def test_merge_schema_evolution_adds_source_columns(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=False, dvs=False)
    src_rows = [
        {"id": 1, "k": 1, "v": 0.0, "s": "a", "extra": "e1"},
        {"id": 777, "k": 0, "v": 7.0, "s": "b", "extra": "e2"},
    ]
    src = frame_of(spark, src_rows).alias("s")
    plain = merge(spark, path, src, "t.id = s.id", target_alias="t").whenMatchedUpdateAll().whenNotMatchedInsertAll()
    plain.execute()  # without evolution the extra column is ignored
    assert deltalog.Table(path).snapshot().schema.field_names == ["id", "k", "v", "s"]
    plain.withSchemaEvolution().execute()
    assert deltalog.Table(path).snapshot().schema.field_names == ["id", "k", "v", "s", "extra"]
    want = [dict(r, extra=None) for r in data(0, 120).to_pylist() if r["id"] != 1] + src_rows
    check(spark, path, want)


def test_merge_schema_evolution_commits_the_schema_when_no_row_changes(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=False, dvs=False)
    v0, before = version(path), table_rows(path)
    src = frame_of(spark, [{"id": 10**6, "k": 0, "v": 1.0, "s": "x", "extra": "e"}]).alias("s")
    merge(spark, path, src, "t.id = s.id", target_alias="t").whenMatchedUpdateAll().execute()
    assert version(path) == v0  # nothing changes: no commit, as delta-spark skips empty commits
    merge(spark, path, src, "t.id = s.id", target_alias="t").whenMatchedUpdateAll().withSchemaEvolution().execute()
    assert version(path) == v0 + 1  # the new schema is a change (delta-spark commits its metadata)
    assert deltalog.Table(path).snapshot().schema.field_names == ["id", "k", "v", "s", "extra"]
    check(spark, path, [dict(r, extra=None) for r in before])


@pytest.mark.parametrize("dvs", [False, True], ids=["cow", "dv"])
def test_merge_with_column_condition_and_column_assignments(spark: Any, tmp_path: Path, dvs: bool) -> None:
    from pyspark.sql import functions as F

    path = make(tmp_path, partitioned=False, dvs=dvs)
    before = table_rows(path)
    src_rows = [{"id": 3, "v": 10.0}, {"id": 4, "v": 20.0}, {"id": 500, "v": 30.0}]
    src = frame_of(spark, src_rows).alias("s")
    (merge(spark, path, src, F.col("t.id") == F.col("s.id"), target_alias="t")
     .whenMatchedUpdate(condition=F.col("s.v") > 15, set={"v": F.col("s.v") * 2, "s": F.lit("upd")})
     .whenMatchedDelete()
     .whenNotMatchedInsert(values={"id": F.col("s.id"), "k": F.lit(9), "v": F.col("s.v"), "s": F.concat(
         F.lit("new"), F.col("s.id").cast("string"))})
     .execute())
    want = []
    for r in before:
        if r["id"] == 3:
            continue  # v 10 <= 15: the unconditional delete
        want.append({**r, "v": 40.0, "s": "upd"} if r["id"] == 4 else r)
    want.append({"id": 500, "k": 9, "v": 30.0, "s": "new500"})
    check(spark, path, want)


def test_merge_bad_input_leaves_the_table_unchanged(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make(tmp_path, partitioned=False, dvs=False)
    v0, before, files_before = version(path), table_rows(path), sorted(os.listdir(path))
    src = frame_of(spark, [{"id": 1, "v": 1.0}, {"id": 999, "v": 2.0}]).alias("s")
    other = frame_of(spark, [{"id": 1, "v": 1.0}]).alias("src")
    with pytest.raises(Exception, match="nope"):  # an unknown column in the ON condition
        merge(spark, path, other, "t.id = src.nope", target_alias="t").whenMatchedDelete().execute()
    with pytest.raises(Exception, match=r"(?i)cast|invalid|abc"):  # a value that is no double
        merge(spark, path, src, "t.id = s.id", target_alias="t").whenMatchedUpdate(set={"v": "'abc'"}).execute()

    def failing(self: Transaction, **kwargs: Any) -> Any:
        raise DeltaError("simulated commit failure")

    monkeypatch.setattr(Transaction, "commit", failing)
    with pytest.raises(DeltaError, match="simulated"):  # a failure after the files were written
        (merge(spark, path, src, "t.id = s.id", target_alias="t")
         .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsert(values={"id": "s.id", "v": "s.v"}).execute())
    monkeypatch.undo()
    assert version(path) == v0 and table_rows(path) == before and sorted(os.listdir(path)) == files_before


def test_merge_insert_skips_source_rows_matched_in_untouched_files(spark: Any, tmp_path: Path) -> None:
    """A file holding a match that no clause acts on is not rewritten, yet its match still keeps the
    source row from being inserted (the write job joins every file holding a match)."""
    import pyarrow as pa

    import deltalog
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    for start in (0, 10):
        ids = list(range(start, start + 10))
        deltalog.write_table(path, pa.table({"id": pa.array(ids, pa.int64()), "v": ["a"] * 10}), mode="append")
    source = spark.createDataFrame([(5, "x"), (15, "y"), (30, "z")], "id BIGINT, v STRING")
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdate("t.id < 10", {"v": "s.v"}).whenNotMatchedInsertAll().execute())
    want = sorted([(i, "x" if i == 5 else "a") for i in range(20)] + [(30, "z")])
    assert sorted(tuple(r) for r in DeltaTable.forPath(spark, path).toDF().collect()) == want
    last = deltalog.Table(path).history(limit=1)[0]["operationMetrics"]
    assert (last["numTargetFilesRemoved"], last["numTargetRowsInserted"], last["numTargetRowsUpdated"]) == \
        ("1", "1", "1")
    # every file touched: the rewrite reads the files without per-row keys, same result
    source = spark.createDataFrame([(1, "p"), (11, "q"), (40, "r")], "id BIGINT, v STRING")
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    want = sorted([(i, {1: "p", 5: "x", 11: "q"}.get(i, "a")) for i in range(20)] + [(30, "z"), (40, "r")])
    assert sorted(tuple(r) for r in DeltaTable.forPath(spark, path).toDF().collect()) == want


@pytest.mark.parametrize("shared_sizes", [False, True], ids=["keyed", "by-path"])
def test_merge_finds_matches_by_packed_row_key_or_by_path(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_sizes: bool
) -> None:
    """MERGE's first job (which target rows match, which files are touched) shuffles one ``long`` per
    target row -- row index and file size packed (``read.keyed_rows``) -- when the sizes tell the files
    apart, and the file's path and row index when two files share a size: same rows, same counts, and a
    target row matched twice is refused either way. The target has a deletion vector already."""
    from deltalog.spark.dml import merge_run

    path = str(tmp_path / "t")
    props = {"delta.enableDeletionVectors": "true"}
    blocks = [data(0, 40), data(40, 40), data(40, 40)] if shared_sizes else [data(0, 40), data(40, 41), data(81, 39)]
    for i, block in enumerate(blocks):
        deltalog.write_table(path, block, mode="append", properties=props if i == 0 else None)
    delete(spark, path, "id = 45")
    sizes = [r["size"] for r in live(path)]
    assert (len(set(sizes)) < len(sizes)) == shared_sizes
    keyed: list[bool] = []
    real = merge_run.keyed_rows

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        keyed.append(out is not None)
        return out

    monkeypatch.setattr(merge_run, "keyed_rows", spy)
    target = table_rows(path)
    src_rows = [{"id": i, "k": 7, "v": -1.0, "s": "new"} for i in (1, 44, 45, 60, 110, 200)]
    (merge(spark, path, frame_of(spark, src_rows).alias("s"), "t.id = s.id", target_alias="t")
     .whenMatchedUpdate(set={"v": "s.v", "s": "'upd'"})
     .whenNotMatchedInsertAll()
     .whenNotMatchedBySourceDelete("t.id < 3")
     .execute())
    src_ids = {r["id"] for r in src_rows}
    want = [dict(t, v=-1.0, s="upd") if t["id"] in src_ids else t for t in target if t["id"] >= 3 or t["id"] in src_ids]
    want += [r for r in src_rows if r["id"] not in {t["id"] for t in target}]
    check(spark, path, want)
    m = last(path)["operationMetrics"]
    updated = sum(1 for t in target if t["id"] in src_ids)
    assert (m["numTargetRowsMatchedUpdated"], m["numTargetRowsNotMatchedBySourceDeleted"],
            m["numTargetRowsInserted"]) == (str(updated), "2", str(3 if shared_sizes else 2))
    assert keyed == [not shared_sizes]
    v = version(path)
    dup = 50 if shared_sizes else 85  # a row of the last file
    twice = frame_of(spark, [{"id": dup, "v": 1.0}, {"id": dup, "v": 2.0}]).alias("s")
    with pytest.raises(DeltaError, match="DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"):
        merge(spark, path, twice, "t.id = s.id", target_alias="t").whenMatchedUpdate(set={"v": "s.v"}).execute()
    assert version(path) == v and keyed == [not shared_sizes] * 2


def test_struct_fields_are_assigned_one_by_one_in_update_and_merge(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "nested")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, s STRUCT<a: INT, b: STRING, n: STRUCT<x: INT, y: INT>>, "
              "arr ARRAY<STRUCT<z: INT>>) USING DELTA")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, named_struct('a', 1, 'b', 'x', 'n', "
              "named_struct('x', 1, 'y', 2)), null), (2, null, null), "
              "(3, named_struct('a', 3, 'b', 'z', 'n', null), null)")

    def structs() -> dict[int, Any]:
        return {r["id"]: r["s"] for r in table_rows(path)}

    # SQL, with and without the table's alias; a null struct becomes a struct of the assigned fields
    spark.sql(f"UPDATE delta.`{path}` SET s.b = 'UP', s.n.y = 20 WHERE id IN (1, 2)")
    spark.sql(f"UPDATE delta.`{path}` AS e SET e.s.a = e.s.a + 100 WHERE e.id = 3")
    assert structs() == {1: {"a": 1, "b": "UP", "n": {"x": 1, "y": 20}},
                         2: {"a": None, "b": "UP", "n": {"x": None, "y": 20}},
                         3: {"a": 103, "b": "z", "n": None}}
    spark.sql(f"MERGE INTO delta.`{path}` t USING (SELECT 1L AS id, 'M' AS v UNION ALL SELECT 4L, 'I') s "
              "ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.s.b = s.v, s.n.x = 9 "
              "WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, named_struct('a', 4, 'b', s.v, 'n', null))")
    # the Python API, with backticks around parts
    update(spark, path, "id = 2", {"s.a": "42", "`s`.`n`.x": "43"})
    assert structs() == {1: {"a": 1, "b": "M", "n": {"x": 9, "y": 20}},
                         2: {"a": 42, "b": "UP", "n": {"x": 43, "y": 20}},
                         3: {"a": 103, "b": "z", "n": None},
                         4: {"a": 4, "b": "I", "n": None}}
    v = version(path)
    with pytest.raises(InvalidArgumentError, match=r"DELTA_CONFLICT_SET_COLUMN.*\['s', 's.a'\]"):
        update(spark, path, None, {"s": "null", "s.a": "1"})
    with pytest.raises(InvalidArgumentError, match=r"DELTA_CONFLICT_SET_COLUMN.*\[s.a, s.a\]"):
        spark.sql(f"UPDATE delta.`{path}` SET s.a = 1, s.a = 2")
    with pytest.raises(InvalidArgumentError, match=r"field 'q' of 's.q' does not exist; s has the fields"):
        update(spark, path, None, {"s.q": "1"})
    with pytest.raises(InvalidArgumentError, match=r"fields of arrays and maps cannot be assigned one by one"):
        update(spark, path, None, {"arr.z": "1"})
    with pytest.raises(SchemaError, match=r"DELTA_CAST_FAILURE.*value x7 cannot be stored in column 's.a' of type int"):
        update(spark, path, "id = 1", {"s.a": "'x7'"})  # the field's cast is checked, not only the struct's
    with pytest.raises(InvalidArgumentError, match=r"'s.a' names a nested field"):
        spark.sql(f"MERGE INTO delta.`{path}` t USING (SELECT 9L AS id) s ON t.id = s.id "
                  "WHEN NOT MATCHED THEN INSERT (id, s.a) VALUES (s.id, 1)")
    assert version(path) == v


@pytest.mark.parametrize("native", [True, False], ids=["spark-writer", "arrow-tasks"])
def test_rewrites_give_the_same_table_through_either_writer(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    """UPDATE, DELETE and the two-job MERGE rewrite a local unpartitioned table's rows with Spark's own parquet
    writer (``staged.native_applies``), else with the ``mapInArrow`` tasks: the same rows, row counts and
    statistics either way."""
    from deltalog.spark.dml import merge_one_pass
    from deltalog.spark.jobs import staged

    seen: list[bool] = []
    real = staged.native_applies

    def spy(*args: Any) -> bool:
        out = real(*args) if native else False
        seen.append(out)
        return out

    monkeypatch.setattr(staged, "native_applies", spy)
    monkeypatch.setattr(merge_one_pass, "one_pass_applies", lambda run, candidates: False)
    path = str(tmp_path / "t")
    for start in (0, 40, 80):
        deltalog.write_table(path, data(start, 40), mode="append")
    update(spark, path, "id % 10 = 0", {"v": "v * 2", "s": "'upd'"})
    delete(spark, path, "id % 7 = 3")
    src = frame(spark, pa.Table.from_pylist([{"id": i, "k": 9, "v": -1.0, "s": "m"} for i in (5, 50, 95, 200)]))
    merge(spark, path, src.alias("s"), "t.id = s.id", target_alias="t").whenMatchedUpdateAll() \
        .whenNotMatchedInsertAll().execute()
    assert seen and set(seen) == {native}
    want = {r["id"]: r for r in arrow_rows(data(0, 120)) if r["id"] % 7 != 3}
    for r in want.values():
        if r["id"] % 10 == 0:
            r.update(v=None if r["v"] is None else r["v"] * 2, s="upd")
    want.update({i: {"id": i, "k": 9, "v": -1.0, "s": "m"} for i in (5, 50, 95, 200)})
    snap = deltalog.Table(path).snapshot()
    rows = arrow_rows(snap.to_arrow())
    assert sorted(rows, key=lambda r: r["id"]) == [want[i] for i in sorted(want)]
    ids = [r["id"] for r in rows]
    for add in snap.add_files().to_pylist():
        stats = json.loads(add["stats"])
        assert stats["numRecords"] > 0 and stats["minValues"]["id"] >= min(ids) and stats["maxValues"]["id"] <= max(ids)
        assert set(stats["nullCount"]) == {"id", "k", "v", "s"}
    assert sum(json.loads(a["stats"])["numRecords"] for a in snap.add_files().to_pylist()) == len(want)
