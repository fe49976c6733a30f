"""Commit coordination through a DynamoDB table, for S3-compatible stores without conditional puts.

Some S3-compatible stores ignore ``If-None-Match``, so two writers can both "create" commit ``N`` and one
silently replaces the other. On such stores deltalog commits through the lock-table protocol of
delta-spark's ``S3DynamoDBLogStore`` (same table layout, so both can write one table together):

* the lock table has the hash key ``tablePath`` and the range key ``fileName`` (strings); an entry also
  holds ``tempPath`` (relative to ``_delta_log``), ``complete`` (``"true"`` / ``"false"``) and, once
  complete, ``expireTime`` (epoch seconds, for DynamoDB's TTL);
* to commit ``N``: write the content to ``_delta_log/.tmp/<N>.json.<uuid>``; put the entry
  ``(tablePath, N.json, tempPath, complete=false)`` on condition ``attribute_not_exists(fileName)`` --
  *this* is the put-if-absent, and a failed condition means another writer owns version ``N`` -- unless the
  entry names this writer's own temporary file (the client retried a put whose response was lost), and then
  the commit is ours; copy the temporary file to ``_delta_log/<N>.json``; mark the entry complete with an
  expiry a day later;
* a writer that lost ``N`` to an entry not yet complete copies the winner's temporary file into the log for
  it (the same bytes the winner copies), so that it can read the winning commit and check its conflicts
  instead of finding a version that is claimed but not in the log;
* before listing the log, a reader looks at the table's newest entry and, if a writer died between the
  entry and the copy, finishes the copy for it (the content is in the temporary file).

Options (as delta-spark and delta-rs spell them): ``AWS_S3_LOCKING_PROVIDER=dynamodb``,
``DELTA_DYNAMO_TABLE_NAME`` (default ``delta_log``), ``AWS_ENDPOINT_URL_DYNAMODB``; credentials and region
as for S3. The table is created (on-demand capacity) when it does not exist. Requires ``boto3``.

Example:
    >>> lock = DynamoDBLockTable("s3://bucket/t", {"AWS_REGION": "us-east-1"})     # doctest: +SKIP
    >>> lock.commit(store, 7, b'{"commitInfo":{}}\\n')                            # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Mapping
from typing import Any

from deltalog.errors import InvalidArgumentError, StorageError, StorageIOError, StoragePermissionError

__all__ = ["DEFAULT_TABLE_NAME", "EXPIRE_SECONDS", "DynamoDBLockTable"]

DEFAULT_TABLE_NAME = "delta_log"
#: Seconds a completed entry is kept (its ``expireTime``), as delta-spark does.
EXPIRE_SECONDS = 86_400
_LOG = "_delta_log"


def _option(options: Mapping[str, Any], *names: str) -> str | None:
    lowered = {str(k).lower(): v for k, v in options.items()}
    for name in names:
        if lowered.get(name) is not None:
            return str(lowered[name])
    return None


def _plain(item: Mapping[str, Any]) -> dict[str, str]:
    """A DynamoDB item (``{"fileName": {"S": "..."}, ...}``) as plain ``{name: value}``."""
    return {k: next(iter(v.values())) for k, v in item.items()}


class DynamoDBLockTable:
    """The lock table of one Delta table (see the module docstring). ``table_path`` is the table's URI as
    it is stored in ``tablePath`` (``s3://bucket/path``, no trailing ``/``).

    Example:
        >>> DynamoDBLockTable("s3a://bucket/events", {}).table_path               # doctest: +SKIP
        's3a://bucket/events'
    """

    def __init__(self, table_path: str, options: Mapping[str, Any]) -> None:
        try:
            import boto3
        except ImportError:  # pragma: no cover -- boto3 is part of the test and dynamodb extras
            raise InvalidArgumentError(
                "AWS_S3_LOCKING_PROVIDER=dynamodb needs boto3: pip install 'deltalog[dynamodb]'", table=table_path
            ) from None
        self.table_path = table_path.rstrip("/")
        self.name = _option(options, "delta_dynamo_table_name", "dynamo_table_name", "lock_table_name") \
            or DEFAULT_TABLE_NAME
        kwargs: dict[str, Any] = {}
        endpoint = _option(options, "aws_endpoint_url_dynamodb")
        if endpoint:
            kwargs["endpoint_url"] = endpoint
        region = _option(options, "aws_region", "region", "aws_default_region", "default_region")
        if region:
            kwargs["region_name"] = region
        key = _option(options, "aws_access_key_id", "access_key_id")
        secret = _option(options, "aws_secret_access_key", "secret_access_key")
        if key and secret:
            kwargs.update(aws_access_key_id=key, aws_secret_access_key=secret,
                          aws_session_token=_option(options, "aws_session_token", "session_token"))
        self._client = boto3.client("dynamodb", **kwargs)
        self._ready = False

    # ------------------------------------------------------------------------------------------ errors

    def _named(self, exc: Exception, doing: str) -> StorageError:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", type(exc).__name__)
        if code in ("AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException"):
            return StoragePermissionError(
                f"DynamoDB refused {doing} on lock table {self.name!r} ({code}): check the credentials and their "
                "permissions on the table", table=self.table_path)
        return StorageIOError(f"DynamoDB failed {doing} on lock table {self.name!r} ({code})", table=self.table_path)

    def ensure_table(self) -> None:
        """Create the lock table (on-demand capacity) unless it exists; waits until it is active.

        Example:
            >>> lock.ensure_table()                                                 # doctest: +SKIP
        """
        if self._ready:
            return
        client = self._client
        try:
            client.describe_table(TableName=self.name)
        except client.exceptions.ResourceNotFoundException:
            with contextlib.suppress(client.exceptions.ResourceInUseException):  # another writer made it
                client.create_table(
                    TableName=self.name,
                    KeySchema=[{"AttributeName": "tablePath", "KeyType": "HASH"},
                               {"AttributeName": "fileName", "KeyType": "RANGE"}],
                    AttributeDefinitions=[{"AttributeName": "tablePath", "AttributeType": "S"},
                                          {"AttributeName": "fileName", "AttributeType": "S"}],
                    BillingMode="PAY_PER_REQUEST",
                )
            client.get_waiter("table_exists").wait(TableName=self.name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        except Exception as exc:
            raise self._named(exc, "describing or creating the table") from None
        self._ready = True

    # ---------------------------------------------------------------------------------------- protocol

    def commit(self, store: Any, file_name: str, data: bytes) -> None:
        """Commit ``data`` as ``_delta_log/<file_name>`` of ``store`` through the lock table; raises
        :class:`FileExistsError` when another writer holds that version.

        Example:
            >>> lock.commit(store, "00000000000000000003.json", payload)              # doctest: +SKIP
        """
        self.ensure_table()
        temp = f".tmp/{file_name}.{uuid.uuid4()}"
        store.put_unconditional(f"{_LOG}/{temp}", data)
        client = self._client
        try:
            client.put_item(
                TableName=self.name,
                Item={"tablePath": {"S": self.table_path}, "fileName": {"S": file_name},
                      "tempPath": {"S": temp}, "complete": {"S": "false"}},
                ConditionExpression="attribute_not_exists(fileName)",
            )
        except client.exceptions.ConditionalCheckFailedException:
            entry = self._entry(file_name)
            if entry is not None and entry.get("tempPath") == temp:
                pass  # our own claim: the client retried a put whose first response was lost
            else:
                if entry is not None:  # an entry that cannot be read might be ours: its file stays for a repair
                    store.delete(f"{_LOG}/{temp}")
                    if entry.get("complete") != "true":
                        self._help(store, file_name, entry)
                raise FileExistsError(17, "another writer holds this version in the lock table", file_name) from None
        except Exception as exc:
            raise self._named(exc, f"claiming {file_name}") from None
        self._finish(store, file_name, temp, data)

    def _entry(self, file_name: str) -> dict[str, str] | None:
        """The entry of ``file_name`` (consistent read), or None when it cannot be read."""
        try:
            item = self._client.get_item(
                TableName=self.name, Key={"tablePath": {"S": self.table_path}, "fileName": {"S": file_name}},
                ConsistentRead=True,
            ).get("Item")
        except Exception:
            return None  # the caller treats the version as another writer's
        return _plain(item) if item else None

    def _help(self, store: Any, file_name: str, entry: dict[str, str]) -> None:
        """Finish another writer's claimed commit (copy its temporary file into the log), so that a loser
        reading the commit back finds it instead of a version that is claimed but not yet in the log. The
        winner may be finishing it at the same moment: both copy the same bytes. A failure is left to the
        winner (or to the next reader's :meth:`repair`)."""
        with contextlib.suppress(Exception):
            self._finish(store, file_name, entry["tempPath"], None)

    def _finish(self, store: Any, file_name: str, temp: str, data: bytes | None) -> None:
        """Copy the temporary file to the commit file (if it is not there yet) and mark the entry complete."""
        target = f"{_LOG}/{file_name}"
        if not store.exists(target):
            payload = data if data is not None else store.read(f"{_LOG}/{temp}")
            store.put_unconditional(target, payload)
        try:
            self._client.update_item(
                TableName=self.name,
                Key={"tablePath": {"S": self.table_path}, "fileName": {"S": file_name}},
                UpdateExpression="SET complete = :t, expireTime = :e",
                ExpressionAttributeValues={":t": {"S": "true"}, ":e": {"N": str(int(time.time()) + EXPIRE_SECONDS)}},
            )
        except Exception as exc:
            raise self._named(exc, f"completing {file_name}") from None

    def latest_entry(self) -> dict[str, str] | None:
        """The newest entry of this table (``fileName``, ``tempPath``, ``complete``), or None.

        Example:
            >>> lock.latest_entry()                                                 # doctest: +SKIP
            {'fileName': '00000000000000000003.json', 'tempPath': '.tmp/...', 'complete': 'true'}
        """
        self.ensure_table()
        try:
            found = self._client.query(
                TableName=self.name, KeyConditionExpression="tablePath = :p",
                ExpressionAttributeValues={":p": {"S": self.table_path}}, ScanIndexForward=False, Limit=1,
                ConsistentRead=True,
            )
        except Exception as exc:
            raise self._named(exc, "reading the newest entry") from None
        items = found.get("Items") or []
        if not items:
            return None
        return _plain(items[0])

    def repair(self, store: Any) -> None:
        """Finish the newest commit if its writer died after claiming it (see the module docstring).

        Example:
            >>> lock.repair(store)                                                  # doctest: +SKIP
        """
        entry = self.latest_entry()
        if entry is None or entry.get("complete") == "true":
            return
        try:
            self._finish(store, entry["fileName"], entry["tempPath"], None)
        except FileNotFoundError:
            raise StorageIOError(
                f"the lock table says {entry['fileName']} is being committed, but its temporary file "
                f"{_LOG}/{entry['tempPath']} is gone; the table cannot be repaired automatically",
                table=self.table_path, file=f"{_LOG}/{entry['fileName']}") from None
