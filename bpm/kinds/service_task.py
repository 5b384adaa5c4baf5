"""Service tasks: inline work (a Celery worker runs the handler) or external work (a
topic fetched and locked by workers in any language). Send tasks, message throw and end
events and Zeebe job workers are service tasks too: they are parsed by their own tags."""

from __future__ import annotations

from xml.etree.ElementTree import Element

from bpm.bpmn.business_rules import parse_business_rule
from bpm.bpmn.events import parse_end, parse_throw
from bpm.bpmn.tasks import parse_script, parse_service
from bpm.cockpit.diagram import Drawing
from bpm.kinds.spec import ElementKind
from bpm.model import nodes as n
from bpm.runtime.behaviours import service_task


def draw(parent: Element, node: n.ServiceTask, attrs: dict[str, str], d: Drawing) -> Element:
    return d.element(parent, "serviceTask", attrs)


KIND = ElementKind(
    node=n.ServiceTask,
    parse={
        "serviceTask": parse_service,
        "sendTask": parse_service,
        "businessRuleTask": parse_business_rule,  # one that names no decision
        "scriptTask": parse_script,  # a Zeebe job worker
        "intermediateThrowEvent": parse_throw,  # a message throw event
        "endEvent": parse_end,  # a message end event
    },
    behave=service_task,
    activity_type=lambda node: "serviceTask",
    draw=draw,
    build=("service_task",),
)
