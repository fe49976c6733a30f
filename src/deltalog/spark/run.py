"""Run a PySpark program written for delta-spark, unmodified, on deltalog.

``deltalog run job.py [args]`` (or ``python -m deltalog.spark.run job.py [args]``) runs ``job.py`` as
``__main__`` with ``sys.argv = ["job.py", *args]`` after three things are in place for that run:

* delta-spark's Python modules resolve to deltalog's: ``import delta``, ``from delta.tables import
  DeltaTable``, ``from delta import configure_spark_with_delta_pip``, ``from delta.exceptions import
  ConcurrentAppendException`` (and ``delta.pip_utils``) -- whether or not delta-spark is installed;
* every ``SparkSession.builder....getOrCreate()`` drops delta-spark's JVM settings (the
  ``DeltaSparkSessionExtension``, the ``DeltaCatalog``, ``io.delta`` packages, also ``--packages`` in
  ``PYSPARK_SUBMIT_ARGS``) with one log line, and the session it returns is registered
  (:func:`deltalog.spark.register`): ``format("delta")``, catalog tables and ``spark.sql`` go through deltalog;
* Python workers of a local session import this deltalog (its directory is put on ``PYTHONPATH``).

Example:
    >>> main(["pipelines/nightly.py", "--date", "2024-05-01"])                     # doctest: +SKIP
    0
"""

from __future__ import annotations

import functools
import os
import runpy
import shlex
import sys
import types
from collections.abc import Sequence
from typing import Any

from deltalog.errors import InvalidArgumentError

__all__ = ["install_delta_aliases", "main", "patch_session_builder"]

#: ``delta.__version__`` under ``deltalog run``: the delta-spark release whose Python API deltalog mirrors
#: (programs compare it to gate features), not deltalog's own version (``deltalog.__version__``).
DELTA_SPARK_API_VERSION = "4.4.1"


def install_delta_aliases() -> None:
    """Make ``delta``, ``delta.tables``, ``delta.exceptions``, ``delta.pip_utils`` and ``delta.version``
    import deltalog's equivalents in this process (replacing delta-spark's modules if they were imported).

    Example:
        >>> install_delta_aliases()
        >>> from delta.tables import DeltaTable
        >>> DeltaTable.__module__
        'deltalog.spark.api.table'
    """
    from typing import List, Optional  # noqa: UP035 -- the names delta.pip_utils exports

    from pyspark.sql import SparkSession

    import deltalog.spark.exceptions as exceptions_module
    import deltalog.spark.tables as tables_module
    from deltalog.spark.session import configure_spark_with_delta_pip

    pip_utils = types.ModuleType("delta.pip_utils", "deltalog's configure_spark_with_delta_pip, as delta.pip_utils")
    vars(pip_utils).update(configure_spark_with_delta_pip=configure_spark_with_delta_pip, List=List,  # noqa: UP006
                           Optional=Optional, SparkSession=SparkSession)
    version = types.ModuleType("delta.version", "the delta-spark API version deltalog mirrors")
    vars(version).update(__version__=DELTA_SPARK_API_VERSION)
    package = types.ModuleType("delta", "delta-spark's Python API, served by deltalog (see deltalog.spark.run)")
    package.__path__ = []  # a package: ``import delta.tables`` finds the submodules in sys.modules
    vars(package).update(
        __version__=DELTA_SPARK_API_VERSION, __all__=["DeltaTable", "configure_spark_with_delta_pip", "__version__"],
        DeltaTable=tables_module.DeltaTable, configure_spark_with_delta_pip=configure_spark_with_delta_pip,
        tables=tables_module, exceptions=exceptions_module, pip_utils=pip_utils, version=version,
    )
    for name in [n for n in sys.modules if n == "delta" or n.startswith("delta.")]:
        del sys.modules[name]
    sys.modules.update({"delta": package, "delta.tables": tables_module, "delta.exceptions": exceptions_module,
                        "delta.pip_utils": pip_utils, "delta.version": version})


_PATCHED: dict[str, Any] = {}


def patch_session_builder() -> None:
    """Wrap ``SparkSession.Builder.getOrCreate`` (and ``create``) so sessions drop delta-spark's JVM settings
    (one log line) and come back registered with deltalog; idempotent.

    Example:
        >>> patch_session_builder()                                             # doctest: +SKIP
    """
    from pyspark.sql import SparkSession

    from deltalog.spark.session import drop_delta_jvm_settings, log_dropped, register

    builder_cls = SparkSession.Builder
    for name in ("getOrCreate", "create"):
        original = getattr(builder_cls, name, None)
        if original is None or name in _PATCHED:
            continue
        _PATCHED[name] = original

        def routed(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            log_dropped(drop_delta_jvm_settings(self))
            return register(_original(self, *args, **kwargs))

        functools.update_wrapper(routed, original)
        setattr(builder_cls, name, routed)


def _clean_submit_args() -> None:
    """``--packages io.delta:...`` in ``PYSPARK_SUBMIT_ARGS`` (how ``pyspark --packages`` passes them) is
    dropped, other packages kept."""
    from deltalog.spark.session import log_dropped

    raw = os.environ.get("PYSPARK_SUBMIT_ARGS")
    if not raw:
        return
    words = shlex.split(raw)
    out: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--packages" and i + 1 < len(words):
            packages = [p for p in words[i + 1].split(",") if p]
            dropped += [p for p in packages if p.startswith("io.delta:")]
            kept = [p for p in packages if not p.startswith("io.delta:")]
            if kept:
                out += [word, ",".join(kept)]
            i += 2
            continue
        out.append(word)
        i += 1
    if dropped:
        os.environ["PYSPARK_SUBMIT_ARGS"] = shlex.join(out)
        log_dropped(["--packages " + ",".join(dropped)])


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``argv[0]`` (a Python file) with ``argv[1:]`` as its arguments, delta-spark's API served by
    deltalog (see the module docstring). Returns the program's exit code (``SystemExit`` is honoured).

    Example:
        >>> main(["job.py"])                                                      # doctest: +SKIP
        0
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: deltalog run JOB.py [ARGS...]  (or python -m deltalog.spark.run JOB.py [ARGS...])",
              file=sys.stderr)
        return 0 if args else 2
    job = args[0]
    if not os.path.isfile(job):
        raise InvalidArgumentError(f"deltalog run: {job!r} is not a file (give the path of a PySpark program)")
    install_delta_aliases()
    from deltalog.spark.session import put_on_worker_path

    _clean_submit_args()
    put_on_worker_path()
    patch_session_builder()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [job, *args[1:]]
    sys.path.insert(0, os.path.dirname(os.path.abspath(job)))  # as ``python job.py`` would
    try:
        runpy.run_path(job, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if isinstance(code, str):  # sys.exit("message"): Python prints it and exits with 1
            print(code, file=sys.stderr)
            return 1
        return code if isinstance(code, int) else 0
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


if __name__ == "__main__":  # pragma: no cover -- exercised through a subprocess in the tests
    sys.exit(main())
