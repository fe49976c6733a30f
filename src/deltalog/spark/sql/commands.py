"""Delta's own SQL commands: ``DESCRIBE HISTORY`` / ``DETAIL``, ``OPTIMIZE``, ``REORG TABLE ... APPLY
(PURGE)`` and ``APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION = n))``, ``VACUUM``, ``RESTORE``, ``CONVERT TO
DELTA``, ``GENERATE``, ``FSCK REPAIR TABLE``, ``SHOW TBLPROPERTIES``, ``SHOW COLUMNS``, ``ANALYZE TABLE ...
COMPUTE DELTA STATISTICS``, ``ALTER TABLE ... UNSET TBLPROPERTIES``, ``REPLACE TABLE`` and ``CREATE TABLE ...
[SHALLOW|DEEP] CLONE``.

sqlglot does not know most of these statements, so their words come from sqlglot's tokenizer and are
read here in order; every embedded piece -- table names, conditions, column lists, literals -- is handed
to sqlglot (table names) or Spark (conditions, partition schemas) as text. Results are delta-spark's
DataFrames (``DESCRIBE HISTORY`` has the history columns, ``VACUUM`` a ``path`` column, ``RESTORE`` and
``CLONE`` their metrics, ``OPTIMIZE`` and ``REORG`` ``path`` and ``metrics``).

Example:
    >>> spark.sql("VACUUM events RETAIN 200 HOURS DRY RUN").count()                # doctest: +SKIP
    3
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from deltalog.errors import InvalidArgumentError
from deltalog.spark.catalog.clone import clone_into
from deltalog.spark.catalog.dialect import DIALECT
from deltalog.spark.common.statements import internal
from deltalog.spark.sql.refs import TableRef, resolve, timestamp_of
from deltalog.spark.sql.shared import refuse, syntax_error

__all__ = ["handle", "run_command"]


@dataclass(frozen=True)
class _Tok:
    upper: str
    text: str
    start: int
    end: int
    kind: str


def _tokens(text: str) -> list[_Tok]:
    """sqlglot's tokens of ``text``. Where its tokenizer keeps the rest of a statement it does not know as
    one raw string (after ``VACUUM``, ``SHOW``, ...), that rest is tokenized again."""
    import sqlglot

    dialect = sqlglot.Dialect.get_or_raise(DIALECT)
    out: list[_Tok] = []
    for tok in dialect.tokenize(text):
        if tok.token_type.name == "STRING" and out:
            at = text.find(tok.text, out[-1].end + 1)
            if at > 0 and text[at - 1] not in "'\"" and tok.text.strip():
                for inner in dialect.tokenize(tok.text):
                    out.append(_Tok(inner.text.upper(), inner.text, inner.start + at, inner.end + at,
                                    inner.token_type.name))
                continue
        if tok.token_type.name not in ("STRING", "IDENTIFIER", "VAR") and len(tok.text.split()) > 1:
            at = tok.start  # sqlglot joins some word pairs ("PARTITIONED BY"): one token per word here
            for word in tok.text.split():
                at = text.find(word, at)
                out.append(_Tok(word.upper(), word, at, at + len(word) - 1, "VAR"))
                at += len(word)
            continue
        out.append(_Tok(tok.text.upper(), tok.text, tok.start, tok.end, tok.token_type.name))
    return out


class _Reader:
    """Reads a statement's tokens left to right."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, *words: str) -> bool:
        if self.i + len(words) > len(self.toks):
            return False
        return all(self.toks[self.i + k].upper == w for k, w in enumerate(words))

    def take(self, *words: str) -> bool:
        if self.peek(*words):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.take(*words):
            raise syntax_error(self.text, f"expected {' '.join(words)} at {self.rest()[:40]!r}")

    def done(self) -> bool:
        return self.i >= len(self.toks) or (self.i == len(self.toks) - 1 and self.toks[self.i].text == ";")

    def rest(self) -> str:
        return self.text[self.toks[self.i].start:] if self.i < len(self.toks) else ""

    def until(self, *stops: str) -> str:
        """The text from here up to (not including) the first of ``stops`` (words) or the end."""
        if self.i >= len(self.toks):
            return ""
        start = self.toks[self.i].start
        depth = 0
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            if depth == 0 and (tok.upper in stops or tok.text == ";"):
                break
            if tok.text == "(":
                depth += 1
            elif tok.text == ")":
                depth -= 1
            self.i += 1
        end = self.toks[self.i - 1].end + 1 if self.i > 0 else start
        return self.text[start:end].strip()

    def number(self) -> float:
        if self.i >= len(self.toks):
            raise syntax_error(self.text, "a number is missing")
        tok = self.toks[self.i]
        self.i += 1
        try:
            return float(tok.text)
        except ValueError:
            raise syntax_error(self.text, f"{tok.text!r} is not a number") from None

    def literal(self) -> str:
        if self.i >= len(self.toks):
            raise syntax_error(self.text, "a value is missing")
        tok = self.toks[self.i]
        self.i += 1
        return tok.text


