"""Variant columns (the ``variantType`` table feature; shredded files reassembled): the protocol gate, the
schema and Arrow shape, reads of the corpus tables (decoded and compared with the values their generator
wrote), refused filters, kernel writes, and the binary decoder. The reassembly itself:
test_variant_shredding.py."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import struct
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from logbuilder import commit_info, metadata, protocol, write_commit

import deltalog
from deltalog.data.filters import Condition, _may_match
from deltalog.errors import InvalidArgumentError, InvalidTableError
from deltalog.protocol.actions import Protocol
from deltalog.protocol.conform import to_logical
from deltalog.protocol.features import check_readable
from deltalog.protocol.schema import VARIANT, contains_variant, parse_schema, to_arrow_type
from deltalog.protocol.variant import to_python, to_python_list
from deltalog.storage import LocalLogStore

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/conformance")

#: Unshredded variant tables of the corpus with rows (the stable-feature copy lists files under a
#: test-only name prefix its copy in the corpus lacks, so only its log is checked, by the conformance suite).
READABLE = [
    "kernel-rs-data/unshredded-variant",
    "delta-golden-extra/spark-variant-checkpoint",
    "delta-kernel-defaults/spark-variant-checkpoint",
    # needs variantShredding-preview, but its files hold the same variants unshredded
    "delta-kernel-defaults/spark-shredded-variant-preview-delta",
]
UNSHREDDED_ARROW = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])


def corpus(rel: str) -> Path:
    path = CORPUS / rel
    if not path.is_dir():
        pytest.skip(f"conformance corpus table {rel} is not available")
    return path


# --------------------------------------------------------------------------------------------- gate


@pytest.mark.parametrize("feature", ["variantType", "variantType-preview"])
def test_variant_type_is_a_readable_feature(feature: str) -> None:
    check_readable(Protocol(3, 7, (feature,), (feature, "appendOnly")), table="t")


@pytest.mark.parametrize("shredding", ["variantShredding", "variantShredding-preview"])
def test_shredded_variant_tables_are_readable(shredding: str) -> None:
    features = ("deletionVectors", shredding, "variantType")
    check_readable(Protocol(3, 7, features, features), table="t")


def _variant(column: Any, field: str | None = None) -> list[Any]:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return to_python_list(array.field(field) if field else array)


def test_shredded_corpus_tables_read_as_their_generators_wrote() -> None:
    """Spark-written tables whose files shred the variants (typed_value columns: an object's fields as
    int64 and string, a bare int64), two of them on tables that allow deletion vectors; the values follow each table's
    generator (and equal Spark's own reads of the same files, checked when this reader was written)."""
    data = deltalog.Table(corpus("delta-spark/variant-stats-no-checkpoint")).snapshot().to_arrow()
    ids = data.column("i").to_pylist()
    assert sorted(ids) == list(range(100, 110))
    assert _variant(data.column("v")) == [{"id": i - 100, "name": str(110 - i)} for i in ids]
    assert _variant(data.column("nv"), "v") == [{"id": i - 90, "name": str(120 - i)} for i in ids]

    data = deltalog.Table(corpus("delta-spark/variant-stats-nested-no-checkpoint")).snapshot().to_arrow()
    ids = data.column("i").to_pylist()
    assert len(ids) == 10 and _variant(data.column("s"), "v") == [{"name": f"item_{i}", "value": i} for i in ids]

    data = deltalog.Table(corpus("delta-spark/variant-stats-with-struct-no-checkpoint")).snapshot().to_arrow()
    keys = [s["i"] for s in data.column("s").to_pylist()]
    assert len(keys) == 10 and _variant(data.column("v")) == [{"key": k} for k in keys]

    data = deltalog.Table(corpus("delta-spark/variant-stats-state-reconstruction")).snapshot().to_arrow()
    assert _variant(data.column("v")) == [0]


def test_a_shredded_data_file_is_reassembled_even_without_the_feature() -> None:
    # Real shredded data (a typed_value column) read as if the table only needed variantType.
    table = corpus("delta-spark/variant-stats-no-checkpoint")
    data = pq.read_table(sorted(table.glob("*.parquet"))[0])
    schema = parse_schema('{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}')
    out = to_logical(data.select(["v"]), schema, "none")
    assert out.schema.field("v").type == UNSHREDDED_ARROW
    assert _variant(out.column("v"))[0] == {"id": 0, "name": "10"}


# ----------------------------------------------------------------------------------------- schema


def test_variant_schema_round_trips_nested() -> None:
    text = json.dumps({"type": "struct", "fields": [
        {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
        {"name": "a", "type": {"type": "array", "elementType": "variant", "containsNull": True},
         "nullable": True, "metadata": {}},
        {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": "variant",
                               "valueContainsNull": True}, "nullable": True, "metadata": {}},
    ]}, separators=(",", ":"))
    schema = parse_schema(text)
    assert schema.to_json() == text
    assert schema.field("v").type == VARIANT
    assert all(contains_variant(f.type) for f in schema)
    arrow = schema.to_arrow_schema()
    assert arrow.field("v").type == UNSHREDDED_ARROW == to_arrow_type(VARIANT)
    assert arrow.field("a").type.value_type == UNSHREDDED_ARROW
    assert arrow.field("m").type.item_type == UNSHREDDED_ARROW


def test_a_variant_file_column_of_another_shape_is_a_schema_error() -> None:
    schema = parse_schema('{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}')
    with pytest.raises(deltalog.errors.SchemaError, match="not an unshredded variant"):
        to_logical(pa.table({"v": pa.array([{"value": b"x"}])}), schema, "none")
    with pytest.raises(deltalog.errors.SchemaError, match="not an unshredded variant"):
        to_logical(pa.table({"v": pa.array([{"value": 1, "metadata": b"m"}])}), schema, "none")
    nulls = to_logical(pa.table({"other": [1, 2]}), schema, "none")  # a file without the column
    assert nulls.column("v").to_pylist() == [None, None] and nulls.schema.field("v").type == UNSHREDDED_ARROW


def test_a_variant_partition_column_is_refused(tmp_path: Path) -> None:
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
    ]}
    store = LocalLogStore(str(tmp_path))
    features = {"readerFeatures": ["variantType"], "writerFeatures": ["variantType"]}
    write_commit(store, 0, commit_info(), protocol(3, 7, **features), metadata(["v"], schema))
    with pytest.raises(InvalidTableError, match="partition column 'v' has type variant") as info:
        deltalog.Table(tmp_path).snapshot().to_arrow()
    assert str(tmp_path) in str(info.value)


