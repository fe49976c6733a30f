"""Write a class-data-sharing archive of the classes a deltalog Spark session loads, for the test suite.

Every JVM the Spark tests start (the programs, drivers, clusters and Connect servers of the own_jvm tests,
and the sessions of the two lanes) loads some 20,000 classes from Spark's jars, parsing and verifying
each; with the archive, Java 17 maps most of them ready-made, which halves a short-lived JVM's start-up
CPU (about 8 s of 18 on CI's cores). ``make test`` runs this once per virtualenv, beside the first tests;
``tests/conftest.py`` names the archive to every JVM (``JAVA_TOOL_OPTIONS``), and one started before it
exists, or whose class path or Java version differs from the one recorded, loads classes as usual: a
stale or missing archive costs time, never correctness. This script never fails the build: without
Java or pyspark it only says so.

    python scripts/spark_cds.py .tools/spark-cds.jsa
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def workload(work: str, archive: str) -> None:
    """A session doing the common part of what the tests do -- a write, SQL, a read with a shuffle -- so
    that those classes are loaded, and archived when the JVM exits. (A longer workload archives more
    classes but was measured to save no more: the start-up classes are most of the gain.)"""
    from deltalog.spark import local_session
    from deltalog.spark.session import LEAN_JVM_OPTIONS  # what every test JVM runs with

    spark = local_session("spark-cds", conf={
        "spark.driver.extraJavaOptions": f"{LEAN_JVM_OPTIONS} -XX:ArchiveClassesAtExit={archive} -Xlog:cds=off",
        "spark.sql.warehouse.dir": f"{work}/warehouse",
    })
    path = f"{work}/t"
    spark.range(20).selectExpr("id", "id % 3 AS p").write.format("delta").partitionBy("p").save(path)
    spark.sql(f"UPDATE delta.`{path}` SET id = id + 1 WHERE p = 1")
    spark.read.format("delta").load(path).groupBy("p").count().collect()
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    if gateway is not None and getattr(gateway, "proc", None) is not None:
        gateway.shutdown()
        gateway.proc.stdin.close()  # the JVM exits on end of input, writing the archive first
        gateway.proc.wait(timeout=300)


def main(argv: list[str]) -> int:
    target = Path(argv[0]).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    for name in ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"):  # an archive given to this JVM would be in the new one
        os.environ.pop(name, None)
    partial = target.with_name(target.name + ".partial")  # beside the target: the rename below is atomic
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="spark-cds-") as work:
        try:
            workload(work, str(partial))
        except Exception as exc:  # no Java, no pyspark, ...: the tests run without the archive
            print(f"spark_cds: no archive written ({type(exc).__name__}: {exc})".splitlines()[0], file=sys.stderr)
            return 0
    if not partial.exists():
        print("spark_cds: the JVM wrote no archive; the tests run without it", file=sys.stderr)
        return 0
    os.replace(partial, target)  # whole or not at all: a JVM starting meanwhile never sees a partial archive
    print(f"spark_cds: {target} ({target.stat().st_size // 2**20} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
