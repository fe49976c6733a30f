"""How a Spark read applies deletion vectors (:mod:`deltalog.spark.reads.dv_scan`): rows keyed by file size and
row index when the sizes tell the files apart, by file path otherwise -- the same rows either way,
checked against the kernel's read and the rows each file should keep."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import deltalog
from deltalog.spark import read
from deltalog.spark.common.kept import Kept
from deltalog.spark.reads import dv_scan
from deltalog.spark.reads.log_index import FILE_INDEX_CONF

pytestmark = pytest.mark.spark

#: The module itself: ``deltalog.spark.read`` as an attribute is the function of that name.
read_module_ = importlib.import_module("deltalog.spark.reads.scan")


def _ids(df: Any) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect())


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record whether each scan with deletion vectors was keyed by size (True) or fell back (False)."""
    calls: list[bool] = []
    real = read_module_.keyed_scan

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(read_module_, "keyed_scan", spy)
    return calls


def _ids_by_paths(spark: Any, path: str) -> list[int]:
    """:func:`_ids` of the read planned with explicit paths (Spark's own sizes and times), not from the log."""
    spark.conf.set(FILE_INDEX_CONF, "paths")
    try:
        return _ids(read(spark, path))
    finally:
        spark.conf.unset(FILE_INDEX_CONF)


def _table(path: str, blocks: list[list[int]]) -> deltalog.Table:
    for i, ids in enumerate(blocks):
        deltalog.write_table(path, pa.table({"id": pa.array(ids, pa.int64())}), mode="append",
                             properties={"delta.enableDeletionVectors": "true"} if i == 0 else None)
    return deltalog.Table(path)


def test_files_told_apart_by_size(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(100, 150)), list(range(150, 400))])
    table.delete([("id", "<", 300)], use_deletion_vectors=True)  # a DV on every file, one file emptied
    table.delete([("id", "=", 333)])
    calls = _spy(monkeypatch)
    want = [i for i in range(300, 400) if i != 333]
    assert _ids(read(spark, path)) == want == sorted(table.snapshot().to_arrow().column("id").to_pylist())
    assert calls == [True]
    assert dv_scan.row_key_bits(table.snapshot().add_files()) is not None  # row index and size packed


def _rewrite_adds(path: str, change: Any) -> None:
    """Apply ``change`` to every ``add`` of the table's last commit (and drop the checksums)."""
    log = Path(path) / "_delta_log"
    last = sorted(log.glob("*.json"))[-1]
    lines = []
    for line in last.read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            change(action["add"])
        lines.append(json.dumps(action))
    last.write_text("\n".join(lines) + "\n")
    for crc in log.glob("*.crc"):
        crc.unlink()


def test_without_row_counts_files_get_ids(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``numRecords`` the row indexes' bit length is unknown, so row index and size are not
    packed into one number; the DV files get small ids by size instead, with the same rows."""
    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(100, 250)), list(range(250, 260))])
    table.delete([("id", "in", [3, 150, 255])], use_deletion_vectors=True)
    _rewrite_adds(path, lambda add: add.pop("stats", None))
    files = deltalog.Table(path).snapshot().add_files()
    assert files.column("stats").null_count == files.num_rows
    assert dv_scan.row_key_bits(files) is None
    calls = _spy(monkeypatch)
    assert _ids(read(spark, path)) == [i for i in range(260) if i not in (3, 150, 255)]
    assert calls == [True]


def test_shared_sizes_told_apart_by_modification_time(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two files of one size: planned from the log, a file is told apart by its size and modification time
    (a perfect hash of the two, searched on the driver); with the same modification time too, or with
    explicit paths (whose times are the file system's), the path join -- the same rows each way."""
    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(0, 100)), list(range(100, 300))])  # two alike
    sizes = table.snapshot().add_files().column("size").to_pylist()
    assert len(set(sizes)) == 2
    table.delete([("id", "in", [5, 7, 205])])
    want = sorted([i for i in range(100) if i not in (5, 7)] * 2 + [i for i in range(100, 300) if i != 205])
    files = deltalog.Table(path).snapshot().add_files()
    times = files.column("modificationTime").to_pylist()
    if len(set(times)) < 3:  # written within one millisecond: make them differ
        _rewrite_adds(path, lambda add: add.update(modificationTime=add["modificationTime"] + sizes.index(
            add["size"]) + 7 * int(add["path"] == files.column("path")[0].as_py())))
        files = deltalog.Table(path).snapshot().add_files()
    found = dv_scan.hashed_file_ids(files)
    assert found is not None
    _, m, ids = found
    assert len(set(ids.tolist())) == 3 and all(0 <= i < m for i in ids.tolist())
    assert dv_scan.hashed_file_ids(files.slice(0, 1)) is not None
    calls = _spy(monkeypatch)
    kernel = deltalog.Table(path).snapshot().to_arrow().column("id").to_pylist()
    assert _ids(read(spark, path)) == want == sorted(kernel)
    assert calls == [True]
    assert _ids_by_paths(spark, path) == want
    assert calls == [True, False]
    _rewrite_adds(path, lambda add: add.update(modificationTime=1_700_000_000_000))  # size and time alike
    assert dv_scan.hashed_file_ids(deltalog.Table(path).snapshot().add_files()) is None
    assert _ids(read(spark, path)) == want
    assert calls == [True, False, False]


