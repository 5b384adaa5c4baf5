"""DMN XML read safely, as a light tree of local names with the line of each element.

defusedxml refuses a DOCTYPE, entity declarations and external references (no entity
expansion, no ``SYSTEM "file:///..."``). DMN 1.1 to 1.5 namespaces are all read; elements of
other namespaces (diagrams, vendor extensions) are kept but never interpreted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element, ParseError, TreeBuilder

from defusedxml import DefusedXmlException, DTDForbidden
from defusedxml.ElementTree import DefusedXMLParser

from bpm.errors import DeploymentError, Problem

DMN_NAMESPACES = frozenset(
    {
        "http://www.omg.org/spec/DMN/20151101/dmn.xsd",  # 1.1
        "http://www.omg.org/spec/DMN/20180521/MODEL/",  # 1.2
        "https://www.omg.org/spec/DMN/20191111/MODEL/",  # 1.3
        "https://www.omg.org/spec/DMN/20211108/MODEL/",  # 1.4
        "https://www.omg.org/spec/DMN/20230324/MODEL/",  # 1.5
        "https://www.omg.org/spec/DMN/20240513/MODEL/",  # 1.6 beta
    }
)


@dataclass
class Node:
    """One element: local name, namespace, attributes (local names), children, text."""

    tag: str
    ns: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: str = ""
    line: int | None = None

    @property
    def dmn(self) -> bool:
        return self.ns in DMN_NAMESPACES

    def all(self, tag: str) -> list[Node]:
        """Children in the DMN namespace named ``tag``."""
        return [c for c in self.children if c.tag == tag and c.dmn]

    def first(self, tag: str) -> Node | None:
        for child in self.children:
            if child.tag == tag and child.dmn:
                return child
        return None

    def dmn_children(self) -> Iterator[Node]:
        return (c for c in self.children if c.dmn)

    def child_text(self, tag: str) -> str | None:
        """The text of child ``tag``'s ``<text>`` (``<inputExpression><text>x</text>``)."""
        child = self.first(tag)
        if child is None:
            return None
        inner = child.first("text")
        return (inner.text if inner is not None else child.text).strip()

    def get(self, name: str) -> str | None:
        return self.attrs.get(name)

    def attr(self, name: str) -> str:
        """An attribute's value, ``""`` when absent."""
        return self.attrs.get(name, "")

    def label(self) -> str:
        """How an error names this element: ``decision 'Approval' (line 12)``."""
        who = self.attrs.get("name") or self.attrs.get("id") or self.attrs.get("label")
        return f"{self.tag} '{who}'" if who else self.tag


def problem(node: Node | None, message: str) -> Problem:
    """A load error located at ``node``."""
    if node is None:
        return Problem(message)
    return Problem(
        message,
        element_id=node.attrs.get("id") or node.attrs.get("name"),
        line=node.line,
        element_type=node.tag,
    )


class _Target:
    def __init__(self) -> None:
        self.builder = TreeBuilder()
        self.lines: dict[int, int] = {}
        self.parser: DefusedXMLParser | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> Element:
        el = self.builder.start(tag, attrib)
        if self.parser is not None:
            self.lines[id(el)] = self.parser.parser.CurrentLineNumber
        return el

    def end(self, tag: str) -> Element:
        return self.builder.end(tag)

    def data(self, data: str) -> None:
        self.builder.data(data)

    def close(self) -> Element:
        return self.builder.close()


def _split(tag: str) -> tuple[str, str]:
    if tag.startswith("{"):
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return "", tag


def _convert(el: Element, lines: dict[int, int]) -> Node:
    ns, local = _split(el.tag)
    attrs = {_split(k)[1]: v for k, v in el.attrib.items()}
    node = Node(local, ns, attrs, text=el.text or "", line=lines.get(id(el)))
    node.children = [_convert(c, lines) for c in el]
    return node


def read_dmn_xml(source: str | bytes, resource: str | None = None) -> Node:
    """The root of a DMN document, or a DeploymentError (bad XML, DOCTYPE, not DMN)."""
    target = _Target()
    parser = DefusedXMLParser(
        target=target, forbid_dtd=True, forbid_entities=True, forbid_external=True
    )
    target.parser = parser
    if isinstance(source, str):
        source = source.lstrip("\ufeff").encode("utf-8")
        if source.startswith(b"<?xml"):
            end = source.find(b"?>")
            source = b'<?xml version="1.0" encoding="utf-8"' + source[end:] if end > 0 else source
    try:
        parser.feed(source)
        root = parser.close()
    except ParseError as exc:
        line, column = exc.position
        raise DeploymentError(
            Problem(
                f"not well-formed XML ({str(exc).split(':', 1)[0]}, column {column + 1})",
                line=line,
                column=column + 1,
            ),
            resource,
        ) from exc
    except DefusedXmlException as exc:
        what = (
            "a DOCTYPE declaration"
            if isinstance(exc, DTDForbidden)
            else "an entity or external reference"
        )
        raise DeploymentError(
            Problem(
                f"the DMN file contains {what}, which is refused for safety (entity "
                "expansion, external files): remove it; DMN files never need one",
                line=parser.parser.CurrentLineNumber,
            ),
            resource,
        ) from exc
    node = _convert(root, target.lines)
    if node.tag != "definitions" or not node.dmn:
        raise DeploymentError(
            problem(
                node,
                f"not a DMN file: the root is <{node.tag}> in namespace {node.ns!r}, "
                "expected <definitions> in a DMN 1.1-1.5 namespace",
            ),
            resource,
        )
    return node
