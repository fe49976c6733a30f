"""OPTIMIZE planning without an engine: bin-packing, Z-order bins, range numbers and bit interleaving."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import numpy as np
import pytest

from deltalog.commands.optimize_plan import (
    Bin,
    bits_per_column,
    interleave_bits,
    partition_key,
    plan_compaction,
    plan_zorder,
    range_ids,
    range_probabilities,
    size_percentiles,
    size_summary,
    stats_columns,
)
from deltalog.protocol.schema import parse_schema


def f(path: str, size: int, part: str | None = None, dv: bool = False) -> dict[str, Any]:
    return {
        "path": path,
        "size": size,
        "partitionValues": [("p", part)] if part is not None else [],
        "deletionVector": {"cardinality": 1, "sizeInBytes": 40} if dv else None,
    }


def paths(bins: list[Bin]) -> list[list[str]]:
    return [[str(x["path"]) for x in b.files] for b in bins]


def test_bins_never_exceed_the_limit_and_cover_every_small_file() -> None:
    rng = random.Random(7)
    files = [f(f"f{i}", rng.randrange(1, 100), part=f"v{i % 3}") for i in range(60)]
    files.append(f("big", 500, part="v0"))
    bins = plan_compaction(files, max_file_size=120)
    assert all(b.size <= 120 for b in bins)
    assert all(len({partition_key(x) for x in b.files}) == 1 for b in bins)  # one partition per bin
    packed = [p for group in paths(bins) for p in group]
    assert len(packed) == len(set(packed))
    assert "big" not in packed  # not small, no deletion vector
    singles = {p for b in bins for p in paths([b])[0] if len(b.files) == 1}
    assert not singles  # a single small file without a DV is never rewritten alone
    # greedy on sizes sorted ascending: a bin closes only when the next file does not fit
    for part in ("v0", "v1", "v2"):
        mine = [b for b in bins if b.partition == (("p", part),)]
        assert all(b.size + nxt.files[0]["size"] > 120 for b, nxt in itertools.pairwise(mine))
        sizes = [x["size"] for b in mine for x in b.files]
        assert sizes == sorted(sizes)


def test_compaction_rules_for_single_files_and_deletion_vectors() -> None:
    assert plan_compaction([f("a", 10, "x"), f("b", 10, "y")], max_file_size=100) == []
    lone_dv = plan_compaction([f("a", 10, "x", dv=True)], max_file_size=100)
    assert paths(lone_dv) == [["a"]] and lone_dv[0].has_deletion_vectors
    big_dv = plan_compaction([f("a", 500, dv=True), f("b", 600)], max_file_size=100)
    assert paths(big_dv) == [["a"]]  # large, but its deleted rows get purged
    assert paths(plan_compaction([f("a", 30), f("b", 20), f("c", 40)], max_file_size=100, min_file_size=35)) == [
        ["b", "a"]
    ]
    with pytest.raises(ValueError, match="max_file_size"):
        plan_compaction([], max_file_size=0)


def test_zorder_takes_every_file_of_each_partition() -> None:
    files = [f("a", 100, "x"), f("b", 250, "x"), f("c", 10, "y"), f("d", 5, None)]
    bins = plan_zorder(files, max_file_size=100)
    assert [(b.partition, len(b.files), b.num_output_files) for b in bins] == [
        ((), 1, 1), ((("p", "x"),), 2, 3), ((("p", "y"),), 1, 1),
    ]


def test_range_ids_count_the_bounds_below_each_key() -> None:
    bounds = [10.0, 20.0, 20.0, 30.0]
    keys = np.array([-np.inf, 5, 10, 10.5, 20, 25, 31, np.inf, np.nan])
    assert range_ids(keys, bounds).tolist() == [0, 0, 0, 1, 1, 3, 4, 4, 4]
    assert range_ids(keys, None).tolist() == [0] * 9
    assert range_probabilities(3) == [k / 8 for k in range(1, 8)]
    # quantile bounds give ranges of (about) equal size on skewed data
    values = np.random.default_rng(1).exponential(size=10_000)
    bounds_q = np.quantile(values, range_probabilities(2))
    counts = np.bincount(range_ids(values, bounds_q))
    assert counts.min() > 2400 and counts.max() < 2600


def test_interleave_bits_is_the_morton_order() -> None:
    a = np.array([0b101, 0b000, 0b111])
    b = np.array([0b011, 0b111, 0b000])
    # bits a2 b2 a1 b1 a0 b0
    assert interleave_bits([a, b], bits=3).tolist() == [0b100111, 0b010101, 0b101010]
    # on a 4x4 grid the Z-values enumerate every cell once, in 2x2 blocks
    cells = list(itertools.product(range(4), range(4)))
    z = interleave_bits([np.array([c[0] for c in cells]), np.array([c[1] for c in cells])], bits=2)
    assert sorted(z.tolist()) == list(range(16))
    order = [cells[i] for i in np.argsort(z)]
    assert order[:4] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert interleave_bits([np.array([5])], bits=3).tolist() == [5]
    with pytest.raises(ValueError, match="range numbers"):
        interleave_bits([np.array([8])], bits=3)
    with pytest.raises(ValueError, match="do not fit"):
        interleave_bits([np.array([0])] * 7, bits=10)
    assert [bits_per_column(n) for n in (1, 2, 6, 7, 62)] == [10, 10, 10, 8, 1]
    with pytest.raises(ValueError):
        bits_per_column(63)


def test_stats_columns_follow_the_table_properties() -> None:
    schema = parse_schema(
        '{"type":"struct","fields":['
        '{"name":"p","type":"string","nullable":true,"metadata":{}},'
        '{"name":"a","type":"long","nullable":true,"metadata":{}},'
        '{"name":"n","type":{"type":"struct","fields":['
        '{"name":"u","type":"long","nullable":true,"metadata":{}},'
        '{"name":"v","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},'
        '{"name":"B","type":"double","nullable":true,"metadata":{}}]}'
    )
    assert stats_columns(schema, ["p"], {}) == {"a", "n", "b"}
    assert stats_columns(schema, ["p"], {"delta.dataSkippingNumIndexedCols": "3"}) == {"a", "n"}
    assert stats_columns(schema, ["p"], {"delta.dataSkippingNumIndexedCols": "-1"}) == {"a", "n", "b"}
    assert stats_columns(schema, ["p"], {"delta.dataSkippingStatsColumns": "`B`, n.u"}) == {"b", "n"}


def test_size_metrics() -> None:
    assert size_summary([]) == {"min": None, "max": None, "avg": 0.0, "totalFiles": 0, "totalSize": 0}
    assert size_summary([3, 1, 2])["avg"] == 2.0
    assert size_percentiles([]) == {}
    assert size_percentiles([5, 1, 4, 2, 3]) == {
        "minFileSize": 1, "p25FileSize": 2, "p50FileSize": 3, "p75FileSize": 4, "maxFileSize": 5,
    }


def test_sample_fractions_keep_about_the_asked_rows_per_bin() -> None:
    from deltalog.commands.optimize_plan import Bin, sample_fractions

    def f(n: int | None, path: str = "x") -> dict[str, object]:
        return {"path": path, "size": 1, "stats": None if n is None else json.dumps({"numRecords": n})}

    bins = [Bin((), (f(600_000), f(400_000))), Bin((), (f(50_000),)), Bin((), (f(0),))]
    assert sample_fractions(bins, 100_000) == {0: 0.1, 1: 1.0, 2: 1.0}
    assert sample_fractions(bins, 2_000_000) is None  # nothing to gain
    assert sample_fractions([Bin((), (f(10**7), f(None)))], 1000) is None  # a file without a row count
