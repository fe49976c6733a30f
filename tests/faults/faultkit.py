"""A fault-injection sweep at the seam where deltalog changes storage.

Every file-system mutation of the local store goes through a :class:`deltalog.storage.local.FileOps`
(``makedirs``, ``write_new``, ``link``, ``replace``, ``unlink``, ``fsync_dir``, ``open_output`` and
the writes / close of a streamed data file, ``fsync_file``). :class:`FaultOps` numbers those steps as
an operation runs and, at a chosen step, *before* or *after* it happens, injects one fault:

* ``kill``      -- the process dies on the spot (``os._exit``: no handler, no ``finally``);
* ``torn``      -- for a ``write_new``: half the bytes reach the file, then the process dies;
* ``interrupt`` -- ``KeyboardInterrupt`` (Ctrl-C), which every ``except BaseException`` sees;
* ``enospc``    -- ``OSError(ENOSPC)``: the disk is full;
* ``eio``       -- ``OSError(EIO)``: the disk failed.

Each case runs in a forked child (so a kill is a real process death), then the parent checks the
table: at the old or a new version, with exactly that version's rows (as an unfaulted reference run
produced them), read the same way by delta-rs, ``deltalog check`` without errors, the next append works,
and the error the operation raised (if any) was a named deltalog error -- never a raw ``OSError`` --
that says whether it committed.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import errno
import json
import multiprocessing as mp
import os
import shutil
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

import deltalog
from deltalog.commands.check import check_table
from deltalog.errors import TableNotFoundError
from deltalog.storage import local

KILL_EXIT = 86
MODES = ("kill", "torn", "interrupt", "enospc", "eio")


class FaultOps(local.FileOps):
    """Counts mutation steps; injects ``mode`` at step ``target`` = ``(index, "before" | "after")``."""

    def __init__(self, target: tuple[int, str] | None = None, mode: str | None = None) -> None:
        self.points: list[str] = []
        self.target, self.mode = target, mode
        self._saved: Any = None

    def __enter__(self) -> FaultOps:
        self._saved = local.OS_OPS
        local.OS_OPS = self
        return self

    def __exit__(self, *exc: object) -> None:
        local.OS_OPS = self._saved

    # -- the seam ---------------------------------------------------------------------------------

    def step(self, name: str, do: Callable[[], Any], *, data: bytes | None = None, path: str | None = None) -> Any:
        k = len(self.points)
        self.points.append(name)
        if self.target == (k, "before"):
            self._inject(data=data, path=path)
        result = do()
        if self.target == (k, "after"):
            self._inject()
        return result

    def _inject(self, *, data: bytes | None = None, path: str | None = None) -> None:
        if self.mode == "kill":
            os._exit(KILL_EXIT)
        if self.mode == "torn":
            if data is not None and path is not None:
                with contextlib.suppress(OSError), open(path, "xb") as f:
                    f.write(data[: len(data) // 2])
            os._exit(KILL_EXIT)
        if self.mode == "interrupt":
            raise KeyboardInterrupt
        if self.mode == "enospc":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if self.mode == "eio":
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        if self.mode == "lost":
            raise TimeoutError("operation timed out: the response never came")
        raise AssertionError(f"unknown fault mode {self.mode!r}")

    # -- FileOps ----------------------------------------------------------------------------------

    def makedirs(self, path: str) -> None:
        if os.path.isdir(path):  # nothing to create: not a mutation
            return
        self.step("makedirs", lambda: super(FaultOps, self).makedirs(path))

    def write_new(self, path: str, data: bytes) -> None:
        self.step("write_new", lambda: super(FaultOps, self).write_new(path, data), data=data, path=path)

    def link(self, src: str, dst: str) -> None:
        self.step("link", lambda: super(FaultOps, self).link(src, dst))

    def replace(self, src: str, dst: str) -> None:
        self.step("replace", lambda: super(FaultOps, self).replace(src, dst))

    def unlink(self, path: str) -> None:
        self.step("unlink", lambda: super(FaultOps, self).unlink(path))

    def fsync_dir(self, path: str) -> None:
        self.step("fsync_dir", lambda: super(FaultOps, self).fsync_dir(path))

    def fsync_file(self, path: str) -> None:
        self.step("fsync_file", lambda: super(FaultOps, self).fsync_file(path))

    def open_output(self, path: str) -> Any:
        inner = self.step("open_output", lambda: super(FaultOps, self).open_output(path))
        return _Output(self, inner)


class _Output:
    """A streamed data file: its first write and its close are steps (pyarrow writes in many pieces)."""

    def __init__(self, ops: FaultOps, inner: Any) -> None:
        self._ops, self._inner, self._wrote = ops, inner, False

    def write(self, data: Any) -> int:
        if self._wrote:
            return int(self._inner.write(data))
        self._wrote = True
        return int(self._ops.step("output.write", lambda: self._inner.write(data)))

    def tell(self) -> int:
        return int(self._inner.tell())

    def close(self) -> None:
        self._ops.step("output.close", self._inner.close)


# ------------------------------------------------------------------------------------------ the child


def run_child(action: Callable[[], Any], ops: FaultOps) -> dict[str, Any]:
    """Run ``action`` in a forked child with ``ops`` as the local store's file operations."""
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(r)
        out: dict[str, Any]
        try:
            try:
                with ops:
                    action()
                out = {"outcome": "ok"}
            except BaseException as exc:
                out = {
                    "outcome": "raised",
                    "type": type(exc).__name__,
                    "mro": [c.__name__ for c in type(exc).__mro__],
                    "message": str(exc),
                    "notes": list(getattr(exc, "__notes__", [])),
                    "committed_version": getattr(exc, "deltalog_committed_version", None),
                    "traceback": traceback.format_exc(limit=6),
                }
            out["points"] = ops.points
            payload = json.dumps(out).encode()
            view = memoryview(payload)
            while view:
                view = view[os.write(w, view):]
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    with os.fdopen(r, "rb") as pipe:
        chunks.append(pipe.read())
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == KILL_EXIT:
        return {"outcome": "killed"}
    data = b"".join(chunks)
    if not data:
        return {"outcome": "crashed", "status": status}
    result: dict[str, Any] = json.loads(data)
    return result


