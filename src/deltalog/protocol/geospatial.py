"""Geospatial types (the ``geospatial`` table feature): ``geometry(<crs>)`` and ``geography(<crs>, <algorithm>)``.

A value of either type is a WKB (well-known binary) geometry. Both types name a coordinate reference
system: ``<authority>:<identifier>`` (``OGC:CRS84``, ``EPSG:3857``), ``srid:<number>`` or
``projjson:<table property>``; a geography also names how edges run between its points (``spherical``,
``vincenty``, ``thomas``, ``andoyer`` or ``karney``). deltalog models them as primitive types whose name is the
type's text (see :mod:`deltalog.protocol.schema`), written in one spelling, :func:`canonical_name`: the
algorithm in lower case as the protocol lists it (Spark writes ``SPHERICAL``), the CRS as given.

In Arrow a geospatial column is :class:`GeoArrowWKB`, the GeoArrow ``geoarrow.wkb`` extension type over
``binary`` with the CRS (and, for a geography, the edges) in its metadata; pyarrow writes it to parquet with
the GEOMETRY / GEOGRAPHY logical types the protocol asks of data files. :func:`wkb_storage` takes incoming
values in the shapes writers hand them over: that type (or any ``geoarrow.wkb`` one), plain binary WKB, or
PySpark's ``struct<srid, wkb>``.

Statistics: a geometry column's ``minValues`` / ``maxValues`` are the lower-left and upper-right corners of
the bounding box of its values, as WKT points (:func:`bbox_stats`; ``POINT Z`` / ``M`` / ``ZM`` when every
value has those coordinates); :func:`parse_point` reads them back. A geography gets no bounds (its edges may
bulge beyond its points' box), only its null count.

Example:
    >>> canonical_name("geography(OGC:CRS84, SPHERICAL)")
    'geography(OGC:CRS84, spherical)'
    >>> parse_geo_type("geometry(EPSG:3857)")
    GeoSpec(kind='geometry', crs='EPSG:3857', algorithm=None)
    >>> bbox_stats(GeoBox(1.0, 2.0, 3.5, 4.0))
    ('POINT(1 2)', 'POINT(3.5 4)')
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import SchemaError

__all__ = [
    "ALGORITHMS",
    "DEFAULT_CRS",
    "GEOARROW_WKB",
    "GeoArrowWKB",
    "GeoBox",
    "GeoPoint",
    "GeoSpec",
    "bbox_stats",
    "box_of",
    "canonical_name",
    "geo_spec_of_field",
    "is_geo_arrow_type",
    "parse_geo_type",
    "parse_point",
    "wkb_storage",
]

#: The CRS Parquet, Iceberg and Spark assume when none is given (longitude/latitude on WGS 84).
DEFAULT_CRS = "OGC:CRS84"
#: The edge interpolation algorithms a geography may name.
ALGORITHMS = ("spherical", "vincenty", "thomas", "andoyer", "karney")
#: The GeoArrow extension name of WKB-encoded geometries.
GEOARROW_WKB = "geoarrow.wkb"

_GEO_RE = re.compile(r"(geometry|geography)\((.*)\)", re.DOTALL)
_CRS_RE = re.compile(r"[^\s:,()]+:[^\s,()]+")
_EXTENSION_NAME = b"ARROW:extension:name"
_EXTENSION_METADATA = b"ARROW:extension:metadata"
#: SRIDs as PySpark spells their CRS (its ``GeometryType(srid)``), for the ``struct<srid, wkb>`` it hands over.
_SPARK_SRID_CRS = {0: "SRID:0", 3857: "EPSG:3857", 4326: DEFAULT_CRS}


@dataclass(frozen=True)
class GeoSpec:
    """A geospatial type: ``kind`` ``geometry`` or ``geography``, its CRS, and a geography's edge algorithm.

    Example:
        >>> GeoSpec("geography", "OGC:CRS84", "spherical").name
        'geography(OGC:CRS84, spherical)'
    """

    kind: str
    crs: str
    algorithm: str | None = None

    @property
    def name(self) -> str:
        """The type as the schema JSON writes it.

        Example:
            >>> GeoSpec("geometry", "EPSG:3857").name
            'geometry(EPSG:3857)'
        """
        if self.kind == "geometry":
            return f"geometry({self.crs})"
        return f"geography({self.crs}, {self.algorithm})"


def parse_geo_type(text: str) -> GeoSpec | None:
    """The :class:`GeoSpec` of a type name, None when ``text`` names no geospatial type; a malformed one (no
    CRS, an unknown algorithm) raises :class:`SchemaError` saying what the protocol allows.

    Example:
        >>> parse_geo_type("geography(OGC:CRS84,vincenty)")
        GeoSpec(kind='geography', crs='OGC:CRS84', algorithm='vincenty')
        >>> parse_geo_type("long") is None
        True
        >>> parse_geo_type("geography(OGC:CRS84, flat)")
        Traceback (most recent call last):
        ...
        deltalog.errors.SchemaError: invalid geospatial type 'geography(OGC:CRS84, flat)': unknown edge \
