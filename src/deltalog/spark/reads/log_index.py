"""Spark parquet scans planned from the Delta log: no status or list call per data file.

``spark.read.parquet(*paths)`` asks the file system for the status of every path before it plans a scan
(one HEAD per file on an object store; ~0.1 ms each locally, adding up on tables of 10k-100k files). The
log already knows each live file's size and modification time, and Spark has a file index that trusts a
metadata log instead of the file system: the one it uses for directories written by a streaming file sink
(``MetadataLogFileIndex``, chosen when the single path read holds a ``_spark_metadata`` directory). So a
scan here writes that log -- version line ``v1``, then one JSON line per file (URI, size, modification
time, ``action: add``) -- into a fresh driver-local temporary directory, lets Spark build its relation
from it, and deletes the directory (Spark keeps the file list in memory; nothing reads the log again).
Nothing is written next to the table, and the data files are not touched until the scan runs. A later
read of the same files (same sizes and times, schema and options) reuses that relation under new column
ids (deltalog's own scans for DML do not), as delta-spark's reads of one version share a file index:
Spark sees them as the same data (``sameSemantics``, a ``cache()`` of one serving the other), and the file
list is not planned again.

How the file list is interpreted:

* an unpartitioned scan (or one whose partition values are joined from the log) reads with
  ``recursiveFileLookup``: every listed file, no partition discovery;
* a Hive-layout scan lets Spark discover the partition columns from the files' directories (typed by the
  schema given), as it does for ``basePath``; used only when no directory above the table root looks like
  ``k=v`` (Spark's discovery would take it for a partition column too).

Consequences, as with delta-spark (whose file index also comes from the log): a data file missing from
storage is reported when the scan runs (Spark's ``FAILED_READ_FILE.FILE_NOT_EXIST``, naming the file), and
``_metadata.file_size`` is the size the log records. Not used -- explicit paths instead -- on Spark Connect
sessions (the server could not see the driver-local directory), for files of unknown size, or when
:data:`FILE_INDEX_CONF` is ``paths``.

Example:
    >>> df = log_indexed(spark, StructType.fromDDL("id long"), ["file:/t/a.parquet"], [512], [0],
    ...                  hive=False)                                               # doctest: +SKIP
    >>> df.inputFiles()                                                             # doctest: +SKIP
    ['file:///t/a.parquet']
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.spark.common.compat import jvm_dataset, with_relation_schema
from deltalog.spark.common.kept import Kept
from deltalog.spark.common.storage import is_connect

__all__ = ["FILE_INDEX_CONF", "KEPT_FILES", "KEPT_RELATIONS", "log_indexed", "usable"]

#: Session setting: ``log`` (default) plans scans from the Delta log; ``paths`` hands Spark the files'
#: paths (one status call each).
FILE_INDEX_CONF = "spark.deltalog.scan.fileIndex"
_BLOCK_SIZE = 32 * 1024 * 1024


def usable(spark: Any, *, table: str, root: str | None = None) -> bool:
    """Whether scans of this session are planned from the log (see the module docstring); with ``root`` (the
    table's location), also whether Spark's partition discovery would stop at it.

    Example:
        >>> usable(spark, table="/data/t")                                            # doctest: +SKIP
        True
    """
    if is_connect(spark):
        return False
    try:
        mode = str(spark.conf.get(FILE_INDEX_CONF, "log")).strip().lower()
    except Exception:
        mode = "log"
    if mode not in ("log", "paths"):
        raise InvalidArgumentError(f"{FILE_INDEX_CONF}={mode!r}: use log or paths", table=table)
    if mode == "paths":
        return False
    if root is not None:
        path = root.split("://", 1)[-1].split("/", 1)[-1] if "://" in root else root
        if any("=" in part for part in path.split("/")):
            return False
    return True


#: Relations kept for reuse (:func:`log_indexed`): at most this many, holding at most :data:`KEPT_FILES` files.
KEPT_RELATIONS = 32
KEPT_FILES = 400_000
_KEPT = Kept(entries=KEPT_RELATIONS, weight=KEPT_FILES)


def _scan_key(spark: Any, schema: Any, options: Mapping[str, str], uris: Sequence[str], sizes: Sequence[int],
              mtimes: Sequence[int | None], hive: bool) -> str:
    digest = hashlib.blake2b(digest_size=20)
    session = spark._jsparkSession  # its relations belong to it: another session (or a restarted one) plans anew
    head = [str(session.sessionUUID()), schema.json(), json.dumps(sorted(options.items())), str(hive)]
    digest.update("\n".join(head).encode())
    for uri, size, mtime in zip(uris, sizes, mtimes, strict=True):
        digest.update(f"\n{uri}\t{int(size)}\t{int(mtime or 0)}".encode())
    return digest.hexdigest()


def _reused(spark: Any, key: str) -> Any | None:
    """A new DataFrame over the relation kept under ``key`` (fresh column ids), or ``None``."""
    from pyspark.sql import DataFrame

    found = _KEPT.get(key)
    if found is None:
        return None
    try:
        plan = found.newInstance()
        jdf = jvm_dataset(spark._jvm).ofRows(spark._jsparkSession, plan)
    except Exception:  # another Spark's internals: plan it again
        return None
    return DataFrame(jdf, spark)


def _keep(key: str, frame: Any, files: int) -> None:
    try:
        plan = frame._jdf.queryExecution().analyzed()
        if str(plan.getClass().getSimpleName()) != "LogicalRelation":
            return
    except Exception:
        return
    _KEPT.put(key, plan, weight=files)


def log_indexed(
    spark: Any, schema: Any, uris: Sequence[str], sizes: Sequence[int], mtimes: Sequence[int | None], *, hive: bool,
    options: Mapping[str, str] | None = None, reuse: bool = False, declared: bool = True,
) -> Any:
    """``spark.read.schema(schema).options(**options).parquet`` of the files ``uris`` (as Spark names them:
    ``file:/...``, ``s3a://...``) of the given sizes and modification times (ms), planned from a file-sink
    metadata log instead of status calls. ``hive``: discover partition columns from the directories; else read
    the listed files only.

    With ``reuse`` (the reads a user sees), a scan of the same files (same sizes and times) with the same
    schema and options reuses the relation planned the first time, under new column ids, as delta-spark's
    reads of one table version share their file index: Spark then sees both reads as the same data
    (``sameSemantics``; a ``cache()`` of one serves the other), and the file list is not planned again. A
    commit that changes the files changes the key. Without it (deltalog's own scans: DML, checks that ask
    Spark which files it read), the relation is the scan's own, so Spark's cache never stands in for it.
    ``declared=False``: the relation keeps Spark's nullable columns (for a plan that makes them nullable anyway,
    such as one side of a full outer join).

    Example:
        >>> log_indexed(spark, StructType.fromDDL("id long"), uris, sizes, mtimes, hive=False).count()
        ... # doctest: +SKIP
        1000
    """
    options = dict(options or {})
    key: str | None = None
    try:
        key = _scan_key(spark, schema, options, uris, sizes, mtimes, hive) if reuse else None
    except Exception:  # another Spark's internals: nothing is reused
        key = None
    found = _reused(spark, key) if key is not None else None
    if found is not None:
        return found
    reader = spark.read.schema(schema).options(**options)
    # Spark's reader makes every column nullable: the relation then declares the schema as given (unless the
    # caller's plan makes every column nullable anyway: ``declared=False``, a few ms less)
    frame = _planned(reader, uris, sizes, mtimes, hive=hive)
    frame = with_relation_schema(spark, frame, schema) if declared else frame
    if key is not None:
        _keep(key, frame, len(uris))
    return frame


def _planned(reader: Any, uris: Sequence[str], sizes: Sequence[int], mtimes: Sequence[int | None], *,
             hive: bool) -> Any:
    folder = tempfile.mkdtemp(prefix="deltalog-scan-")
    try:
        meta = os.path.join(folder, "_spark_metadata")
        os.mkdir(meta)
        tail = f',"isDir":false,"blockReplication":1,"blockSize":{_BLOCK_SIZE},"action":"add"}}'
        lines = ["v1"]
        lines.extend(
            f'{{"path":{json.dumps(uri)},"size":{int(size)},"modificationTime":{int(mtime or 0)}{tail}'
            for uri, size, mtime in zip(uris, sizes, mtimes)
        )
        with open(os.path.join(meta, "0"), "w", encoding="utf-8") as out:
            out.write("\n".join(lines))
        if not hive:
            reader = reader.option("recursiveFileLookup", "true")
        return reader.parquet(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
