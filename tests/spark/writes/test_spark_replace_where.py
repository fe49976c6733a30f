"""``replaceWhere`` on any condition (data columns, ``OR``, functions, a ``Column``), as delta-spark 1.1+
has it: every result is compared with the same operation computed independently with DataFrame
operations (the table's rows where the condition is not true, union the new rows), read back through
the kernel, the Spark read path and delta-rs; refused writes commit nothing and leave no file."""

from __future__ import annotations

import concurrent.futures as cf
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import spark_deltars_worker
from sparkutil import arrow_rows, data_files, frame, rows, to_arrow, version

import deltalog
from deltalog.errors import DeltaError, InvalidArgumentError
from deltalog.spark import write
from deltalog.spark.dml import delete
from deltalog.spark.reads.target import describe
from deltalog.txn.conflicts import ConcurrentAppendException
from deltalog.txn.transaction import Transaction

pytestmark = pytest.mark.spark

Row = dict[str, Any]
DATA_COLUMNS = "spark.databricks.delta.replaceWhere.dataColumns.enabled"
CONSTRAINT_CHECK = "spark.databricks.delta.replaceWhere.constraintCheck.enabled"


def data(ids: range | list[int]) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "k": pa.array([i % 3 for i in ids], pa.int64()),
        "v": pa.array([None if i % 7 == 0 else i * 0.5 for i in ids], pa.float64()),
        "s": pa.array([f"s{i % 5}" for i in ids], pa.string()),
    })


def make(tmp_path: Path, *, partitioned: bool = False, props: dict[str, str] | None = None) -> str:
    """Three commits of 40 rows (ids 0-119): one file per commit, or per commit and partition."""
    path = str(tmp_path / "t")
    parts = ["k"] if partitioned else None
    deltalog.write_table(path, data(range(0, 40)), mode="append", partition_by=parts, properties=props)
    deltalog.write_table(path, data(range(40, 80)), mode="append")
    deltalog.write_table(path, data(range(80, 120)), mode="append")
    return path


def table_rows(path: str) -> list[Row]:
    return arrow_rows(deltalog.Table(path).snapshot().to_arrow())


def expected_after(spark: Any, path: str, condition: Any, new: pa.Table) -> list[Row]:
    """The table's rows where ``condition`` is not true (false or null), union ``new``: plain DataFrame ops."""
    from pyspark.sql import functions as F

    cond = F.expr(condition) if isinstance(condition, str) else condition
    before = frame(spark, deltalog.Table(path).snapshot().to_arrow())
    kept = before.filter(~F.coalesce(cond, F.lit(False)))
    return arrow_rows(pa.Table.from_pylist(to_arrow(kept).to_pylist() + new.to_pylist()))


def check(spark: Any, path: str, expected: list[Row]) -> None:
    """The kernel and the Spark read path both read ``expected``."""
    assert table_rows(path) == expected
    assert rows(spark.read.format("delta").load(path)) == expected


def replace_where(spark: Any, path: str, new: pa.Table, condition: Any) -> Any:
    """The replaceWhere overwrite, through ``df.write.format("delta")`` for SQL strings."""
    df = frame(spark, new)
    if isinstance(condition, str):
        df.write.format("delta").mode("overwrite").option("replaceWhere", condition).save(path)
        return None
    return write(df, path, mode="overwrite", replaceWhere=condition)


def last(path: str) -> dict[str, Any]:
    return deltalog.Table(path).history(limit=1)[0]


def live(path: str) -> list[Row]:
    return list(deltalog.Table(path).snapshot().add_files().to_pylist())