def test_hashed_ids_have_no_collision() -> None:
    """The perfect hash of many files of few sizes written within a few milliseconds (a job's output)."""
    rng = np.random.default_rng(5)
    for n in (2, 8, 64, 300):
        files = pa.table({"size": rng.integers(1_538_240, 1_538_280, n), "modificationTime":
                          1_796_231_623_689 + np.arange(n) * 3 + rng.integers(0, 2, n)})
        found = dv_scan.hashed_file_ids(files)
        assert found is not None, n
        a, m, ids = found
        sizes = files.column("size").to_numpy()
        times = files.column("modificationTime").to_numpy()
        assert np.array_equal(ids, (sizes * a + times) % m) and np.unique(ids).size == n


def test_log_size_unlike_the_file_falls_back(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log whose recorded size is not the file's (another writer's bug). Planned from the log (the
    default), Spark's ``_metadata.file_size`` is the log's size, so keying by size stays right; with
    explicit paths Spark reports the file's own size, and keying by it could drop the wrong rows, so the
    path is used."""
    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(100, 250))])
    table.delete([("id", "in", [7, 107])])

    def grow(add: dict[str, Any]) -> None:
        add["size"] += 1

    _rewrite_adds(path, grow)
    calls = _spy(monkeypatch)
    want = [i for i in range(250) if i not in (7, 107)]
    assert _ids(read(spark, path)) == want
    assert calls == [True]
    assert _ids_by_paths(spark, path) == want
    assert calls == [True, False]


def test_keyed_rows_pack_row_index_and_file_size(spark: Any, tmp_path: Path) -> None:
    """``read.keyed_rows``: each live row's key decodes to its file's size and its row index in that file
    (deletion vectors applied); ``None`` where a size is shared, row counts are unknown or the scan is
    not planned from the log."""
    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(100, 150)), list(range(150, 400))])
    table.delete([("id", "in", [3, 120, 151])], use_deletion_vectors=True)
    files = table.snapshot().add_files()
    keyed = read_module_.keyed_rows(spark, table.snapshot(), files)
    assert keyed is not None
    df, bits = keyed
    assert df.columns == ["id", dv_scan.ROW_KEY]
    starts = {}  # file size -> first id of the file (ids are written in order)
    for size, stats in zip(files.column("size").to_pylist(), files.column("stats").to_pylist(), strict=True):
        starts[size] = json.loads(stats)["minValues"]["id"]
    got = sorted((r["id"], r[dv_scan.ROW_KEY]) for r in df.collect())
    assert [i for i, _ in got] == [i for i in range(400) if i not in (3, 120, 151)]
    for i, key in got:
        size, row = key & ((1 << bits) - 1), key >> bits
        assert starts[size] + row == i
    spark.conf.set(FILE_INDEX_CONF, "paths")
    try:
        assert read_module_.keyed_rows(spark, table.snapshot(), files) is None
    finally:
        spark.conf.unset(FILE_INDEX_CONF)
    _rewrite_adds(path, lambda add: add.pop("stats", None))
    assert read_module_.keyed_rows(spark, deltalog.Table(path).snapshot(), files.drop(["stats"])) is None
    shared = _table(str(tmp_path / "u"), [list(range(0, 100)), list(range(0, 100))])
    assert read_module_.keyed_rows(spark, shared.snapshot(), shared.snapshot().add_files()) is None


def test_keyed_rows_of_a_partitioned_table(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Partition values come from the directories (Hive layout) next to the packed key, which still
    decodes to each row's file and row index; a MERGE keyed so gives the rows a Python merge gives."""
    from deltalog.spark.dml import merge, merge_one_pass, merge_run

    path = str(tmp_path / "p")
    for part, ids in (("a", range(0, 100)), ("b", range(100, 600)), ("c", range(600, 1600))):
        deltalog.write_table(path, pa.table({"id": pa.array(list(ids), pa.int64()), "p": [part] * len(ids)}),
                             mode="append", partition_by=["p"])
    table = deltalog.Table(path)
    files = table.snapshot().add_files()
    keyed = read_module_.keyed_rows(spark, table.snapshot(), files)
    assert keyed is not None
    df, bits = keyed
    assert df.columns == ["id", "p", dv_scan.ROW_KEY]
    first = {s: json.loads(st)["minValues"]["id"]
             for s, st in zip(files.column("size").to_pylist(), files.column("stats").to_pylist(), strict=True)}
    got = sorted((r["id"], r["p"], r[dv_scan.ROW_KEY]) for r in df.collect())
    assert [(i, p) for i, p, _ in got] == [(i, "a" if i < 100 else "b" if i < 600 else "c") for i in range(1600)]
    assert all(first[key & ((1 << bits) - 1)] + (key >> bits) == i for i, _, key in got)
    merged: list[bool] = []

    def spy(real: Any) -> Any:
        def keyed(*args: Any, **kwargs: Any) -> Any:
            out = real(*args, **kwargs)
            merged.append(out is not None)
            return out
        return keyed

    monkeypatch.setattr(merge_run, "keyed_rows", spy(merge_run.keyed_rows))
    # the one-job MERGE keys its rows by file only
    monkeypatch.setattr(merge_one_pass, "file_keyed_rows", spy(merge_one_pass.file_keyed_rows))
    source = spark.createDataFrame([(5, "a"), (650, "c"), (2000, "c")], "id BIGINT, p STRING").alias("s")
    (merge(spark, path, source, "t.id = s.id AND t.p = s.p", target_alias="t")
     .whenMatchedDelete().whenNotMatchedInsertAll().execute())
    assert _ids(read(spark, path)) == [i for i in [*range(1600), 2000] if i not in (5, 650)]
    assert merged and all(merged)


