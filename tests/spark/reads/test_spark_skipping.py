"""Filters applied to a loaded Delta DataFrame skip files by the log's statistics (a filter on
``spark.read.format("delta").load(p)``, directly or after select / withColumn / drop / renames / other
filters, re-plans the scan), with the same rows as Spark's plain filter."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
from sparkutil import rows

import deltalog
from deltalog.spark import DeltaTable, read, write

pytestmark = pytest.mark.spark

CORPUS = Path(__file__).resolve().parents[4] / "shared" / "conformance"


@pytest.fixture(scope="module")
def table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Eight files with disjoint ``id`` ranges (0-9, 10-19, ...), partitioned by ``k`` (two values)."""
    from pyspark.sql import functions as F

    p = str(tmp_path_factory.mktemp("skip") / "t")
    for i in range(8):
        df = (spark.range(i * 10, i * 10 + 10, numPartitions=1)
              .withColumn("k", F.lit(i % 2).cast("int"))
              .withColumn("s", F.concat(F.lit("s"), F.lpad(F.col("id").cast("string"), 2, "0")))
              .withColumn("d", F.date_add(F.lit(dt.date(2024, 1, 1)), F.col("id").cast("int")))
              .withColumn("x", F.col("id") * 0.5))
        write(df, p, mode="append", partitionBy=["k"])
    return p


def _plain(spark: Any, path: str) -> Any:
    """The same table without skipping (``alias`` is not tracked: its filters are Spark's plain ones)."""
    return spark.read.format("delta").load(path).alias("plain")


CONDITIONS = [
    "id >= 75",
    "id BETWEEN 12 AND 18 AND k = 1",
    "s IN ('s03', 's41') OR id = 77",           # OR: no skipping, same rows
    "s = 's42'",
    "d < DATE '2024-01-05'",
    "x < 4.5 AND upper(s) = 'S03'",
    "id = 1000",
]


@pytest.mark.parametrize("cond", CONDITIONS)
def test_filter_after_load_gives_the_plain_filter_rows(spark: Any, table: str, cond: str) -> None:
    loaded = spark.read.format("delta").load(table)
    assert rows(loaded.filter(cond)) == rows(_plain(spark, table).filter(cond))


def test_filter_after_load_reads_only_the_files_that_can_match(spark: Any, table: str) -> None:
    from pyspark.sql import functions as F

    every = len(spark.read.format("delta").load(table).inputFiles())
    assert every == 8
    load = lambda: spark.read.format("delta").load(table)  # noqa: E731
    assert len(load().filter("id >= 75").inputFiles()) == 1
    assert len(load().where(F.col("id") >= 75).inputFiles()) == 1
    assert len(load().filter((F.col("id") > 15) & (F.col("id") < 25)).inputFiles()) == 2
    assert len(load().filter(F.col("id").between(12, 18)).inputFiles()) == 1
    assert len(load().filter(F.col("s").isin("s03", "s55")).inputFiles()) == 2
    assert len(load().filter(F.col("d") < dt.date(2024, 1, 5)).inputFiles()) == 1
    assert len(load().filter(F.expr("id < 10 AND k = 0")).inputFiles()) == 1
    assert len(load().filter(F.col("id") == 1000).inputFiles()) == 0
    # Nothing the statistics can use: every file, the same rows as Spark's filter.
    assert len(load().filter((F.col("id") < 3) | (F.col("id") > 76)).inputFiles()) == every
    # Untracked transformations end skipping (same rows, every file).
    assert len(load().selectExpr("*").filter("id >= 75").inputFiles()) == every
    # Steps that keep rows and values keep it (alias, orderBy, ...); those that pick rows (limit, ...) end it.
    assert len(load().alias("a").orderBy("id").filter("id >= 75").inputFiles()) == 1
    assert len(load().limit(1000).filter("id >= 75").inputFiles()) == every
    # DeltaTable.toDF() and read() without where give the same kind of frame.
    assert len(DeltaTable.forPath(spark, table).toDF().filter("id >= 75").inputFiles()) == 1
    assert len(read(spark, table).filter("id < 10").inputFiles()) == 1
    # A SQL string or Column as read(where=...) skips files too.
    assert len(read(spark, table, where="id >= 75").inputFiles()) == 1
    assert len(read(spark, table, where=F.col("id") < 10, columns=["s"]).inputFiles()) == 1


