"""Session setup, and how ``format("delta")`` reaches deltalog.

Mechanism: **client-side routing**. Spark has no JVM Delta provider here (and none is needed): after
:func:`register` (or :func:`configure`), the Python ``DataFrameReader`` / ``DataFrameWriter`` classes of
this process -- classic and Spark Connect alike -- remember what ``format()``, ``option(s)()``,
``mode()`` and ``partitionBy()`` were given, and ``load()`` / ``save()`` with the ``delta`` format call
:func:`deltalog.spark.read` / :func:`deltalog.spark.write` instead of the JVM. Every other format
goes to Spark unchanged. Nothing is installed on the cluster and the server side is never patched,
so the same code works in a local session, on a cluster and over Spark Connect; the reads and
writes themselves are ordinary Spark jobs (a parquet scan, ``mapInArrow``). A Python data source was
not chosen: it cannot prune columns, rejects ``errorifexists``/``ignore`` and ``partitionBy``, and its
commit runs in a separate worker process (see ``NOTES.md``).

What the routing covers: ``spark.read.format("delta")...load(path)`` and
``df.write.format("delta")...save(path)`` (and the ``format=`` arguments of ``load``/``save``), for
Structured Streaming ``spark.readStream.format("delta")...load(path)`` (a Python streaming data source,
:mod:`deltalog.spark.streaming.source`) and ``df.writeStream.format("delta")...start(path)``
(``foreachBatch`` with idempotent commits, :mod:`deltalog.spark.streaming.sink`), catalog tables
(``saveAsTable``, ``insertInto``, ``writeTo``, ``toTable``, ``spark.table``, ``spark.read.table``:
:mod:`deltalog.spark.sql.tables`) and SQL (:mod:`deltalog.spark.sql`).
On Spark 3.5, which has no Python data sources, ``spark.readStream.format("delta")`` is refused with a PySpark
``AnalysisException`` naming the running version (``[DELTA_UNSUPPORTED_SPARK_VERSION]``: upgrade to 4.0); every
other route works there too (:mod:`deltalog.spark.common.compat`).
Executors must be able to import deltalog: in local mode the workers run the driver's interpreter unless
``PYSPARK_PYTHON`` (or ``spark.pyspark.python``) names another (:mod:`deltalog.spark.common.workers`); on a
cluster, install deltalog in the executors' Python or ship it with ``spark.submit.pyFiles``.

Example:
    >>> from pyspark.sql import SparkSession
    >>> from deltalog.spark import configure
    >>> spark = configure(SparkSession.builder.master("local[2]")).getOrCreate()      # doctest: +SKIP
    >>> spark.range(3).write.format("delta").save("/tmp/t")                           # doctest: +SKIP
    >>> spark.read.format("delta").load("/tmp/t").count()                             # doctest: +SKIP
    3
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.spark.common import compat
from deltalog.spark.common.conf import default_source
from deltalog.spark.common.errors import spark_errors
from deltalog.spark.common.recorded import recorded_state, session_of_reader, session_of_stream_writer, writer_dataframe
from deltalog.spark.common.workers import use_driver_python, use_driver_python_for

__all__ = [
    "LEAN_JVM_OPTIONS",
    "RECOMMENDED_CONF",
    "configure",
    "configure_spark_with_delta_pip",
    "is_registered",
    "local_session",
    "register",
    "unregister",
]

#: Session settings deltalog's Spark paths are measured with (see ``NOTES.md``).
RECOMMENDED_CONF = {
    # Planning a scan of many explicit files is 10x faster without a distributed listing job.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    # Spark's own writers (not deltalog's) would leave _SUCCESS files in table directories.
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Spark's default INT96 cannot hold every timestamp; with micros, unpartitioned writes of tables with
    # timestamp columns can use Spark's own parquet writer (applied by configure() only, not register()).
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
_RUNTIME_CONF = (
    "spark.sql.sources.parallelPartitionDiscovery.threshold",
    "spark.sql.execution.arrow.pyspark.enabled",
)
#: Serial GC and the C1 JIT only: ~40% less JVM memory and faster start-up for a small local session, but per-row
#: work runs about half as fast (an aggregate over 10M parquet rows: 0.84 s against 0.39 s with Spark's own JVM
#: options, measured 2026-12-03): for tests and short demos, not pipelines (``local_session(lean_jvm=True)``).
LEAN_JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
_LOCK = threading.Lock()
_ORIGINALS: dict[tuple[type, str], Callable[..., Any]] = {}


def configure(builder: Any, *, raw_local_fs: bool = False) -> Any:
    """Add the recommended settings to a ``SparkSession.Builder`` and route the ``delta`` format and Delta's
    SQL (``spark.sql`` on ``delta.`path``` and catalog Delta tables) of the sessions it makes to deltalog, as
    :func:`register` does for a session that runs already; in local mode the Python workers run this
    interpreter (:mod:`deltalog.spark.common.workers`).

    ``raw_local_fs=True`` also makes Spark's local file system skip ``.crc`` side files (deltalog's
    own writes never create them; only needed when Spark itself writes next to the table).

    A builder ported from delta-spark may name Delta's JVM pieces, which are not installed (and not
    needed): ``io.delta.sql.DeltaSparkSessionExtension`` in ``spark.sql.extensions``, the
    ``DeltaCatalog`` as ``spark.sql.catalog.spark_catalog`` and ``io.delta:delta-*`` in
    ``spark.jars.packages`` are taken out (other extensions and packages stay), so the session starts.

    Example:
        >>> spark = configure(SparkSession.builder.master("local[2]")).getOrCreate()  # doctest: +SKIP
    """
    log_dropped(drop_delta_jvm_settings(builder))
    use_driver_python_for(builder)  # local mode: the workers run this interpreter, which has deltalog
    for key, value in RECOMMENDED_CONF.items():
        builder = builder.config(key, value)
    if raw_local_fs:
        builder = builder.config("spark.hadoop.fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
    _install()
    from deltalog.spark.sql import install as install_sql

    install_sql()  # the whole of Delta from the session this builder makes: SQL too, with no register(spark)
    return builder


def configure_spark_with_delta_pip(spark_session_builder: Any, extra_packages: list[str] | None = None) -> Any:
    """delta-spark's ``configure_spark_with_delta_pip`` for ported session code: :func:`configure`
    (no Delta jar is needed), plus ``extra_packages`` in ``spark.jars.packages``.

    Example:
        >>> builder = SparkSession.builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        >>> spark = configure_spark_with_delta_pip(builder).getOrCreate()             # doctest: +SKIP
    """
    builder = configure(spark_session_builder)
    if extra_packages:
        current = [p for p in str(getattr(builder, "_options", {}).get("spark.jars.packages", "")).split(",") if p]
        builder = builder.config("spark.jars.packages", ",".join([*current, *extra_packages]))
    return builder


#: Settings of a delta-spark session that name JVM classes deltalog does not need (and are absent).
_DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
_DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


_LOG = logging.getLogger("deltalog.spark")


def log_dropped(dropped: list[str]) -> None:
    if dropped:
        _LOG.warning("deltalog: ignoring delta-spark's JVM settings (%s); deltalog routes Delta reads, writes and "
                     "SQL itself", ", ".join(dropped))


def drop_delta_jvm_settings(builder: Any) -> list[str]:
    """Take delta-spark's JVM settings out of a builder (see :func:`configure`); returns what was dropped."""
    options = getattr(builder, "_options", None)
    dropped: list[str] = []
    if not isinstance(options, dict):
        return dropped
    lock = getattr(builder, "_lock", None)
    with lock if lock is not None else threading.Lock():
        ext = [e.strip() for e in str(options.get("spark.sql.extensions", "")).split(",") if e.strip()]
        if _DELTA_EXTENSION in ext:
            kept = [e for e in ext if e != _DELTA_EXTENSION]
            if kept:
                options["spark.sql.extensions"] = ",".join(kept)
            else:
                del options["spark.sql.extensions"]
            dropped.append(f"spark.sql.extensions={_DELTA_EXTENSION}")
        if str(options.get("spark.sql.catalog.spark_catalog", "")).strip() == _DELTA_CATALOG:
            del options["spark.sql.catalog.spark_catalog"]
            dropped.append(f"spark.sql.catalog.spark_catalog={_DELTA_CATALOG}")
        packages = [p.strip() for p in str(options.get("spark.jars.packages", "")).split(",") if p.strip()]
        if any(p.startswith("io.delta:") for p in packages):
            kept = [p for p in packages if not p.startswith("io.delta:")]
            if kept:
                options["spark.jars.packages"] = ",".join(kept)
            else:
                del options["spark.jars.packages"]
            dropped.append("spark.jars.packages=" + ",".join(p for p in packages if p.startswith("io.delta:")))
    return dropped


