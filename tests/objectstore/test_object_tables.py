"""The kernel on object stores: every table operation on S3 (moto) and Azure (azurite), read back through
deltalog and compared with the same operation on a local table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.commands.check import check_table
from deltalog.commands.convert import convert_to_delta
from deltalog.errors import StorageError, StorageNotFoundError, StoragePermissionError, TableNotFoundError

pytestmark = pytest.mark.objectstore


@pytest.fixture(params=["s3", "azure"])
def remote(request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    location, options = request.getfixturevalue(f"{request.param}_table")
    return location, options


def data(ids: range, day: str = "2024-01-01") -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "day": [day] * len(ids),
                     "x": [i * 0.5 for i in ids]})


def ids(table: deltalog.Table, version: int | None = None) -> list[int]:
    return sorted(table.snapshot(version).to_arrow().column("id").to_pylist())


def test_write_read_time_travel_history(remote: tuple[str, dict[str, str]]) -> None:
    uri, opts = remote
    deltalog.write_table(uri, data(range(5)), partition_by=["day"], storage_options=opts)
    deltalog.write_table(uri, data(range(5, 8), "2024-01-02"), mode="append", storage_options=opts)
    deltalog.write_table(uri, data(range(100, 102), "2024-01-01"), mode="overwrite",
                         predicate=[("day", "=", "2024-01-01")], storage_options=opts)
    t = deltalog.Table(uri, storage_options=opts)
    assert ids(t) == [5, 6, 7, 100, 101]
    assert ids(t, 1) == list(range(8))
    assert [h["version"] for h in t.history()] == [2, 1, 0]
    snap = t.snapshot()
    assert snap.to_arrow(filter=[("day", "=", "2024-01-02")]).num_rows == 3
    assert all(not p.startswith(("s3:", "az:")) for p in snap.add_files().column("path").to_pylist())
    assert check_table(t).ok


def test_dml_maintenance_and_checkpoints(remote: tuple[str, dict[str, str]]) -> None:
    uri, opts = remote
    props = {"delta.checkpointInterval": "3", "delta.enableDeletionVectors": "true"}
    deltalog.write_table(uri, data(range(200)), properties=props, storage_options=opts)
    for i in range(3):
        deltalog.write_table(uri, data(range(1000 + i, 1001 + i)), mode="append", storage_options=opts)
    t = deltalog.Table(uri, storage_options=opts)
    assert any(f.path.endswith(".checkpoint.parquet") for f in t.store.list_dir("_delta_log"))
    removed = t.delete(pc.field("id").isin(list(range(0, 200, 3))))  # scattered: a deletion-vector file
    assert removed.num_deleted_rows == 67 and removed.num_deletion_vectors_added == 1
    assert any("deletion_vector_" in f.path for f in t.store.list_dir(""))
    assert len(ids(t)) == 200 - 67 + 3
    t.delete([("id", ">=", 1000)])
    deltalog.write_table(uri, data(range(10)), mode="overwrite", storage_options=opts)
    before = {f.path for f in t.store.list_dir("", recursive=True) if not f.path.startswith("_delta_log/")}
    result = t.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    after = {f.path for f in t.store.list_dir("", recursive=True) if not f.path.startswith("_delta_log/")}
    assert result.num_deleted_files > 0 and before - after == set(result.files_deleted)
    assert ids(t) == list(range(10))
    t.set_properties({"owner": "etl"})
    t.add_constraint("pos", "id >= 0")
    assert t.snapshot().properties["owner"] == "etl"
    report = check_table(t)
    assert report.ok, report.problems


def test_restore_clone_and_convert(remote: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    uri, opts = remote
    deltalog.write_table(uri, data(range(3)), storage_options=opts)
    deltalog.write_table(uri, data(range(3, 6)), mode="append", storage_options=opts)
    t = deltalog.Table(uri, storage_options=opts)
    t.restore(version=0)
    assert ids(t) == [0, 1, 2]
    local_copy = t.clone(str(tmp_path / "deep"), shallow=False)
    assert local_copy.num_copied_files == 1 and ids(deltalog.Table(str(tmp_path / "deep"))) == [0, 1, 2]
    remote_copy = uri + "-clone"
    t.clone(deltalog.Table(remote_copy, storage_options=opts), shallow=False)
    assert ids(deltalog.Table(remote_copy, storage_options=opts)) == [0, 1, 2]
    shallow = uri + "-shallow"
    t.clone(deltalog.Table(shallow, storage_options=opts), shallow=True)
    assert ids(deltalog.Table(shallow, storage_options=opts)) == [0, 1, 2]
    # convert a parquet directory written straight to the store
    raw = uri + "-raw"
    store = deltalog.Table(raw, storage_options=opts).store
    for day in ("2024-01-01", "2024-01-02"):
        sink = pa.BufferOutputStream()
        pq.write_table(data(range(4)).drop_columns(["day"]), sink)
        store.write(f"day={day}/part-0.parquet", sink.getvalue().to_pybytes(), overwrite=False)
    converted = convert_to_delta(raw, store=store)
    assert converted.version == 0
    snap = deltalog.Table(raw, storage_options=opts).snapshot()
    assert snap.partition_columns == ("day",) and snap.to_arrow().num_rows == 8


def test_missing_bucket_or_container_is_a_named_error(remote: tuple[str, dict[str, str]]) -> None:
    uri, opts = remote
    scheme, rest = uri.split("://", 1)
    missing = f"{scheme}://no-such-{rest.split('/', 1)[0][-8:]}x/t"
    with pytest.raises(StorageNotFoundError) as info:
        deltalog.Table(missing, storage_options=opts).snapshot()
    assert "does not exist" in str(info.value) and isinstance(info.value, OSError)
    with pytest.raises(StorageNotFoundError):
        deltalog.write_table(missing, data(range(1)), storage_options=opts)


def test_a_table_that_is_not_there_is_table_not_found(remote: tuple[str, dict[str, str]]) -> None:
    uri, opts = remote
    with pytest.raises(TableNotFoundError):
        deltalog.Table(uri + "/nothing", storage_options=opts).snapshot()


def test_wrong_credentials_are_refused_by_name_without_leaking_them(azure_table: tuple[str, dict[str, str]]) -> None:
    uri, opts = azure_table
    wrong = {**opts, "AZURE_STORAGE_ACCOUNT_KEY": "d3Jvbmcta2V5LXdyb25nLWtleQ=="}
    with pytest.raises(StoragePermissionError) as info:
        deltalog.write_table(uri, data(range(1)), storage_options=wrong)
    message = str(info.value)
    assert "check the credentials" in message
    assert "d3Jvbmcta2V5" not in message and opts["AZURE_STORAGE_ACCOUNT_KEY"][:10] not in message
    assert not list(deltalog.Table(uri, storage_options=opts).store.list_dir("", recursive=True))


def test_credentials_never_reach_commit_info_or_reprs(remote: tuple[str, dict[str, str]]) -> None:
    uri, opts = remote
    deltalog.write_table(uri, data(range(2)), storage_options=opts)
    t = deltalog.Table(uri, storage_options=opts)
    secret = next(v for k, v in opts.items() if "SECRET" in k or "ACCOUNT_KEY" in k)
    log = b"".join(t.store.read(f.path) for f in t.store.list_dir("_delta_log"))
    assert secret.encode() not in log
    assert secret not in repr(t.store) and secret not in repr(t)


def test_environment_supplies_what_the_options_leave_out(
    s3_table: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As delta-rs and the AWS SDKs read it: endpoint, plain HTTP, credentials and region from the environment
    alone, no storage options at all; options given win over it."""
    uri, opts = s3_table
    for key, value in opts.items():
        monkeypatch.setenv(key, value)
    deltalog.write_table(uri, data(range(4)))
    assert ids(deltalog.Table(uri)) == [0, 1, 2, 3]
    with pytest.raises(StorageError, match=r"builder error|http"):  # allow_http=false given: the option wins
        deltalog.Table(uri, storage_options={"AWS_ALLOW_HTTP": "false"}).snapshot()


