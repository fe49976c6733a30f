"""The HTML health report in a real browser: headless Chromium (Debian's ``chromium``, /usr/bin/chromium)
loads the page ``deltalog health --html`` wrote, with no network, and what it shows is checked -- the DOM
after load (the plots' SVG bars and points, the headline numbers, an escaped partition value) and a
screenshot (the page is drawn: many colours, the charts' own colours among them).

Marked ``browser``. Without Chromium the tests skip, naming the install command; with ``DELTALOG_STRICT=1``
(``make test``, CI) they fail instead, as every skip does there (tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.cli import EXIT_PROBLEMS, main
from deltalog.health import TableHealth
from html_dom import Node, parse

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("DELTALOG_CHROMIUM", "/usr/bin/chromium")
INSTALL = "apt-get update && apt-get install -y --no-install-recommends chromium"
STRICT = os.environ.get("DELTALOG_STRICT", "").strip().lower() in ("1", "true", "yes")  # as tests/conftest.py
T0 = 1_714_550_400_000  # 2024-05-01 08:00:00 UTC
HOUR = 3_600_000
WEIRD = 'a<b&"c"'
#: The report's CSS colours of files, bytes, small-file bins and deleted rows (sRGB).
COLOURS = {"files": (0x4E, 0x79, 0xA7), "bytes": (0x59, 0xA1, 0x4F), "small": (0xF2, 0x8E, 0x2B),
           "deleted": (0xE1, 0x57, 0x59)}


def installed() -> bool:
    return os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)


def chromium() -> str:
    """The Chromium binary, else a skip naming the install command (a failure under DELTALOG_STRICT=1)."""
    if installed():
        return CHROMIUM
    message = (f"headless Chromium is missing ({CHROMIUM} not found): the browser test of the HTML health report "
               f"needs Debian's chromium package -- install it with: {INSTALL}")
    if STRICT:
        pytest.fail(f"{message} (DELTALOG_STRICT=1: the browser test must run)", pytrace=False)
    pytest.skip(message)


def run_chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One headless Chromium run with a fresh profile, no network (every host name resolves to nothing) and
    none of its background services."""
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--force-color-profile=srgb", "--hide-scrollbars",
             f"--user-data-dir={profile}"]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["HOME"] = str(profile)
    done = subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=180, env=env,
                          check=False)
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-3000:]}"
    return done


def _build(path: Path) -> None:
    props = {"delta.enableDeletionVectors": "true"}
    deltalog.write_table(path, pa.table({"id": list(range(1000)), "day": ["2024-05-01"] * 1000}),
                         partition_by=["day"], properties=props, clock=lambda: T0)
    for i in range(4):
        deltalog.write_table(path, pa.table({"id": [5000 + i], "day": ["2024-05-02"]}), mode="append",
                             clock=lambda i=i: T0 + (i + 1) * HOUR)
    deltalog.write_table(path, pa.table({"id": list(range(9000, 9050)), "day": [WEIRD] * 50}), mode="append",
                         clock=lambda: T0 + 20 * HOUR)
    deltalog.Table(path).delete("id < 300", clock=lambda: T0 + 26 * HOUR)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any] | None]:
    """The report of a small table, its DOM after load and a screenshot; ``None`` without Chromium (each test
    then skips or fails itself, so that a missing browser is a test failure under DELTALOG_STRICT=1)."""
    if not installed():
        yield None
        return
    binary = CHROMIUM
    root = tmp_path_factory.mktemp("browser")
    table, page = root / "orders", root / "report.html"
    _build(table)
    assert main(["health", str(table), "--html", str(page), "--max-small-file-share", "0.5"]) == EXIT_PROBLEMS
    profile = root / "profile"
    dom = run_chromium(binary, profile, "--dump-dom", page.as_uri()).stdout
    shot = root / "report.png"
    run_chromium(binary, profile, f"--screenshot={shot}", "--window-size=1200,2000", page.as_uri())
    yield {"table": table, "page": page, "dom": dom, "shot": shot, "health": deltalog.Table(table).health()}
    shutil.rmtree(profile, ignore_errors=True)


def need(rendered: dict[str, Any] | None) -> dict[str, Any]:
    """What :func:`rendered` made; in the test itself, so a missing browser skips it or (DELTALOG_STRICT=1)
    fails it, naming the install command."""
    chromium()
    assert rendered is not None
    return rendered


