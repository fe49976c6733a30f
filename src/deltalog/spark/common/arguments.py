"""The argument checks of delta-spark's Python API, in its words: programs and tests match the text of
the ``ValueError`` / ``TypeError`` delta-spark raises for a missing ``set``, a ``set`` that is not a dict,
a condition that is neither SQL text nor a ``Column``, a version that is not an int, a clone argument of the
wrong type, ... deltalog raises its own :class:`~deltalog.errors.InvalidArgumentError` (a ``ValueError``) and
:class:`~deltalog.errors.InvalidArgumentTypeError` (also a ``TypeError``) with those words first; a hint
may follow. The errors delta-spark's JVM raises for values it cannot take (an unparsable timestamp, an
identity column that is not ``BIGINT``) are made here too, with its error condition and words.

Example:
    >>> column_mapping({"v": "v + 1"}, "'set'")
    {'v': 'v + 1'}
    >>> column_mapping(None, "'set'")
    Traceback (most recent call last):
    ...
    deltalog.errors.InvalidArgumentError: 'set' cannot be None
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deltalog.errors import InvalidArgumentError, InvalidArgumentTypeError, UnsupportedFeatureError

__all__ = ["check_bool", "check_clone", "check_condition", "check_dict", "check_int", "check_source", "check_str",
           "column_mapping", "is_column", "timestamp_invalid", "unsupported_operation"]


def is_column(value: Any) -> bool:
    """Whether ``value`` is a Spark ``Column`` (classic or Connect).

    Example:
        >>> is_column("id > 3")
        False
    """
    return type(value).__name__ == "Column"


def column_mapping(value: Any, argname: str, *, allow_empty: bool = False) -> dict[str, Any]:
    """``value`` -- column names to SQL expression strings or ``Column`` s (``set`` / ``values``) -- checked
    as delta-spark checks it; ``argname`` is how its messages name the argument (``'set'``, ``'values' in
    whenNotMatchedInsert``). ``allow_empty``: an empty mapping passes (the caller refuses it after its other
    checks, in delta-spark's order).

    Example:
        >>> column_mapping({1: "x"}, "'set'")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentTypeError: Keys of dict in 'set' must contain only strings with column ...
    """
    if value is None:
        raise InvalidArgumentError(f"{argname} cannot be None")
    if not isinstance(value, Mapping):
        raise InvalidArgumentTypeError(f"{argname} must be a dict, found to be {type(value)}")
    for key, expr in value.items():
        if not isinstance(key, str):
            raise InvalidArgumentTypeError(
                f"Keys of dict in {argname} must contain only strings with column names, found '{key}' of type "
                f"'{type(key)}'")
        if not (isinstance(expr, str) or is_column(expr)):
            raise InvalidArgumentTypeError(
                f"Values of dict in {argname} must contain only Spark SQL Columns or strings (expressions in SQL "
                f"syntax) as values, found '{expr}' of type '{type(expr)}' (wrap literals in "
                "pyspark.sql.functions.lit)")
    if not value and not allow_empty:
        raise InvalidArgumentError(f"{argname} needs at least one column: {{column: expression}}")
    return dict(value)


def check_condition(condition: Any, argname: str = "'condition'") -> None:
    """A condition (``None`` allowed: no condition) must be SQL text or a ``Column``, as delta-spark checks.

    Example:
        >>> check_condition(5)
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentTypeError: 'condition' must be a Spark SQL Column or a string ...
    """
    if condition is None or isinstance(condition, str) or is_column(condition):
        return
    raise InvalidArgumentTypeError(
        f"{argname} must be a Spark SQL Column or a string (expression in SQL syntax), found to be of type "
        f"{type(condition)}")


def check_source(source: Any) -> None:
    """The ``source`` of ``merge`` must be a DataFrame (classic or Connect).

    Example:
        >>> check_source([1])
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentTypeError: Type of 'source' in merge must be DataFrame.
    """
    if source is None:
        raise InvalidArgumentError("'source' in merge cannot be None")
    if type(source).__name__ != "DataFrame":
        raise InvalidArgumentTypeError("Type of 'source' in merge must be DataFrame.")


def check_int(value: Any, name: str) -> None:
    """``value`` must be an int (not a bool), as delta-spark's ``version`` arguments.

    Example:
        >>> check_int("3", "version")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: version needs to be an int but got '<class 'str'>'.
    """
    _require(not isinstance(value, bool) and isinstance(value, int), value, name, "an int")


def _require(ok: bool, value: Any, name: str, what: str) -> None:
    """delta-spark's words for an argument of the wrong type: ``<name> needs to be <what> but got '<type>'.``"""
    if not ok:
        raise InvalidArgumentError(f"{name} needs to be {what} but got '{type(value)}'.")


def check_str(value: Any, name: str) -> None:
    """``value`` must be a ``str``, as delta-spark's ``featureName``, ``timestamp`` and ``target`` arguments.

    Example:
        >>> check_str(12345, "featureName")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: featureName needs to be a string but got '<class 'int'>'.
    """
    _require(isinstance(value, str), value, name, "a string")


def check_bool(value: Any, name: str) -> None:
    """``value`` must be a ``bool``, as delta-spark's ``isShallow``, ``replace`` and ``truncateHistory``.

    Example:
        >>> check_bool(10, "isShallow")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: isShallow needs to be a boolean but got '<class 'int'>'.
    """
    _require(isinstance(value, bool), value, name, "a boolean")


def check_dict(value: Any, name: str) -> None:
    """``value`` must be a dict (any ``Mapping``), as delta-spark's clone ``properties``.

    Example:
        >>> check_dict(10, "properties")
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: properties needs to be a dict but got '<class 'int'>'.
    """
    _require(isinstance(value, Mapping), value, name, "a dict")


def check_clone(target: Any, is_shallow: Any, replace: Any, properties: Any, *, timestamp: Any = "",
                version: Any = 0) -> None:
    """The arguments of ``clone`` / ``cloneAtVersion`` / ``cloneAtTimestamp``, checked in delta-spark's order
    (timestamp, version, target, isShallow, replace, properties and each of their keys and values).

    Example:
        >>> check_clone("/backup/t", True, False, {"owner": 1})
        Traceback (most recent call last):
        ...
        deltalog.errors.InvalidArgumentError: All property values including 1 needs to be a string but got ...
    """
    check_str(timestamp, "timestamp")
    check_int(version, "version")
    check_str(target, "target")
    check_bool(is_shallow, "isShallow")
    check_bool(replace, "replace")
    if properties is not None:
        check_dict(properties, "properties")
        for key, value in properties.items():
            check_str(key, f"All property keys including {key}")
            check_str(value, f"All property values including {value}")


def timestamp_invalid(text: Any, *, table: str | None = None) -> InvalidArgumentError:
    """delta-spark's ``DELTA_TIMESTAMP_INVALID`` for a time-travel / restore timestamp that does not read as a
    timestamp (an ``AnalysisException`` at the Spark API).

    Example:
        >>> print(timestamp_invalid("05/04/1999").message)
        [DELTA_TIMESTAMP_INVALID] The provided timestamp ('05/04/1999') cannot be converted to a valid timestamp. \
Write it as yyyy-MM-dd[ HH:mm:ss[.SSSSSS]] (in the session time zone) or with a zone: 2024-05-01T12:00:00Z
    """
    return InvalidArgumentError(
        f"[DELTA_TIMESTAMP_INVALID] The provided timestamp ('{text}') cannot be converted to a valid timestamp. "
        "Write it as yyyy-MM-dd[ HH:mm:ss[.SSSSSS]] (in the session time zone) or with a zone: 2024-05-01T12:00:00Z",
        table=table,
    )


_UNSUPPORTED: dict[str, type] = {}


def unsupported_operation(message: str, *, condition: str, sql_state: str, feature: str,
                          table: str | None = None) -> UnsupportedFeatureError:
    """An :class:`~deltalog.errors.UnsupportedFeatureError` that is also PySpark's
    ``UnsupportedOperationException``, as delta-spark's ``DeltaUnsupportedOperationException`` reaches Python
    (e.g. ``DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE``); ``message`` without the condition, which
    ``getCondition()`` returns and ``str()`` shows in front.

    Example:
        >>> err = unsupported_operation("DataType integer is not supported for IDENTITY columns.",  # doctest: +SKIP
        ...     condition="DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE", sql_state="428H2", feature="identityColumns")
        >>> type(err).__mro__[1].__name__, err.getCondition()                          # doctest: +SKIP
        ('UnsupportedFeatureError', 'DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE')
    """
    from pyspark.errors import UnsupportedOperationException

    from deltalog.spark.common.compat import EXCEPTION_MIXINS, init_exception

    cls = _UNSUPPORTED.get(sql_state)
    if cls is None:
        def getSqlState(self: Any) -> str:  # PySpark's name
            return sql_state

        cls = type("UnsupportedFeatureError", (UnsupportedFeatureError, *EXCEPTION_MIXINS,
                                               UnsupportedOperationException),
                   {"__module__": "deltalog.spark.common.errors", "getSqlState": getSqlState,
                    "__doc__": UnsupportedFeatureError.__doc__})
        _UNSUPPORTED[sql_state] = cls
    kernel = UnsupportedFeatureError(f"[{condition}] {message}", feature=feature, table=table)
    err: Any = Exception.__new__(cls)
    err.__dict__.update(kernel.__dict__)
    init_exception(err, str(kernel)[len(condition) + 3:], condition)  # the text after "[condition] "
    err.args = kernel.args
    return err  # type: ignore[no-any-return]
