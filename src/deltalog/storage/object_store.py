"""A :class:`~deltalog.storage.log_store.LogStore` on S3, Azure Blob / ADLS Gen2 and Google Cloud Storage.

Built on **obstore** (the Python bindings of Rust's ``object_store``, which delta-rs uses): no HTTP or
request signing is written here. The commit primitive is the stores' native conditional create
(``If-None-Match: *`` on S3 and Azure, ``ifGenerationMatch=0`` on GCS) through
``obstore.put(..., mode="create")``: exactly one writer of a key succeeds, the others get
:class:`FileExistsError`. Listing the log starts at a key (``offset``), so loading a table never lists the
whole ``_delta_log`` prefix when a version is known. Reads of data files are ranged (footers, column
chunks); large files are uploaded in parts. Throttling and server errors are retried with backoff by
obstore's client (``max_retries`` / ``retry_timeout`` options); what still fails becomes a named
:class:`~deltalog.errors.StorageError`.

Object stores have no directories. The store keeps the contract's directory rules (writing below a
file, or over a "directory", is refused) with one extra request per check; names of the Delta log's own
files (commits, checksums, checkpoints) skip these checks, since nothing is ever stored below them.

Locations: ``s3://bucket/path`` and ``s3a://`` (S3 and S3-compatible stores), ``az://container/path``,
``abfs[s]://container@account.dfs.core.windows.net/path``, ``azure://`` and ``adl://`` (Azure),
``gs://bucket/path`` and ``gcs://`` (GCS). Configuration: :mod:`deltalog.storage.options`.

Example:
    >>> store = ObjectLogStore("s3://bucket/tables/events", {"AWS_REGION": "eu-west-1"})   # doctest: +SKIP
    >>> store.write("_delta_log/00000000000000000000.json", b"{}", overwrite=False)        # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from deltalog.errors import (
    ConditionalPutUnsupportedError,
    InvalidArgumentError,
    StorageError,
    StorageIOError,
    StorageNotFoundError,
    StoragePermissionError,
    StorageUnavailableError,
)
from deltalog.storage.log_store import FileInfo, OutputFile, is_temp_name, name_key, split_path
from deltalog.storage.options import StorageOptions, redacted, scrub, split_options, with_environment

__all__ = ["AZURE_SCHEMES", "GCS_SCHEMES", "OBJECT_SCHEMES", "S3_SCHEMES", "ObjectLogStore", "provider_of"]

S3_SCHEMES = ("s3", "s3a")
AZURE_SCHEMES = ("az", "abfs", "abfss", "azure", "adl")
GCS_SCHEMES = ("gs", "gcs")
OBJECT_SCHEMES = S3_SCHEMES + AZURE_SCHEMES + GCS_SCHEMES

# Names the Delta log gives its own files: never directories, never below a file.
_LOG_NAME = re.compile(r"(^|/)_delta_log/(\d{20}\..*|_last_checkpoint|_sidecars/[^/]+|_staged_commits/[^/]+)$")
_PART_SIZE = 10 * 1024 * 1024
#: Where credentials can come from, per provider (for the error that says what to configure).
_CREDENTIAL_HINTS = {
    "s3": "storage options AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_REGION, AWS_ENDPOINT_URL), in Spark "
          "spark.hadoop.fs.s3a.access.key / secret.key, or the AWS environment and credential chain",
    "azure": "storage options AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY or "
             "AZURE_CLIENT_ID / AZURE_CLIENT_SECRET / AZURE_TENANT_ID, in Spark "
             "spark.hadoop.fs.azure.account.key.<account>.dfs.core.windows.net, or the Azure environment",
    "gcs": "storage option GOOGLE_SERVICE_ACCOUNT (a key file), in Spark "
           "spark.hadoop.fs.gs.auth.service.account.json.keyfile, or GOOGLE_APPLICATION_CREDENTIALS",
}
_COMMIT = re.compile(r"^(?:.*/)?_delta_log/(\d{20}\.json)$")
_CONDITIONAL_MODES = {
    "auto": "auto", "probe": "probe", "enabled": "enabled", "true": "enabled", "etag": "enabled",
    "disabled": "disabled", "false": "disabled", "none": "disabled",
}
#: Probe results per (endpoint, bucket): does the store refuse a second create of the same key?
_PROBED: dict[tuple[str, str], bool] = {}
_PROBED_LOCK = threading.Lock()


def provider_of(scheme: str) -> str:
    """``"s3"``, ``"azure"`` or ``"gcs"`` for a URI scheme (``InvalidArgumentError`` for others).

    Example:
        >>> provider_of("abfss"), provider_of("s3a")
        ('azure', 's3')
    """
    s = scheme.lower()
    if s in S3_SCHEMES:
        return "s3"
    if s in AZURE_SCHEMES:
        return "azure"
    if s in GCS_SCHEMES:
        return "gcs"
    known = ", ".join(OBJECT_SCHEMES)
    raise InvalidArgumentError(f"{scheme}:// is not an object store scheme deltalog knows ({known})")


def _obstore_url(location: str, provider: str) -> str:
    """The URL obstore parses (``s3a`` is S3, ``azure`` / ``adl`` are Azure containers)."""
    scheme, _, rest = location.partition("://")
    if provider == "azure" and scheme.lower() in ("azure", "adl"):
        return f"az://{rest}"
    if provider == "gcs" and scheme.lower() == "gcs":
        return f"gs://{rest}"
    return location


def _status(exc: BaseException) -> tuple[int | None, str | None]:
    """HTTP status and service error code found in an obstore error's text (never its URL or body)."""
    text = str(exc)
    m = re.search(r"status code: (\d{3})", text) or re.search(r"\b(\d{3}) [A-Z][a-zA-Z ]+:", text)
    code = re.search(r"<Code>([A-Za-z]+)</Code>", text) or re.search(r"\b(ContainerNotFound|NoSuchBucket)\b", text)
    return (int(m[1]) if m else None), (code[1] if code else None)