def handle(spark: Any, expression: Any, text: str) -> Any:
    """Commands sqlglot parses into its own trees (``DESCRIBE HISTORY``, ``CREATE TABLE ... CLONE``); ``None`` for
    anything else.

    Example:
        >>> handle(spark, parse("DESCRIBE HISTORY t"), "DESCRIBE HISTORY t").columns[:2]   # doctest: +SKIP
        ['version', 'timestamp']
    """
    from sqlglot import exp

    if isinstance(expression, exp.Describe) and _describe_kind(expression) in ("HISTORY", "DETAIL"):
        return run_command(spark, text)
    if isinstance(expression, exp.Create) and str(expression.args.get("kind", "")).upper() == "TABLE" and \
            expression.args.get("clone") is not None:
        return run_command(spark, text)
    return None


class _NotDelta(Exception):
    """The statement names a table that is not a Delta table where Spark itself can run it."""


def _describe_kind(expression: Any) -> str:
    return str(expression.args.get("style") or expression.args.get("kind") or "").upper()


def run_command(spark: Any, text: str) -> Any:
    """Run a Delta command given as text; ``None`` when the text is not one of them (or names a non-Delta
    table in a statement Spark runs for any table, such as ``SHOW TBLPROPERTIES``).

    Example:
        >>> run_command(spark, "DESCRIBE DETAIL delta.`/data/t`").first().format     # doctest: +SKIP
        'delta'
    """
    r = _Reader(text)
    if not r.toks:
        return None
    with internal():
        for words, run in _COMMANDS:
            if r.peek(*words):
                try:
                    return run(spark, r)
                except _NotDelta:
                    return None
    return None


def _spark_table(spark: Any, r: _Reader, *stops: str) -> TableRef:
    """Like :func:`_table` for statements Spark also runs on other tables: a non-Delta table passes."""
    text = r.until(*stops)
    if not text:
        raise syntax_error(r.text, "a table name or delta.`<path>` is missing")
    return _spark_ref(spark, text)


def _spark_ref(spark: Any, text: str) -> TableRef:
    """The Delta table ``text`` names; :class:`_NotDelta` for another table (or none), which Spark runs."""
    from deltalog.errors import TableNotFoundError

    try:
        return resolve(spark, text)
    except (InvalidArgumentError, TableNotFoundError) as exc:
        if "DELTA_TABLE_ONLY_OPERATION" in str(exc) or "TABLE_OR_VIEW_NOT_FOUND" in str(exc):
            raise _NotDelta from None
        raise


def _table(spark: Any, r: _Reader, *stops: str) -> TableRef:
    text = r.until(*stops)
    if not text:
        raise syntax_error(r.text, "a table name or delta.`<path>` is missing")
    return resolve(spark, text)


def _delta_table(spark: Any, ref: TableRef) -> Any:
    from deltalog.spark.api.table import DeltaTable
    from deltalog.spark.common.core import require_table

    require_table(ref.location)  # a path without a table: delta-spark's [DELTA_MISSING_DELTA_TABLE] wording
    table = DeltaTable(spark, ref.location)
    if ref.name is not None:
        table._catalog_name = ref.name.full()
    return table


