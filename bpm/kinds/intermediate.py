"""Intermediate catch events of a message or a signal (timer and link catch events are
in their triggers' modules)."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_catch
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.messages import catch_event


def trigger(node: n.CatchEvent) -> str:
    return node.event.kind.value


def draw(parent: Element, node: n.CatchEvent, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "intermediateCatchEvent", attrs)


KIND = ElementKind(
    node=n.CatchEvent,
    parse={"intermediateCatchEvent": parse_catch},
    behave=catch_event,
    activity_type=lambda node: "intermediateCatchEvent",
    draw=draw,
    build=("receive_message", "receive_signal", "wait_condition"),
    position="intermediate_catch",
    trigger=trigger,
)
