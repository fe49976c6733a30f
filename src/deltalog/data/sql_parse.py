"""The parser of deltalog's SQL expression subset: text to a tree of :class:`SqlNode`, evaluated on Arrow
by :mod:`deltalog.data.sql_expr` (which lists the subset) and read by the commands that take SQL
predicates (MERGE's join keys, replaceWhere, OPTIMIZE's partition filter).

Example:
    >>> SqlParser("id = 7").parse()
    SqlNode(kind='binary', args=('=', SqlNode(kind='col', args=('id',)), SqlNode(kind='lit', args=(7,))))
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from deltalog.errors import DeltaError

__all__ = ["SqlNode", "SqlParser", "UnsupportedExpressionError"]


class UnsupportedExpressionError(DeltaError):
    """A constraint's SQL expression is outside the subset deltalog can evaluate (or is malformed).

    Example:
        >>> SqlParser("x REGEXP 'a'").parse()
        Traceback (most recent call last):
        ...
        deltalog.data.sql_parse.UnsupportedExpressionError: unexpected 'REGEXP' at position 2
    """


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<num>\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)(?P<suffix>[LlDd])?
      | '(?P<sq>(?:[^'\\]|''|\\.)*)'
      | "(?P<dq>(?:[^"\\]|""|\\.)*)"
      | `(?P<bq>(?:[^`]|``)*)`
      | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op><=>|<=|>=|<>|!=|==|[=<>+\-*/%(),.])
    )""",
    re.VERBOSE,
)

_KEYWORDS = {"AND", "OR", "NOT", "IS", "NULL", "TRUE", "FALSE", "IN", "BETWEEN", "LIKE", "DATE", "TIMESTAMP"}


@dataclass(frozen=True)
class _Tok:
    kind: str  # num, str, id, kw, op, end
    text: str
    pos: int