def _drop_delta_runtime_settings(spark: Any) -> list[str]:
    """A session already built with delta-spark's catalog setting: unset it (Spark could not load the class,
    and every catalog statement would fail). The extension setting is static; Spark skipped the missing class."""
    dropped: list[str] = []
    try:
        current = spark.conf.get("spark.sql.catalog.spark_catalog", None)
    except Exception:
        return dropped
    if current is not None and str(current).strip() == _DELTA_CATALOG:
        spark.conf.unset("spark.sql.catalog.spark_catalog")
        dropped.append(f"spark.sql.catalog.spark_catalog={_DELTA_CATALOG}")
    return dropped


def put_on_worker_path() -> None:
    """Let the Python workers of a local session import this deltalog: its directory goes first on
    ``PYTHONPATH`` (once), and they run this interpreter unless ``PYSPARK_PYTHON`` says otherwise.

    Example:
        >>> put_on_worker_path()                                                     # doctest: +SKIP
        >>> os.environ["PYTHONPATH"].split(os.pathsep)[0].endswith("src")            # doctest: +SKIP
        True
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the dir holding deltalog/
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if src not in (os.path.abspath(p) for p in paths):
        os.environ["PYTHONPATH"] = os.pathsep.join([src, *paths])


def local_session(
    app_name: str = "deltalog",
    *,
    cores: int = 2,
    conf: Mapping[str, str] | None = None,
    lean_jvm: bool = False,
    log_level: str = "ERROR",
) -> Any:
    """A local ``SparkSession`` for pipelines, tests and demos on one machine, with ``delta`` routed.

    Sets what a local PySpark session otherwise trips over (see ``NOTES.md``): Python workers run this
    interpreter (``PYSPARK_PYTHON``, so they import the same pyarrow and deltalog; deltalog's own
    directory is added to ``PYTHONPATH`` too), loopback binding (``SPARK_LOCAL_IP``), no UI or console
    progress bars, ``cores`` shuffle partitions, and :func:`configure`'s settings; the JVM runs with
    Spark's own options (both JIT compilers), or :data:`LEAN_JVM_OPTIONS` with ``lean_jvm=True`` (less
    memory and a faster start for tests and demos, half the speed on per-row work); ``conf`` adds or
    overrides settings. An existing session is returned as ``getOrCreate`` does.

    Example:
        >>> from deltalog.spark import local_session
        >>> spark = local_session("nightly-job", conf={"spark.sql.session.timeZone": "UTC"})  # doctest: +SKIP
        >>> spark.range(3).write.format("delta").save("/tmp/t")                             # doctest: +SKIP
    """
    from pyspark.sql import SparkSession

    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise InvalidArgumentError(f"cores must be a positive int, got {cores!r}")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    put_on_worker_path()
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
        **({"spark.driver.extraJavaOptions": LEAN_JVM_OPTIONS} if lean_jvm else {}),
        **dict(conf or {}),
    }
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return register(spark)


def register(spark: Any) -> Any:
    """Route ``format("delta")`` reads and writes of this process to deltalog and apply the runtime
    settings of :data:`RECOMMENDED_CONF` to ``spark``; returns ``spark``. Safe to call repeatedly.

    Example:
        >>> register(spark).read.format("delta").load("/data/events").count()         # doctest: +SKIP
        1000
    """
    _install()
    from deltalog.spark.sql import install as install_sql

    install_sql()
    use_driver_python(spark)  # local mode: the Python functions shipped from now on run this interpreter
    log_dropped(_drop_delta_runtime_settings(spark))
    # deltalog's two Python data sources -- the streaming source and the ``delta`` provider of catalog tables --
    # are registered when first needed (a delta stream loaded; a catalog Delta table created or looked up), not
    # here: the first Python data source a JVM registers costs about 2 s (Spark scans the Python path for data
    # source plugins in a Python process of its own), which a job that never streams nor uses catalog tables
    # would pay at every start.
    for key in _RUNTIME_CONF:
        try:
            current = spark.conf.get(key, None)
        except Exception:
            current = None
        wanted = RECOMMENDED_CONF[key]
        if key.endswith("threshold"):
            try:
                if current is not None and int(current) >= int(wanted):
                    continue
            except ValueError:
                pass
        elif current is not None and str(current).lower() == wanted:
            continue
        spark.conf.set(key, wanted)
    return spark


def is_registered() -> bool:
    """True while the ``delta`` format is routed to deltalog.

    Example:
        >>> is_registered()
        False
    """
    return bool(_ORIGINALS)


def unregister() -> None:
    """Undo :func:`register`: restore the original reader and writer methods.

    Example:
        >>> unregister(); is_registered()
        False
    """
    with _LOCK:
        for (cls, name), original in _ORIGINALS.items():
            setattr(cls, name, original)
        _ORIGINALS.clear()


# ----------------------------------------------------------------------------------------- routing


def _classes() -> tuple[list[type], list[type]]:
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter

    readers: list[type] = [DataFrameReader]
    writers: list[type] = [DataFrameWriter]
    try:  # Spark Connect needs optional packages (grpcio, ...); without them only classic is routed
        from pyspark.sql.connect.readwriter import DataFrameReader as ConnectReader
        from pyspark.sql.connect.readwriter import DataFrameWriter as ConnectWriter
    except Exception:
        return readers, writers
    return [*readers, ConnectReader], [*writers, ConnectWriter]


def _stream_classes() -> tuple[list[type], list[type]]:
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    readers: list[type] = [DataStreamReader]
    writers: list[type] = [DataStreamWriter]
    try:
        from pyspark.sql.connect.streaming.readwriter import DataStreamReader as ConnectStreamReader
        from pyspark.sql.connect.streaming.readwriter import DataStreamWriter as ConnectStreamWriter
    except Exception:
        return readers, writers
    return [*readers, ConnectStreamReader], [*writers, ConnectStreamWriter]


def _is_delta(source: Any) -> bool:
    return isinstance(source, str) and source.strip().lower() == "delta"


def _with_spark_errors(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Callable[..., Any]:
    def wrapped(original: Callable[..., Any]) -> Callable[..., Any]:
        return spark_errors(make(original))

    return wrapped


def _patch(cls: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    original = getattr(cls, name, None)
    if original is None:
        raise AttributeError(f"deltalog cannot route the delta format: {cls.__module__}.{cls.__qualname__} has no "
                             f"method {name!r} in PySpark {compat.PYSPARK_VERSION} (supported: Spark 3.5 and 4.x)")
    _ORIGINALS[(cls, name)] = original
    wrapper = make(original)
    functools.update_wrapper(wrapper, original)
    setattr(cls, name, wrapper)


def _install() -> None:
    """Patch the reader and writer classes, all of them or (on any failure) none: a half-installed routing
    would send some ``delta`` calls to deltalog and others to a JVM that has no Delta."""
    recording = [("format", _recording_format), ("option", _recording_option), ("options", _recording_options)]
    patches: list[tuple[list[type], list[tuple[str, Callable[[Callable[..., Any]], Callable[..., Any]]]]]] = []
    with _LOCK:
        if _ORIGINALS:
            return
        readers, writers = _classes()
        stream_readers, stream_writers = _stream_classes()
        cluster_by = [("clusterBy", _recording_cluster_by)] if compat.CLUSTER_BY_WRITER else []
        patches = [
            (readers, [*recording, ("schema", _recording_schema), ("load", _routed_load)]),
            (writers, [*recording, ("mode", _recording_mode), ("partitionBy", _recording_partition_by),
                       *cluster_by, ("save", _routed_save)]),
            (stream_readers, [*recording, ("schema", _recording_schema), ("load", _routed_stream_load)]),
            (stream_writers, [*recording, ("outputMode", _recording_output_mode),
                              ("partitionBy", _deferred_stream_partition_by), ("foreachBatch", _recording_foreach),
                              ("foreach", _recording_foreach), ("start", _routed_start),
                              ("toTable", _deferred_to_table)]),
        ]
        try:
            for classes, methods in patches:
                for cls in classes:
                    for name, make in methods:
                        _patch(cls, name, make)
            from deltalog.spark.sql.routing import patches as catalog_patches

            for cls, name, make in catalog_patches():  # catalog tables: saveAsTable, spark.table, writeTo, ...
                _patch(cls, name, _with_spark_errors(make))
        except BaseException:
            for (cls, name), original in _ORIGINALS.items():
                setattr(cls, name, original)
            _ORIGINALS.clear()
            raise


def _recording_format(original: Callable[..., Any]) -> Callable[..., Any]:
    def format(self: Any, source: str) -> Any:
        recorded_state(self)["format"] = source
        return original(self, source)

    return format


def _recording_option(original: Callable[..., Any]) -> Callable[..., Any]:
    def option(self: Any, key: str, value: Any) -> Any:
        recorded_state(self)["options"][key] = value
        return original(self, key, value)

    return option


def _recording_options(original: Callable[..., Any]) -> Callable[..., Any]:
    def options(self: Any, **opts: Any) -> Any:
        recorded_state(self)["options"].update(opts)
        return original(self, **opts)

    return options


def _recording_schema(original: Callable[..., Any]) -> Callable[..., Any]:
    def schema(self: Any, schema: Any) -> Any:
        recorded_state(self)["schema"] = schema
        return original(self, schema)

    return schema


def _recording_mode(original: Callable[..., Any]) -> Callable[..., Any]:
    def mode(self: Any, saveMode: Any) -> Any:
        if saveMode is not None:
            recorded_state(self)["mode"] = saveMode
        return original(self, saveMode)

    return mode


def _recording_output_mode(original: Callable[..., Any]) -> Callable[..., Any]:
    def outputMode(self: Any, outputMode: str) -> Any:
        recorded_state(self)["mode"] = outputMode
        return original(self, outputMode)

    return outputMode


def _recording_foreach(original: Callable[..., Any]) -> Callable[..., Any]:
    """``foreachBatch`` / ``foreach``: Spark then ignores the format, and so does deltalog's routing."""

    def foreach(self: Any, f: Any) -> Any:
        recorded_state(self)["foreach"] = True
        return original(self, f)

    return foreach