def run_inline(action: Callable[[], Any], ops: Any) -> dict[str, Any]:
    """Run ``action`` in this process with ``ops`` installed (for engines that cannot fork, such as a Spark
    driver or obstore's runtime: only faults that raise -- ``interrupt``, ``enospc``, ``eio``, ``lost`` --
    make sense here)."""
    out: dict[str, Any]
    try:
        with ops:
            action()
        out = {"outcome": "ok"}
    except BaseException as exc:
        out = {
            "outcome": "raised",
            "type": type(exc).__name__,
            "mro": [c.__name__ for c in type(exc).__mro__],
            "message": str(exc),
            "notes": list(getattr(exc, "__notes__", [])),
            "committed_version": getattr(exc, "deltalog_committed_version", None),
            "traceback": traceback.format_exc(limit=6),
        }
    out["points"] = ops.points
    return out


RAISING_MODES = ("interrupt", "enospc", "eio")


# ----------------------------------------------------------------------------------------- scenarios

Rows = list[tuple[Any, ...]]


def rows_of(t: pa.Table) -> Rows:
    cols = sorted(t.column_names)
    return sorted(tuple(r[c] for c in cols) for r in t.to_pylist())


@dataclass
class Scenario:
    """``setup(root)`` builds the starting state under ``root`` (unfaulted); ``action(root)`` is the
    operation swept; ``table`` is the table (below ``root``) whose state is checked."""

    name: str
    setup: Callable[[str], None]
    action: Callable[[str], Any]
    table: str = "t"
    #: delta-rs cannot read the rows of tables with deletion vectors: compare versions only.
    deltars_rows: bool = True
    #: storage options of the table (object stores)
    options: dict[str, str] | None = None


