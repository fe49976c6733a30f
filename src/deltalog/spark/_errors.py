"""deltalog's errors as PySpark exceptions at the Spark API, so ported ``except`` clauses keep working.

delta-spark raises ``pyspark.errors.AnalysisException`` when a path is not a Delta table, a version
cannot be reached, a schema does not match or a column is unknown, and ``IllegalArgumentException``
for bad arguments. The kernel cannot import pyspark, so the public functions and methods of
``deltalog.spark`` (wrapped by :func:`spark_errors` / :func:`spark_errors_class`) re-raise each
:class:`~deltalog.errors.DeltaError` as an instance of a class deriving from *both* its own class and
the PySpark exception: ``except TableNotFoundError`` and ``except AnalysisException`` both catch it,
and the message is unchanged. Write conflicts keep their own classes (delta-spark's
``delta.exceptions`` names, :mod:`deltalog.spark.exceptions`), and so do storage failures
(:class:`~deltalog.errors.StorageError`, an ``OSError``: delta-spark surfaces them as Java
``IOException`` s, not as analysis errors).

Example:
    >>> from pyspark.errors import AnalysisException
    >>> try:                                                                         # doctest: +SKIP
    ...     DeltaTable.forPath(spark, "/not/a/table")
    ... except AnalysisException as exc:
    ...     print(type(exc).__name__)
    TableNotFoundError
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from deltalog.errors import DeltaError, InvalidArgumentError, SqlSyntaxError, StorageError
from deltalog.txn.conflicts import ConcurrentModificationException

__all__ = ["as_spark_error", "spark_errors", "spark_errors_class"]

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)

_CLASSES: dict[type, type] = {}
_LOCK = threading.Lock()


def _spark_class(cls: type[DeltaError]) -> type:
    from pyspark.errors import AnalysisException, IllegalArgumentException

    with _LOCK:
        found = _CLASSES.get(cls)
        if found is not None:
            return found
        bases: tuple[type, ...] = (cls, AnalysisException)
        if issubclass(cls, SqlSyntaxError):
            from pyspark.errors import ParseException

            bases = (cls, ParseException)
        elif issubclass(cls, InvalidArgumentError):
            bases = (cls, AnalysisException, IllegalArgumentException)
        made = type(cls.__name__, bases, {"__module__": __name__, "__reduce__": _reduce_for(cls)})
        _CLASSES[cls] = made
        return made


def _reduce_for(base: type[DeltaError]) -> Callable[[Any], tuple[Any, ...]]:
    def __reduce__(self: Any) -> tuple[Any, ...]:  # pickled as the kernel class, converted again on load
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        return (_restore, (base, state, self.args))

    return __reduce__


def _restore(base: type[DeltaError], state: dict[str, Any], args: tuple[Any, ...]) -> DeltaError:
    exc = base.__new__(base)
    exc.__dict__.update(state)
    exc.args = args
    return as_spark_error(exc)


def as_spark_error(exc: DeltaError) -> DeltaError:
    """``exc`` as an instance of a class deriving from its class and PySpark's ``AnalysisException``
    (and ``IllegalArgumentException`` for invalid arguments); conflicts and already-converted errors
    are returned as they are.

    Example:
        >>> from deltalog.errors import TableNotFoundError
        >>> err = as_spark_error(TableNotFoundError("no Delta table", table="/t"))   # doctest: +SKIP
        >>> isinstance(err, TableNotFoundError), type(err).__mro__[2].__name__       # doctest: +SKIP
        (True, 'AnalysisException')
    """
    from pyspark.errors import PySparkException

    if isinstance(exc, (ConcurrentModificationException, StorageError, PySparkException)):
        return exc
    cls = _spark_class(type(exc))
    new: Any = Exception.__new__(cls)
    new.__dict__.update(exc.__dict__)
    text = str(exc)
    PySparkException.__init__(new, text)
    new.args = exc.args
    return new  # type: ignore[no-any-return]


def spark_errors(fn: F) -> F:
    """Decorate a public function of the Spark API: its :class:`DeltaError` s leave as PySpark
    exceptions (see the module docstring).

    Example:
        >>> @spark_errors                                                             # doctest: +SKIP
        ... def load(spark, path): ...
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DeltaError as exc:
            converted = as_spark_error(exc)
            if converted is exc:
                raise
            raise converted.with_traceback(sys.exc_info()[2]) from exc.__cause__

    return wrapper  # type: ignore[return-value]


def spark_errors_class(cls: C) -> C:
    """Apply :func:`spark_errors` to every public method (plain, class and static) of ``cls``.

    Example:
        >>> @spark_errors_class                                                       # doctest: +SKIP
        ... class DeltaTable: ...
    """
    for name, member in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, classmethod):
            setattr(cls, name, classmethod(spark_errors(member.__func__)))
        elif isinstance(member, staticmethod):
            setattr(cls, name, staticmethod(spark_errors(member.__func__)))
        elif callable(member) and not isinstance(member, type):
            setattr(cls, name, spark_errors(member))
    return cls
