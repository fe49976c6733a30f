from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from logbuilder import add, commit_info, metadata, new_table, protocol, remove, write_commit

import deltalog
from deltalog.errors import CorruptLogError, UnsupportedFeatureError
from deltalog.log.crc import checksum_for, crc_path, read_crc, verify_crc, write_crc
from deltalog.storage import InMemoryLogStore

CORPUS = Path("/work/shared/conformance")


def table(store: InMemoryLogStore) -> deltalog.Table:
    # these tests call verify_crc themselves; the table would otherwise verify on load
    return deltalog.Table("memory://t", store=store, verify_checksums=False)


def sample(store: InMemoryLogStore) -> None:
    new_table(store)
    write_commit(
        store,
        1,
        commit_info(txnId="abc-123"),
        add("a.parquet", size=100),
        add("b.parquet", size=23),
        {"txn": {"appId": "etl", "version": 4, "lastUpdated": 9}},
        {"domainMetadata": {"domain": "app.x", "configuration": "{}", "removed": False}},
    )


def test_write_read_and_verify_round_trip() -> None:
    store = InMemoryLogStore()
    sample(store)
    snap = table(store).snapshot()
    assert write_crc(snap) == "_delta_log/00000000000000000001.crc"
    raw = json.loads(store.read(crc_path(1)))
    assert raw["tableSizeBytes"] == 123 and raw["numFiles"] == 2
    assert raw["numMetadata"] == 1 and raw["numProtocol"] == 1 and raw["txnId"] == "abc-123"
    assert raw["metadata"]["id"] == snap.metadata.id and raw["protocol"]["minWriterVersion"] == 2
    assert raw["setTransactions"] == [{"appId": "etl", "version": 4, "lastUpdated": 9}]
    assert raw["domainMetadata"] == [{"domain": "app.x", "configuration": "{}", "removed": False}]
    assert "allFiles" not in raw and "inCommitTimestampOpt" not in raw
    crc = read_crc(store, 1)
    assert crc is not None and crc == checksum_for(snap)
    verify_crc(snap)
    verify_crc(table(store).snapshot(0))  # no crc for version 0: nothing to check


def test_write_is_put_if_absent() -> None:
    store = InMemoryLogStore()
    sample(store)
    store.write(crc_path(1), b'{"tableSizeBytes":1,"numFiles":1,"numMetadata":1,"numProtocol":1}', overwrite=False)
    assert write_crc(table(store).snapshot()) is None
    assert json.loads(store.read(crc_path(1)))["tableSizeBytes"] == 1


def test_write_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(InMemoryLogStore):
        def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
            if path.endswith(".crc"):
                raise OSError("disk full")
            super().write(path, data, overwrite=overwrite)

    store = Broken()
    sample(store)
    with caplog.at_level(logging.WARNING):
        assert write_crc(table(store).snapshot()) is None
    assert "disk full" in caplog.text


def test_disagreement_names_the_crc_file() -> None:
    store = InMemoryLogStore()
    sample(store)
    write_crc(table(store).snapshot())
    write_commit(store, 2, remove("a.parquet", deletionTimestamp=1))
    store.write(crc_path(2), store.read(crc_path(1)), overwrite=False)  # stale copy: wrong counts
    snap = table(store).snapshot()
    with pytest.raises(CorruptLogError) as err:
        verify_crc(snap)
    assert err.value.file == "_delta_log/00000000000000000002.crc" and err.value.version == 2
    assert "numFiles: 2 in the checksum, 1 replayed" in str(err.value)
    with pytest.raises(CorruptLogError, match=r"00000000000000000002\.crc"):
        deltalog.Table("memory://t", store=store).snapshot()  # verified on load by default
    assert "tableSizeBytes" in str(err.value)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("metadata", {"id": "other", "format": {"provider": "parquet"}, "partitionColumns": []}, "metadata id"),
        ("protocol", {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly"]}, "protocol"),
        ("setTransactions", [{"appId": "etl", "version": 5}], "setTransactions"),
        ("domainMetadata", [], "domainMetadata"),
        ("numMetadata", 2, "numMetadata"),
    ],
)
def test_each_field_is_checked(field: str, value: object, needle: str) -> None:
    store = InMemoryLogStore()
    sample(store)
    snap = table(store).snapshot()
    body = checksum_for(snap).to_dict()
    body[field] = value
    store.write(crc_path(1), json.dumps(body).encode(), overwrite=False)
    with pytest.raises(CorruptLogError, match=needle):
        verify_crc(snap)


@pytest.mark.parametrize(
    "content",
    [
        b"malformed",
        b"[]",
        b'{"numFiles":1}',
        b'{"tableSizeBytes":"x","numFiles":1,"numMetadata":1,"numProtocol":1}',
        b'{"tableSizeBytes":1,"numFiles":1,"numMetadata":1,"numProtocol":1,"metadata":{"id":3}}',
    ],
)
def test_malformed_crc_is_ignored(content: bytes, caplog: pytest.LogCaptureFixture) -> None:
    store = InMemoryLogStore()
    sample(store)
    store.write(crc_path(1), content, overwrite=False)
    with caplog.at_level(logging.INFO):
        assert read_crc(store, 1) is None
        verify_crc(table(store).snapshot())
    assert "malformed" in caplog.text


def test_in_commit_timestamp_and_deletion_vector_counts() -> None:
    store = InMemoryLogStore()
    feats = {"readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors", "inCommitTimestamp"]}
    write_commit(
        store,
        0,
        commit_info(inCommitTimestamp=1000),
        protocol(3, 7, **feats),
        metadata(**{"delta.enableInCommitTimestamps": "true"}),
    )
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 1,
        "sizeInBytes": 36,
        "cardinality": 5,
    }
    write_commit(store, 1, commit_info(inCommitTimestamp=2000), add("a.parquet", deletionVector=dv), add("b.parquet"))
    snap = table(store).snapshot()
    write_crc(snap)
    raw = json.loads(store.read(crc_path(1)))
    assert raw["inCommitTimestampOpt"] == 2000
    assert raw["numDeletionVectorsOpt"] == 1 and raw["numDeletedRecordsOpt"] == 5
    verify_crc(snap)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="conformance corpus not available")
def test_corpus_checksums_verify_clean() -> None:
    checked = 0
    for crc in sorted(CORPUS.rglob("_delta_log/[0-9]*.crc")):
        root = crc.parent.parent
        version = int(crc.name.split(".")[0])
        try:
            snap = deltalog.Table(root, verify_checksums=False).snapshot(version)
        except (UnsupportedFeatureError, deltalog.TableNotFoundError, ModuleNotFoundError):
            continue
        if root.name == "crc-full":  # synthetic fixture: its crc claims files the log does not hold
            with pytest.raises(CorruptLogError, match="numFiles: 10 in the checksum, 0 replayed"):
                verify_crc(snap)
            continue
        verify_crc(snap)
        checked += 1
    assert checked >= 50


def test_write_then_verify_after_many_commits() -> None:
    store = InMemoryLogStore()
    new_table(store, ["part"])
    for v in range(1, 6):
        write_commit(store, v, add(f"part=a/{v}.parquet", "a", size=v), remove(f"part=a/{v - 1}.parquet"))
        snap = table(store).snapshot()
        write_crc(snap)
        verify_crc(table(store).snapshot())
    assert read_crc(store, 5) is not None and read_crc(store, 5).table_size_bytes == 5  # type: ignore[union-attr]
