"""Where a table location's store comes from: a registry of URI schemes (:func:`register_scheme`),
:func:`store_for` (a location to its :class:`~deltalog.storage.log_store.LogStore`), :class:`StoreRef` (a
picklable way back to a store, for Spark tasks) and :func:`store_of_uri` (the store of an object-store URI
outside the table's root). The concrete stores are imported only when their scheme is first used.

Example:
    >>> store_for("memory://locations-doc").root
    'memory://locations-doc'
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.storage.log_store import LogStore

__all__ = ["StoreFactory", "StoreRef", "register_scheme", "scheme_of", "store_for", "store_of_uri"]

StoreFactory = Callable[..., LogStore]
"""Builds a store from a full location string (``"memory://t"``, ``"file:///data/t"``), and the storage
options when it was registered with ``takes_options=True``."""

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_SCHEMES: dict[str, tuple[StoreFactory, bool]] = {}
_SCHEMES_LOCK = threading.Lock()


def scheme_of(location: str) -> str | None:
    """The lower-cased URI scheme of ``location``, or ``None`` for a plain path.

    Single-letter schemes are Windows drive letters (``C:\\data``) and count as plain paths.

    Example:
        >>> scheme_of("s3://bucket/t"), scheme_of("/data/t"), scheme_of("C:\\\\data"), scheme_of("file:/x")
        ('s3', None, None, 'file')
    """
    m = _SCHEME_RE.match(location)
    if m is None or len(m[1]) == 1:
        return None
    return m[1].lower()


def register_scheme(scheme: str, factory: StoreFactory, *, takes_options: bool = False) -> None:
    """Make :func:`store_for` build stores for ``scheme://...`` locations with ``factory``.

    The factory receives the full location string, and with ``takes_options`` also the storage options
    (a mapping, possibly empty). Registering a scheme again replaces the factory. The object stores
    (``s3``, ``az``, ``abfss``, ``gs``, ...) plug in this way.

    Example:
        >>> register_scheme("scratch", lambda loc: store_for("memory://" + loc.split("://", 1)[1]))
        >>> store_for("scratch://t1").root
        'memory://t1'
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-]+", scheme):
        raise InvalidArgumentError(f"invalid URI scheme {scheme!r}")
    if not callable(factory):
        raise InvalidArgumentError(f"store factory for scheme {scheme!r} must be callable")
    with _SCHEMES_LOCK:
        _SCHEMES[scheme.lower()] = (factory, takes_options)


def store_for(
    location: str, *, store: LogStore | None = None, options: Mapping[str, Any] | None = None
) -> LogStore:
    """The store for a table ``location``, or ``store`` itself when the caller supplies one.

    * ``memory://name`` -- a process-global in-memory store shared by everyone using the same name;
    * plain paths and ``file:`` URIs (``file:/x``, ``file:///x``, percent-encoded) -- a
      :class:`~deltalog.storage.local.LocalLogStore`;
    * ``s3://`` / ``s3a://``, ``az://`` / ``abfs[s]://`` / ``azure://`` / ``adl://``, ``gs://`` / ``gcs://``
      -- an :class:`~deltalog.storage.object_store.ObjectLogStore` configured by ``options`` (storage
      options as delta-rs spells them) and the environment;
    * any scheme added with :func:`register_scheme`.

    Local and in-memory stores ignore ``options``. Any other scheme raises
    :class:`~deltalog.errors.InvalidArgumentError` naming the schemes that are supported.

    Example:
        >>> a = store_for("memory://store-for-doc")
        >>> a.write("x", b"1", overwrite=False)
        >>> store_for("memory://store-for-doc").read("x")
        b'1'
        >>> try:
        ...     store_for("ftp://host/table")
        ... except InvalidArgumentError as err:
        ...     print("unsupported storage scheme 'ftp'" in str(err))
        True
    """
    if store is not None:
        if not isinstance(store, LogStore):
            raise InvalidArgumentError(
                f"store must implement the LogStore protocol, got {type(store).__name__}", table=location
            )
        return store
    if not isinstance(location, str) or not location:
        raise InvalidArgumentError(f"table location must be a non-empty string, got {location!r}")
    scheme = scheme_of(location)
    with _SCHEMES_LOCK:
        entry = _SCHEMES.get("file" if scheme is None else scheme)
        known = sorted(_SCHEMES)
    if entry is None:
        raise InvalidArgumentError(
            f"unsupported storage scheme {scheme!r} in {location!r}: deltalog reads and writes local paths, "
            f"file: URIs and {', '.join(s + '://' for s in known if s != 'file')}",
            table=location,
        )
    factory, takes_options = entry
    return factory(location, dict(options or {})) if takes_options else factory(location)