def _history(spark: Any, r: _Reader) -> Any:
    """``(DESC | DESCRIBE) HISTORY (path=STRING | table=qualifiedName) (LIMIT limit=INTEGER_VALUE)?``, as
    delta-spark's grammar has it: a quoted path, ``delta.`<path>```, a catalog name; a view is refused with
    delta-spark's ``DELTA_CANNOT_DESCRIBE_VIEW_HISTORY``, a path holding no Delta table with its
    ``DELTA_TABLE_ONLY_OPERATION`` words."""
    from deltalog.errors import TableNotFoundError
    from deltalog.spark.catalog.entries import lookup, parse_name
    from deltalog.spark.common.core import open_table

    if not r.take("DESCRIBE"):
        r.expect("DESC")
    r.expect("HISTORY")
    text = r.until("LIMIT")
    if not text:
        raise syntax_error(r.text, "a table name, a quoted path or delta.`<path>` is missing")
    limit = None
    if r.take("LIMIT"):
        given = r.literal() if not r.done() else ""
        if not given.isdigit():
            raise syntax_error(r.text, f"LIMIT takes a whole number of commits, not {given or 'nothing'!r}")
        limit = int(given)
    if not r.done():
        raise syntax_error(r.text, f"unexpected {r.rest()[:40]!r} at the end")
    try:
        ref = resolve(spark, text)
    except InvalidArgumentError as exc:  # a catalog object that is not a Delta table: a view has its own words
        entry = lookup(spark, parse_name(text)) if "DELTA_TABLE_ONLY_OPERATION" in str(exc) else None
        if entry is not None and entry.provider == "view":
            raise InvalidArgumentError("[DELTA_CANNOT_DESCRIBE_VIEW_HISTORY] Cannot describe the history of a view; "
                                       "name the Delta table the view reads", table=text) from None
        raise
    try:
        open_table(ref.location).latest_version()
    except TableNotFoundError as exc:
        shown = ref.name.qualified if ref.name is not None else f"`{ref.location}`"
        raise TableNotFoundError(
            f"[DELTA_TABLE_ONLY_OPERATION] {shown} is not a Delta table. DESCRIBE HISTORY is only supported for "
            f"Delta tables ({exc.message})", table=ref.location) from None
    return _delta_table(spark, ref).history(limit)


def _detail(spark: Any, r: _Reader) -> Any:
    from deltalog.spark.catalog.entries import lookup, parse_name

    if not r.take("DESCRIBE"):
        r.expect("DESC")
    r.expect("DETAIL")
    text = r.until()
    if not text:
        raise syntax_error(r.text, "a table name or delta.`<path>` is missing")
    try:
        ref = resolve(spark, text)
    except InvalidArgumentError as exc:  # a catalog table of another format: described from the catalog
        entry = lookup(spark, parse_name(text)) if "DELTA_TABLE_ONLY_OPERATION" in str(exc) else None
        if entry is None or entry.is_delta:
            raise
        from deltalog.spark.catalog.detail import non_delta_detail

        return non_delta_detail(spark, entry)
    return _delta_table(spark, ref).detail()


def _vacuum(spark: Any, r: _Reader) -> Any:
    from deltalog.commands.vacuum import vacuum
    from deltalog.spark.common.conf import retention_check
    from deltalog.spark.common.core import open_table

    r.expect("VACUUM")
    ref = _table(spark, r, "RETAIN", "DRY", "LITE", "FULL", "USING")
    hours, dry, lite, inventory = None, False, None, None
    while not r.done():  # delta-spark takes the modifiers in any order
        if inventory is None and r.take("USING", "INVENTORY"):
            inventory = r.until("RETAIN", "DRY", "LITE", "FULL")
            if not inventory:
                raise syntax_error(r.text, "USING INVENTORY needs a table name or a (query)")
        elif hours is None and r.take("RETAIN"):
            hours = r.number()
            r.expect("HOURS")
        elif not dry and r.take("DRY", "RUN"):
            dry = True
        elif lite is None and (r.peek("LITE") or r.peek("FULL")):
            lite = r.literal().upper() == "LITE"
        else:
            raise syntax_error(r.text, f"unexpected {r.rest()[:40]!r}")
    table = open_table(ref.location)
    listing = inventory_rows(spark, inventory) if inventory is not None else None
    result = vacuum(table, retention_hours=hours, dry_run=dry, enforce_retention_duration=retention_check(spark),
                    lite=bool(lite), inventory=listing)
    root = table.store.full_path("")
    paths = [os.path.join(root, p) for p in result.files_deleted] if dry else [root]
    return spark.createDataFrame([(p,) for p in paths], "path string")


_INVENTORY_FIELDS = (("path", "string"), ("length", "bigint"), ("isDir", "boolean"), ("modificationTime", "bigint"))


