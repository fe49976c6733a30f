"""Geospatial tables through the Spark engine: Delta's ``geometry(<crs>)`` / ``geography(<crs>, <algorithm>)`` are
Spark's ``GeometryType`` / ``GeographyType``; tables are created (DataFrame writes, SQL, ``DeltaTable.create``,
``ALTER TABLE ADD COLUMN``), written (appends, DML) and read with their WKB values, the kernel and Spark reading
each other's files; Spark before 4.2 is refused naming the version needed."""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog
from deltalog.errors import InvalidArgumentError
from deltalog.protocol.actions import Protocol
from deltalog.protocol.schema import PrimitiveType, parse_data_type, to_arrow_type
from deltalog.spark import DeltaTable
from deltalog.spark.common import compat
from deltalog.spark.common.core import geo_ddl, spark_type

pytestmark = pytest.mark.spark
needs_geo = pytest.mark.skipif(not compat.GEOSPATIAL, reason="Spark reads and writes geospatial columns from 4.2")

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "conformance"
GEO_TABLE = CORPUS / "kernel-rs-data" / "table-with-geo"
GEOM = "geometry(OGC:CRS84)"
GEOG = "geography(OGC:CRS84, spherical)"
FEATURE = Protocol(3, 7, ("geospatial",), ("geospatial",))


def point(x: float, y: float) -> bytes:
    """A little-endian WKB point, written out independently of deltalog and Spark."""
    return struct.pack("<BIdd", 1, 1, x, y)


def hexed(x: float, y: float) -> str:
    return point(x, y).hex().upper()


def wkb_rows(df: Any, *columns: str) -> list[tuple[Any, ...]]:
    """``(id, hex WKB of each column...)`` sorted by id, through Spark's own ``ST_AsBinary``."""
    exprs = ["id", *[f"hex(ST_AsBinary({c}))" for c in columns]]
    return sorted(tuple(r) for r in df.selectExpr(*exprs).collect())


def schema_types(path: Path | str) -> dict[str, Any]:
    snap = deltalog.Table(path).snapshot()
    return {f["name"]: f["type"] for f in json.loads(snap.metadata.schemaString or "")["fields"]}


@needs_geo
def test_delta_geospatial_types_are_spark_types() -> None:
    from pyspark.sql.types import GeographyType, GeometryType

    assert spark_type(PrimitiveType(GEOM)) == GeometryType(4326)
    assert spark_type(PrimitiveType(GEOG)) == GeographyType(4326)  # Delta's lower-case algorithm, Spark's upper
    assert spark_type(PrimitiveType("geometry(srid:0)")) == GeometryType(0)
    assert spark_type(PrimitiveType("geometry(EPSG:3857)")) == GeometryType(3857)
    with pytest.raises(InvalidArgumentError, match=r"column 'x' \(geography\(OGC:CRS84, vincenty\)\) has no Spark"):
        spark_type(PrimitiveType("geography(OGC:CRS84, vincenty)"))
    assert [geo_ddl(PrimitiveType(t)) for t in (GEOM, GEOG, "geometry(EPSG:3857)")] == \
        ["GEOMETRY(4326)", "GEOGRAPHY(4326)", "GEOMETRY(3857)"]
    with pytest.raises(InvalidArgumentError, match="has no Spark DDL"):
        geo_ddl(PrimitiveType("geometry(projjson:delta.crs)"))


