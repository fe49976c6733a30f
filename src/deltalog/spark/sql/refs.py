"""Delta tables named in SQL: resolving table references and rewriting queries that read them.

A reference is a Delta table when it is ``delta.`<path>``` or a catalog table whose provider is
``delta``; it may carry time travel (``VERSION AS OF n``, ``TIMESTAMP AS OF ts``, or Delta's
``t@v12`` / ``t@yyyyMMddHHmmssSSS`` shorthand). :func:`rewrite_query` replaces each such reference of a
query (joins, CTEs, subqueries, set operations) by deltalog's own read of the table, passed to Spark as a
DataFrame argument of ``spark.sql``, so Spark runs the rest of the query unchanged and no temporary view
is left behind; ``table_changes('t', start[, end])`` becomes the change data feed's read.

Example:
    >>> rewritten = rewrite_query(spark, parse("SELECT * FROM delta.`/t` VERSION AS OF 1"))   # doctest: +SKIP
    >>> rewritten.text                                                                       # doctest: +SKIP
    'SELECT * FROM {__deltalog_ref0_1a2b3c4d} AS `t`'
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.spark.catalog.dialect import DIALECT
from deltalog.spark.catalog.entries import TableName, TableRef, jvm_catalog, lookup
from deltalog.spark.common.core import at_travel
from deltalog.spark.common.statements import user_frame

__all__ = [
    "Rewritten", "TableRef", "ViewDef", "delta_view", "expand_at_syntax", "frame_view", "frame_view_rows",
    "reads_delta", "resolve", "resolve_table", "rewrite_condition", "rewrite_query", "view_definition", "view_frame",
    "view_tree",
]



def expand_at_syntax(text: str) -> str:
    """Delta's ``t@v12`` and ``t@20240501123000000`` shorthands as ``VERSION AS OF`` / ``TIMESTAMP AS OF``.

    Example:
        >>> expand_at_syntax("SELECT * FROM t@v12 x")
        'SELECT * FROM t VERSION AS OF 12 x'
        >>> expand_at_syntax("SELECT * FROM t@20240501123000000")
        "SELECT * FROM t TIMESTAMP AS OF '2024-05-01 12:30:00.000'"
    """
    if "@" not in text:
        return text
    import sqlglot

    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except Exception:
        return text
    edits: list[tuple[int, int, str]] = []
    for i, tok in enumerate(tokens[1:-1], start=1):
        if tok.text != "@" or tokens[i - 1].end + 1 != tok.start:
            continue
        nxt = tokens[i + 1]
        if nxt.start != tok.end + 1:
            continue
        travel = at_travel(nxt.text)
        if travel is not None and travel[0] is not None:
            edits.append((tok.start, nxt.end + 1, f" VERSION AS OF {travel[0]}"))
        elif travel is not None:
            edits.append((tok.start, nxt.end + 1, f" TIMESTAMP AS OF '{travel[1]}'"))
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text


def _literal(node: Any) -> Any:
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        return node.this if node.is_string else int(node.this) if node.this.lstrip("-").isdigit() else node.this
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        return node.this.this
    return node.sql(dialect=DIALECT)


def _travel(spark: Any, table: Any) -> tuple[int | None, str | None]:
    version = table.args.get("version")
    if version is None:
        return None, None
    kind = str(version.this).upper()
    if kind == "VERSION":
        value = _literal(version.expression)
        try:
            return int(value), None
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"VERSION AS OF needs an integer, got {value!r}") from None
    return None, timestamp_of(spark, version.expression.sql(dialect=DIALECT))


def timestamp_of(spark: Any, expression: str) -> str:
    """A ``TIMESTAMP AS OF`` expression evaluated by Spark as delta-spark does -- a string without a zone is
    in the session time zone; ``current_timestamp() - INTERVAL 1 HOUR`` works -- as an ISO 8601 UTC string.

    Example:
        >>> timestamp_of(spark, "'2024-05-01 12:00:00'")                         # doctest: +SKIP
        '2024-05-01T12:00:00.000000+00:00'
    """
    import datetime as dt

    from deltalog.spark.catalog.entries import raw_sql

    try:
        micros = raw_sql(spark, f"SELECT unix_micros(CAST(({expression}) AS TIMESTAMP))").first()[0]
    except Exception as exc:
        raise InvalidArgumentError(
            f"TIMESTAMP AS OF {expression} is not a timestamp: {str(exc).splitlines()[0][:200]}") from None
    if micros is None:
        raise InvalidArgumentError(f"TIMESTAMP AS OF {expression} is not a timestamp (it evaluates to NULL)")
    stamp = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(micros))
    return stamp.isoformat(timespec="microseconds")


def _alias(table: Any) -> str | None:
    alias = table.args.get("alias")
    return alias.name if alias is not None and alias.name else None


def resolve_table(spark: Any, table: Any, *, must_exist: bool = True) -> TableRef | None:
    """The Delta table a sqlglot ``Table`` node names, or ``None`` when it is not a Delta table (a
    non-Delta catalog table, a view, a CTE). ``delta.`<path>``` is always Delta.

    Example:
        >>> resolve_table(spark, exp.to_table("delta.`/t`")).location             # doctest: +SKIP
        '/t'
    """
    version, timestamp = _travel(spark, table)
    if (table.db or "").lower() == "delta" and not table.catalog and table.this is not None \
            and getattr(table.this, "quoted", False):
        return TableRef(table.name, None, version, timestamp, _alias(table))
    name = TableName(table.name, table.db or None, table.catalog or None)
    if not name.table:
        return None
    entry = lookup(spark, name)
    if entry is None or not entry.is_delta:
        return None
    return TableRef(entry.location, name, version, timestamp, _alias(table), entry.managed)


def resolve(spark: Any, text: str) -> TableRef:
    """A table reference given as text (``db.t``, ``delta.`/p```, a quoted path ``'/p'``) that must be a
    Delta table; named errors otherwise.

    Example:
        >>> resolve(spark, "delta.`/data/t`").location                            # doctest: +SKIP
        '/data/t'
    """
    from sqlglot import exp

    from deltalog.errors import TableNotFoundError

    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
        return TableRef(stripped[1:-1])
    try:
        table = exp.to_table(stripped, dialect=DIALECT)
    except Exception:
        raise InvalidArgumentError(f"{text!r} is not a table name or delta.`<path>`") from None
    found = resolve_table(spark, table)
    if found is None:
        entry = lookup(spark, TableName(table.name, table.db or None, table.catalog or None))
        if entry is None and not table.db and _is_delta_path(table.name):
            return TableRef(table.name)  # `/data/t`: an absolute path naming no catalog table, as delta-spark reads it
        if entry is None:
            raise TableNotFoundError(f"[TABLE_OR_VIEW_NOT_FOUND] the table {stripped} cannot be found", table=stripped)
        raise InvalidArgumentError(
            f"[DELTA_TABLE_ONLY_OPERATION] {stripped} is not a Delta table (provider {entry.provider or 'unknown'})",
            table=stripped)
    return found


def _is_delta_path(name: str) -> bool:
    """Whether ``name`` is an absolute path or URI (``/data/t``, ``s3://b/t``) holding a Delta table."""
    from deltalog.errors import DeltaError
    from deltalog.spark.common.core import open_table

    if not (name.startswith("/") or "://" in name or name.startswith("file:")):
        return False
    try:
        open_table(name).latest_version()
    except (DeltaError, OSError):
        return False
    return True


def _cte_names(expression: Any) -> set[str]:
    from sqlglot import exp

    return {c.alias_or_name.lower() for c in expression.find_all(exp.CTE)}


def read_ref(spark: Any, ref: TableRef, *, where: Any = None, row_metadata: bool = False) -> Any:
    """deltalog's read of a reference (time travel included) as a DataFrame; ``where`` (a SQL string or a
    callable taking the table's lower-cased column names and returning one) prunes and skips files. With
    ``row_metadata`` the read has the ``_metadata`` struct column (file fields, and a row-tracking table's
    row ids: :mod:`deltalog.spark.reads.row_metadata`).

    Example:
        >>> read_ref(spark, TableRef("/data/t", version=3)).count()               # doctest: +SKIP
        1000
    """
    from deltalog.spark.common.core import anything_cached, load_snapshot, may_be_cached, served_by_cache
    from deltalog.spark.common.instants import session_instant
    from deltalog.spark.reads.scan import read_snapshot

    snapshot = load_snapshot(ref.location, version=ref.version, timestamp=ref.timestamp, at_syntax=True,
                             instant=lambda text: session_instant(spark, text, option="the path's @ timestamp"))
    meta = row_metadata  # the struct is built by deltalog: Spark's own hidden column does not reach the query
    # not time travel (no VERSION / TIMESTAMP AS OF, no path@v3): the read follows the table (a query's frame)
    latest = ref.version is None and ref.timestamp is None and snapshot.table == str(ref.location)
    if callable(where):
        where = where({f.name.lower() for f in snapshot.schema.fields})
    if where and not meta:
        whole = None
        if may_be_cached(snapshot.table) and anything_cached(spark):  # a cached read may serve the query
            whole = read_snapshot(spark, snapshot, latest=latest)
            if served_by_cache(whole):
                return whole
        try:
            return read_snapshot(spark, snapshot, where=where, latest=latest)
        except Exception:  # only a hint: the query applies its own WHERE clause anyway
            if whole is not None:
                return whole
    return read_snapshot(spark, snapshot, row_metadata=meta, latest=latest)


def _names_metadata(expression: Any) -> bool:
    from sqlglot import exp

    return any(i.name.lower() == "_metadata" for i in expression.find_all(exp.Identifier))


def _metadata_stars(table: Any) -> list[tuple[Any, bool]] | None:
    """The stars that would show the ``_metadata`` struct of ``table``'s read, each with whether it is
    qualified (``t.*``): those of the ``SELECT`` reading ``table``; ``None`` when one cannot be spelled
    out (a bare ``*`` over a join, a star inside a function other than ``count``)."""
    from sqlglot import exp

    holder = table.parent
    select = holder.parent if isinstance(holder, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select):
        return None
    joined = bool(select.args.get("joins") or select.args.get("laterals"))
    names = {n.lower() for n in (table.alias_or_name, table.name) if n}
    out: list[tuple[Any, bool]] = []
    for e in select.expressions:
        if isinstance(e, exp.Star):
            if joined:
                return None
            out.append((e, False))
        elif isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            if e.table.lower() in names:
                out.append((e, True))
        elif any(not isinstance(star.parent, exp.Count) for star in e.find_all(exp.Star)):
            return None
    return out


def _spell_out(stars: list[tuple[Any, bool]], columns: list[str], alias: str) -> None:
    from sqlglot import exp

    for node, qualified in stars:
        cols = [exp.column(c, table=alias if qualified else None, quoted=True) for c in columns]
        select = node.parent
        index = select.expressions.index(node)
        select.set("expressions", [*select.expressions[:index], *cols, *select.expressions[index + 1:]])


_VOLATILE = {"rand", "randn", "random", "uuid", "shuffle", "monotonically_increasing_id", "spark_partition_id",
             "input_file_name", "input_file_block_start", "input_file_block_length", "try_reflect", "reflect",
             "java_method"}


def _conjuncts(node: Any) -> list[Any]:
    from sqlglot import exp

    if isinstance(node, exp.And):
        return [*_conjuncts(node.left), *_conjuncts(node.right)]
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return _conjuncts(node.this)
    return [node]


def pushed_where(table: Any) -> Any:
    """For a table that is the only source of a ``SELECT`` (no joins), a function giving the conjuncts of
    that ``SELECT``'s ``WHERE`` that use only the table's columns (qualifiers dropped) as one SQL string,
    or ``None``: deltalog's read uses them to prune partitions and skip files by their statistics, as
    for a DataFrame ``filter``. Subqueries, aggregates, windows and non-deterministic functions stay out.

    Example:
        >>> pushed_where(parse("SELECT * FROM t WHERE k = 1").find(exp.Table))({"k"})   # doctest: +SKIP
        '(k = 1)'
    """
    from sqlglot import exp

    frm = table.parent
    select = frm.parent if isinstance(frm, exp.From) else None
    if not isinstance(select, exp.Select) or select.args.get("joins") or select.args.get("laterals"):
        return None
    where = select.args.get("where")
    if where is None:
        return None
    names = {n.lower() for n in (table.alias_or_name, table.name) if n}
    candidates = []
    for conjunct in _conjuncts(where.this):
        if conjunct.find(exp.Subquery, exp.Select, exp.Exists, exp.AggFunc, exp.Window):
            continue
        funcs = [type(f).__name__.lower() if not isinstance(f, exp.Anonymous) else str(f.name).lower()
                 for f in conjunct.find_all(exp.Func)]
        if any(f in _VOLATILE for f in funcs):
            continue
        cols = list(conjunct.find_all(exp.Column))
        if cols and all(not c.table or c.table.lower() in names for c in cols):
            candidates.append(conjunct)
    if not candidates:
        return None

    def build(columns: set[str]) -> str | None:
        kept = []
        for conjunct in candidates:
            if not all(c.name.lower() in columns for c in conjunct.find_all(exp.Column)):
                continue  # an outer query's column (a correlated subquery) or a struct field path
            copy = conjunct.copy()
            for col in copy.find_all(exp.Column):
                for part in ("table", "db", "catalog"):
                    col.set(part, None)
            kept.append(f"({copy.sql(dialect=DIALECT)})")
        return " AND ".join(kept) or None

    return build


@dataclass(frozen=True)
class Rewritten:
    """A query whose Delta tables are replaced by ``{placeholder}`` s of deltalog's reads (``frames``): run
    by Spark through PySpark's own DataFrame arguments of ``spark.sql`` (classic sessions drop the temporary
    views right after planning; Connect sends the plans along), so no view outlives the statement."""

    text: str
    frames: dict[str, Any]

    def sql(self, spark: Any, args: Any = None, **kwargs: Any) -> Any:
        """Run the query with Spark's own ``sql``.

        Example:
            >>> rewrite_query(spark, parse("SELECT * FROM delta.`/t`")).sql(spark).count()  # doctest: +SKIP
            3
        """
        from deltalog.spark.common.core import view_safe
        from deltalog.spark.common.statements import original_sql

        views = {name: view_safe(frame) for name, frame in self.frames.items()}  # PySpark drops its views after
        return original_sql(spark)(self.text, args, **{**kwargs, **views})


def rewrite_query(spark: Any, expression: Any) -> Rewritten:
    """``expression`` (a sqlglot tree) with every Delta table reference and ``table_changes(...)`` replaced
    by a placeholder for deltalog's read; a query without any comes back as its own text and no frames.

    Example:
        >>> rewrite_query(spark, parse("SELECT 1")).text                           # doctest: +SKIP
        'SELECT 1'
    """
    frames = _replace_delta_tables(spark, expression)
    text = expression.sql(dialect=DIALECT)
    if frames:  # PySpark formats the text with str.format: the query's own braces are escaped
        text = text.replace("{", "{{").replace("}", "}}")
        for name in frames:
            text = text.replace(name, "{" + name + "}")
    return Rewritten(text, frames)


def rewrite_condition(spark: Any, condition: Any) -> tuple[str, dict[str, Any]]:
    """A condition (a sqlglot tree, e.g. a ``WHERE`` with ``IN (SELECT ...)`` subqueries) as SQL text whose
    Delta table references are replaced by names for deltalog's reads, and those reads by name: the caller
    registers them as temporary views while the condition is evaluated (a ``Column`` cannot carry
    DataFrame arguments). ``condition`` is changed in place.

    Example:
        >>> rewrite_condition(spark, parse_condition("id IN (SELECT id FROM staged)"))  # doctest: +SKIP
        ('id IN (SELECT id FROM __deltalog_ref0_1a2b3c4d AS `staged`)', {'__deltalog_ref0_1a2b3c4d': DataFrame[...]})
    """
    frames = _replace_delta_tables(spark, condition)
    return condition.sql(dialect=DIALECT), frames


def _replace_delta_tables(spark: Any, expression: Any) -> dict[str, Any]:
    """Replace (in place) each Delta table reference and ``table_changes(...)`` call in ``expression`` by a
    unique name; returns deltalog's read for each name."""
    from sqlglot import exp

    table_sources(expression)
    ctes = _cte_names(expression)
    frames: dict[str, Any] = {}
    meta = _names_metadata(expression)  # _metadata.row_id ... of row-tracking tables

    def placeholder(df: Any) -> str:
        name = f"__deltalog_ref{len(frames)}_{uuid.uuid4().hex[:8]}"
        frames[name] = df
        return name

    for table in list(expression.find_all(exp.Table)):
        if table.find_ancestor(exp.Hint) is not None:  # /*+ BROADCAST(t) */ names the table's alias
            continue
        func = table.this if isinstance(table.this, (exp.Anonymous, exp.Func)) else None
        if func is not None:
            if str(getattr(func, "name", "")).lower() in _CHANGES:
                table.set("this", exp.to_identifier(placeholder(_changes_frame(spark, func))))
            continue
        if not table.db and table.name.lower() in ctes:
            continue
        given = None if table.db else user_frame(table.name)
        if given is not None:  # spark.sql("... {df} ...", df=df): the caller's DataFrame
            name = placeholder(given)
            alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name))  # {df}.col
            table.replace(exp.Table(this=exp.to_identifier(name), alias=alias))
            continue
        ref = resolve_table(spark, table)
        if ref is None:
            described = isinstance(table.parent, exp.Describe)
            remembered = None if described else frame_view(spark, table)
            view = None if described or remembered is not None else delta_view(spark, table)
            if remembered is not None or view is not None:  # a view over Delta tables: its rows now
                name = placeholder(frame_view_rows(spark, remembered) if view is None else view_frame(spark, view))
                table.replace(exp.Table(this=exp.to_identifier(name),
                                        alias=exp.TableAlias(this=exp.to_identifier(_alias(table) or table.name,
                                                                                    quoted=True))))
            continue
        alias = ref.alias or table.name
        stars = _metadata_stars(table) if meta else None
        df = read_ref(spark, ref, where=pushed_where(table), row_metadata=stars is not None)
        if stars is not None and "_metadata" in df.columns:  # `*` spelled out without the struct
            _spell_out(stars, [c for c in df.columns if c != "_metadata"], alias)
        name = placeholder(df)
        table.replace(exp.Table(this=exp.to_identifier(name),
                                alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True))))
    for func in list(expression.find_all(exp.Anonymous)):
        if str(func.name).lower() in _CHANGES and not isinstance(func.parent, exp.Table):
            func.replace(exp.Table(this=exp.to_identifier(placeholder(_changes_frame(spark, func)))))
    return frames