# ------------------------------------------------------------------------------------------ reads


def _decoded(value: Any) -> Any:
    """Decode every variant struct inside a row value of the corpus tables."""
    if isinstance(value, dict) and set(value) == {"value", "metadata"}:
        return to_python(value["metadata"], value["value"])
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if isinstance(value, tuple):  # a map entry
        return tuple(_decoded(v) for v in value)
    return value


def _generated_row(i: int) -> dict[str, Any]:
    """What the generator of these tables (their info.txt) wrote for id ``i``."""
    v = {"key": i}
    return {
        "id": i,
        "v": v,
        "array_of_variants": [v, None, v, None, v],
        "struct_of_variants": {"v": v},
        "map_of_variants": [(str(i), v), ("nullKey", None)],
        "array_of_struct_of_variants": [{"v": v}, {"v": None}, None, {"v": v}, None, {"v": v}],
        "struct_of_array_of_variants": {"v": [None, v]},
    }


@pytest.mark.parametrize("name", READABLE)
def test_corpus_variant_tables_read_and_decode(name: str) -> None:
    snap = deltalog.Table(corpus(name)).snapshot()
    data = snap.to_arrow()
    assert data.num_rows == 102
    assert data.schema.field("v").type == UNSHREDDED_ARROW
    rows = sorted((_decoded(r) for r in data.to_pylist()), key=lambda r: r["id"])
    # ids 0..99 from the first commit, then ids 0 and 1 appended once more
    want = sorted([_generated_row(i) for i in [*range(100), 0, 1]], key=lambda r: r["id"])
    assert rows == want


