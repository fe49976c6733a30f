"""ADD COLUMNS and CHANGE COLUMN in the kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import deltalog
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.schema import PrimitiveType, StructField
from deltalog.txn.constraints import ConstraintViolationError


def make(tmp_path: Path) -> deltalog.Table:
    deltalog.write_table(str(tmp_path), pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", None]}))
    return deltalog.Table(str(tmp_path))


def test_add_columns_reads_old_rows_as_null_and_records_the_operation(tmp_path: Path) -> None:
    t = make(tmp_path)
    result = t.add_columns([StructField("z", PrimitiveType("integer"), True, {"comment": "new"})])
    assert result.operation == "ADD COLUMNS"
    snap = t.snapshot()
    assert snap.schema.field_names == ["id", "s", "z"] and snap.schema.field("z").metadata == {"comment": "new"}
    assert snap.to_arrow().column("z").to_pylist() == [None, None]
    params = t.history(limit=1)[0]["operationParameters"]
    assert json.loads(params["columns"])[0]["column"]["name"] == "z"
    deltalog.write_table(str(tmp_path), pa.table({"id": pa.array([3], pa.int64()), "s": ["c"],
                                                  "z": pa.array([7], pa.int32())}), mode="append")
    assert sorted(t.snapshot().to_arrow().column("z").to_pylist(), key=lambda v: (v is not None, v)) == [None, None, 7]


def test_add_columns_at_a_position(tmp_path: Path) -> None:
    t = make(tmp_path)
    long = PrimitiveType("long")
    t.add_columns([StructField(n, long, True, {}) for n in "abc"],
                  after={"a": None, "b": "ID", "c": "b"})  # first; after id (any case); after one added before
    assert t.snapshot().schema.field_names == ["a", "id", "b", "c", "s"]
    params = json.loads(t.history(limit=1)[0]["operationParameters"]["columns"])
    assert [(p["column"]["name"], p.get("position")) for p in params] == \
        [("a", "FIRST"), ("b", "AFTER ID"), ("c", "AFTER b")]
    assert t.snapshot().to_arrow().to_pylist()[0] == {"a": None, "id": 1, "b": None, "c": None, "s": "a"}
    with pytest.raises(InvalidArgumentError, match=r"DELTA_COLUMN_NOT_FOUND.*AFTER 'nope'"):
        t.add_columns([StructField("d", long, True, {})], after={"d": "nope"})
    with pytest.raises(InvalidArgumentError, match=r"columns not being added: \['e'\]"):
        t.add_columns([StructField("d", long, True, {})], after={"e": None})
    assert t.snapshot().version == 1


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_add_columns_inside_structs_arrays_and_maps(tmp_path: Path, mapping: str) -> None:
    rows = pa.table({
        "id": pa.array([1], pa.int64()),
        "s": pa.array([{"a": 1, "t": {"b": 2}}], pa.struct([("a", pa.int64()), ("t", pa.struct([("b", pa.int64())]))])),
        "arr": pa.array([[{"x": 1}]], pa.list_(pa.struct([("x", pa.int64())]))),
        "m": pa.array([[("k", {"v": 1})]], pa.map_(pa.string(), pa.struct([("v", pa.int64())]))),
    })
    deltalog.write_table(str(tmp_path), rows, properties={"delta.columnMapping.mode": mapping})
    t = deltalog.Table(str(tmp_path))
    long = PrimitiveType("long")
    t.add_columns([("s", StructField("c", long, True, {})), (("s", "t"), StructField("d", long, True, {})),
                   ("arr.element", StructField("y", long, True, {})), ("m.value", StructField("w", long, True, {})),
                   ("s", StructField("first", long, True, {})), StructField("top", long, True, {})],
                  after={"s.first": None, "s.t.d": None})
    snap = t.snapshot()
    s_type = snap.schema.field("s").type
    assert [f.name for f in s_type.fields] == ["first", "a", "t", "c"]
    assert [f.name for f in s_type.fields[2].type.fields] == ["d", "b"]
    assert snap.to_arrow().to_pylist() == [{
        "id": 1, "s": {"first": None, "a": 1, "t": {"d": None, "b": 2}, "c": None},
        "arr": [{"x": 1, "y": None}], "m": [("k", {"v": 1, "w": None})], "top": None}]
    logged = json.loads(t.history(limit=1)[0]["operationParameters"]["columns"])
    assert [(c["column"]["name"], c.get("position")) for c in logged] == [
        ("s.c", None), ("s.t.d", "FIRST"), ("arr.element.y", None), ("m.value.w", None), ("s.first", "FIRST"),
        ("top", None)]
    if mapping == "name":  # the new fields get ids and physical names like any new column
        ids = [f.metadata.get("delta.columnMapping.id") for f in s_type.fields]
        assert all(isinstance(i, int) for i in ids) and len(set(ids)) == 4
    for bad, why in (((("s", "nope"), StructField("q", long, True, {})), "has no field 'nope'"),
                     (("id", StructField("q", long, True, {})), "id is not a struct"),
                     (("s", StructField("A", long, True, {})), "DUPLICATE.*'s.A'"),
                     (("arr", StructField("q", long, True, {})), "arr is not a struct .*an array")):
        with pytest.raises(InvalidArgumentError, match=why):
            t.add_columns([bad])
    assert t.snapshot().version == 1


def test_move_column_reorders_without_rewriting(tmp_path: Path) -> None:
    deltalog.write_table(str(tmp_path), pa.table({"id": [1], "s": [{"a": 1, "b": "x"}], "v": ["q"]}))
    t = deltalog.Table(str(tmp_path))
    files = t.snapshot().add_files().column("path").to_pylist()
    assert t.move_column("v", after=None).operation == "CHANGE COLUMN"
    t.move_column("S.b", after=None, comment="bee")  # any case, as Spark resolves names
    t.move_column(["id"], after="s")
    snap = t.snapshot()
    assert snap.schema.field_names == ["v", "s", "id"]
    assert [(f.name, f.metadata.get("comment")) for f in snap.schema.field("s").type.fields] == \
        [("b", "bee"), ("a", None)]  # type: ignore[attr-defined]
    assert snap.to_arrow().to_pylist() == [{"v": "q", "s": {"b": "x", "a": 1}, "id": 1}]
    assert snap.add_files().column("path").to_pylist() == files
    assert [json.loads(h["operationParameters"]["column"])["name"] for h in t.history(limit=3)] == ["id", "b", "v"]
    assert [h["operationParameters"]["position"] for h in t.history(limit=3)] == ["AFTER s", "FIRST", "FIRST"]
    for name, after, message in (("nope", None, "DELTA_COLUMN_NOT_FOUND.*no column 'nope'"),
                                 ("id", "zz", "'zz' does not exist"), ("id", "id", "is the column being moved"),
                                 ("v.x", None, "'v' is not a struct")):
        with pytest.raises(InvalidArgumentError, match=message):
            t.move_column(name, after=after)
    assert t.latest_version() == 3


def test_add_columns_refuses_duplicates_and_not_null(tmp_path: Path) -> None:
    t = make(tmp_path)
    with pytest.raises(InvalidArgumentError, match="DUPLICATE"):
        t.add_columns([StructField("ID", PrimitiveType("long"), True, {})])
    with pytest.raises(InvalidArgumentError, match="NOT_NULL"):
        t.add_columns([StructField("q", PrimitiveType("long"), False, {})])
    assert t.snapshot().version == 0


def test_change_column_comment_and_nullability(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.change_column("ID", comment="the key")
    assert t.snapshot().schema.field("id").metadata["comment"] == "the key"
    t.change_column("id", nullable=False)
    assert not t.snapshot().schema.field("id").nullable
    with pytest.raises(ConstraintViolationError, match="1 row"):
        t.change_column("s", nullable=False)
    t.change_column("id", nullable=True)
    assert t.snapshot().schema.field("id").nullable
    with pytest.raises(InvalidArgumentError, match="COLUMN_NOT_FOUND"):
        t.change_column("nope", comment="x")
    assert [h["operation"] for h in t.history(limit=3)] == ["CHANGE COLUMN"] * 3


@pytest.mark.parametrize("mode", ["none", "name"])
def test_set_not_null_trusts_statistics_that_count_no_null(tmp_path: Path, mode: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Files whose statistics count no null in the column (under its physical name) are not read; files
    without statistics, or whose count is not zero, are (a null in a deleted row is not a violation)."""
    import deltalog.data.read as read_module

    path = tmp_path / "t"
    props = {"delta.columnMapping.mode": mode, "delta.enableDeletionVectors": "true"}
    deltalog.write_table(path, pa.table({"x": pa.array([1, 2], pa.int64())}), properties=props)
    deltalog.write_table(path, pa.table({"x": pa.array([3, None, 4], pa.int64())}), mode="append")
    t = deltalog.Table(path)
    t.delete([("x", "=", 3)])  # the file keeps its statistics (one null), a deletion vector hides row 0
    read: list[str] = []
    real = read_module.read_file_columns

    def recording(snap: object, add: dict[str, object], names: object) -> pa.Table:
        read.append(str(add["path"]))
        return real(snap, add, names)  # type: ignore[arg-type]

    monkeypatch.setattr(read_module, "read_file_columns", recording)
    with pytest.raises(ConstraintViolationError, match="1 row"):
        t.change_column("x", nullable=False)
    assert len(read) == 1  # only the file whose statistics count a null
    t.delete(pc.field("x").is_null())
    read.clear()
    t.change_column("x", nullable=False)
    assert len(read) == 1 and not t.snapshot().schema.field("x").nullable  # the null is a deleted row now


