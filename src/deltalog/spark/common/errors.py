"""deltalog's errors as PySpark exceptions at the Spark API, so ported ``except`` clauses keep working.

delta-spark raises ``pyspark.errors.AnalysisException`` when a path is not a Delta table, a version
cannot be reached, a schema does not match or a column is unknown, and ``IllegalArgumentException``
for bad arguments. The kernel cannot import pyspark, so the public functions and methods of
``deltalog.spark`` (wrapped by :func:`spark_errors` / :func:`spark_errors_class`) re-raise each
:class:`~deltalog.errors.DeltaError` as an instance of a class deriving from *both* its own class and
the PySpark exception: ``except TableNotFoundError`` and ``except AnalysisException`` both catch it,
and the message is unchanged. Write conflicts become ``PySparkException`` s as well (delta-spark's
``delta.exceptions`` classes are; :mod:`deltalog.spark.exceptions` exports the converted classes), with
delta-spark's error condition (``DELTA_CONCURRENT_APPEND``, ...) in front of the message. A message that
starts with an error class (``[DELTA_COLUMN_NOT_FOUND] ...``) gives ``getCondition()``. Storage failures
keep their class (:class:`~deltalog.errors.StorageError`, an ``OSError``: delta-spark surfaces them as
Java ``IOException`` s, not as analysis errors).

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
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from deltalog.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    DeltaError,
    InvalidArgumentError,
    MetadataChangedException,
    MultipleSourceRowMatchError,
    ProtocolChangedException,
    SqlSyntaxError,
    StorageError,
)
from deltalog.spark.common.compat import EXCEPTION_MIXINS, init_exception, quiet_call_sites

__all__ = ["as_spark_error", "spark_class", "spark_errors", "spark_errors_class", "within_api_call"]

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)

_CLASSES: dict[type, type] = {}
_LOCK = threading.Lock()
_CALLS = threading.local()  # depth: calls of the Spark API in progress on this thread

#: delta-spark's error condition for each write conflict (they share SQLSTATE 2D521).
_CONFLICT_CONDITIONS: tuple[tuple[type, str], ...] = (
    (ConcurrentAppendException, "DELTA_CONCURRENT_APPEND"),
    (ConcurrentDeleteReadException, "DELTA_CONCURRENT_DELETE_READ"),
    (ConcurrentDeleteDeleteException, "DELTA_CONCURRENT_DELETE_DELETE"),
    (ConcurrentTransactionException, "DELTA_CONCURRENT_TRANSACTION"),
    (MetadataChangedException, "DELTA_METADATA_CHANGED"),
    (ProtocolChangedException, "DELTA_PROTOCOL_CHANGED"),
    (ConcurrentModificationException, "DELTA_CONCURRENT_WRITE"),
)
_LEADING_CONDITION = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\] ")


class _ErrorInfo:
    """``getSqlState`` / ``getBreakingChangeInfo`` for conditions PySpark's own error table does not know
    (Delta's): SQLSTATE 2D521 for write conflicts, else whatever PySpark knows, else None."""

    def getSqlState(self) -> str | None:
        if isinstance(self, ConcurrentModificationException):
            return "2D521"
        try:
            return super().getSqlState()  # type: ignore[misc, no-any-return]
        except (ValueError, KeyError):
            return None

    def getBreakingChangeInfo(self) -> dict[str, Any] | None:
        try:
            return super().getBreakingChangeInfo()  # type: ignore[misc, no-any-return]
        except (ValueError, KeyError, AttributeError):  # AttributeError: Spark 3.5 has no breaking-change info
            return None


def spark_class(cls: type[DeltaError]) -> type:
    """The class deltalog raises at the Spark API for kernel errors of class ``cls``: a subclass of ``cls``
    and of PySpark's matching exception -- ``AnalysisException`` (also ``IllegalArgumentException`` for
    invalid arguments), ``ParseException`` for SQL syntax, ``PySparkException`` for write conflicts. One
    class per kernel class.

    Example:
        >>> from deltalog.errors import ConcurrentAppendException
        >>> from pyspark.errors import PySparkException                               # doctest: +SKIP
        >>> issubclass(spark_class(ConcurrentAppendException), PySparkException)      # doctest: +SKIP
        True
    """
    from pyspark.errors import AnalysisException, IllegalArgumentException, PySparkException

    # a narrower conflict derives from the converted base class: ``except DeltaConcurrentModificationException``
    base = spark_class(ConcurrentModificationException) if (
        issubclass(cls, ConcurrentModificationException) and cls is not ConcurrentModificationException) else None
    with _LOCK:
        found = _CLASSES.get(cls)
        if found is not None:
            return found
        info = (_ErrorInfo, *EXCEPTION_MIXINS)  # getCondition() on Spark 3.5 too
        bases: tuple[type, ...] = (cls, *info, AnalysisException)
        if base is not None:
            bases = (cls, base)
        elif cls is ConcurrentModificationException:
            bases = (cls, *info, PySparkException)
        elif issubclass(cls, MultipleSourceRowMatchError):  # delta-spark: DeltaUnsupportedOperationException
            from pyspark.errors import UnsupportedOperationException

            bases = (cls, *info, UnsupportedOperationException)
        elif issubclass(cls, SqlSyntaxError):
            from pyspark.errors import ParseException

            bases = (cls, *info, ParseException)
        elif issubclass(cls, InvalidArgumentError):
            bases = (cls, *info, AnalysisException, IllegalArgumentException)
        module = "deltalog.spark.exceptions" if issubclass(cls, ConcurrentModificationException) else __name__
        made = type(cls.__name__, bases, {"__module__": module, "__reduce__": _reduce_for(cls), "__doc__": cls.__doc__})
        _CLASSES[cls] = made
        return made


def _condition(exc: DeltaError, text: str) -> tuple[str | None, str]:
    """The error condition of ``exc`` and the message without it."""
    if isinstance(exc, ConcurrentModificationException):
        return next(name for kind, name in _CONFLICT_CONDITIONS if isinstance(exc, kind)), text
    found = _LEADING_CONDITION.match(text)
    if found is None:
        return None, text
    return found.group(1), text[found.end():]


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

    if isinstance(exc, (StorageError, PySparkException)):
        return exc
    cls = spark_class(type(exc))
    new: Any = Exception.__new__(cls)
    new.__dict__.update(exc.__dict__)
    condition, text = _condition(exc, str(exc))
    init_exception(new, text, condition)
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
        depth = getattr(_CALLS, "depth", 0)
        if not depth:
            quiet_call_sites(within_api_call)  # the columns deltalog builds record no call site (see compat)
        _CALLS.depth = depth + 1
        try:
            return fn(*args, **kwargs)
        except DeltaError as exc:
            converted = as_spark_error(exc)
            if converted is exc:
                raise
            raise converted.with_traceback(sys.exc_info()[2]) from exc.__cause__
        except Exception as exc:
            from deltalog.spark.common.workers import worker_import_error

            missing = worker_import_error(exc)
            if missing is None:
                raise
            raise as_spark_error(missing) from exc
        finally:
            _CALLS.depth = depth

    return wrapper  # type: ignore[return-value]


def within_api_call() -> bool:
    """Whether this thread is inside a call of deltalog's Spark API (a function :func:`spark_errors`
    decorates): the DataFrames such a call works on keep their plan for the whole call.

    Example:
        >>> within_api_call()
        False
    """
    return getattr(_CALLS, "depth", 0) > 0


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