def test_projection_and_id_filter_skip_files_and_variant_filters_are_refused() -> None:
    snap = deltalog.Table(corpus("kernel-rs-data/unshredded-variant")).snapshot()
    out = snap.to_arrow(columns=["id", "v"], filter=[("id", ">=", 98)])
    assert sorted(zip(out.column("id").to_pylist(), to_python_list(out.column("v")))) == [
        (98, {"key": 98}), (99, {"key": 99})
    ]
    for column in ("v", "struct_of_variants", "map_of_variants"):
        with pytest.raises(InvalidArgumentError, match=f"filter on column '{column}'.*variant") as info:
            snap.to_arrow(filter=[(column, "=", 1)])
        assert snap.table in str(info.value)


def test_variant_statistics_never_skip_files() -> None:
    schema = parse_schema('{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}')
    stats = json.dumps({"numRecords": 2, "minValues": {"v": "a"}, "maxValues": {"v": "b"}, "nullCount": {"v": 0}})
    assert _may_match(stats, [Condition("v", "=", "z")], schema, "none")


# ----------------------------------------------------------------------------------------- writes


@pytest.fixture
def variant_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "variant"
    shutil.copytree(corpus("kernel-rs-data/unshredded-variant"), dest)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def test_kernel_writes_to_variant_tables(variant_copy: Path) -> None:
    """Appends of the variants the kernel read (nested in structs, arrays and maps, null ones included),
    a copy-on-write DELETE and a checkpoint on the corpus ``variantType-preview`` table; the decoded
    values and DuckDB's read agree afterwards, and the file statistics count null variants."""
    from readers import duckdb_rows

    table = deltalog.Table(variant_copy)
    before = table.snapshot().to_arrow()
    deltalog.write_table(variant_copy, before.slice(0, 10), mode="append")
    table.delete([("id", "=", 1)])
    table.checkpoint()
    snap = table.snapshot()
    assert snap.protocol.readerFeatures == ("variantType-preview",)
    got = snap.to_arrow()
    ids = sorted(r for r in got.column("id").to_pylist())
    assert ids == sorted([i for i in before.column("id").to_pylist() if i != 1]
                         + [i for i in before.slice(0, 10).column("id").to_pylist() if i != 1])

    def decoded(rows: pa.Table) -> list[tuple[Any, ...]]:
        out = []
        for r in rows.to_pylist():
            out.append((r["id"], None if r["v"] is None else json.dumps(to_python(r["v"]["metadata"], r["v"]["value"]),
                                                                      sort_keys=True, default=str)))
        return sorted(out, key=repr)

    first = {r[0]: r[1] for r in decoded(before.slice(0, 10))}
    assert all(r[1] == first[r[0]] for r in decoded(got) if r[0] in first)
    assert sorted(r[0] for r in duckdb_rows(str(variant_copy), ["id"])) == ids
    newest = max(snap.add_files().to_pylist(), key=lambda f: f["modificationTime"])
    assert "v" in json.loads(newest["stats"])["nullCount"]


# ---------------------------------------------------------------------------------------- decoder

EMPTY = b"\x01\x00\x00"  # metadata: version 1, no keys


def prim(type_id: int, payload: bytes = b"") -> bytes:
    return bytes([type_id << 2]) + payload


def test_decoder_primitives() -> None:
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    cases: list[tuple[bytes, Any]] = [
        (prim(0), None),
        (prim(1), True),
        (prim(2), False),
        (prim(3, b"\xff"), -1),
        (prim(4, struct.pack("<h", -300)), -300),
        (prim(5, struct.pack("<i", 70000)), 70000),
        (prim(6, struct.pack("<q", -(2**40))), -(2**40)),
        (prim(7, struct.pack("<d", 1e300)), 1e300),
        (prim(8, b"\x02" + struct.pack("<i", -150)), Decimal("-1.50")),
        (prim(9, b"\x00" + struct.pack("<q", 12345678901)), Decimal(12345678901)),
        (prim(10, b"\x03" + (10**30).to_bytes(16, "little", signed=True)), Decimal(10**30).scaleb(-3)),
        (prim(11, struct.pack("<i", 19782)), dt.date(2024, 2, 29)),
        (prim(11, struct.pack("<i", -1)), dt.date(1969, 12, 31)),
        (prim(12, struct.pack("<q", 1_000_001)), dt.datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=dt.UTC)),
        (prim(13, struct.pack("<q", -1)), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
        (prim(14, struct.pack("<f", 1.5)), 1.5),
        (prim(15, struct.pack("<i", 3) + b"\x00\x01\x02"), b"\x00\x01\x02"),
        (prim(16, struct.pack("<i", 70) + b"x" * 70), "x" * 70),
        (prim(17, struct.pack("<q", 3_600_000_001)), dt.time(1, 0, 0, 1)),
        (prim(18, struct.pack("<q", 1_000_001_999)), dt.datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=dt.UTC)),
        (prim(19, struct.pack("<q", 2_000)), dt.datetime(1970, 1, 1, 0, 0, 0, 2)),
        (prim(20, u.bytes), u),
        (b"\x0dabc", "abc"),  # a short string
    ]
    for value, want in cases:
        got = to_python(EMPTY, value)
        assert got == want and type(got) is type(want), (value, got)


