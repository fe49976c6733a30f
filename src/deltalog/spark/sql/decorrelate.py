"""Correlated ``[NOT] EXISTS`` subqueries of an UPDATE / DELETE condition, rewritten without the correlation.

deltalog evaluates a DML condition as a ``Column`` on the target's rows, where a subquery cannot name the
target. ``EXISTS (SELECT ... FROM s WHERE s.k = t.k AND <s only> AND <t only>)`` -- equalities between the
target's columns and the subquery's expressions, conditions on the subquery's rows alone and conditions on
the target's row alone, AND-ed -- means the same as

    coalesce(<t only>, false) AND coalesce((t.k, ...) IN (SELECT s.k, ... FROM s WHERE <s only>
                                                        AND s.k IS NOT NULL ...), false)

which is true or false, never null, as ``EXISTS`` is (a null key matches nothing either way), so ``NOT``
around it keeps its meaning. Other correlations (``s.x > t.y``, ``OR``, a correlated ``IN`` or scalar
subquery, grouping) stay correlated, and the caller refuses them.

Example:
    >>> import sqlglot
    >>> tree = sqlglot.parse_one("NOT EXISTS (SELECT 1 FROM u WHERE u.id = t.id)", read="spark")
    >>> decorrelated(tree, {"t"}).sql(dialect="spark")
    'NOT COALESCE(t.id IN (SELECT u.id FROM u WHERE NOT u.id IS NULL), FALSE)'
"""

from __future__ import annotations

from typing import Any

__all__ = ["decorrelated"]


def _outer(node: Any, names: set[str]) -> list[Any]:
    from sqlglot import exp

    return [c for c in node.find_all(exp.Column) if c.table and c.table.lower() in names]


def _and(parts: list[Any]) -> Any:
    from sqlglot import exp

    out = parts[0]
    for p in parts[1:]:
        out = exp.And(this=out, expression=p)
    return out


def _rewritten(exists: Any, names: set[str]) -> Any | None:
    """The uncorrelated form of one ``EXISTS`` node (see the module docstring), or None when its
    correlation has another shape."""
    from sqlglot import exp

    select = exists.this
    if not isinstance(select, exp.Select) or not _outer(select, names):
        return None
    if any(select.args.get(k) for k in ("group", "having", "limit", "offset", "qualify", "distinct")):
        return None
    sources = [t for t in select.find_all(exp.Table)]
    if any((t.alias_or_name or "").lower() in names for t in sources):
        return None  # the subquery reads a table under the target's name: its qualifier would be ambiguous
    where = select.args.get("where")
    if where is None:
        return None
    keys: list[tuple[Any, Any]] = []
    inner: list[Any] = []
    hoisted: list[Any] = []
    for term in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        outer = _outer(term, names)
        columns = list(term.find_all(exp.Column))
        if not outer:
            if term.find(exp.Select) is not None and any(_outer(s, names) for s in term.find_all(exp.Select)):
                return None
            inner.append(term)
        elif len(outer) == len(columns) and term.find(exp.Select) is None:
            hoisted.append(term)
        elif isinstance(term, exp.EQ):
            left, right = term.this, term.expression
            for a, b in ((left, right), (right, left)):
                a_cols = list(a.find_all(exp.Column))
                if a_cols and len(_outer(a, names)) == len(a_cols) and not _outer(b, names) \
                        and a.find(exp.Select) is None and b.find(exp.Select) is None:
                    keys.append((a, b))
                    break
            else:
                return None
        else:
            return None
    if not keys:
        return None
    if any(_outer(e, names) for e in select.expressions):
        return None
    filters = inner + [exp.Not(this=exp.Is(this=b.copy(), expression=exp.Null())) for _, b in keys]
    query = exp.Select(expressions=[b.copy() for _, b in keys])
    for arg in ("with_", "with", "from_", "from", "joins", "laterals"):
        if select.args.get(arg):
            query.set(arg, select.args[arg])
    query.set("where", exp.Where(this=_and([f.copy() for f in filters])))
    left = keys[0][0].copy() if len(keys) == 1 else exp.Tuple(expressions=[a.copy() for a, _ in keys])
    found = exp.Coalesce(this=exp.In(this=left, query=exp.Subquery(this=query)), expressions=[exp.false()])
    if not hoisted:
        return found
    guard = exp.Coalesce(this=_and([h.copy() for h in hoisted]), expressions=[exp.false()])
    return exp.Paren(this=exp.And(this=guard, expression=found))


def decorrelated(tree: Any, names: set[str]) -> Any:
    """``tree`` (a sqlglot condition) with each correlated ``EXISTS`` whose correlation is made of equalities
    rewritten as an ``IN`` (see the module docstring); ``names`` are the target's name and alias
    (lower-case). Correlations of other shapes are left in place.

    Example:
        >>> import sqlglot
        >>> tree = sqlglot.parse_one("EXISTS (SELECT 1 FROM u WHERE u.id = t.id AND t.v > 0)", read="spark")
        >>> decorrelated(tree, {"t"}).sql(dialect="spark")
        '(COALESCE(t.v > 0, FALSE) AND COALESCE(t.id IN (SELECT u.id FROM u WHERE NOT u.id IS NULL), FALSE))'
    """
    from sqlglot import exp

    for node in list(tree.find_all(exp.Exists)):
        replacement = _rewritten(node, names)
        if replacement is not None:
            if node is tree:
                return replacement
            node.replace(replacement)
    return tree
