"""One contract suite for every LogStore implementation (fsspec-style): each test runs against a fresh
local store (in tmp_path), a fresh in-memory store, and fresh S3 (moto) and Azure (azurite) stores on the
emulators the suite starts, so they cannot drift apart."""

from __future__ import annotations

import errno
import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deltalog.errors import InvalidArgumentError
from deltalog.storage import (
    FileInfo,
    InMemoryLogStore,
    LocalLogStore,
    LogStore,
    register_scheme,
    store_for,
)

LOG = "_delta_log"


def commit(v: int) -> str:
    return f"{LOG}/{v:020d}.json"


def paths(infos: Iterator[FileInfo]) -> list[str]:
    return [f.path for f in infos]


@pytest.fixture(params=["local", "memory", "s3", "azure"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> LogStore:
    if request.param == "local":
        return LocalLogStore(tmp_path / "table")
    if request.param == "memory":
        return InMemoryLogStore(f"memory://contract-{uuid.uuid4().hex}")
    location, options = request.getfixturevalue(f"{request.param}_table")
    return store_for(location, options=options)


# ------------------------------------------------------------------------------------------- listing


def test_implements_protocol(store: LogStore) -> None:
    assert isinstance(store, LogStore)


def test_list_from_is_sorted_and_starts_at_prefix(store: LogStore) -> None:
    for v in (12, 3, 10, 0, 11, 9, 1):
        store.write(commit(v), b"{}", overwrite=False)
    store.write(f"{LOG}/{10:020d}.checkpoint.parquet", b"pq", overwrite=False)
    store.write(f"{LOG}/_last_checkpoint", b"{}", overwrite=False)
    store.write(f"{LOG}/_sidecars/{10:020d}.parquet", b"side", overwrite=False)  # not recursive
    store.write("part-0.parquet", b"data", overwrite=False)  # other directory

    got = paths(store.list_from(f"{LOG}/{10:020d}"))
    assert got == [
        f"{LOG}/{10:020d}.checkpoint.parquet",  # ".c" < ".j"
        commit(10),
        commit(11),
        commit(12),
        f"{LOG}/_last_checkpoint",  # '_' > '0' in byte order; the log layer filters names
    ]
    assert paths(store.list_from(commit(11))) == [commit(11), commit(12), f"{LOG}/_last_checkpoint"]
    # a prefix ending in "/" lists the whole directory, still files only
    assert paths(store.list_from(f"{LOG}/")) == sorted(
        [commit(v) for v in (0, 1, 3, 9, 10, 11, 12)]
        + [f"{LOG}/{10:020d}.checkpoint.parquet", f"{LOG}/_last_checkpoint"]
    )


def test_list_from_prefix_between_names_and_past_the_end(store: LogStore) -> None:
    for name in ("a", "ab", "b", "ba"):
        store.write(f"d/{name}", b"", overwrite=False)
    assert paths(store.list_from("d/aa")) == ["d/ab", "d/b", "d/ba"]
    assert paths(store.list_from("d/zzz")) == []
    assert paths(store.list_from("d/")) == ["d/a", "d/ab", "d/b", "d/ba"]


def test_list_from_root_directory(store: LogStore) -> None:
    for name in ("a.json", "b.json", "c.json"):
        store.write(name, b"", overwrite=False)
    store.write("b-dir/x", b"", overwrite=False)
    assert paths(store.list_from("b")) == ["b.json", "c.json"]


def test_listing_missing_directory_yields_nothing(store: LogStore) -> None:
    assert paths(store.list_from(f"{LOG}/{0:020d}")) == []
    assert paths(store.list_dir("no/such/dir")) == []
    assert paths(store.list_dir("no/such/dir", recursive=True)) == []
    store.write("file", b"", overwrite=False)
    assert paths(store.list_from("file/x")) == []  # "directory" is a file: nothing, no error


def test_list_dir_recursive_and_not(store: LogStore) -> None:
    files = ["top.parquet", "p=1/a.parquet", "p=1/q=x/b.parquet", "p=2/c.parquet", f"{LOG}/{0:020d}.json"]
    for f in files:
        store.write(f, b"x", overwrite=False)
    assert paths(store.list_dir("")) == ["top.parquet"]
    assert paths(store.list_dir("", recursive=True)) == sorted(files)
    assert paths(store.list_dir("p=1")) == ["p=1/a.parquet"]
    assert paths(store.list_dir("p=1/", recursive=True)) == ["p=1/a.parquet", "p=1/q=x/b.parquet"]
    assert all(isinstance(f, FileInfo) and f.size == 1 for f in store.list_dir("", recursive=True))


def test_listing_sorts_in_byte_order(store: LogStore) -> None:
    names = ["b", "B", "a", "é", "z", "Z", "_x", "0", "~", "日本"]
    for n in names:
        store.write(f"d/{n}", b"", overwrite=False)
    expected = sorted(names, key=lambda s: s.encode())
    assert [f.name for f in store.list_from("d/")] == expected
    assert [f.name for f in store.list_dir("d")] == expected
    for start in ("_", "b", "~", "é", "日"):  # ASCII and non-ASCII starts skip the same names as bytes do
        assert [f.name for f in store.list_from(f"d/{start}")] == [n for n in expected if n.encode() >= start.encode()]


# -------------------------------------------------------------------------------------------- writes


def test_put_if_absent_refuses_existing_and_leaves_it_untouched(store: LogStore) -> None:
    store.write(commit(0), b"first", overwrite=False)
    before = store.stat(commit(0))
    with pytest.raises(FileExistsError):
        store.write(commit(0), b"second, longer content", overwrite=False)
    assert store.read(commit(0)) == b"first"
    assert store.stat(commit(0)) == before
    assert paths(store.list_from(f"{LOG}/")) == [commit(0)]  # no temp files left behind


def test_overwrite_replaces_and_creates(store: LogStore) -> None:
    store.write(f"{LOG}/_last_checkpoint", b"a much longer original", overwrite=True)
    store.write(f"{LOG}/_last_checkpoint", b"short", overwrite=True)
    assert store.read(f"{LOG}/_last_checkpoint") == b"short"
    assert store.stat(f"{LOG}/_last_checkpoint").size == 5
    assert paths(store.list_dir(LOG)) == [f"{LOG}/_last_checkpoint"]


def test_empty_and_binary_content(store: LogStore) -> None:
    blob = bytes(range(256)) * 3
    store.write("empty", b"", overwrite=False)
    store.write("blob", blob, overwrite=False)
    assert store.read("empty") == b""
    assert store.stat("empty").size == 0
    assert store.read("blob") == blob


def test_nested_directories_are_created(store: LogStore) -> None:
    store.write("a/b/c/d/e.bin", b"deep", overwrite=False)
    assert store.read("a/b/c/d/e.bin") == b"deep"
    assert paths(store.list_dir("a", recursive=True)) == ["a/b/c/d/e.bin"]
    assert paths(store.list_dir("a/b")) == []  # only a directory there
    store.write("a/b/c/sibling", b"", overwrite=True)
    assert paths(store.list_dir("a/b/c")) == ["a/b/c/sibling"]


def test_directory_and_file_conflicts_are_not_file_exists(store: LogStore) -> None:
    store.write("a/b", b"file", overwrite=False)
    with pytest.raises(NotADirectoryError):
        store.write("a/b/c", b"", overwrite=False)
    store.write("d/e/f", b"", overwrite=False)
    for overwrite in (False, True):
        with pytest.raises(IsADirectoryError):
            store.write("d/e", b"", overwrite=overwrite)
    assert store.read("a/b") == b"file"


# --------------------------------------------------------------------------------------------- reads


def test_read_and_stat_missing_raise_file_not_found(store: LogStore) -> None:
    with pytest.raises(FileNotFoundError):
        store.read("missing.json")
    with pytest.raises(FileNotFoundError):
        store.read_range("missing.json", 0, 1)
    with pytest.raises(FileNotFoundError):
        store.stat("nested/missing.json")


def test_read_range(store: LogStore) -> None:
    store.write("r", b"0123456789", overwrite=False)
    assert store.read_range("r", 0, 4) == b"0123"
    assert store.read_range("r", 3, 2) == b"34"
    assert store.read_range("r", 8, 100) == b"89"
    assert store.read_range("r", 10, 5) == b""
    assert store.read_range("r", 50, 5) == b""
    assert store.read_range("r", 2, 0) == b""
    with pytest.raises(ValueError):
        store.read_range("r", -1, 2)
    with pytest.raises(ValueError):
        store.read_range("r", 0, -2)


def test_delete_is_idempotent(store: LogStore) -> None:
    store.write("d/x", b"1", overwrite=False)
    store.delete("d/x")
    store.delete("d/x")
    store.delete("never/there")
    assert not store.exists("d/x")
    assert paths(store.list_dir("d")) == []
    store.write("d/x", b"2", overwrite=False)  # put-if-absent works again after delete
    assert store.read("d/x") == b"2"


def test_exists(store: LogStore) -> None:
    assert not store.exists("x/y")
    store.write("x/y", b"", overwrite=False)
    assert store.exists("x/y")
    assert not store.exists("x")  # a directory is not a file
    assert not store.exists("x/z")


def test_stat_size_and_modification_time(store: LogStore) -> None:
    before = time.time_ns() // 1_000_000
    store.write("s/f", b"12345", overwrite=False)
    after = time.time_ns() // 1_000_000
    info = store.stat("s/f")
    assert info == FileInfo("s/f", 5, info.modification_time)
    assert before - 2_000 <= info.modification_time <= after + 2_000  # coarse file system clocks
    listed = list(store.list_dir("s"))
    assert listed == [info]


def test_file_info_is_frozen() -> None:
    info = FileInfo("a", 1, 2)
    with pytest.raises(AttributeError):
        info.size = 3  # type: ignore[misc]
    assert info.name == "a"


@pytest.mark.parametrize(
    "name",
    [
        "with space.json",
        "ümlaut-€.json",
        "percent%20not%2Fdecoded.parquet",
        "emoji-🙂.parquet",
        "part=a b/c%3Dd #1.parquet",
        "日本/データ.json",
    ],
)
def test_special_characters_in_names(store: LogStore, name: str) -> None:
    store.write(name, name.encode(), overwrite=False)
    assert store.exists(name)
    assert store.read(name) == name.encode()
    assert store.stat(name).path == name
    directory = name.rpartition("/")[0]
    assert paths(store.list_dir(directory)) == [name]
    assert paths(store.list_from(name)) == [name]
    with pytest.raises(FileExistsError):
        store.write(name, b"again", overwrite=False)
    store.delete(name)
    assert not store.exists(name)


@pytest.mark.parametrize(
    "bad", ["", "/abs/path", "../escape", "a/../b", "a//b", "./a", "a/.", "a/", "a\x00b"]
)
def test_invalid_paths_are_rejected(store: LogStore, bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        store.write(bad, b"", overwrite=False)
    with pytest.raises(InvalidArgumentError):
        store.read(bad)


def test_full_path(store: LogStore) -> None:
    full = store.full_path(commit(0))
    assert full.endswith(commit(0).replace("/", os.sep) if isinstance(store, LocalLogStore) else commit(0))
    assert store.full_path("") == store.root


# ---------------------------------------------------------------------------------------- concurrency


def test_thread_race_for_one_path_has_exactly_one_winner(store: LogStore) -> None:
    n = 16
    barrier = threading.Barrier(n)
    won: list[int] = []
    lost: list[int] = []
    errors: list[BaseException] = []

    def attempt(i: int) -> None:
        payload = f"writer-{i};".encode() * 1000
        barrier.wait()
        try:
            store.write(commit(7), payload, overwrite=False)
            won.append(i)
        except FileExistsError:
            lost.append(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(won) == 1 and len(lost) == n - 1
    assert store.read(commit(7)) == f"writer-{won[0]};".encode() * 1000
    assert paths(store.list_dir(LOG)) == [commit(7)]


def test_thread_race_over_many_paths(store: LogStore) -> None:
    n, versions = 8, 25
    barrier = threading.Barrier(n)
    wins: dict[int, list[int]] = {i: [] for i in range(n)}

    def attempt(i: int) -> None:
        barrier.wait()
        for v in range(versions):
            try:
                store.write(commit(v), str(i).encode(), overwrite=False)
                wins[i].append(v)
            except FileExistsError:
                pass

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_wins = sorted(v for vs in wins.values() for v in vs)
    assert all_wins == list(range(versions))
    for i, vs in wins.items():
        for v in vs:
            assert store.read(commit(v)) == str(i).encode()


def test_overwrite_is_atomic_for_concurrent_readers(store: LogStore) -> None:
    old, new = b"o" * 300_000, b"n" * 200_000
    store.write("cp", old, overwrite=False)
    stop = threading.Event()
    bad: list[int] = []

    def reader() -> None:
        while not stop.is_set():
            data = store.read("cp")
            if data not in (old, new):
                bad.append(len(data))

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(40):
            store.write("cp", new if i % 2 == 0 else old, overwrite=True)
    finally:
        stop.set()
        t.join()
    assert bad == []


# ------------------------------------------------------------------------------------ memory specific


def test_memory_clock_and_set_modification_time() -> None:
    now = [1_000]
    store = InMemoryLogStore("memory://clock-test", clock=lambda: now[0])
    store.write("a", b"", overwrite=False)
    now[0] = 2_000
    store.write("b", b"", overwrite=False)
    store.write("a", b"x", overwrite=True)
    assert [(f.path, f.modification_time) for f in store.list_dir("")] == [("a", 2_000), ("b", 2_000)]
    store.set_modification_time("b", 5)
    assert store.stat("b").modification_time == 5
    with pytest.raises(FileNotFoundError):
        store.set_modification_time("nope", 1)
    assert store.full_path("a/b") == "memory://clock-test/a/b"


# ------------------------------------------------------------------------------------- local specific


def test_local_listing_skips_own_temp_files_but_not_other_hidden_files(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    store.write(commit(0), b"{}", overwrite=False)
    log_dir = tmp_path / LOG
    (log_dir / f".{0:020d}.json.{uuid.uuid4().hex}.tmp").write_bytes(b"partial")
    (log_dir / ".hidden").write_bytes(b"h")
    (log_dir / "subdir").mkdir()
    assert paths(store.list_from(f"{LOG}/")) == [f"{LOG}/.hidden", commit(0)]
    assert paths(store.list_dir(LOG)) == [f"{LOG}/.hidden", commit(0)]


def test_local_leaves_no_temp_files(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    store.write(commit(0), b"a", overwrite=False)
    with pytest.raises(FileExistsError):
        store.write(commit(0), b"b", overwrite=False)
    store.write("x", b"1", overwrite=True)
    store.write("x", b"2", overwrite=True)
    assert sorted(os.listdir(tmp_path / LOG)) == [f"{0:020d}.json"]
    assert sorted(os.listdir(tmp_path)) == [LOG, "x"]


def test_local_long_names_fit_temp_file_limits(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    name = "n" * 240
    store.write(name, b"x", overwrite=False)
    store.write(name, b"y", overwrite=True)
    assert store.read(name) == b"y"


def test_local_root_accepts_file_uris(tmp_path: Path) -> None:
    target = tmp_path / "my table %"
    store = LocalLogStore(target)
    store.write("f", b"1", overwrite=False)
    posix = target.as_posix()
    encoded = posix.replace("%", "%25").replace(" ", "%20")
    for uri in (f"file:{encoded}", f"file://{encoded}", f"file://localhost{encoded}", target.as_uri()):
        other = LocalLogStore(uri)
        assert other.root == str(target), uri
        assert other.read("f") == b"1"
    with pytest.raises(InvalidArgumentError):
        LocalLogStore("file://remote-host/share/t")


def test_local_full_path_is_openable(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    store.write("a b/c.bin", b"xyz", overwrite=False)
    full = store.full_path("a b/c.bin")
    assert os.path.isabs(full)
    with open(full, "rb") as f:
        assert f.read() == b"xyz"


def test_local_fallback_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def no_links(src: str, dst: str) -> None:
        calls.append(dst)
        raise OSError(errno.EPERM, "Operation not permitted", src)

    monkeypatch.setattr(os, "link", no_links)
    store = LocalLogStore(tmp_path)
    store.write(commit(0), b"v0", overwrite=False)
    with pytest.raises(FileExistsError):
        store.write(commit(0), b"other", overwrite=False)
    store.write(commit(1), b"v1", overwrite=False)
    assert len(calls) == 1  # detected once, then remembered
    assert store.read(commit(0)) == b"v0"
    assert paths(store.list_dir(LOG)) == [commit(0), commit(1)]
    assert sorted(os.listdir(tmp_path / LOG)) == [f"{0:020d}.json", f"{1:020d}.json"]


def test_local_other_link_errors_propagate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(src: str, dst: str) -> None:
        raise OSError(errno.EIO, "I/O error", src)

    monkeypatch.setattr(os, "link", broken)
    store = LocalLogStore(tmp_path)
    with pytest.raises(OSError) as info:
        store.write(commit(0), b"v0", overwrite=False)
    assert info.value.errno == errno.EIO
    assert os.listdir(tmp_path / LOG) == []


PROCESSES = 4
RACE_PATHS = 20


def _payload(worker: int) -> bytes:
    return f"<worker {worker}>".encode() * 20_000  # ~260 KB: a torn write would show


def _race_worker(root: str, worker: int, barrier: Any, results: Any) -> None:
    """Runs in a spawned process: try to create every path; report wins and any torn read."""
    try:
        store = LocalLogStore(root)
        valid = {_payload(w) for w in range(PROCESSES)}
        wins: list[int] = []
        torn: list[int] = []
        barrier.wait(timeout=60)
        for v in range(RACE_PATHS):
            try:
                store.write(commit(v), _payload(worker), overwrite=False)
                wins.append(v)
            except FileExistsError:
                if store.read(commit(v)) not in valid:  # the loser sees the winner's file complete
                    torn.append(v)
        results.put((worker, wins, torn, None))
    except BaseException as exc:
        results.put((worker, [], [], repr(exc)))


def test_local_multiprocess_race(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_race_worker, args=(str(tmp_path), w, barrier, results)) for w in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    try:
        reports = [results.get(timeout=60) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)
        results.close()
        results.join_thread()
    for p in procs:
        assert p.exitcode == 0
        p.close()

    winners: dict[int, int] = {}
    for worker, wins, torn, error in reports:
        assert error is None, f"worker {worker}: {error}"
        assert torn == [], f"worker {worker} read partial files {torn}"
        for v in wins:
            assert v not in winners, f"path {v} created twice"
            winners[v] = worker
    assert sorted(winners) == list(range(RACE_PATHS))
    store = LocalLogStore(tmp_path)
    for v, worker in winners.items():
        assert store.read(commit(v)) == _payload(worker)
    assert sorted(os.listdir(tmp_path / LOG)) == [f"{v:020d}.json" for v in range(RACE_PATHS)]


# ----------------------------------------------------------------------------------------- store_for


def test_store_for_memory_shares_state_by_name() -> None:
    name = f"memory://shared-{uuid.uuid4().hex}"
    a = store_for(name)
    a.write("x", b"1", overwrite=False)
    assert store_for(name).read("x") == b"1"
    assert store_for(name + "/").read("x") == b"1"
    assert store_for(name) is a
    assert isinstance(a, InMemoryLogStore) and a.root == name
    other = store_for(f"memory://other-{uuid.uuid4().hex}")
    assert not other.exists("x")


def test_store_for_local_paths_and_file_uris(tmp_path: Path) -> None:
    plain = store_for(str(tmp_path))
    assert isinstance(plain, LocalLogStore) and plain.root == str(tmp_path)
    plain.write("f", b"1", overwrite=False)
    for location in (tmp_path.as_uri(), f"file:{tmp_path.as_posix()}", f"FILE://{tmp_path.as_posix()}"):
        store = store_for(location)
        assert isinstance(store, LocalLogStore) and store.read("f") == b"1"


@pytest.mark.parametrize(
    ("location", "provider"),
    [("s3://bucket/table", "s3"), ("s3a://bucket/table", "s3"), ("abfss://c@acct.dfs.core.windows.net/t", "azure"),
     ("az://c/t", "azure"), ("gs://b/t", "gcs"), ("gcs://b/t", "gcs")],
)
def test_store_for_object_store_schemes(location: str, provider: str) -> None:
    from deltalog.storage.object_store import ObjectLogStore

    options = {"AZURE_STORAGE_ACCOUNT_NAME": "acct"} if provider == "azure" else {}
    store = store_for(location, options=options)  # builds the client; no request is made
    assert isinstance(store, ObjectLogStore) and store.provider == provider and store.root == location
    assert store.full_path("a b/c.parquet") == f"{location}/a b/c.parquet"
    assert store_for(location, options=options) is store  # one client per location and options


@pytest.mark.parametrize("location", ["ftp://host/table", "hdfs://nn/t", "wasbs://c@a.blob.core.windows.net/t"])
def test_store_for_unknown_schemes_name_what_is_supported(location: str) -> None:
    scheme = location.split(":", 1)[0]
    with pytest.raises(InvalidArgumentError) as info:
        store_for(location)
    message = str(info.value)
    assert repr(scheme) in message and "s3://" in message and "abfss://" in message and "gs://" in message
    assert isinstance(info.value, ValueError)


def test_unknown_storage_options_are_refused_by_name_without_values() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        store_for("s3://bucket/unknown-option", options={"AWS_NO_SUCH_SETTING": "s3cr3t-value"})
    assert "aws_no_such_setting" in str(info.value).lower() and "s3cr3t-value" not in str(info.value)


def test_store_for_passes_explicit_store_through() -> None:
    mine = InMemoryLogStore("memory://explicit")
    assert store_for("s3://ignored/when/store/given", store=mine) is mine
    with pytest.raises(InvalidArgumentError):
        store_for("memory://x", store=object())  # type: ignore[arg-type]


def test_register_scheme_plugs_in_backends() -> None:
    scheme = f"test{uuid.uuid4().hex[:8]}"
    built: list[str] = []

    def factory(location: str) -> LogStore:
        built.append(location)
        return InMemoryLogStore(location)

    register_scheme(scheme, factory)
    store = store_for(f"{scheme.upper()}://bucket/t")
    assert built == [f"{scheme.upper()}://bucket/t"]
    assert store.root == f"{scheme.upper()}://bucket/t"
    with pytest.raises(InvalidArgumentError):
        register_scheme("bad scheme", factory)