def test_the_browser_shows_the_plots(rendered: dict[str, Any] | None) -> None:
    report = need(rendered)
    doc = parse(report["dom"])
    h: TableHealth = report["health"]
    assert doc.find("title").text() == f"Table health: {report['table']}"
    charts = {s.attrs["id"]: s for s in doc.find_all("svg")}
    assert set(charts) == {"chart-size-files", "chart-size-bytes", "chart-deleted-share", "chart-deleted-partitions",
                           "chart-partitions", "chart-history-bytes", "chart-history-files", "chart-commit-rate"}
    bars = charts["chart-size-files"].find_all("rect", cls="bar")
    assert len(bars) == 18 and sum(int(b.attrs["data-files"]) for b in bars) == h.num_files == 6
    assert float(bars[0].attrs["height"]) > 0  # every file is in the first bin, below 8 KiB
    size_bars = charts["chart-size-bytes"].find_all("rect", cls="bar")
    assert sum(int(b.attrs["data-bytes"]) for b in size_bars) == h.num_bytes
    history = charts["chart-history-files"]
    assert [int(c.attrs["data-y"]) for c in history.find_all("circle", cls="pt")] == [1, 2, 3, 4, 5, 6, 6]
    assert len(history.find_all("polyline", cls="line")) == 1
    assert len(charts["chart-history-bytes"].find_all("circle", cls="pt")) == 7
    assert sum(int(b.attrs["data-commits"]) for b in charts["chart-commit-rate"].find_all("rect", cls="bar")) == 7
    labels = [t.text() for t in charts["chart-partitions"].find_all("text", cls="rl")]
    assert sorted(labels) == ["day=2024-05-01", "day=2024-05-02", f"day={WEIRD}"]


def test_the_browser_shows_the_headline_numbers(rendered: dict[str, Any] | None) -> None:
    report = need(rendered)
    doc = parse(report["dom"])
    h: TableHealth = report["health"]

    def shown(metric: str) -> str:
        return doc.find(cls="metric", data_metric=metric).find("dd").text()

    assert shown("num_files") == "6" and shown("num_rows") == f"{h.num_rows:,}" == "754"
    assert shown("small_file_share") == "100.0%" and shown("deleted_row_share") == f"{h.deleted_row_share:.1%}"
    assert shown("read_amplification") == f"{h.read_amplification:.2f}x"
    assert shown("commits_since_checkpoint") == "7" and shown("protocol") == "reader 3, writer 7"
    assert [n.text() for n in doc.find_all("li", cls="breach")] == ["✗ small_file_share is 1, above the limit 0.5"]


def _pixels(png: Path) -> tuple[tuple[int, int], dict[tuple[int, int, int], int]]:
    image_module = pytest.importorskip("PIL.Image", reason="Pillow (installed with matplotlib by deltalog[test])")
    with image_module.open(png) as image:
        rgb = image.convert("RGB")
        counts = rgb.getcolors(maxcolors=1 << 24)
        return rgb.size, {colour: n for n, colour in counts}


def test_the_screenshot_is_drawn(rendered: dict[str, Any] | None) -> None:
    report = need(rendered)
    shot: Path = report["shot"]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(data[16:20]), int.from_bytes(data[20:24])) == (1200, 2000)  # IHDR: width, height
    size, colours = _pixels(shot)
    assert size == (1200, 2000)
    assert len(colours) > 50, f"the screenshot has {len(colours)} colours: blank or unstyled"
    white = colours.get((255, 255, 255), 0)
    assert white < 0.97 * size[0] * size[1]
    for name, colour in COLOURS.items():  # bars are filled with the report's own colours
        assert colours.get(colour, 0) > 200, (name, colour, colours.get(colour, 0))


def test_no_external_resource(rendered: dict[str, Any] | None) -> None:
    report = need(rendered)
    page = Path(report["page"]).read_text(encoding="utf-8").lower()
    for needle in ("http://", "https://", "src=", "<script", "<link", "url(", "@import"):
        assert needle not in page, needle
    dom: Node = parse(report["dom"])
    assert not dom.find_all("script") and not dom.find_all("img") and not dom.find_all("link")