@needs_geo
def test_dataframe_writes_and_dml_keep_wkb_and_write_bounding_boxes(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "df")
    frame = spark.sql(
        f"SELECT 1 AS id, ST_GeomFromWKB(X'{hexed(1, 1)}', 4326) AS g, ST_GeogFromWKB(X'{hexed(2, 3)}') AS h, "
        f"named_struct('p', ST_GeomFromWKB(X'{hexed(-5, 8)}', 4326)) AS s "
        f"UNION ALL SELECT 2, ST_GeomFromWKB(X'{hexed(4, -2)}', 4326), NULL, named_struct('p', NULL)")
    frame.coalesce(1).write.format("delta").save(path)
    snap = deltalog.Table(path).snapshot()
    assert snap.protocol == FEATURE
    types = schema_types(path)
    assert types["g"] == GEOM and types["h"] == GEOG and types["s"]["fields"][0]["type"] == GEOM
    (stats,) = [json.loads(s) for s in snap.add_files().column("stats").to_pylist()]
    assert stats["minValues"]["g"] == "POINT(1 -2)" and stats["maxValues"]["g"] == "POINT(4 1)"
    assert stats["minValues"]["s"] == {"p": "POINT(-5 8)"} and "h" not in stats["minValues"]
    assert stats["nullCount"] == {"id": 0, "g": 0, "h": 1, "s": {"p": 1}}

    df = spark.read.format("delta").load(path)
    assert wkb_rows(df, "g", "h", "s.p") == [(1, hexed(1, 1), hexed(2, 3), hexed(-5, 8)), (2, hexed(4, -2), None, None)]
    assert df.filter("h IS NULL").count() == 1

    spark.sql(f"UPDATE delta.`{path}` SET g = ST_GeomFromWKB(X'{hexed(9, 9)}', 4326) WHERE id = 2")
    spark.sql(f"MERGE INTO delta.`{path}` t USING (SELECT 3 AS id, ST_GeomFromWKB(X'{hexed(7, 7)}', 4326) AS g) u "
              "ON t.id = u.id WHEN NOT MATCHED THEN INSERT (id, g) VALUES (u.id, u.g)")
    DeltaTable.forPath(spark, path).delete("id = 1")
    want = [(2, hexed(9, 9)), (3, hexed(7, 7))]
    assert wkb_rows(spark.read.format("delta").load(path), "g") == want
    kernel = deltalog.Table(path).snapshot().to_arrow(columns=["id", "g"]).sort_by("id")
    assert kernel.column("g").to_pylist() == [point(9, 9), point(7, 7)]
    with pytest.raises(Exception, match="cannot Z-order by column g"):
        spark.sql(f"OPTIMIZE delta.`{path}` ZORDER BY (g)")

    only_geometry = str(tmp_path / "geometry")  # (no geography: Spark's own parquet writer can write the files)
    spark.sql(f"SELECT 1 AS id, ST_GeomFromWKB(X'{hexed(1, 5)}', 4326) AS g UNION ALL "
              f"SELECT 2, ST_GeomFromWKB(X'{hexed(-3, 2)}', 4326)").coalesce(1).write.format("delta") \
        .save(only_geometry)
    (stats,) = [json.loads(s) for s in deltalog.Table(only_geometry).snapshot().add_files().column("stats").to_pylist()]
    assert (stats["minValues"]["g"], stats["maxValues"]["g"], stats["nullCount"]["g"]) == \
        ("POINT(-3 2)", "POINT(1 5)", 0)


@needs_geo
def test_tables_are_created_by_sql_the_builder_and_alter_table(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import GeographyType

    name = f"geo_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} (id INT, g GEOMETRY(4326), h GEOGRAPHY(4326)) USING DELTA")
    try:
        spark.sql(f"INSERT INTO {name} VALUES (1, ST_GeomFromWKB(X'{hexed(1, 2)}', 4326), "
                  f"ST_GeogFromWKB(X'{hexed(3, 4)}')), (2, NULL, NULL)")
        assert wkb_rows(spark.table(name), "g", "h") == [(1, hexed(1, 2), hexed(3, 4)), (2, None, None)]
        location = spark.sql(f"DESCRIBE DETAIL {name}").first()["location"]
        assert deltalog.Table(location).snapshot().protocol == FEATURE
        assert schema_types(location) == {"id": "integer", "g": GEOM, "h": GEOG}
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")

    built = str(tmp_path / "built")
    DeltaTable.create(spark).location(built).addColumn("id", "INT").addColumn("g", "GEOMETRY(3857)") \
        .addColumn("h", GeographyType(4326)).execute()
    assert deltalog.Table(built).snapshot().protocol == FEATURE
    assert schema_types(built) == {"id": "integer", "g": "geometry(EPSG:3857)", "h": GEOG}

    plain = str(tmp_path / "plain")
    spark.range(2).write.format("delta").save(plain)
    assert deltalog.Table(plain).snapshot().protocol == Protocol(1, 2)
    spark.sql(f"ALTER TABLE delta.`{plain}` ADD COLUMN g GEOMETRY(4326)")
    snap = deltalog.Table(plain).snapshot()
    assert "geospatial" in (snap.protocol.readerFeatures or ()) and schema_types(plain)["g"] == GEOM
    spark.sql(f"INSERT INTO delta.`{plain}` VALUES (5, ST_GeomFromWKB(X'{hexed(0, 1)}', 4326))")
    assert wkb_rows(spark.read.format("delta").load(plain), "g") == [(0, None), (1, None), (5, hexed(0, 1))]


