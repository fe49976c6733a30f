"""Identity columns in the kernel's writes: values continue after the high-water mark, the commit records
the new mark, explicit values follow GENERATED ALWAYS / BY DEFAULT, concurrent writers never hand out a
value twice, and other readers (delta-rs) read what was written."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import parse_schema
from deltalog.txn.conflicts import ConcurrentModificationException

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "delta-spark" / \
    "identity_test_written_by_version_5"


def _identity_table(path: Path, *, start: int = 1, step: int = 1, always: bool = True) -> str:
    """A new table (protocol 1/6) with ``id BIGINT GENERATED ALWAYS|BY DEFAULT AS IDENTITY`` and ``v STRING``."""
    log = path / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True,
         "metadata": {"delta.identity.start": start, "delta.identity.step": step,
                      "delta.identity.allowExplicitInsert": not always}},
        {"name": "v", "type": "string", "nullable": True, "metadata": {}}]}
    actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 6}},
               {"metaData": {"id": "identity-test", "format": {"provider": "parquet", "options": {}},
                             "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {},
                             "createdTime": 0}},
               {"commitInfo": {"operation": "CREATE TABLE", "timestamp": 0}}]
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(path)


def _mark(path: str) -> object:
    schema = parse_schema(deltalog.Table(path).snapshot().metadata.schemaString or "")
    return schema.field("id").metadata.get("delta.identity.highWaterMark")


def _ids(path: str) -> list[int]:
    return sorted(deltalog.Table(path).snapshot().to_arrow().column("id").to_pylist())


def test_generated_values_and_high_water_mark(tmp_path: Path) -> None:
    path = _identity_table(tmp_path / "t", start=10, step=5)
    deltalog.write_table(path, pa.table({"v": ["a", "b", "c"]}), mode="append")
    assert _ids(path) == [10, 15, 20] and _mark(path) == 20
    deltalog.write_table(path, pa.table({"v": ["d"]}), mode="append")
    assert _ids(path) == [10, 15, 20, 25] and _mark(path) == 25
    history = deltalog.Table(path).history()
    assert [h["operation"] for h in history[:2]] == ["WRITE", "WRITE"]


def test_negative_step(tmp_path: Path) -> None:
    path = _identity_table(tmp_path / "t", start=-1, step=-2)
    deltalog.write_table(path, pa.table({"v": ["a", "b"]}), mode="append")
    deltalog.write_table(path, pa.table({"v": ["c"]}), mode="append")
    assert _ids(path) == [-5, -3, -1] and _mark(path) == -5


def test_explicit_values(tmp_path: Path) -> None:
    always = _identity_table(tmp_path / "always")
    with pytest.raises(InvalidArgumentError, match=r"EXPLICIT_INSERT_NOT_SUPPORTED.*id"):
        deltalog.write_table(always, pa.table({"id": [7], "v": ["x"]}), mode="append")
    assert deltalog.Table(always).latest_version() == 0
    assert not list((tmp_path / "always").glob("*.parquet"))
    by_default = _identity_table(tmp_path / "default", always=False)
    deltalog.write_table(by_default, pa.table({"v": ["a"]}), mode="append")
    deltalog.write_table(by_default, pa.table({"id": [100], "v": ["explicit"]}), mode="append")
    assert _mark(by_default) == 1  # explicit values leave the high-water mark alone
    deltalog.write_table(by_default, pa.table({"v": ["b"]}), mode="append")
    assert _ids(by_default) == [1, 2, 100]


def test_sync_identity_moves_the_mark_past_explicit_values(tmp_path: Path) -> None:
    path = _identity_table(tmp_path / "t", start=1, step=10, always=False)
    deltalog.write_table(path, pa.table({"v": ["a", "b"]}), mode="append")  # 1, 11
    deltalog.write_table(path, pa.table({"id": [95, 40], "v": ["x", "y"]}), mode="append")
    table = deltalog.Table(path)
    assert table.sync_identity("ID").operation == "CHANGE COLUMN"  # columns match without regard to case
    assert _mark(path) == 101  # 95 rounded onto 1 + 10n
    deltalog.write_table(path, pa.table({"v": ["c"]}), mode="append")
    assert _ids(path) == [1, 11, 40, 95, 111]
    # the largest value in a file with a deletion vector is read, not taken from its statistics
    deltalog.write_table(path, pa.table({"id": [500, 7], "v": ["gone", "kept"]}), mode="append")
    table.set_properties({"delta.enableDeletionVectors": "true"})
    table.delete("v = 'gone'")
    assert any(a["deletionVector"] for a in table.snapshot().add_files().to_pylist())
    table.sync_identity("id")
    assert _mark(path) == 111  # never back: 111 was handed out already
    deltalog.write_table(path, pa.table({"id": [300], "v": ["z"]}), mode="append")
    table.sync_identity("id")
    assert _mark(path) == 301
    with pytest.raises(InvalidArgumentError, match=r"ALTER_NON_IDENTITY_COLUMN.*v is not one"):
        table.sync_identity("v")
    with pytest.raises(InvalidArgumentError, match=r"DELTA_COLUMN_NOT_FOUND.*'nope'"):
        table.sync_identity("nope")


def test_sync_identity_negative_step_and_empty_table(tmp_path: Path) -> None:
    path = _identity_table(tmp_path / "t", start=0, step=-2, always=False)
    deltalog.Table(path).sync_identity("id")
    assert _mark(path) is None  # no rows: nothing to catch up with
    deltalog.write_table(path, pa.table({"id": [5], "v": ["above start"]}), mode="append")
    deltalog.Table(path).sync_identity("id")
    assert _mark(path) is None  # the first generated value, 0, is already past it
    deltalog.write_table(path, pa.table({"id": [-7], "v": ["x"]}), mode="append")
    deltalog.Table(path).sync_identity("id")
    assert _mark(path) == -8
    deltalog.write_table(path, pa.table({"v": ["next"]}), mode="append")
    assert _ids(path) == [-10, -7, 5]


def test_table_written_by_an_older_delta(tmp_path: Path) -> None:
    """delta-spark's corpus table: protocol 1/2 with identity metadata (high-water mark 4)."""
    if not CORPUS.is_dir():
        pytest.skip("the conformance corpus is not beside this checkout")
    path = str(tmp_path / "t")
    shutil.copytree(CORPUS, path)
    deltalog.write_table(path, pa.table({"part": pa.array([9, 9], pa.int32()), "value": ["x", "y"]}), mode="append")
    snap = deltalog.Table(path).snapshot()
    assert sorted(snap.to_arrow().column("id").to_pylist()) == [1, 2, 4, 5, 6]
    assert _mark(path) == 6
    assert snap.protocol.minWriterVersion >= 6  # the metadata uses identityColumns: the protocol says so now
    deltalake = pytest.importorskip("deltalake")
    rows = deltalake.DeltaTable(path).to_pyarrow_table()
    assert sorted(rows.column("id").to_pylist()) == [1, 2, 4, 5, 6]


