"""Event-based gateways: the first of the events after it wins, the others are cancelled."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_event_gateway
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.messages import event_gateway


def draw(parent: Element, node: n.EventBasedGateway, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "eventBasedGateway", attrs)


KIND = ElementKind(
    node=n.EventBasedGateway,
    parse={"eventBasedGateway": parse_event_gateway},
    behave=event_gateway,
    activity_type=lambda node: "eventBasedGateway",
    draw=draw,
    build=("event_gateway",),
)
