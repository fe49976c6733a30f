"""Which PySpark deltalog runs on, and the few calls whose spelling differs between the versions it supports.

This is the only module of ``deltalog.spark`` that looks at ``pyspark.__version__``. Everything else asks it:
:data:`PYSPARK` (the running ``(major, minor)``), the feature flags below, and the helpers that paper over an
API a version lacks or spells differently (:func:`frame_from_arrow`, :func:`to_arrow`, :func:`try_cast`,
:func:`ansi_cast`, :func:`rebalance`, :func:`init_exception`, :func:`create_table_entry`, :func:`jvm_dataset`,
:func:`use_cached_data`, :func:`session_conf`, :func:`with_relation_schema`, :func:`quiet_call_sites`,
:func:`in_background`, :func:`observed_metrics`, :data:`EXCEPTION_MIXINS`,
:data:`DATAFRAME_MODULES`, :data:`COLUMN_NODES`).
A feature a version cannot have is refused through :func:`require`, whose error names the running version and
the one to upgrade to -- never a raw ``TypeError`` or ``AttributeError`` from deep inside.

Supported: Spark 3.5 (LTS), 4.0, 4.1, 4.2 and 4.3 (:data:`SUPPORTED`). What each version lacks:

- 3.5: no Python data sources (``pyspark.sql.datasource``), hence no streaming *source* and no ``delta`` provider
  Spark's ``CREATE TABLE`` accepts (catalog entries are made by :func:`create_table_entry` instead);
  ``PySparkException`` takes ``error_class=`` and has no ``getCondition()``; no
  ``createDataFrame(pyarrow.Table)``, ``Column.try_cast``, ``DataFrame.toArrow``, ``DataFrameWriter.clusterBy`` or
  ``spark.conf.getAll``; ``InheritableThread`` takes no ``session`` (Spark Connect needs it from 4.0);
  ``raise_error`` fails a job with a plain ``java.lang.RuntimeException``;
  a classic ``Column`` wraps a catalyst expression, not a ``ColumnNode``; ``DataFrame.hint`` takes no columns (a
  ``rebalance`` hint of column names fails); ``from_arrow_schema`` reads zone-less timestamps as ``timestamp``,
  4.x as ``timestamp_ntz`` (pass ``prefer_timestamp_ntz`` explicitly). Spark Connect on 3.5 is not supported
  beyond what its client happens to share with 4.x.
- up to 4.1: ``CacheManager.useCachedData`` takes the plan only (:func:`use_cached_data`).
- an ``Observation`` of a part of the plan Spark drops (a join's side it proves empty) is never filled: 3.5 hands
  over no values, 4.1 and later raise, 4.0's ``get`` waits forever (:func:`observed_metrics` never waits).
- from 4.0: every ``Column`` method and ``functions`` call records its Python call site in the JVM (DataFrame
  debugging, five Py4J round trips per call) unless ``spark.python.sql.dataFrameDebugging.enabled`` is off;
  :func:`quiet_call_sites` skips it while deltalog builds its own plans.
- 4.0 and 4.1: the Python streaming source has ``latestOffset()`` without a start offset or read limit
  (``pyspark.sql.streaming.datasource`` arrives in 4.2), so the source applies its own admission limits.
- up to 4.1: no geometry / geography columns (``GeometryType`` arrives in 4.1, Spark's parquet reader and writer
  take it from 4.2): tables with them are refused by :func:`require_geospatial`.

May import: pyspark, pyarrow, :mod:`deltalog.errors`.

Example:
    >>> from deltalog.spark.common import compat                                     # doctest: +SKIP
    >>> compat.PYSPARK >= (4, 0), compat.PYTHON_DATA_SOURCES                          # doctest: +SKIP
    (True, True)
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from deltalog.errors import DeltaError

__all__ = [
    "CLUSTER_BY_WRITER", "COLUMN_NODES", "DATAFRAME_MODULES", "EXCEPTION_MIXINS", "GEOSPATIAL",
    "PARQUET_TYPE_WIDENING", "PARQUET_VOID", "PYSPARK", "PYSPARK_VERSION", "PYTHON_DATA_SOURCES", "STREAM_READ_LIMITS",
    "SUPPORTED", "Background", "UnsupportedSparkVersionError", "ansi_cast", "array_literal", "arrow_schema_utc",
    "create_table_entry", "frame_from_arrow", "in_background", "init_exception", "jvm_dataset", "quiet_call_sites",
    "rebalance", "require", "require_geospatial", "session_conf", "to_arrow", "tree_string", "try_cast",
    "use_cached_data", "with_relation_schema",
]

#: The PySpark release running, as installed (``"4.3.0"``).
def _installed() -> str:
    try:  # not ``import pyspark``: ``import deltalog.spark`` must work (and say what is missing later) without it
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return "0.0"


PYSPARK_VERSION: str = _installed()


def _minor(text: str) -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", text)
    if found is None:  # pragma: no cover - every PySpark release has one
        raise ImportError(f"deltalog cannot read the PySpark version {text!r}")
    return int(found.group(1)), int(found.group(2))


#: The running PySpark's ``(major, minor)``.
PYSPARK: tuple[int, int] = _minor(PYSPARK_VERSION)
#: The Spark minor versions deltalog is tested on (CI runs a lane on each).
SUPPORTED: tuple[tuple[int, int], ...] = ((3, 5), (4, 0), (4, 1), (4, 2), (4, 3))
#: Python data sources (``pyspark.sql.datasource``): the streaming source and a ``delta`` provider need them.
PYTHON_DATA_SOURCES: bool = PYSPARK >= (4, 0)
#: The streaming source API with read limits (``latestOffset(start, limit)``, ``pyspark.sql.streaming.datasource``).
STREAM_READ_LIMITS: bool = PYSPARK >= (4, 2)
#: ``DataFrameWriter.clusterBy`` and ``DataFrameWriterV2.clusterBy`` exist.
CLUSTER_BY_WRITER: bool = PYSPARK >= (4, 0)
#: ``GeometryType`` / ``GeographyType`` columns that Spark's parquet reader and writer take.
GEOSPATIAL: bool = PYSPARK >= (4, 2)
#: Spark's parquet writer takes ``void`` (``NullType``) columns (3.5 refuses them when it plans the write).
PARQUET_VOID: bool = PYSPARK >= (4, 0)
#: Spark's parquet scan reads a file's narrower type as the widened one of the read schema (Delta type widening).
PARQUET_TYPE_WIDENING: bool = PYSPARK >= (4, 0)
#: A classic ``Column`` holds a ``ColumnNode`` tree (``column._jc.node()``); before 4.0 a catalyst ``Expression``
#: (``column._jc.expr()``), where comparisons are classes of their own (``GreaterThan``), not functions.
COLUMN_NODES: bool = PYSPARK >= (4, 0)
#: The modules of PySpark's own concrete ``DataFrame`` classes (classic, then Connect).
DATAFRAME_MODULES: tuple[str, str] = (
    "pyspark.sql.classic.dataframe" if PYSPARK >= (4, 0) else "pyspark.sql.dataframe", "pyspark.sql.connect.dataframe")


class UnsupportedSparkVersionError(DeltaError, NotImplementedError):
    """A feature the running Spark version cannot provide without a jar; the message names the version and the
    Spark release to upgrade to (and ``instead``, what works on this version, when given).

    Example:
        >>> raise UnsupportedSparkVersionError("the streaming source", (4, 0))        # doctest: +SKIP
    """

    def __init__(self, feature: str, needs: tuple[int, int], how: str = "", instead: str = "") -> None:
        need = f"{needs[0]}.{needs[1]}"
        super().__init__(
            f"[DELTA_UNSUPPORTED_SPARK_VERSION] {feature} needs Spark {need} or later: this session runs PySpark "
            f"{PYSPARK_VERSION}, whose Python API {how or 'does not offer what it is built on'}. Upgrade pyspark "
            f"to {need} or later (pip install 'pyspark>={need}')" + (f"; {instead}" if instead else "") + ".")
        self.feature = feature
        self.needs = needs


def require(needs: tuple[int, int], feature: str, how: str = "", instead: str = "") -> None:
    """Refuse ``feature`` unless the running PySpark is at least ``needs`` (see
    :class:`UnsupportedSparkVersionError` for ``how`` and ``instead``).

    Example:
        >>> require((4, 0), "the streaming source", "has no Python data sources")      # doctest: +SKIP
    """
    if needs > PYSPARK:
        raise UnsupportedSparkVersionError(feature, needs, how, instead)


def require_geospatial(column: str, type_name: str) -> None:
    """Refuse a ``geometry`` / ``geography`` column (named, with its Delta type) unless the running Spark reads
    and writes such columns (:data:`GEOSPATIAL`).

    Example:
        >>> require_geospatial("g", "geometry(OGC:CRS84)")                              # doctest: +SKIP
    """
    if not GEOSPATIAL:
        raise UnsupportedSparkVersionError(
            f"the {type_name} column {column!r}", (4, 2),
            "has no geometry and geography types its parquet reader and writer take (the types arrive in 4.1, "
            "their parquet support in 4.2)", "the kernel reads the table with its geospatial values as WKB: "
            "deltalog.Table(path).snapshot().to_arrow()")


def init_exception(exc: BaseException, message: str, condition: str | None) -> None:
    """Run ``PySparkException.__init__`` on ``exc`` with ``message`` and error ``condition`` (3.5 names it
    ``error_class`` and takes it only without a message; 4.x ``errorClass``, with or without one).

    Example:
        >>> init_exception(new, "no such table", "DELTA_TABLE_NOT_FOUND")              # doctest: +SKIP
        >>> str(new)                                                                    # doctest: +SKIP
        '[DELTA_TABLE_NOT_FOUND] no such table'
    """
    from pyspark.errors import PySparkException

    if PYSPARK >= (4, 0):
        PySparkException.__init__(exc, message, condition)  # type: ignore[arg-type]  # positional: errorClass
        return
    PySparkException.__init__(exc, message)  # type: ignore[arg-type]
    state: Any = exc
    state.error_class = condition  # what 3.5's getErrorClass() and __str__ read


class _Methods40:
    """4.0's methods of ``PySparkException`` on PySpark 3.5's, which has ``getErrorClass()`` only: deltalog's
    converted errors answer ``getCondition()``, ``getMessage()`` and ``getQueryContext()`` on every version."""

    def getCondition(self) -> str | None:
        return getattr(self, "error_class", None)

    def getMessage(self) -> str:
        return f"[{self.getCondition()}] {getattr(self, 'message', '')}"

    def getQueryContext(self) -> list[Any]:
        return []


#: Extra bases of deltalog's converted PySpark exceptions (4.0's methods on 3.5; none on 4.x).
EXCEPTION_MIXINS: tuple[type, ...] = () if PYSPARK >= (4, 0) else (_Methods40,)


def tree_string(struct: Any) -> str:
    """Spark's tree of a ``StructType`` (``root``, then `` |-- name: type (nullable = ...)`` per field, nested
    fields indented), as the JVM prints it in error messages; PySpark 3.5's ``StructType`` cannot print it.

    Example:
        >>> from pyspark.sql.types import StructType                                     # doctest: +SKIP
        >>> print(tree_string(StructType.fromDDL("c1 INT")), end="")                      # doctest: +SKIP
        root
         |-- c1: integer (nullable = true)
    """
    if PYSPARK >= (4, 0):
        return str(struct.treeString())
    lines = ["root"]
    _tree_branch(struct, " |", lines)
    return "\n".join(lines) + "\n"


def _tree_type(t: Any) -> str:
    from pyspark.sql.types import DecimalType

    return f"decimal({t.precision},{t.scale})" if isinstance(t, DecimalType) else str(t.typeName())


def _tree_branch(t: Any, prefix: str, lines: list[str]) -> None:
    from pyspark.sql.types import ArrayType, MapType, StructType

    deeper = prefix + "    |"
    if isinstance(t, StructType):
        for f in t.fields:
            lines.append(f"{prefix}-- {f.name}: {_tree_type(f.dataType)} (nullable = {str(f.nullable).lower()})")
            _tree_branch(f.dataType, deeper, lines)
    elif isinstance(t, ArrayType):
        lines.append(f"{prefix}-- element: {_tree_type(t.elementType)} (containsNull = {str(t.containsNull).lower()})")
        _tree_branch(t.elementType, deeper, lines)
    elif isinstance(t, MapType):
        lines.append(f"{prefix}-- key: {_tree_type(t.keyType)}")
        _tree_branch(t.keyType, deeper, lines)
        lines.append(f"{prefix}-- value: {_tree_type(t.valueType)} "
                     f"(valueContainsNull = {str(t.valueContainsNull).lower()})")
        _tree_branch(t.valueType, deeper, lines)


def frame_from_arrow(spark: Any, table: pa.Table, schema: Any = None) -> Any:
    """A DataFrame holding ``table`` (with Spark ``schema``, a ``StructType``, if given): ``createDataFrame(table)``
    on 4.x; on 3.5, which takes no Arrow table, the batches go to the JVM as 4.x sends them: cast to the Arrow
    form of the schema, timestamps without a zone read in the session's zone when the column is a ``timestamp``.

    Example:
        >>> frame_from_arrow(spark, pa.table({"id": [1, 2]})).count()                   # doctest: +SKIP
        2
    """
    if PYSPARK >= (4, 0):
        return spark.createDataFrame(table) if schema is None else spark.createDataFrame(table, schema=schema)
    return _frame_from_arrow_35(spark, table, schema)


def metrics_row(spark: Any, names: Sequence[str], values: Sequence[int]) -> Any:
    """A one-row DataFrame of nullable ``bigint`` columns ``names`` holding ``values`` (a command's metrics, as
    delta-spark's commands return them). On a classic session it is one SQL statement run by the JVM session
    (inline rows, a second one of nulls making the columns nullable, then cut off): about 2 ms, against 5-6 ms
    for :func:`frame_from_arrow`, which Spark Connect gets.

    Example:
        >>> metrics_row(spark, ["a", "b"], [1, 2]).collect()                             # doctest: +SKIP
        [Row(a=1, b=2)]
    """
    if not names or len(names) != len(values):
        raise ValueError(f"metrics_row takes one value per column: {len(names)} names, {len(values)} values")
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return frame_from_arrow(spark, pa.table({n: pa.array([int(v)], pa.int64()) for n, v in zip(names, values)}))
    from pyspark.sql import DataFrame

    row = ", ".join(f"CAST({int(v)} AS BIGINT)" for v in values)
    nulls = ", ".join("NULL" for _ in values)
    columns = ", ".join("`" + n.replace("`", "``") + "`" for n in names)
    return DataFrame(jsession.sql(f"SELECT * FROM VALUES ({row}), ({nulls}) AS t({columns}) LIMIT 1"), spark)


def _frame_from_arrow_35(spark: Any, table: pa.Table, schema: Any) -> Any:
    from pyspark.sql import DataFrame
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
    from pyspark.sql.types import StructType

    if schema is None:
        schema = from_arrow_schema(table.schema)
    if not isinstance(schema, StructType):
        raise TypeError(f"frame_from_arrow takes a StructType schema, got {type(schema).__name__}")
    if not schema.fields:  # no columns: only the row count
        return spark.range(table.num_rows).select()
    if len(schema.fields) != table.num_columns:
        raise ValueError(f"the schema has {len(schema.fields)} columns, the Arrow table {table.num_columns}")
    zone = str(spark.conf.get("spark.sql.session.timeZone"))
    target = to_arrow_schema(schema)
    columns = [_localized(c, f.dataType, zone).cast(t.type) for c, f, t in zip(table.columns, schema.fields, target)]
    table = pa.Table.from_arrays(columns, schema=target)
    step = int(spark._jconf.arrowMaxRecordsPerBatch())
    batches = table.to_batches(max_chunksize=step if step > 0 else None) or [pa.RecordBatch.from_pylist([], target)]
    jvm = spark._jvm
    jiter = spark._sc._serialize_to_jvm(
        batches, ArrowStreamSerializer(),
        lambda name: jvm.PythonSQLUtils.readArrowStreamFromFile(name),
        lambda: jvm.ArrowIteratorServer())
    df = DataFrame(jvm.PythonSQLUtils.toDataFrame(jiter, schema.json(), spark._jsparkSession), spark)
    df._schema = schema
    return df


def _localized(array: Any, dtype: Any, zone: str) -> Any:
    """``array`` with nanoseconds floored to microseconds and zone-less timestamps of Spark ``timestamp`` columns
    read in ``zone``, at every depth (what 4.x's ``createDataFrame(table)`` does before its cast)."""
    import pyarrow.compute as pc
    from pyspark.sql.types import ArrayType, MapType, StructType, TimestampType

    kind = array.type
    if isinstance(array, pa.ChunkedArray):
        if not (pa.types.is_nested(kind) or pa.types.is_timestamp(kind)):
            return array
        return pa.chunked_array([_localized(c, dtype, zone) for c in array.chunks]) if array.chunks else array
    if pa.types.is_timestamp(kind):
        if kind.unit == "ns":
            array = pc.floor_temporal(array, unit="microsecond").cast(pa.timestamp("us", kind.tz))
        if kind.tz is None and isinstance(dtype, TimestampType):
            array = pc.assume_timezone(array, zone)
        return array
    mask = array.is_null() if array.null_count else None
    if pa.types.is_map(kind) and isinstance(dtype, MapType):
        keys = _localized(array.keys, dtype.keyType, zone)
        items = _localized(array.items, dtype.valueType, zone)
        return pa.MapArray.from_arrays(array.offsets, keys, items, mask=mask)
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and isinstance(dtype, ArrayType):
        values = _localized(array.values, dtype.elementType, zone)
        return type(array).from_arrays(array.offsets, values, mask=mask)
    if pa.types.is_struct(kind) and isinstance(dtype, StructType):
        children = [_localized(array.field(i), f.dataType, zone) for i, f in enumerate(dtype.fields)]
        return pa.StructArray.from_arrays(children, names=[kind.field(i).name for i in range(kind.num_fields)],
                                          mask=mask)
    return array


class Background:
    """A call running on a PySpark thread that inherits the caller's job group, tags and local properties
    (:func:`in_background`); :meth:`result` waits for it and returns its value or raises its exception."""

    def __init__(self, spark: Any, call: Callable[[], Any]) -> None:
        from pyspark import InheritableThread

        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = call()
            except BaseException as exc:  # handed to the waiting caller
                self._error = exc

        kwargs = {"session": spark} if PYSPARK >= (4, 0) else {}
        self._thread = InheritableThread(run, daemon=True, **kwargs)
        self._thread.start()

    def result(self) -> Any:
        """The call's value once it has returned (its exception, raised here, if it failed)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def in_background(spark: Any, call: Callable[[], Any]) -> Background:
    """Start ``call()`` (Spark jobs, typically) beside the caller, which goes on planning; the thread inherits
    the caller's Spark local properties (``pyspark.InheritableThread``, whose Spark Connect form wants the
    session from 4.0 on).

    Example:
        >>> job = in_background(spark, lambda: spark.range(10).count())               # doctest: +SKIP
        >>> job.result()                                                                # doctest: +SKIP
        10
    """
    return Background(spark, call)


def observed_metrics(observation: Any, *, within: float = 0.25) -> dict[str, Any] | None:
    """The values ``observation`` (a ``pyspark.sql.Observation``) collected, once the job that ran it has ended;
    ``None`` when it has none: Spark dropped the observed part of the plan (a join's side proved empty: 3.5
    then fills in nothing, 4.1 and later fail ``get`` and 4.0's ``get`` never returns), or no values came
    within ``within`` seconds, or Spark Connect. Never waits longer than that.

    Example:
        >>> observed_metrics(obs)                                                    # doctest: +SKIP
        {'n': 1000}
    """
    import time

    jo = getattr(observation, "_jo", None)
    if jo is None:
        return None
    deadline = time.monotonic() + within
    try:
        future = jo.future()
        while not future.isCompleted():
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.002)
        values = observation_values(observation)
    except Exception:  # 4.1 and later: a dropped observation's values fail to convert
        return None
    return values or None


def observation_values(observation: Any) -> dict[str, Any]:
    """``observation.get`` (a ``pyspark.sql.Observation`` whose job has run) as a ``dict``. PySpark 3.5 walks
    the JVM's map entry by entry (10-17 ms for two values, measured 2026-12-04); here its keys come as one array
    and each value with one call (1-3 ms). 4.0 and later hand over the whole row at once.

    Example:
        >>> observation_values(obs)                                                  # doctest: +SKIP
        {'n': 1000}
    """
    jo = getattr(observation, "_jo", None)
    if PYSPARK >= (4, 0) or jo is None:
        return dict(observation.get)
    jmap = jo.getAsJava()
    return {str(k): jmap.get(k) for k in list(jmap.keySet().toArray())}


def to_arrow(df: Any) -> pa.Table:
    """``df`` collected as a ``pyarrow.Table`` (``DataFrame.toArrow`` arrived in 4.0; timestamps in UTC either way).

    Example:
        >>> to_arrow(spark.range(3)).num_rows                                            # doctest: +SKIP
        3
    """
    if PYSPARK >= (4, 0):
        return df.toArrow()
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(df.schema)
    batches = df._collect_as_arrow()
    return pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()


def arrow_schema_utc(struct: Any) -> pa.Schema:
    """The Spark ``StructType`` ``struct`` as the Arrow schema Spark wants a Python source's batches in, timestamps
    in UTC: ``to_arrow_schema`` takes the zone as ``timezone=`` from 4.2 on and has UTC as its default before
    (its parameter is looked for, so a release that moves it again is caught here).

    Example:
        >>> arrow_schema_utc(StructType.fromJson({"type": "struct", "fields": []}))      # doctest: +SKIP
        <BLANKLINE>
    """
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(struct, timezone="UTC")
    return to_arrow_schema(struct)


def try_cast(column: Any, data_type: Any) -> Any:
    """``column`` cast to ``data_type`` (a ``DataType`` or a DDL type string), null where the value does not fit
    (``Column.try_cast`` arrived in 4.0; on 3.5 the same TRY cast is built as a JVM ``Cast`` expression).

    Example:
        >>> try_cast(F.lit(300), "tinyint")                                              # doctest: +SKIP
        Column<'CAST(300 AS TINYINT)'>
    """
    return column.try_cast(data_type) if PYSPARK >= (4, 0) else _jvm_cast(column, data_type, "TRY")


def ansi_cast(column: Any, data_type: Any) -> Any:
    """``column`` cast to ``data_type`` as Spark's ``INSERT`` casts under its default store assignment policy: a
    value that does not fit fails the job (``CAST_OVERFLOW``, ...). 4.x's cast does (ANSI is its default); 3.5's
    wraps or nulls it, so there the cast is a JVM ``Cast`` in ANSI mode.

    Example:
        >>> ansi_cast(F.lit(5000000000), "int")                                          # doctest: +SKIP
        Column<'CAST(5000000000 AS INT)'>
    """
    return column.cast(data_type) if PYSPARK >= (4, 0) else _jvm_cast(column, data_type, "ANSI")


def _jvm_cast(column: Any, data_type: Any, mode: str) -> Any:
    from pyspark import SparkContext
    from pyspark.sql import Column
    from pyspark.sql.types import DataType, _parse_datatype_string

    jc, sc = getattr(column, "_jc", None), SparkContext._active_spark_context
    if jc is None:
        raise UnsupportedSparkVersionError(f"a {mode} cast of a Spark Connect column", (4, 0),
                                           "has no Column.try_cast", "or use a classic (non-Connect) session")
    if sc is None or sc._jvm is None:
        raise RuntimeError("a cast of a column needs an active SparkContext")
    jvm: Any = sc._jvm
    dtype = data_type if isinstance(data_type, DataType) else _parse_datatype_string(str(data_type))
    expressions = jvm.org.apache.spark.sql.catalyst.expressions
    expr = expressions.Cast(jc.expr(), jvm.org.apache.spark.sql.types.DataType.fromJson(dtype.json()),
                            jvm.scala.Option.empty(), getattr(expressions.EvalMode, mode)())
    return Column(jvm.org.apache.spark.sql.Column(expr))


def array_literal(spark: Any, values: Any) -> Any | None:
    """A ``Column`` holding ``values`` (a 1-d numpy array of ``int32`` or ``int64``) as one constant
    ``array<int>`` / ``array<bigint>`` of no nulls, built in the JVM from its bytes (Spark's ``UnsafeArrayData``
    layout: one Py4J call carries the data, and each task deserializes the constant as one byte block, where
    an array parsed from SQL text is a boxed object per element); ``None`` for a Spark Connect session, which has
    no JVM to build it in, or for one whose JVM refuses the classes through Py4J. 4.x makes a ``Column`` of an
    expression in ``classic.ExpressionUtils``, 3.5 by its constructor.

    Example:
        >>> import numpy as np                                                           # doctest: +SKIP
        >>> spark.range(1).select(array_literal(spark, np.array([7, 9]))[1]).first()[0]  # doctest: +SKIP
        9
    """
    import numpy as np
    from pyspark.sql import Column

    jvm = getattr(spark, "_jvm", None)  # Connect sessions have none
    if jvm is None or getattr(spark, "_jsparkSession", None) is None:
        return None
    array = np.ascontiguousarray(values)
    if array.ndim != 1 or array.dtype not in (np.int32, np.int64):
        raise TypeError(f"array_literal takes a 1-d int32 or int64 array, not {array.dtype} of shape {array.shape}")
    n = int(array.size)
    header = np.zeros(1 + (n + 63) // 64, "<i8")  # element count, then one null bit per element (none set)
    header[0] = n
    body = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    data = bytearray(header.tobytes() + body + b"\0" * (-len(body) % 8))  # values padded to whole words
    element = "long" if array.dtype == np.int64 else "integer"
    try:
        unsafe = jvm.org.apache.spark.sql.catalyst.expressions.UnsafeArrayData()
        unsafe.pointTo(data, jvm.org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET, len(data))
        dtype = jvm.org.apache.spark.sql.types.DataType.fromJson(
            f'{{"type":"array","elementType":"{element}","containsNull":false}}')
        literal = jvm.org.apache.spark.sql.catalyst.expressions.Literal(unsafe, dtype)
        if PYSPARK >= (4, 0):
            return Column(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(literal))
        return Column(jvm.org.apache.spark.sql.Column(literal))
    except Exception:  # a JVM that refuses these classes through Py4J (an allow-list): the caller's other way
        return None


def rebalance(df: Any, columns: list[str]) -> Any:
    """``df`` with Spark's ``rebalance`` hint on ``columns`` (names; none: round-robin). 4.x takes the names in
    ``DataFrame.hint``; 3.5 wants columns there, which its Python ``hint`` refuses, so the hint goes through the
    JVM (Spark Connect on 3.5: a repartition by the columns, without adaptive execution's skew splitting).

    Example:
        >>> rebalance(df, ["day"])                                                       # doctest: +SKIP
        DataFrame[id: bigint, day: date]
    """
    names = ["`" + c.replace("`", "``") + "`" for c in columns]  # quoted: a name may hold a dot
    if PYSPARK >= (4, 0) or not columns:
        return df.hint("rebalance", *names)
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    cols: list[Any] = [F.col(n) for n in names]
    if getattr(df, "_jdf", None) is None:
        return df.repartition(*cols)
    spark = df.sparkSession
    jvm = spark._jvm  # the hint node built with the columns' expressions (the JVM's varargs hint takes no Seq)
    hint = jvm.org.apache.spark.sql.catalyst.plans.logical.UnresolvedHint(
        "rebalance", df._jseq([c._jc.expr() for c in cols]), df._jdf.queryExecution().logical())
    return DataFrame(jvm_dataset(jvm).ofRows(spark._jsparkSession, hint), spark)


def create_table_entry(spark: Any, statement: str, provider: str) -> None:
    """Create the session catalog entry that ``statement`` (``CREATE TABLE ... USING <a built-in provider>``)
    describes, but with ``provider`` as its provider, which Spark never looks up: for Spark 3.5, where no Python
    data source can give ``delta`` a name Spark's ``CREATE TABLE`` would accept. Spark parses and analyses the
    statement (names, columns, partitioning, location, comment and properties as ``CREATE TABLE`` takes them);
    the table it would create is created with the provider swapped, and nothing is run.

    Example:
        >>> create_table_entry(spark, "CREATE TABLE t (id BIGINT) USING parquet", "delta")   # doctest: +SKIP
        >>> spark.sql("DESCRIBE TABLE EXTENDED t").where("col_name = 'Provider'").first()[1]  # doctest: +SKIP
        'delta'
    """
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        raise UnsupportedSparkVersionError(
            f"a catalog table USING {provider} over Spark Connect", (4, 0),
            "has no Python data sources to register the provider with",
            "or use a classic session, or path tables (delta.`/path/to/table`)")
    state = jsession.sessionState()
    command = state.analyzer().execute(state.sqlParser().parsePlan(statement))
    if command.getClass().getSimpleName() != "CreateDataSourceTableCommand":
        raise UnsupportedSparkVersionError(
            f"a table USING {provider} outside the session catalog (spark_catalog)", (4, 0),
            "has no Python data sources to register the provider with",
            "or create it in the session catalog, or use path tables (delta.`/path/to/table`)")
    table = command.table()
    for name, value in (("provider", spark._jvm.scala.Some(provider)), ("tracksPartitionsInCatalog", False)):
        found = table.getClass().getDeclaredField(name)
        found.setAccessible(True)
        found.set(table, value)
    state.catalog().createTable(table, False, True)  # not if it exists; a managed location must be empty


def jvm_dataset(jvm: Any) -> Any:
    """The JVM class whose ``ofRows(session, plan)`` makes a classic DataFrame of a logical plan (``Dataset``,
    ``classic.Dataset`` since 4.0).

    Example:
        >>> DataFrame(jvm_dataset(spark._jvm).ofRows(spark._jsparkSession, plan), spark)  # doctest: +SKIP
    """
    found = _DATASETS.get(id(jvm))
    if found is not None and found[0] is jvm:
        return found[1]
    sql = jvm.org.apache.spark.sql  # a Py4J round trip per package name: looked up once per JVM view
    cls = sql.classic.Dataset if PYSPARK >= (4, 0) else sql.Dataset
    _DATASETS[id(jvm)] = (jvm, cls)
    return cls


_DATASETS: dict[int, tuple[Any, Any]] = {}


def with_relation_schema(spark: Any, frame: Any, schema: Any) -> Any:
    """``frame`` -- a classic session's bare parquet scan (``spark.read.schema(...).parquet(...)``) -- with its
    relation's columns declared as ``schema`` says (a ``pyspark.sql.types.StructType`` of the same columns): the
    nullability (nested too) and field metadata of the table, as delta-spark's relation over the log declares
    them. Spark's ``DataFrameReader`` makes every file-source column nullable and the reader's schema is all it
    takes; the relation Spark built (file index, format, options, partition columns) is kept and only its data
    and partition schemas are replaced, so column pruning, partition pruning and filter pushdown work as before.
    ``frame`` unchanged when it is not such a scan (Spark Connect, an Arrow-task scan, another Spark's
    internals).

    Example:
        >>> strict = StructType.fromDDL("id long not null")                               # doctest: +SKIP
        >>> with_relation_schema(spark, spark.read.schema(strict).parquet(p), strict).schema  # doctest: +SKIP
        StructType([StructField('id', LongType(), False)])
    """
    try:
        jsession = spark._jsparkSession
        plan = frame._jdf.queryExecution().analyzed()
        if str(plan.getClass().getSimpleName()) != "LogicalRelation":
            return frame
        relation = plan.relation()
        if str(relation.getClass().getSimpleName()) != "HadoopFsRelation":
            return frame
        by_name = {f.name: f for f in schema.fields}
        parts = [str(n) for n in relation.partitionSchema().fieldNames()]
        data = [str(n) for n in relation.dataSchema().fieldNames()]
        if {*parts, *data} != set(by_name):  # a scan of the streaming sink's log has the partitions in both
            return frame
        from pyspark.sql import DataFrame
        from pyspark.sql.types import StructType

        def declared(names: list[str]) -> Any:
            return jsession.parseDataType(StructType([by_name[n] for n in names]).json())

        rebuilt = spark._jvm.org.apache.spark.sql.execution.datasources.HadoopFsRelation(
            relation.location(), declared(parts), declared(data), relation.bucketSpec(), relation.fileFormat(),
            relation.options(), jsession)
        return DataFrame(jsession.baseRelationToDataFrame(rebuilt), spark)
    except Exception:  # py4j errors on another Spark's internals: Spark's own (nullable) relation
        return frame


def use_cached_data(manager: Any, plan: Any) -> Any:
    """``plan`` with the parts Spark's ``CacheManager`` holds data for replaced by the cached data
    (``useCachedData``: one argument up to 4.1; later a second one, which any cached entry may serve by default).

    Example:
        >>> use_cached_data(jsession.sharedState().cacheManager(), jdf.queryExecution().analyzed())  # doctest: +SKIP
    """
    try:
        every = getattr(manager, "useCachedData$default$2")()
    except Exception:  # py4j's "does not exist": a Spark whose useCachedData takes the plan only
        return manager.useCachedData(plan)
    return manager.useCachedData(plan, every)


def session_conf(spark: Any) -> dict[str, str]:
    """Every setting of ``spark`` (``spark.conf.getAll`` arrived in 4.0; on 3.5 the JVM's map, in one py4j call;
    empty for a Spark Connect session of 3.5).

    Example:
        >>> session_conf(spark)["spark.sql.session.timeZone"]                           # doctest: +SKIP
        'UTC'
    """
    if PYSPARK >= (4, 0):
        every = spark.conf.getAll
        return {str(k): str(v) for k, v in dict(every() if callable(every) else every).items()}
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return {}
    import json

    jvm = spark._jvm
    jmap = jvm.scala.collection.JavaConverters.mapAsJavaMap(jsession.conf().getAll())
    found: dict[str, str] = json.loads(jvm.com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(jmap))
    return found


def quiet_call_sites(active: Callable[[], bool]) -> None:
    """Skip PySpark's DataFrame call-site capture on threads for which ``active()`` is true (deltalog passes "inside
    one of its API calls"); every other thread, and the user's own columns, keep it.

    From 4.0 each ``Column`` method and ``functions`` call made with DataFrame debugging on (the default) walks the
    Python stack and makes five Py4J round trips to record where it was called. For the columns deltalog builds
    inside a MERGE that is about 250 ms of a small MERGE's planning (measured 2026-12-03: 1,000 into 10,000 rows,
    planning 529 ms against 270 ms without it), and the call sites it records point into deltalog, not the user's
    code. Installed once per process; a no-op on a PySpark without the capture (3.5).

    Example:
        >>> quiet_call_sites(within_api_call)                                       # doctest: +SKIP
    """
    try:
        from pyspark.errors import utils as pyspark_errors
    except ImportError:  # pragma: no cover - pyspark is a dependency of deltalog.spark
        return
    original = getattr(pyspark_errors, "is_debugging_enabled", None)
    if original is None or getattr(original, "__deltalog_quiet__", False):
        return

    def is_debugging_enabled() -> bool:
        return False if active() else bool(original())

    is_debugging_enabled.__deltalog_quiet__ = True  # type: ignore[attr-defined]
    is_debugging_enabled.__wrapped__ = original  # type: ignore[attr-defined]
    pyspark_errors.is_debugging_enabled = is_debugging_enabled