def _plan(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


@pytest.mark.parametrize("limit", [None, 4], ids=["bit-test", "over-the-limit-joins"])
def test_one_deletion_vector_is_a_bit_test_without_a_join(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int | None
) -> None:
    """One file with a deletion vector: each of its rows' bits is tested in a constant (no join); rows at
    word edges (63, 64, 127: the sign bit of a word) and past the last deleted row are kept or dropped right.
    Above ``BITMAP_MAX_WORDS`` the anti join is used, with the same rows."""
    if limit is not None:
        monkeypatch.setattr(dv_scan, "BITMAP_MAX_WORDS", limit)
    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 300)), list(range(300, 400)), list(range(400, 450))])
    gone = {0, 62, 63, 64, 127, 128, 200}
    table.delete([("id", "in", sorted(gone))], use_deletion_vectors=True)
    assert sum(1 for d in table.snapshot().add_files().column("deletionVector").to_pylist() if d) == 1
    df = read(spark, path)
    want = [i for i in range(450) if i not in gone]
    assert _ids(df) == want == sorted(table.snapshot().to_arrow().column("id").to_pylist())
    assert ("Join" in _plan(df)) == (limit is not None)


def test_bit_test_tells_the_deleted_file_apart_by_size(spark: Any, tmp_path: Path) -> None:
    """A scan of several files of which one deletes rows: the bit test applies to that file's rows only
    (told apart by ``_metadata.file_size``); the same row indexes of the other files stay."""
    from deltalog.data.read import resolve_path

    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(100, 150)), list(range(150, 400))])
    table.delete([("id", "in", [1, 5, 70])], use_deletion_vectors=True)
    snap = table.snapshot()
    files = snap.add_files()
    raw = spark.read.parquet(*[resolve_path(snap, p) for p in files.column("path").to_pylist()])
    out = dv_scan.keyed_scan(spark, snap, files, raw, ["id"])
    assert out is not None and "Join" not in _plan(out)
    assert _ids(out) == [i for i in range(400) if i not in (1, 5, 70)]


