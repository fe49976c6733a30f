"""Liquid clustering in the kernel: the ``delta.clustering`` domain written on create and by
``Table.cluster_by`` (``CLUSTER BY NONE`` too), delta-spark's rules for clustering columns (nothing
committed when refused), a clustering column cannot be dropped, and two concurrent ``CLUSTER BY`` changes
conflict; the tables read the same in DuckDB and delta-rs."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.commands.clustering import clustering_of
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.features import writer_features
from readers import delta_rs_rows, duckdb_rows


def _data(start: int = 0, n: int = 4) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "day": [f"2024-05-0{1 + i % 3}" for i in range(start, start + n)],
                     "tags": pa.array([{"a": 1}] * n, pa.map_(pa.string(), pa.int64()))})


def test_create_change_and_remove_clustering(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, _data(), cluster_by=["day"])
    table = deltalog.Table(path)
    snap = table.snapshot()
    assert {"clustering", "domainMetadata"} <= writer_features(snap.protocol)
    assert json.loads(snap.domains["delta.clustering"]) == {"clusteringColumns": [["day"]]}
    deltalog.write_table(path, _data(4, 2), mode="append", cluster_by=["DAY"])  # the same columns: fine
    table.cluster_by(["id", "day"])
    assert clustering_of(table.snapshot()) == ["id", "day"]
    params = table.history(limit=1)[0]["operationParameters"]
    assert (table.history(limit=1)[0]["operation"], params) == (
        "CLUSTER BY", {"oldClusteringColumns": "day", "newClusteringColumns": "id,day"})
    table.cluster_by(None)  # CLUSTER BY NONE keeps the domain, empty
    assert clustering_of(table.snapshot()) == [] and "delta.clustering" in table.snapshot().domains
    want = sorted((i, f"2024-05-0{1 + i % 3}") for i in range(6))
    assert duckdb_rows(path, ["id", "day"]) == want and delta_rs_rows(path, ["id", "day"]) == want


def test_clustering_rules(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match="CLUSTER_BY_WITH_PARTITIONED_BY"):
        deltalog.write_table(path, _data(), cluster_by=["id"], partition_by=["day"])
    with pytest.raises(InvalidArgumentError, match="COLUMN_NOT_FOUND"):
        deltalog.write_table(path, _data(), cluster_by=["nope"])
    with pytest.raises(InvalidArgumentError, match="no min/max statistics"):
        deltalog.write_table(path, _data(), cluster_by=["tags"])
    with pytest.raises(InvalidArgumentError, match="at most 4"):
        deltalog.write_table(path, _data(), cluster_by=["id", "day", "id", "day", "id"])
    assert not Path(path, "_delta_log").exists()
    deltalog.write_table(path, _data(), properties={"delta.dataSkippingNumIndexedCols": "1"})
    table = deltalog.Table(path)
    with pytest.raises(InvalidArgumentError, match="not among the columns statistics are collected for"):
        table.cluster_by(["day"])
    with pytest.raises(InvalidArgumentError, match="CLUSTERING_COLUMNS_MISMATCH"):
        deltalog.write_table(path, _data(), mode="append", cluster_by=["id"])
    assert table.latest_version() == 0
    parted = str(tmp_path / "p")
    deltalog.write_table(parted, _data(), partition_by=["day"])
    with pytest.raises(InvalidArgumentError, match="partitioned"):
        deltalog.Table(parted).cluster_by(["id"])


def test_clustering_column_cannot_be_dropped(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, _data(), cluster_by=["day"], properties={"delta.columnMapping.mode": "name"})
    table = deltalog.Table(path)
    with pytest.raises(InvalidArgumentError, match="DROP_CLUSTERING_COLUMN"):
        table.drop_column("day")
    table.rename_column("day", "date")  # physical names are kept: the clustering follows the rename
    assert clustering_of(table.snapshot()) == ["date"]
    table.drop_column("tags")
    assert table.snapshot().schema.field_names == ["id", "date"]


def test_concurrent_clustering_changes_conflict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalog.txn.conflicts import MetadataChangedException
    from deltalog.txn.transaction import Transaction

    path = str(tmp_path / "t")
    deltalog.write_table(path, _data(), cluster_by=["day"])
    commit = Transaction.commit
    raced: list[int] = []

    def other_first(self: Transaction, *args: object, **kwargs: object) -> object:
        if not raced:
            raced.append(1)
            deltalog.Table(path).cluster_by(["id"])
        return commit(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Transaction, "commit", other_first)
    with pytest.raises(MetadataChangedException, match=r"delta\.clustering"):
        deltalog.Table(path).cluster_by(["day", "id"])
    monkeypatch.undo()
    assert clustering_of(deltalog.Table(path).snapshot()) == ["id"]