def _recording_partition_by(original: Callable[..., Any]) -> Callable[..., Any]:
    def partitionBy(self: Any, *cols: Any) -> Any:
        flat = list(cols[0]) if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else list(cols)
        recorded_state(self)["partitionBy"] = flat
        return original(self, *cols)

    return partitionBy


def _deferred_stream_partition_by(original: Callable[..., Any]) -> Callable[..., Any]:
    """A stream writer's ``partitionBy`` is recorded and reaches Spark only when a non-Delta query starts
    (:func:`_routed_start`, :func:`_deferred_to_table`): Spark refuses ``foreachBatch`` (the Delta sink) on a
    writer that was ever given partitioning, and since 4.1 even ``partitionBy(None)`` counts as given."""

    def partitionBy(self: Any, *cols: Any) -> Any:
        flat = list(cols[0]) if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else list(cols)
        recorded_state(self)["partitionBy"] = flat
        return self

    return partitionBy


def _deferred_to_table(original: Callable[..., Any]) -> Callable[..., Any]:
    def toTable(self: Any, tableName: str, format: Any = None, outputMode: Any = None, partitionBy: Any = None,
                queryName: Any = None, **options: Any) -> Any:
        if partitionBy is None:
            partitionBy = recorded_state(self)["partitionBy"]
        return original(self, tableName, format, outputMode, partitionBy, queryName, **options)

    return toTable