@needs_geo
def test_spark_reads_what_the_kernel_writes_and_the_corpus_table(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import GeographyType, GeometryType

    def geo(type_name: str, values: list[bytes | None]) -> pa.ExtensionArray:
        return pa.ExtensionArray.from_storage(to_arrow_type(parse_data_type(type_name)), pa.array(values, pa.binary()))

    path = str(tmp_path / "kernel")
    deltalog.write_table(path, pa.table({"id": [1, 2], "g": geo(GEOM, [point(1, 1), None]),
                                         "h": geo(GEOG, [None, point(2, 2)])}))
    df = spark.read.format("delta").load(path)
    assert df.schema["g"].dataType == GeometryType(4326) and df.schema["h"].dataType == GeographyType(4326)
    assert wkb_rows(df, "g", "h") == [(1, hexed(1, 1), None), (2, None, hexed(2, 2))]
    spark.sql(f"SELECT 3 AS id, ST_GeomFromWKB(X'{hexed(3, 3)}', 4326) AS g, ST_GeogFromWKB(X'{hexed(4, 4)}') AS h") \
        .write.format("delta").mode("append").save(path)
    rows = deltalog.Table(path).snapshot().to_arrow().sort_by("id")
    assert rows.column("g").to_pylist() == [point(1, 1), None, point(3, 3)]
    assert rows.column("h").to_pylist() == [None, point(2, 2), point(4, 4)]

    if not GEO_TABLE.is_dir():
        pytest.skip(f"conformance corpus missing at {CORPUS}")
    corpus = spark.read.format("delta").load(str(GEO_TABLE))
    assert [(f.name, f.dataType) for f in corpus.schema] == [("geom", GeometryType(4326)),
                                                             ("geog", GeographyType(4326))]
    assert corpus.count() == 0


def test_spark_without_geospatial_support_is_refused_naming_the_version(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "kernel")
    geom = to_arrow_type(parse_data_type(GEOM))
    values = pa.ExtensionArray.from_storage(geom, pa.array([point(1, 1)]))
    deltalog.write_table(path, pa.table({"id": [1], "g": values}))
    monkeypatch.setattr(compat, "GEOSPATIAL", False)  # as on PySpark 3.5 to 4.1
    with pytest.raises(Exception, match=r"geometry\(OGC:CRS84\) column 'g' needs Spark 4\.2 or later") as found:
        spark.read.format("delta").load(path).collect()
    assert f"runs PySpark {compat.PYSPARK_VERSION}" in str(found.value) and "snapshot().to_arrow()" in str(found.value)


def run_stream(query: Any) -> None:
    """Wait for an ``availableNow`` query to end (its failure raised), then stop it."""
    try:
        query.awaitTermination(120)
    finally:
        query.stop()


@needs_geo
def test_streams_read_and_write_geospatial_columns(spark: Any, tmp_path: Path) -> None:
    src, dst, chk = str(tmp_path / "src"), str(tmp_path / "dst"), str(tmp_path / "chk")
    spark.sql(f"SELECT 1 AS id, ST_GeomFromWKB(X'{hexed(1, 2)}', 4326) AS g, ST_GeogFromWKB(X'{hexed(3, 4)}') AS h, "
              f"named_struct('p', ST_GeomFromWKB(X'{hexed(5, 6)}', 4326)) AS s").write.format("delta").save(src)
    spark.sql(f"INSERT INTO delta.`{src}` VALUES (2, NULL, ST_GeogFromWKB(X'{hexed(7, 8)}'), named_struct('p', NULL)), "
              "(3, NULL, NULL, NULL)")
    want = [(1, hexed(1, 2), hexed(3, 4), hexed(5, 6)), (2, None, hexed(7, 8), None), (3, None, None, None)]

    stream = spark.readStream.format("delta").load(src)
    assert stream.schema == spark.read.format("delta").load(src).schema
    memory = f"geo_stream_{uuid.uuid4().hex[:8]}"
    run_stream(stream.writeStream.format("memory").queryName(memory).trigger(availableNow=True).start())
    assert wkb_rows(spark.table(memory), "g", "h", "s.p") == want

    run_stream(stream.writeStream.format("delta").option("checkpointLocation", chk).trigger(availableNow=True)
               .start(dst))
    assert deltalog.Table(dst).snapshot().protocol == FEATURE and schema_types(dst) == schema_types(src)
    assert wkb_rows(spark.read.format("delta").load(dst), "g", "h", "s.p") == want

    def geo(type_name: str, values: list[bytes | None]) -> pa.ExtensionArray:
        return pa.ExtensionArray.from_storage(to_arrow_type(parse_data_type(type_name)), pa.array(values, pa.binary()))

    nested = str(tmp_path / "nested")  # geometries in an array and a map, written by the kernel
    items = pa.ListArray.from_arrays(pa.array([0, 2, 2, 3], pa.int32()), geo(GEOM, [point(1, 1), None, point(2, 2)]),
                                     mask=pa.array([False, True, False]))
    places = pa.MapArray.from_arrays(pa.array([0, 1, 1, 1], pa.int32()), pa.array(["a"]), geo(GEOG, [point(3, 3)]))
    deltalog.write_table(nested, pa.table({"id": [1, 2, 3], "xs": items, "m": places}))
    memory = f"geo_nested_{uuid.uuid4().hex[:8]}"
    run_stream(spark.readStream.format("delta").load(nested).writeStream.format("memory").queryName(memory)
               .trigger(availableNow=True).start())
    got = spark.table(memory).selectExpr("id", "transform(xs, x -> hex(ST_AsBinary(x)))",
                                         "hex(ST_AsBinary(m['a']))", "size(m)").collect()
    assert sorted(tuple(r) for r in got) == [(1, [hexed(1, 1), None], hexed(3, 3), 1), (2, None, None, 0),
                                             (3, [hexed(2, 2)], None, 0)]


@needs_geo
def test_create_table_like_a_geospatial_table(spark: Any, tmp_path: Path) -> None:
    source, copy = f"geo_{uuid.uuid4().hex[:8]}", f"geo_like_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {source} (id INT, g GEOMETRY(4326), h GEOGRAPHY(4326)) USING DELTA")
    try:
        spark.sql(f"CREATE TABLE {copy} LIKE {source}")
        location = spark.sql(f"DESCRIBE DETAIL {copy}").first()["location"]
        assert schema_types(location) == {"id": "integer", "g": GEOM, "h": GEOG}
        assert deltalog.Table(location).snapshot().protocol == FEATURE
        spark.sql(f"INSERT INTO {copy} VALUES (1, ST_GeomFromWKB(X'{hexed(1, 2)}', 4326), "
                  f"ST_GeogFromWKB(X'{hexed(3, 4)}'))")
        assert wkb_rows(spark.table(copy), "g", "h") == [(1, hexed(1, 2), hexed(3, 4))]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {copy}")
        spark.sql(f"DROP TABLE IF EXISTS {source}")

    by_path, like_path = str(tmp_path / "source"), str(tmp_path / "like")
    spark.sql(f"CREATE TABLE delta.`{by_path}` (id INT, s STRUCT<p: GEOGRAPHY(4326)>) USING DELTA")
    spark.sql(f"CREATE TABLE delta.`{like_path}` LIKE delta.`{by_path}`")
    assert schema_types(like_path)["s"]["fields"][0]["type"] == GEOG
    assert deltalog.Table(like_path).snapshot().protocol == FEATURE


