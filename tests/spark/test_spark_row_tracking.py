"""Row tracking through Spark: DataFrame appends and MERGE inserts get fresh row ids, a DELETE with
deletion vectors keeps them, and an UPDATE (which would move rows) is refused with nothing committed."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import deltalog

pytestmark = pytest.mark.spark


def test_row_tracking_through_spark(spark: Any, tmp_path: Path) -> None:
    from readers import duckdb_rows

    path = str(tmp_path / "r")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING DELTA TBLPROPERTIES ('delta.enableRowTracking' = 'true', "
              "'delta.enableDeletionVectors' = 'true')")
    spark.range(0, 10, 1, 2).write.format("delta").mode("append").save(path)
    spark.sql(f"MERGE INTO {t} x USING (SELECT 20L AS id) s ON x.id = s.id WHEN NOT MATCHED THEN INSERT *")
    spark.sql(f"DELETE FROM {t} WHERE id = 3")
    files = deltalog.Table(path).snapshot().add_files().select(["baseRowId", "stats"]).to_pylist()
    ranges = sorted((f["baseRowId"], f["baseRowId"] + json.loads(f["stats"])["numRecords"]) for f in files)
    assert ranges[0][0] == 0 and all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))  # disjoint ranges
    version = deltalog.Table(path).latest_version()
    with pytest.raises(Exception, match="row ids of moved rows"):
        spark.sql(f"UPDATE {t} SET id = id + 100 WHERE id = 5")
    assert deltalog.Table(path).latest_version() == version
    want = sorted([(i,) for i in range(10) if i != 3] + [(20,)])
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == want
    assert duckdb_rows(path, ["id"]) == want