def inventory_rows(spark: Any, source: str) -> Iterator[tuple[str, int, bool, int]]:
    """The rows of ``VACUUM ... USING INVENTORY <table | (query)>`` (delta-spark's columns ``path``,
    ``length``, ``isDir``, ``modificationTime``; others are ignored), streamed to the driver a partition at
    a time.

    Example:
        >>> next(inventory_rows(spark, "(SELECT 'file:/t/a.parquet' AS path, 1L AS length, false AS isDir, "
        ...                            "0L AS modificationTime)"))            # doctest: +SKIP
        ('file:/t/a.parquet', 1, False, 0)
    """
    query = source[1:-1].strip() if source.startswith("(") and source.endswith(")") else f"SELECT * FROM {source}"
    frame = spark.sql(query)
    types = {f.name.lower(): (f.name, f.dataType.simpleString()) for f in frame.schema.fields}
    if any(types.get(name.lower(), ("", ""))[1] != kind for name, kind in _INVENTORY_FIELDS):
        have = ", ".join(f"`{n}` {t.upper()}" for n, t in types.values())
        raise InvalidArgumentError(
            "[DELTA_INVALID_INVENTORY_SCHEMA] the schema of the INVENTORY does not hold every required field: "
            + ", ".join(f"`{n}` {t.upper()}" for n, t in _INVENTORY_FIELDS) + f" (it has {have or 'no columns'})")
    columns = [types[name.lower()][0] for name, _ in _INVENTORY_FIELDS]
    return ((row[0], row[1], row[2], row[3]) for row in frame.select(*columns).toLocalIterator())


def _optimize(spark: Any, r: _Reader) -> Any:
    r.expect("OPTIMIZE")
    ref = _table(spark, r, "WHERE", "ZORDER", "FULL")
    if r.take("FULL"):  # OPTIMIZE t FULL: re-cluster every file of a clustered table
        if not r.done():
            raise syntax_error(r.text, f"unexpected {r.rest()[:40]!r} after FULL")
        from deltalog.spark.layout.optimize import metrics_frame, optimize

        return metrics_frame(spark, optimize(spark, ref.location, full=True))
    builder = _delta_table(spark, ref).optimize()
    if r.take("WHERE"):
        builder = builder.where(r.until("ZORDER"))
    if r.take("ZORDER", "BY"):
        columns = r.until().strip()
        if columns.startswith("(") and columns.endswith(")"):
            columns = columns[1:-1]
        names = [c.strip().strip("`") for c in columns.split(",") if c.strip()]
        return builder.executeZOrderBy(*names)
    if not r.done():
        raise syntax_error(r.text, f"unexpected {r.rest()[:40]!r}")
    return builder.executeCompaction()


def _reorg(spark: Any, r: _Reader) -> Any:
    """``REORG TABLE t [WHERE partition predicate] APPLY (PURGE)``: rewrite the files with deletion vectors."""
    from deltalog.spark.layout.optimize import metrics_frame, optimize

    r.expect("REORG", "TABLE")
    ref = _table(spark, r, "WHERE", "APPLY")
    where = [r.until("APPLY")] if r.take("WHERE") else []
    r.expect("APPLY")
    spec = r.until().strip()
    inner = spec[1:-1].strip() if spec.startswith("(") and spec.endswith(")") else ""
    if inner.upper().startswith("UPGRADE"):
        if where:
            raise syntax_error(r.text, "REORG TABLE ... APPLY (UPGRADE UNIFORM ...) takes no WHERE clause")
        return _upgrade_uniform(spark, r, ref, inner)
    if inner.upper() != "PURGE":
        raise syntax_error(r.text, f"REORG TABLE ... APPLY takes (PURGE), got {spec[:40]!r}")
    return metrics_frame(spark, optimize(spark, ref.location, where=where, purge=True))


_UPGRADE_UNIFORM = re.compile(r"UPGRADE\s+UNIFORM\s*\(\s*ICEBERG_COMPAT_VERSION\s*=\s*(\d+)\s*\)", re.I)


