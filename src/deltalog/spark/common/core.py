"""Helpers shared by the Spark read, write and table modules (no public API).

* :func:`open_table` / :func:`load_snapshot` -- the kernel's table and snapshot, with errors worded the
  way delta-spark words them (``[DELTA_MISSING_DELTA_TABLE] ...``), still deltalog exception classes;
* :func:`spark_file_uri` -- the exact ``file:/...`` string Spark reports in ``_metadata.file_path``;
* :func:`spark_type` / :func:`physical_type` -- Delta types as ``pyspark.sql.types`` objects;
* :func:`option_map` -- case-insensitive option names (Spark's options are case-insensitive);
* :func:`map_in_arrow` -- ``DataFrame.mapInArrow`` that works with column names holding dots.

Example:
    >>> spark_file_uri("/data/t/p=a b/x.parquet")
    'file:/data/t/p=a%20b/x.parquet'
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deltalog.errors import (
    InvalidArgumentError,
    TableNotFoundError,
    TimestampAfterLatestError,
    TimestampBeforeEarliestError,
    VersionNotFoundError,
)
from deltalog.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    StructField,
    StructType,
    contains_geo,
    geo_spec,
    parse_data_type,
    physical_name,
)
from deltalog.spark.common.compat import DATAFRAME_MODULES, frame_from_arrow, require_geospatial, use_cached_data
from deltalog.storage import LocalLogStore
from deltalog.storage.locations import StoreRef
from deltalog.storage.object_store import ObjectLogStore
from deltalog.table import Table

if TYPE_CHECKING:
    from deltalog.snapshot import Snapshot

# Characters java.net.URI leaves unquoted in a path (besides letters, digits and non-ASCII characters).
_URI_PATH_SAFE = frozenset("/_-!.~'()*,;:$&+=@")


def spark_file_uri(path: str) -> str:
    """``file:`` + the path quoted as Hadoop's ``Path.toUri().toString()`` does (what ``_metadata.file_path``
    holds): ASCII characters outside URI path syntax become ``%XX``; non-ASCII characters stay.

    Example:
        >>> spark_file_uri("/t/p=a%2Fb/ü#1.parquet")
        'file:/t/p=a%252Fb/ü%231.parquet'
    """
    out = []
    for ch in os.path.abspath(path):
        if (ch.isascii() and not (ch.isalnum() or ch in _URI_PATH_SAFE)) or not ch.isprintable():
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "file:" + "".join(out)


def quoted(name: str) -> str:
    """A column name (or one part of a nested name) quoted for Spark SQL: backticks, inner backticks doubled.

    Example:
        >>> quoted("a`b")
        '`a``b`'
    """
    return "`" + name.replace("`", "``") + "`"


def open_table(
    path: Any, *, options: Mapping[str, Any] | None = None, storage_options: Mapping[str, Any] | None = None
) -> Table:
    """A kernel :class:`~deltalog.Table` for a local path, ``file:`` URI or object-store URI (``s3://``,
    ``s3a://``, ``abfss://``, ``az://``, ``gs://``), whose storage options come from the active session's
    Hadoop settings and the per-call Hadoop keys in ``options`` (:mod:`deltalog.spark.common.storage`), or are
    given as ``storage_options`` (already translated: in Python workers, which have no session).

    Example:
        >>> open_table("/data/events").location                    # doctest: +SKIP
        '/data/events'
    """
    from deltalog.spark.common.storage import storage_options_for

    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise InvalidArgumentError(f"a Delta table path must be a non-empty string, got {path!r}")
    location = os.fspath(path)
    storage = dict(storage_options) if storage_options is not None else storage_options_for(location, options)
    key = (location, repr(sorted((str(k), repr(v)) for k, v in storage.items())))
    with _TABLES_LOCK:
        table = _TABLES.get(key)
        if table is not None:
            _TABLES.move_to_end(key)
            return table
    table = Table(location, storage_options=storage)
    if not isinstance(table.store, (LocalLogStore, ObjectLogStore)):
        raise InvalidArgumentError(
            f"the Spark engine of deltalog reads and writes tables on a local or shared file system or an object "
            f"store (s3://, abfss://, gs://, ...); {location!r} is neither, so executors could not reach its files",
            table=location,
        )
    with _TABLES_LOCK:
        _TABLES[key] = table
        while len(_TABLES) > KEPT_TABLES:
            _TABLES.popitem(last=False)
    return table


#: Tables :func:`open_table` keeps (the 16 last used, each holding its latest snapshot's file list; by location
#: and storage options), so a later read or write of one finds the snapshot it last saw and reads only the log
#: files after it (a listing; ~5 ms of replay less for a small table, a checkpoint's read less for a large one),
#: as delta-spark keeps a table's log per path. The kept snapshot is used only while its own commit is still
#: listed as the same file (name, size and modification time: :meth:`deltalog.Table.snapshot`), so a table
#: deleted and written again under the same path is read anew.
KEPT_TABLES = 16
_TABLES: OrderedDict[tuple[str, str], Table] = OrderedDict()
_TABLES_LOCK = threading.Lock()


def store_ref(table_or_snapshot: Any) -> StoreRef:
    """What a Spark task needs to open the table's store itself: location and storage options.

    Example:
        >>> store_ref(open_table("/data/events")).location           # doctest: +SKIP
        '/data/events'
    """
    return StoreRef.of(table_or_snapshot.store)


_AT = re.compile(r"(?s)(.+)@([vV]\d+|\d{17})")


def at_travel(suffix: str) -> tuple[int | None, str | None] | None:
    """delta-spark's time travel suffix (the text after ``@``): ``v12`` is version 12, ``yyyyMMddHHmmssSSS``
    a timestamp (as a ``timestampAsOf`` string); ``None`` for anything else.

    Example:
        >>> at_travel("v12"), at_travel("20240501123000000"), at_travel("x")
        ((12, None), (None, '2024-05-01 12:30:00.000'), None)
    """
    if re.fullmatch(r"[vV]\d+", suffix):
        return int(suffix[1:]), None
    if re.fullmatch(r"\d{17}", suffix):
        d = suffix
        return None, f"{d[0:4]}-{d[4:6]}-{d[6:8]} {d[8:10]}:{d[10:12]}:{d[12:14]}.{d[14:17]}"
    return None


def require_table(
    path: Any, *, storage_options: Mapping[str, Any] | None = None, hint: str = ""
) -> Table:
    """The table at ``path`` when its log has a version (only the log is listed, nothing replayed), else
    delta-spark's ``[DELTA_MISSING_DELTA_TABLE] <path> is not a Delta table (...)``, ``hint`` appended.

    Example:
        >>> require_table("/data/events").location                  # doctest: +SKIP
        '/data/events'
    """
    table = open_table(path, storage_options=storage_options)
    try:
        table.latest_version()
    except TableNotFoundError as exc:
        raise TableNotFoundError(
            f"[DELTA_MISSING_DELTA_TABLE] {table.location} is not a Delta table ({exc.message}){hint}",
            table=table.location,
        ) from None
    return table


def load_snapshot(
    path: Any, *, version: Any = None, timestamp: Any = None, options: Mapping[str, Any] | None = None,
    at_syntax: bool = False, instant: Callable[[str], Any] | None = None,
) -> Snapshot:
    """The snapshot at ``version`` / ``timestamp`` (latest by default), with delta-spark-style errors.
    With ``at_syntax`` (reads), a path that is not a table but ends in delta-spark's ``@v<version>`` or
    ``@<yyyyMMddHHmmssSSS>`` is the table before the ``@`` at that version or timestamp; ``instant`` turns that
    timestamp's text into the instant it means (a time in the Spark session's time zone, as delta-spark reads
    it: :func:`deltalog.spark.common.instants.session_instant`), else it is read as UTC.

    Example:
        >>> load_snapshot("/data/events", version="3").version      # doctest: +SKIP
        3
        >>> load_snapshot("/data/events@v3", at_syntax=True).version  # doctest: +SKIP
        3
    """
    table = open_table(path, options=options)
    where = table.location
    if version is not None and timestamp is not None:
        raise InvalidArgumentError(
            "[DELTA_TIME_TRAVEL_MULTIPLE_FORMATS] Cannot specify both versionAsOf and timestampAsOf", table=where
        )
    if version is not None:
        version = parse_int(version, "versionAsOf")
    try:
        return table.snapshot(version, timestamp=timestamp)
    except TableNotFoundError as exc:
        m = _AT.fullmatch(str(path)) if at_syntax else None
        if m is not None:
            if version is not None or timestamp is not None:
                raise InvalidArgumentError(
                    f"[DELTA_TIME_TRAVEL_MULTIPLE_FORMATS] {path} names a version or timestamp with @ and the read "
                    "gives versionAsOf / timestampAsOf too; use one", table=where) from None
            travel = at_travel(m[2])
            assert travel is not None  # _AT matches only what at_travel reads
            at = instant(travel[1]) if instant is not None and travel[1] is not None else travel[1]
            return load_snapshot(m[1], version=travel[0], timestamp=at, options=options)
        raise TableNotFoundError(
            f"[DELTA_MISSING_DELTA_TABLE] {where} is not a Delta table ({exc.message})", table=where
        ) from None
    except VersionNotFoundError as exc:
        what = f"version {version}" if version is not None else f"timestamp {timestamp}"
        condition = "DELTA_VERSION_NOT_FOUND"  # delta-spark's names for a timestamp past either end
        if version is None and isinstance(exc, TimestampAfterLatestError):
            condition = "DELTA_TIMESTAMP_GREATER_THAN_COMMIT"
        elif version is None and isinstance(exc, TimestampBeforeEarliestError):
            condition = "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"
        raise type(exc)(
            f"[{condition}] Cannot time travel Delta table to {what}: {exc.message}", table=where
        ) from None


def table_properties(snap: Snapshot) -> dict[str, str]:
    """The properties delta-spark shows for a table (``SHOW TBLPROPERTIES``, ``DESCRIBE EXTENDED``), sorted by
    key: the ``metaData.configuration`` (without ``path``), the protocol's ``delta.minReaderVersion`` /
    ``delta.minWriterVersion``, and ``delta.feature.<name> = supported`` for each table feature.

    Example:
        >>> table_properties(load_snapshot("/data/events"))                           # doctest: +SKIP
        {'delta.appendOnly': 'true', 'delta.minReaderVersion': '1', 'delta.minWriterVersion': '2'}
    """
    out = {k: v for k, v in snap.metadata.configuration.items() if k != "path"}
    protocol = snap.protocol
    out["delta.minReaderVersion"] = str(protocol.minReaderVersion)
    out["delta.minWriterVersion"] = str(protocol.minWriterVersion)
    for name in {*(protocol.readerFeatures or ()), *(protocol.writerFeatures or ())}:
        out[f"delta.feature.{name}"] = "supported"
    return dict(sorted(out.items()))


def parse_int(value: Any, name: str) -> int:
    """An option value as an int (options set with ``.option()`` arrive as strings).

    Example:
        >>> parse_int("7", "versionAsOf")
        7
    """
    if isinstance(value, bool):
        raise InvalidArgumentError(f"option {name} must be an integer, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"option {name} must be an integer, got {value!r}") from None


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(text: Any) -> int | None:
    """A byte count written as Spark writes them (``134217728``, ``128m``, ``1g``, ``10MB``, ``2KiB``), or
    ``None`` when ``text`` is not one.

    Example:
        >>> parse_size("128m"), parse_size("10MB"), parse_size("1000"), parse_size("lots")
        (134217728, 10485760, 1000, None)
    """
    m = _SIZE_RE.match(str(text))
    return None if m is None else int(m.group(1)) << (10 * " kmgt".index(m.group(2).lower() or " "))


def session_setting(spark: Any, key: str) -> str | None:
    """The session's value of ``key``; ``None`` when unset, blank, or refused by the session (some Connect
    servers refuse unknown keys).

    Example:
        >>> session_setting(spark, "spark.sql.shuffle.partitions")                   # doctest: +SKIP
        '200'
    """
    try:
        value = spark.conf.get(key, None)
    except Exception:
        return None
    return None if value is None or str(value).strip() == "" else str(value)


def parse_bool(value: Any, name: str) -> bool:
    """An option or setting value as a bool: ``True`` / ``False`` or ``"true"`` / ``"false"`` in any case,
    as delta-spark's options and Spark's boolean settings take them (``"yes"`` or ``"1"`` is an error).

    Example:
        >>> parse_bool("TRUE", "mergeSchema")
        True
        >>> parse_bool("yes", "mergeSchema")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: [DELTA_ILLEGAL_OPTION] invalid value 'yes' for option mergeSchema: \
