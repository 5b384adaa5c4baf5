"""Tasks with nothing for the engine to do: ``task``, ``manualTask`` and a none
intermediate throw event. The token moves on at once."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_throw
from bpm.bpmn.tasks import parse_pass_through
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import pass_through

_ACTIVITY_TYPES = {
    "task": "task",
    "manualTask": "manualTask",
    "intermediateThrowEvent": "intermediateNoneThrowEvent",
}


def activity_type(node: n.PassThrough) -> str:
    return _ACTIVITY_TYPES.get(node.element, node.element)


def draw(parent: Element, node: n.PassThrough, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, node.element, attrs)


KIND = ElementKind(
    node=n.PassThrough,
    parse={
        "task": parse_pass_through,
        "manualTask": parse_pass_through,
        "intermediateThrowEvent": parse_throw,
    },
    behave=pass_through,
    activity_type=activity_type,
    draw=draw,
    build=("task",),
)