def test_later_reads_reuse_the_deleted_row_keys(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dv_scan, "BITMAP_MAX_WORDS", 0)  # the anti join's keys (the bitmap sends none)
    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(100, 250)), list(range(250, 300))])
    table.delete("id % 10 = 3")
    sent: list[int] = []
    real = dv_scan.frame_from_arrow

    def counting(spark_: Any, arrow: pa.Table, schema: Any = None) -> Any:
        sent.append(arrow.num_rows)
        return real(spark_, arrow, schema)

    monkeypatch.setattr(dv_scan, "frame_from_arrow", counting)
    want = [i for i in range(300) if i % 10 != 3]
    assert _ids(read(spark, path)) == want and _ids(read(spark, path)) == want
    assert sent == [30]  # the second read's keys came from the first
    table.delete("id = 0")  # other deleted rows: other keys
    assert _ids(read(spark, path)) == want[1:] and sent == [30, 31]


@pytest.mark.parametrize("layout", ["sizes", "shared-sizes", "one-count-unknown", "two-counts-unknown"])
def test_several_deletion_vectors_are_one_bitmap_without_a_join(
    spark: Any, tmp_path: Path, layout: str
) -> None:
    """Several files with deletion vectors and one without: every row's bit is tested in one constant bitmap
    (per-file regions found from the file's id: its size, or its size and time when sizes are shared), no
    join; rows at word edges and at the ends of the regions are kept or dropped right, the same as the kernel.
    A file whose row count the log lacks can only be the bitmap's last region: with two such, the join."""
    path = str(tmp_path / "t")
    shared = layout == "shared-sizes"
    blocks = [list(range(0, 130)), list(range(130 if not shared else 0, 260 if not shared else 130)),
              list(range(1000, 1064)), list(range(2000, 2300))]
    table = _table(path, blocks)
    gone = [0, 63, 130, 193, 259, 1063, 2000, 2255]  # file 0: none past word 0, file 1 at its words' edges
    table.delete([("id", "in", gone)], use_deletion_vectors=True)
    files = table.snapshot().add_files()
    if shared:  # the two alike files told apart by time
        times = files.column("modificationTime").to_pylist()
        _rewrite_adds(path, lambda add: add.update(modificationTime=times[0] + 17 * files.column("path").to_pylist()
                                                   .index(add["path"])))
    elif layout != "sizes":
        unknown = 1 if layout == "one-count-unknown" else 2
        names = files.column("path").to_pylist()[:unknown]
        _rewrite_adds(path, lambda add: add.pop("stats", None) if add["path"] in names else None)
    table = deltalog.Table(path)
    want = sorted(table.snapshot().to_arrow().column("id").to_pylist())
    assert want == sorted(i for b in blocks for i in b if i not in gone)
    df = read(spark, path)
    assert _ids(df) == want
    assert ("Join" in _plan(df)) == (layout == "two-counts-unknown")


def test_array_literal_carries_its_values(spark: Any) -> None:
    """The binary constant of the bitmap: values, sign bits and lengths survive the trip to the JVM, for both
    element types; a float array is refused."""
    from pyspark.sql import functions as F

    from deltalog.spark.common.compat import array_literal

    longs = np.array([0, -1, 1 << 63 - 1, -(1 << 63), 5], np.int64)
    ints = np.array([7, -(1 << 31), (1 << 31) - 1], np.int32)
    row = spark.range(1).select(array_literal(spark, longs).alias("l"), array_literal(spark, ints).alias("i"),
                                array_literal(spark, np.array([], np.int64)).alias("e"),
                                F.get(array_literal(spark, ints), F.lit(3)).alias("past")).first()
    assert list(row["l"]) == longs.tolist() and list(row["i"]) == ints.tolist()
    assert list(row["e"]) == [] and row["past"] is None
    with pytest.raises(TypeError, match="int32 or int64"):
        array_literal(spark, np.array([1.5]))

    class AllowList:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(f"{name} is not allowed")

    class Refusing:  # a session whose JVM allows no such class through Py4J
        _jsparkSession = object()
        _jvm = AllowList()

    assert array_literal(Refusing(), longs) is None