@dataclass
class Failure:
    case: str
    problem: str


@dataclass
class SweepReport:
    scenario: str
    points: list[str] = field(default_factory=list)
    cases: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)


def record(report: SweepReport, every: bool, runner: str = "fork") -> None:
    """Append ``report``'s counts as a JSON line to ``$DELTALOG_FAULTS_REPORT`` when it is set."""
    out = os.environ.get("DELTALOG_FAULTS_REPORT")
    if not out:
        return
    with open(out, "a") as f:
        f.write(json.dumps({
            "scenario": report.scenario, "steps": len(report.points), "cases": report.cases,
            "outcomes": report.outcomes, "failures": len(report.failures), "every": every, "runner": runner,
        }) + "\n")


def table_state(path: str, options: dict[str, str] | None = None) -> tuple[int, Rows] | None:
    """(version, rows) of the latest snapshot, or None when there is no table."""
    try:
        snap = deltalog.Table(path, storage_options=options).snapshot()
    except TableNotFoundError:
        return None
    return snap.version, rows_of(snap.to_arrow())


def versions_rows(path: str, start: int, options: dict[str, str] | None = None) -> dict[int, Rows]:
    """Rows of every version from ``start`` (``-1`` meaning "no table") to the latest."""
    out: dict[int, Rows] = {}
    table = deltalog.Table(path, storage_options=options)
    try:
        latest = table.latest_version()
    except TableNotFoundError:
        return out
    for v in range(max(start, 0), latest + 1):
        out[v] = rows_of(table.snapshot(v).to_arrow())
    return out


def deltars_read(path: str, with_rows: bool, options: dict[str, str] | None = None) -> tuple[int, Rows | None]:
    """Runs in the delta-rs worker (spawned): version and rows as delta-rs reads them."""
    import deltalake

    dt = deltalake.DeltaTable(path, storage_options=options)
    rows = rows_of(dt.to_pyarrow_table()) if with_rows else None
    return int(dt.version()), rows


@contextlib.contextmanager
def deltars_worker() -> Iterator[cf.ProcessPoolExecutor]:
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        yield pool


NEXT_ROW = pa.table({"id": pa.array([10_000], pa.int64()), "part": ["z"], "x": [0.5]})


def cases_for(points: list[str], every: bool, modes_allowed: tuple[str, ...] = MODES) -> list[tuple[int, str, str]]:
    """(step, phase, mode) cases: all of them, or a deterministic sample that still visits every step once
    (the phase alternates from step to step, both for the last one; the mode rotates).

    Example:
        >>> cases_for(["write_new", "link"], False, ("interrupt", "eio"))
        [(0, 'before', 'interrupt'), (1, 'before', 'eio'), (1, 'after', 'interrupt')]
    """
    out: list[tuple[int, str, str]] = []
    n = len(points)
    for k, name in enumerate(points):
        for phase in ("before", "after"):
            if not every and k < n - 1 and phase != ("before", "after")[k % 2]:
                continue
            modes = [m for m in modes_allowed if m != "torn" or (name == "write_new" and phase == "before")]
            if phase == "after":
                modes = [m for m in modes if m != "kill" or k == n - 1]  # kill after k == kill before k+1
            if not every:
                modes = [modes[(k + (phase == "after")) % len(modes)]] if modes else []
            out += [(k, phase, m) for m in modes]
    return out


