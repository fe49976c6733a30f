"""Which Python Spark's workers run, and what a worker that cannot import deltalog is told.

deltalog's writes, DML, OPTIMIZE and deletion-vector work run in Spark's Python workers (``mapInArrow``
tasks, Python data sources), which must import deltalog and pyarrow. PySpark starts them with
``PYSPARK_PYTHON``, else ``python3`` from ``PATH`` -- for a program started as ``.venv/bin/python job.py``
without activating the venv, an interpreter that has neither.

* In local mode (``local``, ``local[N]``, ``local-cluster[...]``: the workers run on this machine) and when
  the user chose no interpreter (no ``PYSPARK_PYTHON``, no ``spark.pyspark.python``), the workers run the
  driver's own interpreter: :func:`use_driver_python_for` before a session starts, :func:`use_driver_python`
  for one that runs already.
* On a cluster the executors' interpreter is the deployment's to provide; a worker that cannot import
  deltalog fails with :func:`worker_import_error`'s message, which names the fix.

Example:
    >>> is_local_master("local[2]"), is_local_master("spark://host:7077"), is_local_master(None)
    (True, False, True)
    >>> worker_import_error("ModuleNotFoundError: No module named 'pyarrow'") is not None
    True
"""

from __future__ import annotations

import os
import sys
from typing import Any

from deltalog.errors import DeltaError

__all__ = ["is_local_master", "use_driver_python", "use_driver_python_for", "worker_import_error"]

_CHOSEN_CONF = "spark.pyspark.python"
_MISSING = ("No module named 'deltalog", "No module named 'pyarrow", "No module named 'obstore")


def is_local_master(master: str | None) -> bool:
    """Whether Spark's workers run on this machine under ``master`` (``None``: not set, PySpark's default
    ``local[*]``).

    Example:
        >>> is_local_master("local-cluster[2,1,1024]"), is_local_master("yarn")
        (True, False)
    """
    return master is None or str(master).strip().lower().startswith("local")


def _chosen(conf_value: Any) -> bool:
    return bool(os.environ.get("PYSPARK_PYTHON")) or bool(conf_value)


def use_driver_python_for(builder: Any) -> None:
    """Before a session starts from ``builder``: in local mode, with no interpreter chosen, let Spark's
    Python workers (and the JVM it launches) run this interpreter (``PYSPARK_PYTHON``).

    Example:
        >>> use_driver_python_for(SparkSession.builder.master("local[2]"))             # doctest: +SKIP
        >>> os.environ["PYSPARK_PYTHON"] == sys.executable                            # doctest: +SKIP
        True
    """
    options = getattr(builder, "_options", None)
    options = options if isinstance(options, dict) else {}
    if _chosen(options.get(_CHOSEN_CONF)) or not is_local_master(options.get("spark.master") or _submitted_master()):
        return
    os.environ["PYSPARK_PYTHON"] = sys.executable


def _submitted_master() -> str | None:
    """The master given on a ``spark-submit`` / ``pyspark`` command line (``PYSPARK_SUBMIT_ARGS``), if any."""
    words = os.environ.get("PYSPARK_SUBMIT_ARGS", "").split()
    for i, word in enumerate(words[:-1]):
        if word == "--master":
            return words[i + 1]
    return next((w.split("=", 1)[1] for w in words if w.startswith("--master=")), None)


def use_driver_python(spark: Any) -> None:
    """For a classic session that runs already: in local mode, with no interpreter chosen, the Python
    functions Spark ships from now on (``mapInArrow`` tasks, Python data sources) run this interpreter.
    Spark Connect sessions are left alone (the server's Python runs them).

    Example:
        >>> use_driver_python(spark)                                                 # doctest: +SKIP
        >>> spark.sparkContext.pythonExec == sys.executable                          # doctest: +SKIP
        True
    """
    from deltalog.spark.common.storage import is_connect

    if is_connect(spark):
        return
    sc = spark.sparkContext
    try:
        conf_value = sc.getConf().get(_CHOSEN_CONF, None)
    except Exception:
        conf_value = None
    if _chosen(conf_value) or not is_local_master(sc.master):
        return
    if getattr(sc, "pythonExec", None) != sys.executable:
        sc.pythonExec = sys.executable


def worker_import_error(text: str, table: str | None = None) -> DeltaError | None:
    """deltalog's error for a Spark Python worker that could not import deltalog (or pyarrow / obstore),
    given the failure's text; ``None`` for any other failure.

    Example:
        >>> str(worker_import_error("PythonException: ModuleNotFoundError: No module named 'deltalog'"))[:60]
        "Spark's Python workers cannot import deltalog (No module nam"
    """
    missing = next((m for m in _MISSING if m in text), None)
    if missing is None:
        return None
    name = missing.split("'")[1]
    message = (
        f"Spark's Python workers cannot import deltalog (No module named '{name}'): the interpreter they run "
        "lacks it. In local mode, start the session with deltalog.spark.configure(builder) or local_session(), "
        "or set PYSPARK_PYTHON to the interpreter that has deltalog (this driver runs "
        f"{sys.executable}); on a cluster, install deltalog and pyarrow in the executors' Python (or ship them "
        "with spark.submit.pyFiles / spark.archives) and point PYSPARK_PYTHON (spark.pyspark.python) at that "
        "interpreter"
    )
    return DeltaError(message, table=table) if table is not None else DeltaError(message)