def test_later_reads_reuse_the_bitmap_constants(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second read of one table version sends no bitmap to the JVM (the constants are kept per session and
    content); another deletion makes other constants, with the right rows."""
    from deltalog.spark.common import compat

    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(100, 250)), list(range(250, 300))])
    table.delete("id % 10 = 4")
    sent: list[int] = []
    real = compat.array_literal

    def counting(spark_: Any, values: Any) -> Any:
        sent.append(len(values))
        return real(spark_, values)

    monkeypatch.setattr(compat, "array_literal", counting)
    monkeypatch.setattr(dv_scan, "_KEPT_COLUMNS", Kept(entries=dv_scan.KEPT_FRAMES, weight=dv_scan.KEPT_WORDS))
    want = [i for i in range(300) if i % 10 != 4]
    assert _ids(read(spark, path)) == want
    first = len(sent)
    assert first == 2  # the bitmap and the regions' offsets
    assert _ids(read(spark, path)) == want and len(sent) == first
    table.delete("id = 0")
    assert _ids(read(spark, path)) == want[1:] and len(sent) > first


def test_later_reads_of_the_same_deletion_vectors_decode_none(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read of files whose deletion vectors a read of this session already turned into a bitmap filter
    finds it by the vectors' descriptors: no vector is read again. Another deletion (new descriptors) and a
    pruned file list (other files) read theirs, with the right rows."""
    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(100, 250)), list(range(250, 300))])
    table.delete("id % 10 = 5")
    decoded: list[int] = []
    real = dv_scan.deleted_rows_per_file

    def counting(snap: Any, files: pa.Table) -> Any:
        decoded.append(files.num_rows)
        return real(snap, files)

    monkeypatch.setattr(dv_scan, "deleted_rows_per_file", counting)
    monkeypatch.setattr(dv_scan, "_KEPT_COLUMNS", Kept(entries=dv_scan.KEPT_FRAMES, weight=dv_scan.KEPT_WORDS))
    want = [i for i in range(300) if i % 10 != 5]
    assert _ids(read(spark, path)) == want and decoded == [3]
    assert _ids(read(spark, path)) == want and decoded == [3]  # the kept filter, no vector read
    assert _ids(read(spark, path).filter("id >= 250")) == [i for i in want if i >= 250]  # one file: its own key
    assert decoded == [3, 1]
    table.delete("id = 0")
    assert _ids(read(spark, path)) == want[1:] and decoded == [3, 1, 3]


@pytest.mark.parametrize("seed", range(5))
def test_bitmap_words_set_each_deleted_row_s_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = np.unique(rng.integers(0, [70, 640, 100_000, 1 << 20, 5][seed], size=1 + seed * 997))
    words = dv_scan.bitmap_words(rows.astype(np.uint64))
    assert len(words) == int(rows.max()) // 64 + 1
    got = [w * 64 + b for w, word in enumerate(words.tolist()) for b in range(64) if (word >> b) & 1]
    assert got == rows.tolist()


def _analyzed(df: Any) -> str:
    return str(df._jdf.queryExecution().analyzed().toString())


@pytest.mark.parametrize("conf", [{}, {"spark.sql.files.maxPartitionBytes": "2000",
                                       "spark.sql.files.openCostInBytes": "1"},
                                  {"spark.sql.parquet.enableVectorizedReader": "false"}],
                         ids=["default", "files-split", "row-reader"])