def test_azure_credentials_from_the_environment_alone(
    azure_table: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, opts = azure_table
    for key, value in opts.items():
        monkeypatch.setenv(key, value)
    deltalog.write_table(uri, data(range(3)))
    assert ids(deltalog.Table(uri)) == [0, 1, 2]


def test_option_keys_are_case_insensitive(s3_table: tuple[str, dict[str, str]]) -> None:
    uri, opts = s3_table
    lower = {k.lower(): v for k, v in opts.items()}
    deltalog.write_table(uri, data(range(2)), storage_options=lower)
    assert ids(deltalog.Table(uri, storage_options=opts)) == [0, 1]


def test_listing_starts_at_the_checkpoint(s3_table: tuple[str, dict[str, str]], monkeypatch: Any) -> None:
    uri, opts = s3_table
    deltalog.write_table(uri, data(range(1)), properties={"delta.checkpointInterval": "5"}, storage_options=opts)
    for i in range(11):
        deltalog.write_table(uri, data(range(i + 1, i + 2)), mode="append", storage_options=opts)
    import obstore

    seen: list[dict[str, Any]] = []
    real = obstore.list

    def spy(store: Any, prefix: str | None = None, **kwargs: Any) -> Any:
        seen.append({"prefix": prefix, **kwargs})
        return real(store, prefix=prefix, **kwargs)

    monkeypatch.setattr(obstore, "list", spy)
    t = deltalog.Table(uri, storage_options=opts)
    assert t.snapshot().version == 11
    assert seen and all(s.get("offset", "").startswith("_delta_log/0000000000000000001") for s in seen)


def test_data_files_are_ranged_reads_not_whole_downloads(
    s3_table: tuple[str, dict[str, str]], monkeypatch: Any
) -> None:
    uri, opts = s3_table
    wide = pa.table({f"c{i}": pa.array(range(20_000), pa.int64()) for i in range(20)})
    deltalog.write_table(uri, wide, storage_options=opts)
    import obstore

    whole: list[str] = []
    real_get = obstore.get

    def spy(store: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        whole.append(path)
        return real_get(store, path, *args, **kwargs)

    monkeypatch.setattr(obstore, "get", spy)
    t = deltalog.Table(uri, storage_options=opts)
    got = t.snapshot().to_arrow(columns=["c3"])
    assert got.column("c3").to_pylist() == list(range(20_000))
    assert not [p for p in whole if p.endswith(".parquet")]  # footers and columns came by ranged reads
