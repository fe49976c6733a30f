"""UniForm on object stores (issue 56, item 6): the Iceberg metadata is written through the table's store, so
pyiceberg opens an S3 (moto) table from its path alone with its own S3 file system, and an Azure (azurite)
table with a file IO over deltalog's store (pyiceberg has no ``az://`` file system)."""

from __future__ import annotations

import sys

import pyarrow as pa
import pytest

import deltalog
import deltalog.uniform
from iceberg_readers import duckdb_rows, extension_path, pyiceberg_rows, store_file_io_class

pytestmark = pytest.mark.objectstore
pytest.importorskip("pyiceberg")

UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}


def _iceberg_properties(uri: str, opts: dict[str, str]) -> dict[str, str]:
    if uri.startswith("s3://"):
        return {"s3.endpoint": opts["AWS_ENDPOINT_URL"], "s3.access-key-id": opts["AWS_ACCESS_KEY_ID"],
                "s3.secret-access-key": opts["AWS_SECRET_ACCESS_KEY"], "s3.region": opts["AWS_REGION"]}
    cls = store_file_io_class()
    module = sys.modules[__name__]
    module.ObjectStoreIO = cls  # type: ignore[attr-defined]
    return {"py-io-impl": f"{__name__}.ObjectStoreIO", **{f"deltalog.option.{k}": v for k, v in opts.items()}}


@pytest.mark.parametrize("kind", ["s3", "azure"])
def test_uniform_on_object_stores(kind: str, request: pytest.FixtureRequest) -> None:
    uri, opts = request.getfixturevalue(f"{kind}_table")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "day": ["a", "b b", None]})
    deltalog.write_table(uri, data, partition_by=["day"], properties=UNIFORM, storage_options=opts)
    deltalog.write_table(uri, pa.table({"id": pa.array([4], pa.int64()), "day": ["c"]}), mode="append",
                         storage_options=opts)
    table = deltalog.Table(uri, storage_options=opts)
    table.delete("id = 2")
    props = _iceberg_properties(uri, opts)
    expected = sorted(zip(*[table.snapshot().to_arrow().column(c).to_pylist() for c in ("id", "day")]))
    assert pyiceberg_rows(uri, ["id", "day"], properties=props) == expected
    if kind == "s3":  # DuckDB's iceberg extension over its httpfs extension
        endpoint = opts["AWS_ENDPOINT_URL"].split("://", 1)[1]
        setup = [f"LOAD '{extension_path('duckdb_extension_httpfs')}'",
                 f"CREATE SECRET (TYPE s3, KEY_ID '{opts['AWS_ACCESS_KEY_ID']}', "
                 f"SECRET '{opts['AWS_SECRET_ACCESS_KEY']}', REGION '{opts['AWS_REGION']}', ENDPOINT '{endpoint}', "
                 "URL_STYLE 'path', USE_SSL false)"]
        assert duckdb_rows(uri, ["id", "day"], setup=setup) == expected
    assert deltalog.uniform.sync(table).mode == "up-to-date"
    hint = table.snapshot().store.read("metadata/version-hint.text")
    assert hint == b"3"
