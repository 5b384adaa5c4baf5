"""Parallel gateways: fork to every outgoing flow, join every incoming one."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.elements import parse_parallel
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import parallel_gateway


def draw(parent: Element, node: n.ParallelGateway, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "parallelGateway", attrs)


KIND = ElementKind(
    node=n.ParallelGateway,
    parse={"parallelGateway": parse_parallel},
    behave=parallel_gateway,
    activity_type=lambda node: "parallelGateway",
    draw=draw,
    build=("parallel",),
)