_CHANGES = ("table_changes", "table_changes_by_path")


def table_sources(expression: Any) -> None:
    """Spell each ``INSERT ... TABLE s`` (sqlglot keeps ``s`` apart, printed after ``TABLE``) as ``INSERT ...
    SELECT * FROM s``, in place, so that a read can stand for ``s`` under its name."""
    from sqlglot import exp

    for insert in list(expression.find_all(exp.Insert)):
        source = insert.args.get("source")
        if isinstance(source, exp.Table) and insert.args.get("expression") is None:
            insert.set("source", None)
            insert.set("expression", exp.select("*").from_(source))


def _changes_frame(spark: Any, func: Any) -> Any:
    from deltalog.spark.reads.changes import load_changes

    args = [_literal(a) for a in func.expressions]
    by_path = str(func.name).lower() == "table_changes_by_path"
    if len(args) not in (2, 3):
        raise InvalidArgumentError(f"{func.name} takes a table {'path' if by_path else 'name'}, a start version "
                                   "or timestamp and an optional end")
    target = str(args[0])
    is_path = by_path or "/" in target or "://" in target
    ref = resolve(spark, f"'{target}'" if is_path else target)
    options: dict[str, Any] = {"readChangeFeed": "true"}
    for key, value in zip(("starting", "ending"), args[1:]):
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            options[f"{key}Version"] = str(value)
        else:
            options[f"{key}Timestamp"] = str(value)
    return load_changes(spark, ref.location, options)


