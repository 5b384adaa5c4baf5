"""Start events: where an instance or a scope starts; with a trigger, what starts it
(a timer, message or signal start of the process; any trigger of an event sub-process)."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_start
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import start_event


def trigger(node: n.StartEvent) -> str | None:
    """The trigger a start event carries (None: a none start event)."""
    if node.compensation_start:
        return "compensation"
    if node.error_start:
        return "error"
    if node.escalation_start:
        return "escalation"
    if node.event is not None:
        return node.event.kind.value
    return "timer" if node.timer is not None else None


def draw(parent: Element, node: n.StartEvent, attrs: dict[str, str], d: Drawing) -> Element:
    if not node.interrupting:
        attrs["isInterrupting"] = "false"
    return d.element(parent, "startEvent", attrs)


KIND = ElementKind(
    node=n.StartEvent,
    parse={"startEvent": parse_start},
    behave=start_event,
    activity_type=lambda node: "startEvent",
    draw=draw,
    build=("start", "condition_start"),
    position="start",
    trigger=trigger,
)