def _tokenize(sql: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(sql):
        if sql[pos:].strip() == "":
            break
        m = _TOKEN.match(sql, pos)
        if m is None or m.end() == pos:
            raise UnsupportedExpressionError(f"unexpected character {sql[pos:].strip()[:1]!r} at {pos}")
        start = m.start(m.lastgroup) if m.lastgroup else pos
        if m.group("num") is not None:
            out.append(_Tok("num", m.group("num") + (m.group("suffix") or ""), start))
        elif m.group("sq") is not None:
            out.append(_Tok("str", _unescape(m.group("sq"), "'"), start))
        elif m.group("dq") is not None:
            out.append(_Tok("str", _unescape(m.group("dq"), '"'), start))
        elif m.group("bq") is not None:
            out.append(_Tok("id", m.group("bq").replace("``", "`"), start))
        elif m.group("id") is not None:
            word = m.group("id")
            kind = "kw" if word.upper() in _KEYWORDS else "id"
            out.append(_Tok(kind, word.upper() if kind == "kw" else word, start))
        else:
            out.append(_Tok("op", m.group("op"), start))
        pos = m.end()
    out.append(_Tok("end", "", len(sql)))
    return out


def _unescape(text: str, quote: str) -> str:
    text = text.replace(quote * 2, quote)
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


# ------------------------------------------------------------------------------------------- AST

@dataclass(frozen=True)
class SqlNode:
    """One node of a parsed expression: its ``kind`` and its operands (nodes, names or literal values).

    Example:
        >>> SqlParser("x > 3").parse().kind
        'binary'
    """

    kind: str  # lit, col, unary, binary, isnull, in, between, like, func
    args: tuple[Any, ...]


class SqlParser:
    """Precedence climbing: OR < AND < NOT < comparison/IS/IN/BETWEEN/LIKE < + - < * / % < unary.

    Example:
        >>> SqlParser("a = 1 AND b IS NULL").parse().args[0]
        'AND'
    """

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.toks = _tokenize(sql)
        self.i = 0

    def peek(self, offset: int = 0) -> _Tok:
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, kind: str, text: str | None = None) -> bool:
        tok = self.peek()
        if tok.kind == kind and (text is None or tok.text == text):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, text: str) -> None:
        if not self.accept(kind, text):
            tok = self.peek()
            found = tok.text or "the end"
            raise UnsupportedExpressionError(f"expected {text!r} at position {tok.pos}, found {found!r}")

    def parse(self) -> SqlNode:
        node = self.or_()
        if self.peek().kind != "end":
            tok = self.peek()
            raise UnsupportedExpressionError(f"unexpected {tok.text!r} at position {tok.pos}")
        return node

    def or_(self) -> SqlNode:
        node = self.and_()
        while self.accept("kw", "OR"):
            node = SqlNode("binary", ("OR", node, self.and_()))
        return node

    def and_(self) -> SqlNode:
        node = self.not_()
        while self.accept("kw", "AND"):
            node = SqlNode("binary", ("AND", node, self.not_()))
        return node

    def not_(self) -> SqlNode:
        if self.accept("kw", "NOT"):
            return SqlNode("unary", ("NOT", self.not_()))
        return self.predicate()

    def predicate(self) -> SqlNode:
        left = self.additive()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text in ("=", "==", "!=", "<>", "<", "<=", ">", ">=", "<=>"):
                self.take()
                op = {"==": "=", "<>": "!="}.get(tok.text, tok.text)
                left = SqlNode("binary", (op, left, self.additive()))
                continue
            if self.accept("kw", "IS"):
                negate = self.accept("kw", "NOT")
                if self.peek().kind == "id" and self.peek().text.upper() == "DISTINCT":
                    self.take()  # IS [NOT] DISTINCT FROM: null-safe (in)equality, as <=>
                    if not (self.peek().kind == "id" and self.peek().text.upper() == "FROM"):
                        raise UnsupportedExpressionError(f"expected FROM at position {self.peek().pos}")
                    self.take()
                    same = SqlNode("binary", ("<=>", left, self.additive()))
                    left = same if negate else SqlNode("unary", ("NOT", same))
                    continue
                self.expect("kw", "NULL")
                left = SqlNode("isnull", (left, negate))
                continue
            negate = False
            if tok.kind == "kw" and tok.text == "NOT" and self.peek(1).text in ("IN", "BETWEEN", "LIKE"):
                self.take()
                negate = True
            if self.accept("kw", "IN"):
                self.expect("op", "(")
                items = [self.or_()]
                while self.accept("op", ","):
                    items.append(self.or_())
                self.expect("op", ")")
                left = SqlNode("in", (left, tuple(items), negate))
            elif self.accept("kw", "BETWEEN"):
                lo = self.additive()
                self.expect("kw", "AND")
                hi = self.additive()
                left = SqlNode("between", (left, lo, hi, negate))
            elif self.accept("kw", "LIKE"):
                left = SqlNode("like", (left, self.additive(), negate))
            else:
                return left

    def additive(self) -> SqlNode:
        node = self.multiplicative()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            op = self.take().text
            node = SqlNode("binary", (op, node, self.multiplicative()))
        return node

    def multiplicative(self) -> SqlNode:
        node = self.unary()
        while self.peek().kind == "op" and self.peek().text in ("*", "/", "%"):
            op = self.take().text
            node = SqlNode("binary", (op, node, self.unary()))
        return node

    def unary(self) -> SqlNode:
        if self.accept("op", "-"):
            return SqlNode("unary", ("-", self.unary()))
        if self.accept("op", "+"):
            return self.unary()
        return self.primary()

    def primary(self) -> SqlNode:
        tok = self.take()
        if tok.kind == "num":
            return SqlNode("lit", (_number(tok.text),))
        if tok.kind == "str":
            return SqlNode("lit", (tok.text,))
        if tok.kind == "kw":
            if tok.text in ("TRUE", "FALSE"):
                return SqlNode("lit", (tok.text == "TRUE",))
            if tok.text == "NULL":
                return SqlNode("lit", (None,))
            if tok.text in ("DATE", "TIMESTAMP") and self.peek().kind == "str":
                return SqlNode("lit", (_typed_literal(tok.text, self.take().text),))
        if tok.kind == "op" and tok.text == "(":
            node = self.or_()
            self.expect("op", ")")
            return node
        if tok.kind == "id" and tok.text.upper() in ("CAST", "TRY_CAST") and self.peek().text == "(":
            self.take()
            value = self.or_()
            if not (self.peek().kind == "id" and self.peek().text.upper() == "AS"):
                raise UnsupportedExpressionError(f"expected AS in CAST at position {self.peek().pos}")
            self.take()
            words: list[str] = []
            depth = 0
            while not (depth == 0 and self.peek().text == ")"):
                nxt = self.take()
                if nxt.kind == "end":
                    raise UnsupportedExpressionError("CAST is not closed")
                depth += {"(": 1, ")": -1}.get(nxt.text, 0)
                words.append(nxt.text)
            self.expect("op", ")")
            return SqlNode("cast", (value, _arrow_type(" ".join(words)), tok.text.upper() == "TRY_CAST"))
        if tok.kind == "id":
            if self.accept("op", "("):
                args: list[SqlNode] = []
                if not self.accept("op", ")"):
                    args.append(self.or_())
                    while self.accept("op", ","):
                        args.append(self.or_())
                    self.expect("op", ")")
                return SqlNode("func", (tok.text.lower(), tuple(args)))
            path = [tok.text]
            while self.accept("op", "."):
                nxt = self.take()
                if nxt.kind not in ("id", "kw"):
                    raise UnsupportedExpressionError(f"expected a field name after '.' at {nxt.pos}")
                path.append(nxt.text)
            return SqlNode("col", tuple(path))
        raise UnsupportedExpressionError(f"unexpected {tok.text or 'end of expression'!r} at position {tok.pos}")


_CAST_TYPES: dict[str, pa.DataType] = {
    "TINYINT": pa.int8(), "BYTE": pa.int8(), "SMALLINT": pa.int16(), "SHORT": pa.int16(), "INT": pa.int32(),
    "INTEGER": pa.int32(), "BIGINT": pa.int64(), "LONG": pa.int64(), "FLOAT": pa.float32(), "REAL": pa.float32(),
    "DOUBLE": pa.float64(), "STRING": pa.string(), "BOOLEAN": pa.bool_(), "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"), "TIMESTAMP_NTZ": pa.timestamp("us"), "BINARY": pa.binary(),
}


def _arrow_type(text: str) -> pa.DataType:
    """The Arrow type of a SQL type name in ``CAST(... AS <type>)``."""
    name = "".join(text.split()).upper()
    found = _CAST_TYPES.get(name)
    if found is not None:
        return found
    m = re.fullmatch(r"(?:DECIMAL|DEC|NUMERIC)(?:\((\d+)(?:,(\d+))?\))?", name)
    if m:
        return pa.decimal128(int(m.group(1) or 10), int(m.group(2) or 0))
    raise UnsupportedExpressionError(f"CAST to {text!r} is not supported")


def _number(text: str) -> int | float:
    if text[-1] in "LlDd":
        return float(text[:-1]) if text[-1] in "Dd" else int(text[:-1])
    if re.fullmatch(r"\d+", text):
        return int(text)
    return float(text)


def _typed_literal(kind: str, text: str) -> dt.date | dt.datetime:
    try:
        if kind == "DATE":
            return dt.date.fromisoformat(text.strip())
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    except ValueError:
        raise UnsupportedExpressionError(f"{kind} literal {text!r} is not a valid {kind.lower()}") from None
