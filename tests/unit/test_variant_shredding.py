"""Shredded variants put back together (:mod:`deltalog.protocol.shredding`): every typed_value type the
Parquet shredding spec allows, partly shredded objects, arrays, missing fields, null rows, and the errors
for data that breaks the spec. Spark-written files of every shape are checked against Spark's own reads in
tests/spark/test_spark_variant_shredding.py; the corpus tables in test_variant.py."""

from __future__ import annotations

import datetime as dt
import shutil
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.commands.drop_feature import drop_feature
from deltalog.errors import FeatureDropError, SchemaError, UnsupportedFeatureError
from deltalog.protocol.shredding import is_shredded, unshred
from deltalog.protocol.variant import to_python_list

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/conformance")
EMPTY = b"\x01\x00\x00"  # a metadata dictionary without keys
KEYS_AB = b"\x01\x02\x00\x01\x02ab"  # the dictionary ["a", "b"]
KEYS_ABC = b"\x01\x03\x00\x01\x02\x03abc"  # ["a", "b", "c"]


def shredded(metadata: list[Any], value: list[Any], typed: pa.Array[Any], mask: list[bool] | None = None) -> Any:
    return pa.StructArray.from_arrays(
        [pa.array(metadata, pa.binary()), pa.array(value, pa.binary()), typed],
        names=["metadata", "value", "typed_value"],
        mask=None if mask is None else pa.array(mask),
    )


def pair(value: list[Any], typed: pa.Array[Any]) -> Any:
    return pa.StructArray.from_arrays([pa.array(value, pa.binary()), typed], names=["value", "typed_value"])


@pytest.mark.parametrize(
    ("typed", "want"),
    [
        (pa.array([True, False]), [True, False]),
        (pa.array([-5, 7], pa.int8()), [-5, 7]),
        (pa.array([-300, 300], pa.int16()), [-300, 300]),
        (pa.array([-70000, 70000], pa.int32()), [-70000, 70000]),
        (pa.array([-(2**40), 2**62], pa.int64()), [-(2**40), 2**62]),
        (pa.array([1.5, -0.25], pa.float32()), [1.5, -0.25]),
        (pa.array([1e300, -2.5], pa.float64()), [1e300, -2.5]),
        (pa.array([Decimal("1.25"), Decimal("-3.10")], pa.decimal128(9, 2)), [Decimal("1.25"), Decimal("-3.10")]),
        (pa.array([Decimal("123456789012.3456")], pa.decimal128(18, 4)), [Decimal("123456789012.3456")]),
        (pa.array([Decimal("-1" + "0" * 30 + ".5")], pa.decimal128(38, 1)), [Decimal("-1" + "0" * 30 + ".5")]),
        (pa.array([dt.date(2024, 2, 29), dt.date(1969, 12, 31)]), [dt.date(2024, 2, 29), dt.date(1969, 12, 31)]),
        (pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)], pa.timestamp("us", "UTC")),
         [dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)]),
        (pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 6)], pa.timestamp("us")), [dt.datetime(2024, 1, 2, 3, 4, 5, 6)]),
        (pa.array([1_700_000_000_123_456_789], pa.timestamp("ns", "UTC")),
         [dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.UTC)]),
        (pa.array([1_700_000_000_123_456_789], pa.timestamp("ns")), [dt.datetime(2023, 11, 14, 22, 13, 20, 123456)]),
        (pa.array([dt.time(12, 30, 1, 5)], pa.time64("us")), [dt.time(12, 30, 1, 5)]),
        (pa.array([b"\x00\xff", b""]), [b"\x00\xff", b""]),
        (pa.array(["short", "long " * 20]), ["short", "long " * 20]),
        (pa.array([uuid.UUID(int=7).bytes], pa.binary(16)), [uuid.UUID(int=7)]),
    ],
)
def test_every_primitive_typed_value(typed: pa.Array[Any], want: list[Any]) -> None:
    arr = shredded([EMPTY] * len(typed), [None] * len(typed), typed)
    assert is_shredded(arr.type)
    out = unshred(arr, "v")
    assert to_python_list(out) == want
    assert out.type == pa.struct([("value", pa.binary()), ("metadata", pa.binary())])


