"""Call activities: start an instance of another process and wait for it."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.scopes import parse_call
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.calls import call_activity


def draw(parent: Element, node: n.CallActivity, attrs: dict[str, str], d: Drawing) -> Element:
    attrs["calledElement"] = node.called_element
    return d.element(parent, "callActivity", attrs)


KIND = ElementKind(
    node=n.CallActivity,
    parse={"callActivity": parse_call},
    behave=call_activity,
    activity_type=lambda node: "callActivity",
    draw=draw,
    build=("call_activity",),
)
