"""deltalog and delta-rs writing the same table on S3 (moto) and Azure (azurite), in turns: each reads the
other's commits and checkpoints, with the same storage options."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
import deltars_worker  # imports deltalake before pyarrow.parquet (see its docstring)

import deltalog

pytestmark = pytest.mark.objectstore
pytest.importorskip("deltalake")


@pytest.fixture(scope="module")
def rs(azurite: Any, moto_server: Any) -> Iterator[cf.ProcessPoolExecutor]:
    """The delta-rs worker, spawned after the emulators so it inherits their environment."""
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        yield pool


@pytest.fixture(params=["s3", "azure"])
def remote(request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    location, options = request.getfixturevalue(f"{request.param}_table")
    return location, options


def row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64()), "who": ["deltalog" if i % 2 == 0 else "delta-rs"]})


def both_read(rs: cf.ProcessPoolExecutor, uri: str, opts: dict[str, str], n: int) -> None:
    ours = deltalog.Table(uri, storage_options=opts).snapshot()
    assert sorted(ours.to_arrow().column("id").to_pylist()) == list(range(n))
    version, rows = rs.submit(deltars_worker.read_remote, uri, opts).result(timeout=120)
    assert version == ours.version and sorted(r["id"] for r in rows) == list(range(n))


def test_deltalog_and_delta_rs_take_turns(rs: Any, remote: tuple[str, dict[str, str]]) -> None:
    uri, opts = remote
    deltalog.write_table(uri, row(0), storage_options=opts)
    for i in range(1, 9):
        if i % 2:
            rs.submit(deltars_worker.append_remote, uri, opts, row(i)).result(timeout=120)
        else:
            deltalog.write_table(uri, row(i), mode="append", storage_options=opts)
        both_read(rs, uri, opts, i + 1)
        if i == 3:
            assert rs.submit(deltars_worker.checkpoint_remote, uri, opts).result(timeout=120) == 3
        if i == 6:
            assert deltalog.Table(uri, storage_options=opts).checkpoint().version == 6
    names = [f.name for f in deltalog.Table(uri, storage_options=opts).store.list_dir("_delta_log")]
    assert f"{3:020d}.checkpoint.parquet" in names and f"{6:020d}.checkpoint.parquet" in names
    # a fresh reader of each side starts from the newest checkpoint (deltalog's, written after delta-rs's)
    assert deltalog.Table(uri, storage_options=opts).snapshot().version == 8
