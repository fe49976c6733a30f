"""The crash and fault sweep of the kernel's operations (see ``faultkit``).

``make test`` runs a deterministic sample that visits every mutation step of every operation with one
fault each; ``make test-faults`` (``DELTALOG_FAULTS=all``) runs every fault at every step, before and
after it. ``DELTALOG_FAULTS_REPORT=<file>`` appends each scenario's counts as a JSON line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import faultkit
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.commands.convert import convert_to_delta

pytest.importorskip("deltalake")

EVERY = os.environ.get("DELTALOG_FAULTS", "").strip().lower() == "all"
DAY_S = 24 * 3600


def data(ids: range | list[int], part: str | None = None) -> pa.Table:
    ids = list(ids)
    parts = [part if part is not None else ("a" if i % 2 else "b") for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "part": parts, "x": [i / 4 for i in ids]})


def t(root: str) -> str:
    return os.path.join(root, "t")


def created(root: str, *, partitioned: bool = False, commits: int = 2, **props: str) -> None:
    deltalog.write_table(t(root), data(range(10)), partition_by=["part"] if partitioned else None,
                         properties=props or None)
    for c in range(1, commits):
        deltalog.write_table(t(root), data(range(10 * c, 10 * c + 10)), mode="append")


def backdate(path: str, seconds: float) -> None:
    """Make every file below ``path`` look ``seconds`` old."""
    then = time.time() - seconds
    for folder, _, names in os.walk(path):
        for name in names:
            os.utime(os.path.join(folder, name), (then, then))


def setup_cleanup(root: str) -> None:
    created(root, commits=3, **{"delta.checkpointInterval": "3", "delta.logRetentionDuration": "interval 1 days"})
    deltalog.Table(t(root)).checkpoint()  # version 2
    backdate(os.path.join(t(root), "_delta_log"), 3 * DAY_S)


def setup_vacuum(root: str) -> None:
    created(root)
    deltalog.write_table(t(root), data(range(5)), mode="overwrite")
    backdate(t(root), 3 * DAY_S)


def setup_convert(root: str) -> None:
    os.makedirs(t(root))
    pq.write_table(data(range(6)), os.path.join(t(root), "part-0.parquet"))
    pq.write_table(data(range(6, 9)), os.path.join(t(root), "part-1.parquet"))


def nothing(root: str) -> None:
    os.makedirs(root, exist_ok=True)


SCATTERED = list(range(0, 900, 3))  # ~300 scattered rows: a deletion vector too large to inline

SCENARIOS = [
    faultkit.Scenario("create", nothing, lambda r: deltalog.write_table(t(r), data(range(6)), mode="error")),
    faultkit.Scenario("append", created, lambda r: deltalog.write_table(t(r), data(range(50, 56)), mode="append")),
    faultkit.Scenario(
        "partitioned append",
        lambda r: created(r, partitioned=True),
        lambda r: deltalog.write_table(t(r), data(range(50, 56)), mode="append"),
    ),
    faultkit.Scenario("overwrite", created, lambda r: deltalog.write_table(t(r), data(range(3)), mode="overwrite")),
    faultkit.Scenario(
        "replaceWhere",
        lambda r: created(r, partitioned=True),
        lambda r: deltalog.write_table(t(r), data(range(100, 104), part="a"), mode="overwrite",
                                       predicate=[("part", "=", "a")]),
    ),
    faultkit.Scenario(
        "append with checkpoint",
        lambda r: created(r, **{"delta.checkpointInterval": "2"}),
        lambda r: deltalog.write_table(t(r), data(range(50, 53)), mode="append"),
    ),
    faultkit.Scenario(
        "append with log cleanup",
        setup_cleanup,
        lambda r: deltalog.write_table(t(r), data(range(50, 53)), mode="append"),
    ),
    faultkit.Scenario("checkpoint", created, lambda r: deltalog.Table(t(r)).checkpoint()),
    faultkit.Scenario("delete", created, lambda r: deltalog.Table(t(r)).delete([("id", "<", 3)])),
    faultkit.Scenario(
        "delete with deletion vectors",
        lambda r: deltalog.write_table(t(r), data(range(1000)), properties={"delta.enableDeletionVectors": "true"}),
        lambda r: deltalog.Table(t(r)).delete(pc.field("id").isin(SCATTERED)),
        deltars_rows=False,
    ),
    faultkit.Scenario(
        "vacuum",
        setup_vacuum,
        lambda r: deltalog.Table(t(r)).vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False),
    ),
    faultkit.Scenario("restore", created, lambda r: deltalog.Table(t(r)).restore(version=0)),
    faultkit.Scenario(
        "deep clone",
        created,
        lambda r: deltalog.Table(t(r)).clone(os.path.join(r, "dst"), shallow=False),
        table="dst",
    ),
    faultkit.Scenario("convert", setup_convert, lambda r: convert_to_delta(t(r))),
    faultkit.Scenario(
        "update (change data feed)",
        lambda r: created(r, **{"delta.enableChangeDataFeed": "true"}),
        lambda r: deltalog.Table(t(r)).update_rows("id % 3 = 0", {"x": deltalog.sql_expr("x * 2")}),
    ),
    faultkit.Scenario(
        "merge",
        created,
        lambda r: deltalog.Table(t(r)).merge(data([1, 2, 40, 41]), "target.id = source.id")
        .when_matched_update_all().when_not_matched_insert_all().when_not_matched_by_source_delete("target.id > 15")
        .execute(),
    ),
    faultkit.Scenario(
        "overwrite rows (data-column predicate)",
        created,
        lambda r: deltalog.write_table(t(r), data([2, 3]), mode="overwrite", predicate="id < 4"),
    ),
    faultkit.Scenario(
        "create table",
        nothing,
        lambda r: deltalog.create_table(t(r), data(range(1)).schema, partition_by=["part"],
                                        properties={"delta.appendOnly": "false", "team": "etl"}),
    ),
    faultkit.Scenario("compact", lambda r: created(r, commits=4), lambda r: deltalog.Table(t(r)).compact()),
    faultkit.Scenario("add constraint", created, lambda r: deltalog.Table(t(r)).add_constraint("pos", "id >= 0")),
    faultkit.Scenario(
        "set properties", created, lambda r: deltalog.Table(t(r)).set_properties({"owner": "etl"}),
    ),
    faultkit.Scenario(  # three commits: protocol, the ids of the files, the property
        "enable row tracking (backfill)",
        created,
        lambda r: deltalog.Table(t(r)).set_properties({"delta.enableRowTracking": "true"}),
    ),
]


@pytest.fixture(scope="module")
def rs() -> Iterator[object]:
    with faultkit.deltars_worker() as pool:
        yield pool


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_fault_sweep(scenario: faultkit.Scenario, tmp_path: Path, rs: object) -> None:
    report = faultkit.sweep(scenario, str(tmp_path), rs, every=EVERY)  # type: ignore[arg-type]
    faultkit.record(report, EVERY)
    assert report.cases >= len(report.points)
    shown = "\n".join(f"- {f.case}: {f.problem}" for f in report.failures[:12])
    assert not report.failures, f"{len(report.failures)} of {report.cases} cases failed:\n{shown}"
