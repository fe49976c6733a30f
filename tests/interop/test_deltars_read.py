"""Tables written by delta-rs (`deltalake`) must read through deltalog exactly as delta-rs reads them."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog

deltalake = pytest.importorskip("deltalake", reason="deltalake (delta-rs) is a test dependency")

N = 12


def _data(offset: int) -> pa.Table:
    """Every primitive type, with a null in each column (row 0)."""
    ids = list(range(offset, offset + N))

    def nulled(values: list[object]) -> list[object]:
        return [None, *values[1:]]

    utc = dt.UTC
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "byte": pa.array(nulled([i % 3 - 1 for i in ids]), pa.int8()),
            "short": pa.array(nulled([i % 4 for i in ids]), pa.int16()),
            "int": pa.array(nulled([i % 5 for i in ids]), pa.int32()),
            "long": pa.array(nulled([i % 2 * 10**12 for i in ids]), pa.int64()),
            "float": pa.array(nulled([float(i % 3) / 2 for i in ids]), pa.float32()),
            "double": pa.array(nulled([i % 3 * 0.25 for i in ids]), pa.float64()),
            "string": pa.array(nulled([["a", "b c", "ä/=%"][i % 3] for i in ids]), pa.string()),
            "bool": pa.array(nulled([i % 2 == 0 for i in ids]), pa.bool_()),
            "date": pa.array(nulled([dt.date(2024, 1, 1 + i % 3) for i in ids]), pa.date32()),
            "ts": pa.array(
                nulled([dt.datetime(2024, 1, 1, i % 3, 30, tzinfo=utc) for i in ids]), pa.timestamp("us", "UTC")
            ),
            "dec": pa.array(nulled([decimal.Decimal(f"{i % 3}.25") for i in ids]), pa.decimal128(10, 2)),
            "bin": pa.array(nulled([bytes([i % 3]) for i in ids]), pa.binary()),
        }
    )


def _rows(t: pa.Table) -> list[tuple[object, ...]]:
    """Rows as tuples of sorted columns, ordered by the unique ``id``."""
    cols = sorted(t.column_names)
    return [tuple(r[c] for c in cols) for r in t.sort_by("id").select(cols).to_pylist()]


def _same(path: Path) -> None:
    theirs = deltalake.DeltaTable(str(path)).to_pyarrow_table()
    ours = deltalog.Table(path).snapshot().to_arrow()
    assert sorted(ours.column_names) == sorted(theirs.column_names)
    # compare as Python values after casting to our (the Delta schema's) types
    theirs = theirs.select(ours.column_names).cast(ours.schema)
    assert _rows(ours) == _rows(theirs)


# delta-rs refuses to partition by binary and float columns and warns that boolean partitions are
# unusual; every other primitive type is covered, each with a null partition.
PARTITION_COLUMNS = ["byte", "short", "int", "long", "double", "string", "bool", "date", "ts", "dec"]


@pytest.mark.parametrize("partition", [None, *PARTITION_COLUMNS])
def test_partitioned_by_every_primitive_type(tmp_path: Path, partition: str | None) -> None:
    path = tmp_path / "t"
    kw = {"partition_by": [partition]} if partition else {}
    deltalake.write_deltalake(str(path), _data(0), **kw)
    deltalake.write_deltalake(str(path), _data(100), mode="append", **kw)
    _same(path)
    snap = deltalog.Table(path).snapshot()
    assert snap.version == 1
    assert snap.partition_columns == ((partition,) if partition else ())
    assert deltalog.Table(path).snapshot(version=0).to_arrow().num_rows == N


def test_overwrite_checkpoint_and_more_commits(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for i in range(3):
        deltalake.write_deltalake(str(path), _data(i * 100), partition_by=["string"], mode="append")
    deltalake.write_deltalake(str(path), _data(1000), partition_by=["string"], mode="overwrite")
    deltalake.DeltaTable(str(path)).create_checkpoint()
    deltalake.write_deltalake(str(path), _data(2000), partition_by=["string"], mode="append")
    snap = deltalog.Table(path).snapshot()
    assert snap.segment.checkpoint_version == 3
    assert snap.version == 4
    _same(path)
    assert deltalog.Table(path).snapshot(version=2).to_arrow().num_rows == 3 * N
    assert [h["operation"] for h in deltalog.Table(path).history()][:2] == ["WRITE", "WRITE"]


def test_filters_prune_partitions_and_skip_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalake.write_deltalake(str(path), _data(0), partition_by=["int"])
    deltalake.write_deltalake(str(path), _data(100), partition_by=["int"], mode="append")
    snap = deltalog.Table(path).snapshot()
    got = snap.to_arrow(filter=[("int", "=", 2)])
    assert sorted(got.column("id").to_pylist()) == [
        i for i in [*range(N), *range(100, 100 + N)] if i % 5 == 2 and i not in (0, 100)
    ]
    got = snap.to_arrow(columns=["id"], filter=[("id", ">=", 105)])
    assert got.column_names == ["id"]
    assert sorted(got.column("id").to_pylist()) == list(range(105, 100 + N))
    from deltalog.data.filters import normalize_filter, prune_files

    conds, _ = normalize_filter([("id", ">=", 105)], snap.schema, table="t")
    assert prune_files(snap, conds).num_rows < snap.num_files()  # min/max skipping dropped files