@dataclass(frozen=True)
class StoreRef:
    """A picklable way to reach a store again: its location and storage options (what Spark tasks get, so
    each executor opens the same table with the same credentials; in-memory stores cannot travel).

    Example:
        >>> ref = StoreRef.of(store_for("memory://store-ref-doc"))
        >>> ref.location, ref.open() is store_for("memory://store-ref-doc")
        ('memory://store-ref-doc', True)
    """

    location: str
    options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, store: LogStore) -> StoreRef:
        """The reference of ``store`` (its root and, for object stores, its options)."""
        options = getattr(store, "options", None) or {}
        return cls(store.root, tuple(sorted((str(k), str(v)) for k, v in options.items())))

    def open(self) -> LogStore:
        """The store (one per location and options in each process)."""
        return store_for(self.location, options=dict(self.options))

    def __repr__(self) -> str:  # never print the options: they may hold credentials
        return f"StoreRef({self.location!r}, options={[k for k, _ in self.options]})"


def store_of_uri(uri: str, *, options: Mapping[str, Any] | None = None) -> tuple[LogStore, str]:
    """The store of the bucket or container an absolute object-store ``uri`` names, and the key within it:
    for files a table's log points at outside its own root (shallow clones), read with the table's options.

    Example:
        >>> store, key = store_of_uri("s3://bucket/src/part-0.parquet", options={"AWS_REGION": "eu-west-1"})
        >>> store.root, key
        ('s3://bucket', 'src/part-0.parquet')
    """
    scheme = scheme_of(uri)
    if scheme is None or scheme in ("file", "memory") or "://" not in uri:
        raise InvalidArgumentError(f"{uri!r} is not an object-store URI")
    head, _, rest = uri.partition("://")
    netloc, _, key = rest.partition("/")
    return store_for(f"{head}://{netloc}", options=options), key


def _local_factory(location: str) -> LogStore:
    from deltalog.storage.local import LocalLogStore

    return LocalLogStore(location)


def _memory_factory(location: str) -> LogStore:
    from deltalog.storage.memory import memory_store

    return memory_store(location)


_OBJECT_STORES: dict[tuple[str, tuple[tuple[str, str], ...]], LogStore] = {}


def _object_factory(location: str, options: Mapping[str, Any]) -> LogStore:
    """One store (one HTTP client) per location and options, shared by every Table in the process."""
    from deltalog.storage.object_store import ObjectLogStore

    key = (location.rstrip("/"), tuple(sorted((str(k), str(v)) for k, v in options.items())))
    with _SCHEMES_LOCK:
        found = _OBJECT_STORES.get(key)
    if found is not None:
        return found
    made = ObjectLogStore(location, options)
    with _SCHEMES_LOCK:
        if len(_OBJECT_STORES) > 256:
            _OBJECT_STORES.clear()
        return _OBJECT_STORES.setdefault(key, made)


register_scheme("file", _local_factory)
register_scheme("memory", _memory_factory)
for _scheme in ("s3", "s3a", "az", "abfs", "abfss", "azure", "adl", "gs", "gcs"):
    register_scheme(_scheme, _object_factory, takes_options=True)
