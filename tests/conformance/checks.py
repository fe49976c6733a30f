"""Checks one conformance table against every fact EXPECTED.json states about it.

Shared by the pytest suite (``test_conformance.py``) and ``scripts/conformance_report.py``, which writes
``docs/conformance.md``. The corpus lives outside the repository at ``../shared/conformance``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

import deltalog
from deltalog.errors import (
    CorruptLogError,
    DeletionVectorError,
    DeltaError,
    InvalidTableError,
    TableNotFoundError,
    UnsupportedFeatureError,
)

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"

#: What kind of deltalog error each upstream ``error_kind`` must produce.
ERROR_KINDS: dict[str, type[DeltaError]] = {
    "no _delta_log": TableNotFoundError,
    "no commits (only a malformed .crc)": TableNotFoundError,
    "missing metadata": InvalidTableError,
    "missing metadata (in checkpoint)": InvalidTableError,
    "missing protocol": InvalidTableError,
    "missing protocol (in checkpoint)": InvalidTableError,
    "invalid metadata (no schemaString)": InvalidTableError,
    "non-contiguous versions": InvalidTableError,
    "unsupported reader version": UnsupportedFeatureError,
    "unresolvable deletion vector path (template placeholder)": DeletionVectorError,
}


#: Upstream answers that disagree with the protocol, with the adjustment the test makes and why.
#: data-reader-partition-values: its expected/ parquet was written by Spark with the session zone
#: America/Los_Angeles, so the zone-less partition value "2021-09-08 11:11:11" appears as 18:11:11 UTC.
#: deltalog (like Delta Kernel and kernel-rs) reads zone-less partition timestamps as UTC, the only
#: reading a table alone supports; the expected column is shifted back by PDT's 7 hours to compare.
EXPECTED_ADJUSTMENTS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "kernel-rs-golden/data-reader-partition-values/delta": {
        "as_timestamp": lambda micros: None if micros is None else micros - 7 * 3600 * 1_000_000,
    },
}


#: The reader features deltalog still refuses: a table may be refused for one of these only (``geospatial``
#: tables, e.g. kernel-rs-data/table-with-geo, are read since geometry and geography columns are supported).
REFUSED_FEATURES = {"catalogManaged"}


#: Tables whose ``.crc`` contradicts their log. deltalog verifies checksums by default and must report
#: the corruption (naming the .crc file); with ``verify_checksums=False`` the log-derived facts must hold.
#: crc-full is a synthetic fixture whose checksum claims 10 files and two app transactions that no
#: commit ever added.
CRC_CONTRADICTS_LOG = {"kernel-rs-data/crc-full"}


def load_expected() -> dict[str, dict[str, Any]]:
    """EXPECTED.json, or an empty dict when the corpus is not beside the repository."""
    path = CORPUS / "EXPECTED.json"
    if not path.exists():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(path.read_text())
    return data


@dataclass
class Outcome:
    """Result of checking one table: ``passed`` or ``refused`` (with the feature), and what was checked."""

    status: str
    checked: list[str] = field(default_factory=list)
    detail: str = ""


def check_table(name: str, facts: dict[str, Any]) -> Outcome:
    """Run every check for one table; raises AssertionError on the first mismatch."""
    table = deltalog.Table(CORPUS / name, verify_checksums=name not in CRC_CONTRADICTS_LOG)
    if name in CRC_CONTRADICTS_LOG:
        try:
            deltalog.Table(CORPUS / name).snapshot()
        except CorruptLogError as exc:
            assert exc.file is not None and exc.file.endswith(".crc"), exc
        else:
            raise AssertionError(f"{name}: the contradicting .crc file was not reported")
    if facts.get("must_error"):
        expected = ERROR_KINDS[facts["error_kind"]]
        try:
            snap = table.snapshot()
            snap.schema  # noqa: B018 - parsing the schema is part of opening the table
            snap.to_arrow()
        except expected as exc:
            return Outcome("passed", ["must_error"], f"{type(exc).__name__}: {exc}")
        raise AssertionError(f"{name}: expected {expected.__name__} ({facts['error_kind']}), got no error")
    try:
        snap = table.snapshot()
    except UnsupportedFeatureError as exc:
        needs = set(facts.get("needs", [])) | set(facts.get("reader_features", []))
        assert exc.feature in needs or exc.feature.startswith("minReaderVersion"), (
            f"{name}: refused for {exc.feature!r}, which the table does not need ({sorted(needs)})"
        )
        assert exc.feature in REFUSED_FEATURES or exc.feature.startswith("minReaderVersion"), (
            f"{name}: refused for {exc.feature!r}, which deltalog reads (only {sorted(REFUSED_FEATURES)} may be "
            f"refused): {exc}"
        )
        return Outcome("refused", ["needs"], f"{exc.feature}")
    out = Outcome("passed")
    _check_snapshot(name, snap, facts, out)
    for version, vfacts in sorted(facts.get("at_versions", {}).items(), key=lambda kv: int(kv[0])):
        vsnap = table.snapshot(version=int(version))
        _check_snapshot(f"{name}@v{version}", vsnap, vfacts, out, prefix=f"v{version}.")
    return out


def _check(out: Outcome, key: str, ok: bool, message: Callable[[], str]) -> None:
    if not ok:
        raise AssertionError(message())
    out.checked.append(key)


def _check_snapshot(
    name: str, snap: deltalog.Snapshot, facts: dict[str, Any], out: Outcome, prefix: str = ""
) -> None:
    if "version" in facts:
        _check(out, prefix + "version", snap.version == facts["version"],
               lambda: f"{name}: version {snap.version} != {facts['version']}")
    if "protocol" in facts:
        got = [snap.protocol.minReaderVersion, snap.protocol.minWriterVersion]
        _check(out, prefix + "protocol", got == facts["protocol"],
               lambda: f"{name}: protocol {got} != {facts['protocol']}")
    if "reader_features" in facts:
        got_rf = sorted(snap.protocol.readerFeatures or [])
        _check(out, prefix + "reader_features", got_rf == sorted(facts["reader_features"]),
               lambda: f"{name}: reader features {got_rf} != {facts['reader_features']}")
    if "writer_features" in facts:
        got_wf = sorted(snap.protocol.writerFeatures or [])
        _check(out, prefix + "writer_features", got_wf == sorted(facts["writer_features"]),
               lambda: f"{name}: writer features {got_wf} != {facts['writer_features']}")
    if "partition_columns" in facts:
        _check(out, prefix + "partition_columns",
               list(snap.partition_columns) == facts["partition_columns"],
               lambda: f"{name}: partition columns {snap.partition_columns} != {facts['partition_columns']}")
    if "schema_field_names" in facts:
        names = snap.schema.field_names
        _check(out, prefix + "schema_field_names", list(names) == facts["schema_field_names"],
               lambda: f"{name}: schema fields {names} != {facts['schema_field_names']}")
    if "num_active_files" in facts:
        n = snap.num_files()
        _check(out, prefix + "num_active_files", n == facts["num_active_files"],
               lambda: f"{name}: {n} live files != {facts['num_active_files']}")
    if "active_files" in facts:
        got_files = sorted(snap.add_files().column("path").to_pylist())
        _check(out, prefix + "active_files", got_files == sorted(facts["active_files"]),
               lambda: f"{name}: live files differ: {got_files[:5]} vs {sorted(facts['active_files'])[:5]}")
    if "txn" in facts:
        got_txn = dict(snap.app_transactions)
        _check(out, prefix + "txn", got_txn == facts["txn"], lambda: f"{name}: txn {got_txn} != {facts['txn']}")
    needs_rows = any(k in facts for k in ("row_count", "rows_sorted", "expected_dir"))
    if not needs_rows:
        return
    data = snap.to_arrow()
    if "row_count" in facts:
        _check(out, prefix + "row_count", data.num_rows == facts["row_count"],
               lambda: f"{name}: {data.num_rows} rows != {facts['row_count']}")
    if "rows_sorted" in facts:
        got_rows = sorted_rows(data.select(facts["columns"]))
        want = sorted_rows_from_json(facts["rows_sorted"])
        _check(out, prefix + "rows_sorted", got_rows == want,
               lambda: f"{name}: rows differ; first got {got_rows[:3]} want {want[:3]}")
    if "expected_dir" in facts:
        expected = read_expected(CORPUS / facts["expected_dir"])
        cols = expected.column_names
        missing = [c for c in cols if c not in data.column_names]
        _check(out, prefix + "expected_dir.columns", not missing,
               lambda: f"{name}: columns {missing} of the expected data are missing from {data.column_names}")
        got_rows = sorted_rows(data.select(cols))
        want_rows = _adjusted(name, cols, sorted_rows(expected))
        _check(out, prefix + "expected_dir", got_rows == want_rows,
               lambda: f"{name}: data differs from {facts['expected_dir']}: got {len(got_rows)} rows "
               f"{_first_diff(got_rows, want_rows)}")


def _adjusted(name: str, cols: list[str], rows: list[list[Any]]) -> list[list[Any]]:
    fixes = EXPECTED_ADJUSTMENTS.get(name.split("@")[0], {})
    if not fixes:
        return rows
    idx = {cols.index(c): fn for c, fn in fixes.items()}
    return sorted(([idx[i](v) if i in idx else v for i, v in enumerate(r)] for r in rows), key=_sort_key)


def _first_diff(a: list[Any], b: list[Any]) -> str:
    for x, y in zip(a, b):
        if x != y:
            return f"first difference: {x!r} vs {y!r}"
    return f"lengths {len(a)} vs {len(b)}"


def read_expected(path: Path) -> pa.Table:
    """The expected snapshot: a parquet file or a directory of parquet files (``_``-files ignored)."""
    if path.is_dir():
        parquet = [p for p in path.rglob("*.parquet") if not p.name.startswith(("_", "."))]
        return ds.dataset([str(p) for p in sorted(parquet)], format="parquet").to_table()
    return ds.dataset(str(path), format="parquet").to_table()


def normalize(value: Any) -> Any:
    """A comparable, JSON-like form: decimals as strings with scale, timestamps as UTC micros."""
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    return value


def _sort_key(row: list[Any]) -> tuple[Any, ...]:
    return tuple(
        (0, "") if v is None else (1, v) if isinstance(v, (int, float, str)) else (2, json.dumps(v, default=str))
        for v in row
    )


def sorted_rows(t: pa.Table) -> list[list[Any]]:
    """Rows of ``t`` as normalized lists, sorted with nulls first."""
    cols = [t.column(i).to_pylist() for i in range(t.num_columns)]
    rows = [[normalize(c[i]) for c in cols] for i in range(t.num_rows)]
    return sorted(rows, key=_sort_key)


def sorted_rows_from_json(rows: list[list[Any]]) -> list[list[Any]]:
    """EXPECTED.json rows brought to the same normalized, sorted form."""
    return sorted(([normalize(v) for v in r] for r in rows), key=_sort_key)