def test_value_typed_value_and_nulls_row_by_row() -> None:
    # row 0 typed, row 1 not of the shredded type (kept in value: the string "x"), row 2 a SQL NULL variant,
    # row 3 a variant null stored in value, row 4 neither set at the top level (read as a variant null)
    arr = shredded([EMPTY] * 5, [None, b"\x05x", None, b"\x00", None], pa.array([42, None, None, None, None]),
                   mask=[False, False, True, False, False])
    out = unshred(arr, "v")
    assert out.is_null().to_pylist() == [False, False, True, False, False]
    assert to_python_list(out) == [42, "x", None, None, None]


def test_objects_partly_shredded_with_missing_fields() -> None:
    # typed fields a (int) and b (string); "c" stays in value for row 0; row 1 lacks b (missing);
    # row 2 has a of another type (in the field's value); row 3 is not an object at all
    fields = pa.StructArray.from_arrays(
        [pair([None, None, b"\x05z", None], pa.array([1, 2, None, None], pa.int64())),
         pair([None, None, None, None], pa.array(["x", None, "y", None]))],
        names=["a", "b"],
        mask=pa.array([False, False, False, True]),
    )
    rest = b"\x02\x01\x02\x00\x02\x0c\x09"  # the object {"c": 9} (field id 2, an int8)
    arr = shredded([KEYS_ABC] * 4, [rest, None, None, b"\x0c\x05"], fields)
    assert to_python_list(unshred(arr, "v")) == [
        {"a": 1, "b": "x", "c": 9},
        {"a": 2},
        {"a": "z", "b": "y"},
        5,
    ]


def test_arrays_of_shredded_elements_and_nested_objects() -> None:
    elements = pair([None, b"\x05s", None], pa.array([10, None, 30], pa.int64()))
    lists = pa.ListArray.from_arrays(pa.array([0, 3, 3], pa.int32()), elements)
    inner = pa.StructArray.from_arrays([pair([None, None], pa.array([1.5, 2.5]))], names=["a"])
    outer = pa.StructArray.from_arrays([pair([None, None], inner), pair([None, b"\x0c\x03"], pa.array([None, None],
                                                                                                     pa.int32()))],
                                       names=["a", "b"])
    assert to_python_list(unshred(shredded([EMPTY, EMPTY], [None, None], lists), "v")) == [[10, "s", 30], []]
    assert to_python_list(unshred(shredded([KEYS_AB, KEYS_AB], [None, None], outer), "v")) == [
        {"a": {"a": 1.5}},
        {"a": {"a": 2.5}, "b": 3},
    ]


@pytest.mark.parametrize(
    ("arr", "why"),
    [
        (shredded([EMPTY], [b"\x0c\x01"], pa.array([5])), "both value and typed_value are set"),
        (shredded([KEYS_AB], [b"\x0c\x01"],
                  pa.StructArray.from_arrays([pair([None], pa.array([1]))], names=["a"])), "value holds no object"),
        (shredded([EMPTY], [None], pa.StructArray.from_arrays([pair([None], pa.array([1]))], names=["zz"])),
         "'zz' is not in the row's metadata dictionary"),
        (shredded([KEYS_AB], [b"\x02\x01\x00\x00\x02\x0c\x09"],
                  pa.StructArray.from_arrays([pair([None], pa.array([1]))], names=["a"])),
         "'a' is both shredded and in value"),
        (shredded([EMPTY], [None], pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()),
                                                            pair([None], pa.array([None], pa.int64())))),
         "an array element is missing"),
        (shredded([b"\x02\x00\x00"], [None], pa.array([1])), "metadata version 2 is not 1"),
    ],
)
def test_data_that_breaks_the_spec_is_a_schema_error_naming_column_and_row(arr: Any, why: str) -> None:
    with pytest.raises(SchemaError, match=f"column 'v': row 0 is not a valid shredded variant .*{why}"):
        unshred(arr, "v")


