"""Liquid clustering through Spark: ``DeltaTable.create(...).clusterBy``, ``df.write.clusterBy``, SQL
``CREATE TABLE ... CLUSTER BY`` / ``ALTER TABLE ... CLUSTER BY [NONE]`` and ``OPTIMIZE [FULL]``, which
clusters the files not yet clustered by the clustering columns and marks them ``clusteringProvider =
liquid``; ``ZORDER BY`` is refused on a clustered table. Read back the same by DuckDB's delta extension."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import deltalog
from deltalog.commands.clustering import clustering_of

pytestmark = pytest.mark.spark


def _providers(path: str) -> list[str | None]:
    return sorted(deltalog.Table(path).snapshot().add_files().column("clusteringProvider").to_pylist(),
                  key=lambda p: p or "")


def test_liquid_clustering_workflow(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark import DeltaTable
    from readers import duckdb_rows

    path = str(tmp_path / "c")
    DeltaTable.create(spark).location(path).addColumn("id", "bigint").addColumn("k", "string") \
        .clusterBy("k").execute()
    for i in range(3):
        spark.range(i * 100, i * 100 + 100).selectExpr("id", "CAST(id % 7 AS STRING) AS k") \
            .write.format("delta").mode("append").save(path)
    assert DeltaTable.forPath(spark, path).detail().first()["clusteringColumns"] == ["k"]
    with pytest.raises(Exception, match="CLUSTERING_WITH_ZORDER_BY"):
        DeltaTable.forPath(spark, path).optimize().executeZOrderBy("id")
    before = deltalog.Table(path).snapshot().num_files()
    assert set(_providers(path)) == {None}  # appends are not clustered
    metrics = spark.sql(f"OPTIMIZE delta.`{path}`").first()["metrics"]
    assert metrics["numFilesRemoved"] == before and set(_providers(path)) == {"liquid"}
    last = deltalog.Table(path).history(limit=1)[0]
    assert last["operation"] == "OPTIMIZE" and last["operationParameters"]["clusterBy"] == '["k"]'
    spark.range(300, 310).selectExpr("id", "'x' AS k").coalesce(1).write.format("delta").mode("append").save(path)
    spark.sql(f"OPTIMIZE delta.`{path}`")  # incremental: only the new file is clustered
    assert deltalog.Table(path).history(limit=1)[0]["operationMetrics"]["numRemovedFiles"] == "1"
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY (id)")
    spark.sql(f"OPTIMIZE delta.`{path}` FULL")  # every file re-clustered by the new columns
    assert clustering_of(deltalog.Table(path).snapshot()) == ["id"] and set(_providers(path)) == {"liquid"}
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert len(rows) == 310 and duckdb_rows(path, ["id", "k"]) == rows
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY NONE")
    assert clustering_of(deltalog.Table(path).snapshot()) == []

    written = str(tmp_path / "w")
    spark.range(5).selectExpr("id", "id * 2 AS v").write.format("delta").clusterBy("v").save(written)
    assert clustering_of(deltalog.Table(written).snapshot()) == ["v"]
    made = str(tmp_path / "s")
    spark.sql(f"CREATE TABLE delta.`{made}` (a INT, b STRING) USING DELTA CLUSTER BY (b, a)")
    assert clustering_of(deltalog.Table(made).snapshot()) == ["b", "a"]
    with pytest.raises(Exception, match="CLUSTER_BY_WITH_PARTITIONED_BY"):
        spark.sql(f"CREATE TABLE delta.`{tmp_path / 'bad'}` (a INT, b STRING) USING DELTA PARTITIONED BY (a) "
                  "CLUSTER BY (b)")


def test_optimize_clusters_by_a_nested_field(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "n")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, s STRUCT<a: BIGINT, b: STRING>) USING DELTA CLUSTER BY (s.a)")
    for i in range(3):  # each append spans the whole range of s.a
        spark.range(0, 300, 1, 1).selectExpr("id", f"named_struct('a', (id * 7 + {i}) % 300, 'b', 'x') AS s") \
            .write.format("delta").mode("append").save(path)
    assert clustering_of(deltalog.Table(path).snapshot()) == ["s.a"]
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", "4000")
    try:
        spark.sql(f"OPTIMIZE {t}")
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    files = deltalog.Table(path).snapshot().add_files().to_pylist()
    assert len(files) > 1 and {f["clusteringProvider"] for f in files} == {"liquid"}
    bounds = sorted((json.loads(f["stats"])["minValues"]["s"]["a"], json.loads(f["stats"])["maxValues"]["s"]["a"])
                    for f in files)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(bounds))  # clustered: s.a ranges do not overlap
    assert spark.read.format("delta").load(path).count() == 900
