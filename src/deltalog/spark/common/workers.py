"""Which Python Spark's workers run, and what a worker that cannot import deltalog is told.

deltalog's writes, DML, OPTIMIZE and deletion-vector work run in Spark's Python workers (``mapInArrow``
tasks, Python data sources), which must import deltalog and its dependencies (pyarrow, numpy, pyroaring,
obstore, ...). PySpark starts them with ``PYSPARK_PYTHON``, else ``python3`` from ``PATH`` -- for a program
started as ``.venv/bin/python job.py`` without activating the venv, an interpreter that has neither. PySpark
reads ``spark.pyspark.python`` only through ``spark-submit``: a builder's ``.config("spark.pyspark.python",
...)`` is not used by a program started with ``python``.

* In local mode (``local``, ``local[N]``, ``local-cluster[...]``: the workers run on this machine) and when
  the user chose no interpreter (no ``PYSPARK_PYTHON``, no ``spark.pyspark.python``), the workers run the
  driver's own interpreter: :func:`use_driver_python_for` before a session starts, :func:`use_driver_python`
  for one that runs already. An interpreter chosen with ``spark.pyspark.python`` alone is the one they run
  (on a cluster too).
* On a cluster the executors' interpreter is the deployment's to provide (``docs/deployment.md``); a worker
  that cannot import deltalog or a dependency fails with :func:`worker_import_error`'s message, which names
  the machine (an executor and its host, this driver, the Spark Connect server) and the fix.

Example:
    >>> is_local_master("local[2]"), is_local_master("spark://host:7077"), is_local_master(None)
    (True, False, True)
    >>> worker_import_error("ModuleNotFoundError: No module named 'pyarrow'") is not None
    True
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from deltalog.errors import DeltaError

__all__ = ["DEPLOYMENT_DOC", "is_local_master", "use_driver_python", "use_driver_python_for", "worker_import_error"]

_CHOSEN_CONF = "spark.pyspark.python"


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
    Python workers (and the JVM it launches) run this interpreter (``PYSPARK_PYTHON``); with one chosen by
    the builder's ``spark.pyspark.python`` alone (any master), let them run that one, as ``spark-submit``
    would.

    Example:
        >>> use_driver_python_for(SparkSession.builder.master("local[2]"))             # doctest: +SKIP
        >>> os.environ["PYSPARK_PYTHON"] == sys.executable                            # doctest: +SKIP
        True
    """
    options = getattr(builder, "_options", None)
    options = options if isinstance(options, dict) else {}
    conf_value = options.get(_CHOSEN_CONF)
    if conf_value and not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = str(conf_value)  # PySpark itself reads it only through spark-submit
        return
    if _chosen(conf_value) or not is_local_master(options.get("spark.master") or _submitted_master()):
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
    functions Spark ships from now on (``mapInArrow`` tasks, Python data sources) run this interpreter; with
    one chosen by ``spark.pyspark.python`` alone (no ``PYSPARK_PYTHON``), that one. Spark Connect sessions are
    left alone (the server's Python runs them).

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
    if conf_value and not os.environ.get("PYSPARK_PYTHON"):
        if getattr(sc, "pythonExec", None) != conf_value:
            sc.pythonExec = str(conf_value)
        return
    if _chosen(conf_value) or not is_local_master(sc.master):
        return
    if getattr(sc, "pythonExec", None) != sys.executable:
        sc.pythonExec = sys.executable



#: Where the docs tell what each machine of a deployment needs (sections ``#executors``, ``#the-driver``,
#: ``#spark-connect``).
DEPLOYMENT_DOC = "docs/deployment.md"

#: deltalog and the packages it imports (its dependencies in pyproject.toml), by import name.
_DELTALOG = ("deltalog", "pyarrow", "numpy", "pyroaring", "obstore", "click", "rich")
#: What PySpark's Connect client imports beyond those (``pyspark[connect]``): a Spark Connect server runs a
#: stream's ``foreachBatch`` function -- deltalog's Delta sink -- as a Connect client of its own.
_CONNECT_CLIENT = ("pandas", "grpc", "grpc_status", "google", "zstandard")
_NO_MODULE = re.compile(r"No module named '([A-Za-z_][\w.]*)'")
_HOLLOW = re.compile(r"cannot import name '\w+' from '([A-Za-z_][\w.]*)' \(unknown location\)")
#: PySpark's own words for a package its worker lacks: ``[PACKAGE_NOT_INSTALLED] PyArrow >= 15.0.0 must be
#: installed``.
_NOT_INSTALLED = re.compile(r"\[PACKAGE_NOT_INSTALLED\] (\w+) >= \S+ must be installed")
#: The task a classic session lost, with the executor that ran it: ``Lost task 0.0 in stage 1.0 (TID 3)
#: (10.0.0.7 executor 2)``; ``executor driver`` is the driver's own JVM (local mode).
_LOST_TASK = re.compile(r"Lost task \S+ in stage \S+ \(TID \d+\) \(([^\s()]+) executor ([^\s()]+)\)")
_CANNOT_RUN = re.compile(r'Cannot run program "([^"]+)"(?: \(in directory "[^"]*"\))?: error=(\d+)')
#: The Python processes a classic driver starts itself: a Python data source's planner (deltalog's streaming
#: source), whatever the master.
_DRIVER_SIDE = ("python_streaming_source_runner", "Failed to plan Python data source", "PYTHON_DATA_SOURCE")
_SHOWN = 3
#: Python processes a Spark Connect server starts without the session's artifacts (``spark.addArtifacts``):
#: a stream's ``foreachBatch`` runner and a Python streaming source's planner.
_CONNECT_PROCESSES = (
    (("foreach_batch_worker", "ForeachBatch", "STREAMING_PYTHON_RUNNER"), "runs a stream's foreachBatch in "
     "(deltalog's Delta sink)"),
    (("python_streaming_source_runner",), "plans a Python streaming source in (deltalog's Delta stream source)"),
)


def worker_import_error(failure: BaseException | str, table: str | None = None) -> DeltaError | None:
    """deltalog's error for a Python process of Spark that could not import deltalog or one of its
    dependencies (or could not start its interpreter), given the failure (or its text); ``None`` for any
    other failure. The message names the machine -- an executor and its host, this driver's machine, the
    Spark Connect server -- and the fix, with the section of ``docs/deployment.md`` that tells it.

    Example:
        >>> lost = "Lost task 0.0 in stage 1.0 (TID 1) (10.0.0.7 executor 2): ModuleNotFoundError: "
        >>> str(worker_import_error(lost + "No module named 'pyroaring'")).split(". ")[0][40:]
        '(executor 2 on host 10.0.0.7) cannot import pyroaring (deltalog needs it)'
        >>> worker_import_error("java.lang.OutOfMemoryError: Java heap space") is None
        True
    """
    text = failure if isinstance(failure, str) else str(failure)
    connect = _from_connect(failure)
    message = _missing_module(text, connect) or _missing_interpreter(text, connect) or _silent_runner(text, connect)
    if message is None:
        return None
    return DeltaError(message, table=table) if table is not None else DeltaError(message)


def _from_connect(failure: BaseException | str) -> bool:
    """Whether the failure came from a Spark Connect server (its exception class, else whether this process
    runs a Connect session)."""
    if isinstance(failure, str):
        return "SPARK_CONNECT_MODE_ENABLED" in os.environ
    return any(c.__module__.startswith("pyspark.errors.exceptions.connect") for c in type(failure).__mro__)


def _missing_module(text: str, connect: bool) -> str | None:
    known = _DELTALOG + (_CONNECT_CLIENT if connect else ())
    named = _NO_MODULE.findall(text) + [w.lower() for w in _NOT_INSTALLED.findall(text)]
    hollow = _HOLLOW.findall(text)  # a package directory without its native code: a namespace package
    name = next((n for n in named + hollow if n.split(".")[0] in known), None)
    if name is None:
        return None
    top = name.split(".")[0]
    what = f"cannot import {name}"
    if top == "deltalog" and name != top:
        from deltalog.version import __version__

        what += f" (the deltalog it finds is not this driver's {__version__}: install the same one everywhere)"
    elif top in _CONNECT_CLIENT:
        what += " (PySpark's Connect client needs it: pip install 'pyspark[connect]')"
    elif top != "deltalog":
        what += " (deltalog needs it)"
    if top != "deltalog" and (name != top or name in hollow):
        what += (": the package is there but not its native code -- a package zipped for spark.submit.pyFiles "
                 "or a pyfile artifact cannot load native code")
    return _told(text, connect, what)


def _told(text: str, connect: bool, what: str) -> str:
    """``what`` went wrong, said of the machine the failure names, with that machine's fix."""
    if connect:
        process = next((p for marks, p in _CONNECT_PROCESSES if any(m in text for m in marks)), None)
        if process is not None:
            return (f"The Python process the Spark Connect server {process} {what}. Install deltalog and "
                    "PySpark's Connect client (pip install deltalog 'pyspark[connect]') in the Python the server "
                    "runs (PYSPARK_PYTHON in the server's environment) -- the session's artifacts "
                    f"(spark.addArtifacts) do not reach this process (see {DEPLOYMENT_DOC}#spark-connect)")
        lost = _LOST_TASK.search(text)
        on = f" on executor {lost.group(2)} (host {lost.group(1)})" if lost and lost.group(2) != "driver" else ""
        return (f"The Spark Connect server's Python workers{on} {what}. Install deltalog (pip install deltalog, "
                "which brings its dependencies) in the Python the server runs them with -- PYSPARK_PYTHON in "
                "the server's environment (the server does not use spark.pyspark.python for its clients' "
                "functions), and its executors' Python when it runs on a cluster -- or, where the server has "
                "deltalog's dependencies, ship deltalog itself with the session: "
                f"spark.addArtifacts('deltalog.zip', pyfile=True) (see {DEPLOYMENT_DOC}#spark-connect)")
    lost = _LOST_TASK.search(text)
    if lost is not None:
        executors = [(lost.group(2), lost.group(1))] if lost.group(2) != "driver" else None
    else:
        executors = None if any(m in text for m in _DRIVER_SIDE) else _executors()
    if executors is not None:
        named = ", ".join(f"executor {e} on host {h}" for e, h in executors[:_SHOWN])
        more = f" and {len(executors) - _SHOWN} more" if len(executors) > _SHOWN else ""
        return (f"Spark's Python workers on the executors{f' ({named}{more})' if named else ''} {what}. "
                "Install deltalog (pip install deltalog, which brings its "
                "dependencies) in the Python that PYSPARK_PYTHON names on every executor, or ship it with "
                "spark.archives -- a packed environment run as PYSPARK_PYTHON=./env/bin/python, or a "
                "pip install --target directory on spark.executorEnv.PYTHONPATH; spark.submit.pyFiles carries "
                f"deltalog itself but not its native dependencies (see {DEPLOYMENT_DOC}#executors)")
    return (f"Spark's Python workers on this machine {what}. In local mode, "
            "start the session with deltalog.spark.configure(builder) or local_session(), or set PYSPARK_PYTHON "
            f"to an interpreter that has deltalog (this driver runs {sys.executable}). On a cluster the driver "
            "runs Python workers too (deltalog's streaming source is planned there), with the executors' "
            "PYSPARK_PYTHON and PYTHONPATH, relative paths taken from the driver's working directory "
            f"({os.getcwd()}): install deltalog for that interpreter here, or unpack the archives shipped with "
            f"spark.archives in that directory too (see {DEPLOYMENT_DOC}#the-driver)")


def _executors() -> list[tuple[str, str]] | None:
    """The executors (id, host) of this process's classic SparkContext when it runs on a cluster (a task's
    failure, as PySpark raises it, no longer says which executor ran it); ``None`` without one, or in local
    mode."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    sc = getattr(SparkContext, "_active_spark_context", None)
    if sc is None or is_local_master(getattr(sc, "master", None)):
        return None
    found: list[tuple[str, str]] = []
    try:
        listed = sc._jsc.sc().statusStore().executorList(True).iterator()
        while listed.hasNext():
            summary = listed.next()
            if str(summary.id()) != "driver":
                found.append((str(summary.id()), str(summary.hostPort()).rsplit(":", 1)[0]))
    except Exception:  # Spark's status store is not public API: the message then names no executor
        return []
    return sorted(found, key=lambda e: (len(e[0]), e[0]))


def _missing_interpreter(text: str, connect: bool) -> str | None:
    found = _CANNOT_RUN.search(text)
    if found is None or "python" not in os.path.basename(found.group(1)).lower():
        return None
    program, code = found.group(1), found.group(2)
    if code == "13":
        what = (f"cannot start: their interpreter {program} is not executable -- ship an environment archive as "
                ".tar.gz or .tgz (Spark unpacks .tar and .zip archives without their files' permissions)")
    elif os.path.isabs(program):
        what = f"cannot start: their interpreter {program} is not there"
    elif connect:
        what = (f"cannot start: their interpreter {program} is not there -- a Spark Connect server runs them in "
                "each session's own directory, where a relative path to what its spark.archives unpacked does "
                "not lead")
    else:
        what = (f"cannot start: their interpreter {program} is not there -- a relative path is taken from the "
                "working directory of each process that starts Python workers, and spark.archives unpacks only "
                "in the executors'")
    return _told(text, connect, what)


def _silent_runner(text: str, connect: bool) -> str | None:
    """A Connect server's ``foreachBatch`` runner that died before saying why (it could not import PySpark's
    Connect client: the server's log tells which package)."""
    if not connect or "Python worker failed to connect back" not in text:
        return None
    if not any(m in text for m in ("StreamingForeachBatchHelper", "StreamingPythonRunner")):
        return None
    return ("The Spark Connect server could not start the Python process it runs a stream's foreachBatch in "
            "(deltalog's Delta sink): the Python the server runs (PYSPARK_PYTHON in its environment) must "
            "import PySpark's Connect client -- pandas, pyarrow, grpcio, grpcio-status, googleapis-common-protos, "
            "zstandard: pip install 'pyspark[connect]' -- and deltalog; the server's log names what it lacks "
            f"(see {DEPLOYMENT_DOC}#spark-connect)")