def _recording_cluster_by(original: Callable[..., Any]) -> Callable[..., Any]:
    def clusterBy(self: Any, *cols: Any) -> Any:
        flat = list(cols[0]) if len(cols) == 1 and isinstance(cols[0], (list, tuple)) else list(cols)
        recorded_state(self)["clusterBy"] = flat
        return original(self, *cols)

    return clusterBy


def _check_read_schema(spark: Any, given: Any, df: Any) -> Any:
    """``df`` when the schema the reader was given (``given``: a DDL string or a ``StructType``; None when none
    was) is the table's (``df``'s), nullability aside, as delta-spark accepts it; otherwise delta-spark's error."""
    if given is not None:
        _same_schema(spark, given, df.schema)
    return df


def _same_schema(spark: Any, given: Any, table: Any) -> None:
    from deltalog.protocol.schema import bare_json

    wanted = spark.createDataFrame([], given).schema if isinstance(given, str) else given
    if bare_json(wanted.jsonValue()) != bare_json(table.jsonValue()):
        raise InvalidArgumentError(
            "[DELTA_UNSUPPORTED_SCHEMA_DURING_READ] Delta does not support specifying the schema at read time: "
            f"the table's schema is {table.simpleString()}, the schema given {wanted.simpleString()}; leave "
            ".schema(...) out (the table's schema is read from its log)"
        )


