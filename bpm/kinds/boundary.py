"""Boundary events: a trigger attached to an activity, interrupting it or not."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_boundary
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import boundary_event


def trigger(node: n.BoundaryEvent) -> str:
    """The trigger a boundary event catches."""
    if node.timer is not None:
        return "timer"
    if node.is_compensation:
        return "compensation"
    if node.escalation:
        return "escalation"
    if node.event is not None:
        return node.event.kind.value
    return "error"  # the model has no flag of its own for it yet: BoundaryEvent.is_error


def draw(parent: Element, node: n.BoundaryEvent, attrs: dict[str, str], d: Drawing) -> Element:
    attrs["attachedToRef"] = node.attached_to
    attrs["cancelActivity"] = "true" if node.cancel_activity else "false"
    return d.element(parent, "boundaryEvent", attrs)


KIND = ElementKind(
    node=n.BoundaryEvent,
    parse={"boundaryEvent": parse_boundary},
    behave=boundary_event,
    activity_type=lambda node: "boundaryEvent",
    draw=draw,
    build=(
        "boundary_timer",
        "boundary_error",
        "boundary_escalation",
        "boundary_message",
        "boundary_signal",
        "boundary_compensation",
        "boundary_condition",
    ),
    position="boundary",
    trigger=trigger,
)
