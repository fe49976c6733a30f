"""Synthetic Delta logs for the benchmarks: valid commit JSON with realistic stats, no data files.

Every benchmark table is described by a :class:`LogSpec` and built once into ``bench/.data`` (or the
``--data-dir`` a script is given); a finished table carries a ``.complete`` marker, so later runs reuse
it. Tables are partitioned by ``day`` (365 values) over the columns ``id``/``value``/``name``/``day``;
every ``add`` carries stats JSON (``numRecords``, min/max of three columns, null counts) the way Spark
writes them, and file paths and sizes are deterministic (seeded), so two builds of one spec are
byte-for-byte the same apart from timestamps. Where a spec asks for a checkpoint, delta-rs writes it
(``DeltaTable.create_checkpoint()`` right after commit 0), so deltalog is measured reading a checkpoint
another engine wrote.

Layout of a spec's log: commit 0 = ``commitInfo`` + ``protocol`` + ``metaData`` + ``files`` adds; an
optional delta-rs checkpoint at version 0; then ``commits`` commits (1 .. commits), each with
``adds_per_commit`` new files and ``removes_per_commit`` removes of the oldest live files.

Example:
    >>> spec = LogSpec(files=1_000, commits=5, adds_per_commit=10, removes_per_commit=2)
    >>> spec.live_files
    1040
    >>> spec.name
    'log_f1000_c5_a10_r2_json_g2'
    >>> path = build(spec, Path("/tmp/bench-doc"))                      # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / ".data"

#: Bump to invalidate every cached table (the version is part of each table's directory name).
GENERATOR_VERSION = 2

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "double", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "day", "type": "string", "nullable": True, "metadata": {}},
    ],
}
PARTITION_BY = ("day",)
DAYS = tuple(f"2024-{m:02d}-{d:02d}" for m in range(1, 13) for d in range(1, 29))[:336] + tuple(
    f"2025-01-{d:02d}" for d in range(1, 30)
)
_BASE_TIME = 1_700_000_000_000  # commit timestamps start here, one minute apart
_MINUTE = 60_000

# One add action, already JSON; the stats are an escaped JSON string inside it.
_ADD = (
    '{{"add":{{"path":"day={day}/part-{i:08d}-{tag}.c000.snappy.parquet","partitionValues":{{"day":"{day}"}},'
    '"size":{size},"modificationTime":{ts},"dataChange":true,"stats":"{{\\"numRecords\\":{rows},'
    '\\"minValues\\":{{\\"id\\":{lo},\\"value\\":{vlo},\\"name\\":\\"{nlo}\\"}},\\"maxValues\\":{{\\"id\\":{hi},'
    '\\"value\\":{vhi},\\"name\\":\\"{nhi}\\"}},\\"nullCount\\":{{\\"id\\":0,\\"value\\":{nv},\\"name\\":{nn}}}}}"'
    "}}}}"
)
_REMOVE = (
    '{{"remove":{{"path":"day={day}/part-{i:08d}-{tag}.c000.snappy.parquet","deletionTimestamp":{ts},'
    '"dataChange":true,"extendedFileMetadata":true,"partitionValues":{{"day":"{day}"}},"size":{size}}}}}'
)
_NAMES = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy")


@dataclass(frozen=True)
class LogSpec:
    """Shape of one synthetic table (see the module docstring).

    Example:
        >>> LogSpec(files=100, checkpoint=True).name
        'log_f100_c0_a20_r2_cp_g2'
    """

    files: int
    commits: int = 0
    adds_per_commit: int = 20
    removes_per_commit: int = 2
    checkpoint: bool = False
    stats_as_struct: bool = False

    @property
    def name(self) -> str:
        """Directory name under the data directory (changes with every field and the generator)."""
        kind = "cp" if self.checkpoint else "json"
        struct = "_struct" if self.stats_as_struct else ""
        return (
            f"log_f{self.files}_c{self.commits}_a{self.adds_per_commit}_r{self.removes_per_commit}"
            f"_{kind}{struct}_g{GENERATOR_VERSION}"
        )

    @property
    def version(self) -> int:
        """The latest version of the built table."""
        return self.commits

    @property
    def live_files(self) -> int:
        """Live files at the latest version."""
        return self.files + self.commits * (self.adds_per_commit - self.removes_per_commit)

    def live_files_at(self, version: int) -> int:
        """Live files at ``version``.

        Example:
            >>> LogSpec(files=10, commits=3, adds_per_commit=5, removes_per_commit=1).live_files_at(2)
            18
        """
        return self.files + version * (self.adds_per_commit - self.removes_per_commit)


def _tag(i: int) -> str:
    return str(uuid.UUID(int=(i * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & ((1 << 128) - 1)))


def _size(i: int) -> int:
    return 1_000_000 + (i * 7919) % 127_000_000


def add_line(i: int, ts: int, rng: random.Random) -> str:
    """The JSON line of the ``add`` of file number ``i`` (deterministic path, size and partition).

    Example:
        >>> json.loads(json.loads(add_line(3, 0, random.Random(0)))["add"]["stats"])["numRecords"] > 0
        True
    """
    rows = 50_000 + rng.randrange(950_000)
    lo = i * 1_000_000
    names = sorted(rng.sample(_NAMES, 2))
    return _ADD.format(
        day=DAYS[i % len(DAYS)],
        i=i,
        tag=_tag(i),
        size=_size(i),
        ts=ts,
        rows=rows,
        lo=lo,
        hi=lo + rows - 1,
        vlo=round(rng.random() * 10, 3),
        vhi=round(90 + rng.random() * 10, 3),
        nlo=names[0],
        nhi=names[1],
        nv=rng.randrange(100),
        nn=rng.randrange(10),
    )


def remove_line(i: int, ts: int) -> str:
    """The JSON line of a ``remove`` of file number ``i``.

    Example:
        >>> json.loads(remove_line(3, 5))["remove"]["deletionTimestamp"]
        5
    """
    return _REMOVE.format(day=DAYS[i % len(DAYS)], i=i, tag=_tag(i), ts=ts, size=_size(i))


def file_path(i: int) -> str:
    """The (relative) path of file number ``i`` as the log writes it.

    Example:
        >>> file_path(0).startswith("day=2024-01-01/part-00000000-")
        True
    """
    return f"day={DAYS[i % len(DAYS)]}/part-{i:08d}-{_tag(i)}.c000.snappy.parquet"


@dataclass(frozen=True)
class FakeFile:
    """One ``add`` action as plain values, for writers that take them one by one (commit benchmarks).

    Example:
        >>> f = fake_files(0, 2, ts=0)[1]
        >>> f.path == file_path(1), f.partition_values
        (True, {'day': '2024-01-02'})
    """

    path: str
    partition_values: dict[str, str]
    size: int
    modification_time: int
    stats: str


def fake_files(first: int, count: int, *, ts: int, seed: int = 0) -> list[FakeFile]:
    """``count`` files numbered from ``first``, with the same paths, sizes and stats as :func:`add_line`."""
    rng = random.Random(seed + first)
    out = []
    for i in range(first, first + count):
        add = json.loads(add_line(i, ts, rng))["add"]
        out.append(FakeFile(add["path"], add["partitionValues"], add["size"], ts, add["stats"]))
    return out


def commit_info(version: int, ts: int, *, adds: int, removes: int) -> str:
    """A ``commitInfo`` line like Spark's for an append (or an overwrite when it removes files)."""
    return json.dumps(
        {
            "commitInfo": {
                "timestamp": ts,
                "operation": "WRITE",
                "operationParameters": {"mode": "Overwrite" if removes else "Append", "partitionBy": '["day"]'},
                "readVersion": version - 1 if version else None,
                "isolationLevel": "Serializable",
                "isBlindAppend": not removes,
                "operationMetrics": {"numFiles": str(adds), "numRemovedFiles": str(removes)},
                "engineInfo": "deltalog-bench",
                "txnId": str(uuid.UUID(int=version + 1)),
            }
        },
        separators=(",", ":"),
    )