def _metadata(keys: list[str], offset_size: int = 1) -> bytes:
    encoded = [k.encode() for k in keys]
    offsets = [0]
    for e in encoded:
        offsets.append(offsets[-1] + len(e))
    header = 0x01 | ((offset_size - 1) << 6)
    body = b"".join(n.to_bytes(offset_size, "little") for n in [len(keys), *offsets])
    return bytes([header]) + body + b"".join(encoded)


def _container(values: list[bytes], ids: list[int] | None, offset_size: int, id_size: int, large: bool) -> bytes:
    count = len(values).to_bytes(4 if large else 1, "little")
    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    off = b"".join(o.to_bytes(offset_size, "little") for o in offsets)
    if ids is None:  # array
        head = 3 | (((int(large) << 2) | (offset_size - 1)) << 2)
        return bytes([head]) + count + off + b"".join(values)
    head = 2 | (((int(large) << 4) | ((id_size - 1) << 2) | (offset_size - 1)) << 2)
    return bytes([head]) + count + b"".join(i.to_bytes(id_size, "little") for i in ids) + off + b"".join(values)


def test_decoder_objects_and_arrays_small_and_large() -> None:
    keys = [f"k{i:03d}" for i in range(300)]
    meta = _metadata(keys, offset_size=2)
    small = [prim(3, bytes([i % 100])) for i in range(300)]
    obj = _container(small, list(range(300)), offset_size=2, id_size=2, large=True)
    assert to_python(meta, obj) == {k: i % 100 for i, k in enumerate(keys)}
    arr = _container([obj, prim(0), b"\x09hi"], None, offset_size=2, id_size=0, large=False)
    assert to_python(meta, arr) == [{k: i % 100 for i, k in enumerate(keys)}, None, "hi"]
    big = _container([prim(1)] * 300, None, offset_size=3, id_size=0, large=True)
    assert to_python(EMPTY, big) == [True] * 300
    nested = _container([_container([prim(3, b"\x07")], [0], 1, 1, False)], [1], 4, 4, False)
    assert to_python(_metadata(["a", "b"]), nested) == {"b": {"a": 7}}


@pytest.mark.parametrize(
    ("metadata", "value", "why"),
    [
        (b"", b"\x00", "runs past the end"),
        (b"\x02\x00\x00", b"\x00", "metadata version 2"),
        (EMPTY, b"", "runs past the end"),
        (EMPTY, prim(21), "unknown primitive type id 21"),
        (EMPTY, prim(6, b"\x01"), "runs past the end"),
        (EMPTY, prim(16, struct.pack("<i", 5) + b"ab"), "runs past the end"),
        (EMPTY, b"\x02\x01\x00\x00\x02\x0c\x01", "field id 0 is not in the metadata"),
        (_metadata(["a", "a"]), b"\x02\x02\x00\x01\x00\x02\x04\x0c\x01\x0c\x02", "the key 'a' twice"),
        (EMPTY, prim(8, b"\x27\x00\x00\x00\x00"), "scale 39"),
        (EMPTY, b"\x09\xff\xfe", "invalid start byte"),
    ],
)
def test_decoder_refuses_malformed_input(metadata: bytes, value: bytes, why: str) -> None:
    with pytest.raises(InvalidArgumentError, match="malformed variant") as info:
        to_python(metadata, value)
    assert why in str(info.value)


def test_to_python_list_keeps_null_rows() -> None:
    col = pa.chunked_array([pa.array([{"value": prim(3, b"\x05"), "metadata": EMPTY}, None], UNSHREDDED_ARROW)])
    assert to_python_list(col) == [5, None]