def _upgrade_uniform(spark: Any, r: _Reader, ref: TableRef, inner: str) -> Any:
    """``REORG TABLE t APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION = n))``: the kernel's
    :func:`~deltalog.commands.uniform_upgrade.upgrade_uniform` (column mapping, files rewritten with field ids
    and the compat tag, deletion vectors purged, then UniForm (Iceberg) enabled)."""
    from deltalog.commands.uniform_upgrade import upgrade_uniform
    from deltalog.spark.sql.shared import empty_result

    m = _UPGRADE_UNIFORM.fullmatch(inner.strip())
    if m is None:
        raise syntax_error(r.text, "REORG TABLE ... APPLY (UPGRADE UNIFORM (ICEBERG_COMPAT_VERSION = <version>)) "
                           f"is the form, got {inner[:60]!r}")
    upgrade_uniform(_delta_table(spark, ref)._table, iceberg_compat_version=int(m.group(1)))
    return empty_result(spark)


def _restore(spark: Any, r: _Reader) -> Any:
    r.expect("RESTORE")
    r.take("TABLE")
    ref = _table(spark, r, "TO", "VERSION", "TIMESTAMP")
    r.take("TO")
    dt = _delta_table(spark, ref)
    if r.take("VERSION", "AS", "OF"):
        return dt.restoreToVersion(int(r.number()))
    if r.take("TIMESTAMP", "AS", "OF"):
        return dt.restoreToTimestamp(timestamp_of(spark, r.until()))
    raise syntax_error(r.text, "RESTORE needs TO VERSION AS OF <n> or TO TIMESTAMP AS OF <timestamp>")


def _unquote(text: str) -> str:
    t = text.strip()
    return t[1:-1] if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"" else t


def _convert(spark: Any, r: _Reader) -> Any:
    from deltalog.spark.api.table import DeltaTable
    from deltalog.spark.sql.shared import empty_result

    r.expect("CONVERT", "TO", "DELTA")
    target = r.until("NO", "PARTITIONED")
    stats = not r.take("NO", "STATISTICS")
    schema = None
    if r.take("PARTITIONED", "BY"):
        schema = r.until()
        if schema.startswith("(") and schema.endswith(")"):
            schema = schema[1:-1]
    DeltaTable.convertToDelta(spark, target, schema, collectStats=stats)
    return empty_result(spark)


def _generate(spark: Any, r: _Reader) -> Any:
    from deltalog.spark.sql.shared import empty_result

    r.expect("GENERATE")
    mode = r.literal()
    r.expect("FOR")
    r.take("TABLE")
    _delta_table(spark, _table(spark, r)).generate(mode)
    return empty_result(spark)


def _fsck(spark: Any, r: _Reader) -> Any:
    from deltalog.commands.check import check_table, repair_table
    from deltalog.spark.common.core import open_table

    r.expect("FSCK", "REPAIR", "TABLE")
    ref = _table(spark, r, "DRY")
    dry = r.take("DRY", "RUN")
    table = open_table(ref.location)
    report = check_table(table)
    missing = [p.file for p in report.problems if p.repairable and p.file]
    if missing and not dry:
        repair_table(table, report=report)
    return spark.createDataFrame([(m, True) for m in missing], "path string, is_file_missing boolean")


def _show_properties(spark: Any, r: _Reader) -> Any:
    from deltalog.spark.common.core import load_snapshot, table_properties

    r.expect("SHOW", "TBLPROPERTIES")
    ref = _spark_table(spark, r, "(")
    props = table_properties(load_snapshot(ref.location))
    rest = r.rest().strip()
    if rest.startswith("(") and rest.endswith(")"):
        key = _unquote(rest[1:-1])
        value = props.get(key, f"Table {ref.shown} does not have property: {key}")
        return spark.createDataFrame([(key, value)], "key string, value string")
    return spark.createDataFrame(list(props.items()), "key string, value string")


