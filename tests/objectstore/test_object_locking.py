"""Stores that ignore conditional creates: detected and refused, unless commits go through a DynamoDB lock
table (delta-spark's S3DynamoDBLogStore layout, served by moto), which then keeps concurrent writers safe."""

from __future__ import annotations

import multiprocessing as mp
import time
import uuid
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.commands.check import check_table
from deltalog.errors import ConditionalPutUnsupportedError
from deltalog.storage import store_for

pytestmark = pytest.mark.objectstore


@pytest.fixture
def ignoring(moto_server: Any, ignoring_proxy: Any) -> tuple[str, dict[str, str]]:
    """A table on a bucket reached through the proxy that drops If-None-Match."""
    import emulators

    bucket = emulators.new_bucket(moto_server)
    return f"s3://{bucket}/t", {**moto_server.options, "AWS_ENDPOINT_URL": ignoring_proxy.endpoint}


def locked(options: dict[str, str], moto_server: Any, table: str) -> dict[str, str]:
    return {**options, "AWS_S3_LOCKING_PROVIDER": "dynamodb", "DELTA_DYNAMO_TABLE_NAME": table,
            "AWS_ENDPOINT_URL_DYNAMODB": moto_server.endpoint}


def row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64())})


def test_the_proxy_really_ignores_conditional_creates(ignoring: tuple[str, dict[str, str]]) -> None:
    import obstore

    uri, opts = ignoring
    store = store_for(uri, options=opts)
    obstore.put(store.obstore, "k", b"1", mode="create")  # type: ignore[attr-defined]
    obstore.put(store.obstore, "k", b"2", mode="create")  # type: ignore[attr-defined]  # not refused
    assert store.read("k") == b"2"


def test_a_store_ignoring_conditional_creates_is_refused_with_nothing_left(
    ignoring: tuple[str, dict[str, str]]
) -> None:
    uri, opts = ignoring
    with pytest.raises(ConditionalPutUnsupportedError) as info:
        deltalog.write_table(uri, row(1), storage_options=opts)
    message = str(info.value)
    assert "does not honour conditional creates" in message and "AWS_S3_LOCKING_PROVIDER=dynamodb" in message
    assert "nothing was committed" in message
    leftovers = [f.path for f in store_for(uri, options=opts).list_dir("", recursive=True)]
    assert leftovers == []  # the data file was deleted, no commit, no probe key


def test_declared_unsupported_needs_no_probe(s3_table: tuple[str, dict[str, str]]) -> None:
    uri, opts = s3_table
    with pytest.raises(ConditionalPutUnsupportedError, match="conditional_put=disabled"):
        deltalog.write_table(uri, row(1), storage_options={**opts, "conditional_put": "disabled"})


def test_commits_through_the_lock_table_use_delta_sparks_layout(
    ignoring: tuple[str, dict[str, str]], moto_server: Any
) -> None:
    import emulators

    uri, opts = ignoring
    opts = locked(opts, moto_server, "delta_log_layout")
    deltalog.write_table(uri, row(0), storage_options=opts)
    deltalog.write_table(uri, row(1), mode="append", storage_options=opts)
    assert sorted(deltalog.Table(uri, storage_options=opts).snapshot().to_arrow().column("id").to_pylist()) == [0, 1]
    import boto3

    client = boto3.client("dynamodb", endpoint_url=moto_server.endpoint, region_name=emulators.REGION,
                          aws_access_key_id=emulators.ACCESS_KEY, aws_secret_access_key=emulators.SECRET_KEY)
    keys = {k["AttributeName"]: k["KeyType"] for k in
            client.describe_table(TableName="delta_log_layout")["Table"]["KeySchema"]}
    assert keys == {"tablePath": "HASH", "fileName": "RANGE"}
    items = client.scan(TableName="delta_log_layout")["Items"]
    assert sorted(i["fileName"]["S"] for i in items) == [f"{0:020d}.json", f"{1:020d}.json"]
    for item in items:
        assert item["tablePath"]["S"] == uri and item["complete"]["S"] == "true"
        assert item["tempPath"]["S"].startswith(".tmp/" + item["fileName"]["S"] + ".")
        assert int(item["expireTime"]["N"]) > time.time()


def test_a_writer_that_died_after_claiming_a_version_is_finished_by_the_next_reader(
    ignoring: tuple[str, dict[str, str]], moto_server: Any
) -> None:
    uri, opts = ignoring
    opts = locked(opts, moto_server, "delta_log_recovery")
    deltalog.write_table(uri, row(0), storage_options=opts)
    _claim_without_copy(uri, opts, moto_server, "delta_log_recovery", 1, 1)  # and dies
    snap = deltalog.Table(uri, storage_options=opts).snapshot()
    assert snap.version == 1 and snap.to_arrow().num_rows == 2  # the reader finished the dead writer's commit
    deltalog.write_table(uri, row(2), mode="append", storage_options=opts)
    assert deltalog.Table(uri, storage_options=opts).snapshot().version == 2


def _add_of(uri: str, opts: dict[str, str], value: int) -> Any:
    """The ``add`` of a new data file holding ``row(value)`` (nothing committed)."""
    from deltalog.data.write_files import DataFileWriter

    schema = deltalog.Table(uri, storage_options=opts).snapshot().schema
    writer = DataFileWriter(store_for(uri, options=opts), schema, [])
    writer.write(row(value))
    [written] = writer.close()
    return written.to_add()


