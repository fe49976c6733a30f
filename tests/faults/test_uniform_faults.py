"""The crash and fault sweep over UniForm's Iceberg writes (issue 56, item 6): an append to a UniForm table
writes the data file, the commit, the checksum and then the Iceberg manifest, manifest list, metadata JSON and
version hint. A fault at each of those steps (kill, torn write, interrupt, disk full, I/O error; see
``faultkit``) leaves a table that deltalog and delta-rs read at the old or the new version, and that pyiceberg
opens from its path, reading exactly the rows of the Delta version its metadata says it holds; the next
commit brings the Iceberg metadata up to the latest version."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import faultkit
import pyarrow as pa
import pytest

import deltalog

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

EVERY = os.environ.get("DELTALOG_FAULTS", "").strip().lower() == "all"
UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}


def _data(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "part": ["a" if i % 2 else "b" for i in ids],
                     "x": [i / 4 for i in ids]})


def _setup(root: str) -> None:
    path = os.path.join(root, "t")
    deltalog.write_table(path, _data(range(10)), partition_by=["part"], properties=UNIFORM)
    deltalog.write_table(path, _data(range(10, 20)), mode="append")


def _append(root: str) -> None:
    deltalog.write_table(os.path.join(root, "t"), _data(range(50, 56)), mode="append")


def _iceberg_problems(path: str) -> list[str]:
    """pyiceberg opens the table from its path and reads the rows of the Delta version it names."""
    from pyiceberg.table import StaticTable

    try:
        table = StaticTable.from_metadata(path)
        version = int(table.metadata.properties["delta-version"])
        got = faultkit.rows_of(table.scan().to_arrow())
    except Exception as exc:
        return [f"pyiceberg cannot read the table: {type(exc).__name__}: {exc}"]
    want = faultkit.rows_of(deltalog.Table(path).snapshot(version).to_arrow())
    return [] if got == want else [f"pyiceberg reads other rows than Delta version {version}"]


@pytest.fixture(scope="module")
def rs() -> Iterator[object]:
    with faultkit.deltars_worker() as pool:
        yield pool


def test_uniform_append_fault_sweep(tmp_path: Path, rs: object) -> None:
    # every case starts from a table written in its own place (the Iceberg metadata holds absolute locations)
    # delta-rs's rows of a column-mapped table keep the physical names: compare its version only
    scenario = faultkit.Scenario("uniform append", _setup, _append, deltars_rows=False)
    reference = str(tmp_path / "reference")
    _setup(reference)
    path = os.path.join(reference, "t")
    old_version = deltalog.Table(path).latest_version()
    ref = faultkit.run_child(lambda: _append(reference), faultkit.FaultOps())
    assert ref["outcome"] == "ok", ref
    points = ref["points"]
    expected = faultkit.versions_rows(path, old_version)
    assert max(expected) == old_version + 1
    assert not _iceberg_problems(path)
    iceberg_steps = [k for k, name in enumerate(points) if name in ("write_new", "replace", "link")]
    assert len(iceberg_steps) >= 4  # the data file, the commit, ... and the Iceberg files after them
    failures = []
    cases = faultkit.cases_for(points, EVERY)
    for k, phase, mode in cases:
        root = str(tmp_path / f"case-{k}-{phase}-{mode}")
        _setup(root)
        case_path = os.path.join(root, "t")
        result = faultkit.run_child(lambda r=root: _append(r), faultkit.FaultOps((k, phase), mode))  # type: ignore[misc]
        case = f"{mode} {phase} step {k} ({points[k]})"
        failures += [f"{case}: {p}" for p in _iceberg_problems(case_path)]
        # deltalog, delta-rs, deltalog check and the next append (which catches the Iceberg metadata up)
        failures += [f"{case}: {p}" for p in
                     faultkit.verify(scenario, root, result, mode, old_version, expected, rs)]  # type: ignore[arg-type]
        latest = deltalog.Table(case_path).snapshot()
        from pyiceberg.table import StaticTable

        ice = StaticTable.from_metadata(case_path)
        if ice.metadata.properties.get("delta-version") != str(latest.version):
            failures.append(f"{case}: the next commit left the Iceberg metadata behind")
        elif faultkit.rows_of(ice.scan().to_arrow()) != faultkit.rows_of(latest.to_arrow()):
            failures.append(f"{case}: after the next commit pyiceberg reads other rows than deltalog")
        shutil.rmtree(root, ignore_errors=True)
    assert len(cases) >= len(points)
    assert not failures, f"{len(failures)} problems in {len(cases)} cases:\n" + "\n".join(failures[:12])
