"""V2 checkpoints written (``v2Checkpoint``): a table created with ``delta.checkpointPolicy=v2`` gets
UUID-named checkpoints (parquet or JSON top level) whose file actions live in ``_delta_log/_sidecars``;
the table reads the same from the checkpoint alone, by deltalog and by DuckDB's delta extension. Spark's
own V2 table takes appends and checkpoints. ``delta.checkpointPolicy=classic`` on such a table writes a
classic-named checkpoint with ``checkpointMetadata``.

Not delta-rs: its reader (1.6) refuses tables with the ``v2Checkpoint`` reader feature."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.log.checkpoint_writer import write_checkpoint
from deltalog.log.cleanup import cleanup_expired_logs
from readers import duckdb_rows

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"


def _ids(path: str) -> list[int]:
    return sorted(deltalog.Table(path).snapshot().to_arrow().column("id").to_pylist())


def _only_checkpoint(path: str, tmp: Path) -> str:
    """A copy of the table without the commits the checkpoint replaces: readers must use it."""
    copy = tmp / "from-checkpoint"
    shutil.copytree(path, copy)
    version = json.loads((copy / "_delta_log" / "_last_checkpoint").read_text())["version"]
    for commit in (copy / "_delta_log").glob("*.json"):
        if commit.stem.isdigit() and int(commit.stem) <= version:
            commit.unlink()
    return str(copy)


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_v2_checkpoint_with_sidecars(tmp_path: Path, fmt: str) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0, 1]}), properties={"delta.checkpointPolicy": "v2"})
    snap = deltalog.Table(path).snapshot()
    assert "v2Checkpoint" in (snap.protocol.readerFeatures or ()) and (snap.protocol.minReaderVersion,
                                                                         snap.protocol.minWriterVersion) == (3, 7)
    for i in range(2, 6):
        deltalog.write_table(path, pa.table({"id": [i]}), mode="append")
    deltalog.Table(path).delete([("id", "=", 0)])  # a remove tombstone goes to a sidecar too
    result = write_checkpoint(deltalog.Table(path).snapshot(), v2_format=fmt, part_size=3)
    top, *sidecars = result.paths
    assert top.endswith(f".{fmt}") and ".checkpoint." in top and len(sidecars) == 2  # 5 adds + 1 remove, 3 per sidecar
    assert all(p.startswith("_delta_log/_sidecars/") for p in sidecars)
    if fmt == "parquet":
        kinds = pq.read_table(Path(path) / top).column_names
    else:
        kinds = [next(iter(json.loads(line))) for line in (Path(path) / top).read_text().splitlines()]
    assert {"checkpointMetadata", "protocol", "metaData", "sidecar"} <= set(kinds) and "add" not in kinds
    assert pq.read_table(Path(path) / sidecars[0]).column_names == ["add", "remove"]
    deltalog.write_table(path, pa.table({"id": [9]}), mode="append")
    want = [1, 2, 3, 4, 5, 9]
    assert _ids(path) == want
    alone = _only_checkpoint(path, tmp_path)
    assert _ids(alone) == want and [r[0] for r in duckdb_rows(alone, ["id"])] == want
    again = write_checkpoint(deltalog.Table(path).snapshot(version=result.version))
    assert not again.written and again.paths == (top,)  # one checkpoint per version is enough


def test_cleanup_keeps_referenced_sidecars(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0]}), properties={"delta.checkpointPolicy": "v2"})
    first = deltalog.Table(path).checkpoint()
    deltalog.write_table(path, pa.table({"id": [1]}), mode="append")
    second = deltalog.Table(path).checkpoint()
    far = 10**13  # every file is past any retention
    cleanup_expired_logs(deltalog.Table(path), retention="interval 1 day", clock=lambda: far)
    left = {str(p.relative_to(path)) for p in Path(path, "_delta_log").rglob("*") if p.is_file()}
    assert set(second.paths) <= left and not set(first.paths) & left
    assert _ids(path) == [0, 1]


def test_append_and_checkpoint_spark_v2_table(tmp_path: Path) -> None:
    source = CORPUS / "kernel-rs-data" / "v2-checkpoints-parquet-with-sidecars"
    if not source.is_dir():
        pytest.skip("the conformance corpus is not beside this checkout")
    path = str(tmp_path / "t")
    shutil.copytree(source, path)
    before = _ids(path)
    deltalog.write_table(path, pa.table({"id": pa.array([-1, -2], pa.int64())}), mode="append")
    result = deltalog.Table(path).checkpoint()
    assert ".checkpoint." in result.paths[0] and result.paths[0].endswith(".parquet")
    want = sorted([*before, -1, -2])
    alone = _only_checkpoint(path, tmp_path)
    assert _ids(alone) == want and [r[0] for r in duckdb_rows(alone, ["id"])] == want


def test_classic_policy_on_a_v2_table(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [0]}), properties={"delta.checkpointPolicy": "v2"})
    table = deltalog.Table(path)
    table.set_properties({"delta.checkpointPolicy": "classic"})
    result = table.checkpoint()
    assert result.paths == ("_delta_log/00000000000000000001.checkpoint.parquet",)
    assert "checkpointMetadata" in pq.read_table(Path(path) / result.paths[0]).column_names
    assert "v2Checkpoint" in (table.snapshot().protocol.writerFeatures or ())  # features are never dropped here
    assert _ids(_only_checkpoint(path, tmp_path)) == [0]