class ObjectLogStore:
    """A store rooted at an object-store location (see the module docstring); ``options`` are storage
    options as delta-rs spells them (:mod:`deltalog.storage.options`), the environment fills the rest.

    Example:
        >>> ObjectLogStore("s3://bucket/t", {"AWS_REGION": "us-east-1"}).root                 # doctest: +SKIP
        's3://bucket/t'
    """

    #: A request that failed on the client may still be applied by the service later (a put is not known
    #: to have failed just because its answer never came); committers keep files in that case.
    delayed_writes = True

    def __init__(self, location: str, options: StorageOptions | None = None) -> None:
        import obstore.store as obs

        parts = urlsplit(location)
        self.scheme = parts.scheme.lower()
        self.provider = provider_of(self.scheme)
        if not parts.netloc:
            raise InvalidArgumentError(f"{location!r} names no bucket or container", table=location)
        self._root = location.rstrip("/")
        self.options = dict(options or {})
        split = with_environment(split_options(self.options), self.provider, os.environ)
        self.deltalog_options = split.deltalog
        retry: dict[str, Any] = dict(split.retry)
        kwargs: dict[str, Any] = {"config": split.config, "client_options": split.client}
        if retry:
            retry.setdefault("max_retries", 10)
            retry.setdefault("retry_timeout", timedelta(seconds=180))
            retry["backoff"] = {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=15),
                                "base": 2}
            kwargs["retry_config"] = retry
        cls: Any = {"s3": obs.S3Store, "azure": obs.AzureStore, "gcs": obs.GCSStore}[self.provider]
        try:
            self._store = cls.from_url(_obstore_url(self._root, self.provider), **kwargs)
        except Exception as exc:
            raise self._config_error(exc) from None
        self._dirs_known: set[str] = set()
        self._lock = threading.Lock()
        mode = (split.deltalog.get("conditional_put") or split.deltalog.get("deltalog_conditional_put") or "auto")
        if mode.strip().lower() not in _CONDITIONAL_MODES:
            raise InvalidArgumentError(
                f"storage option conditional_put={mode!r} is not one of {sorted(_CONDITIONAL_MODES)}", table=self._root)
        self.conditional_put = _CONDITIONAL_MODES[mode.strip().lower()]
        self._endpoint = split.config.get("aws_endpoint_url") or split.config.get("aws_endpoint") \
            or split.config.get("endpoint") or split.config.get("endpoint_url") or ""
        self.lock_table: Any = None
        if (split.deltalog.get("aws_s3_locking_provider") or "").strip().lower() == "dynamodb":
            if self.provider != "s3":
                raise InvalidArgumentError("a DynamoDB lock table coordinates S3 tables only", table=self._root)
            from deltalog.storage.dynamodb import DynamoDBLockTable

            self.lock_table = DynamoDBLockTable(self._root, self.options)
        elif split.deltalog.get("aws_s3_locking_provider"):
            raise InvalidArgumentError(
                f"AWS_S3_LOCKING_PROVIDER={split.deltalog['aws_s3_locking_provider']!r}: only 'dynamodb' is known",
                table=self._root)

    def _config_error(self, exc: BaseException) -> InvalidArgumentError:
        name = type(exc).__name__
        text = str(exc)
        if name == "UnknownConfigurationKeyError":
            key = re.search(r"[Kk]ey[^'\"`]*['\"`]([^'\"`]+)['\"`]", text)
            what = f"{key[1]!r}" if key else "a key"
            return InvalidArgumentError(
                f"unknown storage option {what} for {self.scheme}:// (given: {sorted(self.options)}); use the "
                "keys delta-rs and obstore document, e.g. AWS_ENDPOINT_URL, AWS_REGION, AZURE_STORAGE_ACCOUNT_NAME, "
                "GOOGLE_SERVICE_ACCOUNT", table=self._root)
        first = scrub(text.splitlines()[0] if text else name, self.options)
        return InvalidArgumentError(
            f"cannot configure the {self.provider} store for {self._root}: {first[:300]} (options given: "
            f"{redacted(self.options)})", table=self._root)

    @property
    def root(self) -> str:
        """The table location URI (no trailing ``/``).

        Example:
            >>> ObjectLogStore("gs://b/t/", {"google_service_account": "/k.json"}).root    # doctest: +SKIP
            'gs://b/t'
        """
        return self._root

    def __repr__(self) -> str:
        return f"ObjectLogStore({self._root!r}, {redacted(self.options)!r})"

    def full_path(self, path: str) -> str:
        """``root/path`` (``""`` is the root). See :meth:`LogStore.full_path`.

        Example:
            >>> ObjectLogStore("s3://b/t").full_path("a b.parquet")                           # doctest: +SKIP
            's3://b/t/a b.parquet'
        """
        rel = "/".join(split_path(path, allow_root=True))
        return f"{self._root}/{rel}" if rel else self._root

    @property
    def obstore(self) -> Any:
        """The obstore store behind this log store (paths relative to the table root)."""
        return self._store

    # ----------------------------------------------------------------------------------------- errors

    def _named(self, exc: BaseException, path: str, doing: str) -> BaseException:
        """The contract's exception (FileNotFoundError / FileExistsError) or a named StorageError."""
        import obstore.exceptions as oe

        status, code = _status(exc)
        where: dict[str, Any] = {"table": self._root, "file": path or None}
        if code in ("NoSuchBucket", "ContainerNotFound") or (status == 404 and doing == "listing" and code):
            container = "bucket" if self.provider != "azure" else "container"
            return StorageNotFoundError(
                f"the {container} of {self._root} does not exist (or these credentials cannot see it): create it, "
                "or fix the location", **where)
        if isinstance(exc, (oe.AlreadyExistsError, oe.PreconditionError)):
            return FileExistsError(17, "already exists", path)
        if isinstance(exc, (oe.NotFoundError, FileNotFoundError)):
            return FileNotFoundError(2, "not found", path)
        if isinstance(exc, (oe.PermissionDeniedError, oe.UnauthenticatedError)) or status in (401, 403):
            verb = "read" if doing in ("reading", "listing") else "write"
            detail = f" ({status}{' ' + code if code else ''})" if status else ""
            return StoragePermissionError(
                f"the {self.provider} store refused to {verb} {path or 'the table'}{detail} while {doing} it: check "
                f"the credentials -- {_CREDENTIAL_HINTS[self.provider]} -- and their permissions", **where)
        if (status is not None and (status == 429 or status >= 500)) or _transient(exc):
            detail = f"{status} {code or ''}".strip() if status else type(exc).__name__
            return StorageUnavailableError(
                f"the {self.provider} store kept failing ({detail}) while {doing} {path or 'the table'}, after the "
                "retries ran out; try again later or raise max_retries / retry_timeout", **where)
        detail = f"{status} {code or ''}".strip() if status else (str(exc).splitlines() or [type(exc).__name__])[0]
        detail = scrub(detail, self.options)
        return StorageIOError(f"the {self.provider} store failed while {doing} {path or 'the table'}: {detail[:200]}",
                              **where)

    @contextlib.contextmanager
    def _calling(self, path: str, doing: str) -> Iterator[None]:
        try:
            yield
        except (StorageError, InvalidArgumentError):
            raise
        except Exception as exc:
            named = self._named(exc, path, doing)
            raise named from None

    # ---------------------------------------------------------------------------------------- listing

    def _objects(self, prefix: str, offset: str | None) -> Iterator[dict[str, Any]]:
        import obstore

        kwargs: dict[str, Any] = {"prefix": prefix or None, "chunk_size": 1000}
        if offset:
            kwargs["offset"] = offset
        with self._calling(prefix.rstrip("/"), "listing"):
            for batch in obstore.list(self._store, **kwargs):
                yield from batch

    @staticmethod
    def _info(meta: Mapping[str, Any]) -> FileInfo:
        ts = meta["last_modified"]
        return FileInfo(str(meta["path"]), int(meta["size"]), int(ts.timestamp() * 1000))

    def list_from(self, prefix: str) -> Iterator[FileInfo]:
        """Files of the prefix's directory with name >= its last component, sorted. See
        :meth:`LogStore.list_from`; one LIST request that starts at the key.

        Example:
            >>> [f.name for f in store.list_from("_delta_log/00000000000000000010")]  # doctest: +SKIP
            ['00000000000000000010.json', '00000000000000000011.json']
        """
        directory, _, start = prefix.rpartition("/")
        if "\x00" in start:
            raise InvalidArgumentError(f"store path must not contain NUL, got {prefix!r}")
        rel_dir = "/".join(split_path(directory, allow_root=True))
        key_dir = f"{rel_dir}/" if rel_dir else ""
        start_key = name_key(start)
        if self.lock_table is not None and rel_dir == "_delta_log":
            self.lock_table.repair(self)  # finish a commit whose writer died after claiming it
        # ``offset`` lists keys strictly after it: start one character short so ``start`` itself is included
        offset = key_dir + start[:-1] if start else None
        out = []
        for meta in self._objects(key_dir, offset):
            name = str(meta["path"])[len(key_dir):]
            if "/" in name or is_temp_name(name) or name_key(name) < start_key:
                continue
            out.append(self._info(meta))
        out.sort(key=lambda f: name_key(f.path))
        return iter(out)

    def list_dir(self, directory: str, *, recursive: bool = False) -> Iterator[FileInfo]:
        """Files in (or, with ``recursive``, below) ``directory``, sorted. See :meth:`LogStore.list_dir`.

        Example:
            >>> [f.path for f in store.list_dir("p=1")]                               # doctest: +SKIP
            ['p=1/part-0.parquet']
        """
        import obstore

        rel_dir = "/".join(split_path(directory, allow_root=True))
        key_dir = f"{rel_dir}/" if rel_dir else ""
        out: list[FileInfo] = []
        if recursive:
            # one LIST per top-level "subdirectory", several at a time (a partitioned table lists in parallel)
            with self._calling(rel_dir, "listing"):
                top = obstore.list_with_delimiter(self._store, prefix=key_dir or None)
            metas: list[Any] = list(top["objects"])
            prefixes = [str(p).rstrip("/") + "/" for p in top["common_prefixes"]]
            if prefixes:
                with ThreadPoolExecutor(max_workers=min(16, len(prefixes))) as pool:
                    for found in pool.map(lambda p: list(self._objects(p, None)), prefixes):
                        metas.extend(found)
            out = [self._info(m) for m in metas if not is_temp_name(str(m["path"]).rpartition("/")[2])]
        else:
            with self._calling(rel_dir, "listing"):
                result = obstore.list_with_delimiter(self._store, prefix=key_dir or None)
            out = [self._info(m) for m in result["objects"] if not is_temp_name(str(m["path"]).rpartition("/")[2])]
        out.sort(key=lambda f: name_key(f.path))
        return iter(out)

    def list_prefixes(self, directory: str) -> list[str]:
        """The "subdirectories" directly below ``directory`` (for listing a large table in parallel).

        Example:
            >>> store.list_prefixes("")                                               # doctest: +SKIP
            ['_delta_log', 'day=2024-01-01', 'day=2024-01-02']
        """
        import obstore

        rel_dir = "/".join(split_path(directory, allow_root=True))
        key_dir = f"{rel_dir}/" if rel_dir else ""
        with self._calling(rel_dir, "listing"):
            result = obstore.list_with_delimiter(self._store, prefix=key_dir or None)
        return sorted(str(p).rstrip("/") for p in result["common_prefixes"])

    # ---------------------------------------------------------------------------------------- reading

    def read(self, path: str) -> bytes:
        """The whole object; :class:`FileNotFoundError` if absent. See :meth:`LogStore.read`.

        Example:
            >>> store.read("_delta_log/00000000000000000000.json")[:1]                 # doctest: +SKIP
            b'{'
        """
        import obstore

        key = "/".join(split_path(path))
        with self._calling(key, "reading"):
            return bytes(obstore.get(self._store, key).bytes())

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset`` (one ranged GET). See :meth:`LogStore.read_range`.

        Example:
            >>> store.read_range("part-0.parquet", 0, 4)                               # doctest: +SKIP
            b'PAR1'
        """
        import obstore

        if offset < 0 or length < 0:
            raise InvalidArgumentError(f"read_range needs offset >= 0 and length >= 0, got {offset}, {length}")
        key = "/".join(split_path(path))
        if length == 0:
            self.stat(key)  # still FileNotFoundError for a missing file
            return b""
        try:
            with self._calling(key, "reading"):
                return bytes(obstore.get_range(self._store, key, start=offset, length=length))
        except StorageIOError:
            if offset < self.stat(key).size:
                raise
            return b""  # the range starts at or after the end of the object (a 416 or a client-side refusal)

    def open_input(self, path: str, *, size: int | None = None) -> Any:
        """A seekable file over ranged GETs, for pyarrow (``size`` from the log saves a HEAD).

        Example:
            >>> import pyarrow.parquet as pq
            >>> pq.ParquetFile(store.open_input("part-0.parquet", size=1234))          # doctest: +SKIP
        """
        import obstore

        key = "/".join(split_path(path))
        with self._calling(key, "reading"):
            return _ObjectInput(self, key, obstore.open_reader(self._store, key, size=size, buffer_size=256 * 1024))

    def exists(self, path: str) -> bool:
        """True if an object is at ``path`` (one HEAD). See :meth:`LogStore.exists`.

        Example:
            >>> store.exists("_delta_log/_last_checkpoint")                            # doctest: +SKIP
            True
        """
        try:
            self.stat(path)
        except FileNotFoundError:
            return False
        return True

    def stat(self, path: str) -> FileInfo:
        """Size and modification time (one HEAD). See :meth:`LogStore.stat`.

        Example:
            >>> store.stat("part-0.parquet").size                                      # doctest: +SKIP
            1234
        """
        import obstore

        key = "/".join(split_path(path))
        with self._calling(key, "reading"):
            meta = obstore.head(self._store, key)
        return self._info({**meta, "path": key})

    # ---------------------------------------------------------------------------------------- writing

    def _check_directories(self, key: str) -> None:
        """The contract's directory rules: no file may sit on an ancestor, ``key`` may not be a prefix."""
        if _LOG_NAME.search(key):
            return
        parts = key.split("/")
        for i in range(1, len(parts)):
            ancestor = "/".join(parts[:i])
            with self._lock:
                known = ancestor in self._dirs_known
            if not known:
                if self.exists(ancestor):
                    raise NotADirectoryError(20, "a parent of the path is a file", self.full_path(key))
                with self._lock:
                    self._dirs_known.add(ancestor)
        if next(self._objects(key + "/", None), None) is not None:
            raise IsADirectoryError(21, "is a directory", self.full_path(key))

    def write(self, path: str, data: bytes, *, overwrite: bool) -> None:
        """Conditional create (``overwrite=False``) or plain put. See :meth:`LogStore.write`.

        Example:
            >>> store.write("_delta_log/00000000000000000001.json", b"{}", overwrite=False)  # doctest: +SKIP
        """
        import obstore

        key = "/".join(split_path(path))
        self._check_directories(key)
        commit = _COMMIT.match(key) if not overwrite else None
        if commit is not None:
            if self.lock_table is not None:
                self.lock_table.commit(self, commit[1], bytes(data))
                return
            self._require_conditional_put()
        with self._calling(key, "writing"):
            obstore.put(self._store, key, bytes(data), mode="overwrite" if overwrite else "create")

    def put_unconditional(self, path: str, data: bytes) -> None:
        """A plain put (replaces any object at ``path``); for the lock-table protocol's copies.

        Example:
            >>> store.put_unconditional("_delta_log/.tmp/x", b"{}")                    # doctest: +SKIP
        """
        import obstore

        key = "/".join(split_path(path))
        with self._calling(key, "writing"):
            obstore.put(self._store, key, bytes(data), mode="overwrite")

    def _require_conditional_put(self) -> None:
        """Refuse to commit on a store known (or found by the probe) to ignore conditional creates."""
        mode = self.conditional_put
        if mode == "enabled" or (mode == "auto" and not (self.provider == "s3" and self._endpoint)):
            return  # AWS S3, Azure and GCS honour conditional creates
        supported = False if mode == "disabled" else self._probe()
        if not supported:
            how = ("the storage option conditional_put=disabled says so" if mode == "disabled"
                   else "a probe found that a second create of the same key succeeds")
            raise ConditionalPutUnsupportedError(
                f"the store at {self._root} does not honour conditional creates (If-None-Match) -- {how}; a commit "
                "there could silently replace another writer's. Coordinate commits through a DynamoDB lock table "
                "(AWS_S3_LOCKING_PROVIDER=dynamodb, DELTA_DYNAMO_TABLE_NAME=<table>), or use a store with "
                "conditional writes", table=self._root)

    def _probe(self) -> bool:
        """Once per endpoint and bucket: create a scratch key twice and see whether the second is refused."""
        import obstore
        import obstore.exceptions as oe

        bucket = urlsplit(self._root).netloc
        cache_key = (self._endpoint, bucket)
        with _PROBED_LOCK:
            if cache_key in _PROBED:
                return _PROBED[cache_key]
        key = f"_delta_log/.deltalog-conditional-put-probe-{uuid.uuid4().hex}.tmp"
        try:
            with self._calling(key, "writing"):
                obstore.put(self._store, key, b"1", mode="create")
            try:
                obstore.put(self._store, key, b"2", mode="create")
                supported = False
            except (oe.AlreadyExistsError, oe.PreconditionError):
                supported = True
        finally:
            with contextlib.suppress(Exception):
                obstore.delete(self._store, key)
        with _PROBED_LOCK:
            _PROBED[cache_key] = supported
        return supported

    def open_output(self, path: str) -> OutputFile:
        """A new object written in parts (multipart upload above 10 MiB); see :meth:`LogStore.open_output`.

        Example:
            >>> out = store.open_output("part-0.parquet"); out.write(b"PAR1"); out.close()  # doctest: +SKIP
        """
        key = "/".join(split_path(path))
        return _ObjectOutput(self, key)

    def delete_many(self, paths: list[str]) -> None:
        """Delete many objects with bulk requests (up to 1,000 keys each on S3); missing ones are fine.

        Example:
            >>> store.delete_many(["a.parquet", "b.parquet"])                           # doctest: +SKIP
        """
        import obstore

        keys = ["/".join(split_path(p)) for p in paths]
        for i in range(0, len(keys), 1000):
            chunk = keys[i:i + 1000]
            try:
                with self._calling(chunk[0] if chunk else "", "deleting"):
                    obstore.delete(self._store, chunk)
            except FileNotFoundError:
                for key in chunk:
                    self.delete(key)

    def delete(self, path: str) -> None:
        """Delete the object; a missing one is fine. See :meth:`LogStore.delete`.

        Example:
            >>> store.delete("part-0.parquet")                                         # doctest: +SKIP
        """
        import obstore

        key = "/".join(split_path(path))
        try:
            with self._calling(key, "deleting"):
                obstore.delete(self._store, key)
        except FileNotFoundError:
            pass