def _routed_load(original: Callable[..., Any]) -> Callable[..., Any]:
    def load(self: Any, path: Any = None, format: Any = None, schema: Any = None, **options: Any) -> Any:
        state = recorded_state(self)
        if not _is_delta(default_source(session_of_reader(self), format if format is not None else state["format"])):
            return original(self, path, format, schema, **options)
        from deltalog.spark.common.core import option_map
        from deltalog.spark.reads.scan import READ_OPTIONS, read

        given = schema if schema is not None else state["schema"]
        spark = session_of_reader(self)
        from deltalog.spark.reads.changes import is_change_feed_read, load_changes

        if is_change_feed_read({**state["options"], **options}):  # readChangeFeed: deltalog.spark.reads.changes
            return _check_read_schema(spark, given, load_changes(spark, path, {**state["options"], **options}))
        opts = option_map({**state["options"], **options}, READ_OPTIONS, what="Delta read")
        hadoop = {k: v for k, v in opts.items() if not k.startswith("delta.") and k not in READ_OPTIONS}
        opts = {k: v for k, v in opts.items() if k in READ_OPTIONS}
        target = path if path is not None else opts.get("path")
        if not isinstance(target, str):
            raise InvalidArgumentError(f"a Delta read needs exactly one table path, got {target!r}")
        return _check_read_schema(spark, given, read(
            spark,
            target,
            versionAsOf=opts.get("versionAsOf"),
            timestampAsOf=opts.get("timestampAsOf"),
            storage_options=hadoop or None,
        ))

    return spark_errors(load)


