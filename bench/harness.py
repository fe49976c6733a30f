"""Timing and results helpers shared by every benchmark script.

Conventions every workload script follows (so ``bench/run.py`` can drive it and ``bench/report.py``
can render it): it accepts ``--quick`` (tiny sizes, one repeat), ``--results-dir DIR`` and
``--data-dir DIR``, measures deltalog and its anchor (delta-rs) in the same run, and saves one
:class:`Result` per workload as ``<results-dir>/<workload>.json``.

* :func:`time_calls` -- repeated in-process calls after a warm-up call; :func:`time_interleaved` --
  the same for two contenders, alternating them;
* :func:`run_child` -- run a measuring child process and read the JSON it prints (peak RSS is only
  meaningful per process, so memory is measured that way);
* :func:`peak_rss_bytes` -- this process's peak resident set size;
* :class:`Result` / :func:`save` / :func:`load_results` -- the results files.

Example:
    >>> seconds, value = time_calls(lambda: sum(range(1000)), repeat=3)
    >>> len(seconds), value
    (3, 499500)
    >>> r = Result(workload="x", title="demo", deltalog_median=1.0, anchor_median=2.0, target=0.8)
    >>> r.ratio, r.holds
    (0.5, True)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"

if importlib.util.find_spec("deltalog") is None:  # running from a checkout without an install
    sys.path.insert(0, str(ROOT / "src"))

T = TypeVar("T")
GIB = 1 << 30


def time_calls(fn: Callable[[], T], *, repeat: int, warmup: int = 1) -> tuple[list[float], T]:
    """Wall-clock seconds of ``repeat`` calls of ``fn`` after ``warmup`` untimed ones, and the last result.

    Example:
        >>> secs, _ = time_calls(lambda: None, repeat=2, warmup=0)
        >>> len(secs)
        2
    """
    result: Any = None
    for _ in range(warmup):
        result = fn()
    seconds = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - t0)
    return seconds, result


def time_interleaved(
    a: Callable[[], T], b: Callable[[], T], *, repeat: int, warmup: int = 1
) -> tuple[list[float], T, list[float], T]:
    """Like :func:`time_calls` for two contenders, alternating ``a, b, a, b, ...`` so that a transient
    load on the machine hits both sides alike; returns ``(a_seconds, a_result, b_seconds, b_result)``.

    Example:
        >>> sa, ra, sb, rb = time_interleaved(lambda: 1, lambda: 2, repeat=2, warmup=0)
        >>> len(sa), ra, len(sb), rb
        (2, 1, 2, 2)
    """
    ra: Any = None
    rb: Any = None
    for _ in range(warmup):
        ra, rb = a(), b()
    sa, sb = [], []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        ra = a()
        t1 = time.perf_counter()
        rb = b()
        t2 = time.perf_counter()
        sa.append(t1 - t0)
        sb.append(t2 - t1)
    return sa, ra, sb, rb


def median(values: Sequence[float]) -> float:
    """The median (0.0 for no values).

    Example:
        >>> median([3.0, 1.0, 2.0])
        2.0
    """
    return float(statistics.median(values)) if values else 0.0


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far, in bytes.

    On Linux this is ``VmHWM`` of ``/proc/self/status``: ``getrusage``'s ``ru_maxrss`` survives
    ``exec``, so a child started by a big parent would report the parent's peak.

    Example:
        >>> peak_rss_bytes() > 0
        True
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def run_child(argv: Sequence[str], *, timeout: float = 900) -> dict[str, Any]:
    """Run ``python <argv...>`` and parse the JSON object it prints last on stdout.

    Example:
        >>> run_child(["-c", "import json; print(json.dumps({'ok': 1}))"])
        {'ok': 1}
    """
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"child {' '.join(argv)} printed no JSON:\n{proc.stdout[-2000:]}")
    out: dict[str, Any] = json.loads(lines[-1])
    return out


@dataclass
class Result:
    """One workload's outcome: deltalog's and the anchor's medians, their ratio and the target.

    ``metric`` is ``"time"`` (ratio = deltalog / anchor, target is a maximum) or ``"throughput"``
    (ratio = deltalog / anchor in operations per second, target is a minimum). ``limits`` holds
    absolute limits that must also hold, e.g. ``{"deltalog_peak_rss_bytes": 2 GiB}`` (a maximum).

    Example:
        >>> Result(workload="f", title="t", deltalog_median=2.0, anchor_median=1.0, metric="throughput",
        ...        target=1.0).ratio
        2.0
    """

    workload: str
    title: str
    deltalog_median: float
    anchor_median: float
    target: float
    metric: str = "time"
    anchor: str = "delta-rs (deltalake)"
    unit: str = "s"
    deltalog_runs: list[float] = field(default_factory=list)
    anchor_runs: list[float] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, float] = field(default_factory=dict)
    quick: bool = False
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """deltalog / anchor (seconds for ``time``, operations per second for ``throughput``)."""
        return self.deltalog_median / self.anchor_median if self.anchor_median else float("inf")

    @property
    def failed_limits(self) -> list[str]:
        """The absolute limits that do not hold."""
        return [k for k, limit in self.limits.items() if float(self.extra.get(k, 0)) >= limit]

    @property
    def holds(self) -> bool:
        """The ratio meets the target and every absolute limit holds."""
        ok = self.ratio <= self.target if self.metric == "time" else self.ratio >= self.target
        return ok and not self.failed_limits

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with ``ratio`` and ``holds`` filled in."""
        out = asdict(self)
        out["ratio"] = self.ratio
        out["holds"] = self.holds
        return out

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Result:
        """Inverse of :meth:`to_dict` (derived keys are ignored)."""
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in obj.items() if k in names})

    def summary(self) -> str:
        """One line for the console."""
        if self.metric == "throughput":
            nums = (
                f"deltalog {self.deltalog_median:,.1f} {self.unit}, "
                f"{self.anchor} {self.anchor_median:,.1f} {self.unit}"
            )
            goal = f"target >= {self.target:.2f}x"
        else:
            nums = f"deltalog {_fmt_s(self.deltalog_median)}, {self.anchor} {_fmt_s(self.anchor_median)}"
            goal = f"target <= {self.target:.2f}x" if self.target != float("inf") else "no ratio target"
        verdict = "holds" if self.holds else "MISSED"
        limits = "".join(f"; {k} over {_fmt_limit(k, v)}" for k, v in self.limits.items() if k in self.failed_limits)
        return f"({self.workload}) {self.title}: {nums}, ratio {self.ratio:.2f}x ({goal}: {verdict}{limits})"


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def _fmt_limit(key: str, value: float) -> str:
    return f"{value / GIB:.1f} GiB" if key.endswith("_bytes") else f"{value:g}"


