"""The compensation trigger, and the intermediate compensation throw event."""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_throw
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind, TriggerKind
from bpm.model import nodes as n
from bpm.runtime.compensation import throw_event


def draw(parent: Element, node: Any, d: Drawing) -> None:
    d.compensate(parent, getattr(node, "activity_ref", None))


TRIGGER = TriggerKind(
    name="compensation",
    definition="compensateEventDefinition",
    activity_types={
        "start": "compensationStartEvent",
        "intermediate_throw": "intermediateCompensationThrowEvent",
        "boundary": "compensationBoundaryCatch",
        "end": "compensationEndEvent",
    },
    draw=draw,
)


def draw_throw(
    parent: Element, node: n.CompensationThrowEvent, attrs: dict[str, str], d: Drawing
) -> Element:
    return d.element(parent, "intermediateThrowEvent", attrs)


THROW = ElementKind(
    node=n.CompensationThrowEvent,
    parse={"intermediateThrowEvent": parse_throw},
    behave=throw_event,
    activity_type=lambda node: "intermediateCompensationThrowEvent",
    draw=draw_throw,
    build=("compensate",),
    position="intermediate_throw",
    trigger=lambda node: "compensation",
)
