"""CLONE (shallow and deep) and CONVERT with a partition schema, in the kernel (no Spark)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.commands.clone import clone_table
from deltalog.commands.convert import PartitionLayoutError, convert_to_delta
from deltalog.commands.vacuum import vacuum
from deltalog.errors import DeltaError, InvalidArgumentError

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"


def rows(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def data(ids: list[int], part: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [part] * len(ids), "v": [float(i) for i in ids]})


def source(root: Path, *, dvs: bool = False) -> deltalog.Table:
    """v0: ids 0-9 in p=a and p=b c; v1: ids 10-14 in p=a; v2 (DV tables: a DELETE with DVs)."""
    props = {"delta.enableDeletionVectors": "true"} if dvs else None
    deltalog.write_table(str(root), data(list(range(5)), "a"), partition_by=["p"], properties=props)
    deltalog.write_table(str(root), data(list(range(5, 10)), "b c"), mode="append")
    deltalog.write_table(str(root), data(list(range(10, 15)), "a"), mode="append")
    table = deltalog.Table(str(root))
    if dvs:
        table.delete([("id", "in", [1, 6, 12])])
    return table


def clone_of(source: deltalog.Table | Path, target: deltalog.Table | Path, **options: Any) -> Any:
    """``clone_table`` of two tables (paths opened as tables)."""
    def table(t: deltalog.Table | Path) -> deltalog.Table:
        return t if isinstance(t, deltalog.Table) else deltalog.Table(str(t))

    return clone_table(table(source), table(target), **options)


def test_clone_table_takes_tables_not_paths(tmp_path: Path) -> None:
    src = source(tmp_path / "src")
    with pytest.raises(TypeError, match=r"clone target must be a table \(deltalog.Table\('.*c'\)\), not a path"):
        clone_table(src, tmp_path / "c")  # type: ignore[arg-type]
    assert not (tmp_path / "c").exists()
    assert src.clone(tmp_path / "c", shallow=True).source_version == 2  # the facade opens a path target


def log(root: Path, version: int) -> list[dict[str, Any]]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def adds(root: Path, version: int = 0) -> list[dict[str, Any]]:
    return [a["add"] for a in log(root, version) if "add" in a]


def user_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


@pytest.mark.parametrize("shallow", [True, False])
def test_clone_at_a_version_has_the_source_rows_then(tmp_path: Path, shallow: bool) -> None:
    src = source(tmp_path / "src")
    res = clone_of(src, tmp_path / "c", shallow=shallow, version=1)
    clone = deltalog.Table(str(tmp_path / "c"))
    assert res.version == 0 and res.source_version == 1 and res.is_shallow is shallow
    assert rows(clone.snapshot().to_arrow()) == rows(src.snapshot(1).to_arrow())
    assert clone.snapshot().partition_columns == ("p",)
    assert clone.snapshot().metadata.id != src.snapshot().metadata.id
    # The source is untouched: its log and every version read as before.
    assert src.latest_version() == 2 and rows(src.snapshot(0).to_arrow()) == rows(data(list(range(5)), "a"))
    entry = clone.history()[0]
    assert entry["operation"] == "CLONE"
    assert entry["operationParameters"] == {"source": f"delta.`{src.location}`", "sourceVersion": 1}
    metrics = entry["operationMetrics"]
    size = sum(src.snapshot(1).add_files().column("size").to_pylist())
    assert metrics["sourceNumOfFiles"] == "2" and metrics["sourceTableSize"] == str(size)
    assert metrics["numCopiedFiles"] == ("0" if shallow else "2")
    assert metrics["copiedFilesSize"] == ("0" if shallow else str(size))
    paths = [a["path"] for a in adds(tmp_path / "c")]
    if shallow:
        assert all(p.startswith("file:///") and "/src/" in p for p in paths)
        assert user_files(tmp_path / "c") == set()
        assert any("p=b%20c/" in p for p in paths)  # encoded as URIs
    else:
        assert not any(p.startswith(("file:", "/")) for p in paths)
        assert user_files(tmp_path / "c") == {unquote(a["path"]) for a in adds(tmp_path / "c")}
        # Byte for byte: the stats of the source still describe the copies.
        assert sorted(a["stats"] for a in adds(tmp_path / "c")) == sorted(
            src.snapshot(1).add_files().column("stats").to_pylist())


def test_clone_at_a_timestamp(tmp_path: Path) -> None:
    src = source(tmp_path / "src")
    commit_ms = (tmp_path / "src" / "_delta_log" / f"{0:020d}.json").stat().st_mtime_ns // 1_000_000
    res = src.clone(tmp_path / "c", shallow=True, timestamp=commit_ms)  # time travel uses file times here
    assert res.source_version == 0
    assert rows(deltalog.Table(str(tmp_path / "c")).snapshot().to_arrow()) == rows(data(list(range(5)), "a"))


@pytest.mark.parametrize("shallow", [True, False])
def test_clone_of_a_table_with_deletion_vectors(tmp_path: Path, shallow: bool) -> None:
    src = source(tmp_path / "src", dvs=True)
    assert src.snapshot().add_files().column("deletionVector").null_count < src.snapshot().num_files()
    clone_of(src, tmp_path / "c", shallow=shallow)
    clone = deltalog.Table(str(tmp_path / "c")).snapshot()
    assert rows(clone.to_arrow()) == rows(src.snapshot().to_arrow())
    assert sorted(r["id"] for r in clone.to_arrow().to_pylist()) == [i for i in range(15) if i not in (1, 6, 12)]
    assert clone.has_feature("deletionVectors")
    dvs = [a["deletionVector"] for a in adds(tmp_path / "c") if a.get("deletionVector")]
    on_disk = [d for d in dvs if d["storageType"] != "i"]
    if shallow:
        assert all(d["storageType"] == "p" and d["pathOrInlineDv"].startswith("file:///") for d in on_disk)
    else:
        assert all(d["storageType"] in ("u", "i") for d in dvs)
        assert any(n.endswith(".bin") for n in user_files(tmp_path / "c")) == bool(on_disk)
        shutil.rmtree(tmp_path / "src")  # a deep clone needs nothing of its source
        assert sorted(r["id"] for r in deltalog.Table(str(tmp_path / "c")).snapshot().to_arrow().to_pylist()) == [
            i for i in range(15) if i not in (1, 6, 12)]


def test_writes_to_a_shallow_clone_stay_in_the_clone(tmp_path: Path) -> None:
    src = source(tmp_path / "src")
    before = user_files(tmp_path / "src")
    clone_of(src, tmp_path / "c", shallow=True)
    c = str(tmp_path / "c")
    deltalog.write_table(c, data([100, 101], "z"), mode="append")
    deltalog.Table(c).delete([("p", "=", "a")])  # removes files of the source from the clone only
    assert sorted(r["id"] for r in deltalog.Table(c).snapshot().to_arrow().to_pylist()) == [5, 6, 7, 8, 9, 100, 101]
    new = [a["path"] for a in adds(tmp_path / "c", 1)]
    assert new and not any(p.startswith(("file:", "/")) for p in new)
    assert user_files(tmp_path / "src") == before and src.latest_version() == 2
    # VACUUM of the clone with no retention never deletes the source's files (they are not its to delete).
    res = vacuum(deltalog.Table(c), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert all(not p.startswith("..") for p in res.files_deleted)
    assert user_files(tmp_path / "src") == before
    assert rows(src.snapshot().to_arrow()) == rows(src.snapshot(2).to_arrow())
    assert deltalog.Table(c).snapshot().to_arrow().num_rows == 7


def test_deep_clone_survives_the_source_and_renames_clashing_files(tmp_path: Path) -> None:
    src = source(tmp_path / "src")
    clone_of(src, tmp_path / "shallow", shallow=True)
    clone_of(tmp_path / "shallow", tmp_path / "deep")  # a deep clone of a shallow clone: absolute paths
    shutil.rmtree(tmp_path / "src")
    deep = deltalog.Table(str(tmp_path / "deep")).snapshot()
    assert sorted(r["id"] for r in deep.to_arrow().to_pylist()) == list(range(15))
    assert len(user_files(tmp_path / "deep")) == 3


def test_replace_and_refusals_leave_the_target_unchanged(tmp_path: Path) -> None:
    src = source(tmp_path / "src")
    t = tmp_path / "t"
    deltalog.write_table(str(t), pa.table({"x": [1]}))
    old_id = deltalog.Table(str(t)).snapshot().metadata.id
    with pytest.raises(InvalidArgumentError, match=r"already holds a Delta table.*replace=True"):
        clone_of(src, t, shallow=True)
    assert deltalog.Table(str(t)).latest_version() == 0
    res = clone_of(src, t, shallow=True, replace=True, properties={"delta.logRetentionDuration": "interval 2 days"})
    snap = deltalog.Table(str(t)).snapshot()
    assert res.version == 1 and res.num_removed_files == 1 and res.removed_files_size > 0
    assert snap.metadata.id == old_id and snap.properties["delta.logRetentionDuration"] == "interval 2 days"
    assert snap.schema.field_names == ["id", "p", "v"]
    assert rows(snap.to_arrow()) == rows(src.snapshot().to_arrow())
    assert deltalog.Table(str(t)).snapshot(0).to_arrow().to_pylist() == [{"x": 1}]

    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("x")
    with pytest.raises(InvalidArgumentError, match="not empty"):
        clone_of(src, tmp_path / "junk", shallow=True)
    assert not (tmp_path / "junk" / "_delta_log").exists()
    with pytest.raises(InvalidArgumentError, match="same location or one lies inside"):
        clone_of(src, tmp_path / "src" / "inner", shallow=True)
    with pytest.raises(InvalidArgumentError, match="same location"):
        clone_of(src, tmp_path / "src", shallow=True, replace=True)


def test_a_failed_deep_copy_commits_nothing_and_leaves_no_files(tmp_path: Path) -> None:
    src = source(tmp_path / "src")
    victim = src.snapshot().add_files().column("path").to_pylist()[-1].replace("%20", " ")
    os.remove(tmp_path / "src" / victim)
    with pytest.raises(DeltaError, match="could not copy"):
        clone_of(src, tmp_path / "c", max_workers=1)
    assert not (tmp_path / "c" / "_delta_log").exists()
    assert not (tmp_path / "c").exists() or user_files(tmp_path / "c") == set()


def test_clone_carries_column_mapping_over(tmp_path: Path) -> None:
    rel = CORPUS / "kernel-rs-golden" / "table-with-columnmapping-mode-name" / "delta"
    if not rel.is_dir():
        pytest.skip("conformance corpus is not available")
    src = deltalog.Table(str(rel))
    for shallow in (True, False):
        target = tmp_path / ("s" if shallow else "d")
        clone_of(src, target, shallow=shallow)
        snap = deltalog.Table(str(target)).snapshot()
        assert snap.column_mapping_mode == "name"
        expected = src.snapshot().to_arrow()
        got = snap.to_arrow()
        assert sorted(got.to_pylist(), key=repr) == sorted(expected.to_pylist(), key=repr)


# ------------------------------------------------------------------------------------------- convert


def parquet_dir(root: Path) -> Path:
    for day, ids in (("2024-01-01", [1, 2]), ("2024-01-02", [3])):
        d = root / f"day={day}"
        d.mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), d / "part-0.parquet")
    return root


def test_convert_with_a_partition_schema(tmp_path: Path) -> None:
    root = parquet_dir(tmp_path / "raw")
    res = convert_to_delta(root, partition_schema={"day": "string"}, collect_stats=False)
    snap = deltalog.Table(str(root)).snapshot()
    assert res.partition_types == {"day": "string"} and snap.schema.field("day").type.name == "string"
    assert all(s is None for s in snap.add_files().column("stats").to_pylist())
    entry = deltalog.Table(str(root)).history()[0]
    assert entry["operation"] == "CONVERT"
    assert entry["operationParameters"] == {"numFiles": 2, "partitionedBy": '["day"]', "collectStats": False,
                                            "sourceFormat": "parquet"}


@pytest.mark.parametrize(
    ("schema", "message"),
    [({"hour": "integer"}, r"names \['hour'\], but the directories are partitioned by \['day'\]"),
     ({}, "no partition schema was given"),
     ({"day": "integer"}, "is not a valid integer")],
)
def test_convert_refuses_a_layout_that_does_not_match(tmp_path: Path, schema: dict[str, str], message: str) -> None:
    root = parquet_dir(tmp_path / "raw")
    with pytest.raises((PartitionLayoutError, InvalidArgumentError), match=message):
        convert_to_delta(root, partition_schema=schema)
    assert not (root / "_delta_log").exists()


def test_convert_refuses_other_files_when_asked(tmp_path: Path) -> None:
    root = parquet_dir(tmp_path / "raw")
    (root / "day=2024-01-01" / "notes.txt").write_text("x")
    with pytest.raises(InvalidArgumentError, match=r"1 file\(s\) are not parquet files \(day=2024-01-01/notes.txt"):
        convert_to_delta(root, allow_other_files=False)
    (root / "day=2024-01-01" / "notes.txt").unlink()
    (root / "day=2024-01-01" / "bad.parquet").write_text("not parquet")
    with pytest.raises(InvalidArgumentError, match=r"bad\.parquet is not a readable parquet file"):
        convert_to_delta(root)
    assert not (root / "_delta_log").exists()
