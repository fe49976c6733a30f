"""The kernel's change data feed reader on the CDF tables of ../shared/conformance.

Expected rows are the upstream facts for these tables (delta-kernel-rs ``kernel/tests/cdf.rs``, which
checks them against what delta-spark wrote): ``(column values..., _change_type, _commit_version)``,
compared as sorted lists. The column-mapping tables have no upstream row list; their facts are read off
their logs (v1 enables the feed, v2 updates one row, v3 appends one, v4 deletes one).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from checks import CORPUS

import deltalog
from deltalog.errors import InvalidArgumentError, VersionNotFoundError
from deltalog.feed.changes import ChangeDataNotRecordedError, iter_commit_changes, resolve_range

DATA = CORPUS / "kernel-rs-data"

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"conformance corpus missing at {CORPUS}")


def changes(name: str, start: int, end: int | None = None) -> list[tuple[Any, ...]]:
    table = deltalog.read_changes(DATA / name, starting_version=start, ending_version=end)
    assert table.column_names[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
    names = table.column_names[:-1]  # commit timestamps are file times, which git does not keep
    return sorted((tuple(r[n] for n in names) for r in table.to_pylist()), key=repr)


def ids(rows: list[tuple[int, str, int]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


def test_deletion_vector_updates_are_deletes_and_restores() -> None:
    # 0: insert 0..9; 1: delete 0, 9; 2: restore 0, 9; 3: delete 0, 1, 4, 5; 4: restore 1, 4;
    # 5: restore 0, 5 and delete 3; 6: restore 3 -- every commit a remove + add of the same file.
    expected = [(i, "insert", 0) for i in range(10)] + [
        (0, "delete", 1), (9, "delete", 1), (0, "insert", 2), (9, "insert", 2),
        (0, "delete", 3), (1, "delete", 3), (4, "delete", 3), (5, "delete", 3),
        (1, "insert", 4), (4, "insert", 4), (3, "delete", 5), (0, "insert", 5), (5, "insert", 5), (3, "insert", 6),
    ]
    assert changes("cdf-table-with-dv", 0) == ids(expected)


def test_partitioned_table_with_change_data_files() -> None:
    d = dt.date
    inserts = [
        (1, "Steve", d(2023, 12, 22)), (2, "Bob", d(2023, 12, 23)), (3, "Dave", d(2023, 12, 23)),
        (4, "Kate", d(2023, 12, 23)), (5, "Emily", d(2023, 12, 24)), (6, "Carl", d(2023, 12, 24)),
        (7, "Dennis", d(2023, 12, 24)), (8, "Claire", d(2023, 12, 25)), (9, "Ada", d(2023, 12, 25)),
        (10, "Borb", d(2023, 12, 25)),
    ]
    expected = [(*r, "insert", 0) for r in inserts]
    for i, name in ((2, "Bob"), (3, "Dave"), (4, "Kate")):
        expected += [(i, name, d(2023, 12, 23), "update_preimage", 1),
                     (i, name, d(2023, 12, 22), "update_postimage", 1)]
    for i, name in ((5, "Emily"), (6, "Carl"), (7, "Dennis")):
        expected += [(i, name, d(2023, 12, 24), "update_preimage", 2),
                     (i, name, d(2023, 12, 29), "update_postimage", 2)]
    expected.append((7, "Dennis", d(2023, 12, 29), "delete", 3))
    assert changes("cdf-table", 0) == sorted(expected, key=repr)


def test_partition_values_of_removes_and_change_files() -> None:
    expected = [(i, "old", i % 2, "insert", 0) for i in range(6)] + [
        (3, "old", 1, "delete", 1), (1, "old", 1, "update_preimage", 1), (1, "new", 1, "update_postimage", 1),
        (0, "old", 0, "delete", 2), (2, "old", 0, "delete", 2), (4, "old", 0, "delete", 2),
    ]
    assert changes("cdf-table-partitioned", 0, 2) == sorted(expected, key=repr)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0, 0, [(i, "insert", 0) for i in range(10)]),
        (1, 1, [(i, "delete", 1) for i in range(10)]),
        (2, 2, [(i, "insert", 2) for i in range(20, 25)]),
        (0, 2, [(i, "insert", 0) for i in range(10)] + [(i, "delete", 1) for i in range(10)]
         + [(i, "insert", 2) for i in range(20, 25)]),
        (1, 99, [(i, "delete", 1) for i in range(10)] + [(i, "insert", 2) for i in range(20, 25)]),
    ],
)
def test_version_ranges(start: int, end: int, expected: list[tuple[Any, ...]]) -> None:
    assert changes("cdf-table-simple", start, end) == ids(expected)


def test_change_types_are_taken_from_the_files_verbatim() -> None:
    expected = [(i, "insert", 0) for i in range(10)] + [(i, "update_pre", 1) for i in range(20, 25)] + [
        (i, "update_post", 2) for i in range(30, 35)
    ]
    assert changes("cdf-table-update-ops", 0, 2) == ids(expected)


def test_data_change_false_commits_are_skipped() -> None:
    assert changes("cdf-table-data-change", 0, 1) == ids([(i, "insert", 0) for i in range(10)])
    plan = list(iter_commit_changes(deltalog.Table(DATA / "cdf-table-data-change"), 1, 1))
    assert [(c.version, c.files) for c in plan] == [(1, ())]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("cdf-table-delete-conditional-two-rows", [(2, "delete", 1), (8, "delete", 1)]),
        ("cdf-table-delete-conditional-all-rows", [(i, "delete", 1) for i in range(10)]),
        ("cdf-table-delete-unconditional", [(i, "delete", 1) for i in range(10)]),
    ],
)
def test_deletes(name: str, expected: list[tuple[Any, ...]]) -> None:
    assert changes(name, 0) == ids([(i, "insert", 0) for i in range(10)] + expected)


def test_cdc_files_and_deletion_vectors_mixed() -> None:
    rows = [
        (1, "initial", "insert", 0), (2, "insert1", "insert", 1), (3, "insert1-delete1", "insert", 1),
        (4, "insert1-delete2", "insert", 1), (5, "insert1-delete2", "insert", 1), (3, "insert1-delete1", "delete", 2),
        (3, "insert1-delete1", "insert", 4), (4, "insert1-delete2", "delete", 5), (5, "insert1-delete2", "delete", 5),
        (4, "insert1-delete2", "insert", 7), (5, "insert2", "insert", 8), (1, "initial", "update_preimage", 9),
        (1, "update1", "update_postimage", 9), (2, "insert1", "update_preimage", 9),
        (2, "update1", "update_postimage", 9), (3, "insert1-delete1", "update_preimage", 9),
        (3, "update1", "update_postimage", 9), (1, "update1", "delete", 10), (2, "update1", "update_preimage", 12),
        (2, "update2", "update_postimage", 12), (6, "insert3", "insert", 14), (7, "insert3", "insert", 14),
        (8, "insert4", "insert", 15), (9, "insert4", "insert", 15), (8, "insert4", "delete", 16),
        (7, "insert3", "delete", 16), (10, "merge1-insert", "insert", 18), (11, "merge1-insert", "insert", 18),
        (9, "merge1-update", "update_postimage", 18), (9, "insert4", "update_preimage", 18),
        (11, "merge1-insert", "update_preimage", 20), (11, "", "update_postimage", 20),
        (12, "merge2-insert", "insert", 22), (11, "", "delete", 22), (3, "update1", "delete", 24),
        (4, "insert1-delete2", "delete", 24), (5, "insert2", "delete", 24), (2, "update2", "delete", 24),
        (6, "insert3", "delete", 24), (9, "merge1-update", "delete", 24), (0, "new", "insert", 25),
        (1, "after-large-delete", "insert", 25), (2, "", "insert", 25),
    ]
    assert changes("cdf-table-with-cdc-and-dvs", 0) == sorted(rows, key=repr)


def test_backtick_and_dotted_column_names() -> None:
    s = {"field": 1, "field.one": 2}
    expected = [(2, 10, s, "insert", 0), (4, 10, s, "insert", 0), (1, 10, s, "insert", 1), (3, 10, s, "insert", 1),
                (5, 10, s, "insert", 1)]
    assert changes("cdf-table-backtick-column-names", 0) == sorted(expected, key=repr)


@pytest.mark.parametrize(
    ("name", "names"),
    [
        ("cdf-column-mapping-name-mode", ("Alice", "Bob", "David", 100.0, 200.0, 250.0, 400.0)),
        ("cdf-column-mapping-name-mode-3-7", ("Alice", "Bob", "David", 100.0, 200.0, 250.0, 400.0)),
        ("cdf-column-mapping-id-mode", ("Grace", "Frank", "Henry", 350.0, 250.0, 275.0, 450.0)),
    ],
)
def test_column_mapping(name: str, names: tuple[Any, ...]) -> None:
    deleted, updated, appended, v_del, v_pre, v_post, v_new = names
    del_id, upd_id = (1, 2) if deleted == "Alice" else (3, 2)
    expected = [
        (upd_id, updated, v_pre, "update_preimage", 2), (upd_id, updated, v_post, "update_postimage", 2),
        (4, appended, v_new, "insert", 3), (del_id, deleted, v_del, "delete", 4),
    ]
    assert changes(name, 1) == sorted(expected, key=repr)
    with pytest.raises(ChangeDataNotRecordedError, match=r"DELTA_MISSING_CHANGE_DATA.*version \[0\]"):
        changes(name, 0)  # the feed was enabled at version 1


def test_feed_disabled_inside_the_range_is_refused_before_any_file_is_read() -> None:
    # table-with-cdf: v2 turns the feed off (its data paths are fake: reading them would fail differently)
    with pytest.raises(ChangeDataNotRecordedError, match=r"range \[0 , 4\].*version \[2\]") as info:
        changes("table-with-cdf", 0, 4)
    assert info.value.version == 2
    assert changes("table-with-cdf", 3, 4) == []  # enabled again, nothing changed


def test_range_errors() -> None:
    t = deltalog.Table(DATA / "cdf-table-simple")
    with pytest.raises(InvalidArgumentError, match="DELTA_INVALID_CDC_RANGE"):
        resolve_range(t, starting_version=1, ending_version=0)
    with pytest.raises(VersionNotFoundError, match=r"DELTA_CDC_START_VERSION_AFTER_LATEST.*\(3\).*\(2\)"):
        resolve_range(t, starting_version=3, ending_version=4)
    with pytest.raises(InvalidArgumentError, match="DELTA_NO_START_FOR_CDC_READ"):
        resolve_range(t)
    with pytest.raises(InvalidArgumentError, match=">= 0"):
        resolve_range(t, starting_version=-1)
    assert resolve_range(t, starting_version="1") == (1, 2)
