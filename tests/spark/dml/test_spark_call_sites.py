"""PySpark 4's DataFrame debugging records each ``Column`` call's Python call site in the JVM; the columns deltalog
builds inside its own API calls skip it (:func:`deltalog.spark.common.compat.quiet_call_sites`), the user's columns
keep it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deltalog.spark.common.compat import quiet_call_sites

pytestmark = pytest.mark.spark


def test_quiet_only_where_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.errors import utils

    monkeypatch.setattr(utils, "is_debugging_enabled", lambda: True, raising=False)  # as if a session enabled it
    inside = [False]
    quiet_call_sites(lambda: inside[0])
    assert utils.is_debugging_enabled() is True
    inside[0] = True
    assert utils.is_debugging_enabled() is False
    patched = utils.is_debugging_enabled
    quiet_call_sites(lambda: False)  # installed once: a second call changes nothing
    assert utils.is_debugging_enabled is patched


def test_merge_records_no_call_site_of_its_own(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.errors import utils
    from pyspark.sql import functions as F

    from deltalog.spark import DeltaTable, write

    original = getattr(utils, "is_debugging_enabled", None)
    if original is None:
        pytest.skip(f"this PySpark ({spark.version}) records no DataFrame call sites")  # 3.5
    monkeypatch.setattr(utils, "_enable_debugging_cache", True)  # the default: debugging on
    spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)  # the capture needs an active session
    captured: list[str] = []
    real = utils._capture_call_site

    def counting(depth: int) -> str:
        captured.append("x")
        return real(depth)

    monkeypatch.setattr(utils, "_capture_call_site", counting)
    path = str(tmp_path / "t")
    write(spark.range(0, 100, numPartitions=2).withColumn("v", F.lit(0)), path)
    source = spark.range(50, 150).withColumn("v", F.lit(1) + 0)  # the user's columns: call sites recorded
    assert captured
    captured.clear()
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    assert captured == []  # hundreds of columns built by the MERGE, none recording a call site
    assert spark.read.format("delta").load(path).where("v = 1").count() == 100
    assert (F.col("id") + 1) is not None and captured  # outside deltalog's calls the capture is back
