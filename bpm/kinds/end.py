"""End events: end the path; with a trigger, throw it (error, escalation, compensation)
or end the scope (terminate). Message and signal end events are a service task and a
signal throw."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_end
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import end_event

_TRIGGERS = {
    n.EndKind.NONE: None,
    n.EndKind.TERMINATE: "terminate",
    n.EndKind.ERROR: "error",
    n.EndKind.ESCALATION: "escalation",
    n.EndKind.COMPENSATE: "compensation",
}


def trigger(node: n.EndEvent) -> str | None:
    """The trigger an end event throws (None: a none end event)."""
    return _TRIGGERS[node.kind]


def draw(parent: Element, node: n.EndEvent, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "endEvent", attrs)


KIND = ElementKind(
    node=n.EndEvent,
    parse={"endEvent": parse_end},
    behave=end_event,
    activity_type=lambda node: "noneEndEvent",
    draw=draw,
    build=("end", "compensate_end"),
    position="end",
    trigger=trigger,
)