def test_concurrent_writers_never_share_a_value(tmp_path: Path) -> None:
    path = _identity_table(tmp_path / "t")
    deltalog.write_table(path, pa.table({"v": ["seed"]}), mode="append")
    conflicts: list[str] = []
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        done = 0
        while done < 8:
            try:
                deltalog.write_table(path, pa.table({"v": [name] * 3}), mode="append")
                done += 1
            except ConcurrentModificationException as exc:  # the other writer moved the mark first
                conflicts.append(type(exc).__name__)
            except BaseException as exc:  # pragma: no cover -- reported below
                errors.append(exc)
                return

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    ids = deltalog.Table(path).snapshot().to_arrow().column("id").to_pylist()
    assert len(ids) == 1 + 2 * 8 * 3 and len(set(ids)) == len(ids)
    assert _mark(path) == max(ids)
    assert set(conflicts) <= {"MetadataChangedException"}


def test_merge_inserts_generate_identity_values(tmp_path: Path) -> None:
    # the kernel's MERGE refused inserts into tables with identity columns ("use Spark's MERGE")
    path = _identity_table(tmp_path / "t", start=10, step=5)
    deltalog.write_table(path, pa.table({"v": ["a", "b"]}), mode="append")  # ids 10, 15
    table = deltalog.Table(path)
    src = pa.table({"v": ["b", "c", "d"], "w": ["B", "C", "D"]})
    res = (table.merge(src, "target.v = source.v").when_matched_update({"v": "source.w"})
           .when_not_matched_insert({"v": "source.v"}).execute())
    assert res.num_target_rows_inserted == 2 and res.num_target_rows_updated == 1
    rows = sorted((r["id"], r["v"]) for r in table.snapshot().to_arrow().to_pylist())
    assert rows == [(10, "a"), (15, "B"), (20, "c"), (25, "d")]  # the updated row keeps its id
    assert _mark(path) == 25
    deltalog.write_table(path, pa.table({"v": ["e"]}), mode="append")  # continues after the merge's values
    assert _ids(path) == [10, 15, 20, 25, 30]
    table.merge(pa.table({"v": ["f"]}), "target.v = source.v").when_not_matched_insert_all().execute()
    assert _ids(path) == [10, 15, 20, 25, 30, 35]  # insert_all leaves identity columns to Delta
    deltalake = pytest.importorskip("deltalake")
    assert sorted(deltalake.DeltaTable(path).to_pyarrow_table().column("id").to_pylist()) == _ids(path)
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match=r"EXPLICIT_INSERT_NOT_SUPPORTED.*'id'"):
        table.merge(pa.table({"v": ["g"]}), "target.v = source.v").when_not_matched_insert(
            {"id": "1", "v": "source.v"}).execute()
    with pytest.raises(InvalidArgumentError, match="it is an identity column"):
        table.merge(pa.table({"v": ["a"]}), "target.v = source.v").when_matched_update({"id": "1"}).execute()
    assert table.latest_version() == version


def test_merge_inserts_explicit_values_by_default(tmp_path: Path) -> None:
    path = _identity_table(tmp_path / "t", always=False)
    table = deltalog.Table(path)
    src = pa.table({"id": pa.array([100, 101], pa.int64()), "v": ["x", "y"]})
    table.merge(src, "target.v = source.v").when_not_matched_insert(
        {"id": "source.id", "v": "source.v"}, "source.v = 'x'").when_not_matched_insert({"v": "source.v"}).execute()
    assert sorted((r["id"], r["v"]) for r in table.snapshot().to_arrow().to_pylist()) == [(1, "y"), (100, "x")]
    assert _mark(path) == 1  # explicit values leave the high-water mark alone


def test_concurrent_merges_inserting_identity_values_conflict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    from races import winner_commits_first

    path = _identity_table(tmp_path / "t")

    def insert(table: deltalog.Table, v: str) -> object:
        return table.merge(pa.table({"v": [v]}), "target.v = source.v").when_not_matched_insert_all().execute()

    winner_commits_first(monkeypatch, path, lambda t: insert(t, "winner"))
    with pytest.raises(ConcurrentModificationException):  # both took id 1: the second must not commit
        insert(deltalog.Table(path), "loser")
    assert [(r["id"], r["v"]) for r in deltalog.Table(path).snapshot().to_arrow().to_pylist()] == [(1, "winner")]
