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
name a catalog table instead.

Example:
    >>> spark.sql("CREATE VIEW recent AS SELECT * FROM events WHERE day > '2024-01-01'")   # doctest: +SKIP
    >>> spark.table("recent").count()        # the events table as it is now            # doctest: +SKIP
    1200
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deltalog.spark.sql.dialect import DIALECT

__all__ = ["create_view"]


def create_view(spark: Any, expression: Any, text: str, as_given: Callable[[], Any]) -> Any:
    """Run ``CREATE [OR REPLACE] [TEMP] VIEW`` with Spark's own ``sql`` (Spark keeps the text and checks it
    against the catalog: ``as_given`` runs the statement as the caller wrote it); one whose query names a
    Delta table by path, with time travel or through ``table_changes`` is refused, naming what to do instead.

    Example:
        >>> create_view(spark, parse("CREATE VIEW v AS SELECT * FROM events"), text, run)    # doctest: +SKIP
        DataFrame[]
    """
    from sqlglot import exp

    from deltalog.spark.sql.catalog import sync_schema
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
                sync_schema(spark, ref.name, ref.location)
            if ref is not None and ref.name is None:
                raise refuse(text, f"a view cannot name the Delta table {ref.shown} by its path; Spark keeps a view "
                                   f"as SQL it reads back itself: register the table (CREATE TABLE name USING DELTA "
                                   f"LOCATION '{ref.location}') and name it in the view")
    return as_given()
