"""A small HTML tree for the tests of the HTML health report: :func:`parse` builds :class:`Node` s with the
standard library's :class:`html.parser.HTMLParser` (entities decoded, so a node's text and attributes are
what a browser shows), and :meth:`Node.find_all` selects by tag, id, class and attributes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    """An element: its tag, attributes, children and text pieces (in document order)."""

    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)
    parts: list[str | Node] = field(default_factory=list)

    def iter(self) -> Iterator[Node]:
        """This node and every node below it, in document order."""
        yield self
        for c in self.children:
            yield from c.iter()

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def find_all(self, tag: str | None = None, *, cls: str | None = None, **attrs: str) -> list[Node]:
        """Nodes below (and including) this one with that tag, class and attributes (``data_x`` for
        ``data-x``; ``id_`` for ``id``)."""
        want = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
        return [n for n in self.iter()
                if (tag is None or n.tag == tag) and (cls is None or cls in n.classes())
                and all(n.attrs.get(k) == v for k, v in want.items())]

    def find(self, tag: str | None = None, *, cls: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, cls=cls, **attrs)
        assert found, f"no <{tag} class={cls} {attrs}> in the page"
        return found[0]

    def text(self) -> str:
        """The text of this node and its children, without the SVG ``<title>`` hover texts, whitespace
        collapsed."""
        out: list[str] = []

        def walk(n: Node) -> None:
            for p in n.parts:
                if isinstance(p, str):
                    out.append(p)
                elif p.tag != "title":
                    walk(p)

        walk(self)
        return " ".join("".join(out).split())


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        self.stack[-1].parts.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        self.stack[-1].parts.append(node)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].parts.append(data)


def parse(page: str) -> Node:
    """The document tree of ``page``."""
    builder = _Builder()
    builder.feed(page)
    builder.close()
    return builder.root
