"""Geospatial columns through the kernel (the ``geospatial`` table feature): ``geometry(<crs>)`` and
``geography(<crs>, <algorithm>)`` in the schema, their Arrow forms, data files with parquet's geospatial logical
types, statistics (a geometry's bounding box as WKT points, no bounds for a geography) and the feature's rules."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog
from deltalog.data.write_stats import FloatBounds, count_floats, stats_json
from deltalog.errors import InvalidArgumentError, SchemaError
from deltalog.log.stats_parsed import stats_struct_type
from deltalog.protocol.actions import Protocol
from deltalog.protocol.features import check_readable
from deltalog.protocol.geospatial import GeoArrowWKB, GeoPoint, GeoSpec, parse_point
from deltalog.protocol.schema import (
    PrimitiveType,
    StructField,
    StructType,
    from_arrow_field,
    parse_data_type,
    parse_schema,
    to_arrow_type,
)
from deltalog.protocol.stats import stat_value

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"
GEOM = "geometry(OGC:CRS84)"
GEOG = "geography(OGC:CRS84, spherical)"


def point(x: float, y: float) -> bytes:
    """A little-endian WKB point, written out independently of deltalog."""
    return struct.pack("<BIdd", 1, 1, x, y)


def point_z(x: float, y: float, z: float) -> bytes:
    return struct.pack("<BIddd", 1, 1001, x, y, z)


def line(*points: tuple[float, float]) -> bytes:
    return struct.pack("<BII", 1, 2, len(points)) + b"".join(struct.pack("<dd", *p) for p in points)


def geo(type_name: str, values: list[bytes | None]) -> pa.ExtensionArray:
    return pa.ExtensionArray.from_storage(to_arrow_type(parse_data_type(type_name)), pa.array(values, pa.binary()))


def schema_json(*fields: tuple[str, Any]) -> str:
    return json.dumps({"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}}
                                                    for n, t in fields]})


def stats_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(s) for s in deltalog.Table(path).snapshot().add_files().column("stats").to_pylist()]


# ------------------------------------------------------------------------------------------- schema


def test_the_corpus_table_with_geo_is_read() -> None:
    table = CORPUS / "kernel-rs-data" / "table-with-geo"
    if not table.is_dir():
        pytest.skip(f"conformance corpus missing at {CORPUS}")
    snap = deltalog.Table(table).snapshot()
    assert snap.protocol.readerFeatures == ("geospatial",) and snap.protocol.writerFeatures == ("geospatial",)
    assert [(f.name, f.type) for f in snap.schema] == [("geom", PrimitiveType(GEOM)), ("geog", PrimitiveType(GEOG))]
    rows = snap.to_arrow()
    assert rows.num_rows == 0
    assert [rows.schema.field(n).type.spec for n in ("geom", "geog")] == [
        GeoSpec("geometry", "OGC:CRS84"), GeoSpec("geography", "OGC:CRS84", "spherical")]


@pytest.mark.parametrize(("text", "name"), [
    ("geometry(OGC:CRS84)", "geometry(OGC:CRS84)"),
    ("geography(OGC:CRS84, SPHERICAL)", "geography(OGC:CRS84, spherical)"),  # as Spark writes it
    ("geography( EPSG:4326 ,Karney )", "geography(EPSG:4326, karney)"),
    ("geometry(srid:3857)", "geometry(srid:3857)"),
    ("geometry(projjson:delta.geo.crs)", "geometry(projjson:delta.geo.crs)"),
])
def test_type_names_parse_to_one_spelling_and_round_trip(text: str, name: str) -> None:
    assert parse_data_type(text) == PrimitiveType(name) == PrimitiveType(text)
    nested = {"type": "struct", "fields": [
        {"name": "a", "type": {"type": "array", "elementType": text, "containsNull": True}, "nullable": True,
         "metadata": {}},
        {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": text, "valueContainsNull": True},
         "nullable": True, "metadata": {}}]}
    schema = parse_schema(json.dumps(nested))
    again = json.loads(schema.to_json())
    assert again["fields"][0]["type"]["elementType"] == name and again["fields"][1]["type"]["valueType"] == name
    assert parse_schema(schema.to_json()) == schema


@pytest.mark.parametrize(("text", "why"), [
    ("geometry", "needs a CRS"),
    ("geometry(4326)", "the CRS must be"),
    ("geography(OGC:CRS84)", r"expected geography\(<crs>, <algorithm>\)"),
    ("geography(OGC:CRS84, flat)", "unknown edge algorithm 'flat'"),
    ("geometry(OGC:CRS84, spherical)", r"expected geometry\(<crs>\)"),
])
def test_malformed_geospatial_types_are_refused_naming_the_column(text: str, why: str) -> None:
    with pytest.raises(SchemaError, match=f"{why}.*at column 'g'"):
        parse_schema(schema_json(("g", text)))


def test_arrow_forms_of_the_geospatial_types() -> None:
    at = to_arrow_type(PrimitiveType(GEOG))
    assert isinstance(at, GeoArrowWKB) and at.extension_name == "geoarrow.wkb" and at.storage_type == pa.binary()
    assert json.loads(at.__arrow_ext_serialize__()) == {"crs": "OGC:CRS84", "edges": "spherical"}
    assert StructType.from_arrow_schema(parse_schema(schema_json(("g", GEOM), ("h", GEOG))).to_arrow_schema()) == \
        parse_schema(schema_json(("g", GEOM), ("h", GEOG)))

    def marked(meta: dict[str, Any]) -> pa.Field[Any]:  # pyarrow's form of a geoarrow.wkb type it does not know
        return pa.field("g", pa.large_binary(), metadata={b"ARROW:extension:name": b"geoarrow.wkb",
                                                          b"ARROW:extension:metadata": json.dumps(meta).encode()})

    assert from_arrow_field(marked({"crs": "EPSG:3857"})) == PrimitiveType("geometry(EPSG:3857)")
    assert from_arrow_field(marked({"edges": "spherical"})) == PrimitiveType(GEOG)  # no CRS: OGC:CRS84
    projjson = {"crs": {"type": "ProjectedCRS", "id": {"authority": "EPSG", "code": 32633}}, "edges": "planar"}
    assert from_arrow_field(marked(projjson)) == PrimitiveType("geometry(EPSG:32633)")
    with pytest.raises(SchemaError, match=r"column 'g'.*cannot be written as a Delta CRS"):
        from_arrow_field(marked({"crs": {"type": "GeographicCRS"}}), "g")

    def spark_form(flag: bytes, srid: int) -> pa.Field[Any]:  # what PySpark hands a Python worker
        wkb = pa.field("wkb", pa.binary(), False, metadata={flag: b"true", b"srid": str(srid).encode()})
        return pa.field("g", pa.struct([pa.field("srid", pa.int32(), False), wkb]))

    assert from_arrow_field(spark_form(b"geometry", 4326)) == PrimitiveType(GEOM)
    assert from_arrow_field(spark_form(b"geometry", 0)) == PrimitiveType("geometry(SRID:0)")
    assert from_arrow_field(spark_form(b"geography", 4326)) == PrimitiveType(GEOG)
    with pytest.raises(SchemaError, match="mixed SRIDs"):
        from_arrow_field(spark_form(b"geometry", -1), "g")


def test_the_feature_is_read_and_written() -> None:
    check_readable(Protocol(3, 7, ("geospatial",), ("geospatial",)), table="t")
    from deltalog.txn.writer_features import check_writable

    check_writable(Protocol(3, 7, ("geospatial",), ("geospatial",)), None, table="t")


# ---------------------------------------------------------------------------------- writes and reads


def test_a_table_with_geospatial_columns_is_written_and_read(tmp_path: Path) -> None:
    shapes = [point(-1.0, 2.0), None, line((3.0, 4.0), (0.5, -7.25)), point(0.0, 3.0)]
    places = [point(10.0, 20.0), point(11.0, 21.0), None, None]
    inner = pa.StructArray.from_arrays([geo(GEOM, [point(5, 5), None, point(6, -6), None])], names=["p"])
    data = pa.table({"id": [1, 2, 3, 4], "g": geo(GEOM, shapes), "h": geo(GEOG, places), "s": inner})
    deltalog.write_table(tmp_path, data)

    snap = deltalog.Table(tmp_path).snapshot()
    assert snap.protocol == Protocol(3, 7, ("geospatial",), ("geospatial",))
    types = {f["name"]: f["type"] for f in json.loads(snap.metadata.schemaString or "")["fields"]}
    assert types["g"] == GEOM and types["h"] == GEOG
    assert types["s"]["fields"][0]["type"] == GEOM
    back = snap.to_arrow().sort_by("id")
    assert back.column("g").to_pylist() == shapes and back.column("h").to_pylist() == places
    assert back.column("s").to_pylist() == inner.to_pylist()

    (file,) = snap.add_files().column("path").to_pylist()
    logical = {c.name: str(c.logical_type) for c in pq.ParquetFile(tmp_path / file).schema}
    assert logical["g"].startswith("Geometry") and logical["h"].startswith("Geography")
    assert "algorithm=spherical" in logical["h"]

    (stats,) = stats_of(tmp_path)
    assert stats["minValues"] == {"id": 1, "g": "POINT(-1 -7.25)", "s": {"p": "POINT(5 -6)"}}
    assert stats["maxValues"] == {"id": 4, "g": "POINT(3 4)", "s": {"p": "POINT(6 5)"}}
    assert stats["nullCount"] == {"id": 0, "g": 1, "h": 2, "s": {"p": 2}}


def test_appends_take_wkb_binary_and_refuse_another_crs(tmp_path: Path) -> None:
    deltalog.write_table(tmp_path, pa.table({"id": [1], "g": geo(GEOM, [point(1, 1)])}))
    deltalog.write_table(tmp_path, pa.table({"id": [2], "g": pa.array([point(2, 2)])}), mode="append")
    rows = deltalog.Table(tmp_path).snapshot().to_arrow().sort_by("id")
    assert rows.column("g").to_pylist() == [point(1, 1), point(2, 2)]
    with pytest.raises(SchemaError, match=r"g: table geometry\(OGC:CRS84\) vs data geometry\(EPSG:3857\)"):
        deltalog.write_table(tmp_path, pa.table({"id": [3], "g": geo("geometry(EPSG:3857)", [point(3, 3)])}),
                             mode="append")


class OtherWKB(pa.ExtensionType):
    """A ``geoarrow.wkb`` type of another library (as GeoArrow's own package defines one)."""

    def __init__(self, meta: bytes = b"{}") -> None:
        self.meta = meta
        super().__init__(pa.binary(), "geoarrow.wkb")

    def __arrow_ext_serialize__(self) -> bytes:
        return self.meta

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> OtherWKB:
        return cls(serialized)


def test_another_librarys_geoarrow_type_is_written_and_read_back(tmp_path: Path) -> None:
    values = pa.ExtensionArray.from_storage(OtherWKB(b'{"crs":"EPSG:3857"}'), pa.array([point(1, 2), None]))
    deltalog.write_table(tmp_path, pa.table({"g": values}))
    assert deltalog.Table(tmp_path).snapshot().schema.field("g").type == PrimitiveType("geometry(EPSG:3857)")
    try:  # registered, pyarrow reads parquet's GEOMETRY columns as that type
        pa.register_extension_type(OtherWKB())
    except pa.ArrowKeyError:
        pytest.skip("another geoarrow.wkb type is registered with pyarrow")
    try:
        rows = deltalog.Table(tmp_path).snapshot().to_arrow()
    finally:
        pa.unregister_extension_type("geoarrow.wkb")
    assert rows.schema.field("g").type == GeoArrowWKB("EPSG:3857")
    assert rows.column("g").to_pylist() == [point(1, 2), None]


def test_a_geospatial_column_added_by_schema_evolution_enables_the_feature(tmp_path: Path) -> None:
    deltalog.write_table(tmp_path, pa.table({"id": [1]}))
    assert deltalog.Table(tmp_path).snapshot().protocol == Protocol(1, 2)
    deltalog.write_table(tmp_path, pa.table({"id": [2], "h": geo(GEOG, [point(1, 2)])}), mode="append",
                         schema_mode="merge")
    snap = deltalog.Table(tmp_path).snapshot()
    assert snap.protocol.minReaderVersion == 3 and snap.protocol.minWriterVersion == 7
    assert "geospatial" in (snap.protocol.readerFeatures or ()) and "geospatial" in (snap.protocol.writerFeatures or ())
    assert snap.to_arrow().sort_by("id").column("h").to_pylist() == [None, point(1, 2)]


def test_what_geospatial_columns_cannot_do_is_refused_naming_them(tmp_path: Path) -> None:
    data = pa.table({"id": [1, 2], "g": geo(GEOM, [point(1, 1), None])})
    with pytest.raises(InvalidArgumentError, match=r"partition column 'g' has the geospatial type geometry"):
        deltalog.write_table(tmp_path / "parted", data, partition_by=["g"])
    deltalog.write_table(tmp_path / "t", data)
    table = deltalog.Table(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match="cannot Z-order by column g"):
        table.compact(zorder_by=["g"])
    with pytest.raises(InvalidArgumentError, match=r"filter on column 'g'.*geospatial values have no order"):
        table.snapshot().to_arrow(filter=[("g", "=", point(1, 1))])
    assert table.snapshot().to_arrow(filter="g IS NOT NULL").column("id").to_pylist() == [1]


# ---------------------------------------------------------------------------------------- statistics


def _footer(schema: StructType, *groups: pa.Table) -> tuple[Any, dict[tuple[str, ...], FloatBounds]]:
    """One parquet file with a row group per table of ``groups``, and the writer-side counts."""
    sink = pa.BufferOutputStream()
    writer = pq.ParquetWriter(sink, schema.to_arrow_schema())
    counted: dict[tuple[str, ...], FloatBounds] = {}
    for group in groups:
        writer.write_table(group)
        count_floats(group, counted)
    writer.close()
    return writer.writer.metadata, counted


def test_bounding_boxes_join_row_groups_with_z_only_when_every_value_has_it() -> None:
    schema = parse_schema(schema_json(("g", GEOM)))
    footer, counted = _footer(schema, pa.table({"g": geo(GEOM, [point_z(1, 2, 3), None])}),
                              pa.table({"g": geo(GEOM, [point_z(5, -1, 0)])}))
    found = json.loads(stats_json(footer, schema, float_bounds=counted))
    assert found["minValues"] == {"g": "POINT Z(1 -1 0)"} and found["maxValues"] == {"g": "POINT Z(5 2 3)"}
    assert found["nullCount"] == {"g": 1}

    footer, counted = _footer(schema, pa.table({"g": geo(GEOM, [point_z(1, 2, 3)])}),
                              pa.table({"g": geo(GEOM, [point(0.25, 9)])}), pa.table({"g": geo(GEOM, [None])}))
    found = json.loads(stats_json(footer, schema, float_bounds=counted))
    assert found["minValues"] == {"g": "POINT(0.25 2)"} and found["maxValues"] == {"g": "POINT(1 9)"}
    assert found["nullCount"] == {"g": 1}


def test_values_without_a_bounding_box_leave_the_file_without_bounds() -> None:
    schema = parse_schema(schema_json(("g", GEOM)))
    footer, counted = _footer(schema, pa.table({"g": geo(GEOM, [point(1, 1)])}),
                              pa.table({"g": geo(GEOM, [b"\x01\x02 not wkb"])}))
    found = json.loads(stats_json(footer, schema, float_bounds=counted))
    assert "g" not in found["minValues"] and "g" not in found["maxValues"] and found["nullCount"] == {"g": 0}


def test_bounds_read_back_as_unordered_points() -> None:
    assert parse_point("POINT(1 -2.5)") == GeoPoint(1.0, -2.5)
    assert parse_point("point zm (1 2 3 4)") == GeoPoint(1.0, 2.0, 3.0, 4.0)
    assert parse_point("POINT M(1 2 7)") == GeoPoint(1.0, 2.0, None, 7.0)
    assert stat_value(PrimitiveType(GEOM), "POINT Z(1 2 3)") == GeoPoint(1.0, 2.0, 3.0)
    with pytest.raises(TypeError):
        assert GeoPoint(1.0, 2.0) < "POINT(3 4)"  # type: ignore[operator]
    with pytest.raises(InvalidArgumentError, match=r"for type geometry\(OGC:CRS84\)"):
        stat_value(PrimitiveType(GEOM), "LINESTRING(1 2, 3 4)")
    parsed = stats_struct_type(parse_schema(schema_json(("g", GEOM), ("h", GEOG))), "none", [])
    assert parsed.field("minValues").type == pa.struct([pa.field("g", pa.string()), pa.field("h", pa.string())])
    assert parsed.field("nullCount").type.names == ["g", "h"]


def test_checkpoints_keep_the_bounding_boxes(tmp_path: Path) -> None:
    deltalog.write_table(tmp_path, pa.table({"g": geo(GEOM, [point(1, 2), point(3, 4)])}),
                         properties={"delta.checkpoint.writeStatsAsJson": "false",
                                     "delta.checkpoint.writeStatsAsStruct": "true"})
    before = stats_of(tmp_path)
    deltalog.Table(tmp_path).checkpoint()
    for log in (tmp_path / "_delta_log").glob("*.json"):
        log.unlink()  # the checkpoint alone: its stats_parsed struct
    after = stats_of(tmp_path)
    assert after == before and after[0]["minValues"] == {"g": "POINT(1 2)"}


def test_a_new_table_with_a_geospatial_column_needs_the_feature(tmp_path: Path) -> None:
    schema = StructType((StructField("g", PrimitiveType("geography(OGC:CRS84, karney)")),))
    deltalog.create_table(tmp_path, schema)
    snap = deltalog.Table(tmp_path).snapshot()
    assert snap.protocol == Protocol(3, 7, ("geospatial",), ("geospatial",))
    assert snap.to_arrow().schema.field("g").type.spec == GeoSpec("geography", "OGC:CRS84", "karney")


def test_the_feature_is_dropped_once_no_geospatial_column_is_left(tmp_path: Path) -> None:
    from deltalog.commands.drop_feature import feature_traces
    from deltalog.errors import FeatureDropError

    path = str(tmp_path / "t")
    xs = pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), geo(GEOM, [point(1, 1)]))
    m = pa.MapArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["a"]), geo(GEOG, [point(2, 2)]))
    s = pa.StructArray.from_arrays([geo(GEOM, [None]), pa.array([1])], names=["p", "n"])
    deltalog.write_table(path, pa.table({"id": [1], "g": geo(GEOM, [point(0, 0)]), "xs": xs, "m": m, "s": s}),
                         properties={"delta.columnMapping.mode": "name"})
    table = deltalog.Table(path)
    version = table.latest_version()
    assert feature_traces(table.snapshot(), "geospatial") == ["geospatial columns g, xs.element, m.value, s.p"]
    with pytest.raises(FeatureDropError, match=r"\[DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE\] .* still has geospatial "
                                               r"columns g, xs\.element, m\.value, s\.p; drop those columns first"):
        table.drop_feature("geospatial")
    with pytest.raises(FeatureDropError, match="DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE"):
        table.drop_feature("geospatial", dry_run=True)
    table.drop_columns(["g", "xs", "m"])
    with pytest.raises(FeatureDropError, match=r"geospatial columns s\.p;"):
        table.drop_feature("geospatial")
    table.drop_columns(["s.p"])
    assert table.latest_version() == version + 2  # the refusals committed nothing
    with pytest.raises(FeatureDropError, match=r"DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED.*leaves no trace"):
        table.drop_feature("geospatial", truncate_history=True)
    assert table.drop_feature("geospatial", dry_run=True).steps == ("commit DROP FEATURE geospatial",)
    result = table.drop_feature("geospatial")
    assert result.version == version + 3 and result.prepared_versions == ()  # one commit, no checkpoint protection
    assert result.protocol == table.snapshot().protocol == Protocol(2, 7, None, ("columnMapping",))
    assert table.history(limit=1)[0]["operation"] == "DROP FEATURE"
    assert table.snapshot(version=version).to_arrow().column("g").to_pylist() == [point(0, 0)]  # time travel reads
    deltalog.write_table(path, pa.table({"id": [2], "s": pa.StructArray.from_arrays([pa.array([2])], names=["n"])}),
                         mode="append")
    assert sorted(table.snapshot().to_arrow().column("id").to_pylist()) == [1, 2]