def test_replace_columns_reorders_adds_and_drops_under_column_mapping(tmp_path: Path) -> None:
    t = make(tmp_path)
    long, string = PrimitiveType("long"), PrimitiveType("string")
    t.change_column("s", comment="old")
    v = t.latest_version()
    with pytest.raises(InvalidArgumentError, match=r"REPLACE_COL_OP.*type of column 'id'"):
        t.replace_columns([StructField("id", string, True, {}), StructField("s", string, True, {})])
    with pytest.raises(InvalidArgumentError, match=r"REPLACE_COL_OP.*make column 'id' NOT NULL"):
        t.replace_columns([StructField("id", long, False, {}), StructField("s", string, True, {})])
    with pytest.raises(InvalidArgumentError, match=r"NOT_NULL_COLUMN_NOT_ALLOWED.*'z'"):
        t.replace_columns([StructField("id", long, True, {}), StructField("s", string, True, {}),
                           StructField("z", long, False, {})])
    with pytest.raises(InvalidArgumentError, match=r"'ID' is listed twice"):
        t.replace_columns([StructField("id", long, True, {}), StructField("ID", long, True, {})])
    with pytest.raises(deltalog.errors.UnsupportedFeatureError, match="needs column mapping"):
        t.replace_columns([StructField("id", long, True, {})])  # s left out: a drop
    assert t.latest_version() == v
    # reordered, a comment given, the old one dropped, a column added: the rows follow by name
    result = t.replace_columns([StructField("S", string, True, {}), StructField("id", long, True, {"comment": "key"}),
                                StructField("z", long, True, {})])
    assert result.operation == "REPLACE COLUMNS"
    snap = t.snapshot()
    assert snap.schema.field_names == ["s", "id", "z"]  # the table's own spelling
    assert (snap.schema.field("s").metadata, snap.schema.field("id").metadata) == ({}, {"comment": "key"})
    assert snap.to_arrow().to_pylist() == [{"s": "a", "id": 1, "z": None}, {"s": None, "id": 2, "z": None}]
    assert [c["name"] for c in json.loads(t.history(limit=1)[0]["operationParameters"]["columns"])] == ["s", "id", "z"]
    # under column mapping a left-out column is dropped; the new one gets an id and a physical name
    t.set_properties({"delta.columnMapping.mode": "name"})
    t.replace_columns([StructField("id", long, True, {}), StructField("w", string, True, {})])
    snap = t.snapshot()
    assert snap.schema.field_names == ["id", "w"] and "delta.columnMapping.id" in snap.schema.field("w").metadata
    assert snap.to_arrow().to_pylist() == [{"id": 1, "w": None}, {"id": 2, "w": None}]
