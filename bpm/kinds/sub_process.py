"""Embedded sub-processes: a scope whose nodes name it as their container."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.scopes import parse_subprocess
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.scopes import sub_process


def draw(parent: Element, node: n.SubProcess, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "subProcess", attrs)


KIND = ElementKind(
    node=n.SubProcess,
    parse={"subProcess": parse_subprocess},
    behave=sub_process,
    activity_type=lambda node: "subProcess",
    draw=draw,
    build=("sub_process",),
)
