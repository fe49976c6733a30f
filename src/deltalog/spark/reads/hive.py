"""Can Spark's own partition discovery stand in for the log's partition values? (no public API)

A Delta reader must take partition values from ``add.partitionValues``, never from directory names.
Reading them from the directories instead is much faster in Spark -- no join, and filters on
partition columns applied after ``load()`` prune files (``PartitionFilters``) -- so the Spark engine
does it when, and only when, the driver has proved that it yields exactly the log's values:

* every live file's relative path is ``<c1>=<v1>/.../<cn>=<vn>/<file>`` for the table's partition
  columns in order (physical names under column mapping), with no other directory level;
* each value is what Spark derives from the directory text (Hive unescaping, ``__HIVE_DEFAULT_PARTITION__``
  as null, then Spark's cast to the column type), computed here in Python the way Spark computes it,
  and equals the kernel's typed value of the log's string;
* the column types are ones Spark's discovery represents faithfully, in canonical text forms only:
  strings, integers, booleans, decimals with exactly the column's scale, finite floats in plain
  decimal notation, ``yyyy-MM-dd`` dates and ``yyyy-MM-dd[ T]HH:mm:ss[.ffffff]`` timestamps, ``Z``
  allowed on zoned ones (read with the reader option ``timeZone=UTC``, which is how the protocol reads
  a zone-less value). Binary, ``void``, NaN/infinities, offsets or other timestamp texts, absolute file
  paths and anything else send the table down the join path.

Example:
    >>> from deltalog.protocol.schema import PrimitiveType, StructField
    >>> f = StructField("p", PrimitiveType("string"), True, {})
    >>> import pyarrow as pa
    >>> files = pa.table({"path": ["p=a%2520b/x.parquet"],
    ...                   "partitionValues": pa.array([[("p", "a b")]], pa.map_(pa.string(), pa.string()))})
    >>> hive_layout_matches(files, [f], ["p"])
    True
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import DeltaError
from deltalog.protocol.partitions import HIVE_DEFAULT_PARTITION, partition_array
from deltalog.protocol.schema import DataType, DecimalType, PrimitiveType, StructField

__all__ = ["discoverable_type", "hive_layout_matches", "spark_unescape"]

_INTS = frozenset({"byte", "short", "integer", "long"})
_SUPPORTED = _INTS | {"string", "boolean", "date", "timestamp", "timestamp_ntz", "float", "double"}
_INT_RE = re.compile(r"-?[0-9]+")
_FLOAT_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TS_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[ T]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,6}))?(Z?)"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")  # a URI (s3://..., file:/...), not a relative path
_HEX = frozenset("0123456789abcdefABCDEF")
_MISMATCH = object()


def discoverable_type(dtype: DataType) -> bool:
    """True for column types Spark's partition discovery can produce faithfully (see the module docstring).

    Example:
        >>> discoverable_type(PrimitiveType("binary")), discoverable_type(DecimalType(10, 2))
        (False, True)
    """
    if isinstance(dtype, DecimalType):
        return True
    return isinstance(dtype, PrimitiveType) and dtype.name in _SUPPORTED


def spark_unescape(text: str) -> str | None:
    """Spark's ``unescapePathName`` for texts where it is unambiguous: every ``%`` must start ``%XX`` with
    two ASCII hex digits (Java's lenient ``parseInt`` would also take signs and non-ASCII digits); None
    for any other ``%``.

    Example:
        >>> spark_unescape("a%2Fb%3A"), spark_unescape("100%")
        ('a/b:', None)
    """
    if "%" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        digits = text[i + 1 : i + 3]
        if len(digits) != 2 or not set(digits) <= _HEX:
            return None
        out.append(chr(int(digits, 16)))
        i += 3
    return "".join(out)


def _date(m: re.Match[str]) -> dt.date | None:
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _spark_value(raw: str, dtype: DataType) -> Any:
    """The value Spark's discovery casts the directory text ``raw`` to, or ``_MISMATCH`` when the text is
    not in a canonical form whose cast is certain (so the caller falls back)."""
    if raw == HIVE_DEFAULT_PARTITION:
        return None
    if isinstance(dtype, DecimalType):
        # Spark builds a BigDecimal from the text and keeps its scale: only the column's exact scale is safe.
        pattern = r"-?[0-9]+" + (rf"\.[0-9]{{{dtype.scale}}}" if dtype.scale else "")
        return Decimal(raw) if re.fullmatch(pattern, raw) else _MISMATCH
    name = dtype.name if isinstance(dtype, PrimitiveType) else ""
    if name == "string":
        text = spark_unescape(raw)
        return _MISMATCH if text is None else text
    if name in _INTS:
        return int(raw) if _INT_RE.fullmatch(raw) else _MISMATCH
    if name == "boolean":
        return raw.lower() == "true" if raw.lower() in ("true", "false") else _MISMATCH
    if name in ("float", "double"):
        if not _FLOAT_RE.fullmatch(raw):
            return _MISMATCH
        number = float(raw)  # Java's Double.parseDouble, correctly rounded like Python's
        if not math.isfinite(number):
            return _MISMATCH
        return float(np.float32(number)) if name == "float" else number  # Spark: parseDouble(v).toFloat
    if name == "date":
        m = _DATE_RE.fullmatch(raw)
        day = _date(m) if m else None
        return _MISMATCH if day is None else day
    if name in ("timestamp", "timestamp_ntz"):
        text = spark_unescape(raw)
        m = _TS_RE.fullmatch(text) if text is not None else None
        if m is None or (m.group(8) and name == "timestamp_ntz"):
            return _MISMATCH  # a zone designator on a timestamp without time zone: not certain
        y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
        try:
            stamp = dt.datetime(y, mo, d, h, mi, sec, int((m.group(7) or "").ljust(6, "0")))
        except ValueError:
            return _MISMATCH
        return stamp.replace(tzinfo=dt.UTC) if name == "timestamp" else stamp
    return _MISMATCH


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)  # -0.0 differs from 0.0
    return type(a) is type(b) and bool(a == b)


def hive_layout_matches(files: pa.Table, fields: Sequence[StructField], keys: Sequence[str]) -> bool:
    """True when Spark's partition discovery gives every file of ``files`` (rows of ``add_files()``) exactly
    the log's partition values: ``fields`` are the table's partition columns in order and ``keys`` their
    names in ``partitionValues`` and in the directories (physical names under column mapping).

    Example:
        >>> hive_layout_matches(snapshot.add_files(), [schema.field("day")], ["day"])   # doctest: +SKIP
        True
    """
    if not fields or not all(discoverable_type(f.type) for f in fields) or files.num_rows == 0:
        return False
    paths = files.column("path").to_pylist()
    if any(not isinstance(p, str) or p.startswith("/") or _SCHEME.match(p) for p in paths):
        return False  # absolute paths and URIs: not under the table root's directory tree
    pv = files.column("partitionValues").combine_chunks()
    try:
        typed = [
            partition_array(pc.map_lookup(pv, pa.scalar(key, pa.string()), "first"), f.type).to_pylist()
            for f, key in zip(fields, keys)
        ]
    except DeltaError:
        return False  # the join path reports malformed partition values with the kernel's message
    n = len(fields)
    seen: dict[str, tuple[Any, ...]] = {}
    for row, path in enumerate(paths):
        dirs = unquote(path).split("/")[:-1]
        if len(dirs) != n:
            return False
        expected = tuple(col[row] for col in typed)
        directory = "/".join(dirs)
        known = seen.get(directory)
        if known is not None:
            if not all(_same(a, b) for a, b in zip(known, expected)):
                return False
            continue
        for segment, key, f, want in zip(dirs, keys, fields, expected):
            name, sep, raw = segment.partition("=")
            if not sep or not raw or spark_unescape(name) != key:
                return False
            got = _spark_value(raw, f.type)
            if got is _MISMATCH or not _same(got, want):
                return False
        seen[directory] = expected
    return True
