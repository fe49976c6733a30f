"""UniForm kept up to date by every kernel writer: after each step of a seeded random sequence (appends,
partitioned appends with null / date / odd-character partition values, overwrites, replaceWhere, DELETE,
UPDATE, MERGE, OPTIMIZE, schema evolution, checkpoints and log cleanup) both independent Iceberg readers
(pyiceberg and DuckDB's iceberg extension) return exactly the rows deltalog's snapshot returns, and time
travel to each Iceberg snapshot returns the rows of the Delta version its summary names."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import random
import shutil
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.protocol.schema import PrimitiveType, StructField
from iceberg_readers import duckdb_rows, pyiceberg_rows, pyiceberg_table
from readers import sort_key

pytest.importorskip("pyiceberg")

UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}
PARTS = ["a", "b b", "x/y", "é=%", None]


def _batch(rnd: random.Random, start: int, n: int, names: dict[str, str], extra: bool) -> pa.Table:
    cols: dict[str, Any] = {
        "id": pa.array(range(start, start + n), pa.int64()),
        "part": pa.array([rnd.choice(PARTS) for _ in range(n)], pa.string()),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=rnd.randrange(3)) for _ in range(n)], pa.date32()),
        "ts": pa.array([dt.datetime(2024, 5, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=rnd.randrange(10**9))
                        for _ in range(n)], pa.timestamp("us", tz="UTC")),
        "amount": pa.array([decimal.Decimal(rnd.randrange(-5000, 5000)) / 100 for _ in range(n)], pa.decimal128(10, 2)),
        names["name"]: pa.array([rnd.choice(["x", "y" * 40, "zz", None]) for _ in range(n)], pa.string()),
    }
    if extra:
        cols["note"] = pa.array([rnd.choice(["n1", None]) for _ in range(n)], pa.string())
    return pa.table(cols)


def delta_rows(path: str, version: int | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    table = deltalog.Table(path).snapshot(version).to_arrow()
    columns = table.column_names
    rows = sorted(zip(*[table.column(c).to_pylist() for c in columns]), key=sort_key)
    return columns, [tuple(r) for r in rows]


def check_readers(path: str) -> None:
    columns, expected = delta_rows(path)
    assert pyiceberg_rows(path, columns) == expected
    assert duckdb_rows(path, columns) == expected


def test_random_sequence_both_iceberg_readers_match(tmp_path: Any) -> None:
    rnd = random.Random(56)
    path = str(tmp_path / "t")
    names = {"name": "name"}
    extra = False
    next_id = 0

    def batch(n: int) -> pa.Table:
        nonlocal next_id
        out = _batch(rnd, next_id, n, names, extra)
        next_id += n
        return out

    deltalog.write_table(path, batch(12), partition_by=["part", "day"], properties=UNIFORM)
    check_readers(path)
    table = deltalog.Table(path)
    steps = ["append", "append", "delete", "update", "replace_where", "merge", "add_column", "append",
             "rename", "optimize", "append", "checkpoint", "delete", "overwrite", "append"]
    for step in steps:
        if step == "append":
            deltalog.write_table(path, batch(rnd.randrange(1, 8)), mode="append")
        elif step == "delete":
            table.delete("amount < 0")
        elif step == "update":
            table.update_rows("part = 'a'", {"amount": decimal.Decimal("1.25")})
        elif step == "replace_where":
            data = batch(4).set_column(1, "part", pa.array(["b b"] * 4))
            deltalog.write_table(path, data, mode="overwrite", predicate="part = 'b b'")
        elif step == "merge":
            src = batch(3)
            (table.merge(src, "target.id = source.id").when_matched_update_all().when_not_matched_insert_all()
             .execute())
        elif step == "add_column":
            extra = True
            deltalog.write_table(path, batch(3), mode="append", schema_mode="merge")
        elif step == "rename":
            table.rename_column(names["name"], "label")
            names["name"] = "label"
        elif step == "optimize":
            table.compact()
        elif step == "checkpoint":
            table.checkpoint()
        elif step == "overwrite":
            deltalog.write_table(path, batch(5), mode="overwrite")
        check_readers(path)

    # time travel: every Iceberg snapshot reads as the Delta version its summary names
    iceberg = pyiceberg_table(path)
    snapshots = iceberg.metadata.snapshots
    assert len(snapshots) >= len(steps) - 2  # one per commit that changed files
    for snap in snapshots:
        version = int(snap.summary["delta-version"])
        columns, expected = delta_rows(path, version)
        assert pyiceberg_rows(path, columns, snapshot_id=snap.snapshot_id) == expected, version
    last = snapshots[len(snapshots) // 2]
    columns, expected = delta_rows(path, int(last.summary["delta-version"]))
    assert duckdb_rows(path, columns, snapshot_id=last.snapshot_id) == expected
    assert iceberg.metadata.properties["delta-version"] == str(table.latest_version())
    assert str(iceberg.metadata.table_uuid) == table.snapshot().metadata.id


def test_timestamp_and_date_partitions(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    ts = [dt.datetime(2024, 1, 1, 12, 30, 15, 123456, tzinfo=dt.UTC), None,
          dt.datetime(1969, 12, 31, 23, 59, tzinfo=dt.UTC)]
    data = pa.table({"id": [1, 2, 3], "t": pa.array(ts, pa.timestamp("us", tz="UTC")),
                     "d": pa.array([dt.date(2020, 2, 29), dt.date(1960, 1, 1), None], pa.date32())})
    deltalog.write_table(path, data, partition_by=["t", "d"], properties=UNIFORM)
    check_readers(path)
    assert pyiceberg_rows(path, ["id"], row_filter="d = '2020-02-29'") == [(1,)]


def test_edge_filters_count_the_same_rows(tmp_path: Any) -> None:
    """The largest timestamp of a file (stats keep milliseconds), a long string (stats keep a prefix) and
    negative decimals: filters at those edges find the same rows in the Iceberg readers as in deltalog."""
    path = str(tmp_path / "t")
    big = dt.datetime(2024, 3, 1, 10, 0, 0, 999_999, tzinfo=dt.UTC)
    long_a, long_b = "k" * 40 + "a", "k" * 40 + "b"
    data = pa.table({
        "ts": pa.array([dt.datetime(2024, 3, 1, tzinfo=dt.UTC), big], pa.timestamp("us", tz="UTC")),
        "s": [long_a, long_b],
        "dec": pa.array([decimal.Decimal("-12.34"), decimal.Decimal("-0.01")], pa.decimal128(6, 2)),
    })
    deltalog.write_table(path, data, properties=UNIFORM)
    snap = deltalog.Table(path).snapshot()
    cases = [
        ("ts >= '2024-03-01T10:00:00.999999+00:00'", "ts >= TIMESTAMPTZ '2024-03-01 10:00:00.999999+00'", 1),
        ("ts > '2024-03-01T10:00:00.999500+00:00'", "ts > TIMESTAMPTZ '2024-03-01 10:00:00.9995+00'", 1),
        (f"s = '{long_b}'", f"s = '{long_b}'", 1),
        (f"s > '{long_a}'", f"s > '{long_a}'", 1),
        ("dec < -12", "dec < -12", 1),
        ("dec >= -0.01", "dec >= -0.01", 1),
        ("dec < -20", "dec < -20", 0),
    ]
    for ice, sql, count in cases:
        assert snap.to_arrow(filter=sql.replace("TIMESTAMPTZ ", "")).num_rows == count, sql
        assert len(pyiceberg_rows(path, ["s"], row_filter=ice)) == count, ice
        assert len(duckdb_rows(path, ["s"], where=sql)) == count, sql


def test_metadata_only_commit_keeps_the_snapshot(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1, 2]}), properties=UNIFORM)
    before = pyiceberg_table(path).metadata
    deltalog.Table(path).set_properties({"owner": "team"})
    after = pyiceberg_table(path).metadata
    assert after.current_snapshot_id == before.current_snapshot_id
    assert after.properties["owner"] == "team" and after.properties["delta-version"] == "1"
    deltalog.Table(path).add_columns([StructField("c", PrimitiveType("string"), True, {})])
    after = pyiceberg_table(path).metadata
    assert after.current_snapshot_id == before.current_snapshot_id
    assert [f.name for f in after.schema().fields] == ["id", "c"]
    check_readers(path)


def test_fell_behind_catches_up_from_the_log_or_rebuilds(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    meta = os.path.join(path, "metadata")
    deltalog.write_table(path, pa.table({"id": [1]}), properties=UNIFORM)
    saved = str(tmp_path / "saved")
    shutil.copytree(meta, saved)
    deltalog.write_table(path, pa.table({"id": [2]}), mode="append")
    deltalog.write_table(path, pa.table({"id": [3]}), mode="append")
    # another writer committed without the Iceberg step: the metadata is back at Delta version 0
    shutil.rmtree(meta)
    shutil.copytree(saved, meta)
    deltalog.write_table(path, pa.table({"id": [4]}), mode="append")
    md = pyiceberg_table(path).metadata
    assert [s.summary["delta-version"] for s in md.snapshots] == ["0", "1", "2", "3"]  # incremental, one each
    check_readers(path)
    # the log was cleaned up: rebuilt from the snapshot
    shutil.rmtree(meta)
    shutil.copytree(saved, meta)
    table = deltalog.Table(path)
    table.checkpoint()
    for name in ("00000000000000000001.json", "00000000000000000002.json"):
        os.remove(os.path.join(path, "_delta_log", name))
    result = deltalog.uniform.sync(path)
    assert result.mode == "rebuilt" and result.converted_version == 3
    check_readers(path)


def test_nested_types_and_dropped_column(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    data = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "s": pa.array([{"a": 1, "b": "x"}, None, {"a": 3, "b": None}],
                      pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "l": pa.array([[1, 2], [], [3]], pa.list_(pa.int64())),
        "m": pa.array([[("k", 1)], [("j", 2), ("k", 3)], []], pa.map_(pa.string(), pa.int64())),
        "gone": ["g1", "g2", "g3"],
    })
    deltalog.write_table(path, data, properties=UNIFORM)
    table = deltalog.Table(path)
    table.drop_column("gone")
    deltalog.write_table(path, data.drop_columns(["gone"]).slice(0, 1), mode="append")
    columns, expected = delta_rows(path)
    assert columns == ["id", "s", "l", "m"]

    def norm(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:  # maps as sorted pairs
        return sorted(((i, s, lst, sorted(dict(m).items()) if m is not None else None) for i, s, lst, m in rows),
                      key=lambda r: (r[0], str(r)))

    assert norm(duckdb_rows(path, columns)) == norm(expected)
    assert norm(pyiceberg_rows(path, columns)) == norm(expected)
    schema = pyiceberg_table(path).metadata.schema()
    assert [f.name for f in schema.fields] == ["id", "s", "l", "m"]


def test_type_widening_int_to_long(tmp_path: Any) -> None:
    """Older files keep their int bounds (4 bytes); both readers prune the widened column correctly."""
    path = str(tmp_path / "t")
    props = {**UNIFORM, "delta.enableTypeWidening": "true"}
    deltalog.write_table(path, pa.table({"x": pa.array([1, 5], pa.int32())}), properties=props)
    deltalog.Table(path).set_column_type("x", "long")
    deltalog.write_table(path, pa.table({"x": pa.array([2**40], pa.int64())}), mode="append")
    assert pyiceberg_table(path).metadata.schema().find_field("x").field_type == pa_long()
    assert pyiceberg_rows(path, ["x"], row_filter="x > 3") == [(5,), (2**40,)]
    assert duckdb_rows(path, ["x"], where="x > 3") == [(5,), (2**40,)]
    check_readers(path)


def pa_long() -> Any:
    from pyiceberg.types import LongType

    return LongType()


def test_restore_and_clones(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    deltalog.write_table(path, pa.table({"id": [1, 2]}), properties=UNIFORM)
    deltalog.write_table(path, pa.table({"id": [3]}), mode="overwrite")
    table = deltalog.Table(path)
    table.restore(version=0)  # the first file comes back
    check_readers(path)
    assert pyiceberg_rows(path, ["id"]) == [(1,), (2,)]
    for shallow in (True, False):
        target = str(tmp_path / f"clone-{shallow}")
        table.clone(target, shallow=shallow)  # the clone has UniForm too: its own Iceberg metadata
        assert pyiceberg_table(target).metadata.location == target
        check_readers(target)