def sweep(
    scenario: Scenario,
    workdir: str,
    rs: cf.ProcessPoolExecutor,
    *,
    every: bool,
    runner: Callable[[Callable[[], Any], Any], dict[str, Any]] = run_child,
    modes: tuple[str, ...] = MODES,
    injector: Callable[..., Any] = FaultOps,
    fresh: Callable[[str], str] | None = None,
    share: tuple[int, int] | None = None,
) -> SweepReport:
    """Sweep every (sampled) fault case of ``scenario``; returns what was found. ``runner`` runs one case
    (:func:`run_child` forks, :func:`run_inline` does not and is limited to the raising ``modes``);
    ``injector(target, mode)`` makes the fault injector (local files by default). ``fresh(name)`` returns
    a new root on which ``scenario.setup`` is run for each case (object stores); by default the local
    template directory is copied. ``share=(i, n)`` keeps every ``n``-th sampled case from the ``i``-th on:
    scenarios whose operations take the same storage steps share the sample between them."""
    report = SweepReport(scenario.name)
    opts = scenario.options

    def new_root(name: str) -> str:
        if fresh is not None:
            root = fresh(name)
            scenario.setup(root)
            return root
        root = os.path.join(workdir, name)
        shutil.copytree(template, root, symlinks=True)
        return root

    template = os.path.join(workdir, "template")
    if fresh is None:
        os.makedirs(template)
        scenario.setup(template)
    reference = new_root("reference")
    before = table_state(os.path.join(reference, scenario.table), opts)
    old_version = before[0] if before is not None else -1
    counted = injector()
    ref = runner(lambda: scenario.action(reference), counted)
    if ref["outcome"] != "ok":
        raise AssertionError(f"{scenario.name}: the unfaulted run failed: {ref}")
    report.points = ref["points"]
    expected = versions_rows(os.path.join(reference, scenario.table), old_version, opts)
    if before is not None:
        expected[old_version] = before[1]
    new_version = max(expected) if expected else -1
    if new_version <= old_version and scenario.name not in ("checkpoint", "cleanup"):
        raise AssertionError(f"{scenario.name}: the reference run committed nothing")

    cases = cases_for(report.points, every, modes)
    if share is not None:
        cases = cases[share[0] % share[1]::share[1]]
    for k, phase, mode in cases:
        case = f"{mode} {phase} step {k} ({report.points[k]})"
        root = new_root(f"case-{k}-{phase}-{mode}")
        result = runner(lambda r=root: scenario.action(r), injector((k, phase), mode))  # type: ignore[misc]
        report.cases += 1
        report.outcomes[result["outcome"]] = report.outcomes.get(result["outcome"], 0) + 1
        for problem in verify(scenario, root, result, mode, old_version, expected, rs):
            report.failures.append(Failure(case, problem))
        if fresh is None:
            shutil.rmtree(root, ignore_errors=True)
    return report