def header_lines(ts: int, *, configuration: dict[str, str] | None = None) -> list[str]:
    """``protocol`` and ``metaData`` of a new table (after commit 0's ``commitInfo``)."""
    return [
        json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json.dumps(
            {
                "metaData": {
                    "id": str(uuid.UUID(int=42)),
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(SCHEMA),
                    "partitionColumns": list(PARTITION_BY),
                    "configuration": configuration or {},
                    "createdTime": ts,
                }
            }
        ),
    ]


def _write_lines(path: Path, lines: Iterator[str]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as out:
        for line in lines:
            out.write(line)
            out.write("\n")
    os.replace(tmp, path)


def _commit0(spec: LogSpec, ts: int, rng: random.Random) -> Iterator[str]:
    yield commit_info(0, ts, adds=spec.files, removes=0)
    conf = {"delta.checkpoint.writeStatsAsStruct": "true"} if spec.stats_as_struct else None
    yield from header_lines(ts, configuration=conf)
    chunk = 50_000
    for start in range(0, spec.files, chunk):
        yield "\n".join(add_line(i, ts, rng) for i in range(start, min(spec.files, start + chunk)))


def build(spec: LogSpec, data_dir: Path = DATA, *, checkpoint_writer: str = "deltars") -> Path:
    """Build the table of ``spec`` under ``data_dir`` unless a complete one is there; returns its path.

    ``checkpoint_writer`` names who writes the version-0 checkpoint when ``spec.checkpoint``:
    ``"deltars"`` (the default) or ``"deltalog"``.

    Example:
        >>> build(LogSpec(files=100, commits=2), Path("/tmp/bench-doc")).name     # doctest: +SKIP
        'log_f100_c2_a20_r2_json_g2'
    """
    path = data_dir / spec.name
    marker = path / ".complete"
    if marker.exists():
        return path
    if path.exists():
        shutil.rmtree(path)
    log = path / "_delta_log"
    log.mkdir(parents=True)
    rng = random.Random(spec.files * 7 + spec.commits)
    _write_lines(log / f"{0:020d}.json", _commit0(spec, _BASE_TIME, rng))
    if spec.checkpoint:
        write_reference_checkpoint(path, writer=checkpoint_writer)
    next_id = spec.files
    next_remove = 0
    for v in range(1, spec.commits + 1):
        ts = _BASE_TIME + v * _MINUTE
        lines = [commit_info(v, ts, adds=spec.adds_per_commit, removes=spec.removes_per_commit)]
        for _ in range(spec.removes_per_commit):
            lines.append(remove_line(next_remove, ts))
            next_remove += 1
        for _ in range(spec.adds_per_commit):
            lines.append(add_line(next_id, ts, rng))
            next_id += 1
        _write_lines(log / f"{v:020d}.json", iter(lines))
    _set_commit_times(log, spec.commits)
    marker.write_text(json.dumps({"spec": spec.__dict__, "built": time.time()}))
    return path


def _set_commit_times(log: Path, commits: int) -> None:
    """File times follow the commit timestamps (readers without in-commit timestamps use them)."""
    for v in range(commits + 1):
        seconds = (_BASE_TIME + v * _MINUTE) / 1000
        os.utime(log / f"{v:020d}.json", (seconds, seconds))


def write_reference_checkpoint(path: Path, *, writer: str = "deltars") -> None:
    """Write a checkpoint of the table's latest version with delta-rs (or deltalog)."""
    if writer == "deltars":
        from deltalake import DeltaTable

        DeltaTable(str(path)).create_checkpoint()
    else:
        import deltalog

        deltalog.Table(path).checkpoint()


def log_copy(src: Path, dst: Path, *, checkpoints: bool = False) -> Path:
    """A copy of ``src``'s log: its commit files and, with ``checkpoints``, its checkpoints and
    ``_last_checkpoint``; never ``.crc`` files. Commits and checkpoints are hard links (nobody
    modifies them); ``_last_checkpoint`` is copied, as writers replace it.

    Example:
        >>> log_copy(Path("/tmp/a"), Path("/tmp/b"))                           # doctest: +SKIP
        PosixPath('/tmp/b')
    """
    if dst.exists():
        shutil.rmtree(dst)
    (dst / "_delta_log").mkdir(parents=True)
    for entry in os.scandir(src / "_delta_log"):
        name = entry.name
        target = dst / "_delta_log" / name
        if checkpoints and name == "_last_checkpoint":
            shutil.copy2(entry.path, target)
            continue
        is_commit = name.endswith(".json") and len(name) == 25 and name[:20].isdigit()
        if not (is_commit or (checkpoints and ".checkpoint." in name and name.endswith(".parquet"))):
            continue
        try:
            os.link(entry.path, target)
        except OSError:
            shutil.copy2(entry.path, target)
    return dst


__all__ = [
    "DATA",
    "GENERATOR_VERSION",
    "PARTITION_BY",
    "SCHEMA",
    "FakeFile",
    "LogSpec",
    "add_line",
    "build",
    "commit_info",
    "fake_files",
    "file_path",
    "header_lines",
    "log_copy",
    "remove_line",
    "write_reference_checkpoint",
]