def _routed_stream_load(original: Callable[..., Any]) -> Callable[..., Any]:
    def load(self: Any, path: Any = None, format: Any = None, schema: Any = None, **options: Any) -> Any:
        state = recorded_state(self)
        if not _is_delta(default_source(session_of_reader(self), format if format is not None else state["format"])):
            return original(self, path, format, schema, **options)
        compat.require((4, 0), 'spark.readStream.format("delta") (the Delta streaming source)',
                       "has no Python streaming data sources (pyspark.sql.datasource) to build it on")
        from deltalog.spark.common.core import require_table, spark_schema
        from deltalog.spark.common.instants import session_instant
        from deltalog.spark.common.storage import storage_options_for
        from deltalog.spark.streaming import register_source
        from deltalog.spark.streaming.source import SOURCE_NAME, STORAGE_OPTION, StreamReadOptions, stream_fields

        given = schema if schema is not None else state["schema"]
        opts = StreamReadOptions.parse({**state["options"], **options}, path)  # fail here, not in a worker
        if opts.starting_timestamp is not None:  # no zone: the session's, as delta-spark (workers have none)
            at = session_instant(session_of_reader(self), opts.starting_timestamp, option="startingTimestamp")
            key = next(k for k in (*options, *state["options"]) if str(k).lower() == "startingtimestamp")
            options = {**options, key: at.isoformat() if isinstance(at, dt.datetime) else at}
        register_source(session_of_reader(self))
        storage = storage_options_for(opts.path, {**state["options"], **options}, spark=session_of_reader(self))
        require_table(opts.path, storage_options=storage, hint="; a stream reads an existing table: create it (or "
                      "write its first version) before starting the stream")  # not a worker's traceback at start
        if storage:  # the source's Python workers have no session: the options travel with the source
            options = {**options, STORAGE_OPTION: json.dumps(storage)}
        if given is None:
            return original(self, opts.path, SOURCE_NAME, None, **options)
        table_schema = spark_schema(stream_fields(opts.open_table().snapshot(), change_feed=opts.change_feed))
        _same_schema(session_of_reader(self), given, table_schema)
        return original(self, opts.path, SOURCE_NAME, table_schema, **options)  # the table's own nullability

    return spark_errors(load)