def verify(
    scenario: Scenario,
    root: str,
    result: dict[str, Any],
    mode: str,
    old_version: int,
    expected: dict[int, Rows],
    rs: cf.ProcessPoolExecutor,
) -> list[str]:
    problems: list[str] = []
    path = os.path.join(root, scenario.table)
    if result["outcome"] == "crashed":
        return [f"the child crashed: {result}"]
    opts = scenario.options
    if result["outcome"] == "raised":
        mro = result["mro"]
        if mode in ("enospc", "eio", "lost") and "StorageError" not in mro:
            problems.append(f"raised {result['type']} instead of a named StorageError: {result['message']}\n"
                            f"{result['traceback']}")
        if mode in ("enospc", "eio", "lost") and "StorageError" in mro and "committed" not in result["message"]:
            problems.append(f"the error does not say whether anything was committed: {result['message']}")
        if mode == "interrupt" and result["type"] != "KeyboardInterrupt":
            problems.append(f"an interrupt became {result['type']}: {result['message']}")
    try:
        state = table_state(path, opts)
    except Exception as exc:
        return [*problems, f"deltalog cannot read the table: {type(exc).__name__}: {exc}"]
    version = state[0] if state is not None else -1
    if version != old_version and version not in expected:
        return [*problems, f"the table is at version {version}, neither the old ({old_version}) nor a new one"]
    if state is not None and state[1] != expected.get(version):
        problems.append(f"version {version} holds other rows than the reference run's")
    if result["outcome"] == "raised" and version > old_version and mode == "interrupt" \
            and result["committed_version"] is None:
        problems.append(f"interrupted after committing version {version} without saying so")
    if result["outcome"] == "raised" and version == old_version and result["committed_version"] is not None:
        problems.append(f"says version {result['committed_version']} was committed, but the table is at {version}")
    if state is None:
        return problems
    try:
        rs_version, rs_rows = rs.submit(deltars_read, path, scenario.deltars_rows, opts).result(timeout=120)
    except Exception as exc:
        problems.append(f"delta-rs cannot read the table: {type(exc).__name__}: {exc}")
    else:
        if rs_version != version:
            problems.append(f"delta-rs sees version {rs_version}, deltalog {version}")
        elif rs_rows is not None and rs_rows != state[1]:
            problems.append("delta-rs reads other rows than deltalog")
    check = check_table(deltalog.Table(path, storage_options=opts))
    errors = [p for p in check.problems if p.severity == "error"]
    if errors:
        problems.append("deltalog check: " + "; ".join(f"{p.code}: {p.message}" for p in errors))
    try:
        columns = deltalog.Table(path, storage_options=opts).snapshot().schema.field_names
        deltalog.write_table(path, NEXT_ROW.select(columns), mode="append", storage_options=opts)
        after = table_state(path, opts)
        assert after is not None
        if after[1] != sorted([*state[1], *rows_of(NEXT_ROW.select(sorted(NEXT_ROW.column_names)))]):
            problems.append("the next append did not add exactly its row")
    except Exception as exc:
        problems.append(f"the next append failed: {type(exc).__name__}: {exc}")
    return problems


# ------------------------------------------------------------------------------------ object stores


OBJECT_MODES = ("interrupt", "eio", "lost")


class ObstoreFaults:
    """Numbers the mutating obstore calls of an operation (``put``, ``delete``, the completion of an
    upload) and injects at ``target``: ``interrupt``, ``eio`` (the service fails) or ``lost`` (the request
    times out: *after* a step, the object store did the work but the answer never came -- the
    object-store form of an interrupt after the commit landed)."""

    def __init__(self, target: tuple[int, str] | None = None, mode: str | None = None) -> None:
        self.points: list[str] = []
        self.target, self.mode = target, mode
        self._saved: dict[str, Any] = {}

    def step(self, name: str, do: Callable[[], Any]) -> Any:
        k = len(self.points)
        self.points.append(name)
        if self.target == (k, "before"):
            self._inject()
        result = do()
        if self.target == (k, "after"):
            self._inject()
        return result

    def _inject(self) -> None:
        import obstore.exceptions as oe

        if self.mode == "interrupt":
            raise KeyboardInterrupt
        if self.mode == "eio":
            raise oe.GenericError("Generic S3 error: Server returned non-2xx status code: 500 Internal Server Error")
        if self.mode == "lost":
            raise oe.GenericError("Generic S3 error: error sending request: operation timed out")
        raise AssertionError(f"unknown fault mode {self.mode!r}")

    def __enter__(self) -> ObstoreFaults:
        import obstore

        self._saved = {name: getattr(obstore, name) for name in ("put", "delete", "open_writer")}
        put, delete, open_writer = self._saved["put"], self._saved["delete"], self._saved["open_writer"]
        obstore.put = lambda *a, **k: self.step("put", lambda: put(*a, **k))  # type: ignore[assignment]
        obstore.delete = lambda *a, **k: self.step("delete", lambda: delete(*a, **k))  # type: ignore[assignment]
        obstore.open_writer = lambda *a, **k: _Upload(self, open_writer(*a, **k))  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        import obstore

        for name, fn in self._saved.items():
            setattr(obstore, name, fn)


class _Upload:
    def __init__(self, faults: ObstoreFaults, inner: Any) -> None:
        self._faults, self._inner = faults, inner

    def write(self, data: Any) -> int:
        return int(self._inner.write(data))

    def close(self) -> None:
        self._faults.step("upload", self._inner.close)