# ------------------------------------------------------------------------------------ views over Delta tables
#
# Spark keeps a view made of SQL as its text and analyses it again at each read; deltalog reads such a view
# the same way, with its Delta tables replaced by deltalog's reads (see deltalog.spark.sql.views).


_MAX_DEPTH = 32  # views of views: deeper than this is a cycle Spark itself would have refused


@dataclass(frozen=True)
class ViewDef:
    """A view as the catalog keeps it: its SQL ``text``, the catalog and database it was created in
    (``namespace``) and its column names."""

    name: TableName
    text: str
    namespace: tuple[str, ...]
    columns: tuple[str, ...]
    temporary: bool


def view_definition(spark: Any, name: TableName) -> ViewDef | None:
    """The definition of the view ``name`` (temporary or persistent) when it was made from SQL text;
    ``None`` for a table, an unknown name or a view made from a DataFrame (Spark keeps its plan instead).

    Example:
        >>> view_definition(spark, parse_name("recent")).text                    # doctest: +SKIP
        "SELECT * FROM events WHERE day > '2024-01-01'"
    """
    if name.catalog and name.catalog.lower() != "spark_catalog":
        return None
    try:
        jc = jvm_catalog(spark)
        if jc is None:
            return _sql_definition(spark, name)
        catalog = jc.catalog
        temporary = not name.database and bool(catalog.getTempView(name.table).isDefined())
        if not temporary and str(name.database or "").lower() == "global_temp":
            temporary = bool(catalog.getGlobalTempView(name.table).isDefined())
        ident = jc.ident(name)
        if not temporary and (
                (name.database and not catalog.databaseExists(name.database)) or not catalog.tableExists(ident)):
            return None
        meta = catalog.getTempViewOrPermanentTableMetadata(ident)
        text = meta.viewText()
        if str(meta.tableType().name()).upper() != "VIEW" or not text.isDefined():
            return None
        namespace = tuple(str(p) for p in str(meta.viewCatalogAndNamespace().mkString("\x1f")).split("\x1f") if p)
        columns = tuple(str(c) for c in meta.schema().fieldNames())
        return ViewDef(name, str(text.get()), namespace, columns, temporary)
    except Exception:  # a catalog this path does not understand: ask with SQL
        return _sql_definition(spark, name)


