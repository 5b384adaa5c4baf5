"""Exclusive gateways: the first flow whose condition holds, else the default."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.elements import parse_exclusive
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import exclusive_gateway


def draw(parent: Element, node: n.ExclusiveGateway, attrs: dict[str, str], d: Drawing) -> Element:
    if node.default_flow:
        attrs["default"] = node.default_flow
    return d.element(parent, "exclusiveGateway", attrs)


KIND = ElementKind(
    node=n.ExclusiveGateway,
    parse={"exclusiveGateway": parse_exclusive},
    behave=exclusive_gateway,
    activity_type=lambda node: "exclusiveGateway",
    draw=draw,
    build=("exclusive",),
)