def _routed_start(original: Callable[..., Any]) -> Callable[..., Any]:
    def start(
        self: Any, path: Any = None, format: Any = None, outputMode: Any = None, partitionBy: Any = None,
        queryName: Any = None, **options: Any,
    ) -> Any:
        state = recorded_state(self)
        chosen = default_source(session_of_stream_writer(self), format if format is not None else state["format"])
        if not _is_delta(chosen) or state.get("foreach"):
            if partitionBy is None:
                partitionBy = state["partitionBy"]
            return original(self, path, format, outputMode, partitionBy, queryName, **options)
        from deltalog.spark.streaming.sink import sink_batch_function

        opts = {**state["options"], **options}
        target = path if path is not None else opts.get("path")
        if not isinstance(target, str):
            raise InvalidArgumentError(f"a Delta streaming sink needs a table path: start(path), got {target!r}")
        sink = sink_batch_function(
            target,
            checkpoint=next((v for k, v in opts.items() if k.lower() == "checkpointlocation"), None),
            output_mode=outputMode if outputMode is not None else state["mode"],
            partition_by=partitionBy if partitionBy is not None else state["partitionBy"],
            options={k: v for k, v in opts.items() if k.lower() not in ("path", "checkpointlocation")},
        )
        self.foreachBatch(sink)
        return original(self, None, None, outputMode, None, queryName, **options)

    return spark_errors(start)


def _routed_save(original: Callable[..., Any]) -> Callable[..., Any]:
    def save(
        self: Any, path: Any = None, format: Any = None, mode: Any = None, partitionBy: Any = None, **options: Any
    ) -> None:
        state = recorded_state(self)
        if not _is_delta(default_source(writer_dataframe(self).sparkSession,
                                        format if format is not None else state["format"])):
            return original(self, path, format, mode, partitionBy, **options)  # type: ignore[no-any-return]
        from deltalog.spark.writes.save import write

        opts = {**state["options"], **options}
        target = path if path is not None else opts.get("path")
        opts = {k: v for k, v in opts.items() if k.lower() != "path"}
        if not isinstance(target, str):
            raise InvalidArgumentError(f"a Delta write needs a table path, got {target!r}")
        parts = partitionBy if partitionBy is not None else state["partitionBy"]
        chosen = mode if mode is not None else state["mode"]
        write(writer_dataframe(self), target, mode=chosen, partitionBy=parts, clusterBy=state["clusterBy"], **opts)
        return None

    return spark_errors(save)


