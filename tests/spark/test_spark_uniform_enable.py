"""UniForm (Iceberg) through Spark (issue 56, items 1 and 4): enabled by DataFrame writer options,
``DeltaTable.create...property``, SQL ``TBLPROPERTIES`` and ``ALTER TABLE ... SET TBLPROPERTIES``; the files
Spark's writes, DML and OPTIMIZE add carry field ids at every level, the partition columns and the compat tag;
the rules refuse with delta-spark's error classes and commit nothing; the conformance table delta-spark wrote
with icebergCompatV2 takes appends, UPDATE, DELETE and MERGE; ``REORG ... APPLY (UPGRADE UNIFORM ...)``
upgrades a table with deletion vectors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltalog

pytestmark = pytest.mark.spark

CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "delta-golden-extra" / \
    "table-with-icebegCompatV2Enabled"
UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}
PROPS = ", ".join(f"'{k}' = '{v}'" for k, v in UNIFORM.items())
FID = b"PARQUET:field_id"


def _check(path: str) -> deltalog.Snapshot:
    """The table is UniForm (Iceberg) with compat V2, and every live file is as Iceberg needs it."""
    s = deltalog.Table(path).snapshot()
    conf = s.metadata.configuration
    assert conf["delta.enableIcebergCompatV2"] == "true" and conf["delta.universalFormat.enabledFormats"] == "iceberg"
    assert conf["delta.columnMapping.mode"] in ("name", "id")
    assert {"columnMapping", "icebergCompatV2"} <= set(s.protocol.writerFeatures or ())
    parts = {str(f.metadata["delta.columnMapping.physicalName"]) for f in s.schema.fields
             if f.name in s.partition_columns}
    for f in s.add_files().to_pylist():
        assert dict(f["tags"] or []).get("ICEBERG_COMPAT_VERSION") == "2" and f["deletionVector"] is None
        assert "numRecords" in json.loads(f["stats"])
        schema = pq.read_schema(Path(path) / f["path"])
        assert parts <= set(schema.names)

        def walk(field: pa.Field) -> None:
            assert field.metadata and FID in field.metadata, field
            t = field.type
            children = ([t.field(i) for i in range(t.num_fields)] if pa.types.is_struct(t) else
                        [t.key_field, t.item_field] if pa.types.is_map(t) else
                        [t.value_field] if pa.types.is_list(t) else [])
            for c in children:
                walk(c)

        for field in schema:
            walk(field)
    return s


def _rows(spark: Any, path: str, *columns: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())


def test_every_way_of_enabling_it(spark: Any, tmp_path: Path) -> None:
    df = spark.createDataFrame([(1, [1, 2], {"a": 1}, "x"), (2, [3], {}, "y")],
                               "id long, xs array<int>, m map<string,long>, day string")
    # DataFrame writer options
    a = str(tmp_path / "a")
    writer = df.write.format("delta").partitionBy("day")
    for k, v in UNIFORM.items():
        writer = writer.option(k, v)
    writer.save(a)
    df.write.format("delta").mode("append").save(a)
    assert _check(a).metadata.configuration["delta.columnMapping.mode"] == "name"
    assert _rows(spark, a, "id", "day") == [(1, "x"), (1, "x"), (2, "y"), (2, "y")]
    assert spark.read.format("delta").load(a).where("day = 'y'").select("xs").first()[0] == [3]

    # DeltaTable.create ... property
    from deltalog.spark import DeltaTable

    b = str(tmp_path / "b")
    builder = DeltaTable.create(spark).location(b).addColumns(df.schema).partitionedBy("day")
    for k, v in UNIFORM.items():
        builder = builder.property(k, v)
    builder.execute()
    df.write.format("delta").mode("append").save(b)
    _check(b)

    # SQL TBLPROPERTIES, then Spark's DML and OPTIMIZE keep the files compliant
    c = str(tmp_path / "c")
    t = f"delta.`{c}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, xs ARRAY<INT>, s STRUCT<n: INT, ys: ARRAY<STRING>>, day STRING) "
              f"USING DELTA PARTITIONED BY (day) TBLPROPERTIES ({PROPS})")
    spark.sql(f"INSERT INTO {t} VALUES (1, array(1), named_struct('n', 1, 'ys', array('a')), 'x'), "
              "(2, array(2), named_struct('n', 2, 'ys', array('b')), 'y'), "
              "(3, array(3), named_struct('n', 3, 'ys', array('c')), 'x')")
    spark.sql(f"UPDATE {t} SET id = id + 10 WHERE id = 1")
    spark.sql(f"DELETE FROM {t} WHERE id = 2")
    spark.sql(f"MERGE INTO {t} x USING (SELECT 3L AS id, array(30) AS xs, named_struct('n', 30, 'ys', "
              "array('z')) AS s, 'x' AS day UNION ALL SELECT 4L, array(4), named_struct('n', 4, 'ys', array('d')), "
              "'z') src ON x.id = src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    _check(c)  # the files UPDATE, DELETE and MERGE wrote
    spark.sql(f"OPTIMIZE {t}")
    _check(c)
    assert _rows(spark, c, "id", "day") == [(3, "x"), (4, "z"), (11, "x")]

    # ALTER TABLE ... SET TBLPROPERTIES on a column-mapped table (empty: nothing to rewrite)
    d = str(tmp_path / "d")
    spark.sql(f"CREATE TABLE delta.`{d}` (id BIGINT, day STRING) USING DELTA "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    spark.sql(f"ALTER TABLE delta.`{d}` SET TBLPROPERTIES ({PROPS})")
    spark.sql(f"INSERT INTO delta.`{d}` VALUES (1, 'x')")
    _check(d)
    spark.sql(f"ALTER TABLE delta.`{d}` UNSET TBLPROPERTIES ('delta.enableIcebergCompatV2')")
    assert "delta.universalFormat.enabledFormats" not in deltalog.Table(d).snapshot().metadata.configuration

    # REPLACE TABLE ... AS SELECT of a table without column mapping: a new table, column mapping set
    r = str(tmp_path / "r")
    spark.range(2).write.format("delta").save(r)
    spark.sql(f"REPLACE TABLE delta.`{r}` USING DELTA PARTITIONED BY (k) TBLPROPERTIES ({PROPS}) "
              "AS SELECT id, array(int(id)) AS xs, id % 2 AS k FROM range(4)")
    _check(r)
    assert _rows(spark, r, "id", "k") == [(0, 0), (1, 1), (2, 0), (3, 1)]


def test_rules_refuse_with_delta_spark_error_classes(spark: Any, tmp_path: Path) -> None:
    e = str(tmp_path / "e")
    t = f"delta.`{e}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING DELTA")
    spark.sql(f"INSERT INTO {t} VALUES (1)")
    version = deltalog.Table(e).latest_version()
    with pytest.raises(Exception, match=r"DELTA_ICEBERG_COMPAT_VIOLATION\.WRONG_REQUIRED_TABLE_PROPERTY.*UPGRADE"):
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ({PROPS})")
    with pytest.raises(Exception, match="DELTA_UNIVERSAL_FORMAT_VIOLATION"):
        spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('delta.universalFormat.enabledFormats' = 'iceberg')")
    assert deltalog.Table(e).latest_version() == version
    f = str(tmp_path / "f")
    with pytest.raises(Exception, match=r"DELTA_ICEBERG_COMPAT_VIOLATION\.DELETION_VECTORS_SHOULD_BE_DISABLED"):
        spark.range(3).write.format("delta").option("delta.enableIcebergCompatV2", "true") \
            .option("delta.enableDeletionVectors", "true").save(f)
    assert not (Path(f) / "_delta_log").exists() or not list((Path(f) / "_delta_log").glob("*.json"))


def test_upgrade_uniform_and_the_conformance_table(spark: Any, tmp_path: Path) -> None:
    g = str(tmp_path / "g")
    t = f"delta.`{g}`"
    spark.range(12).selectExpr("id", "array(int(id)) AS xs", "concat('p', id % 2) AS p").coalesce(1) \
        .write.format("delta").partitionBy("p").option("delta.enableDeletionVectors", "true").save(g)
    spark.sql(f"DELETE FROM {t} WHERE id = 1")
    assert any(deltalog.Table(g).snapshot().add_files().column("deletionVector").to_pylist())
    spark.sql(f"REORG TABLE {t} APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION = 2))")
    _check(g)
    assert [r[0] for r in _rows(spark, g, "id")] == [0, *range(2, 12)]
    assert [h["operation"] for h in deltalog.Table(g).history(limit=3)] == [
        "SET TBLPROPERTIES", "REORG", "SET TBLPROPERTIES"]

    if not CONFORMANCE.exists():
        pytest.skip("../shared/conformance is not there")
    root = tmp_path / "conformance"
    shutil.copytree(CONFORMANCE, root)
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    path = str(root)
    before = spark.read.format("delta").load(path)
    count = before.count()
    before.limit(2).write.format("delta").mode("append").save(path)
    c = f"delta.`{path}`"
    spark.sql(f"UPDATE {c} SET StringType = 'changed' WHERE IntegerType = 1")
    spark.sql(f"DELETE FROM {c} WHERE IntegerType = 0")
    spark.sql(f"ALTER TABLE {c} SET TBLPROPERTIES ('delta.universalFormat.enabledFormats' = 'iceberg')")
    s = _check(path)
    assert s.metadata.configuration["delta.columnMapping.mode"] == "id"
    after = spark.read.format("delta").load(path)
    assert after.where("IntegerType = 0").count() == 0 and after.count() < count + 2
    assert {r[0] for r in after.where("IntegerType = 1").select("StringType").collect()} == {"changed"}


def test_merge_adding_nested_columns_writes_their_ids(spark: Any, tmp_path: Path) -> None:
    """A MERGE with schema evolution that adds an array and a map column to a compat table gives their elements,
    keys and values ids before it writes a file: every field of the new files carries one."""
    from deltalog.spark import DeltaTable

    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta TBLPROPERTIES ({PROPS})")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
    source = spark.createDataFrame([(2, "B", [1, 2], {"k": 1}), (3, "c", None, None)],
                                   "id long, v string, xs array<int>, m map<string,int>")
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id").withSchemaEvolution()
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    snap = _check(path)
    assert [f.name for f in snap.schema.fields] == ["id", "v", "xs", "m"]
    assert _rows(spark, path, "id", "v") == [(1, "a"), (2, "B"), (3, "c")]