it must be 'true' or 'false'
    """
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise illegal_option(name, value, "'true' or 'false'")


def illegal_option(name: str, value: Any, must: str) -> InvalidArgumentError:
    """delta-spark's ``DELTA_ILLEGAL_OPTION`` error: option ``name`` cannot take ``value``; it must be ``must``.

    Example:
        >>> print(illegal_option("maxFilesPerTrigger", 0, "a positive integer"))
        [DELTA_ILLEGAL_OPTION] invalid value '0' for option maxFilesPerTrigger: it must be a positive integer
    """
    return InvalidArgumentError(f"[DELTA_ILLEGAL_OPTION] invalid value {str(value)!r} for option {name}: it must be "
                                f"{must}")


def option_map(options: Mapping[str, Any], known: Sequence[str], *, what: str) -> dict[str, Any]:
    """Options keyed by their canonical (``known``) spelling, matched case-insensitively; ``None`` values
    are dropped; ``delta.*`` table properties and Hadoop file-system settings (``fs.*``,
    ``spark.hadoop.fs.*``: object-store credentials, as delta-spark accepts them) are kept as given;
    anything else raises with the valid names.

    Example:
        >>> option_map({"MERGESCHEMA": "true"}, ["mergeSchema"], what="write")
        {'mergeSchema': 'true'}
    """
    canonical = {k.lower(): k for k in known}
    out: dict[str, Any] = {}
    unknown = []
    for key, value in options.items():
        if value is None:
            continue
        name = canonical.get(str(key).lower())
        if name is not None:
            out[name] = value
        elif str(key).startswith(("delta.", "fs.", "spark.hadoop.fs.")):
            out[str(key)] = value
        else:
            unknown.append(key)
    if unknown:
        raise InvalidArgumentError(
            f"unknown {what} option(s) {sorted(unknown)}; valid options are {sorted(known)}, "
            "delta.* table properties and fs.* Hadoop storage settings"
        )
    return out


# ------------------------------------------------------------------------------------------- types


#: The field metadata a Delta read shows, as delta-spark's read schema keeps it (column mapping ids, generation
#: and identity expressions, defaults, invariants and type changes are the log's, not the DataFrame's).
READ_METADATA = ("comment",)


def _physical_dt(dt: DataType, mode: str, keep: tuple[str, ...] = ()) -> DataType:
    if isinstance(dt, StructType):
        return StructType(tuple(physical_field(f, mode, keep=keep) for f in dt.fields))
    if isinstance(dt, ArrayType):
        return replace(dt, element_type=_physical_dt(dt.element_type, mode, keep))
    if isinstance(dt, MapType):
        return replace(dt, key_type=_physical_dt(dt.key_type, mode, keep),
                       value_type=_physical_dt(dt.value_type, mode, keep))
    return dt


def read_field(field: StructField) -> StructField:
    """``field`` as a DataFrame read from the table declares it: the table's names, types and nullability (nested
    too), and of the metadata only :data:`READ_METADATA` (column comments), at every level.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> f = StructField("a", PrimitiveType("long"), False, {"comment": "x", "delta.columnMapping.id": 1})
        >>> read_field(f).metadata
        {'comment': 'x'}
    """
    return physical_field(field, "none", keep=READ_METADATA, widen=False)


def _read_decimals(dt: DataType) -> DataType:
    """``dt`` with every decimal of fewer than 10 integer digits read as ``decimal(s + 10, s)``."""
    if isinstance(dt, DecimalType):
        few_digits = dt.precision - dt.scale < 10
        return DecimalType(dt.scale + 10, dt.scale) if few_digits and dt.scale + 10 <= 38 else dt
    if isinstance(dt, StructType):
        return StructType(tuple(replace(f, type=_read_decimals(f.type)) for f in dt.fields))
    if isinstance(dt, ArrayType):
        return replace(dt, element_type=_read_decimals(dt.element_type))
    if isinstance(dt, MapType):
        return replace(dt, key_type=_read_decimals(dt.key_type), value_type=_read_decimals(dt.value_type))
    return dt


def _widened_from_small_ints(field: StructField) -> bool:
    changes = field.metadata.get("delta.typeChanges") or []
    return any(isinstance(c, dict) and c.get("fromType") in ("byte", "short")
               and str(c.get("toType", "")).startswith("decimal") for c in changes)


def physical_field(field: StructField, mode: str, *, keep: tuple[str, ...] = (), widen: bool = True) -> StructField:
    """The field as Spark reads it from data files: physical names at every nesting level, the table's
    nullability, and of the metadata only the keys in ``keep`` (none by default).

    A decimal column that type widening made from a ``byte`` / ``short`` column is read as
    ``decimal(s + 10, s)``: Spark's vectorized reader reads an INT32 column as a decimal only with 10
    integer digits, so the files written before the change fail with the table's ``decimal(4, 1)``;
    the wider type reads both those and the newer decimal files, and :func:`needs_cast` tells the caller
    to cast back to the table's type (every value fits).

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> f = StructField("a", PrimitiveType("long"), True, {"delta.columnMapping.physicalName": "c1"})
        >>> physical_field(f, "name").name
        'c1'
        >>> w = StructField("d", DecimalType(4, 1), True, {"delta.typeChanges": [{"fromType": "byte",
        ...                                                                      "toType": "decimal(4,1)"}]})
        >>> physical_field(w, "none").type
        DecimalType(precision=11, scale=1)
    """
    dt = _physical_dt(field.type, mode, keep)
    if widen and _widened_from_small_ints(field):
        dt = _read_decimals(dt)
    metadata = {k: field.metadata[k] for k in keep if k in field.metadata}
    return StructField(physical_name(field, mode), dt, field.nullable, metadata)


def needs_cast(field: StructField, mode: str) -> bool:
    """Whether the column Spark reads for ``field`` (see :func:`physical_field`) must be cast to the
    table's type: nested columns under column mapping (a positional cast renames the physical fields)
    and decimals read wider.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> needs_cast(StructField("a", PrimitiveType("long")), "name")
        False
    """
    nested = isinstance(field.type, (StructType, ArrayType, MapType))
    return (mode != "none" and nested) or (_widened_from_small_ints(field) and (
        _read_decimals(field.type) != field.type))


def spark_type(dt: DataType | StructType) -> Any:
    """The ``pyspark.sql.types`` type of a Delta type (both share the same JSON form; ``variant``, also
    nested, is ``VariantType``, which Spark's parquet reader reads from the unshredded struct of binaries).

    Example:
        >>> from deltalog.protocol.schema import VARIANT, PrimitiveType
        >>> spark_type(PrimitiveType("long"))                       # doctest: +SKIP
        LongType()
        >>> spark_type(VARIANT)                                     # doctest: +SKIP
        VariantType()
    """
    return spark_schema([StructField("x", dt, True, {})]).fields[0].dataType


def spark_schema(fields: Sequence[StructField], *, keep_metadata: bool = False) -> Any:
    """A ``pyspark.sql.types.StructType`` of Delta fields. Geospatial columns (Spark 4.2 and later, else
    refused naming the column: :func:`~deltalog.spark.common.compat.require_geospatial`) are ``GeometryType`` /
    ``GeographyType``, their CRS and algorithm spelled as PySpark reads them (``SRID:0``, ``SPHERICAL``).

    Example:
        >>> spark_schema(snapshot.schema.fields)                    # doctest: +SKIP
        StructType([StructField('id', LongType(), True)])
    """
    from pyspark.sql.types import StructType as SparkStruct

    kept = tuple(f if keep_metadata else replace(f, metadata={}) for f in fields)
    obj = json.loads(StructType(kept).to_json())
    geo = next((f for f in kept if contains_geo(f.type)), None)
    if geo is None:
        return SparkStruct.fromJson(obj)
    require_geospatial(geo.name, _geo_name(geo.type))
    try:
        return SparkStruct.fromJson(_spark_geo_names(obj))
    except Exception as exc:  # a CRS PySpark does not map to an SRID (IllegalArgumentException)
        raise InvalidArgumentError(
            f"column {geo.name!r} ({_geo_name(geo.type)}) has no Spark type: {exc}. Spark reads the CRSs it has "
            "SRIDs for (OGC:CRS84, EPSG:3857, SRID:0); the kernel reads any as WKB: "
            "deltalog.Table(path).snapshot().to_arrow()") from None


def geo_ddl(dt: DataType) -> str | None:
    """A geospatial type as Spark's DDL names it (``GEOMETRY(<srid>)``, ``GEOGRAPHY(<srid>)``: the SRID of its
    CRS), None for other types; a CRS without an SRID raises :class:`InvalidArgumentError`.

    Example:
        >>> from deltalog.protocol.schema import PrimitiveType
        >>> geo_ddl(PrimitiveType("geography(OGC:CRS84, spherical)")), geo_ddl(PrimitiveType("geometry(srid:0)"))
        ('GEOGRAPHY(4326)', 'GEOMETRY(0)')
    """
    spec = geo_spec(dt)
    if spec is None:
        return None
    authority, _, code = spec.crs.partition(":")
    by_code = authority.upper() in ("EPSG", "SRID") and code.isdigit()
    srid = 4326 if spec.crs == "OGC:CRS84" else int(code) if by_code else None
    if srid is None:
        raise InvalidArgumentError(f"the type {spec.name} has no Spark DDL: Spark names geospatial types by SRID, and "
                                   f"the CRS {spec.crs!r} has none; use OGC:CRS84, EPSG:<code> or srid:<number>")
    return f"{spec.kind.upper()}({srid})"


def _geo_name(dt: DataType) -> str:
    """The first geospatial type in ``dt`` (for messages)."""
    if isinstance(dt, StructType):
        return next(_geo_name(f.type) for f in dt.fields if contains_geo(f.type))
    if isinstance(dt, ArrayType):
        return _geo_name(dt.element_type)
    if isinstance(dt, MapType):
        return _geo_name(dt.key_type if contains_geo(dt.key_type) else dt.value_type)
    return getattr(dt, "name", "")


def _spark_geo_names(node: Any, key: str = "") -> Any:
    """Schema JSON with its geospatial type names as PySpark parses them: ``SRID:<n>`` in upper case, the
    algorithm in upper case (``geography(OGC:CRS84, SPHERICAL)``, what Spark writes)."""
    if isinstance(node, dict):
        return {k: _spark_geo_names(v, k) for k, v in node.items()}
    if isinstance(node, list):
        return [_spark_geo_names(v) for v in node]
    if isinstance(node, str) and key in ("type", "elementType", "keyType", "valueType"):
        spec = geo_spec(parse_data_type(node)) if node.startswith(("geometry(", "geography(")) else None
        if spec is not None:
            crs = "SRID:" + spec.crs[5:] if spec.crs.lower().startswith("srid:") else spec.crs
            return f"geometry({crs})" if spec.algorithm is None else f"geography({crs}, {spec.algorithm.upper()})"
    return node


_CACHED_TABLES: set[str] = set()


def note_cached(table: str) -> None:
    """Remember that a read of ``table`` was cached (``cache()`` / ``persist()`` of a Delta read, ``CACHE TABLE``):
    only such tables' reads ask Spark's cache (:func:`may_be_cached`), so other tables pay nothing for it.

    Example:
        >>> note_cached("/data/events"); may_be_cached("/data/events")          # doctest: +SKIP
        True
    """
    _CACHED_TABLES.add(str(table))


def may_be_cached(table: str) -> bool:
    """Whether a read of ``table`` was ever cached in this process (:func:`note_cached`).

    Example:
        >>> may_be_cached("/data/other")                                         # doctest: +SKIP
        False
    """
    return str(table) in _CACHED_TABLES


def anything_cached(spark: Any) -> bool:
    """Whether Spark's cache holds any data (classic sessions; ``False`` on Spark Connect).

    Example:
        >>> anything_cached(spark)                                      # doctest: +SKIP
        False
    """
    try:
        return not spark._jsparkSession.sharedState().cacheManager().isEmpty()
    except Exception:  # Spark Connect (no JVM here), another Spark's internals
        return False


#: Key, in a lazy Delta read's ``__dict__``, of the call that builds its plan
#: (:mod:`deltalog.spark.reads.lazy_frames`).
LAZY_PLAN = "_deltalog_lazy_plan"


def served_by_cache(frame: Any) -> bool:
    """Whether Spark's cache holds data for ``frame``'s plan or part of it (a ``cache()`` of a read of the same
    table version, ``CACHE TABLE``), so that an action on ``frame`` reads the cache, as Spark decides it;
    ``False`` on Spark Connect and when nothing is cached.

    Example:
        >>> served_by_cache(spark.table("events"))                      # doctest: +SKIP
        False
    """
    if "_jdf" not in frame.__dict__ and LAZY_PLAN not in frame.__dict__:  # Connect (a lazy read's plan is built
        return False  # below only when something is cached)
    try:
        manager = frame.sparkSession._jsparkSession.sharedState().cacheManager()
        if manager.isEmpty():
            return False
        plan = frame._jdf.queryExecution().analyzed()
        return "InMemoryRelation" in str(use_cached_data(manager, plan).treeString())
    except Exception:  # another Spark's internals: as if nothing were cached
        return False


def view_safe(frame: Any) -> Any:
    """``frame`` for a temporary view deltalog drops afterwards: dropping a view uncaches every cached plan Spark
    finds the same as the view's (a ``cache()`` of the same read, ``CACHE TABLE``), so the view gets a filter
    that keeps every row (the optimizer removes it; a projection would not do, Spark normalises it away).

    Example:
        >>> view_safe(spark.table("events")).createOrReplaceTempView("tmp")       # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    # PySpark's own class: not deltalog's tracked filter
    base: Any = next((c for c in type(frame).__mro__ if c.__module__ in DATAFRAME_MODULES), type(frame))
    return base.filter(frame, F.lit(True))


