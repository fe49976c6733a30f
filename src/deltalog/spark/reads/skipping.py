"""File skipping for filters applied to a Delta DataFrame after it was loaded.

Spark cannot skip a Delta table's files by the log's min/max statistics on its own: deltalog hands it a
parquet scan over an explicit list of files. So the frame :func:`deltalog.spark.reads.scan.read_snapshot`
returns (``spark.read.format("delta").load(p)``, ``read(spark, p)``, ``DeltaTable.toDF()``) is given a
small dynamic subclass of its own DataFrame class (classic or Connect; same name) that remembers how it
was made: the scan, then the ``select`` / ``withColumn(s)`` / ``withColumn(s)Renamed`` / ``drop`` /
``filter`` steps applied since (the frames those return are tracked too). On ``filter`` / ``where``,
the condition's simple conjuncts become kernel conditions; those on columns that are still the table's
own column of that name (not replaced by ``withColumn``, renamed, computed by an alias, or duplicated)
prune the snapshot's files by partition values and statistics: the scan is rebuilt over the remaining
files, the steps replayed, and the condition applied in full by Spark, the result's columns given the ids
of Spark's plain filter (:func:`deltalog.spark.reads.rebind.with_plan_ids`), so a column of an earlier frame
(``df.id``) still resolves on it. The result is the same rows as the plain filter; only fewer files are
read. Where the ids cannot be given (Spark Connect, frames of more than
:data:`~deltalog.spark.reads.rebind.MAX_ID_COLUMNS` columns), the frame is Spark's plain filter, and the
conditions prune when an action runs on it or on a frame built from it. On row-tracking tables, a tracked method whose
argument names ``_metadata`` runs on the frame rebuilt with the row ids (:mod:`deltalog.spark.reads.row_metadata`).

A frame read at the table's latest version also reads the table as it is when an action runs
(``count``, ``collect``, ``show``, ``write``, ...), as delta-spark's DataFrames do (:func:`_latest`): when
the table has moved on since the frame was planned, the action runs on the scan planned again at the
latest version with the steps replayed. Steps are the methods above and those that keep or pick rows
(``orderBy``, ``limit``, ``distinct``, ...), ``groupBy(...)`` with its aggregation, and ``join`` / ``union``
with another frame (itself caught up when it is such a frame). Filters after steps that pick rows or
change values do not prune files.

Anything else falls back to Spark's plain methods (the same result, no skipping): other transformations
(``selectExpr``, ...) return ordinary DataFrames, and a condition or step argument that refers to columns
of one particular DataFrame (``df.id``, ``df["id"]``, a subquery) cannot be moved to a rebuilt scan, so it
ends the tracking -- unless :func:`deltalog.spark.reads.rebind.rebound` can write it by name. Conditions are
read as SQL text: a SQL string as given; a ``Column`` built from ``col`` / ``lit`` / comparison operators /
``isin`` / ``between`` / ``expr`` (classic or Connect) is turned into the SQL text of its top-level
conjuncts, anything else in it being skipped. The conjuncts kept are those
:func:`deltalog.spark.reads.target.pruning_conditions` proves mean the same in Spark and in the kernel.

Example:
    >>> df = spark.read.format("delta").load("/data/events")                  # doctest: +SKIP
    >>> df.select("id", "s").filter(F.col("id") >= 9000).inputFiles()        # doctest: +SKIP
    ['file:///data/events/part-00009-....snappy.parquet']
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from deltalog.spark.common.core import may_be_cached, note_cached, quoted, served_by_cache
from deltalog.spark.reads.column_sql import condition_sql, flat_columns, plain_name, portable, skipping_conditions
from deltalog.spark.reads.frame_state import (
    TRACKED,
    FrameState,
    next_unchanged,
    through_generated,
    usable_conditions,
)
from deltalog.spark.reads.lazy_frames import is_lazy, lazy_columns, materialise
from deltalog.spark.reads.log_answers import aggregate_sql, answer_frame, logged_count
from deltalog.spark.reads.rebind import MAX_ID_COLUMNS, passed_through, rebound, with_plan_ids

if TYPE_CHECKING:
    from deltalog.data.filters import Condition
    from deltalog.snapshot import Snapshot

__all__ = ["aggregates_sql_from_log", "attach", "attach_query", "condition_sql", "count_from_log", "latest_frame",
           "refreshed", "skipping_conditions", "whole_table"]

_STATE = "_deltalog_snapshot"
_LOCK = threading.Lock()
_SUBCLASSES: dict[type, type] = {}


# ------------------------------------------------------------------------------------- the frame


_LOCAL = threading.local()


def _replay(spark: Any, state: FrameState, base: type, *, carry: bool = False) -> Any:
    """The tracked frame rebuilt: the scan with ``state.prune``, then its steps. With ``carry`` the scan
    has the row-tracking ``_metadata`` struct (:mod:`deltalog.spark.reads.row_metadata`), which every
    ``select`` step keeps; the caller drops it."""
    from deltalog.spark.reads.row_metadata import METADATA
    df = state.rescan(spark, state.snapshot, where=state.where, columns=state.columns, prune=state.prune,
                       row_metadata=carry)
    for name, args, kwargs in state.steps:
        if name == _GROUPED:  # groupBy(...) then agg(...) / count() / pivot(...).sum(...) ...
            grouped = getattr(base, args[0][0])(df, *args[0][1])
            for method, margs in args[1:]:
                grouped = getattr(type(grouped), method)(grouped, *margs)
            df = grouped
            continue
        if carry and name == "select":
            cols = flat_columns(args)
            if "*" not in [plain_name(c) for c in cols]:
                args = (*cols, METADATA)
        if name in _PAIRED:  # the other frame as of its own table's latest version too
            args = (_latest(args[0], nested=True), *args[1:])
        df = getattr(base, name)(df, *args, **kwargs)
    return df


def _mentions(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    from deltalog.spark.reads.row_metadata import mentions_metadata

    return mentions_metadata(args) or mentions_metadata(kwargs)


def _carries(state: FrameState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether rebuilding the frame needs the row-tracking ``_metadata`` struct: the table tracks rows and
    ``args`` / ``kwargs`` or a step mention ``_metadata``."""
    from deltalog.spark.reads.row_metadata import needs_metadata_scan

    return (_mentions(args, kwargs) or any(_mentions(a, k) for _, a, k in state.steps)) and \
        needs_metadata_scan(state.snapshot)


