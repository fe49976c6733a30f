"""Storage for Delta tables: the :class:`LogStore` contract, local and in-memory stores, and
:func:`store_for`, which picks a store for a table location.

Example:
    >>> from deltalog.storage import store_for
    >>> store = store_for("memory://storage-pkg-doc")
    >>> store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)
    >>> store.exists("_delta_log/00000000000000000000.json")
    True
"""

from __future__ import annotations

from deltalog.storage.local import LocalLogStore
from deltalog.storage.locations import register_scheme, store_for
from deltalog.storage.log_store import FileInfo, LogStore
from deltalog.storage.memory import InMemoryLogStore

__all__ = ["FileInfo", "InMemoryLogStore", "LocalLogStore", "LogStore", "register_scheme", "store_for"]
