"""How a commit's Iceberg files reach the store: the local store's staged writes (content fsynced first, published
later) and fresh-name writes, the order :func:`publish_metadata` publishes in (a file is durable before one that
names it), a lost race for a metadata version, and manifests written with the prebuilt Avro writers byte for
byte as pyiceberg's own writers write them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.storage import InMemoryLogStore
from deltalog.storage.local import FileOps, LocalLogStore

pytest.importorskip("pyiceberg")

from deltalog.uniform import manifests
from deltalog.uniform.io import (
    HINT,
    StoreFileIO,
    current_version,
    metadata_path,
    publish_metadata,
    read_metadata,
)

UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}


class _Recording(FileOps):
    def __init__(self) -> None:
        self.steps: list[tuple[str, str]] = []

    def write_new(self, path: str, data: bytes) -> None:
        self.steps.append(("write_new", os.path.basename(path)))
        super().write_new(path, data)

    def link(self, src: str, dst: str) -> None:
        self.steps.append(("link", os.path.basename(dst)))
        super().link(src, dst)

    def replace(self, src: str, dst: str) -> None:
        self.steps.append(("replace", os.path.basename(dst)))
        super().replace(src, dst)

    def fsync_dir(self, path: str) -> None:
        self.steps.append(("fsync_dir", os.path.basename(path)))
        super().fsync_dir(path)


def test_staged_files_are_invisible_until_published(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    staged = store.stage("d/x", b"1")
    assert not store.exists("d/x") and [f.path for f in store.list_dir("d")] == []
    store.publish(staged, overwrite=False)
    assert store.read("d/x") == b"1" and os.listdir(tmp_path / "d") == ["x"]
    again = store.stage("d/x", b"2")
    with pytest.raises(FileExistsError):
        store.publish(again, overwrite=False)
    assert store.read("d/x") == b"1" and os.listdir(tmp_path / "d") == ["x"]  # the temporary file is gone
    store.publish(store.stage("d/x", b"3"), overwrite=True, sync_dir=False)
    assert store.read("d/x") == b"3"
    store.discard(store.stage("d/y", b"4"))
    assert os.listdir(tmp_path / "d") == ["x"]


def test_fresh_writes_refuse_an_existing_name(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    store.write_fresh("m/a.avro", b"1")
    store.sync_dirs(["m/a.avro"])
    with pytest.raises(FileExistsError):
        store.write_fresh("m/a.avro", b"2")
    assert store.read("m/a.avro") == b"1"


def test_publish_order_on_a_local_disk(tmp_path: Path) -> None:
    ops = _Recording()
    store = LocalLogStore(tmp_path, ops=ops)
    fio = StoreFileIO(store)
    fio.defer("metadata/manifest-1.avro", b"m")
    fio.defer("metadata/snap-1.avro", b"l")
    assert publish_metadata(fio, 1, b"{}")
    steps = ops.steps
    first_link = steps.index(("link", "v1.metadata.json"))
    # every content write comes before any publication, the manifests' entries are fsynced before the link
    assert all(name == "write_new" for name, _ in steps[:4]) and ("fsync_dir", "metadata") in steps[4:first_link]
    assert {f for n, f in steps[:4] if n == "write_new"} >= {"manifest-1.avro", "snap-1.avro"}
    # the metadata JSON's entry is durable before the hint moves; the hint's own rename is not fsynced
    assert steps[first_link + 1:] == [("fsync_dir", "metadata"), ("replace", "version-hint.text")]
    assert store.read(HINT) == b"1" and store.read(metadata_path(1)) == b"{}"
    assert sorted(os.listdir(tmp_path / "metadata")) == [
        "manifest-1.avro", "snap-1.avro", "v1.metadata.json", "version-hint.text"]


def test_a_lost_race_publishes_no_metadata_and_keeps_the_hint(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    store.write(metadata_path(1), b"theirs", overwrite=False)
    store.write(HINT, b"1", overwrite=True)
    fio = StoreFileIO(store)
    fio.defer("metadata/manifest-2.avro", b"m")
    assert not publish_metadata(fio, 1, b"ours")
    assert store.read(metadata_path(1)) == b"theirs" and store.read(HINT) == b"1"
    assert sorted(os.listdir(tmp_path / "metadata")) == ["manifest-2.avro", "v1.metadata.json", "version-hint.text"]


def test_a_hint_already_past_the_version_stays(tmp_path: Path) -> None:
    store = LocalLogStore(tmp_path)
    for v in (1, 2, 3):
        store.write(metadata_path(v), b"{}", overwrite=False)
    store.write(HINT, b"3", overwrite=True)
    assert publish_metadata(StoreFileIO(store), 4, b"{}")
    assert store.read(HINT) == b"4"
    store.write(metadata_path(6), b"{}", overwrite=False)
    store.write(HINT, b"6", overwrite=True)
    assert publish_metadata(StoreFileIO(store), 5, b"{}")
    assert store.read(HINT) == b"6"
    assert not [n for n in os.listdir(tmp_path / "metadata") if n.startswith(".")]


def test_publish_on_another_store() -> None:
    store = InMemoryLogStore("memory://uniform-publish")
    fio = StoreFileIO(store)
    fio.defer("metadata/manifest-1.avro", b"m")
    assert publish_metadata(fio, 1, b"{}")
    assert store.read("metadata/manifest-1.avro") == b"m" and store.read(HINT) == b"1"
    assert not publish_metadata(StoreFileIO(store), 1, b"other")
    assert current_version(store) == 1


def test_prebuilt_writers_write_pyiceberg_s_bytes(tmp_path: Path, monkeypatch: Any) -> None:
    path = str(tmp_path / "t")
    data = pa.table({"id": pa.array(range(30), pa.int64()), "p": [f"v{i % 3}" for i in range(30)]})
    deltalog.write_table(path, data, properties=UNIFORM, partition_by=["p"])
    deltalog.write_table(path, data, mode="append")
    store = deltalog.Table(path).snapshot().store
    fio = StoreFileIO(store)
    fio.deferring = True
    md = read_metadata(store, current_version(store))  # type: ignore[arg-type]
    listed = manifests.manifest_list(fio, md.current_snapshot().manifest_list)  # type: ignore[union-attr]
    entries = [e for m in listed for e in manifests.live_entries(fio, m)]
    assert len(entries) == 6
    monkeypatch.setattr(manifests.os, "urandom", lambda n: b"\x01" * n)
    monkeypatch.setattr("pyiceberg.avro.file.os.urandom", lambda n: b"\x01" * n)

    class _Fixed:
        hex = "0" * 32

    monkeypatch.setattr(manifests.uuid, "uuid4", lambda: _Fixed())
    written = []
    for prebuilt in (True, False):
        monkeypatch.setattr(manifests, "_PREBUILT", prebuilt)
        m = manifests.new_manifest(fio, md.spec(), md.schema(), 7, 3, added=[entries[0].data_file],
                                   existing=entries[1:4], deleted=entries[4:])
        assert m is not None
        lst = manifests.write_list(fio, 7, 6, 3, [*listed, m])
        written.append((fio.pending.pop(fio.relative(m.manifest_path)), fio.pending.pop(fio.relative(lst))))
    assert written[0] == written[1]