def _with_row_metadata(self: Any, base: type, state: FrameState, name: str, args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> Any:
    """``name(*args, **kwargs)`` applied to the frame rebuilt with the ``_metadata`` struct; ``*`` in a
    ``select`` / ``selectExpr`` stands for this frame's columns (not the struct)."""
    from deltalog.spark.reads.row_metadata import METADATA

    visible = [quoted(c) for c in self.columns]
    if name in ("select", "selectExpr"):
        expanded: list[Any] = []
        for c in flat_columns(args):
            expanded.extend(visible if plain_name(c) == "*" else [c])
        args = tuple(expanded)
    carrying = _replay(self.sparkSession, state, base, carry=True)
    result = getattr(base, name)(carrying, *args, **kwargs)
    if name not in ("select", "selectExpr"):
        result = getattr(base, "drop")(result, METADATA)  # noqa: B009
    return result


def _kept_ids(
    self: Any, state: FrameState, rebuilt: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``rebuilt`` (``name(*args, **kwargs)`` applied to ``self`` planned again) with the columns it passes
    through from ``self`` given their ids in ``self``, so that ``self``'s columns (``df.id``) resolve on it."""
    every = replace(state, unchanged=frozenset(c.lower() for c in self.columns))
    names = next_unchanged(every, name, args, kwargs)
    return passed_through(rebuilt, self, names) if names else rebuilt


def _filter(self: Any, base: type, state: FrameState, condition: Any) -> Any:
    """The filter on a scan re-planned with file skipping, its columns keeping the plain filter's ids (a
    column bound to an earlier frame's plan, ``df.id``, still resolves on it); where that cannot be, the
    plain filter, with the conditions left for the actions (:func:`_latest`). ``None`` when it cannot skip
    (nothing usable in the condition, or it cannot move to a rebuilt frame): the caller applies the plain
    one."""
    if may_be_cached(state.snapshot.table) and served_by_cache(self):  # a scan of fewer files would miss the cache
        return None
    conditions = skipping_conditions(condition, state.snapshot)
    columns = lazy_columns(self) or list(self.columns)  # a lazy read's names, without building its plan
    usable = usable_conditions(conditions, state, columns) if conditions and portable(condition) else []
    usable += through_generated(condition, state, columns)
    if not usable:
        return None
    new = replace(state, prune=(*state.prune, *usable))
    steps = (*new.steps, ("filter", (condition,), {}))
    if _carries(state, (condition,), {}):  # the condition names the row-tracking _metadata: built again now
        filtered = _kept_ids(self, state, _with_row_metadata(self, base, new, "filter", (condition,), {}),
                             "filter", (condition,), {})
        return _attach_state(filtered, replace(new, steps=steps))

    def replayed(plain: Any) -> Any | None:
        """The scan planned again over the files kept, filtered; its columns given ``plain``'s ids (so ``df.id``
        still resolves) unless ``plain`` is ``None``. ``None`` where the replay does not apply (an argument we
        misread): Spark's plain filter decides."""
        try:
            rebuilt = getattr(base, "filter")(_replay(self.sparkSession, new, base), condition)  # noqa: B009
            return rebuilt if plain is None else with_plan_ids(rebuilt, plain)
        except Exception:
            return None

    # a lazy read has no column bound to its plan yet: the rebuilt scan alone, the whole plan left unbuilt
    skipping = replayed(None) if is_lazy(self) else None
    filtered = None
    if skipping is None:
        filtered = getattr(base, "filter")(self, condition)  # noqa: B009
        if "_jdf" in filtered.__dict__ and len(filtered.columns) <= MAX_ID_COLUMNS:  # else: pruned at the actions
            skipping = replayed(filtered)
    applied = len(new.prune) if skipping is not None else state.applied
    return _attach_state(skipping if skipping is not None else filtered, replace(new, steps=steps, applied=applied))


def _by_name(frame: Any, run: Callable[[tuple[Any, ...], dict[str, Any]], Any], args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    """``(args, kwargs, result)``: the arguments of ``run`` (a method applied to ``frame``, or to what was built
    from it, planning a DataFrame) with the columns bound to ``frame``'s plan (``df.id``) written by name
    where Spark plans that the same (:func:`deltalog.spark.reads.rebind.rebound`), and ``run``'s result with them;
    the arguments as given and ``None`` where nothing was written."""
    if portable(args) and portable(kwargs):
        return args, kwargs, None
    found = rebound(frame, run, args, kwargs)
    return (args, kwargs, None) if found is None else found


def _query_step(self: Any, name: str, plain: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A tracked method called on a SQL query's frame (:func:`attach_query`) or on any other frame: on the
    former, the result runs the query again over its tables caught up, then this step, at its actions."""
    query = self.__dict__.get(_QUERY)
    if query is None:
        return plain(self, *args, **kwargs)
    _LOCAL.busy = True
    try:
        args, kwargs, result = _by_name(self, lambda a, k: plain(self, *a, **k), args, kwargs)
        if result is None:
            result = plain(self, *args, **kwargs)
    finally:
        _LOCAL.busy = False
    if not (portable(args) and portable(kwargs)):
        return result
    frames, rerun = query
    base = type(self).__mro__[1]
    return attach_query(result, frames, lambda caught: getattr(base, name)(rerun(caught), *args, **kwargs))


def _cached(df: Any) -> bool:
    """Whether ``df`` was cached (``cache()`` / ``persist()``, classic sessions): what is built on it then
    reads the cache, as in Spark, so its scan is neither re-planned nor read again for a view."""
    return df.__dict__.get("is_cached") is True


def _tracked(name: str, plain: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        state = self.__dict__.get(_STATE)
        base = type(self).__mro__[1]
        if getattr(_LOCAL, "busy", False) or _cached(self):
            return plain(self, *args, **kwargs)
        if state is None:
            return _query_step(self, name, plain, args, kwargs)
        _LOCAL.busy = True
        try:
            args, kwargs, planned = _by_name(self, lambda a, k: plain(self, *a, **k), args, kwargs)
            if name in ("filter", "where") and len(args) == 1 and not kwargs:
                out = _filter(self, base, state, args[0])
                if out is not None:
                    return out
            if _mentions_row_metadata(self, state, args, kwargs):
                result = _kept_ids(self, state, _with_row_metadata(self, base, state, name, args, kwargs),
                                   name, args, kwargs)
            else:
                result = planned if planned is not None else plain(self, *args, **kwargs)
        finally:
            _LOCAL.busy = False
        unchanged = next_unchanged(state, name, args, kwargs)
        if unchanged is None:
            return result
        step_name = "filter" if name == "where" else name
        steps = (*state.steps, (step_name, args, kwargs))
        return _attach_state(result, replace(state, steps=steps, unchanged=unchanged))

    method.__name__ = name
    method.__doc__ = (plain.__doc__ or "") + "\n(deltalog: filters re-plan the Delta scan with file skipping.)"
    return method


_VIEWS = {"createTempView": False, "createOrReplaceTempView": False, "createGlobalTempView": True,
          "createOrReplaceGlobalTempView": True}


def _view_method(name: str, plain: Any, global_view: bool) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = plain(self, *args, **kwargs)
        state = self.__dict__.get(_STATE)
        view = args[0] if args else kwargs.get("name")
        if state is not None and isinstance(view, str) and not _cached(self):
            from deltalog.spark.reads.frame_views import remember

            remember(self.sparkSession, view, global_view=global_view, state=state, base=type(self).__mro__[1],
                     columns=tuple(self.columns))
        return result

    method.__name__ = name
    method.__doc__ = (plain.__doc__ or "") + "\n(deltalog: the view reads the Delta table as it is at each query.)"
    return method


def refreshed(spark: Any, state: FrameState, base: type) -> Any:
    """The tracked frame ``state`` describes made again: read at the table's latest version when it was a
    latest read (a time-travel read stays at its version), its steps replayed; the result is tracked too.

    Example:
        >>> refreshed(spark, view.state, view.base).count()                      # doctest: +SKIP
        1200
    """
    snapshot = state.snapshot
    if state.latest:
        from deltalog.table import Table

        snapshot = Table(snapshot.table, store=snapshot.store).snapshot()
    new = replace(state, snapshot=snapshot, applied=len(state.prune))
    return _attach_state(_replay(spark, new, base), new)


def whole_table(state: FrameState) -> bool:
    """Whether the tracked frame is its table's every row and column, in the table's order (no filter, no
    projection, no other step): a view of it may stand for the table as a DML target.

    Example:
        >>> whole_table(recall(spark, "events", None).state)                       # doctest: +SKIP
        True
    """
    names = state.snapshot.schema.field_names
    columns = list(state.columns) if state.columns is not None else names
    return state.where is None and not state.steps and not state.prune and columns == names


def _mentions_row_metadata(self: Any, state: FrameState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether this call names the row-tracking ``_metadata`` (and the frame can be rebuilt with it:
    its steps replay, and it has no column of that name already)."""
    from deltalog.spark.reads.row_metadata import METADATA, needs_metadata_scan

    if not _mentions(args, kwargs) or not needs_metadata_scan(state.snapshot):
        return False
    return METADATA not in self.columns and portable(args) and portable(kwargs)


#: Methods that run a job (or hand the frame to a writer): on a latest read they run on the frame as of the
#: table's latest version (:func:`_latest`), as delta-spark's DataFrames read the table as it is when an
#: action runs. (A frame is never re-planned in place: a column bound to its plan, ``df.id``, must keep
#: resolving against it. Methods that build another frame are tracked steps, or Spark's own.)
_ACTIONS = ("collect", "count", "toPandas", "toArrow", "take", "head", "first", "tail", "show", "isEmpty",
            "toLocalIterator", "foreach", "foreachPartition", "inputFiles", "writeTo", "toJSON")
_FRESH = "_deltalog_latest"  # (version, frame): the frame as of that version, kept for the next action
_CACHING = ("cache", "persist")  # noted (_common.note_cached): reads of the table then ask Spark's cache


def _caching(name: str, plain: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        state = self.__dict__.get(_STATE)
        if state is not None:
            note_cached(str(state.snapshot.table))
        return plain(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = plain.__doc__
    return method
_QUERY = "_deltalog_query"  # (frames, rerun) of a SQL query's frame: see attach_query


def _latest(df: Any, *, nested: bool = False) -> Any:
    """The frame an action on ``df`` runs on: ``df`` itself, or -- when ``df`` is a latest read (not time
    travel, not cached, classic Spark) of a table that has moved on since it was planned -- ``df`` planned
    again at the latest version, its steps replayed and its columns kept (``df`` is left as it is); a SQL
    query's frame (:func:`attach_query`) is run again over its Delta reads caught up. A column it has that
    the table lost, or whose type changed, fails the action (``DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS``), as in
    delta-spark."""
    from deltalog.spark.common.errors import within_api_call

    state, query = df.__dict__.get(_STATE), df.__dict__.get(_QUERY)
    busy = getattr(_LOCAL, "busy", False)
    classic = "_jdf" in df.__dict__  # Spark Connect frames are not caught up (their filters still skip files)
    if (state is None and (query is None or not classic)) or _cached(df) or \
            (not nested and (busy or within_api_call())):  # deltalog's own operations keep one plan throughout
        return df
    if query is not None:
        frames, rerun = query
        caught_up = {name: _latest(frame, nested=True) for name, frame in frames.items()}
        key = tuple(id(f) for f in caught_up.values())
        if all(caught_up[name] is frame for name, frame in frames.items()):
            return df
        kept = df.__dict__.get(_FRESH)
        if kept is None or kept[0] != key:
            tables = sorted({str(s.snapshot.table) for f in frames.values() if (s := f.__dict__.get(_STATE))})
            what = f"the Delta tables its query reads ({', '.join(tables)})"
            df.__dict__[_FRESH] = (key, _conform(df, lambda: rerun(caught_up), what))
        return df.__dict__[_FRESH][1]
    from deltalog.table import Table

    assert state is not None
    snapshot = state.snapshot
    table = Table(snapshot.table, store=snapshot.store)
    version = max(table.latest_version(), snapshot.version) if state.latest and classic else snapshot.version
    if version == snapshot.version and (state.applied == len(state.prune) or
                                        (may_be_cached(snapshot.table) and served_by_cache(df))):
        return df
    kept = df.__dict__.get(_FRESH)
    if kept is not None and kept[0] == version:
        return kept[1]
    what = f"the Delta table at {snapshot.table} (read at version {snapshot.version})"
    if version == snapshot.version:  # only files to skip: a replay that does not apply leaves Spark's plan
        try:
            fresh = _conform(df, lambda: _replay(df.sparkSession, state, type(df).__mro__[1]), what, schema_same=True)
        except Exception:
            fresh = df
    else:
        new = replace(state, snapshot=table.snapshot(version))
        fresh = _conform(df, lambda: _replay(df.sparkSession, new, type(df).__mro__[1]), what,
                         schema_same=new.snapshot.schema == snapshot.schema)
    df.__dict__[_FRESH] = (version, fresh)
    return fresh


def _conform(df: Any, build: Callable[[], Any], what: str, *, schema_same: bool = False) -> Any:
    """``build()`` -- ``df`` planned again -- with ``df``'s columns (those it gained left out); a column
    ``df`` has that it lost or retyped raises ``DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS`` naming ``what``."""
    from deltalog.errors import SchemaError

    def changed(why: str) -> SchemaError:
        return SchemaError(
            f"[DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS] the schema of {what} has changed since this DataFrame was "
            f"made, in a way it cannot follow ({why}): read the table again")

    base = type(df).__mro__[1]
    busy = getattr(_LOCAL, "busy", False)
    _LOCAL.busy = True
    try:
        try:
            fresh = build()
            got = [(f.name, f.dataType) for f in fresh.schema.fields]
        except Exception as exc:  # a step names a column the table no longer has
            from pyspark.errors import AnalysisException

            if schema_same or not isinstance(exc, AnalysisException):
                raise
            raise changed(str(exc).split("\n", 1)[0][:300]) from None
        want = [(f.name, f.dataType) for f in df.schema.fields]
        if got != want:
            have = dict(got)
            lost = [name for name, kind in want if have.get(name) != kind]
            if lost or len(have) != len(got) or len({n for n, _ in want}) != len(want):
                raise changed(f"columns {lost or [n for n, _ in want]}")
            # columns the table gained stay out, as Spark keeps a frame's columns
            fresh = getattr(base, "select")(fresh, *[quoted(n) for n, _ in want])  # noqa: B009
    finally:
        _LOCAL.busy = busy
    return fresh


def attach_query(df: Any, frames: dict[str, Any], rerun: Callable[[dict[str, Any]], Any]) -> Any:
    """Make ``df`` -- a SQL query's result, planned over the Delta reads ``frames`` (by placeholder name) --
    read its tables as they are when an action runs: ``rerun(frames caught up)`` plans it again. Returns
    ``df`` (unchanged when none of ``frames`` follows its table).

    Example:
        >>> attach_query(spark.sql(text, **frames), frames, lambda f: spark.sql(text, **f)).count()  # doctest: +SKIP
        12
    """
    follows = any((s := f.__dict__.get(_STATE)) is not None and s.latest and not _cached(f) for f in frames.values())
    if not follows or type(df).__name__ != "DataFrame" or "_jdf" not in df.__dict__:
        return df
    try:
        df.__dict__[_QUERY] = (dict(frames), rerun)
        if type(df) not in _SUBCLASSES.values():
            df.__class__ = _subclass(type(df))
    except (AttributeError, TypeError):
        df.__dict__.pop(_QUERY, None)
    return df


def _latest_or_raise(df: Any, *, nested: bool = False) -> Any:
    """:func:`_latest`, its errors raised as the Spark API raises deltalog's errors."""
    from deltalog.errors import DeltaError
    from deltalog.spark.common.errors import as_spark_error

    try:
        return _latest(df, nested=nested)
    except DeltaError as exc:
        raise as_spark_error(exc) from None


def latest_frame(df: Any) -> Any:
    """``df`` as its table is now, for an operation of deltalog's Spark API that takes it (a MERGE
    source, a DataFrame to write): a latest Delta read planned again when its table has moved on since,
    else ``df`` itself. The operation then works on that one plan throughout.

    Example:
        >>> latest_frame(updates).count()                                           # doctest: +SKIP
        120
    """
    return _latest_or_raise(df, nested=True) if type(df).__name__ == "DataFrame" else df


def _action(name: str, plain: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return plain(_latest_or_raise(self), *args, **kwargs)

    method.__name__ = name
    method.__doc__ = (plain.__doc__ or "") + "\n(deltalog: reads the Delta table as it is when it runs.)"
    return method


def count_from_log(df: Any) -> int | None:
    """``df.count()`` from the Delta log (``df`` a tracked read, as it reads the table now), or ``None`` when
    the log cannot prove it (:mod:`deltalog.spark.reads.log_answers`) or ``df`` is not a tracked read.

    Example:
        >>> count_from_log(spark.read.format("delta").load("/data/events"))            # doctest: +SKIP
        1000
    """
    state = _answerable(df)
    if state is None:
        return None
    return logged_count(state.snapshot, where=state.where, prune=state.prune, steps=state.steps)


def _answerable(df: Any) -> FrameState | None:
    """The state of ``df`` as it reads its table now, when the log may answer for it (a tracked read, not cached,
    not inside deltalog's own operations)."""
    if df.__dict__.get(_STATE) is None:
        return None
    frame = _latest_or_raise(df)
    state: FrameState | None = frame.__dict__.get(_STATE)
    if state is None or _cached(frame) or getattr(_LOCAL, "busy", False):
        return None
    return state


def aggregates_sql_from_log(df: Any, specs: Sequence[tuple[str | None, str, str | None]]) -> str | None:
    """A literal ``SELECT`` of the aggregates ``specs`` (:func:`~deltalog.spark.reads.log_answers.aggregate_specs`)
    of ``df`` -- a tracked read of a whole table, no step but ``select`` of its column names, ``drop`` or sorting --
    answered from the log, or ``None``.

    Example:
        >>> aggregates_sql_from_log(spark.read.format("delta").load("/t"), [(None, "count", None)])  # doctest: +SKIP
        'SELECT 1000L AS `count(1)`'
    """
    state = _answerable(df)
    if state is None or state.where is not None or state.prune:
        return None
    if any(name not in ("select", "drop", "orderBy", "sort", "sortWithinPartitions", "repartition", "coalesce")
           or kwargs or not all(isinstance(a, str) for a in args) for name, args, kwargs in state.steps):
        return None  # a rename could give a column another's name
    present = {c.lower() for c in df.columns}
    if any(column is not None and column.lower() not in present for _, _, column in specs):
        return None  # Spark's error for a column the frame lacks
    return aggregate_sql(state.snapshot, specs)


def _counting(plain: Any) -> Any:
    def count(self: Any) -> int:
        answer = count_from_log(self)
        return answer if answer is not None else int(plain(_latest_or_raise(self)))

    count.__name__ = "count"
    count.__doc__ = (plain.__doc__ or "") + ("\n(deltalog: reads the Delta table as it is when it runs, and answers "
                                             "from the log when it can: deltalog.spark.reads.log_answers.)")
    return count


_LOG_AGGREGATE = re.compile(r"\s*(count|min|max)\s*\(", re.IGNORECASE)


def _column_specs(columns: tuple[Any, ...]) -> list[tuple[str | None, str, str | None]] | None:
    """The aggregates of ``agg``'s ``Column`` arguments when each is ``count`` / ``min`` / ``max`` of a column name
    (read from the column's SQL text, as PySpark shows it), else ``None``."""
    import sqlglot

    from deltalog.spark.reads.log_answers import aggregate_specs

    texts = []
    for column in columns:
        shown = str(column)
        if type(column).__name__ != "Column" or not (shown.startswith("Column<'") and shown.endswith("'>")):
            return None
        text = shown[len("Column<'"):-2]
        if not _LOG_AGGREGATE.match(text):  # not count / min / max at the top: no sqlglot parse (~1 ms)
            return None
        texts.append(text)
    try:
        parsed = sqlglot.parse_one("SELECT " + ", ".join(texts), read="spark")
    except Exception:  # not SQL sqlglot reads: Spark's own agg
        return None
    return aggregate_specs(parsed.expressions)


def _aggregating_frame(plain: Any) -> Any:
    def agg(self: Any, *exprs: Any) -> Any:
        specs = _column_specs(exprs) if exprs and not isinstance(exprs[0], dict) else None
        text = aggregates_sql_from_log(self, specs) if specs else None
        if text is None:
            return plain(self, *exprs)
        spark = self.sparkSession
        # one literal row; at each later action it is answered again for the table as it is then
        return attach_query(answer_frame(spark, text, specs or []), {"t": self},
                            lambda frames: _answered_again(spark, frames["t"], specs, plain, exprs))

    agg.__name__ = "agg"
    agg.__doc__ = (plain.__doc__ or "") + ("\n(deltalog: count / min / max of a whole Delta table are answered "
                                           "from the log when it can: deltalog.spark.reads.log_answers.)")
    return agg


def _answered_again(spark: Any, frame: Any, specs: Any, plain: Any, exprs: tuple[Any, ...]) -> Any:
    text = aggregates_sql_from_log(frame, specs)
    return answer_frame(spark, text, specs) if text is not None else plain(frame, *exprs)


def _writer(plain: property) -> property:
    def write(self: Any) -> Any:
        return plain.fget(_latest_or_raise(self)) if plain.fget is not None else None

    write.__doc__ = plain.__doc__
    return property(write)


_GROUPED = "_grouped"  # the step of a grouping and its aggregation
_GROUPING = ("groupBy", "groupby", "rollup", "cube")
_AGGREGATING = ("agg", "count", "mean", "avg", "max", "min", "sum", "pivot")
_PAIRED = ("join", "crossJoin", "union", "unionAll", "unionByName", "intersect", "intersectAll", "exceptAll",
           "subtract")
_GROUPED_STATE = "_deltalog_grouped"
_GROUPED_SUBCLASSES: dict[type, type] = {}


def _grouped_frame(grouped: Any) -> Any:
    """A frame planned from ``grouped``'s grouping (its groups' counts), to compare two groupings by."""
    return grouped.count()


def _grouping(name: str, plain: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        state = self.__dict__.get(_STATE)
        if state is not None:  # a grouping is compared by its groups' counts
            args = _by_name(self, lambda a, k: _grouped_frame(plain(self, *a, **k)), args, {})[0]
        grouped = plain(self, *args, **kwargs)
        if state is not None and not kwargs and portable(args) and not _cached(self):
            _attach_grouped(grouped, state, ((name, args),))
        return grouped

    method.__name__ = name
    method.__doc__ = plain.__doc__
    return method


def _aggregating(name: str, plain: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = self.__dict__.get(_GROUPED_STATE)
        frame = self.__dict__.get("_df")
        result = None
        if found is not None and frame is not None and name != "pivot" and not kwargs:
            args, _, result = _by_name(frame, lambda a, k: plain(self, *a, **k), args, {})
        if result is None:
            result = plain(self, *args, **kwargs)
        if found is None or kwargs or not portable(args):
            return result
        state, chain = found
        chain = (*chain, (name, args))
        if name == "pivot":
            return _attach_grouped(result, state, chain)
        return _attach_state(result, replace(state, steps=(*state.steps, (_GROUPED, chain, {})), unchanged=frozenset()))

    method.__name__ = name
    method.__doc__ = plain.__doc__
    return method


def _attach_grouped(grouped: Any, state: FrameState, chain: tuple[Any, ...]) -> Any:
    """Make ``grouped`` (a ``GroupedData`` of a tracked frame) track its aggregations as one step."""
    base = type(grouped)
    if base.__name__ != "GroupedData":
        return grouped
    with _LOCK:
        sub = _GROUPED_SUBCLASSES.get(base)
        if sub is None and base not in _GROUPED_SUBCLASSES.values():
            methods = {n: _aggregating(n, getattr(base, n)) for n in _AGGREGATING if hasattr(base, n)}
            sub = _GROUPED_SUBCLASSES[base] = type(base.__name__, (base,), {**methods, "__module__": base.__module__})
    try:
        grouped.__dict__[_GROUPED_STATE] = (state, chain)
        if sub is not None:
            grouped.__class__ = sub
    except (AttributeError, TypeError):
        grouped.__dict__.pop(_GROUPED_STATE, None)
    return grouped


def _pairing(name: str, plain: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = plain(self, *args, **kwargs)
        state = self.__dict__.get(_STATE)
        if state is None or _cached(self) or not args or type(args[0]).__name__ != "DataFrame" or \
                not portable(args[1:]) or not portable(kwargs):
            return result
        return _attach_state(result, replace(state, steps=(*state.steps, (name, args, kwargs)), unchanged=frozenset()))

    method.__name__ = name
    method.__doc__ = plain.__doc__
    return method


def _planning_getattr(plain: Any) -> Any:
    """``__getattr__`` that builds a lazy read's plan when ``_jdf`` is first asked for
    (:mod:`deltalog.spark.reads.lazy_frames`), else Spark's own (a column by name)."""
    def __getattr__(self: Any, name: str) -> Any:
        if name == "_jdf" and is_lazy(self):
            return materialise(self)
        if plain is None:
            raise AttributeError(name)
        return plain(self, name)

    return __getattr__


def _subclass(base: type) -> type:
    with _LOCK:
        sub = _SUBCLASSES.get(base)
        if sub is not None:
            return sub
        methods = {name: _tracked(name, getattr(base, name)) for name in TRACKED if hasattr(base, name)}
        methods.update({name: _view_method(name, getattr(base, name), global_view)
                        for name, global_view in _VIEWS.items() if hasattr(base, name)})
        methods.update({name: _action(name, getattr(base, name)) for name in _ACTIONS if hasattr(base, name)})
        methods["count"] = _counting(getattr(base, "count"))  # noqa: B009
        methods["agg"] = _aggregating_frame(getattr(base, "agg"))  # noqa: B009
        methods.update({name: _caching(name, getattr(base, name)) for name in _CACHING if hasattr(base, name)})
        methods.update({name: _grouping(name, getattr(base, name)) for name in _GROUPING if hasattr(base, name)})
        methods.update({name: _pairing(name, getattr(base, name)) for name in _PAIRED if hasattr(base, name)})
        if isinstance(getattr(base, "write", None), property):
            methods["write"] = _writer(getattr(base, "write"))  # noqa: B009
        methods["__getattr__"] = _planning_getattr(getattr(base, "__getattr__", None))
        sub = type(base.__name__, (base,), {**methods, "__module__": base.__module__})
        sub.__qualname__ = base.__qualname__
        _SUBCLASSES[base] = sub
        return sub


def _attach_state(df: Any, state: FrameState) -> Any:
    base = type(df)
    if base.__name__ != "DataFrame":
        return df
    try:
        df.__dict__[_STATE] = state
        if base not in _SUBCLASSES.values():
            df.__class__ = _subclass(base)
    except (AttributeError, TypeError):
        df.__dict__.pop(_STATE, None)
    return df


def attach(
    df: Any,
    snapshot: Snapshot,
    *,
    where: Any = None,
    columns: Sequence[str] | None = None,
    prune: Sequence[Condition] = (),
    rescan: Callable[..., Any],
    latest: bool = False,
) -> Any:
    """Make ``df`` -- ``rescan(spark, snapshot, where=where, columns=columns)``, ``rescan`` being
    :func:`~deltalog.spark.reads.scan.read_snapshot` -- re-plan its scan
    with file skipping on ``filter`` / ``where``, directly or after ``select`` / ``withColumn(s)`` /
    ``withColumn(s)Renamed`` / ``drop`` / other filters; returns ``df``. Frames whose class cannot be
    swapped are returned unchanged.

    Example:
        >>> attach(read_snapshot(spark, snap), snap, rescan=read_snapshot).filter("id > 3")  # doctest: +SKIP
        DataFrame[id: bigint]
    """
    names = list(columns) if columns is not None else snapshot.schema.field_names
    state = FrameState(
        snapshot=snapshot,
        where=where,
        columns=tuple(columns) if columns is not None else None,
        prune=tuple(prune),
        applied=len(prune),
        steps=(),
        unchanged=frozenset(n.lower() for n in names),
        rescan=rescan,
        latest=latest,
    )
    return _attach_state(df, state)
