"""DROP FEATURE through Spark: ``DeltaTable.dropFeatureSupport`` (delta-spark's name and argument checks)
and SQL ``ALTER TABLE ... DROP FEATURE name [TRUNCATE HISTORY]``; Spark reads the same rows after the
deletion vectors are purged, and refusals surface as ``AnalysisException``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import deltalog
from deltalog.protocol.features import reader_features, writer_features

pytestmark = pytest.mark.spark


def test_drop_feature_through_spark(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    from deltalog.spark import DeltaTable

    path = str(tmp_path / "d")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING DELTA TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', "
              "'delta.checkpointPolicy' = 'v2')")
    spark.range(0, 20, 1, 2).write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM {t} WHERE id % 5 = 0")
    dt = DeltaTable.forPath(spark, path)
    with pytest.raises(ValueError, match="featureName"):
        dt.dropFeatureSupport(7)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="truncateHistory"):
        dt.dropFeatureSupport("deletionVectors", "yes")  # type: ignore[arg-type]
    with pytest.raises(AnalysisException, match="DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"):
        dt.dropFeatureSupport("deletionVectors", truncateHistory=True)  # purges, then asks to wait
    dt.dropFeatureSupport("deletionVectors")  # without truncation: checkpointProtection
    spark.sql(f"ALTER TABLE {t} DROP FEATURE v2Checkpoint")
    protocol = deltalog.Table(path).snapshot().protocol
    assert set(reader_features(protocol)) == set()
    assert set(writer_features(protocol)) == {"checkpointProtection"}
    with pytest.raises(AnalysisException, match="DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"):
        spark.sql(f"ALTER TABLE {t} DROP FEATURE deletionVectors")
    with pytest.raises(AnalysisException, match="DROP FEATURE <name>"):
        spark.sql(f"ALTER TABLE {t} DROP FEATURE v2Checkpoint TRUNCATE")
    rows = sorted(r.id for r in spark.read.format("delta").load(path).collect())
    assert rows == [i for i in range(20) if i % 5]
    ops = [r.operation for r in dt.history(4).collect()]
    assert ops == ["DROP FEATURE", "SET TBLPROPERTIES", "DROP FEATURE", "REORG"]
