"""The HTML health report (``deltalog.health.report_html``) and the history it plots
(``deltalog.health.history_series``), checked structurally: the page is parsed and every plot's bars and
points are compared with ``TableHealth`` and with the snapshots of each version."""

from __future__ import annotations

import bisect
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import deltalog
from deltalog.health import HistoryPoint, PartitionHealth, TableHealth, commit_rate, history_points
from deltalog.health.report_html import DEFAULT_MAX_PARTITIONS, html_report, render_html
from deltalog.health.svg_charts import format_bytes
from deltalog.log.histograms import FileSizeHistogram
from html_dom import Node, parse
from recording_store import CountingStore

T0 = 1_714_550_400_000  # 2024-05-01 08:00:00 UTC
HOUR = 3_600_000
DAY = 24 * HOUR
WEIRD = 'a<b&"c"'
THRESHOLDS = {"max_small_file_share": 0.5, "max_deleted_share": 0.2, "max_commits_since_checkpoint": 100}


def _rows(ids: range, day: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "day": [day] * len(ids)})


def build_orders(path: Path) -> Path:
    """v0: 1,000 rows on 2024-05-01; v1-v5: one row each on 2024-05-02, an hour apart; v6: 400 rows in the
    partition ``a<b&"c"``; v7: a DELETE of 300 rows (a deletion vector); v8: a DELETE of one whole small file.
    Deletion vectors on, no checkpoint."""
    props = {"delta.enableDeletionVectors": "true"}
    deltalog.write_table(path, _rows(range(1000), "2024-05-01"), partition_by=["day"], properties=props,
                         clock=lambda: T0)
    for i in range(5):
        deltalog.write_table(path, _rows(range(5000 + i, 5001 + i), "2024-05-02"), mode="append",
                             clock=lambda i=i: T0 + (i + 1) * HOUR)
    deltalog.write_table(path, _rows(range(9000, 9400), WEIRD), mode="append", clock=lambda: T0 + 30 * HOUR)
    table = deltalog.Table(path)
    table.delete("id < 300", clock=lambda: T0 + 31 * HOUR)
    table.delete("id = 5000", clock=lambda: T0 + 32 * HOUR)
    return path


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_orders(tmp_path_factory.mktemp("report") / "orders")


def _totals(path: Path, version: int) -> tuple[int, int]:
    files = deltalog.Table(path).snapshot(version).add_files()
    return files.num_rows, sum(files.column("size").to_pylist())


def _ints(nodes: list[Node], attr: str) -> list[int]:
    return [int(n.attrs[attr]) for n in nodes]


def _no_external_reference(page: str) -> None:
    lowered = page.lower()
    for needle in ("http://", "https://", "src=", "<script", "<link", "url(", "@import", "<img", "<iframe"):
        assert needle not in lowered, needle


# ----------------------------------------------------------------------------------------- the series


def test_history_points_match_the_snapshots(orders: Path) -> None:
    series = history_points(deltalog.Table(orders).snapshot())
    assert [p.version for p in series.points] == list(range(9)) and not series.truncated
    assert [(p.num_files, p.num_bytes) for p in series.points] == [_totals(orders, v) for v in range(9)]
    assert [p.source for p in series.points] == ["crc"] * 8 + ["snapshot"]
    assert series.commits_read == 0  # every version has its .crc file
    assert [p.timestamp for p in series.points] == [T0 + h * HOUR for h in (0, 1, 2, 3, 4, 5, 30, 31, 32)]
    assert [p.operation for p in series.points] == ["WRITE"] * 7 + ["DELETE"] * 2


