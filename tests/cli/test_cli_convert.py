"""``deltalog convert``: a parquet directory becomes a Delta table in one commit."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from conftest import Run
from deltalog.cli import EXIT_DELTA_ERROR, EXIT_OK
from deltalog.commands.convert import PartitionLayoutError, convert_to_delta, infer_partition_type, partition_layout

CLI = Callable[..., Run]


def write(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def hive_dir(root: Path) -> Path:
    """day=<date>/hour=<int>/part-N.parquet plus a _SUCCESS marker and a null partition."""
    write(root / "day=2024-01-01" / "hour=1" / "part-0.parquet", pa.table({"id": [1, 2], "v": [0.5, math.nan]}))
    write(root / "day=2024-01-01" / "hour=02" / "part-1.parquet", pa.table({"id": [3], "v": [1.5]}))
    write(root / "day=2024-01-02" / "hour=__HIVE_DEFAULT_PARTITION__" / "part-2.parquet",
          pa.table({"id": [4], "v": [None]}, schema=pa.schema([("id", pa.int64()), ("v", pa.float64())])))
    (root / "_SUCCESS").write_text("")
    (root / "notes.txt").write_text("not data")
    (root / "day=2024-01-01" / ".part-0.parquet.crc").write_text("")
    return root


def test_convert_partitioned_directory(cli: CLI, tmp_path: Path) -> None:
    root = hive_dir(tmp_path / "raw")
    r = cli("convert", str(root), "--json")
    assert r.code == EXIT_OK, r.err
    doc = r.json()
    assert doc["version"] == 0 and doc["num_files"] == 3 and doc["num_rows"] == 4
    assert doc["partition_columns"] == ["day", "hour"]
    assert doc["partition_types"] == {"day": "date", "hour": "integer"}
    assert doc["skipped_files"] == 1  # notes.txt; hidden files (_SUCCESS, .crc) are not counted
    snap = deltalog.Table(root).snapshot()
    assert snap.schema.field_names == ["id", "v", "day", "hour"]
    rows = sorted(snap.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["hour"]) for r in rows] == [(1, 1), (2, 1), (3, 2), (4, None)]
    assert str(rows[0]["day"]) == "2024-01-01"
    files = {f["path"]: f for f in cli("files", str(root), "--json").json()}
    assert files["day=2024-01-01/hour=02/part-1.parquet"]["partition_values"] == {"day": "2024-01-01", "hour": "2"}
    assert deltalog.Table(root).history()[0]["operation"] == "CONVERT"
    assert cli("check", str(root)).code == EXIT_OK


def test_stats_come_from_footers_without_float_bounds(tmp_path: Path) -> None:
    root = hive_dir(tmp_path / "raw")
    convert_to_delta(root)
    stats = {r["path"]: r["stats"] for r in deltalog.Table(root).snapshot().add_files().to_pylist()}
    s = stats["day=2024-01-01/hour=1/part-0.parquet"]
    assert '"numRecords":2' in s and '"minValues":{"id":1}' in s and '"nullCount":{"id":0,"v":0}' in s


def test_partition_type_override_and_properties(cli: CLI, tmp_path: Path) -> None:
    root = hive_dir(tmp_path / "raw")
    r = cli("convert", str(root), "--partition-type", "hour=string", "--property", "delta.appendOnly=true",
            "--name", "events", "--json")
    assert r.code == EXIT_OK, r.err
    assert r.json()["partition_types"]["hour"] == "string"
    snap = deltalog.Table(root).snapshot()
    assert snap.properties["delta.appendOnly"] == "true" and snap.metadata.name == "events"
    values = {dict(pv)["hour"] for pv in snap.add_files().column("partitionValues").to_pylist()}
    assert values == {"1", "02", None}


def test_unpartitioned_directory_and_rich_output(cli: CLI, tmp_path: Path) -> None:
    root = tmp_path / "flat"
    write(root / "a.parquet", pa.table({"x": ["a"]}))
    write(root / "b.parquet", pa.table({"x": ["b"], "y": [1]}))  # schemas merge
    r = cli("convert", str(root))
    assert r.code == EXIT_OK, r.err
    assert "not partitioned" in r.out
    assert deltalog.Table(root).snapshot().schema.field_names == ["x", "y"]


def test_refusals(cli: CLI, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed"
    write(mixed / "a=1" / "x.parquet", pa.table({"x": [1]}))
    write(mixed / "y.parquet", pa.table({"x": [1]}))
    r = cli("convert", str(mixed))
    assert r.code == EXIT_DELTA_ERROR and "partitioned differently" in r.err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no parquet files" in cli("convert", str(empty)).err
    clash = tmp_path / "clash"
    write(clash / "a.parquet", pa.table({"x": [1]}))
    write(clash / "b.parquet", pa.table({"x": ["one"]}))
    assert cli("convert", str(clash)).code == EXIT_DELTA_ERROR
    good = tmp_path / "good"
    write(good / "a.parquet", pa.table({"x": [1]}))
    assert cli("convert", str(good)).code == EXIT_OK
    again = cli("convert", str(good))
    assert again.code == EXIT_DELTA_ERROR and "already a Delta table" in again.err
    assert cli("convert", str(tmp_path / "nope")).code == EXIT_DELTA_ERROR


def test_delta_rs_reads_the_converted_table(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = hive_dir(tmp_path / "raw")
    convert_to_delta(root)
    # os._exit: delta-rs's runtime may abort at interpreter exit ("terminate called without an active
    # exception"), after the answer was printed (see tests/interop/deltars_worker.py).
    code = (
        "import deltalake, os, sys; t = deltalake.DeltaTable(sys.argv[1]).to_pyarrow_table(); "
        "print(t.num_rows, sorted(t.column_names), flush=True); os._exit(0)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "4"


@pytest.mark.parametrize(
    ("values", "expected"),
    [(["1", "-2"], "integer"), (["3000000000"], "long"), (["1.5", "2"], "double"), (["2024-02-29"], "date"),
     (["2024-02-30"], "string"), (["nan"], "string"), ([None, None], "string"), (["a1"], "string"),
     (["1_000"], "string"), (["1e3", "-.5"], "double")],
)
def test_infer_partition_type(values: list[str | None], expected: str) -> None:
    assert infer_partition_type(values) == expected


def test_partition_layout_unescapes() -> None:
    cols, values = partition_layout(["k%3Dx=a%2Fb/f.parquet"])
    assert cols == ("k=x",) and values == [{"k=x": "a/b"}]
    with pytest.raises(PartitionLayoutError):
        partition_layout(["notkv/f.parquet"])
