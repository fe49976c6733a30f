"""Schema evolution in the kernel's MERGE (``merge(..., merge_schema=True)``, delta-rs's option): new source
columns and struct fields join the table in the MERGE's own commit, with and without column mapping and
deletion vectors, and other readers (delta-rs, DuckDB) read the result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import DeltaError
from readers import delta_rs_query_rows, duckdb_rows, sort_key

S_OLD = pa.struct([("a", pa.int64())])
S_NEW = pa.struct([("a", pa.int64()), ("b", pa.string())])


def _target(path: Path, **props: str) -> deltalog.Table:
    deltalog.write_table(path, pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                                         "s": pa.array([{"a": 1}, {"a": 2}, None], S_OLD),
                                         "v": ["x", "y", "z"]}), properties=props or None)
    return deltalog.Table(path)


def _rows(table: deltalog.Table, columns: list[str]) -> list[tuple[Any, ...]]:
    got = table.snapshot().to_arrow(columns=columns)
    return sorted(zip(*[got.column(c).to_pylist() for c in columns]), key=sort_key)


@pytest.mark.parametrize("mapping", ["none", "name"])
@pytest.mark.parametrize("dvs", [False, True], ids=["copy-on-write", "deletion-vectors"])
def test_all_clauses_add_source_columns_and_struct_fields(tmp_path: Path, mapping: str, dvs: bool) -> None:
    path = tmp_path / "t"
    table = _target(path, **{"delta.columnMapping.mode": mapping, "delta.enableDeletionVectors": str(dvs).lower()})
    source = pa.table({"id": pa.array([2, 4], pa.int64()),
                       "s": pa.array([{"a": 20, "b": "B"}, {"a": 40, "b": "D"}], S_NEW),
                       "extra": [2.5, 4.5]})  # no column v: update_all keeps it, insert_all leaves it null
    result = (table.merge(source, "target.id = source.id", merge_schema=True)
              .when_matched_update_all().when_not_matched_insert_all().execute())
    assert (result.version, result.num_target_rows_updated, result.num_target_rows_inserted) == (1, 1, 1)
    schema = table.snapshot().schema
    assert schema.field_names == ["id", "s", "v", "extra"]
    assert schema.field("s").type.field_names == ["a", "b"]  # type: ignore[attr-defined]
    want = [(1, {"a": 1, "b": None}, "x", None), (2, {"a": 20, "b": "B"}, "y", 2.5),
            (3, None, "z", None), (4, {"a": 40, "b": "D"}, None, 4.5)]
    columns = ["id", "s", "v", "extra"]
    assert _rows(table, columns) == want
    assert duckdb_rows(str(path), columns) == want
    assert delta_rs_query_rows(str(path), ["id", "v", "extra"]) == [(i, v, e) for i, _, v, e in want]
    assert [entry["operation"] for entry in table.history()] == ["MERGE", "WRITE"]


def test_struct_fields_inside_arrays_evolve(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalog.write_table(path, pa.table({"id": pa.array([1, 2], pa.int64()),
                                         "xs": pa.array([[{"a": 1}], []], pa.list_(S_OLD))}))
    table = deltalog.Table(path)
    source = pa.table({"id": pa.array([2], pa.int64()), "xs": pa.array([[{"a": 5, "b": "q"}]], pa.list_(S_NEW))})
    table.merge(source, "target.id = source.id", merge_schema=True).when_matched_update_all().execute()
    assert _rows(table, ["id", "xs"]) == [(1, [{"a": 1, "b": None}]), (2, [{"a": 5, "b": "q"}])]


def test_explicit_assignments_add_only_the_columns_they_name(tmp_path: Path) -> None:
    table = _target(tmp_path / "t")
    source = pa.table({"id": pa.array([1, 9], pa.int64()), "score": [7, 8], "op": ["u", "i"]})
    (table.merge(source, "target.id = source.id", merge_schema=True)
     .when_matched_update({"score": "source.score"}, "source.op = 'u'")
     .when_not_matched_insert({"id": "source.id", "score": "source.score * 10"}).execute())
    assert table.snapshot().schema.field_names == ["id", "s", "v", "score"]  # op is only read, not added
    assert _rows(table, ["id", "v", "score"]) == [(1, "x", 7), (2, "y", None), (3, "z", None), (9, None, 80)]


def test_a_merge_changing_no_row_still_commits_the_new_schema(tmp_path: Path) -> None:
    table = _target(tmp_path / "t")
    source = pa.table({"id": pa.array([50], pa.int64()), "extra": ["e"]})
    result = (table.merge(source, "target.id = source.id", merge_schema=True)
              .when_matched_update_all().execute())
    assert result.version == 1 and result.num_target_rows_updated == 0
    assert table.snapshot().schema.field_names == ["id", "s", "v", "extra"]
    assert _rows(table, ["id", "extra"]) == [(1, None), (2, None), (3, None)]


def test_without_merge_schema_new_columns_are_refused(tmp_path: Path) -> None:
    table = _target(tmp_path / "t")
    source = pa.table({"id": pa.array([1], pa.int64()), "extra": ["e"]})
    with pytest.raises(DeltaError, match=r"no column 's'.*merge_schema=True"):
        table.merge(source, "target.id = source.id").when_matched_update_all().execute()
    with pytest.raises(DeltaError, match=r"DELTA_COLUMN_NOT_FOUND.*'extra'"):
        table.merge(source, "target.id = source.id").when_matched_update({"extra": "source.extra"}).execute()
    assert table.snapshot().version == 0


def test_a_source_value_that_does_not_fit_commits_nothing(tmp_path: Path) -> None:
    table = _target(tmp_path / "t")
    bad = pa.struct([("a", pa.string()), ("b", pa.string())])
    source = pa.table({"id": pa.array([1], pa.int64()), "s": pa.array([{"a": "one", "b": "B"}], bad)})
    with pytest.raises(DeltaError, match=r"DELTA_CAST_FAILURE.*'s'"):
        table.merge(source, "target.id = source.id", merge_schema=True).when_matched_update_all().execute()
    assert table.snapshot().version == 0
    assert table.snapshot().schema.field("s").type.field_names == ["a"]  # type: ignore[attr-defined]


def test_type_widening_tables_widen_columns_to_the_source_type(tmp_path: Path) -> None:
    """With ``delta.enableTypeWidening`` a wider source type widens the column (``delta.typeChanges``), as
    delta-spark's MERGE with schema evolution does; without it the value must fit the column's type."""
    path = tmp_path / "t"
    deltalog.write_table(path, pa.table({"id": pa.array([1], pa.int32()), "v": pa.array([10], pa.int32())}),
                         properties={"delta.enableTypeWidening": "true"})
    table = deltalog.Table(path)
    source = pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([5_000_000_000, 7], pa.int64())})
    with pytest.raises(DeltaError, match="DELTA_CAST_FAILURE"):  # no schema evolution: no widening
        table.merge(source, "target.id = source.id").when_matched_update_all().execute()
    (table.merge(source, "target.id = source.id", merge_schema=True)
     .when_matched_update_all().when_not_matched_insert_all().execute())
    field = table.snapshot().schema.field("v")
    assert field.type.name == "long"  # type: ignore[attr-defined]
    assert field.metadata["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert _rows(table, ["id", "v"]) == [(1, 5_000_000_000), (2, 7)]
    assert duckdb_rows(str(path), ["id", "v"]) == [(1, 5_000_000_000), (2, 7)]
    explicit = pa.table({"id": pa.array([2], pa.int32()), "v": pa.array([1.5], pa.float64())})
    with pytest.raises(DeltaError, match="DELTA_CAST_FAILURE"):  # long -> double is not a widening
        table.merge(explicit, "target.id = source.id", merge_schema=True).when_matched_update({"v": "source.v"}) \
            .execute()