def session_of(df: Any) -> Any:
    """The SparkSession of a DataFrame (classic or Connect).

    Example:
        >>> session_of(spark.range(1)) is spark                      # doctest: +SKIP
        True
    """
    return df.sparkSession


def map_in_arrow(df: Any, func: Any, schema: Any) -> Any:
    """``df.mapInArrow(func, schema)``, also when a top-level column name holds a dot or a backtick: PySpark
    passes each column as ``df[name]``, which reads ``a.b`` as field ``b`` of ``a``. Such columns travel
    under positional names and the batches reach ``func`` with the real ones.

    Example:
        >>> map_in_arrow(spark.range(3).toDF("a.b"), lambda it: it, "`a.b` long").collect()  # doctest: +SKIP
        [Row(a.b=0), Row(a.b=1), Row(a.b=2)]
    """
    names = list(df.columns)
    if not any("." in n or "`" in n for n in names):
        return df.mapInArrow(func, schema)
    safe = df.toDF(*[f"_deltalog_c{i}" for i in range(len(names))])
    return safe.mapInArrow(functools.partial(_renamed_batches, names, func), schema)


def _renamed_batches(names: list[str], func: Any, batches: Any) -> Any:
    import pyarrow as pa

    return func(pa.RecordBatch.from_arrays(b.columns, names=names) for b in batches)


def arrow_frame(spark: Any, table: Any) -> Any:
    """A DataFrame of a small Arrow ``table`` (a command's result rows), its Spark types derived from the Arrow
    schema (timestamps with a time zone stay Spark ``timestamp``).

    Example:
        >>> import pyarrow as pa
        >>> arrow_frame(spark, pa.table({"path": ["a"]})).columns                     # doctest: +SKIP
        ['path']
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    return frame_from_arrow(spark, table, from_arrow_schema(table.schema, prefer_timestamp_ntz=False))
