"""Inclusive gateways: fork along every true condition; join what can still arrive."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.scopes import parse_inclusive
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.inclusive import inclusive_gateway, release


def draw(parent: Element, node: n.InclusiveGateway, attrs: dict[str, str], d: Drawing) -> Element:
    if node.default_flow:
        attrs["default"] = node.default_flow
    return d.element(parent, "inclusiveGateway", attrs)


KIND = ElementKind(
    node=n.InclusiveGateway,
    parse={"inclusiveGateway": parse_inclusive},
    behave=inclusive_gateway,
    activity_type=lambda node: "inclusiveGateway",
    draw=draw,
    build=("inclusive",),
    release=release,
)