def _alter(spark: Any, r: _Reader) -> Any:
    """``ALTER TABLE ... UNSET TBLPROPERTIES``, ``CLUSTER BY NONE`` and the ``{ALTER | CHANGE} [COLUMN]``
    forms of :mod:`deltalog.spark.sql.alter_column` (the other ALTER forms are parsed by sqlglot)."""
    from deltalog.spark.common.core import open_table
    from deltalog.spark.sql.shared import empty_result

    r.expect("ALTER", "TABLE")
    ref = _spark_table(spark, r, "UNSET", "CLUSTER", "ALTER", "CHANGE")
    if r.take("CLUSTER", "BY", "NONE") and r.done():
        open_table(ref.location).cluster_by(None)
        return empty_result(spark)
    keyword = "ALTER" if r.take("ALTER") else "CHANGE" if r.take("CHANGE") else None
    if keyword is not None:  # FIRST / AFTER and SYNC IDENTITY
        from deltalog.spark.sql.alter_column import alter_column_text

        r.take("COLUMN")
        alter_column_text(open_table(ref.location), keyword, r.rest(), r.text)
        return empty_result(spark)
    if not r.take("UNSET", "TBLPROPERTIES"):
        raise refuse(r.text, "this ALTER TABLE form is not supported on Delta tables by deltalog")
    if_exists = r.take("IF", "EXISTS")
    body = r.until().strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1]
    keys = [_unquote(k) for k in body.split(",") if k.strip()]
    open_table(ref.location).unset_properties(keys, if_exists=if_exists)
    return empty_result(spark)


def _replace_table(spark: Any, r: _Reader) -> Any:
    import sqlglot

    from deltalog.spark.sql.ddl import create_table

    r.expect("REPLACE", "TABLE")
    statement = "CREATE OR REPLACE TABLE " + r.rest()
    return create_table(spark, sqlglot.parse_one(statement, dialect=DIALECT), r.text, must_exist=True)


def _create(spark: Any, r: _Reader) -> Any:
    """``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] t [SHALLOW|DEEP] CLONE src [...]``; other CREATE
    statements sqlglot could not parse go to Spark (``None``)."""
    r.expect("CREATE")
    replace = r.take("OR", "REPLACE")
    if not r.take("TABLE"):
        return None
    if_not_exists = r.take("IF", "NOT", "EXISTS")
    start = r.i
    target_text = r.until("SHALLOW", "DEEP", "CLONE")
    if not (r.peek("SHALLOW") or r.peek("DEEP") or r.peek("CLONE")):
        r.i = start
        return None
    shallow = r.take("SHALLOW")
    r.take("DEEP")
    r.expect("CLONE")
    source = _table(spark, r, "VERSION", "TIMESTAMP", "TBLPROPERTIES", "LOCATION")
    at: dict[str, Any] = {}
    if r.take("VERSION", "AS", "OF"):
        at["version"] = int(r.number())
    elif r.take("TIMESTAMP", "AS", "OF"):
        at["timestamp"] = timestamp_of(spark, r.until("TBLPROPERTIES", "LOCATION"))
    properties: dict[str, str] = {}
    location = None
    while not r.done():
        if r.take("TBLPROPERTIES"):
            body = r.until("LOCATION").strip()[1:-1]
            for pair in body.split(","):
                key, _, value = pair.partition("=")
                properties[_unquote(key)] = _unquote(value)
        elif r.take("LOCATION"):
            location = _unquote(r.literal())
        else:
            raise syntax_error(r.text, f"unexpected {r.rest()[:40]!r}")
    return clone_into(spark, r.text, target_text, source, shallow=shallow, replace=replace,
                      if_not_exists=if_not_exists, properties=properties, location=location, at=at)


def _comment_on_text(spark: Any, r: _Reader) -> Any:
    """``COMMENT ON TABLE | COLUMN x IS NULL | 'a' 'b' ...`` (sqlglot parses one string literal only; Spark joins
    adjacent ones)."""
    from deltalog.spark.sql.table_ops import comment_on

    r.expect("COMMENT", "ON")
    kind = r.literal().upper()
    target = r.until("IS")
    r.expect("IS")
    comment: str | None = None
    if not r.take("NULL"):
        parts = []
        while r.i < len(r.toks) and r.toks[r.i].kind == "STRING":
            parts.append(r.literal())
        if not parts:
            raise syntax_error(r.text, f"expected NULL or a string at {r.rest()[:40]!r}")
        comment = "".join(parts)
    if not r.done():
        raise syntax_error(r.text, f"unexpected {r.rest()[:40]!r}")
    result = comment_on(spark, kind, target, comment, r.text)
    if result is None:
        raise _NotDelta
    return result


def _show_create(spark: Any, r: _Reader) -> Any:
    from deltalog.spark.sql.table_ops import show_create_table

    r.expect("SHOW", "CREATE", "TABLE")
    ref = _spark_table(spark, r, "AS")
    if not r.done():
        raise refuse(r.text, "SHOW CREATE TABLE ... AS SERDE is for Hive tables; a Delta table has no SerDe")
    return show_create_table(spark, ref)


