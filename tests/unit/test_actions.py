from __future__ import annotations

import json

import pytest

from deltalog.errors import CorruptLogError
from deltalog.protocol.actions import (
    Add,
    CheckpointMetadata,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    Remove,
    Sidecar,
    Txn,
    action_to_json,
    parse_action,
)

LINES = [
    '{"add":{"path":"a=1/f.parquet","partitionValues":{"a":"1"},"size":1,"modificationTime":2,'
    '"dataChange":true,"stats":"{}","tags":{"t":"v"},"deletionVector":{"storageType":"u",'
    '"pathOrInlineDv":"ab","offset":1,"sizeInBytes":3,"cardinality":4},"baseRowId":5,'
    '"defaultRowCommitVersion":6,"clusteringProvider":"liquid"}}',
    '{"remove":{"path":"f.parquet","deletionTimestamp":3,"dataChange":false,"extendedFileMetadata":true,'
    '"partitionValues":{},"size":9}}',
    '{"metaData":{"id":"x","name":"n","format":{"provider":"parquet","options":{}},"schemaString":"{}",'
    '"partitionColumns":["a"],"configuration":{"delta.appendOnly":"true"},"createdTime":1}}',
    '{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],'
    '"writerFeatures":["deletionVectors"]}}',
    '{"txn":{"appId":"app","version":3,"lastUpdated":4}}',
    '{"commitInfo":{"timestamp":1,"operation":"WRITE","operationParameters":{"mode":"Append"},'
    '"custom":{"nested":[1,2]}}}',
    '{"domainMetadata":{"domain":"d","configuration":"{}","removed":false}}',
    '{"checkpointMetadata":{"version":10}}',
    '{"sidecar":{"path":"s.parquet","sizeInBytes":1,"modificationTime":2}}',
    '{"cdc":{"path":"_change_data/c.parquet","partitionValues":{},"size":1,"dataChange":false}}',
]


@pytest.mark.parametrize("line", LINES)
def test_round_trip_keeps_every_field(line: str) -> None:
    action = parse_action(line)
    assert action is not None
    assert json.loads(action_to_json(action)) == json.loads(line)


def test_types() -> None:
    kinds = [type(parse_action(line)) for line in LINES[:9]]
    assert kinds == [Add, Remove, Metadata, Protocol, Txn, CommitInfo, DomainMetadata,
                     CheckpointMetadata, Sidecar]


def test_unknown_fields_are_preserved_and_unknown_actions_ignored() -> None:
    a = parse_action('{"add":{"path":"p","partitionValues":{},"size":1,"modificationTime":1,'
                     '"dataChange":true,"futureField":{"x":1}}}')
    assert isinstance(a, Add)
    assert a.extra == {"futureField": {"x": 1}}
    assert '"futureField":{"x":1}' in action_to_json(a)
    assert parse_action('{"someFutureAction":{"x":1}}') is None


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ('{"add":{"path":"p","size":1}', "not valid JSON"),
        ('{"add":{"path":"p","partitionValues":{},"size":"1","modificationTime":1,"dataChange":true}}',
         "'add.size' must be of JSON type int"),
        ('{"add":{"partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}',
         "missing required field 'path'"),
        ('{"protocol":{"minReaderVersion":true,"minWriterVersion":2}}', "must be an integer"),
        ('{"metaData":{"id":"x","format":{"provider":"parquet"},"partitionColumns":"a"}}',
         "'metaData.partitionColumns' must be a list of strings"),
        ("[1,2]", "must be a JSON object"),
        ('{"txn":{"appId":"a","version":1},"protocol":{"minReaderVersion":1,"minWriterVersion":1}}',
         "more than one action"),
    ],
)
def test_malformed_lines_name_file_and_line(line: str, fragment: str) -> None:
    with pytest.raises(CorruptLogError) as err:
        parse_action(line, table="/t", version=4, file="_delta_log/4.json", line=7)
    msg = str(err.value)
    assert fragment in msg
    assert "table /t" in msg and "version 4" in msg and "line 7" in msg