def commit_actions(path: str, v: int) -> list[dict[str, Any]]:
    text = (Path(path) / "_delta_log" / f"{v:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def marked(table: pa.Table) -> pa.Table:
    """``table`` with ``v = -id``: replacement rows tell themselves apart from the rows they replace."""
    ids = table.column("id").to_pylist()
    return table.set_column(table.schema.get_field_index("v"), "v", pa.array([-float(i) for i in ids], pa.float64()))


def new_rows(ids: range | list[int], condition: Callable[[Row], bool]) -> pa.Table:
    """Rows with the given ids that satisfy ``condition`` (computed in Python)."""
    table = data(ids)
    return pa.Table.from_pylist([r for r in table.to_pylist() if condition(r)], schema=table.schema)


# ------------------------------------------------------------------------------------------ results


def test_data_column_predicate_on_an_unpartitioned_table(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path)
    # A condition one file satisfies entirely (ids 40-79): it goes whole, nothing is copied; the two
    # other files are skipped by their min/max stats.
    cond = "id >= 40 AND id < 80"
    new = marked(data(range(40, 45)))
    want = expected_after(spark, path, cond, new)
    replace_where(spark, path, new, cond)
    check(spark, path, want)
    assert version(path) == 3  # one commit
    entry = last(path)
    assert entry["operation"] == "WRITE"
    assert entry["operationParameters"]["mode"] == "Overwrite"
    assert entry["operationParameters"]["predicate"] == cond  # the text as given, as delta-spark records it
    metrics = entry["operationMetrics"]
    assert (metrics["numDeletedRows"], metrics["numCopiedRows"], metrics["numRemovedFiles"]) == ("40", "0", "1")
    # Files partly matched are rewritten with the rows the condition does not match.
    untouched = {r["path"] for r in live(path) if json.loads(r["stats"])["minValues"]["id"] == 80}
    cond = "id >= 30 AND id < 50 AND s != 's1'"
    before = table_rows(path)
    new = marked(new_rows(range(30, 50), lambda r: r["s"] != "s1"))
    want = expected_after(spark, path, cond, new)
    replace_where(spark, path, new, cond)
    check(spark, path, want)
    assert version(path) == 4
    removed = [a["remove"] for a in commit_actions(path, 4) if "remove" in a]
    removed_rows = sum(json.loads(r["stats"])["numRecords"] for r in removed if r.get("stats"))
    deleted = len(before) - (len(want) - new.num_rows)
    metrics = last(path)["operationMetrics"]
    assert (metrics["numRemovedFiles"], metrics["numDeletedRows"]) == (str(len(removed)), str(deleted))
    assert metrics["numCopiedRows"] == str(removed_rows - deleted)
    assert untouched <= {r["path"] for r in live(path)}


def test_mixed_partition_and_data_predicate(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=True)
    others = {r["path"] for r in live(path) if dict(r["partitionValues"])["k"] != "1"}
    cond = "k = 1 AND id > 50"
    new = new_rows(range(1000, 1030), lambda r: r["k"] == 1)
    want = expected_after(spark, path, cond, new)
    replace_where(spark, path, new, cond)
    check(spark, path, want)
    assert others <= {r["path"] for r in live(path)}  # other partitions' files never touched
    removes = [a["remove"] for a in commit_actions(path, 3) if "remove" in a]
    assert removes and {dict(r["partitionValues"])["k"] for r in removes} == {"1"}
    metrics = last(path)["operationMetrics"]
    assert metrics["numDeletedRows"] == str(sum(1 for i in range(51, 120) if i % 3 == 1))


def test_or_predicates_and_partition_only_conditions(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make(tmp_path, partitioned=True)
    cond = "id < 5 OR s = 's3'"
    new = new_rows(range(2000, 2020), lambda r: r["s"] == "s3")
    want = expected_after(spark, path, cond, new)
    replace_where(spark, path, new, cond)
    check(spark, path, want)
    # A condition on partition columns only is decided from the log: whole files, no data file read.

    def no_scan(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a partition-only condition must not scan data files")

    monkeypatch.setattr("deltalog.spark.writes.replace_where.touched_files", no_scan)
    gone = {r["path"] for r in live(path) if dict(r["partitionValues"])["k"] in ("0", "2")}
    cond = "K = 0 OR k + 1 = 3"
    new = new_rows(range(3000, 3010), lambda r: r["k"] != 1)
    want = expected_after(spark, path, cond, new)
    replace_where(spark, path, new, cond)
    check(spark, path, want)
    removes = {a["remove"]["path"] for a in commit_actions(path, version(path)) if "remove" in a}
    assert removes == gone
    assert last(path)["operationMetrics"]["numCopiedRows"] == "0"


def test_rows_where_the_condition_is_null_are_kept(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    path = make(tmp_path)
    nulls = [r["id"] for r in table_rows(path) if r["v"] is None]
    assert nulls
    cond = "v > 20"
    new = new_rows(range(4000, 4010), lambda r: r["v"] is not None and r["v"] > 20)
    want = expected_after(spark, path, cond, new)
    replace_where(spark, path, new, cond)
    check(spark, path, want)
    assert set(nulls) <= {r["id"] for r in table_rows(path)}
    # A null in the data is not "satisfying the condition" either.
    with pytest.raises(InvalidArgumentError, match=r"DELTA_REPLACE_WHERE_MISMATCH.*1 row\(s\)"):
        write(frame(spark, data([4200])), path, mode="overwrite", replaceWhere="v > 20")
    # A Column condition too.
    v = version(path)
    cond_col = F.col("id") < 10
    new = data(range(0, 10))
    want = expected_after(spark, path, cond_col, new)
    res = replace_where(spark, path, new, cond_col)
    check(spark, path, want)
    assert res.version == v + 1 and res.num_rows == 10
    assert last(path)["operationParameters"]["predicate"] == describe(cond_col)


def test_deletion_vector_tables_are_rewritten_correctly(
    spark: Any, tmp_path: Path, rs: cf.ProcessPoolExecutor
) -> None:
    path = make(tmp_path, partitioned=True, props={"delta.enableDeletionVectors": "true"})
    delete(spark, path, "id % 4 = 0")
    assert any(r["deletionVector"] for r in live(path))
    cond = "id BETWEEN 10 AND 70 AND s != 's2'"
    new = marked(new_rows(range(10, 30), lambda r: r["s"] != "s2"))
    want = expected_after(spark, path, cond, new)
    replace_where(spark, path, new, cond)
    check(spark, path, want)
    theirs = rs.submit(spark_deltars_worker.read_with_query_engine, path).result(timeout=120)
    assert arrow_rows(theirs.select(["id", "k", "v", "s"])) == want


def test_delta_rs_reads_the_result(spark: Any, tmp_path: Path, rs: cf.ProcessPoolExecutor) -> None:
    path = make(tmp_path, partitioned=True)
    for cond, new in [
        ("k = 2 AND v > 30", new_rows(range(5000, 5030), lambda r: r["k"] == 2 and (r["v"] or 0) > 30)),
        ("id % 5 = 1 OR id > 110", new_rows(range(6000, 6020), lambda r: r["id"] % 5 == 1)),
    ]:
        want = expected_after(spark, path, cond, new)
        replace_where(spark, path, new, cond)
        check(spark, path, want)
    assert rs.submit(spark_deltars_worker.version, path).result(timeout=120) == version(path)
    theirs = rs.submit(spark_deltars_worker.read_table, path).result(timeout=120)
    ours = deltalog.Table(path).snapshot().to_arrow()
    assert arrow_rows(theirs.select(ours.column_names).cast(ours.schema)) == table_rows(path)


def test_change_data_feed_gets_replaced_and_written_rows(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, props={"delta.enableChangeDataFeed": "true"})
    cond = "id >= 35 AND id < 45"
    before = table_rows(path)
    new = marked(data(range(35, 40)))
    replace_where(spark, path, new, cond)
    v = version(path)
    changes = deltalog.read_changes(path, starting_version=v, ending_version=v).to_pylist()
    got = sorted((r["_change_type"], r["id"]) for r in changes)
    want = sorted([("delete", r["id"]) for r in before if 35 <= r["id"] < 45] + [("insert", i) for i in range(35, 40)])
    assert got == want
    assert any("cdc" in a for a in commit_actions(path, v))


# ------------------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize("partitioned", [False, True], ids=["plain", "partitioned"])
def test_data_outside_the_condition_commits_nothing_and_leaves_no_file(
    spark: Any, tmp_path: Path, partitioned: bool
) -> None:
    path = make(tmp_path, partitioned=partitioned)
    files, v = data_files(path), version(path)
    bad = frame(spark, data(range(100, 140)))  # ids 100..139, half of them outside
    with pytest.raises(InvalidArgumentError, match=r"DELTA_REPLACE_WHERE_MISMATCH.*20 row\(s\)") as err:
        bad.write.format("delta").mode("overwrite").option("replaceWhere", "id >= 120").save(path)
    assert path in str(err.value)
    assert version(path) == v and data_files(path) == files
    # The partition fast path refuses in its tasks, with the same error class.
    if partitioned:
        with pytest.raises(InvalidArgumentError, match="DELTA_REPLACE_WHERE_MISMATCH"):
            write(bad, path, mode="overwrite", replaceWhere="k = 1")
        assert version(path) == v


def test_bad_conditions_name_the_column_and_commit_nothing(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=True)
    files, v = data_files(path), version(path)
    df = frame(spark, data(range(0, 3)))
    with pytest.raises(InvalidArgumentError, match=r"refers to column `nope`, which the table does not have") as err:
        write(df, path, mode="overwrite", replaceWhere="id > 1 AND nope = 2")
    assert path in str(err.value) and "'id'" in str(err.value)
    with pytest.raises(InvalidArgumentError, match="not a valid condition"):
        write(df, path, mode="overwrite", replaceWhere="id +")
    with pytest.raises(InvalidArgumentError, match="empty condition"):
        write(df, path, mode="overwrite", replaceWhere="  ")
    with pytest.raises(InvalidArgumentError, match="needs mode 'overwrite'"):
        df.write.format("delta").mode("append").option("replaceWhere", "id > 1").save(path)
    assert version(path) == v and data_files(path) == files


def test_a_failed_commit_deletes_the_files_written(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make(tmp_path)
    files, v = data_files(path), version(path)

    def failing(self: Transaction, **kwargs: Any) -> Any:
        raise DeltaError("simulated commit failure")

    monkeypatch.setattr(Transaction, "commit", failing)
    with pytest.raises(DeltaError, match="simulated"):  # new rows and rewritten survivors
        replace_where(spark, path, data(range(45, 50)), "id >= 45 AND id < 55")
    assert version(path) == v and data_files(path) == files


def test_concurrent_writes_elsewhere_do_not_conflict(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read predicate is the condition's simple part: an append to another partition passes, one
    into the replaced rows conflicts (Serializable: even blind appends are checked)."""
    original = Transaction.commit

    def racing(ids: list[int]) -> Callable[..., Any]:
        def commit(self: Transaction, **kwargs: Any) -> Any:
            monkeypatch.setattr(Transaction, "commit", original)
            deltalog.write_table(self.table, data(ids), mode="append")
            return original(self, **kwargs)

        return commit

    path = make(tmp_path, partitioned=True, props={"delta.isolationLevel": "Serializable"})
    monkeypatch.setattr(Transaction, "commit", racing([2000, 2003]))  # k = 2
    cond = "k = 1 AND id > 50"
    new = new_rows(range(1000, 1010), lambda r: r["k"] == 1)
    want = expected_after(spark, path, cond, new) + data([2000, 2003]).to_pylist()
    replace_where(spark, path, new, cond)
    assert version(path) == 4  # the append took version 3
    check(spark, path, arrow_rows(pa.Table.from_pylist(want)))
    monkeypatch.setattr(Transaction, "commit", racing([2002]))  # k = 1, id > 50: read by the overwrite
    with pytest.raises(ConcurrentAppendException):
        replace_where(spark, path, new, cond)
    assert version(path) == 5  # only the concurrent append


def test_session_settings_and_new_tables(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path, partitioned=True)
    v = version(path)
    df = frame(spark, data(range(200, 206)))
    spark.conf.set(DATA_COLUMNS, "false")
    try:
        with pytest.raises(InvalidArgumentError, match="partition columns"):
            write(df, path, mode="overwrite", replaceWhere="id >= 200")
        assert version(path) == v
    finally:
        spark.conf.unset(DATA_COLUMNS)
    spark.conf.set(CONSTRAINT_CHECK, "false")
    try:  # rows outside the condition are written unchecked, as delta-spark does with the check off
        want = expected_after(spark, path, "id >= 203", data(range(200, 206)))
        write(df, path, mode="overwrite", replaceWhere="id >= 203")
        check(spark, path, want)
    finally:
        spark.conf.unset(CONSTRAINT_CHECK)
    # A table that does not exist yet is created, the data checked all the same.
    fresh = str(tmp_path / "fresh")
    with pytest.raises(InvalidArgumentError, match="DELTA_REPLACE_WHERE_MISMATCH"):
        write(df, fresh, mode="overwrite", replaceWhere="id > 202", partitionBy="k")
    assert version(fresh) == -1 and data_files(fresh) == []
    write(df, fresh, mode="overwrite", replaceWhere="id >= 200 OR s = 'x'", partitionBy="k")
    assert table_rows(fresh) == arrow_rows(data(range(200, 206)))


def test_merge_schema_with_a_data_column_condition(spark: Any, tmp_path: Path) -> None:
    path = make(tmp_path)
    new = data(range(0, 10)).append_column("extra", pa.array([f"e{i}" for i in range(10)]))
    kept = [{**r, "extra": None} for r in expected_after(spark, path, "id < 10 OR v IS NULL", data([]))]
    want = arrow_rows(pa.Table.from_pylist(kept + new.to_pylist()))
    write(frame(spark, new), path, mode="overwrite", replaceWhere="id < 10 OR v IS NULL", mergeSchema="true")
    assert deltalog.Table(path).snapshot().schema.field_names == ["id", "k", "v", "s", "extra"]
    check(spark, path, want)
