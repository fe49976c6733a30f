"""The fault sweep (``tests/faults/faultkit.py``) on S3 (moto): interrupts, failing requests and lost
responses before and after every mutating obstore call of each operation. A lost response after a
successful put of the commit file is where an object store can turn "committed" into "failed"."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
import faultkit

import deltalog

pytestmark = pytest.mark.objectstore
pytest.importorskip("deltalake")
EVERY = os.environ.get("DELTALOG_FAULTS", "").strip().lower() == "all"


@pytest.fixture(scope="module")
def rs(moto_server: Any) -> Iterator[cf.ProcessPoolExecutor]:
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        yield pool


def data(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "part": ["a" if i % 2 else "b" for i in ids],
                     "x": [i / 4 for i in ids]})


def scenarios(opts: dict[str, str]) -> list[faultkit.Scenario]:
    def t(root: str) -> str:
        return root + "/t"

    def created(root: str, **props: str) -> None:
        deltalog.write_table(t(root), data(range(10)), properties=props or None, storage_options=opts)
        deltalog.write_table(t(root), data(range(10, 20)), mode="append", storage_options=opts)

    def vacuum_setup(root: str) -> None:
        created(root)
        deltalog.write_table(t(root), data(range(3)), mode="overwrite", storage_options=opts)

    def table(root: str) -> deltalog.Table:
        return deltalog.Table(t(root), storage_options=opts)

    return [
        faultkit.Scenario("s3 create", lambda r: None,
                          lambda r: deltalog.write_table(t(r), data(range(5)), storage_options=opts), options=opts),
        faultkit.Scenario("s3 append", created,
                          lambda r: deltalog.write_table(t(r), data(range(50, 53)), mode="append",
                                                         storage_options=opts), options=opts),
        faultkit.Scenario("s3 append with checkpoint", lambda r: created(r, **{"delta.checkpointInterval": "2"}),
                          lambda r: deltalog.write_table(t(r), data(range(50, 53)), mode="append",
                                                         storage_options=opts), options=opts),
        faultkit.Scenario("s3 delete with deletion vectors",
                          lambda r: created(r, **{"delta.enableDeletionVectors": "true"}),
                          lambda r: table(r).delete(pc.field("id").isin(list(range(0, 20, 3)))),
                          options=opts, deltars_rows=False),
        faultkit.Scenario("s3 vacuum", vacuum_setup,
                          lambda r: table(r).vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False),
                          options=opts),
    ]


def test_object_store_operations_survive_every_fault(moto_server: Any, rs: Any) -> None:
    import emulators

    opts = dict(moto_server.options)
    failures: list[str] = []
    for scenario in scenarios(opts):
        bucket = emulators.new_bucket(moto_server)
        report = faultkit.sweep(
            scenario, "", rs, every=EVERY, runner=faultkit.run_inline, modes=faultkit.OBJECT_MODES,
            injector=faultkit.ObstoreFaults, fresh=lambda name, b=bucket: f"s3://{b}/{name}-{uuid.uuid4().hex[:6]}",
        )
        faultkit.record(report, EVERY, runner="s3")
        assert report.cases >= len(report.points) > 0
        failures += [f"{scenario.name}: {f.case}: {f.problem}" for f in report.failures]
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:12])
