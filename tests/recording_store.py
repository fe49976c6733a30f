"""A store wrapper that records every path read (whole or in part), for tests that prove what a command reads."""

from __future__ import annotations

from typing import Any


class CountingStore:
    """A store that records every path read, whole or in part; everything else goes to ``inner``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.read_paths: list[str] = []

    def read(self, path: str) -> bytes:
        self.read_paths.append(path)
        data: bytes = self.inner.read(path)
        return data

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        self.read_paths.append(path)
        data: bytes = self.inner.read_range(path, offset, length)
        return data

    def open_input(self, path: str, **kw: Any) -> Any:
        self.read_paths.append(path)
        return self.inner.open_input(path, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