def _transient(exc: BaseException) -> bool:
    """A failure without an HTTP status that retrying could have cured (the first line says what happened;
    the rest of obstore's text is a debug dump that mentions ``retry_timeout`` whatever the cause)."""
    first = (str(exc).splitlines() or [""])[0].lower()
    return any(w in first for w in ("timed out", "connection refused", "connection reset", "error sending request",
                                    "operation timed out", "dns error"))


class _ObjectInput:
    """obstore's ranged reader as the seekable binary file pyarrow expects (``closed``, ``readable``, ...)."""

    def __init__(self, store: ObjectLogStore, key: str, reader: Any) -> None:
        self._store, self._key, self._reader = store, key, reader
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        with self._store._calling(self._key, "reading"):
            return bytes(self._reader.read(None if size is None or size < 0 else size))

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._reader.seek(offset, whence))

    def tell(self) -> int:
        return int(self._reader.tell())

    def size(self) -> int:
        return int(self._reader.size)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._reader.close()

    def __enter__(self) -> _ObjectInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ObjectOutput:
    """obstore's buffered writer (multipart above the part size) with the OutputFile contract."""

    def __init__(self, store: ObjectLogStore, key: str) -> None:
        self._store, self._key = store, key
        self._writer: Any = None
        self._size = 0
        self.closed = False

    def _open(self) -> Any:
        import obstore

        if self._writer is None:
            with self._store._calling(self._key, "writing"):
                self._writer = obstore.open_writer(self._store.obstore, self._key, buffer_size=_PART_SIZE,
                                                   max_concurrency=4)
        return self._writer

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        writer = self._open()
        with self._store._calling(self._key, "writing"):
            writer.write(chunk)
        self._size += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self.closed:
            return
        writer = self._open()
        self.closed = True
        with self._store._calling(self._key, "writing"):
            writer.close()

    def abort(self) -> None:
        # An unfinished upload is never completed: nothing appears at the key (the store's lifecycle rules
        # remove abandoned parts). A completed one is deleted by the caller.
        self.closed = True
        self._writer = None