def _without_crc(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for crc in (dst / "_delta_log").glob("*.crc"):
        crc.unlink()
    return dst


def test_history_points_from_the_commits_alone(orders: Path, tmp_path: Path) -> None:
    bare = _without_crc(orders, tmp_path / "bare")
    series = history_points(deltalog.Table(bare).snapshot())
    assert [(p.num_files, p.num_bytes) for p in series.points] == [_totals(orders, v) for v in range(9)]
    assert [p.source for p in series.points] == ["log"] * 8 + ["snapshot"]
    assert series.commits_read == 8  # versions 1..8 read whole, to work back to version 0
    assert series.points[0].timestamp == T0 and series.points[-1].operation == "DELETE"


def test_the_window_starts_from_the_totals_worked_back(orders: Path, tmp_path: Path) -> None:
    for table in (orders, _without_crc(orders, tmp_path / "bare")):
        series = history_points(deltalog.Table(table).snapshot(), limit=3)
        assert [p.version for p in series.points] == [6, 7, 8] and series.truncated and series.limit == 3
        assert [(p.num_files, p.num_bytes) for p in series.points] == [_totals(orders, v) for v in (6, 7, 8)]
    old = history_points(deltalog.Table(orders).snapshot(4), limit=2)  # time travel: up to the snapshot's version
    assert [(p.version, p.num_files, p.source) for p in old.points] == [(3, 4, "crc"), (4, 5, "snapshot")]


def test_the_read_budget_and_removes_without_a_size(orders: Path, tmp_path: Path) -> None:
    bare = _without_crc(orders, tmp_path / "bare")
    tight = history_points(deltalog.Table(bare).snapshot(), read_budget=0)
    assert tight.commits_read == 0 and tight.bytes_read == 0
    assert [(p.num_files, p.source) for p in tight.points[:-1]] == [(None, "")] * 8
    assert tight.points[-1].num_files == _totals(orders, 8)[0]
    # a remove without a size (allowed by the protocol): bytes before it are unknown, files still known
    commit = bare / "_delta_log" / f"{8:020d}.json"
    lines = [json.loads(line) for line in commit.read_text().splitlines()]
    for action in lines:
        if "remove" in action:
            action["remove"].pop("size", None)
    commit.write_text("".join(json.dumps(a) + "\n" for a in lines))
    series = history_points(deltalog.Table(bare).snapshot())
    assert [p.num_files for p in series.points] == [_totals(orders, v)[0] for v in range(9)]
    assert [p.num_bytes for p in series.points[:8]] == [None] * 8
    assert series.points[8].num_bytes == _totals(orders, 8)[1]


def test_no_data_file_is_read_for_the_report(orders: Path, tmp_path: Path) -> None:
    from deltalog.storage import store_for

    for table in (orders, _without_crc(orders, tmp_path / "bare")):
        store = CountingStore(store_for(str(table)))
        page = html_report(deltalog.Table(table, store=store).snapshot())  # type: ignore[arg-type]
        assert page.count('class="pt') == 18
        assert store.read_paths and all(p.startswith("_delta_log/") for p in store.read_paths)


def test_commit_rate_buckets() -> None:
    def pts(times: list[int | None]) -> list[HistoryPoint]:
        return [HistoryPoint(v, t, None, None, None, "") for v, t in enumerate(times)]

    hourly = commit_rate(pts([T0, T0 + 1, T0 + 2 * HOUR + 5, None]), max_buckets=5)
    assert hourly is not None and (hourly.unit, hourly.start, hourly.counts) == ("hour", T0, (2, 0, 1))
    fine = commit_rate(pts([T0, T0 + 1, T0 + 2 * HOUR + 5, None]))  # the shortest unit within 120 buckets
    assert fine is not None and fine.unit == "10 minutes" and fine.counts == (2, *[0] * 11, 1)
    daily = commit_rate(pts([T0 + d * DAY for d in (0, 0, 3, 9)]), max_buckets=30)
    assert daily is not None and daily.unit == "day" and daily.counts == (2, 0, 0, 1, 0, 0, 0, 0, 0, 1)
    assert daily.start == T0 - T0 % DAY and daily.total == 4
    weekly = commit_rate(pts([T0, T0 + 300 * DAY]))
    assert weekly is not None and weekly.unit == "week" and len(weekly.counts) <= 120 and weekly.total == 2
    assert commit_rate(pts([None])) is None and commit_rate([]) is None


# ------------------------------------------------------------------------------------------- the page


def test_the_report_shows_the_health_numbers_and_plots(orders: Path) -> None:
    table = deltalog.Table(orders)
    h = table.health()
    series = history_points(table.snapshot())
    page = render_html(h, series, thresholds=THRESHOLDS)
    _no_external_reference(page)
    doc = parse(page)
    assert {s.attrs["id"] for s in doc.find_all("svg")} == {
        "chart-size-files", "chart-size-bytes", "chart-deleted-share", "chart-deleted-partitions", "chart-partitions",
        "chart-history-bytes", "chart-history-files", "chart-commit-rate"}

    # headline numbers
    def shown(metric: str) -> str:
        return doc.find(cls="metric", data_metric=metric).find("dd").text()

    assert shown("num_files") == f"{h.num_files:,}" == "6"
    assert shown("num_rows") == f"{h.num_rows:,}" == "1,104"
    assert shown("small_file_share") == "100.0%"
    assert shown("deleted_row_share") == f"{h.deleted_row_share * 100:.1f}%"
    assert shown("read_amplification") == f"{h.read_amplification:.2f}x"
    assert shown("commits_since_checkpoint") == "9" and shown("num_partitions") == "3"
    assert shown("last_optimize") == "not found" and shown("protocol") == "reader 3, writer 7"
    assert shown("num_tombstones") == f"{h.num_tombstones:,}"
    assert shown("reclaimable_bytes") == format_bytes(h.reclaimable_bytes)
    bad = {n.attrs["data-metric"] for n in doc.find_all(cls="metric") if "bad" in n.classes()}
    assert bad == {"small_file_share", "deleted_row_share"}
    assert [n.attrs["data-metric"] for n in doc.find_all("li", cls="breach")] == [
        b.metric for b in h.breaches(**THRESHOLDS)] == ["small_file_share", "deleted_row_share"]

    # the file-size histogram: one bar per bin from the first used (or the threshold's) to the last
    hist = h.file_size_histogram
    used = [i for i, c in enumerate(hist.file_counts) if c]
    edge = bisect.bisect_left(hist.sorted_bin_boundaries, h.small_file_threshold)
    for chart in ("chart-size-files", "chart-size-bytes"):
        bars = doc.find("svg", id_=chart).find_all("rect", cls="bar")
        assert len(bars) == max(used[-1], edge) - min(used[0], edge) + 1 == 18
        index = [hist.sorted_bin_boundaries.index(s) for s in _ints(bars, "data-start")]
        assert _ints(bars, "data-files") == [hist.file_counts[i] for i in index]
        assert _ints(bars, "data-bytes") == [hist.total_bytes[i] for i in index]
    files_bars = doc.find("svg", id_="chart-size-files").find_all("rect", cls="bar")
    assert sum(_ints(files_bars, "data-files")) == h.num_files and sum(_ints(files_bars, "data-bytes")) == h.num_bytes
    # every bin up to the one that starts at the 32 MiB threshold is marked small
    assert ["small" in b.classes() for b in files_bars] == [True] * 17 + [False]
    assert int(files_bars[-1].attrs["data-start"]) == h.small_file_threshold == 32 << 20

    # deleted rows: the table's share, and the one partition with deleted rows
    share = doc.find("svg", id_="chart-deleted-share").find_all("rect", cls="bar")
    assert [(b.attrs["data-part"], int(b.attrs["data-value"])) for b in share] == [
        ("live rows", h.num_rows), ("deleted rows", h.num_physical_rows - h.num_rows)]
    deleted = doc.find("svg", id_="chart-deleted-partitions").find_all("g", cls="row")
    assert [(r.find("text", cls="rl").text(), int(r.attrs["data-deleted"])) for r in deleted] == [
        ("day=2024-05-01", 300)]
    assert [t.text() for t in deleted[0].find_all("text", cls="val")] == ["30.0%", "300", "1"]

    # partitions, the largest first; the odd value is escaped in the source and shown as it is
    rows = doc.find("svg", id_="chart-partitions").find_all("g", cls="row")
    expect = sorted(h.partitions, key=lambda p: -p.num_bytes)
    assert [(int(r.attrs["data-files"]), int(r.attrs["data-bytes"])) for r in rows] == [
        (p.num_files, p.num_bytes) for p in expect]
    labels = [r.find("text", cls="rl").text() for r in rows]
    assert f"day={WEIRD}" in labels and WEIRD not in page and "a&lt;b&amp;&quot;c&quot;" in page
    assert not doc.find_all(cls="rest")

    # the history: one point per version, in both charts, and the commit rate
    points = doc.find("svg", id_="chart-history-files").find_all("circle", cls="pt")
    assert _ints(points, "data-x") == list(range(9))
    assert _ints(points, "data-y") == [_totals(orders, v)[0] for v in range(9)]
    sizes = doc.find("svg", id_="chart-history-bytes").find_all("circle", cls="pt")
    assert _ints(sizes, "data-y") == [_totals(orders, v)[1] for v in range(9)]
    assert len(doc.find("svg", id_="chart-history-files").find_all("polyline")) == 1
    rate = doc.find("svg", id_="chart-commit-rate").find_all("rect", cls="bar")
    assert len(rate) == 33 and sum(_ints(rate, "data-commits")) == 9  # hours 08:00 on May 1 to 16:00 on May 2
    assert _ints(rate, "data-start")[0] == T0 and "commits per hour" in doc.find("section", id_="history").text()


def test_an_empty_table_renders(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    deltalog.create_table(path, pa.schema([("id", pa.int64()), ("day", pa.string())]), partition_by=["day"])
    snapshot = deltalog.Table(path).snapshot()
    assert snapshot.version == 0 and snapshot.add_files().num_rows == 0
    page = html_report(snapshot)
    _no_external_reference(page)
    doc = parse(page)
    assert doc.find(cls="metric", data_metric="num_files").find("dd").text() == "0"
    assert "The table has no live file." in doc.find("section", id_="file-sizes").text()
    assert "No partition has a live file." in doc.find("section", id_="partitions").text()
    assert "No row count is known" in doc.find("section", id_="deleted-rows").text()
    assert {s.attrs["id"] for s in doc.find_all("svg")} == {"chart-history-bytes", "chart-history-files",
                                                            "chart-commit-rate"}
    assert _ints(doc.find("svg", id_="chart-history-files").find_all("circle", cls="pt"), "data-y") == [0]
    assert "No threshold was given" in doc.find("section", id_="thresholds").text()
    # and with no history at all
    bare = parse(render_html(TableHealth.empty("t", 0)))
    assert not bare.find_all("svg") and not bare.find_all("section", id_="history")


def test_a_table_without_partitions(tmp_path: Path) -> None:
    path = tmp_path / "plain"
    for i in range(3):
        deltalog.write_table(path, pa.table({"id": [i, i + 10]}), mode="append", clock=lambda i=i: T0 + i * DAY)
    page = html_report(deltalog.Table(path).snapshot(), versions=2,
                       thresholds={"max_small_file_share": 1.0, "max_reclaimable_bytes": 0})
    doc = parse(page)
    assert "The table is not partitioned." in doc.find("section", id_="partitions").text()
    assert not doc.find_all("svg", id_="chart-partitions") and not doc.find_all("svg", id_="chart-deleted-partitions")
    assert not doc.find_all(cls="metric", data_metric="num_partitions")
    assert "every threshold met" in doc.find("p", cls="ok").text()
    assert len(doc.find("svg", id_="chart-history-files").find_all("circle", cls="pt")) == 2
    history = doc.find("section", id_="history").text()
    assert "Versions 1 to 2" in history and "older versions are not shown" in history
    rate = doc.find("svg", id_="chart-commit-rate").find_all("rect", cls="bar")  # a day: 25 hours, 2 commits
    assert len(rate) == 25 and _ints(rate, "data-commits") == [1, *[0] * 23, 1]
    assert not parse(html_report(deltalog.Table(path).snapshot(), versions=0)).find_all("section", id_="history")


def _partition(i: int) -> PartitionHealth:
    files = 1 + i % 7
    return PartitionHealth({"day": f"d{i:05d}", "kind": None if i % 2 else "<x>"}, files, 1000 * files + i,
                           10 * files, i % 3, files // 2, i % 3 and 1, ((0, files, 1000 * files + i),))


def test_thousands_of_partitions_are_capped_and_summed_up() -> None:
    parts = tuple(_partition(i) for i in range(5000))
    h = TableHealth.empty("many", 40).with_(
        partition_columns=("day", "kind"), partitions=parts, num_files=sum(p.num_files for p in parts),
        num_bytes=sum(p.num_bytes for p in parts), num_rows=sum(p.num_rows for p in parts),
        num_deleted_rows=sum(p.num_deleted_rows for p in parts), small_file_threshold=32 << 20,
        num_physical_rows=sum(p.num_rows + p.num_deleted_rows for p in parts),
        file_size_histogram=FileSizeHistogram.of([1000] * sum(p.num_files for p in parts)))
    page = render_html(h)
    assert len(page) < 200_000
    doc = parse(page)
    rows = doc.find("svg", id_="chart-partitions").find_all("g", cls="row")
    assert len(rows) == DEFAULT_MAX_PARTITIONS
    biggest = sorted(parts, key=lambda p: (-p.num_bytes, -p.num_files))
    assert _ints(rows, "data-bytes") == [p.num_bytes for p in biggest[:DEFAULT_MAX_PARTITIONS]]
    rest = doc.find("p", cls="rest", data_rest_partitions=str(5000 - DEFAULT_MAX_PARTITIONS))
    assert int(rest.attrs["data-rest-files"]) + sum(_ints(rows, "data-files")) == h.num_files
    assert int(rest.attrs["data-rest-bytes"]) + sum(_ints(rows, "data-bytes")) == h.num_bytes
    assert rows[0].find("text", cls="rl").text() == "day=d04997, kind=null"
    hit = [p for p in parts if p.num_deleted_rows]
    deleted = doc.find("svg", id_="chart-deleted-partitions").find_all("g", cls="row")
    assert len(deleted) == DEFAULT_MAX_PARTITIONS
    assert doc.find_all("p", cls="rest", data_rest_partitions=str(len(hit) - DEFAULT_MAX_PARTITIONS))
    assert "<x>" not in page and "&lt;x&gt;" in page
    small = parse(render_html(h, max_partitions=5))
    assert len(small.find("svg", id_="chart-partitions").find_all("g", cls="row")) == 5


def test_a_long_history_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "long"
    for i in range(30):
        deltalog.write_table(path, pa.table({"id": [i]}), mode="append", clock=lambda i=i: T0 + i * 60_000)
    snapshot = deltalog.Table(path).snapshot()
    doc = parse(html_report(snapshot, versions=12))
    points = doc.find("svg", id_="chart-history-files").find_all("circle", cls="pt")
    assert _ints(points, "data-x") == list(range(18, 30)) and _ints(points, "data-y") == list(range(19, 31))
    rate = doc.find("svg", id_="chart-commit-rate").find_all("rect", cls="bar")
    assert len(rate) == 12 and set(_ints(rate, "data-commits")) == {1}  # one commit a minute


def test_thresholds_are_checked_by_name() -> None:
    with pytest.raises(ValueError, match="unknown thresholds"):
        render_html(TableHealth.empty("t", 0), thresholds={"max_files": 3})
    h = TableHealth.empty("t", 0).with_(commits_since_checkpoint=12, reclaimable_bytes=5)
    doc = parse(render_html(h, thresholds={"max_commits_since_checkpoint": 10, "max_reclaimable_bytes": None}))
    assert [n.text() for n in doc.find_all("li", cls="breach")] == [
        "✗ commits_since_checkpoint is 12, above the limit 10"]