def _claim_without_copy(uri: str, opts: dict[str, str], moto_server: Any, lock_table: str, version: int,
                        value: int) -> None:
    """What a writer leaves between claiming ``version`` in the lock table and copying it into the log."""
    import boto3

    import emulators
    from deltalog.protocol.actions import CommitInfo, action_to_json

    store = store_for(uri, options=opts)
    body = "\n".join([action_to_json(CommitInfo(operation="WRITE", timestamp=int(time.time() * 1000))),
                      action_to_json(_add_of(uri, opts, value))]) + "\n"
    temp = f".tmp/{version:020d}.json.{uuid.uuid4()}"
    store.put_unconditional(f"_delta_log/{temp}", body.encode())  # type: ignore[attr-defined]
    client = boto3.client("dynamodb", endpoint_url=moto_server.endpoint, region_name=emulators.REGION,
                          aws_access_key_id=emulators.ACCESS_KEY, aws_secret_access_key=emulators.SECRET_KEY)
    client.put_item(TableName=lock_table, Item={
        "tablePath": {"S": uri}, "fileName": {"S": f"{version:020d}.json"},
        "tempPath": {"S": temp}, "complete": {"S": "false"}})


def test_a_writer_losing_to_a_claim_not_yet_in_the_log_commits_next(
    ignoring: tuple[str, dict[str, str]], moto_server: Any
) -> None:
    """The race the concurrent test hits now and then: the winner claimed version 1 in the lock table but
    has not copied it into the log when the loser's claim fails. The loser copies the winner's commit for
    it (so it can read what won) and commits version 2, instead of an unknown outcome."""
    from deltalog.txn.operations import Write
    from deltalog.txn.transaction import start_transaction

    uri, opts = ignoring
    opts = locked(opts, moto_server, "delta_log_in_flight")
    deltalog.write_table(uri, row(0), storage_options=opts)
    table = deltalog.Table(uri, storage_options=opts)
    txn = start_transaction(table, Write(mode="Append"))  # reads version 0
    txn.add_file(_add_of(uri, opts, 2))
    _claim_without_copy(uri, opts, moto_server, "delta_log_in_flight", 1, 1)
    assert not store_for(uri, options=opts).exists(f"_delta_log/{1:020d}.json")
    assert txn.commit().version == 2
    snap = deltalog.Table(uri, storage_options=opts).snapshot()
    assert snap.version == 2 and sorted(snap.to_arrow().column("id").to_pylist()) == [0, 1, 2]
    assert check_table(deltalog.Table(uri, storage_options=opts)).ok


def test_a_claim_the_client_retried_after_a_lost_response_is_ours(
    ignoring: tuple[str, dict[str, str]], moto_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim that succeeded but whose response was lost is retried by the DynamoDB client, and the retry
    fails its condition: the entry names this writer's temporary file, so the commit is ours and lands."""
    from botocore.client import BaseClient

    uri, opts = ignoring
    opts = locked(opts, moto_server, "delta_log_retried")
    deltalog.write_table(uri, row(0), storage_options=opts)
    real = BaseClient._make_api_call
    lost: list[str] = []

    def answer_lost(self: Any, operation: str, params: dict[str, Any]) -> Any:
        out = real(self, operation, params)
        if operation == "PutItem" and "ConditionExpression" in params and not lost:
            lost.append(params["Item"]["tempPath"]["S"])  # stored; the client's retry then fails the condition
            raise self.exceptions.ConditionalCheckFailedException(
                {"Error": {"Code": "ConditionalCheckFailedException", "Message": "The conditional request failed"}},
                operation)
        return out

    monkeypatch.setattr(BaseClient, "_make_api_call", answer_lost)
    assert deltalog.write_table(uri, row(1), mode="append", storage_options=opts).version == 1
    assert len(lost) == 1
    snap = deltalog.Table(uri, storage_options=opts).snapshot()
    assert snap.version == 1 and sorted(snap.to_arrow().column("id").to_pylist()) == [0, 1]


def _appender(uri: str, opts: dict[str, str], writer: int, count: int) -> list[int]:
    from deltalog.txn.commit import RetryPolicy

    return [deltalog.write_table(uri, row(writer * 1000 + i), mode="append", storage_options=opts,
                                 retry=RetryPolicy(max_attempts=200, base_delay=0.01, max_delay=0.2)).version
            for i in range(count)]


def test_concurrent_writers_through_the_lock_table_lose_nothing(
    ignoring: tuple[str, dict[str, str]], moto_server: Any
) -> None:
    uri, opts = ignoring
    opts = locked(opts, moto_server, "delta_log_concurrent")
    deltalog.write_table(uri, pa.table({"id": pa.array([], pa.int64())}), storage_options=opts)
    with mp.get_context("spawn").Pool(4) as pool:
        results = pool.starmap(_appender, [(uri, opts, w, 10) for w in range(4)])
    assert sorted(v for vs in results for v in vs) == list(range(1, 41))
    t = deltalog.Table(uri, storage_options=opts)
    assert sorted(t.snapshot().to_arrow().column("id").to_pylist()) == sorted(
        w * 1000 + i for w in range(4) for i in range(10))
    assert check_table(t).ok
