"""What the routed ``DataFrameReader`` / ``DataFrameWriter`` / stream reader and writer methods recorded
(format, options, mode, partitioning: :func:`recorded_state`), and the session or DataFrame behind a
reader or writer (classic and Connect). Shared by :mod:`deltalog.spark.session` and
:mod:`deltalog.spark.sql.routing`.

Example:
    >>> class W: pass
    >>> recorded_state(W())["options"]
    {}
"""

from __future__ import annotations

from typing import Any

__all__ = ["recorded_state", "session_of_reader", "session_of_stream_writer", "writer_dataframe"]

_STATE = "_deltalog_state"


def recorded_state(obj: Any) -> dict[str, Any]:
    """The settings recorded on a reader or writer (created empty on first use)."""
    state: dict[str, Any] | None = obj.__dict__.get(_STATE)
    if state is None:
        state = {"format": None, "options": {}, "mode": None, "partitionBy": None, "clusterBy": None,
                 "schema": None}
        obj.__dict__[_STATE] = state
    return state


def session_of_reader(reader: Any) -> Any:
    """The session (classic) or client (Connect) a ``DataFrameReader`` belongs to."""
    return reader.__dict__.get("_spark") or reader.__dict__.get("_client")


def session_of_stream_writer(writer: Any) -> Any:
    """The session (classic) or client (Connect) of a ``DataStreamWriter``; ``None`` when it cannot be told."""
    found = writer.__dict__.get("_spark")
    if found is None:
        found = getattr(writer.__dict__.get("_df"), "sparkSession", None)
    return found


def writer_dataframe(writer: Any) -> Any:
    """The DataFrame a ``DataFrameWriter`` writes (a Connect writer holds a plan: made a DataFrame again)."""
    df = writer.__dict__.get("_df")
    if type(df).__name__ == "DataFrame":
        return df
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    return ConnectDataFrame(df, writer.__dict__["_spark"])