algorithm 'flat' (one of spherical, vincenty, thomas, andoyer, karney)
    """
    m = _GEO_RE.fullmatch(text.strip())
    if m is None:
        if text.strip() in ("geometry", "geography"):
            raise SchemaError(f"invalid geospatial type {text!r}: it needs a CRS, e.g. {text.strip()}({DEFAULT_CRS})")
        return None
    kind, args = m.group(1), [a.strip() for a in m.group(2).split(",")]
    want = 1 if kind == "geometry" else 2
    form = "geometry(<crs>)" if kind == "geometry" else "geography(<crs>, <algorithm>)"
    if len(args) != want:
        raise SchemaError(f"invalid geospatial type {text!r}: expected {form}")
    crs = args[0]
    if not _CRS_RE.fullmatch(crs):
        raise SchemaError(f"invalid geospatial type {text!r}: the CRS must be <authority>:<identifier> (such as "
                          f"{DEFAULT_CRS} or EPSG:3857), srid:<number> or projjson:<table property>; got {crs!r}")
    if kind == "geometry":
        return GeoSpec("geometry", crs)
    algorithm = args[1].lower()
    if algorithm not in ALGORITHMS:
        raise SchemaError(f"invalid geospatial type {text!r}: unknown edge algorithm {args[1]!r} "
                          f"(one of {', '.join(ALGORITHMS)})")
    return GeoSpec("geography", crs, algorithm)


def canonical_name(text: str) -> str | None:
    """The one spelling of a geospatial type name (see the module docstring), None for other types.

    Example:
        >>> canonical_name("geometry( OGC:CRS84 )")
        'geometry(OGC:CRS84)'
    """
    spec = parse_geo_type(text)
    return None if spec is None else spec.name


# ---------------------------------------------------------------------------------------------- Arrow


class GeoArrowWKB(pa.ExtensionType):  # type: ignore[misc,unused-ignore]
    """The Arrow type of a geospatial column: GeoArrow's ``geoarrow.wkb`` over ``binary``, its metadata naming
    the CRS and, for a geography, the ``edges``. deltalog does not register it with pyarrow (GeoArrow's own
    package may); parquet files written with it carry the GEOMETRY / GEOGRAPHY logical types.

    Example:
        >>> t = GeoArrowWKB.of(GeoSpec("geography", "OGC:CRS84", "spherical"))
        >>> t.spec, t.__arrow_ext_serialize__()
        (GeoSpec(kind='geography', crs='OGC:CRS84', algorithm='spherical'), b'{"crs":"OGC:CRS84","edges":"spherical"}')
    """

    def __init__(self, crs: str = DEFAULT_CRS, edges: str | None = None) -> None:
        self.crs = crs
        self.edges = edges
        super().__init__(pa.binary(), GEOARROW_WKB)

    @classmethod
    def of(cls, spec: GeoSpec) -> GeoArrowWKB:
        """The Arrow type of a geospatial Delta type.

        Example:
            >>> GeoArrowWKB.of(GeoSpec("geometry", "EPSG:3857")).crs
            'EPSG:3857'
        """
        return cls(spec.crs, spec.algorithm)

    @property
    def spec(self) -> GeoSpec:
        """The Delta type this Arrow type stands for.

        Example:
            >>> GeoArrowWKB().spec.name
            'geometry(OGC:CRS84)'
        """
        return GeoSpec("geometry", self.crs) if self.edges is None else GeoSpec("geography", self.crs, self.edges)

    def __arrow_ext_serialize__(self) -> bytes:
        meta = {"crs": self.crs} if self.edges is None else {"crs": self.crs, "edges": self.edges}
        return json.dumps(meta, separators=(",", ":")).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> GeoArrowWKB:
        spec = _spec_from_metadata(serialized, "")
        return cls.of(spec)


def _spec_from_metadata(serialized: bytes | None, path: str) -> GeoSpec:
    """The Delta type of GeoArrow metadata: ``crs`` (text, or PROJJSON with an ``id``), ``edges`` (absent or
    ``planar``: a geometry)."""
    where = f"column {path!r}: " if path else ""
    try:
        meta = json.loads(serialized or b"{}") if serialized else {}
    except ValueError:
        raise SchemaError(f"{where}geoarrow.wkb metadata is not JSON: {serialized!r:.200}") from None
    meta = meta if isinstance(meta, dict) else {}
    crs: Any = meta.get("crs") or DEFAULT_CRS
    if isinstance(crs, dict):  # PROJJSON: only its authority id can be named in a Delta type
        ident: Any = crs.get("id")
        named = isinstance(ident, dict) and "authority" in ident and "code" in ident
        crs = f"{ident['authority']}:{ident['code']}" if named else None
    if not isinstance(crs, str) or not _CRS_RE.fullmatch(crs):
        raise SchemaError(f"{where}the geoarrow.wkb CRS {meta.get('crs')!r:.200} cannot be written as a Delta CRS; "
                          "give it as <authority>:<identifier>, e.g. OGC:CRS84")
    edges = meta.get("edges")
    if edges in (None, "planar"):
        return GeoSpec("geometry", crs)
    if not isinstance(edges, str) or edges.lower() not in ALGORITHMS:
        raise SchemaError(f"{where}unknown geoarrow.wkb edges {edges!r} (one of planar, {', '.join(ALGORITHMS)})")
    return GeoSpec("geography", crs, edges.lower())


def is_geo_arrow_type(at: pa.DataType) -> bool:
    """Whether ``at`` is a ``geoarrow.wkb`` extension type (deltalog's :class:`GeoArrowWKB` or another's).

    Example:
        >>> is_geo_arrow_type(GeoArrowWKB()), is_geo_arrow_type(pa.binary())
        (True, False)
    """
    return isinstance(at, pa.BaseExtensionType) and at.extension_name == GEOARROW_WKB


def _spark_struct(at: pa.DataType) -> pa.Field[Any] | None:
    """The ``wkb`` child of PySpark's Arrow form of a geometry / geography (``struct<srid, wkb>``, the child
    marked ``geometry`` or ``geography``), else None."""
    if not pa.types.is_struct(at) or at.num_fields != 2 or at.get_field_index("srid") < 0:
        return None
    i = at.get_field_index("wkb")
    child = at.field(i) if i >= 0 else None
    marks = (child.metadata or {}) if child is not None else {}
    return child if marks.get(b"geometry") == b"true" or marks.get(b"geography") == b"true" else None


def geo_spec_of_field(f: pa.Field[Any], path: str = "") -> GeoSpec | None:
    """The geospatial Delta type of an Arrow field, None when it holds none: a ``geoarrow.wkb`` extension type,
    a binary field carrying that extension's name in its metadata (pyarrow's form of an extension type it does
    not know), or PySpark's ``struct<srid, wkb>``.

    Example:
        >>> geo_spec_of_field(pa.field("g", pa.binary(), metadata={b"ARROW:extension:name": b"geoarrow.wkb"}))
        GeoSpec(kind='geometry', crs='OGC:CRS84', algorithm=None)
    """
    at = f.type
    if is_geo_arrow_type(at):
        if isinstance(at, GeoArrowWKB):
            return at.spec
        serialize = getattr(at, "__arrow_ext_serialize__", None)  # (a Python extension type: GeoArrow's own)
        return _spec_from_metadata(serialize() if serialize is not None else None, path)
    meta = f.metadata or {}
    if meta.get(_EXTENSION_NAME) == GEOARROW_WKB.encode() and (pa.types.is_binary(at) or pa.types.is_large_binary(at)
                                                                 or pa.types.is_binary_view(at)):
        return _spec_from_metadata(meta.get(_EXTENSION_METADATA), path)
    child = _spark_struct(at)
    if child is None:
        return None
    marks = child.metadata or {}
    try:
        srid = int(marks.get(b"srid", b"4326"))
    except ValueError:
        srid = -1
    if srid < 0:
        raise SchemaError(f"column {path!r}: a geospatial column of mixed SRIDs (Spark's ANY) cannot be stored in "
                          "Delta; cast it to one SRID, e.g. ST_SetSrid(g, 4326)")
    crs = _SPARK_SRID_CRS.get(srid, f"EPSG:{srid}")
    return GeoSpec("geometry", crs) if marks.get(b"geometry") == b"true" else GeoSpec("geography", crs, "spherical")


def wkb_storage(arr: pa.Array[Any], path: str = "") -> pa.Array[Any]:
    """The WKB values of ``arr`` as a ``binary`` array (nulls kept), from any form :func:`geo_spec_of_field`
    knows or plain binary; other types raise :class:`SchemaError` naming the column.

    Example:
        >>> wkb_storage(pa.array([b"\\x01", None], pa.large_binary())).type
        DataType(binary)
    """
    at = arr.type
    if isinstance(arr, pa.ExtensionArray):
        return wkb_storage(arr.storage, path)
    if pa.types.is_null(at):
        return pa.nulls(len(arr), pa.binary())  # type: ignore[call-overload,no-any-return,unused-ignore]
    if _spark_struct(at) is not None:
        wkb = pc.struct_field(arr, "wkb")
        arr = pc.if_else(arr.is_null(), pa.scalar(None, wkb.type), wkb) if arr.null_count else wkb
        at = arr.type
    if pa.types.is_binary(at):
        return arr
    if pa.types.is_large_binary(at) or pa.types.is_binary_view(at) or pa.types.is_fixed_size_binary(at):
        return arr.cast(pa.binary())
    where = f"column {path!r}" if path else "a geospatial column"
    raise SchemaError(f"{where} holds {at}, not WKB: give geometries as binary WKB (or geoarrow.wkb)")


# ----------------------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class GeoBox:
    """A bounding box: ``x`` / ``y`` ranges, and ``z`` / ``m`` ranges when known (None otherwise).

    Example:
        >>> GeoBox(0.0, 0.0, 1.0, 1.0).zmin is None
        True
    """

    xmin: float
    ymin: float
    xmax: float
    ymax: float
    zmin: float | None = None
    zmax: float | None = None
    mmin: float | None = None
    mmax: float | None = None

    def union(self, other: GeoBox) -> GeoBox:
        """The box holding both (a ``z`` / ``m`` range only when both have it).

        Example:
            >>> GeoBox(0, 0, 1, 1).union(GeoBox(-1, 2, 0, 3))
            GeoBox(xmin=-1, ymin=0, xmax=1, ymax=3, zmin=None, zmax=None, mmin=None, mmax=None)
        """
        def lo(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else min(a, b)

        def hi(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else max(a, b)

        return GeoBox(min(self.xmin, other.xmin), min(self.ymin, other.ymin), max(self.xmax, other.xmax),
                      max(self.ymax, other.ymax), lo(self.zmin, other.zmin), hi(self.zmax, other.zmax),
                      lo(self.mmin, other.mmin), hi(self.mmax, other.mmax))


def box_of(geo_statistics: Any) -> GeoBox | None:
    """The :class:`GeoBox` of a parquet column chunk's geospatial statistics (pyarrow's ``GeoStatistics``),
    None when it has no finite ``x`` / ``y`` bounds.

    Example:
        >>> box_of(None) is None
        True
    """
    if geo_statistics is None:
        return None

    def get(key: str) -> float | None:
        v = getattr(geo_statistics, key, None)
        return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None

    xmin, ymin, xmax, ymax = get("xmin"), get("ymin"), get("xmax"), get("ymax")
    if xmin is None or ymin is None or xmax is None or ymax is None or xmin > xmax or ymin > ymax:
        return None  # (a geography may wrap around the antimeridian: xmin > xmax; never used here)
    zmin, zmax, mmin, mmax = get("zmin"), get("zmax"), get("mmin"), get("mmax")
    if zmin is None or zmax is None:
        zmin = zmax = None
    if mmin is None or mmax is None:
        mmin = mmax = None
    return GeoBox(xmin, ymin, xmax, ymax, zmin, zmax, mmin, mmax)


def _num(v: float) -> str:
    text = repr(float(v))
    return text[:-2] if text.endswith(".0") else text


def bbox_stats(box: GeoBox) -> tuple[str, str]:
    """The ``minValues`` / ``maxValues`` of a geometry column with bounding box ``box``: its lower-left and
    upper-right corners as WKT points.

    Example:
        >>> bbox_stats(GeoBox(-122.5, 37.5, -120.25, 38.0, zmin=0.0, zmax=10.0))
        ('POINT Z(-122.5 37.5 0)', 'POINT Z(-120.25 38 10)')
    """
    tag = ("Z" if box.zmin is not None else "") + ("M" if box.mmin is not None else "")
    low = [box.xmin, box.ymin, box.zmin, box.mmin]
    high = [box.xmax, box.ymax, box.zmax, box.mmax]
    head = f"POINT {tag}" if tag else "POINT"
    return (f"{head}({' '.join(_num(v) for v in low if v is not None)})",
            f"{head}({' '.join(_num(v) for v in high if v is not None)})")


@dataclass(frozen=True)
class GeoPoint:
    """A corner of a bounding box read from statistics. It has no order: comparing it with a literal raises
    ``TypeError``, so data skipping never compares a geospatial column's bounds as if they were numbers or text.

    Example:
        >>> GeoPoint(1.0, 2.0).x
        1.0
    """

    x: float
    y: float
    z: float | None = None
    m: float | None = None


_POINT_RE = re.compile(r"\s*POINT\s*(Z|M|ZM)?\s*\(([^()]*)\)\s*", re.IGNORECASE)


def parse_point(text: str) -> GeoPoint:
    """The :class:`GeoPoint` of a WKT point statistic (``POINT(x y)``, ``POINT Z(x y z)``, ``POINT M(x y m)``,
    ``POINT ZM(x y z m)``); anything else raises ``ValueError``.

    Example:
        >>> parse_point("POINT ZM(1 2 3 4)")
        GeoPoint(x=1.0, y=2.0, z=3.0, m=4.0)
    """
    m = _POINT_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"not a WKT point: {text!r:.100}")
    tag = (m.group(1) or "").upper()
    values = [float(v) for v in m.group(2).split()]
    want = 2 + len(tag) if tag else (len(values) if len(values) in (2, 3, 4) else 2)
    if len(values) != want:
        raise ValueError(f"WKT point {text!r:.100} has {len(values)} coordinate(s), expected {want}")
    x, y, *rest = values
    if tag == "M":
        return GeoPoint(x, y, None, rest[0])
    return GeoPoint(x, y, rest[0] if rest else None, rest[1] if len(rest) > 1 else None)
