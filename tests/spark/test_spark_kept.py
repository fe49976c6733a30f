"""The bounded store Spark reads keep reused things in (:mod:`deltalog.spark.common.kept`): no session needed."""

from __future__ import annotations

import doctest

import pytest

from deltalog.spark.common import kept
from deltalog.spark.common.kept import Kept

pytestmark = pytest.mark.spark


def test_its_examples_run() -> None:
    assert doctest.testmod(kept, verbose=False).failed == 0


def test_least_recently_used_goes_first_under_both_limits() -> None:
    store = Kept(entries=3, weight=10)
    store.put("a", 1, weight=3)
    store.put("b", 2, weight=3)
    store.put("c", 3, weight=3)
    assert store.get("a") == 1  # now the most recently used
    store.put("d", 4, weight=1)  # four entries: "b", the least recently used, goes
    assert [store.get(k) for k in "abcd"] == [1, None, 3, 4]
    store.put("e", 5, weight=6)  # 3 + 3 + 1 + 6 > 10: the oldest used ("a") goes, then 3 + 1 + 6 fits
    assert [store.get(k) for k in "acde"] == [None, 3, 4, 5]
    store.put("huge", 6, weight=11)  # heavier than the limit alone: not kept, and nothing else either
    assert store.get("huge") is None and store.get("e") is None
    store.clear()
    assert store.get("d") is None and store.get("c") is None
