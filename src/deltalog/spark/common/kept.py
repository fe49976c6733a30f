"""A bounded, thread-safe store of things a session built once and later plans reuse (relations planned from
the log, deleted-row key frames, deletion-vector bitmap filters): least recently used first out, under a limit
on the number of entries and on their total weight (files, keys, words).

Example:
    >>> store = Kept(entries=2, weight=10)
    >>> store.put("a", 1, weight=4); store.put("b", 2, weight=4); store.put("c", 3, weight=4)
    >>> store.get("a"), store.get("c")
    (None, 3)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

__all__ = ["Kept"]


class Kept:
    """Values by key, at most ``entries`` of them weighing at most ``weight`` in all (the oldest used go first).

    Example:
        >>> Kept(entries=4, weight=100).get("missing") is None
        True
    """

    def __init__(self, *, entries: int, weight: int) -> None:
        self.entries, self.weight = entries, weight
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        """The value kept under ``key`` (now the most recently used), or ``None``.

        Example:
            >>> k = Kept(entries=1, weight=1); k.put("x", "v", weight=1); k.get("x")
            'v'
        """
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: Any, *, weight: int) -> None:
        """Keep ``value`` under ``key``, then drop the least recently used until both limits hold.

        Example:
            >>> k = Kept(entries=1, weight=5); k.put("x", 1, weight=9); k.get("x") is None
            True
        """
        with self._lock:
            self._items[key] = (value, weight)
            self._items.move_to_end(key)
            total = sum(n for _, n in self._items.values())
            while self._items and (len(self._items) > self.entries or total > self.weight):
                _, (_, n) = self._items.popitem(last=False)
                total -= n

    def clear(self) -> None:
        """Drop everything kept.

        Example:
            >>> k = Kept(entries=1, weight=1); k.put("x", 1, weight=1); k.clear(); k.get("x") is None
            True
        """
        with self._lock:
            self._items.clear()