@needs_geo
def test_drop_feature_geospatial_once_no_geospatial_column_is_left(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT, g GEOMETRY(4326), s STRUCT<p: GEOGRAPHY(4326)>) USING DELTA "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    drop = f"ALTER TABLE delta.`{path}` DROP FEATURE geospatial"
    with pytest.raises(AnalysisException, match=r"DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE.*columns g, s\.p"):
        spark.sql(drop)
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN g")
    with pytest.raises(AnalysisException, match=r"DELTA_CANNOT_DROP_GEOSPATIAL_FEATURE.*columns s\.p;"):
        spark.sql(drop)
    spark.sql(f"ALTER TABLE delta.`{path}` DROP COLUMN s")
    with pytest.raises(AnalysisException, match="DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED"):
        spark.sql(drop + " TRUNCATE HISTORY")
    version = deltalog.Table(path).snapshot().version
    spark.sql(drop)
    snap = deltalog.Table(path).snapshot()
    assert snap.version == version + 1  # one commit: no checkpoint protection, as delta-spark (no history traces)
    features = set(snap.protocol.readerFeatures or ()) | set(snap.protocol.writerFeatures or ())
    assert "geospatial" not in features and "checkpointProtection" not in features
    assert "columnMapping" in features and snap.protocol.minReaderVersion >= 2
    assert deltalog.Table(path).history(limit=1)[0]["operation"] == "DROP FEATURE"
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")
    assert [r["id"] for r in spark.read.format("delta").load(path).collect()] == [1]
