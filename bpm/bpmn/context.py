"""What every element parse function shares: the document, findings, and small readers."""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

from bpm.bpmn.namespaces import local, pretty
from bpm.bpmn.xmlread import Document
from bpm.errors import Problem
from bpm.model import nodes as n

__all__ = ["Context", "base", "event_definitions"]


@dataclass
class Context:
    """The document, its ``bpmn:error`` and ``bpmn:escalation`` elements, and the
    problems and warnings found."""

    doc: Document
    errors: dict[str, Element]
    zeebe: bool = False
    """The file was written for Camunda 8 (Zeebe): cron day numbers count from Sunday = 0."""
    escalations: dict[str, Element] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    placeholders: set[str] = field(default_factory=set)
    """Ids of rejected elements kept as bare nodes so flows to them still resolve."""
    messages: dict[str, Element] = field(default_factory=dict)
    """The file's ``bpmn:message`` elements by id."""
    signals: dict[str, Element] = field(default_factory=dict)
    """The file's ``bpmn:signal`` elements by id."""
    listeners_read: set[str] = field(default_factory=set)
    """Ids of the elements whose parse function read their execution listeners (the
    others' are read by the parser for them: :func:`bpm.bpmn.listeners.attach`)."""

    def placeholder(self, el: Element) -> n.Node:
        """A bare node for a rejected element; graph checks skip it."""
        self.placeholders.add(el.get("id", ""))
        return n.Node(el.get("id", ""), el.get("name") or None, self.doc.line(el))

    def report(self, el: Element, message: str) -> None:
        """Record a problem located at ``el`` (its id, or its owner's, and its line)."""
        self.problems.append(Problem(message, el.get("id"), self.doc.line(el)))

    def report_in(self, owner: Element, el: Element, message: str) -> None:
        """Record a problem in a child ``el`` of ``owner``, named by the owner's id."""
        self.problems.append(Problem(message, owner.get("id"), self.doc.line(el)))

    def warn(self, owner: Element, el: Element, message: str) -> None:
        """Record a setting understood but not honoured, with where it is."""
        where = f"element '{owner.get('id')}', line {self.doc.line(el)}"
        self.warnings.append(f"{message} ({where})")


def base(el: Element, ctx: Context) -> tuple[str, str | None, int | None]:
    """(id, name, line) of a flow element."""
    return el.get("id", ""), el.get("name") or None, ctx.doc.line(el)


def event_definitions(
    el: Element, ctx: Context, allowed: frozenset[str], *, activity: bool = False
) -> list[Element]:
    """The event definitions of ``el`` among ``allowed``; reports the others, and loop
    markers on anything but an ``activity`` (whose parser reads them)."""
    found: list[Element] = []
    for child in el:
        name = local(child)
        if name.endswith("LoopCharacteristics") and activity:
            continue  # read by bpm.bpmn.loops
        if name.endswith("LoopCharacteristics"):
            ctx.report_in(
                el,
                child,
                f"{pretty(child.tag)} on '{el.get('id')}' (a multi-instance or loop marker) "
                "is not supported: remove it, or loop with an exclusive gateway",
            )
        elif name.endswith("EventDefinition") or name == "eventDefinitionRef":
            if name in allowed:
                found.append(child)
            else:
                ctx.report_in(
                    el,
                    child,
                    f"{pretty(child.tag)} on {pretty(el.tag)} '{el.get('id')}' is not "
                    "supported by this engine: use a supported event or remove it",
                )
    if len(found) > 1:
        ctx.report(el, f"'{el.get('id')}' has several event definitions: keep exactly one")
    return found
