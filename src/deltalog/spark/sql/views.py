"""Views over Delta tables: ``CREATE [TEMP] VIEW v AS SELECT ... FROM <catalog Delta table>``.

Spark stores such a view as its text (persistent views in the catalog, SQL temporary views in the session)
and analyses the text again each time the view is read, so the view sees the table as it is then. Spark
cannot read a catalog Delta table itself (deltalog reads it), so deltalog reads such a view the same way:
a query naming the view -- through ``spark.sql``, ``spark.table`` or ``spark.read.table``, directly or
through other views -- gets the view's text, its unqualified table names resolved in the database the view
was created in, with every Delta table replaced by deltalog's read of its latest version, and the view's
column names (:func:`deltalog.spark.sql.refs.delta_view` and :func:`~deltalog.spark.sql.refs.view_frame`,
beside the rewriting of Delta table references they recurse with). ``CREATE VIEW`` itself is Spark's own
(Spark checks the text against the catalog's schemas); a view naming a Delta table by path
(``delta.`/p```), with time travel or ``table_changes`` is refused, since Spark could not read it back:
name a catalog table instead. On Spark 3.5, which has no Python data sources, Spark cannot analyse a view's
query over a catalog Delta table at all: such views are refused there (a temporary view of deltalog's read of
the table, ``spark.table(name).createOrReplaceTempView(...)``, works).

Example:
    >>> spark.sql("CREATE VIEW recent AS SELECT * FROM events WHERE day > '2024-01-01'")   # doctest: +SKIP
    >>> spark.table("recent").count()        # the events table as it is now            # doctest: +SKIP
    1200
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deltalog.spark.catalog.dialect import DIALECT
from deltalog.spark.common import compat

__all__ = ["create_view", "view_target"]


def create_view(spark: Any, expression: Any, text: str, as_given: Callable[[], Any]) -> Any:
    """Run ``CREATE [OR REPLACE] [TEMP] VIEW`` with Spark's own ``sql`` (Spark keeps the text and checks it
    against the catalog: ``as_given`` runs the statement as the caller wrote it); one whose query names a
    Delta table by path, with time travel or through ``table_changes`` is refused, naming what to do instead.

    Example:
        >>> create_view(spark, parse("CREATE VIEW v AS SELECT * FROM events"), text, run)    # doctest: +SKIP
        DataFrame[]
    """
    from sqlglot import exp

    from deltalog.spark.catalog.entries import sync_schema
    from deltalog.spark.sql.refs import resolve_table
    from deltalog.spark.sql.shared import refuse

    query = expression.expression
    if query is not None:
        for table in query.find_all(exp.Table):
            if isinstance(table.this, (exp.Anonymous, exp.Func)):
                if str(getattr(table.this, "name", "")).lower() in ("table_changes", "table_changes_by_path"):
                    raise refuse(text, "a view cannot read the change data feed (table_changes); Spark keeps a "
                                       "view as SQL it reads back itself")
                continue
            if table.args.get("version") is not None:
                raise refuse(text, f"a view cannot read {table.sql(dialect=DIALECT)} with time travel; Spark keeps "
                                   "a view as SQL it reads back itself (create a table of that version instead, "
                                   "e.g. CREATE TABLE ... SHALLOW CLONE ... VERSION AS OF n)")
            ref = resolve_table(spark, table)
            if ref is not None and ref.name is not None:  # Spark checks the view against the catalog's columns
                compat.require((4, 0), f"a view over the catalog Delta table {ref.shown}",
                               "has no Python data sources, so Spark, which analyses a view's query itself, finds "
                               "no delta provider", f"or make a temporary view of deltalog's read instead: "
                               f"spark.table('{ref.shown}').createOrReplaceTempView('<view>')")
                sync_schema(spark, ref.name, ref.location)
            if ref is not None and ref.name is None:
                raise refuse(text, f"a view cannot name the Delta table {ref.shown} by its path; Spark keeps a view "
                                   f"as SQL it reads back itself: register the table (CREATE TABLE name USING DELTA "
                                   f"LOCATION '{ref.location}') and name it in the view")
    return as_given()


def view_target(spark: Any, table: Any, text: str, what: str) -> Any:
    """The Delta table an UPDATE / DELETE / MERGE (``what``) changes through the temporary view ``table``
    names, as delta-spark allows: a view of a whole Delta table -- a deltalog read registered with
    ``createOrReplaceTempView`` (:mod:`deltalog.spark.reads.frame_views`) or ``CREATE TEMP VIEW v AS SELECT *
    FROM t`` -- stands for the table (its latest version). A view of part of one (a filter, a projection),
    of an older version, or a persistent view is refused naming why; ``None`` when ``table`` is no view
    over a Delta table (Spark decides).

    Example:
        >>> view_target(spark, exp.to_table("events_view"), text, "DELETE").location   # doctest: +SKIP
        '/data/events'
    """
    from sqlglot import exp

    from deltalog.spark.reads.skipping import whole_table
    from deltalog.spark.sql.refs import TableRef, delta_view, frame_view, resolve_table, view_tree
    from deltalog.spark.sql.shared import refuse

    alias = table.args.get("alias")
    alias_name = alias.name if alias is not None and alias.name else None
    remembered = frame_view(spark, table)
    if remembered is not None:
        state = remembered.state
        location = state.snapshot.table
        if not state.latest:
            raise refuse(text, f"{table.name} is a view of version {state.snapshot.version} of the Delta table at "
                               f"{location} (time travel); {what} changes the latest version only: name the table")
        if not whole_table(state):
            raise refuse(text, f"[DELTA_UNEXPECTED_PARTIAL_SCAN] {table.name} is a view of part of the Delta table at "
                               f"{location} (a filter or a projection); {what} changes a table through a temporary "
                               "view only when the view is the whole table: name the table, with a condition")
        return TableRef(location, alias=alias_name)
    view = delta_view(spark, table)
    if view is None:
        return None
    if not view.temporary:
        raise refuse(text, f"{table.name} is a persistent view; {what} changes a Delta table through a temporary "
                           "view only: name the table")
    tree = view_tree(spark, view)
    source = tree.args.get("from") or tree.args.get("from_")
    inner = source.this if source is not None else None
    clauses = {k for k, v in tree.args.items() if v} if isinstance(tree, exp.Select) else {"not a select"}
    plain = isinstance(inner, exp.Table) and not inner.args.get("sample") \
        and clauses <= {"expressions", "from", "from_"} \
        and len(tree.expressions) == 1 and tree.expressions[0].sql(dialect=DIALECT) == "*"  # SELECT * FROM t
    ref = resolve_table(spark, inner) if plain else None
    if ref is None or ref.version is not None or ref.timestamp is not None:
        raise refuse(text, f"[DELTA_UNEXPECTED_PARTIAL_SCAN] {table.name} is a view of more or less than a whole "
                           f"Delta table ({view.text}); {what} changes a table through a temporary view only when "
                           "the view is SELECT * FROM the table: name the table, with a condition")
    return TableRef(ref.location, ref.name, alias=alias_name, managed=ref.managed)
