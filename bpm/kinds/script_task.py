"""Script tasks: CEL (and Zeebe FEEL) evaluated by the engine; any other language is an
inline step that finds the script on ``ctx.script``."""

from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement

from bpm.bpmn.tasks import parse_script
from bpm.cockpit.diagram import BPMN, Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import script_task


def draw(parent: Element, node: n.ScriptTask, attrs: dict[str, str], d: Drawing) -> Element:
    if node.script_format:
        attrs["scriptFormat"] = node.script_format
    el = d.element(parent, "scriptTask", attrs)
    if node.script is not None:
        SubElement(el, f"{{{BPMN}}}script").text = node.script
    return el


KIND = ElementKind(
    node=n.ScriptTask,
    parse={"scriptTask": parse_script},
    behave=script_task,
    activity_type=lambda node: "scriptTask",
    draw=draw,
    build=("script_task",),
)
