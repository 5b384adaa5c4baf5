"""Event sub-processes: started inside their scope by their start event's trigger."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.scopes import parse_subprocess
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import event_sub_process


def draw(parent: Element, node: n.EventSubProcess, attrs: dict[str, str], d: Drawing) -> Element:
    attrs["triggeredByEvent"] = "true"
    return d.element(parent, "subProcess", attrs)


KIND = ElementKind(
    node=n.EventSubProcess,
    parse={"subProcess": parse_subprocess},
    behave=event_sub_process,
    activity_type=lambda node: "eventSubProcess",
    draw=draw,
    build=("event_sub_process",),
)
