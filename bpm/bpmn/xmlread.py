"""Safe XML reading with the source line of every element.

defusedxml refuses DTDs, entity declarations and external references, so neither entity
expansion ("billion laughs") nor ``SYSTEM "file:///..."`` can reach the parser's output.
ElementTree keeps no line numbers; a small tree-builder target records expat's current
line when each element starts.
"""

from __future__ import annotations

import codecs
import re
from xml.etree.ElementTree import Element, ParseError, TreeBuilder

from defusedxml import DefusedXmlException, DTDForbidden
from defusedxml.ElementTree import DefusedXMLParser

from bpm.errors import DeploymentError, Problem

__all__ = ["Document", "decode_xml", "read_xml"]

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_DECLARED = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def _encoding(data: bytes) -> tuple[str, int]:
    """(encoding, BOM length) of XML bytes: BOM, then the declaration, else UTF-8."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom)
    if data.startswith(b"<\x00?\x00"):
        return "utf-16-le", 0
    if data.startswith(b"\x00<\x00?"):
        return "utf-16-be", 0
    match = _DECLARED.match(data)
    if match:
        name = match.group(1).decode("ascii")
        try:
            codecs.lookup(name)
        except LookupError:
            return "utf-8", 0
        return name, 0
    return "utf-8", 0


def decode_xml(data: bytes) -> str:
    """XML bytes as text, decoded as their byte-order mark or XML declaration says
    (UTF-16, ISO-8859-1...), the way the XML parser reads them; undecodable bytes are
    replaced (the text is kept for people, the parser reads the bytes)."""
    name, skip = _encoding(data)
    return data[skip:].decode(name, errors="replace")


class Document:
    """A parsed XML tree and the line (1-based) on which each element starts."""

    def __init__(self, root: Element, lines: dict[Element, int]) -> None:
        self.root = root
        self._lines = lines

    def line(self, el: Element) -> int | None:
        """The line of ``el``'s start tag."""
        return self._lines.get(el)


class _LineTarget:
    """A TreeBuilder that remembers where each element started."""

    def __init__(self) -> None:
        self.builder = TreeBuilder()
        self.lines: dict[Element, int] = {}
        self.parser: DefusedXMLParser | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> Element:
        el = self.builder.start(tag, attrib)
        if self.parser is not None:
            self.lines[el] = self.parser.parser.CurrentLineNumber
        return el

    def end(self, tag: str) -> Element:
        return self.builder.end(tag)

    def data(self, data: str) -> None:
        self.builder.data(data)

    def close(self) -> Element:
        return self.builder.close()


def read_xml(source: str | bytes, resource: str | None = None) -> Document:
    """Parse ``source`` safely, or raise :class:`DeploymentError` with line and column."""
    target = _LineTarget()
    parser = DefusedXMLParser(
        target=target, forbid_dtd=True, forbid_entities=True, forbid_external=True
    )
    target.parser = parser
    if isinstance(source, str):
        # A str was decoded already; an encoding declaration in it must not apply again.
        source = source.lstrip("\ufeff").encode("utf-8")
        if source.startswith(b"<?xml"):
            end = source.find(b"?>")
            source = b'<?xml version="1.0" encoding="utf-8"' + source[end:] if end > 0 else source
    try:
        parser.feed(source)
        root = parser.close()
    except ParseError as exc:
        line, column = exc.position
        reason = str(exc).split(":", 1)[0]
        raise DeploymentError(
            Problem(
                f"not well-formed XML ({reason}, column {column + 1}): fix the file or "
                "export it again from the modeler",
                line=line,
                column=column + 1,
            ),
            resource,
        ) from exc
    except (LookupError, UnicodeError) as exc:  # an encoding Python does not know
        raise DeploymentError(
            Problem(
                f"the file cannot be decoded ({exc}): save it as UTF-8 and declare "
                '<?xml version="1.0" encoding="UTF-8"?>',
                line=1,
            ),
            resource,
        ) from exc
    except DefusedXmlException as exc:
        expat = parser.parser
        if isinstance(exc, DTDForbidden):
            what = "a DOCTYPE declaration"
        else:
            what = "an entity declaration or external reference"
        raise DeploymentError(
            Problem(
                f"the file contains {what}, which is refused for safety (entity expansion, "
                "external files): remove the <!DOCTYPE ...> part; BPMN files never need it",
                line=expat.CurrentLineNumber,
                column=expat.CurrentColumnNumber + 1,
            ),
            resource,
        ) from exc
    return Document(root, target.lines)