def _sql_definition(spark: Any, name: TableName) -> ViewDef | None:
    """The view's definition asked with SQL (Spark Connect has no JVM catalog to ask): ``DESCRIBE ... AS JSON``
    (Spark 4), the only form that shows a temporary view's text, else the text form of ``DESCRIBE``."""
    from deltalog.spark.catalog.entries import raw_sql

    try:
        doc = json.loads(raw_sql(spark, f"DESCRIBE TABLE EXTENDED {name.sql()} AS JSON").collect()[0][0])
    except Exception:  # Spark before 4.0, or not a table or view
        doc = None
    if isinstance(doc, dict):
        if str(doc.get("type", "")).upper() != "VIEW" or not doc.get("view_text"):
            return None
        namespace = tuple(p.strip("`") for p in str(doc.get("view_catalog_and_namespace") or "").split(".") if p)
        names = tuple(str(c.get("name")) for c in doc.get("columns") or () if isinstance(c, dict))
        temporary = doc.get("catalog_name") == "system" or list(doc.get("namespace") or ()) == ["global_temp"]
        return ViewDef(name, str(doc["view_text"]), namespace, names, temporary)
    try:
        rows = raw_sql(spark, f"DESCRIBE TABLE EXTENDED {name.sql()}").collect()
    except Exception:
        return None
    columns: list[str] = []
    info: dict[str, str] = {}
    in_columns = True
    for row in rows:
        key, value = str(row[0] or "").strip(), str(row[1] or "").strip()
        if not key or key.startswith("#"):
            in_columns = False
            continue
        if in_columns:
            columns.append(key)
        else:
            info.setdefault(key, value)
    text = info.get("View Text")
    if not text or info.get("Type", "VIEW").upper() != "VIEW":
        return None
    namespace = tuple(p.strip("`") for p in info.get("View Catalog and Namespace", "").split(".") if p)
    return ViewDef(name, text, namespace, tuple(columns), False)


