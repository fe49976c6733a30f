"""One table written alternately by deltalog and delta-rs, then checkpointed by each of them.

The table is partitioned by a column of every primitive type delta-rs can partition by (binary is
left out: delta-rs writes binary partition values as escaped text) and also holds a data column of
every type, all with nulls. Commits alternate between ``deltalog.write_table`` and delta-rs's
``write_deltalake`` -- appends, full overwrites and partition-predicate overwrites by each side -- and
after every commit both readers must return the same rows as the model kept here. Then deltalog
checkpoints and delta-rs must read the same from the checkpoint alone (a copy of the table without the
commits it covers), and the other way round.

Every delta-rs call runs in one spawned worker process (see ``deltars_worker``); the helpers defined
here for it rely on ``deltars_worker`` being imported (and with it ``deltalake``) before ``deltalog``
imports ``pyarrow.parquet``.
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import decimal
import json
import multiprocessing as mp
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import deltars_worker  # imports deltalake: must stay above deltalog (see the module docstring)
import pyarrow as pa
import pytest

import deltalog

UTC = dt.UTC

# Two non-null values per type (written in turns with null), chosen to survive delta-rs's partition
# value formatting (see test_deltars_write_read.py for the values it mangles).
TYPES: dict[str, tuple[pa.DataType, list[Any]]] = {
    "boolean": (pa.bool_(), [True, False]),
    "byte": (pa.int8(), [-128, 127]),
    "short": (pa.int16(), [-5, 32000]),
    "integer": (pa.int32(), [-(2**31), 2**31 - 1]),
    "long": (pa.int64(), [-(2**63), 2**63 - 1]),
    "float": (pa.float32(), [1.5, -0.25]),
    "double": (pa.float64(), [2.5, -1e10]),
    "decimal": (pa.decimal128(10, 2), [decimal.Decimal("12345678.91"), decimal.Decimal("3.10")]),
    "string": (pa.string(), ["a b/c=d%", "ü€"]),
    "binary": (pa.binary(), [b"ab", b"\x00\xff"]),
    "date": (pa.date32(), [dt.date(1969, 12, 31), dt.date(2024, 2, 29)]),
    "timestamp": (
        pa.timestamp("us", tz="UTC"),
        [dt.datetime(1960, 1, 1, 0, 0, 0, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, 12, 30, tzinfo=UTC)],
    ),
    "timestamp_ntz": (pa.timestamp("us"), [dt.datetime(2000, 1, 1, 1, 2, 3, 456789), dt.datetime(1900, 1, 1)]),
}
PARTITION_TYPES = [t for t in TYPES if t != "binary"]
PARTITION_BY = [f"p_{t}" for t in PARTITION_TYPES]
COLUMNS = ["id", *PARTITION_BY, *(f"d_{t}" for t in TYPES), "v"]

Row = dict[str, Any]


# ----------------------------------------------------------------------- delta-rs side (worker process)


def rs_overwrite_where(path: str, data: pa.Table, predicate: str) -> None:
    """``write_deltalake(mode="overwrite", predicate=...)``: replace only the rows matching ``predicate``."""
    import deltalake

    deltalake.write_deltalake(path, data, mode="overwrite", predicate=predicate)


def rs_checkpoint(path: str) -> int:
    """``DeltaTable.create_checkpoint()`` of the latest version; returns that version."""
    import deltalake

    table = deltalake.DeltaTable(path)
    table.create_checkpoint()
    return int(table.version())


@pytest.fixture(scope="module")
def rs() -> Iterator[cf.ProcessPoolExecutor]:
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        yield pool


def call(rs: cf.ProcessPoolExecutor, fn: Callable[..., Any], *args: Any) -> Any:
    return rs.submit(fn, *args).result(timeout=120)


# -------------------------------------------------------------------------------------------- helpers


def make(start: int, n: int, **fixed: Any) -> pa.Table:
    """``n`` rows with ids from ``start``; each column cycles through value0, null, value1 with its own
    phase, so rows mix values and nulls across columns. ``fixed`` pins columns to one value."""
    cols: dict[str, pa.Array] = {"id": pa.array(range(start, start + n), pa.int64())}
    for k, name in enumerate(TYPES):
        atype, (a, b) = TYPES[name]
        cycle = [a, None, b]
        for prefix, phase in (("p_", k), ("d_", k + 1)):
            col = prefix + name
            if prefix == "p_" and name == "binary":
                continue
            values = [fixed[col]] * n if col in fixed else [cycle[(i + phase) % 3] for i in range(start, start + n)]
            cols[col] = pa.array(values, atype)
    cols["v"] = pa.array([None if i % 4 == 3 else f"row {i}" for i in range(start, start + n)])
    return pa.table(cols).select(COLUMNS)


def rows(t: pa.Table) -> list[Row]:
    return sorted(t.select(COLUMNS).to_pylist(), key=lambda r: r["id"])


def ours(path: Path) -> pa.Table:
    return deltalog.Table(str(path)).snapshot().to_arrow()


def theirs(rs: cf.ProcessPoolExecutor, path: Path) -> pa.Table:
    result: pa.Table = call(rs, deltars_worker.read_table, str(path))
    return result


def assert_both_read(rs: cf.ProcessPoolExecutor, path: Path, expected: list[Row], version: int) -> None:
    mine = ours(path)
    assert mine.schema == make(0, 1).schema
    assert rows(mine) == expected, f"deltalog reads something else at version {version}"
    assert rows(theirs(rs, path)) == expected, f"delta-rs reads something else at version {version}"
    assert deltalog.Table(str(path)).latest_version() == version
    assert call(rs, deltars_worker.version, str(path)) == version


def without_commits(src: Path, dst: Path, upto: int) -> Path:
    """A copy of the table whose JSON commits up to ``upto`` are gone: only the checkpoint remains."""
    shutil.copytree(src, dst)
    for v in range(upto + 1):
        (dst / "_delta_log" / f"{v:020d}.json").unlink()
    return dst


# ---------------------------------------------------------------------------------------------- test


def test_alternating_writers_and_checkpoints(tmp_path: Path, rs: cf.ProcessPoolExecutor) -> None:
    path = tmp_path / "table"
    expected: list[Row] = []
    version = -1

    def ours_write(data: pa.Table, mode: str, **kw: Any) -> None:
        nonlocal version
        res = deltalog.write_table(path, data, mode=mode, **kw)
        assert res.version == version + 1
        version = res.version

    def rs_write(data: pa.Table, mode: str, predicate: str | None = None) -> None:
        nonlocal version
        if predicate is None:
            call(rs, deltars_worker.write, str(path), data, mode, PARTITION_BY)
        else:
            call(rs, rs_overwrite_where, str(path), data, predicate)
        version += 1

    def step(new: pa.Table, *, replace: Callable[[Row], bool] | None = None) -> None:
        nonlocal expected
        if replace is not None:
            kept = [r for r in expected if not replace(r)]
            assert len(kept) < len(expected), "the overwrite would replace nothing: the step proves nothing"
            expected = kept
        expected = sorted(expected + rows(new), key=lambda r: r["id"])
        assert_both_read(rs, path, expected, version)

    everything: Callable[[Row], bool] = lambda r: True  # noqa: E731

    # 0-1: ours creates the table, delta-rs appends
    data = make(0, 9)
    ours_write(data, "error", partition_by=PARTITION_BY)
    step(data)
    data = make(100, 7)
    rs_write(data, "append")
    step(data)
    # 2-3: ours appends, delta-rs overwrites everything
    data = make(200, 6)
    ours_write(data, "append")
    step(data)
    data = make(300, 8)
    rs_write(data, "overwrite")
    step(data, replace=everything)
    # 4-6: ours appends, delta-rs appends, ours overwrites everything
    data = make(400, 5)
    ours_write(data, "append")
    step(data)
    data = make(500, 6)
    rs_write(data, "append")
    step(data)
    data = make(600, 9)
    ours_write(data, "overwrite")
    step(data, replace=everything)
    # 7-9: delta-rs appends; each side replaces one partition value (replaceWhere)
    data = make(700, 6)
    rs_write(data, "append")
    step(data)
    long_max = TYPES["long"][1][1]
    data = make(800, 3, p_long=long_max)
    ours_write(data, "overwrite", predicate=[("p_long", "=", long_max)])
    step(data, replace=lambda r: r["p_long"] == long_max)
    int_min = TYPES["integer"][1][0]
    data = make(900, 4, p_integer=int_min)
    rs_write(data, "overwrite", predicate=f"p_integer = {int_min}")
    step(data, replace=lambda r: r["p_integer"] == int_min)
    # 10-11: ours appends (its post-commit hook checkpoints version 10), delta-rs appends
    data = make(1000, 5)
    ours_write(data, "append")
    step(data)
    assert (path / "_delta_log" / f"{10:020d}.checkpoint.parquet").exists()
    data = make(1100, 4)
    rs_write(data, "append")
    step(data)
    assert version == 11

    # our checkpoint of version 11: delta-rs reads it with and without the commits it covers
    result = deltalog.Table(str(path)).checkpoint()
    assert result.version == 11 and result.written
    assert rows(theirs(rs, path)) == expected
    bare = without_commits(path, tmp_path / "ours-checkpoint-only", 11)
    assert call(rs, deltars_worker.version, str(bare)) == 11
    assert rows(theirs(rs, bare)) == expected
    assert rows(ours(bare)) == expected

    # delta-rs keeps writing after our checkpoint, then checkpoints itself: we read its checkpoint
    data = make(1200, 5)
    rs_write(data, "append")
    step(data)
    assert call(rs, rs_checkpoint, str(path)) == 12
    snap = deltalog.Table(str(path)).snapshot()
    assert snap.version == 12 and snap.segment.checkpoint_version == 12
    assert rows(snap.to_arrow()) == expected
    bare = without_commits(path, tmp_path / "theirs-checkpoint-only", 12)
    snap = deltalog.Table(str(bare)).snapshot()
    assert snap.version == 12 and snap.segment.checkpoint_version == 12 and not snap.segment.commits
    assert rows(snap.to_arrow()) == expected
    assert rows(theirs(rs, bare)) == expected

    # and both keep writing on top of delta-rs's checkpoint
    data = make(1300, 4)
    ours_write(data, "append")
    step(data)
    data = make(1400, 3)
    rs_write(data, "append")
    step(data)
    assert version == 14
    assert writers(path) == list("ORORORORORORROR")


def writers(path: Path) -> list[str]:
    """Who wrote each commit, from its ``commitInfo``: ``O`` for deltalog, ``R`` for delta-rs."""
    out = []
    for f in sorted((path / "_delta_log").glob("*.json")):
        info = next(a["commitInfo"] for a in map(json.loads, f.read_text().splitlines()) if "commitInfo" in a)
        if str(info.get("engineInfo", "")).startswith("deltalog/"):
            out.append("O")
        elif str(info.get("clientVersion", "")).startswith("delta-rs"):
            out.append("R")
        else:
            out.append("?")
    return out
