"""The Spark version lanes: tests/spark/test_spark_everyday.py on every supported PySpark, and the README's
version table built from what they found.

Each lane other than the project venv's own PySpark is a directory of packages (that PySpark and what it
pins: py4j, and pandas < 3 for 3.5) installed once with ``uv pip install --target`` (pip's when the venv has no
uv) into a cache outside the checkout (``$DELTALOG_LANES_CACHE``, else ``~/.cache/deltalog/spark-lanes``) and
reused by every later run and clone on the machine. A lane runs the project venv's Python with that directory
first on ``PYTHONPATH``, so it sees deltalog and the test tools of the venv but its own PySpark; Spark's Python
workers inherit the path.

    python scripts/spark_lanes.py run --reports DIR     set up what is missing, run every lane, write DIR/<version>.json
    python scripts/spark_lanes.py table --reports DIR   rewrite the version table in README.md and docs/compatibility.md
    python scripts/spark_lanes.py check --reports DIR   fail when those tables differ from the lanes' results

The venv's own PySpark (4.3) is not a lane here: ``make test`` runs the probe with the rest of the shared-session
Spark suite, with ``DELTALOG_LANE_REPORTS`` set, so its column comes from there. ``run`` installs the next lane
while the current one runs; a lane that fails prints its output and makes the
run fail (exit 1), after every lane has had its turn.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The lanes besides the venv's own PySpark: minor version -> what pip installs for it.
LANES: dict[str, list[str]] = {
    "3.5": ["pyspark==3.5.9", "pandas<3"],  # PySpark 3.5 does not support pandas 3
    "4.0": ["pyspark==4.0.5"],
    "4.1": ["pyspark==4.1.4"],
    "4.2": ["pyspark==4.2.1"],
}
PROBE = "tests/spark/test_spark_everyday.py"
DOCS = (ROOT / "README.md", ROOT / "docs" / "compatibility.md")
BEGIN, END = "<!-- spark-versions:begin -->", "<!-- spark-versions:end -->"


def cache_root() -> Path:
    given = os.environ.get("DELTALOG_LANES_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base, "deltalog", "spark-lanes")


def lane_dir(requirements: list[str]) -> Path:
    """Where a lane's packages live: named by its requirements and the Python version (wheels differ)."""
    name = "+".join(re.sub(r"[^A-Za-z0-9.]+", "-", r) for r in requirements)
    return cache_root() / f"py{sys.version_info[0]}{sys.version_info[1]}-{name}"


def set_up(requirements: list[str]) -> Path:
    """The lane's package directory, installed first if this machine has none yet."""
    target = lane_dir(requirements)
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    started = time.monotonic()
    uv = Path(sys.executable).with_name("uv")  # make test installs it in the venv: parallel downloads
    command = ([str(uv), "pip", "install", "-q", "--python", sys.executable, "--target", str(partial)] if uv.exists()
               else [sys.executable, "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check",
                     "--target", str(partial)])
    done = subprocess.run([*command, *requirements], capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise RuntimeError(f"pip could not install {' '.join(requirements)} for a Spark lane:\n{done.stderr[-3000:]}")
    (partial / ".complete").write_text(" ".join(requirements) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    print(f"lane {' '.join(requirements)}: installed in {time.monotonic() - started:.0f} s ({target})", flush=True)
    return target


def run_probe(name: str, packages: Path, reports: Path, basetemp: Path) -> tuple[bool, str]:
    """Run the probe module on one lane; (passed, output)."""
    env = dict(os.environ, DELTALOG_STRICT="1", DELTALOG_LANE_REPORTS=str(reports))
    env["PYTHONPATH"] = os.pathsep.join([str(packages), *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                           str(basetemp / name), PROBE], cwd=ROOT, env=env, capture_output=True, text=True)
    return done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]


def run(reports: Path, only: list[str] | None) -> int:
    """Every lane (the venv's own PySpark is the shared-session suite's); 0 when all passed."""
    chosen = [v for v in LANES if not only or v in only]
    ready: dict[str, Path | BaseException] = {}
    changed = threading.Condition()

    def install(version: str) -> None:
        try:
            result: Path | BaseException = set_up(LANES[version])
        except BaseException as exc:  # reported when the lane's turn comes
            result = exc
        with changed:
            ready[version] = result
            changed.notify_all()

    for version in chosen:  # downloads run side by side: mostly waiting on the network
        threading.Thread(target=install, args=(version,), daemon=True).start()
    failed: list[str] = []
    basetemp = Path(tempfile.mkdtemp(prefix="deltalog-lanes."))
    try:
        waiting = list(chosen)
        while waiting:
            with changed:  # whichever lane is installed first runs first
                changed.wait_for(lambda: any(v in ready for v in waiting))
            version = next(v for v in waiting if v in ready)
            waiting.remove(version)
            found = ready[version]
            if isinstance(found, BaseException):
                print(f"lane {version}: not set up: {found}", flush=True)
                failed.append(version)
                continue
            started = time.monotonic()
            passed, output = run_probe(version, found, reports, basetemp)
            last = output.strip().splitlines()[-1] if output.strip() else ""
            print(f"lane {version}: {'passed' if passed else 'FAILED'} in {time.monotonic() - started:.0f} s: {last}",
                  flush=True)
            if not passed:
                print(output, flush=True)
                failed.append(version)
    finally:
        shutil.rmtree(basetemp, ignore_errors=True)
    return 1 if failed else 0


def table(reports: Path) -> str:
    """The markdown table of features (rows) by Spark version (columns) from the lanes' reports."""
    found = {p.stem: json.loads(p.read_text()) for p in sorted(reports.glob("*.json"))}
    if not found:
        raise SystemExit(f"no lane reports in {reports}: run `python scripts/spark_lanes.py run --reports {reports}`")
    versions = sorted(found, key=lambda v: tuple(int(p) for p in re.findall(r"\d+", v)))
    features = sorted({f for outcomes in found.values() for f in outcomes})
    head = "| Feature | " + " | ".join(f"Spark {v}" for v in versions) + " |"
    rule = "|---|" + "---|" * len(versions)
    marks = {"works": "yes", "fails": "**fails**", "unfinished": "**fails**"}
    lines = [head, rule]
    for feature in features:
        cells = [found[v].get(feature, "not run") for v in versions]
        shown = [marks.get(c, c.replace("works (", "yes (", 1)) for c in cells]
        lines.append(f"| {feature.replace('|', '/')} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def _replace(text: str, body: str, where: Path) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{where} has no {BEGIN} ... {END} block for the Spark version table")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{body}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "table", "check", "setup"])
    parser.add_argument("--reports", type=Path, default=ROOT / ".lanes")
    parser.add_argument("--only", nargs="*", help="lanes to run (3.5, 4.0, 4.1, 4.2)")
    args = parser.parse_args()
    if args.command == "setup":
        for version in args.only or LANES:
            print(set_up(LANES[version]))
        return 0
    if args.command == "run":
        return run(args.reports, args.only)
    body = table(args.reports)
    stale = []
    for doc in DOCS:
        old = doc.read_text()
        new = _replace(old, body, doc)
        if args.command == "table" and new != old:
            doc.write_text(new)
            print(f"{doc.relative_to(ROOT)}: Spark version table updated")
        elif args.command == "check" and new != old:
            stale.append(str(doc.relative_to(ROOT)))
    if stale:
        print(f"The Spark version table in {', '.join(stale)} differs from what the lanes found:\n{body}\n"
              "Run `make spark-versions` and commit the result.")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