def environment() -> dict[str, Any]:
    """Machine facts stored with every result.

    Example:
        >>> environment()["cpus"] >= 1
        True
    """
    import pyarrow

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "pyarrow": pyarrow.__version__,
        "cpus": os.cpu_count() or 1,
        "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
    try:
        from importlib.metadata import version

        env["deltalake"] = version("deltalake")
    except Exception:
        env["deltalake"] = "?"
    try:  # the PySpark imported (a version lane's, on PYTHONPATH, may shadow the installed one)
        import pyspark

        env["pyspark"] = pyspark.__version__
    except Exception:
        env["pyspark"] = None
    return env


def save(result: Result, results_dir: Path = RESULTS) -> Path:
    """Write ``<results_dir>/<workload>.json`` and print the summary line; returns the path.

    Example:
        >>> r = Result(workload="x", title="t", deltalog_median=1, anchor_median=1, target=1)
        >>> save(r, Path("/tmp"))                                        # doctest: +SKIP
        PosixPath('/tmp/x.json')
    """
    results_dir.mkdir(parents=True, exist_ok=True)
    if not result.environment:
        result.environment = environment()
    path = results_dir / f"{result.workload}.json"
    path.write_text(json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
    print(result.summary(), flush=True)
    return path


def load_results(results_dir: Path = RESULTS) -> dict[str, Result]:
    """Every ``*.json`` result in ``results_dir`` by workload (profile files are skipped).

    Example:
        >>> load_results(Path("/nonexistent"))
        {}
    """
    out: dict[str, Result] = {}
    if not results_dir.is_dir():
        return out
    for p in sorted(results_dir.glob("*.json")):
        obj = json.loads(p.read_text())
        if isinstance(obj, dict) and "workload" in obj and "deltalog_median" in obj:
            r = Result.from_dict(obj)
            out[r.workload] = r
    return out


def common_args(parser: Any) -> None:
    """Add the options every workload script takes: ``--quick``, ``--results-dir``, ``--data-dir``."""
    from synth import DATA

    parser.add_argument("--quick", action="store_true", help="tiny sizes and one repeat (smoke test)")
    parser.add_argument("--results-dir", type=Path, default=None, help="where results JSON goes")
    parser.add_argument("--data-dir", type=Path, default=DATA, help="where generated tables are cached")


def results_dir_for(args: Any) -> Path:
    """``--results-dir``, defaulting to ``bench/results`` (``bench/results/quick`` for ``--quick``)."""
    if args.results_dir is not None:
        return Path(args.results_dir)
    return RESULTS / "quick" if args.quick else RESULTS


__all__ = [
    "GIB",
    "RESULTS",
    "Result",
    "common_args",
    "environment",
    "load_results",
    "median",
    "peak_rss_bytes",
    "results_dir_for",
    "run_child",
    "save",
    "time_calls",
    "time_interleaved",
]


def spark_session(app: str, **conf: str) -> Any:
    """The Spark benchmarks' session: :func:`deltalog.spark.local_session` (local[2], UI off, ``delta``
    routed) with a 2 GiB driver and the JVM a user's Spark runs (both JIT compilers: the lean JVM the
    tests use, C1 alone, halves the speed of per-row work and would weigh every ratio by it);
    pandas-version warnings from PySpark silenced."""
    import warnings

    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from deltalog.spark import local_session

    return local_session(app, conf={"spark.driver.memory": "2g", **conf}, lean_jvm=False)


def sized_args(
    doc: str | None, argv: list[str] | None, *, rows: tuple[int, int], files: tuple[int, int],
    repeat: tuple[int, int], files_help: str = "data files",
) -> tuple[argparse.Namespace, int, int, int]:
    """Parse the shared options plus ``--rows`` / ``--files`` / ``--repeat`` of a Spark workload; each
    default is a ``(full, quick)`` pair. Returns ``(args, rows, files, repeat)``.

    Example:
        >>> _, r, f, n = sized_args(None, ["--quick"], rows=(10, 2), files=(4, 1), repeat=(3, 1))
        >>> r, f, n
        (2, 1, 1)
    """
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    common_args(parser)
    parser.add_argument("--rows", type=int, default=None, help=f"rows (default {rows[0]:,}, quick: {rows[1]:,})")
    parser.add_argument("--files", type=int, default=None, help=f"{files_help} (default {files[0]}, quick: {files[1]})")
    parser.add_argument("--repeat", type=int, default=None,
                        help=f"timed runs per side (default {repeat[0]}, quick: {repeat[1]})")
    args = parser.parse_args(argv)
    pick = 1 if args.quick else 0
    return args, args.rows or rows[pick], args.files or files[pick], args.repeat or repeat[pick]