def _show_partitions(spark: Any, r: _Reader) -> Any:
    from deltalog.spark.sql.table_ops import show_partitions

    r.expect("SHOW", "PARTITIONS")
    ref = _spark_table(spark, r, "PARTITION")
    spec: dict[str, str] = {}
    if r.take("PARTITION"):
        body = r.until().strip()
        if not (body.startswith("(") and body.endswith(")")):
            raise syntax_error(r.text, "expected PARTITION (column = value, ...)")
        for pair in body[1:-1].split(","):
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise syntax_error(r.text, f"expected column = value in PARTITION, got {pair.strip()!r}")
            spec[key.strip().strip("`")] = _unquote(value)
    if not r.done():
        raise syntax_error(r.text, f"unexpected {r.rest()[:40]!r}")
    return show_partitions(spark, ref, spec, r.text)


def _show_columns(spark: Any, r: _Reader) -> Any:
    """``SHOW COLUMNS (IN | FROM) table [(IN | FROM) database]``: the table's column names (``col_name``)."""
    from deltalog.spark.catalog.entries import parse_name
    from deltalog.spark.common.core import load_snapshot

    r.expect("SHOW", "COLUMNS")
    if not (r.take("IN") or r.take("FROM")):
        raise syntax_error(r.text, "expected SHOW COLUMNS IN <table>")
    name = r.until("IN", "FROM")
    if not name:
        raise syntax_error(r.text, "a table name or delta.`<path>` is missing")
    if r.take("IN") or r.take("FROM"):  # the database of an unqualified name
        database = r.until().strip()
        if not database:
            raise syntax_error(r.text, "a database name is missing after IN / FROM")
        if parse_name(name).database is not None:  # also delta.`<path>`
            raise refuse(r.text, f"[SHOW_COLUMNS_WITH_CONFLICT_NAMESPACE] {name} names its namespace already; "
                                 f"leave out IN {database}")
        name = f"{database}.{name}"
    if not r.done():
        raise syntax_error(r.text, f"unexpected {r.rest()[:40]!r}")
    fields = load_snapshot(_spark_ref(spark, name).location).schema.fields
    return spark.createDataFrame([(f.name,) for f in fields], "col_name string")


def _analyze(spark: Any, r: _Reader) -> Any:
    """``ANALYZE TABLE t COMPUTE DELTA STATISTICS``: every file's statistics read again (Spark's own ``ANALYZE
    TABLE ... COMPUTE STATISTICS`` goes to Spark)."""
    from deltalog.spark.common.core import open_table
    from deltalog.spark.sql.shared import empty_result

    r.expect("ANALYZE", "TABLE")
    name = r.until("COMPUTE")
    if not r.take("COMPUTE", "DELTA", "STATISTICS"):
        raise _NotDelta
    if not name:
        raise syntax_error(r.text, "a table name or delta.`<path>` is missing")
    if not r.done():
        raise refuse(r.text, f"{r.rest()[:40]!r} is not supported after COMPUTE DELTA STATISTICS: the statistics of "
                             "every file are recomputed")
    open_table(resolve(spark, name).location).compute_statistics()
    return empty_result(spark)


_COMMANDS: list[tuple[tuple[str, ...], Any]] = [
    (("DESCRIBE", "HISTORY"), _history),
    (("DESC", "HISTORY"), _history),
    (("DESCRIBE", "DETAIL"), _detail),
    (("DESC", "DETAIL"), _detail),
    (("VACUUM",), _vacuum),
    (("OPTIMIZE",), _optimize),
    (("REORG", "TABLE"), _reorg),
    (("RESTORE",), _restore),
    (("CONVERT", "TO", "DELTA"), _convert),
    (("GENERATE",), _generate),
    (("FSCK", "REPAIR", "TABLE"), _fsck),
    (("SHOW", "TBLPROPERTIES"), _show_properties),
    (("ALTER", "TABLE"), _alter),
    (("REPLACE", "TABLE"), _replace_table),
    (("CREATE",), _create),
    (("COMMENT", "ON"), _comment_on_text),
    (("SHOW", "CREATE", "TABLE"), _show_create),
    (("SHOW", "PARTITIONS"), _show_partitions),
    (("SHOW", "COLUMNS"), _show_columns),
    (("ANALYZE", "TABLE"), _analyze),
]
