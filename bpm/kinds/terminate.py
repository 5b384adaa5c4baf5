"""The terminate trigger of an end event: it ends its scope (the instance at the top)."""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element, SubElement

from bpm.cockpit.diagram import BPMN, Drawing
from bpm.kinds.spec import TriggerKind


def draw(parent: Element, node: Any, d: Drawing) -> None:
    SubElement(parent, f"{{{BPMN}}}terminateEventDefinition")


TRIGGER = TriggerKind(
    name="terminate",
    definition="terminateEventDefinition",
    activity_types={"end": "terminateEndEvent"},
    draw=draw,
)
