"""The argument checks of delta-spark's Python API, in its words: programs and tests match the text of
the ``ValueError`` / ``TypeError`` delta-spark raises for a missing ``set``, a ``set`` that is not a dict,
a condition that is neither SQL text nor a ``Column``, a version that is not an int, ... deltalog raises its
own :class:`~deltalog.errors.InvalidArgumentError` (a ``ValueError``) and
:class:`~deltalog.errors.InvalidArgumentTypeError` (also a ``TypeError``) with those words first; a hint
may follow.

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

from deltalog.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = ["check_condition", "check_int", "check_source", "column_mapping", "is_column"]


def is_column(value: Any) -> bool:
    """Whether ``value`` is a Spark ``Column`` (classic or Connect).

    Example:
        >>> is_column("id > 3")
        False
    """
    return type(value).__name__ == "Column"


def column_mapping(value: Any, argname: str) -> dict[str, Any]:
    """``value`` -- column names to SQL expression strings or ``Column`` s (``set`` / ``values``) -- checked
    as delta-spark checks it; ``argname`` is how its messages name the argument (``'set'``, ``'values' in
    whenNotMatchedInsert``).

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
    if not value:
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
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} needs to be an int but got '{type(value)}'.")
