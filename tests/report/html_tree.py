"""report.html parsed into a small tree (the standard library's HTMLParser; no parser package is a dependency),
so a test can ask what a chart's point is inside of, what follows it, and whether the id it links to exists."""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Element:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Element | str] = []

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def elements(self) -> list[Element]:
        return [c for c in self.children if isinstance(c, Element)]

    def iter(self) -> Iterator[Element]:
        for child in self.elements():
            yield child
            yield from child.iter()

    def find_all(self, tag: str | None = None, css_class: str | None = None) -> list[Element]:
        return [e for e in self.iter() if (tag is None or e.tag == tag) and (css_class is None or css_class in e.classes)]

    def text(self) -> str:
        """The text inside, whitespace collapsed (an SVG text's lines are tspans)."""
        parts = [c if isinstance(c, str) else c.text() for c in self.children]
        return " ".join(" ".join(parts).split())

    def title(self) -> str | None:
        """The text of this element's own <title> child (an SVG hover text)."""
        return next((c.text() for c in self.elements() if c.tag == "title"), None)

    def next_element(self) -> Element | None:
        siblings = self.parent.elements()
        index = siblings.index(self)
        return siblings[index + 1] if index + 1 < len(siblings) else None

    def ancestors(self) -> Iterator[Element]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.current = Element("#document", {}, None)

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(element)
        if tag not in _VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Element(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


def ids(root: Element) -> dict[str, Element]:
    found: dict[str, Element] = {}
    for element in root.iter():
        if "id" in element.attrs:
            assert element.attrs["id"] not in found, f"id {element.attrs['id']} twice"
            found[element.attrs["id"]] = element
    return found