def _name_of(table: Any) -> TableName | None:
    from sqlglot import exp

    if isinstance(table.this, (exp.Anonymous, exp.Func)) or not table.name:
        return None
    return TableName(table.name, table.db or None, table.catalog or None)


def _is_temp_view(spark: Any, name: str) -> bool:
    jc = jvm_catalog(spark)
    if jc is None:  # Spark Connect: ask with SQL
        from deltalog.spark.catalog.entries import raw_sql

        if any(c in name for c in "*|'\\"):  # not a pattern SHOW VIEWS can match exactly
            return False
        try:
            rows = raw_sql(spark, f"SHOW VIEWS LIKE '{name}'").collect()
        except Exception:
            return False
        return any(bool(r[2]) and str(r[1]).lower() == name.lower() for r in rows)
    try:
        return bool(jc.catalog.getTempView(name).isDefined())
    except Exception:
        return False


def view_tree(spark: Any, view: ViewDef) -> Any:
    """The view's text parsed, with its unqualified table names qualified by the view's database (what
    Spark does when it reads the view back, whatever the current database is then)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(view.text, dialect=DIALECT)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    database = view.namespace[-1] if view.namespace else None
    catalog = view.namespace[0] if len(view.namespace) > 1 else None
    if database is None:
        return tree
    for table in tree.find_all(exp.Table):
        if table.db or _name_of(table) is None or table.name.lower() in ctes:
            continue
        if view.temporary and _is_temp_view(spark, table.name):
            continue
        table.set("db", exp.to_identifier(database, quoted=True))
        if catalog:
            table.set("catalog", exp.to_identifier(catalog, quoted=True))
    return tree


def reads_delta(spark: Any, expression: Any, depth: int = 0) -> bool:
    """Whether ``expression`` (a sqlglot tree) reads a Delta table: directly, through ``table_changes`` or
    through views made of SQL text that do.

    Example:
        >>> reads_delta(spark, sqlglot.parse_one("SELECT * FROM recent"))        # doctest: +SKIP
        True
    """
    from sqlglot import exp

    ctes = {c.alias_or_name.lower() for c in expression.find_all(exp.CTE)}
    for table in expression.find_all(exp.Table):
        if isinstance(table.this, (exp.Anonymous, exp.Func)):
            if str(getattr(table.this, "name", "")).lower() in ("table_changes", "table_changes_by_path"):
                return True
            continue
        if table.find_ancestor(exp.Hint) is not None:
            continue
        if not table.db and table.name.lower() in ctes:
            continue
        if resolve_table(spark, table) is not None or frame_view(spark, table) is not None \
                or delta_view(spark, table, depth) is not None:
            return True
    return False


def frame_view(spark: Any, table: Any) -> Any:
    """The remembered temporary view of a deltalog read (:mod:`deltalog.spark.reads.frame_views`) a sqlglot
    ``Table`` node names, or ``None``.

    Example:
        >>> frame_view(spark, exp.to_table("events")).state.snapshot.table       # doctest: +SKIP
        '/data/events'
    """
    from deltalog.spark.reads.frame_views import recall

    name = _name_of(table)
    if name is None or name.catalog:
        return None
    return recall(spark, name.table, name.database)


def frame_view_rows(spark: Any, view: Any) -> Any:
    """The rows of a remembered view now: its read made again from the table's latest version (a
    time-travel read stays at its version), with the view's columns (those the table gained since stay
    out, as Spark keeps a view's columns).

    Example:
        >>> frame_view_rows(spark, frame_view(spark, exp.to_table("events"))).count()   # doctest: +SKIP
        1200
    """
    from deltalog.spark.reads.skipping import refreshed

    df = refreshed(spark, view.state, view.base)
    wanted = list(view.columns)
    if wanted and df.columns != wanted and set(wanted) <= set(df.columns):
        df = df.select(*["`" + c.replace("`", "``") + "`" for c in wanted])
    return df


def delta_view(spark: Any, table: Any, depth: int = 0) -> ViewDef | None:
    """The definition of the view a sqlglot ``Table`` node names when that view reads Delta tables;
    ``None`` otherwise (a table, a CTE, a view that reads none).

    Example:
        >>> delta_view(spark, exp.to_table("recent")).columns                    # doctest: +SKIP
        ('id', 'day')
    """
    name = _name_of(table)
    if name is None or depth > _MAX_DEPTH:
        return None
    entry = lookup(spark, name)  # remembered for the statement: a table is no view, at no further cost
    if entry is not None and entry.provider.lower() not in ("", "view"):
        return None
    view = view_definition(spark, name)
    if view is None:
        return None
    try:
        tree = view_tree(spark, view)
    except Exception:  # text sqlglot cannot read: Spark reads the view itself
        return None
    return view if reads_delta(spark, tree, depth + 1) else None


def view_frame(spark: Any, view: ViewDef) -> Any:
    """The view's rows now: its text run with its Delta tables read by deltalog, under its column names.

    Example:
        >>> view_frame(spark, view_definition(spark, parse_name("recent"))).count()   # doctest: +SKIP
        1200
    """
    from deltalog.spark.common.statements import internal

    tree = view_tree(spark, view)
    with internal():
        df = rewrite_query(spark, tree).sql(spark)
    wanted = list(view.columns)
    if not wanted or df.columns == wanted:
        return df
    lowered = {c.lower(): c for c in df.columns}
    if all(c.lower() in lowered for c in wanted):
        return df.select(*[df[lowered[c.lower()]].alias(c) for c in wanted])
    if len(wanted) == len(df.columns):  # CREATE VIEW v (a, b) AS ...: the view's names, by position
        return df.toDF(*wanted)
    return df
