"""The escalation trigger, and the intermediate escalation throw event."""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_throw
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind, TriggerKind
from bpm.model import nodes as n
from bpm.runtime.intermediate import escalation_throw_event


def draw(parent: Element, node: Any, d: Drawing) -> None:
    d.escalation(parent, node.escalation_code)


TRIGGER = TriggerKind(
    name="escalation",
    definition="escalationEventDefinition",
    activity_types={
        "start": "escalationStartEvent",
        "intermediate_throw": "intermediateEscalationThrowEvent",
        "boundary": "boundaryEscalation",
        "end": "escalationEndEvent",
    },
    draw=draw,
)


def draw_throw(
    parent: Element, node: n.EscalationThrowEvent, attrs: dict[str, str], d: Drawing
) -> Element:
    return d.element(parent, "intermediateThrowEvent", attrs)


THROW = ElementKind(
    node=n.EscalationThrowEvent,
    parse={"intermediateThrowEvent": parse_throw},
    behave=escalation_throw_event,
    activity_type=lambda node: "intermediateEscalationThrowEvent",
    draw=draw_throw,
    build=("throw_escalation",),
    position="intermediate_throw",
    trigger=lambda node: "escalation",
)