def test_a_typed_value_of_a_type_variants_lack_is_refused() -> None:
    arr = shredded([EMPTY], [None], pa.array([1], pa.uint32()))
    with pytest.raises(SchemaError, match=r"column 'v.typed_value': typed_value of type uint32"):
        unshred(arr, "v")
    no_metadata = pa.StructArray.from_arrays([pa.array([None], pa.binary()), pa.array([1])],
                                             names=["value", "typed_value"])
    with pytest.raises(SchemaError, match="needs a metadata column"):
        unshred(no_metadata, "v")


def test_shredded_tables_are_read_but_not_written_or_dropped(tmp_path: Path) -> None:
    source = CORPUS / "delta-spark/variant-stats-state-reconstruction"
    if not source.is_dir():
        pytest.skip(f"conformance corpus table {source} is not available")
    copy = tmp_path / "t"
    shutil.copytree(source, copy)
    for p in [copy, *copy.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    table = deltalog.Table(copy)
    data = table.snapshot().to_arrow()
    assert to_python_list(data.column("v")) == [0]
    with pytest.raises(UnsupportedFeatureError, match="writer feature 'variantShredding-preview'") as info:
        deltalog.write_table(copy, data, mode="append")
    assert info.value.feature == "variantShredding-preview"
    with pytest.raises(FeatureDropError, match="shredded data file rewritten unshredded"):
        drop_feature(table, "variantShredding-preview")
    assert table.latest_version() == 0


def test_shredded_variants_inside_arrays_and_maps_are_reassembled_on_read() -> None:
    from deltalog.protocol.conform import to_logical
    from deltalog.protocol.schema import parse_schema

    element = shredded([EMPTY] * 3, [None, b"\x05x", None], pa.array([1, None, 3]))
    arrays = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), element)
    maps = pa.MapArray.from_arrays(pa.array([0, 1, 3], pa.int32()), pa.array(["k", "l", "m"]), element)
    schema = parse_schema('{"type":"struct","fields":['
                          '{"name":"a","type":{"type":"array","elementType":"variant","containsNull":true},'
                          '"nullable":true,"metadata":{}},'
                          '{"name":"m","type":{"type":"map","keyType":"string","valueType":"variant",'
                          '"valueContainsNull":true},"nullable":true,"metadata":{}}]}')
    out = to_logical(pa.table({"a": arrays, "m": maps}), schema, "none")
    assert [to_python_list(pa.array(r, out.schema.field("a").type.value_type)) for r in out.column("a").to_pylist()] \
        == [[1, "x"], [3]]
    values = out.column("m").combine_chunks().values.field("value")  # map entries, in order
    assert to_python_list(values) == [1, "x", 3]


def test_null_rows_are_not_looked_into() -> None:
    # a null variant whose children hold what would be an error in a row that is not null
    arr = shredded([EMPTY, EMPTY], [b"\x0c\x01", b"\x0c\x02"], pa.array([5, None]), mask=[True, False])
    out = unshred(arr, "v")
    assert out.is_null().to_pylist() == [True, False] and to_python_list(out) == [None, 2]
    # the same inside a null object and a null shredded field
    bad_pair = pair([b"\x0c\x01"], pa.array([5]))
    objects = pa.StructArray.from_arrays([bad_pair], names=["a"], mask=pa.array([True]))
    assert to_python_list(unshred(shredded([KEYS_AB], [b"\x0c\x07"], objects), "v")) == [7]
    fields = pa.StructArray.from_arrays([pa.array([b"\x0c\x01"], pa.binary()), pa.array([5])],
                                        names=["value", "typed_value"], mask=pa.array([True]))
    objects = pa.StructArray.from_arrays([fields], names=["a"])
    assert to_python_list(unshred(shredded([KEYS_AB], [None], objects), "v")) == [{}]
