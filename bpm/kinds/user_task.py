"""User tasks: work for a person, waiting until it is completed."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.tasks import parse_user
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import user_task


def draw(parent: Element, node: n.UserTask, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "userTask", attrs)


KIND = ElementKind(
    node=n.UserTask,
    parse={"userTask": parse_user},
    behave=user_task,
    activity_type=lambda node: "userTask",
    draw=draw,
    build=("user_task",),
)
