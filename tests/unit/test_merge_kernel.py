"""The kernel's MERGE (``Table.merge``, delta-rs's builder): clause semantics against a row-by-row reference
(hypothesis), deletion vectors and copy-on-write, key-range pruning, constraints, change data, other
readers (delta-rs, DuckDB) and the errors users get."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deltalog
from deltalog.errors import DeltaError, InvalidArgumentError
from readers import delta_rs_query_rows, duckdb_rows

DV = {"delta.enableDeletionVectors": "true"}
CDF = {"delta.enableChangeDataFeed": "true"}


def _table(path: Path, n: int = 20, files: int = 4, **props: str) -> deltalog.Table:
    per = n // files
    for f in range(files):
        ids = list(range(f * per, (f + 1) * per))
        deltalog.write_table(path, pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64())}),
                             mode="append", properties=props or None)
    return deltalog.Table(path)


def _rows(table: deltalog.Table) -> list[tuple[Any, ...]]:
    got = table.snapshot().to_arrow()
    return sorted(zip(*[got.column(c).to_pylist() for c in got.column_names]))


@pytest.mark.parametrize("props", [{}, DV], ids=["copy-on-write", "deletion-vectors"])
def test_upsert_with_all_clause_kinds(tmp_path: Path, props: dict[str, str]) -> None:
    path = tmp_path / "t"
    table = _table(path, **props)
    source = pa.table({"id": pa.array([1, 2, 7, 100, 101], pa.int64()),
                       "v": pa.array([-1, -2, -7, -100, 5], pa.int64()), "op": ["U", "D", "U", "I", "skip"]})
    result = (table.merge(source, "target.id = source.id")
              .when_matched_delete("source.op = 'D'")
              .when_matched_update({"v": "source.v * 10"})
              .when_not_matched_insert({"id": "source.id", "v": "source.v"}, "op = 'I'")
              .when_not_matched_by_source_update({"v": "target.v + 1000"}, "target.id >= 18")
              .when_not_matched_by_source_delete("target.id = 0")
              .execute())
    want = {i: i for i in range(20)}
    want.update({1: -10, 7: -70, 100: -100, 18: 1018, 19: 1019})
    del want[2], want[0]
    assert _rows(table) == sorted(want.items())
    assert (result.num_target_rows_updated, result.num_target_rows_deleted, result.num_target_rows_inserted) == \
        (4, 2, 1)
    assert result.used_deletion_vectors is bool(props)
    assert delta_rs_query_rows(str(path), ["id", "v"]) == sorted(want.items())
    assert duckdb_rows(str(path), ["id", "v"]) == sorted(want.items())
    entry = table.history(limit=1)[0]
    assert entry["operation"] == "MERGE" and entry["operationMetrics"]["numTargetRowsInserted"] == "1"
    assert '"predicate":"source.op = \'D\'"' in entry["operationParameters"]["matchedPredicates"]


def test_update_all_and_insert_all_by_name_any_case(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    source = pa.table({"V": pa.array([50, 60], pa.int32()), "ID": pa.array([5, 60], pa.int32())})
    result = table.merge(source, "target.id = source.ID").when_matched_update_all().when_not_matched_insert_all() \
        .execute()
    assert (result.num_target_rows_updated, result.num_target_rows_inserted) == (1, 1)
    rows = dict(_rows(table))
    assert rows[5] == 50 and rows[60] == 60 and len(rows) == 21


def test_other_join_terms_are_checked_per_pair(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    source = pa.table({"id": pa.array([3, 4], pa.int64()), "v": pa.array([30, 40], pa.int64())})
    table.merge(source, "target.id = source.id AND source.v > 35").when_matched_update_all() \
        .when_not_matched_insert_all().execute()
    rows = _rows(table)
    assert (4, 40) in rows and (3, 3) in rows and (3, 30) in rows  # 3 failed the extra term: inserted


def test_a_target_row_matched_twice_is_an_error_unless_deleted(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    source = pa.table({"id": pa.array([3, 3], pa.int64()), "v": pa.array([1, 2], pa.int64())})
    with pytest.raises(InvalidArgumentError, match="DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"):
        table.merge(source, "target.id = source.id").when_matched_update_all().execute()
    assert table.snapshot().version == 3
    assert table.merge(source, "target.id = source.id").when_matched_delete().execute().num_target_rows_deleted == 1


def test_source_rows_matching_a_deleted_row_twice_are_not_inserted(tmp_path: Path) -> None:
    # the row deleted once, both source rows matched: the second was taken as unmatched and inserted
    table = _table(tmp_path / "t")
    source = pa.table({"id": pa.array([3, 3, 100], pa.int64()), "v": pa.array([1, 2, 5], pa.int64())})
    result = (table.merge(source, "target.id = source.id").when_matched_delete()
              .when_not_matched_insert_all().execute())
    assert (result.num_target_rows_deleted, result.num_target_rows_inserted) == (1, 1)
    assert [r[0] for r in _rows(table)] == [*(i for i in range(20) if i != 3), 100]


def test_target_files_are_joined_a_group_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import deltalog.commands.merge_run as merge_run

    table = _table(tmp_path / "t", **CDF)
    monkeypatch.setattr("deltalog.commands.delete.GROUP_BYTES", 1)  # every file its own group
    groups: list[int] = []
    read_group = merge_run._read_group
    monkeypatch.setattr(merge_run, "_read_group", lambda *a: groups.append(len(a[1])) or read_group(*a))
    source = pa.table({"id": pa.array([1, 6, 11, 16, 40], pa.int64()), "v": pa.array([0, 0, 0, 0, 0], pa.int64())})
    result = (table.merge(source, "target.id = source.id").when_matched_update({"v": "target.v * 100"})
              .when_not_matched_insert_all().when_not_matched_by_source_delete("target.id % 5 = 0").execute())
    assert groups == [1, 1, 1, 1]
    assert (result.num_target_rows_updated, result.num_target_rows_deleted, result.num_target_rows_inserted) == \
        (4, 4, 1)
    want = {i: i for i in range(20) if i % 5} | {1: 100, 6: 600, 11: 1100, 16: 1600, 40: 0}
    assert _rows(table) == sorted(want.items())
    changes = deltalog.read_changes(str(tmp_path / "t"), starting_version=4)
    kinds = sorted(zip(changes.column("_change_type").to_pylist(), changes.column("id").to_pylist()))
    assert kinds.count(("insert", 40)) == 1 and len([k for k in kinds if k[0] == "delete"]) == 4
    assert len([k for k in kinds if k[0] == "update_postimage"]) == 4


def test_only_files_that_can_hold_the_keys_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import deltalog.commands.merge_run as merge_run

    table = _table(tmp_path / "t", n=40)
    read: list[str] = []
    real = merge_run.file_matches

    def spy(snap: Any, add: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        read.append(add["path"])
        return real(snap, add, *args, **kwargs)

    monkeypatch.setattr(merge_run, "file_matches", spy)
    source = pa.table({"id": pa.array([12, 15], pa.int64()), "v": pa.array([0, 0], pa.int64())})
    table.merge(source, "target.id = source.id").when_matched_update_all().execute()
    assert len(read) == 1  # ids 10..19 are in one file of four
    read.clear()
    table.merge(source, "target.id = source.id").when_not_matched_by_source_delete("target.id = 39").execute()
    assert len(read) == 4  # not-matched-by-source clauses see every target row


def test_inserted_rows_get_defaults_generated_values_and_checks(tmp_path: Path) -> None:
    import json

    path = tmp_path / "t"
    (path / "_delta_log").mkdir(parents=True)
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "v", "type": "long", "nullable": True, "metadata": {}},
        {"name": "g", "type": "long", "nullable": True, "metadata": {"delta.generationExpression": "id * 2"}}]}
    actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 4}},
               {"metaData": {"id": "merge-test", "format": {"provider": "parquet", "options": {}},
                             "schemaString": json.dumps(schema), "partitionColumns": [], "configuration": {},
                             "createdTime": 0}}]
    (path / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    deltalog.write_table(path, pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([1], pa.int64())}),
                         mode="append")
    table = deltalog.Table(path)
    table.change_column("v", default="7")
    table.add_constraint("pos", "id > 0")
    source = pa.table({"id": pa.array([1, 5], pa.int64())})
    table.merge(source, "target.id = source.id").when_matched_update({"id": "target.id + 10"}) \
        .when_not_matched_insert({"id": "source.id"}).execute()
    assert _rows(table) == [(5, 7, 10), (11, 1, 22)]
    version = table.snapshot().version
    with pytest.raises(DeltaError, match="pos"):
        table.merge(pa.table({"id": pa.array([-3], pa.int64())}), "target.id = source.id") \
            .when_not_matched_insert({"id": "source.id"}).execute()
    with pytest.raises(DeltaError, match="id"):
        table.merge(pa.table({"id": pa.array([40], pa.int64())}), "target.id = source.id") \
            .when_not_matched_insert({"v": "1"}).execute()  # id is NOT NULL
    with pytest.raises(InvalidArgumentError, match="generated column"):
        table.merge(source, "target.id = source.id").when_matched_update({"g": "1"}).execute()
    assert table.snapshot().version == version


def test_change_data_and_row_tracking(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = _table(path, **{"delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true", **DV})
    source = pa.table({"id": pa.array([1, 50], pa.int64()), "v": pa.array([-1, 50], pa.int64())})
    table.merge(source, "target.id = source.id").when_matched_update_all().when_not_matched_insert_all().execute()
    changes = deltalog.read_changes(str(path), starting_version=4)
    got = sorted(zip(*[changes.column(c).to_pylist() for c in ["id", "v", "_change_type"]]))
    assert got == [(1, -1, "update_postimage"), (1, 1, "update_preimage"), (50, 50, "insert")]
    assert delta_rs_query_rows(str(path), ["id", "v"]) == _rows(table)
    # an insert-only merge is an append: no change files, readers take the added file's rows as inserts
    table.merge(pa.table({"id": pa.array([60], pa.int64()), "v": pa.array([6], pa.int64())}),
                "target.id = source.id").when_not_matched_insert_all().execute()
    changes = deltalog.read_changes(str(path), starting_version=5)
    assert list(zip(changes.column("id").to_pylist(), changes.column("_change_type").to_pylist())) == \
        [(60, "insert")]


@pytest.mark.parametrize(
    ("predicate", "clause", "fragment"),
    [
        ("target.v > source.v", lambda m: m.when_matched_delete(), "needs an equality of a target column"),
        ("t.id = s.id", lambda m: m.when_matched_delete(), "'t.id' names no alias of this merge; its aliases are "
                                                           "'target' (the target) and 'source'"),
        ("target.id = source.id", lambda m: m.when_matched_update({"v": "v"}), "column 'v' is ambiguous"),
        ("target.id = source.id", lambda m: m.when_matched_update({"nope": "1"}), "cannot set column 'nope'"),
        ("target.id = source.id", lambda m: m.when_matched_update({"v": "source.nope"}), "does not exist"),
        ("target.id = source.id", lambda m: m.when_matched_update({"v": 1}), "must be a SQL expression string"),
        ("target.id = source.id", lambda m: m.when_matched_delete("source.v + 1"), "not true or false"),
        ("target.id = source.id", lambda m: m.when_matched_update({"v": "'x'"}), "DELTA_CAST_FAILURE"),
        ("target.id = source.id", lambda m: m, "no when_... clause"),
        ("target.id = source.id", lambda m: m.when_matched_update([("v", "1")]), "must be a non-empty dict"),
        # a clause no row reaches is checked all the same (source id 1 matches: nothing is inserted)
        ("target.id = source.id", lambda m: m.when_matched_delete().when_not_matched_insert({"v": "source.nope"}),
         "does not exist"),
        ("target.id = source.id", lambda m: m.when_not_matched_by_source_delete("target.id + 1"), "not true or false"),
    ],
)
def test_errors_name_the_problem_and_commit_nothing(tmp_path: Path, predicate: str, clause: Any,
                                                    fragment: str) -> None:
    table = _table(tmp_path / "t")
    source = pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([2], pa.int64())})
    with pytest.raises(InvalidArgumentError) as err:
        clause(table.merge(source, predicate)).execute()
    assert fragment in str(err.value)
    assert table.snapshot().version == 3


def test_insert_all_needs_every_column(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match="the source has no column 'v'"):
        table.merge(pa.table({"id": [1]}), "target.id = source.id").when_not_matched_insert_all().execute()
    assert table.snapshot().version == 3  # identity columns: see test_identity.py


# ------------------------------------------------------------------------------------ reference

_CONDITIONS = [None, "source.v > 5", "target.v < 8", "source.v % 2 = 0", "target.v >= source.v"]


def _reference(target: dict[int, int], source: dict[int, int], clauses: list[tuple[str, str, str | None]]
               ) -> dict[int, int]:
    def holds(cond: str | None, t: int | None, s: int | None) -> bool:
        if cond is None:
            return True
        assert not ((t is None and "target" in cond) or (s is None and "source" in cond))  # own side only
        tv, sv = t or 0, s or 0
        return {"source.v > 5": sv > 5, "target.v < 8": tv < 8, "source.v % 2 = 0": sv % 2 == 0,
                "target.v >= source.v": tv >= sv}[cond]

    out = dict(target)
    for key, tv in target.items():
        kind = "matched" if key in source else "not_matched_by_source"
        sv = source.get(key)
        for ckind, action, cond in clauses:
            if ckind == kind and holds(cond, tv, sv):
                if action == "delete":
                    del out[key]
                else:
                    out[key] = (sv * 3 if sv is not None and kind == "matched" else tv) + 100
                break
    for key, sv in source.items():
        if key in target:
            continue
        for ckind, _, cond in clauses:
            if ckind == "not_matched" and holds(cond, None, sv):
                out[key] = sv
                break
    return out


@st.composite
def _clause(draw: st.DrawFn) -> tuple[str, str, str | None]:
    kind = draw(st.sampled_from(["matched", "not_matched", "not_matched_by_source"]))
    if kind == "not_matched":
        return kind, "insert", draw(st.sampled_from([None, "source.v > 5", "source.v % 2 = 0"]))
    side = [None, "target.v < 8"] if kind == "not_matched_by_source" else _CONDITIONS
    return kind, draw(st.sampled_from(["update", "delete"])), draw(st.sampled_from(side))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.dictionaries(st.integers(0, 30), st.integers(0, 12), max_size=12),
       source=st.dictionaries(st.integers(0, 30), st.integers(0, 12), max_size=8),
       clauses=st.lists(_clause(), min_size=1, max_size=4), dvs=st.booleans(), one_file_at_a_time=st.booleans())
def test_merge_equals_a_row_by_row_reference(tmp_path_factory: pytest.TempPathFactory, target: dict[int, int],
                                              source: dict[int, int], clauses: list[tuple[str, str, str | None]],
                                              dvs: bool, one_file_at_a_time: bool) -> None:
    path = tmp_path_factory.mktemp("merge") / "t"
    ids = sorted(target)
    half = len(ids) // 2
    for part in (ids[:half], ids[half:]):  # two files, so some merges touch one and keep the other
        deltalog.write_table(path, pa.table({"id": pa.array(part, pa.int64()),
                                             "v": pa.array([target[i] for i in part], pa.int64())}),
                             mode="append", properties=DV if dvs else None)
    table = deltalog.Table(path)
    merger = table.merge(pa.table({"id": pa.array(list(source), pa.int64()),
                                   "v": pa.array(list(source.values()), pa.int64())}), "target.id = source.id")
    for kind, action, cond in clauses:
        if action == "insert":
            merger = merger.when_not_matched_insert({"id": "source.id", "v": "source.v"}, cond)
        elif action == "delete":
            merger = (merger.when_matched_delete(cond) if kind == "matched"
                      else merger.when_not_matched_by_source_delete(cond))
        elif kind == "matched":
            merger = merger.when_matched_update({"v": "source.v * 3 + 100"}, cond)
        else:
            merger = merger.when_not_matched_by_source_update({"v": "target.v + 100"}, cond)
    with pytest.MonkeyPatch.context() as mp:
        if one_file_at_a_time:  # the target files joined in groups, one file each
            mp.setattr("deltalog.commands.delete.GROUP_BYTES", 1)
        merger.execute()
    assert dict(_rows(table)) == _reference(target, source, clauses)


def test_partitioned_target_rows_can_change_partition(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for p in ("a", "b", "c"):
        deltalog.write_table(path, pa.table({"id": pa.array([ord(p), ord(p) + 100], pa.int64()), "p": [p, p]}),
                             mode="append", partition_by=["p"])
    table = deltalog.Table(path)
    source = pa.table({"id": pa.array([ord("a"), 5], pa.int64()), "p": ["a", "z"], "to": ["c", "z"]})
    result = table.merge(source, "target.p = source.p AND target.id = source.id") \
        .when_matched_update({"p": "source.to"}).when_not_matched_insert({"id": "source.id", "p": "source.p"}) \
        .execute()
    assert result.num_target_files_removed == 1  # only partition a was read and rewritten
    assert _rows(table) == sorted([(ord("a") + 100, "a"), (ord("b"), "b"), (ord("b") + 100, "b"),
                                   (ord("c"), "c"), (ord("c") + 100, "c"), (ord("a"), "c"), (5, "z")])
    assert duckdb_rows(str(path), ["id", "p"]) == _rows(table)


def test_merges_of_disjoint_rows_of_one_file_both_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Row-level concurrency (deletion vectors): the loser is rebased onto the winner, not aborted."""
    from races import winner_commits_first

    path = tmp_path / "t"
    table = _table(path, files=1, **DV)

    def upsert(t: deltalog.Table, key: int, new: int) -> Any:
        source = pa.table({"id": pa.array([key, new], pa.int64()), "v": pa.array([-key, -new], pa.int64())})
        return t.merge(source, "target.id = source.id").when_matched_update_all().when_not_matched_insert_all() \
            .execute()

    # the winner's new file holds ids -1 and 3: outside the loser's key range [15, 40], so no conflict there
    winner_commits_first(monkeypatch, str(path), lambda t: upsert(t, 3, -1))
    result = upsert(table, 15, 40)
    monkeypatch.undo()
    assert result.version == 2
    rows = dict(_rows(table))
    assert rows[3] == -3 and rows[15] == -15 and rows[-1] == 1 and rows[40] == -40 and len(rows) == 22
    assert duckdb_rows(str(path), ["id", "v"]) == sorted(rows.items())
    assert table.history(limit=1)[0]["operation"] == "MERGE"
