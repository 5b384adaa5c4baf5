"""Receive tasks: an activity that waits for a message (it may carry boundaries)."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.events import parse_receive
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.messages import receive_task


def draw(parent: Element, node: n.ReceiveTask, attrs: dict[str, str], d: Drawing) -> Element:
    if node.event.kind is n.EventKind.MESSAGE:
        attrs["messageRef"] = d.ref("message", node.event.name)
    return d.element(parent, "receiveTask", attrs)


KIND = ElementKind(
    node=n.ReceiveTask,
    parse={"receiveTask": parse_receive},
    behave=receive_task,
    activity_type=lambda node: "receiveTask",
    draw=draw,
    build=("receive_task",),
)