def test_reads_take_the_row_index_from_the_reader(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, conf: dict[str, str]
) -> None:
    """A read of files with deletion vectors asks the parquet reader for each row's index as a column of its
    own (``_tmp_metadata_row_index``), not as a field of ``_metadata``: the same rows dropped whether Spark splits
    the files (of many row groups) among tasks or reads rows instead of batches."""
    import pyarrow.parquet as pq

    from deltalog.data import write_files

    monkeypatch.setattr(write_files, "_ROW_GROUP_BYTES", 4096)  # row groups of a few hundred rows
    monkeypatch.setattr(write_files, "_MIN_PIECE_ROWS", 100)
    path = str(tmp_path / "t")
    for i, start in enumerate((0, 5000, 9000)):
        ids = pa.array(range(start, start + 3000 - i * 500), pa.int64())
        deltalog.write_table(path, pa.table({"id": ids, "v": pc.multiply(ids, 2)}), mode="append",
                             properties={"delta.enableDeletionVectors": "true"} if i == 0 else None)
    table = deltalog.Table(path)
    table.delete("id % 97 = 5 OR id = 5000 OR id = 11499", use_deletion_vectors=True)
    snap = table.snapshot()
    first = str(tmp_path / "t" / snap.add_files().column("path")[0].as_py())
    assert pq.ParquetFile(first).metadata.num_row_groups > 4
    want = sorted(snap.to_arrow().column("id").to_pylist())
    assert len(want) == 7500 - sum(1 for b in ((0, 3000), (5000, 7500), (9000, 11000)) for i in range(*b)
                                   if i % 97 == 5 or i in (5000, 11499))
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        df = read(spark, path)
        assert _ids(df) == want
        assert sorted(r[0] for r in df.filter("id > 9500").select("id").collect()) == [i for i in want if i > 9500]
        if conf.get("spark.sql.files.maxPartitionBytes"):
            assert df.rdd.getNumPartitions() > 6  # the files were split
        assert dv_scan.READER_ROW_INDEX in _analyzed(df) and ".row_index" not in _analyzed(df)
        assert dv_scan.READER_ROW_INDEX not in df.columns
    finally:
        for key in conf:
            spark.conf.unset(key)


def test_a_column_named_like_the_reader_s_row_index_is_read_by_arrow_tasks(spark: Any, tmp_path: Path) -> None:
    """A table with a column of that name (in another case), which Spark refuses beside any row index, is read
    by Arrow tasks: its own values, and the deleted rows dropped."""
    from deltalog.spark.reads.files import uses_native_io

    path = str(tmp_path / "t")
    name = dv_scan.READER_ROW_INDEX.upper()
    for i in range(2):
        ids = pa.array(range(i * 100, i * 100 + 100 - i * 10), pa.int64())
        deltalog.write_table(path, pa.table({"id": ids, name: pc.add(ids, 1000)}), mode="append",
                             properties={"delta.enableDeletionVectors": "true"} if i == 0 else None)
    table = deltalog.Table(path)
    table.delete("id % 7 = 1", use_deletion_vectors=True)
    df = read(spark, path)
    rows = sorted((r[0], r[1]) for r in df.select("id", name).collect())
    assert rows == sorted((i, i + 1000) for i in [*range(100), *range(100, 190)] if i % 7 != 1)
    assert not uses_native_io(spark, table.snapshot())


def test_an_unfilled_reader_row_index_fails_the_read(spark: Any, tmp_path: Path) -> None:
    """Should a Spark leave the reader's row-index column empty, the read fails naming the table and version
    rather than keeping rows a deletion vector deletes."""
    from pyspark.sql import functions as F

    from deltalog.data.read import resolve_path

    path = str(tmp_path / "t")
    table = _table(path, [list(range(0, 100)), list(range(100, 150))])
    table.delete([("id", "in", [1, 5, 70])], use_deletion_vectors=True)
    snap = table.snapshot()
    files = snap.add_files()
    raw = spark.read.parquet(*[resolve_path(snap, p) for p in files.column("path").to_pylist()])
    raw = raw.withColumn(dv_scan.READER_ROW_INDEX, F.lit(None).cast("long"))
    out = dv_scan.keyed_scan(spark, snap, files, raw, ["id"], reader_row=True)
    assert out is not None and out.columns == ["id"]
    with pytest.raises(Exception, match=f"deletion vectors of .*{tmp_path.name}.* version {snap.version}.*row index"):
        out.collect()