def test_conditions_bound_to_the_frame_skip_files_and_keep_resolving(spark: Any, table: str) -> None:
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(table)
    got = df.filter(df.id >= 75)  # df.id is written as `id`: the same plan, so it may skip files
    assert len(got.inputFiles()) == 1
    assert rows(got) == rows(_plain(spark, table).filter("id >= 75"))
    df2 = spark.read.format("delta").load(table)
    assert rows(df2[df2["id"] > 77]) == rows(_plain(spark, table).filter("id > 77"))
    # A filtered frame is Spark's plain filter of the loaded one: its columns still resolve after it.
    ids = df.filter("id >= 75").select(df.id, (df.id * 2).alias("twice")).orderBy(df.id.desc())
    assert [tuple(r) for r in ids.collect()] == [(i, 2 * i) for i in range(79, 74, -1)]
    assert len(ids.inputFiles()) == 1
    assert df.filter("id >= 75").join(df, df.id == df.id).count() == 5  # a self-join, as Spark resolves it
    # The filtered frame's own plan skips the files: also cached, or joined from a frame deltalog does not track.
    own = df.filter(F.col("id") >= 75)
    assert len(list(own._jdf.inputFiles())) == 1  # Spark's own plan of the frame (what cache() keeps)
    cached = own.cache()
    try:
        assert cached.count() == 5 and cached.select(df.id).count() == 5
    finally:
        cached.unpersist()
    assert len(spark.range(70, 80).join(df.filter("id >= 75"), "id").inputFiles()) == 1
    # A frame wider than MAX_ID_COLUMNS keeps Spark's plain filter; its actions still skip the files.
    from deltalog.spark.reads.rebind import MAX_ID_COLUMNS

    wide_df = df.select("*", *[F.lit(i).alias(f"w{i}") for i in range(MAX_ID_COLUMNS)])
    wide = wide_df.filter("id >= 75").select(wide_df.id, df.s)
    assert len(list(wide._jdf.inputFiles())) == 8 and len(wide.inputFiles()) == 1
    assert [tuple(r) for r in wide.orderBy("id").limit(2).collect()] == [(75, "s75"), (76, "s76")]
    sums = df.filter(F.col("k") == 1).groupBy(df.k).agg(F.sum(df.id).alias("t"))
    assert [tuple(r) for r in sums.collect()] == [(1, sum(i for i in range(80) if (i // 10) % 2 == 1))]
    # A condition on columns of two frames cannot be written by name: Spark's plain filter decides.
    joined = df.alias("a").join(df2.alias("b"), "id").filter(F.col("a.k") == F.col("b.k"))
    assert joined.count() == 80


def test_time_travel_frames_skip_within_their_own_snapshot(spark: Any, table: str, tmp_path: Path) -> None:
    v2 = spark.read.format("delta").option("versionAsOf", 2).load(table)
    assert v2.filter("id >= 75").count() == 0
    assert len(v2.filter("id >= 15").inputFiles()) == 2
    assert sorted(r.id for r in v2.filter("id >= 25").collect()) == [25, 26, 27, 28, 29]


def test_deletion_vectors_still_apply(spark: Any, tmp_path: Path) -> None:
    p = str(tmp_path / "dv")
    write(spark.range(0, 10, numPartitions=1), p, **{"delta.enableDeletionVectors": "true"})
    write(spark.range(10, 20, numPartitions=1), p, mode="append")
    DeltaTable.forPath(spark, p).delete("id IN (3, 4, 15)")
    assert deltalog.Table(p).snapshot().add_files().column("deletionVector").null_count == 0
    df = spark.read.format("delta").load(p).filter("id < 10")
    assert len(df.inputFiles()) == 1
    assert sorted(r.id for r in df.collect()) == [0, 1, 2, 5, 6, 7, 8, 9]


def test_column_mapping_and_deletion_vectors_of_a_corpus_table(spark: Any) -> None:
    path = CORPUS / "kernel-rs-golden" / "dv-with-columnmapping" / "delta"
    if not path.is_dir():
        pytest.skip("conformance corpus is not available")
    every = len(spark.read.format("delta").load(str(path)).inputFiles())
    for cond in ("col2 = 'foo3'", "col1 >= 45", "part = 3 AND col1 < 40"):
        got = spark.read.format("delta").load(str(path)).filter(cond)
        assert rows(got, "col1") == rows(_plain(spark, str(path)).filter(cond), "col1")
        assert 0 < len(got.inputFiles()) < every, cond


def test_condition_sql_of_columns(spark: Any) -> None:
    from pyspark.sql import functions as F

    from deltalog.spark.common.compat import COLUMN_NODES
    from deltalog.spark.reads.skipping import condition_sql

    cond = ((F.col("id") >= 3) & (F.col("s") == "it's") & ~F.col("k").isin(1, 2)
            & (F.col("d") == dt.date(2024, 2, 1)) & F.expr("a < 1") & F.col("x").isNull())
    assert condition_sql(cond) == ["(`id` >= 3)", "(`s` = 'it''s')", "(`k` NOT IN (1, 2))",
                                   "(`d` = DATE '2024-02-01')",
                                   "(a < 1)" if COLUMN_NODES else "(`a` < 1)"]  # 3.5 parses expr() at once
    assert condition_sql("id > 3") == ["id > 3"]
    assert condition_sql(spark.range(1).id > 3) is None
    assert condition_sql(42) is None


def test_portability_of_a_column_is_read_from_the_jvm_once(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a Column refers to a particular frame is found by walking its JVM tree (Py4J calls per node) once;
    asked again (as every aggregation of a Delta read asks twice), the answer is the Column's own."""
    from pyspark.sql import functions as F

    from deltalog.spark.reads import column_sql

    walks: list[str] = []
    real = column_sql._classic_portable

    def counting(node: Any) -> bool:
        walks.append(str(node))
        return real(node)

    monkeypatch.setattr(column_sql, "_classic_portable", counting)
    free, bound = F.sum("v"), spark.range(1).id > 3
    assert [column_sql.portable(free), column_sql.portable(bound)] == [True, False]
    n = len(walks)
    assert n >= 2 and [column_sql.portable(free), column_sql.portable(bound), column_sql.portable([free])] == \
        [True, False, True]
    assert len(walks) == n


def test_condition_sql_of_connect_columns() -> None:
    pytest.importorskip("grpc")
    from pyspark.sql.connect import functions as CF

    from deltalog.spark.reads.skipping import condition_sql

    cond = (CF.col("id") > 2.5) & CF.col("d").between(dt.date(2024, 1, 1), dt.date(2024, 1, 31)) & (
        CF.col("t.k") != 1) & CF.expr("k = 2")
    assert condition_sql(cond) == ["(id > 2.5)", "(d >= DATE '2024-01-01')", "(d <= DATE '2024-01-31')",
                                   "(k = 2)"]


def _chains(F: Any) -> dict[str, Any]:
    """Transformations before a filter, by name."""
    return {
        "select *": lambda df: df.select("*"),
        "select cols": lambda df: df.select("id", F.col("s"), "k"),
        "select list": lambda df: df.select(["id", "x"]),
        "withColumn other": lambda df: df.withColumn("y", F.col("id") * 2),
        "withColumn replaces id": lambda df: df.withColumn("id", F.col("id") + 100),
        "withColumns": lambda df: df.withColumns({"id": F.col("id") - 50, "z": F.lit(1)}),
        "rename x to id": lambda df: df.withColumnRenamed("id", "i").withColumnRenamed("x", "id"),
        "renamed map": lambda df: df.withColumnsRenamed({"id": "ident", "x": "id"}),
        "alias shadows id": lambda df: df.select((F.col("x") * 4).alias("id"), "k", "s"),
        "drop": lambda df: df.drop("x", F.col("d")),
        "filter then select": lambda df: df.filter("k = 1").select("id", "s"),
        "where twice": lambda df: df.where(F.col("id") >= 15).where("id < 60"),
    }


CHAIN_CONDITIONS = ["id >= 75", "id BETWEEN 12 AND 18", "id < 5 OR id > 70", "k = 0 AND id < 30"]


@pytest.mark.parametrize("cond", CHAIN_CONDITIONS)
def test_filters_after_other_transformations_give_the_plain_rows(spark: Any, table: str, cond: str) -> None:
    from pyspark.sql import functions as F

    for name, chain in _chains(F).items():
        try:
            want = chain(_plain(spark, table))
        except Exception as exc:  # Spark 3.5's withColumnsRenamed refuses renaming onto a name it renames away
            with pytest.raises(type(exc), match=re.escape(str(exc).split(".")[0])):
                chain(spark.read.format("delta").load(table))
            continue
        got = chain(spark.read.format("delta").load(table))
        assert "id" in got.columns, name
        assert sorted(map(str, got.filter(cond).collect())) == sorted(map(str, want.filter(cond).collect())), name


def test_filters_after_other_transformations_skip_files(spark: Any, table: str) -> None:
    from pyspark.sql import functions as F

    load = lambda: spark.read.format("delta").load(table)  # noqa: E731
    files = lambda df: len(df.inputFiles())  # noqa: E731
    assert files(load().select("id", "s").filter("id >= 75")) == 1
    assert files(load().select(F.col("id"), F.col("k")).filter(F.col("id") < 10)) == 1
    assert files(load().withColumn("y", F.col("id") * 2).filter("id >= 75")) == 1
    assert files(load().drop("x").filter("s = 's42'")) == 1
    assert files(load().filter("id >= 15").filter("id < 25")) == 2
    assert files(load().where("k = 1").select("id").where("id < 20")) == 1
    assert files(load().withColumnRenamed("s", "t").filter("id >= 75 AND t = 's76'")) == 1
    assert files(read(spark, table, columns=["id", "k"]).filter("id >= 75")) == 1
    assert files(read(spark, table, where="k = 0").select("id").filter("id < 10")) == 1
    # A changed or renamed column is not the table's column: its statistics do not apply.
    assert files(load().withColumn("id", F.col("id") + 100).filter("id >= 75")) == 8
    assert files(load().withColumnRenamed("id", "i").withColumnRenamed("x", "id").filter("id >= 30")) == 8
    assert files(load().select((F.col("x") * 4).alias("id"), "k").filter("id >= 75")) == 8
    # ... but conditions on the other, unchanged columns still do.
    assert files(load().withColumn("id", F.col("id") + 100).filter("id >= 75 AND s = 's03'")) == 1
    # Columns bound to a frame (df.id) are written by name where that plans the same.
    df = load()
    assert files(df.select(df.id, "s").filter("id >= 75")) == 1
    assert files(df.filter(df.id >= 70).filter("id < 75")) == 1


def test_bound_columns_are_written_by_name_only_where_spark_plans_them_the_same(spark: Any, table: str) -> None:
    from pyspark.sql import functions as F

    from deltalog.spark.common.compat import COLUMN_NODES
    from deltalog.spark.reads.rebind import rebound

    df = spark.read.format("delta").load(table)
    base = type(df).__mro__[1]

    def rewritten(method: str, *args: Any) -> tuple[Any, ...] | None:
        found = rebound(df, lambda a, k: getattr(base, method)(df, *a, **k), args, {})
        return None if found is None else found[0]

    for method, arg in [("filter", (df.s == "it's \\ 'x'") | (df.d >= dt.date(2024, 2, 1))),
                        ("filter", df.x.between(1.5, 2) & ~df["ID"].isin(3, 4) & df.s.isNotNull()),
                        ("filter", (df.id > F.col("k")) & F.expr("k < 2")),  # with unbound columns and SQL
                        ("select", F.upper(df.s).alias("u")), ("select", df.id.cast("string")),
                        ("orderBy", df.id.desc_nulls_first())]:
        got = rewritten(method, arg)
        assert got is not None, (method, arg)
        tree = str(got[0]._jc.node().getClass()) if COLUMN_NODES else str(got[0]._jc.expr().treeString())
        assert "ExpressionColumnNode" not in tree and "AttributeReference" not in tree, (method, arg)
    assert rebound(df, lambda a, k: base.groupBy(df, *a).count(), (df.k,), {})
    assert rebound(df, lambda a, k: df.groupBy("k").agg(*a), (F.countDistinct(df.id).alias("n"),), {})
    # Not by name: a column of another frame, a CASE, a user function; the frame is then Spark's own.
    other = spark.read.format("delta").load(table)
    assert rewritten("select", other.id) is None
    assert rewritten("select", F.when(df.id > 3, 1).alias("w")) is None
    assert rewritten("select", F.udf(lambda v: v)(df.id)) is None
    assert rewritten("filter", F.col("id") > 3) is None  # nothing bound: nothing to write


def test_a_filter_that_cannot_replay_falls_back_to_the_plain_filter(spark: Any, table: str) -> None:
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    loaded = spark.read.format("delta").load(table)
    with pytest.raises(AnalysisException, match="nope"):
        loaded.select("id").filter("nope > 1").collect()
    # A duplicated name stays ambiguous, as in Spark.
    with pytest.raises(AnalysisException, match=r"(?i)ambiguous"):
        loaded.select("id", F.col("x").alias("id")).filter("id > 3").collect()
